package node

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

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

	// What this node knows of its peer's replicas comes with the peer's
	// position reports, so right after the view is placed it may still
	// show node-1's partitions as restoring: wait until it shows them
	// active.
	c.Eventually(t, 30*time.Second, func() error {
		plan, err := n.QueryErr(t, "EXPLAIN SELECT id FROM per_id WHERE total > 5 LIMIT 10")
		if err != nil {
			return err
		}
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
				return fmt.Errorf("EXPLAIN lacks %q:\n%s", want, text)
			}
		}
		return nil
	})
}

// TestClusterRawRows reads a table of every common type across two
// nodes, in text (simple protocol, pgx's Exec mode) and binary (pgx's
// statement cache) formats. Rows
// that go out as read are encoded by the partitions' readers and a
// peer's are passed on as it sent them (pull.RawRows); the answers must
// be those of the same queries sorted, which take the row path.
func TestClusterRawRows(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{Nodes: 2, Args: []string{"--standby-replicas", "0"}})
	n := c.Node(0)
	n.Exec(t, "CREATE TABLE kinds (id BIGINT PRIMARY KEY, i INTEGER, name VARCHAR, x DOUBLE, ok BOOLEAN, ts TIMESTAMP) WITH (partitions = 4)")
	var values []string
	for id := range 200 {
		row := fmt.Sprintf("(%d, %d, 'name %d', %d.25, %t, '2024-01-02 03:04:%02d.123456')", id, id*3, id, id, id%2 == 0, id%60)
		if id%10 == 0 {
			row = fmt.Sprintf("(%d, NULL, NULL, NULL, NULL, NULL)", id)
		}
		values = append(values, row)
	}
	n.Exec(t, "INSERT INTO kinds VALUES "+strings.Join(values, ", "))
	for _, node := range c.Nodes() {
		c.Eventually(t, 30*time.Second, func() error {
			rows, err := node.QueryErr(t, "SELECT count(*) FROM kinds")
			if err != nil || rows[0][0] != "200" {
				return fmt.Errorf("%s: count %v %v", node.ID, rows, err)
			}
			return nil
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// Simple protocol and Exec mode take text results, CacheStatement
	// binary ones.
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeExec, pgx.QueryExecModeCacheStatement} {
		t.Run(mode.String(), func(t *testing.T) {
			conn := n.Conn(t)
			read := func(q string, args ...any) []string {
				t.Helper()
				rows, err := conn.Query(ctx, q, append([]any{mode}, args...)...)
				if err != nil {
					t.Fatalf("%s: %v", q, err)
				}
				var out []string
				for rows.Next() {
					vals, err := rows.Values()
					if err != nil {
						t.Fatalf("%s: %v", q, err)
					}
					out = append(out, fmt.Sprint(vals...))
				}
				if err := rows.Err(); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
				return out
			}
			same := func(q, sorted string, args ...any) {
				t.Helper()
				got, want := read(q, args...), read(sorted, args...)
				sort.Strings(got)
				sort.Strings(want)
				if len(want) == 0 || !slices.Equal(got, want) {
					t.Errorf("%s: %d rows, want %d\n got %v\nwant %v", q, len(got), len(want), got, want)
				}
			}
			same("SELECT * FROM kinds", "SELECT * FROM kinds ORDER BY id")
			same("SELECT id, i, name FROM kinds WHERE i % 9 = 0", "SELECT id, i, name FROM kinds WHERE i % 9 = 0 ORDER BY id")
			same("SELECT * FROM kinds WHERE name IS NULL", "SELECT * FROM kinds WHERE name IS NULL ORDER BY id")
			same("SELECT * FROM kinds WHERE _partition IN (1, 2)", "SELECT * FROM kinds WHERE _partition IN (1, 2) ORDER BY id")
			// Some of the columns, not the leading ones: this node encodes
			// its own rows from the stored bytes, peers send values.
			same("SELECT name, x, ts FROM kinds", "SELECT name, x, ts FROM kinds ORDER BY 1, 2, 3")
			same("SELECT ts, id FROM kinds", "SELECT ts, id FROM kinds ORDER BY 2")
			same("SELECT i, ts FROM kinds", "SELECT i, ts FROM kinds ORDER BY 1, 2")
			same("SELECT i, i, ok FROM kinds WHERE x > 100", "SELECT i, i, ok FROM kinds WHERE x > 100 ORDER BY 1")
			same("SELECT name, ok FROM kinds WHERE id IN (3, 10, 17, 150)", "SELECT name, ok FROM kinds WHERE id IN (3, 10, 17, 150) ORDER BY 1")
			for _, id := range []int{3, 10, 17, 150} {
				q := fmt.Sprintf("SELECT name, x, ts FROM kinds WHERE id = %d", id)
				same(q, q+" ORDER BY 1")
			}
			if mode != pgx.QueryExecModeSimpleProtocol {
				// A parameter keeps the filter on this node: peers send
				// every row, and the filter runs on the row path here.
				same("SELECT id, i FROM kinds WHERE i > $1", "SELECT id, i FROM kinds WHERE i > $1 ORDER BY id", 300)
				for _, id := range []int{3, 10, 17, 150} {
					same("SELECT name, x FROM kinds WHERE id = $1", "SELECT name, x FROM kinds WHERE id = $1 ORDER BY 1", id)
					same("SELECT i, ok FROM kinds WHERE id = $1", "SELECT i, ok FROM kinds WHERE id = $1 ORDER BY 1", id)
				}
				// A lookup with more to its filter than the key: the row is
				// tested, not sent as stored.
				same("SELECT name FROM kinds WHERE id = $1 AND i > $2", "SELECT name FROM kinds WHERE id = $1 AND i > $2 ORDER BY 1", 21, 10)
				if got := read("SELECT name FROM kinds WHERE id = $1 AND i > $2", 21, 1000); len(got) != 0 {
					t.Errorf("id = 21 AND i > 1000: %v, want no rows", got)
				}
			}
			all := read("SELECT * FROM kinds ORDER BY id")
			limited := read("SELECT * FROM kinds LIMIT 17")
			if len(limited) != 17 {
				t.Fatalf("LIMIT 17: %d rows", len(limited))
			}
			for _, r := range limited {
				if !slices.Contains(all, r) {
					t.Errorf("LIMIT 17 row %q is not a row of the table", r)
				}
			}
			if tag, err := conn.Exec(ctx, "SELECT * FROM kinds", mode); err != nil || tag.String() != "SELECT 200" {
				t.Errorf("SELECT * FROM kinds: tag %q, %v", tag, err)
			}
		})
	}
}
