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
	c.exec("CREATE STREAM lefts (k VARCHAR KEY, id BIGINT, v BIGINT, ts BIGINT) WITH (partitions = 2, timestamp = 'ts')")
	c.exec("CREATE STREAM rights (id BIGINT KEY, k VARCHAR, w BIGINT, ts BIGINT) WITH (partitions = 3, timestamp = 'ts')")
	c.exec("CREATE STREAM inner_j AS SELECT l.k, l.id AS lid, r.id AS rid, l.v, r.w FROM lefts l JOIN rights r WITHIN (5 MINUTES, 10 MINUTES) GRACE PERIOD 1 HOUR ON l.k = r.k WHERE r.w >= 20")
	c.exec("CREATE STREAM full_j AS SELECT COALESCE(l.k, r.k) AS k, l.id AS lid, r.id AS rid FROM lefts l FULL OUTER JOIN rights r WITHIN (2 MINUTES, 4 MINUTES) GRACE PERIOD 1 HOUR ON l.k = r.k")
	c.exec("INSERT INTO lefts VALUES (NULL, 1, 10, 1700000000000), ('a', 2, 20, 1700000000000)")
	c.exec("INSERT INTO rights VALUES (1, NULL, 10, 1700000000000), (2, 'a', 30, 1700000000000)")
	for i := 0; i < 6; i++ {
		t.Log(c.rows("SELECT k, lid, rid, rowtime FROM inner_j"))
		t.Log(c.rows("SELECT k, lid, rid, rowtime FROM full_j"))
		t.Log(c.rows("SELECT query_id, error FROM basin_processing_log"))
		t.Log(c.rows("SELECT k, id, rowtime FROM lefts"))
		time.Sleep(500 * time.Millisecond)
	}
	for _, ts := range n.localTasks().Tasks {
		t.Logf("%+v", ts)
	}
}
