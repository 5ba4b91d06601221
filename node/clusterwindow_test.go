package node

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/basindb/basin/internal/testcluster"
)

// TestClusterWindowedReadsThroughAKill reads a windowed view on three
// nodes, one standby a partition, by key and window, by key and window
// range and by key alone, while the node with the most of its actives is
// killed with SIGKILL and its tasks move: every read answers, and
// exactly, from the standby promoted or the replicas left.
func TestClusterWindowedReadsThroughAKill(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{Nodes: 3, Args: []string{"--session-timeout", "2s", "--standby-replicas", "1"}})
	n0 := c.Node(0)
	n0.Exec(t, "CREATE STREAM hits (site VARCHAR KEY, ms BIGINT) WITH (kafka_topic = 'hits', value_format = 'json', partitions = 4)")
	n0.Exec(t, "CREATE TABLE hits_10s AS SELECT site, COUNT(*) AS n, SUM(ms) AS total FROM hits WINDOW TUMBLING (SIZE 10 SECONDS, GRACE PERIOD 1 DAY) GROUP BY site")
	placed := waitPlacedView(t, c, n0, "hits_10s", 4, 1)

	// Twenty sites, each with hits in six windows of ten seconds.
	base := time.UnixMilli(1_700_000_000_000)
	type window struct {
		site  string
		start int64
	}
	want := map[window][2]int64{}
	var recs []*kgo.Record
	for i := range 1200 {
		site := fmt.Sprintf("site-%02d", i%20)
		at := base.Add(time.Duration(i*50) * time.Millisecond)
		ms := int64(i % 97)
		v, _ := json.Marshal(map[string]any{"ms": ms})
		recs = append(recs, &kgo.Record{Key: []byte(site), Value: v, Timestamp: at})
		w := window{site, at.UnixMilli() / 10_000 * 10_000}
		want[w] = [2]int64{want[w][0] + 1, want[w][1] + ms}
	}
	c.Produce(t, "hits", recs...)
	c.Eventually(t, 60*time.Second, func() error {
		var n int64
		if err := n0.Conn(t).QueryRow(context.Background(), "SELECT sum(n) FROM hits_10s").Scan(&n); err != nil || n != 1200 {
			return fmt.Errorf("hits_10s counts %d of 1200 hits (%v)", n, err)
		}
		return nil
	})

	victim, actives := mostActives(c, placed)
	reader := otherNode(c, victim)
	conn := reader.Conn(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	reads, failures := 0, 0
	var firstErr error
	fail := func(err error) {
		failures++
		if firstErr == nil {
			firstErr = err
		}
	}
	read := func() {
		for w, v := range want {
			var n, total int64
			reads++
			err := conn.QueryRow(ctx, "SELECT n, total FROM hits_10s WHERE site = $1 AND windowstart = $2", w.site, w.start).Scan(&n, &total)
			if err != nil || n != v[0] || total != v[1] {
				fail(fmt.Errorf("%s at %d: %d|%d, want %v: %v", w.site, w.start, n, total, v, err))
			}
		}
		for s := range 20 {
			site := fmt.Sprintf("site-%02d", s)
			var windows, n int64
			reads++
			err := conn.QueryRow(ctx, "SELECT count(*), sum(n) FROM hits_10s WHERE site = $1 AND windowstart >= $2 AND windowstart < $3",
				site, base.UnixMilli()/10_000*10_000+10_000, base.UnixMilli()/10_000*10_000+40_000).Scan(&windows, &n)
			if err != nil || windows != 3 {
				fail(fmt.Errorf("%s: %d windows in the range, want 3: %v", site, windows, err))
			}
			reads++
			if err := conn.QueryRow(ctx, "SELECT sum(n) FROM hits_10s WHERE site = $1", site).Scan(&n); err != nil || n != 60 {
				fail(fmt.Errorf("%s: %d hits, want 60: %v", site, n, err))
			}
		}
	}
	read()
	t.Logf("SIGKILL %s (%d actives); reading on %s", victim.ID, actives, reader.ID)
	readThroughKill(t, victim, reader, read)
	read()
	t.Logf("%d reads, %d failed", reads, failures)
	if failures > 0 {
		t.Fatalf("%d of %d reads failed or were wrong; first: %v", failures, reads, firstErr)
	}
}
