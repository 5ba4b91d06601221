package node

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestCloseLeavesNoGoroutines runs a node through DDL, inserts and reads,
// closes it, and expects every goroutine it started to be gone.
func TestCloseLeavesNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	n := startNode(t, t.TempDir())
	conn := connect(t, n.PGAddr())
	mustExec(t, conn, `CREATE STREAM s (k BIGINT KEY, g VARCHAR, v BIGINT) WITH (kafka_topic='s', value_format='json', partitions=2)`)
	mustExec(t, conn, `CREATE TABLE by_g AS SELECT g, SUM(v) AS total FROM s GROUP BY g`)
	mustExec(t, conn, `INSERT INTO s (k, g, v) VALUES (1, 'a', 1), (2, 'b', 2)`)
	waitQuery(t, conn, `SELECT g, total FROM by_g ORDER BY g`, "a|1\nb|2\n")
	mustExec(t, conn, `DROP TABLE by_g`)
	if err := conn.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() error {
		if g := runtime.NumGoroutine(); g > before {
			buf := make([]byte, 1<<20)
			stacks := string(buf[:runtime.Stack(buf, true)])
			var ours []string
			for _, s := range strings.Split(stacks, "\n\n") {
				if strings.Contains(s, "basindb/basin") && !strings.Contains(s, "TestCloseLeavesNoGoroutines") {
					ours = append(ours, s)
				}
			}
			return fmt.Errorf("%d goroutines after Close, %d before; basin's:\n%s", g, before, strings.Join(ours, "\n\n"))
		}
		return nil
	})
}
