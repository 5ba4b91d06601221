package node

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/basindb/basin/internal/testcluster"
)

// TestClusterForwardedNested reads a view with STRUCT, MAP and
// ARRAY<STRUCT> columns from both nodes of a cluster without standbys:
// the partitions a node does not hold come from the other node, whose
// answer carries those values as jsonb and jsonb[], and come back as
// values the reading node dereferences, compares and sends on like its
// own.
func TestClusterForwardedNested(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{Nodes: 2, Args: []string{"--session-timeout", "2s", "--standby-replicas", "0"}})
	n0 := c.Node(0)
	n0.Exec(t, `CREATE STREAM nev (id BIGINT KEY, who STRUCT<name VARCHAR, tier INT>, items ARRAY<STRUCT<sku VARCHAR>>, m MAP<STRING, INT>)
		WITH (kafka_topic = 'nev', value_format = 'json', partitions = 4)`)
	n0.Exec(t, `CREATE TABLE ndocs AS SELECT id, who, items, m FROM nev`)
	waitPlacedView(t, c, n0, "ndocs", 4, 0)
	var want []string
	for i := range 24 {
		n0.Exec(t, fmt.Sprintf(`INSERT INTO nev VALUES (%d, '{"name": "n%d", "tier": %d}', '[{"sku": "s%d"}]', '{"k": %d}')`, i, i, i%3, i, i))
		want = append(want, fmt.Sprintf(`%d|n%d|s%d|%d|{"name": "n%d", "tier": %d}|%d`, i, i, i, i, i, i%3, i%3))
	}
	for _, n := range c.Nodes() {
		servers := map[string]bool{}
		c.Eventually(t, 30*time.Second, func() error {
			rows, err := n.QueryErr(t, `SELECT id, who->name, items[1]->sku, m['k'], who, (SELECT (who)->tier), _served_by FROM ndocs ORDER BY id`)
			if err != nil {
				return err
			}
			var got []string
			clear(servers)
			for _, r := range rows {
				got = append(got, strings.Join(r[:len(r)-1], "|"))
				servers[r[len(r)-1]] = true
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				return fmt.Errorf("on %s:\n%s\nwant\n%s", n.ID, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			return nil
		})
		if len(servers) < 2 {
			t.Errorf("%s served every row itself (%v): nothing was forwarded", n.ID, servers)
		}
		rows := n.Query(t, `SELECT count(*) FROM ndocs WHERE who->tier = 1 AND array_contains(transform(items, i => i->sku), 's4')`)
		if len(rows) != 1 || rows[0][0] != "1" {
			t.Errorf("a filter over forwarded nested values on %s: %v, want 1", n.ID, rows)
		}
	}
}
