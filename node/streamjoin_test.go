package node

import (
	"context"
	"testing"
	"time"
)

func TestStreamJoinScratch(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := startNode(t, t.TempDir(), func(o *Options) { o.NodeID = "node-a" })
	c := sqlConn{t, ctx, connect(t, n.PGAddr())}
	c.exec("CREATE STREAM orders (id BIGINT KEY, customer VARCHAR, amount BIGINT, ts BIGINT) WITH (partitions = 2, timestamp = 'ts')")
	c.exec("CREATE STREAM payments (pid BIGINT KEY, order_id BIGINT, paid BIGINT, ts BIGINT) WITH (partitions = 3, timestamp = 'ts')")
	c.exec("CREATE STREAM paid AS SELECT o.id, o.amount, p.pid, p.paid, GREATEST(o.ts, p.ts) - LEAST(o.ts, p.ts) AS apart FROM orders o JOIN payments p WITHIN 1 HOUR GRACE PERIOD 10 MINUTES ON o.id = p.order_id")
	c.rows("EXPLAIN CREATE STREAM x AS SELECT o.id, p.paid FROM orders o JOIN payments p WITHIN 1 HOUR GRACE PERIOD 10 MINUTES ON o.id = p.order_id")
	c.exec("INSERT INTO orders VALUES (1, 'c1', 10, 1700000000000), (2, 'c2', 20, 1700000000000 - 1800000), (3, 'c3', 30, 1700000000000)")
	c.exec("INSERT INTO payments VALUES (10, 1, 10, 1700001800000), (12, 1, 5, 1700000000000 - 600000)")
	c.exec("INSERT INTO payments VALUES (11, 2, 20, 1700002400000)")
	for i := 0; i < 20; i++ {
		t.Log(c.rows("SELECT id, amount, pid, paid, apart, rowtime FROM paid"))
		for _, ts := range n.localTasks().Tasks {
			t.Logf("%+v", ts)
		}
		t.Log(c.rows("SELECT * FROM basin_processing_log"))
		time.Sleep(500 * time.Millisecond)
	}
}
