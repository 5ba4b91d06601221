package node

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/basindb/basin/internal/testcluster"
)

// TestClusterPushdownAndExplain runs two real nodes without standbys, so
// that each reads some partitions from the other: filters (with an
// alias), key IN lists and LIMIT give exact answers across nodes, and
// EXPLAIN shows what is pushed and, per partition, the replica chosen.
func TestClusterPushdownAndExplain(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{Nodes: 2, Args: []string{"--standby-replicas", "0"}})
	v := newClusterView(t, c)
	c.Node(0).Exec(t, "CREATE TABLE per_id AS SELECT id, COUNT(*) AS n, SUM(amount) AS total FROM orders GROUP BY id")
	waitPlacedView(t, c, c.Node(0), "per_id", 4, 0)
	v.produce(t, 300)
	n := c.Node(0)
	c.Eventually(t, 30*time.Second, func() error {
		rows, err := n.QueryErr(t, "SELECT count(*) FROM per_id")
		if err != nil || rows[0][0] != "300" {
			return fmt.Errorf("count %v %v", rows, err)
		}
		return nil
	})

	// A filter over an alias, pushed to the peer: ids 3, 10, 17, ...
	rows := n.Query(t, "SELECT p.id, p.total FROM per_id AS p WHERE p.id % 7 = 3 AND p.n = 1 ORDER BY p.id")
	if len(rows) != 43 {
		t.Fatalf("%d rows with id %% 7 = 3, want 43", len(rows))
	}
	for i, r := range rows {
		if want := strconv.Itoa(3 + 7*i); r[0] != want || r[1] != want {
			t.Fatalf("row %d: %v, want id and total %s", i, r, want)
		}
	}
	// Only the columns used come over, but the answer is whole.
	if rows := n.Query(t, "SELECT sum(total) FROM per_id WHERE total >= 100"); rows[0][0] != strconv.Itoa((100+299)*200/2) {
		t.Fatalf("sum(total) = %v", rows)
	}
	rows = n.Query(t, "SELECT id FROM per_id WHERE id IN (5, 150, 299, 1000, 5) ORDER BY id")
	if got := fmt.Sprint(rows); got != "[[5] [150] [299]]" {
		t.Fatalf("id IN (...): %s", got)
	}
	rows = n.Query(t, "SELECT id, _served_by FROM per_id LIMIT 7")
	if len(rows) != 7 {
		t.Fatalf("LIMIT 7: %d rows", len(rows))
	}
	rows = n.Query(t, "SELECT id FROM per_id WHERE id > 100 LIMIT 3 OFFSET 2")
	if len(rows) != 3 {
		t.Fatalf("LIMIT 3 OFFSET 2: %d rows", len(rows))
	}

	plan := n.Query(t, "EXPLAIN SELECT id FROM per_id WHERE total > 5 LIMIT 10")
	var lines []string
	for _, r := range plan {
		lines = append(lines, r[0])
	}
	text := strings.Join(lines, "\n")
	for _, want := range []string{
		"Forwarded reads push: filter (total > 5); columns id, total; LIMIT 10",
		"Routing (basin.read_from = any), 4 of 4 partitions:",
		"chosen: active on node-0 (this node)",
		"chosen: active on node-1, offset lag",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("EXPLAIN lacks %q:\n%s", want, text)
		}
	}
}
