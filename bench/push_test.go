//go:build bench

package bench

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/basindb/basin/internal/poll"
	"github.com/basindb/basin/internal/testcluster"
)

// B10: push. pushSubscribers sessions SUBSCRIBE to a view of a stream
// written at pushLoad records/s for pushSeconds; every pushEvery a probe
// record of a key of its own carries its produce time (ms) as its
// amount, which is its group's sum: each subscriber that receives the
// probe's row notes produce to delivery. The same load then goes into
// a second view of its own with no subscriber, and each view's ingest
// rate is its records over the time until it has them all.
const (
	pushSubscribers = 100
	pushLoad        = 20_000
	pushSeconds     = 15
	pushEvery       = 100 * time.Millisecond
	pushKeys        = 100_000
)

func TestB10Subscriptions(t *testing.T) {
	// One node as ingestCluster's, taking the subscribers' sessions.
	c := testcluster.Start(t, testcluster.Options{Nodes: 1, Args: []string{"--standby-replicas", "0", "--max-connections", "400"}})
	n := c.Node(0)
	withSubs := pushRun(t, c, n, "subscribed", pushSubscribers)
	alone := pushRun(t, c, n, "alone", 0)
	theReport.add(t, result{Bench: "B10", What: fmt.Sprintf("%d subscriptions at %d records/s: produce to delivery, p99", pushSubscribers, pushLoad),
		Basin: withSubs.p99, Unit: "ms", RefName: "—", HigherBetter: false,
		Note: fmt.Sprintf("p50 %.1f ms, p99 %.1f ms over %d deliveries (%d probes); subscribers received %d rows in all", withSubs.p50, withSubs.p99, withSubs.n, withSubs.probes, withSubs.rows)})
	theReport.add(t, result{Bench: "B10", What: fmt.Sprintf("ingest at %d records/s offered with %d subscriptions", pushLoad, pushSubscribers),
		Basin: withSubs.rate, Ref: alone.rate, Unit: "records/s", RefName: "the same load into a view without subscribers, same run", HigherBetter: true,
		Note: fmt.Sprintf("with subscribers: %d records in %.1fs; without: %d records in %.1fs", withSubs.records, withSubs.took.Seconds(), alone.records, alone.took.Seconds())})
}

type pushResult struct {
	p50, p99        float64 // ms, produce to delivery
	n, probes, rows int
	records         int64
	took            time.Duration // from the first record until the view has them all
	rate            float64       // records/s
}

// pushRun makes a stream and a view named after name, starts subs
// subscribers of the view, and runs the load and the probes.
func pushRun(t *testing.T, c *testcluster.Cluster, n *testcluster.Node, name string, subs int) pushResult {
	t.Helper()
	stream, view := name+"_events", name+"_totals"
	n.Exec(t, fmt.Sprintf(`CREATE STREAM %s (k BIGINT KEY, amount BIGINT) WITH (kafka_topic = '%s', value_format = 'json', partitions = 4)`, stream, stream))
	n.Exec(t, fmt.Sprintf(`CREATE TABLE %s AS SELECT k, COUNT(*) AS n, SUM(amount) AS s FROM %s GROUP BY k`, view, stream))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	// The subscribers: each notes, for a probe's row, now minus the
	// produce time its sum is.
	var mu sync.Mutex
	var waits []float64
	var rows atomic.Int64
	sctx, stopSubs := context.WithCancel(ctx)
	var subWG sync.WaitGroup
	ready := make(chan struct{}, subs)
	for range subs {
		conn := n.Conn(t)
		subWG.Add(1)
		go func() {
			defer subWG.Done()
			rs, err := conn.Query(sctx, "SUBSCRIBE "+view+" WITH (snapshot = false)", pgx.QueryResultFormats{pgx.TextFormatCode})
			ready <- struct{}{}
			if err != nil {
				t.Errorf("SUBSCRIBE: %v", err)
				return
			}
			defer rs.Close()
			for rs.Next() {
				now := time.Now().UnixMilli()
				rows.Add(1)
				v := rs.RawValues()
				k, _ := strconv.ParseInt(string(v[0]), 10, 64)
				if k < pushKeys {
					continue
				}
				sent, _ := strconv.ParseInt(string(v[2]), 10, 64)
				mu.Lock()
				waits = append(waits, float64(now-sent))
				mu.Unlock()
			}
		}()
	}
	for range subs {
		<-ready
	}

	cl := c.Client(t, kgo.ProducerLinger(time.Millisecond), kgo.DefaultProduceTopic(stream), kgo.MaxBufferedRecords(100_000))
	key := func(k int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(k)) }
	value := func(amount int64) []byte {
		v, _ := json.Marshal(map[string]int64{"amount": amount})
		return v
	}
	load := startPacedLoad(ctx, cl, pushLoad, func(id int64) *kgo.Record {
		return &kgo.Record{Key: key(id % pushKeys), Value: value(1)}
	})
	loadStart := load.start
	probes := 0
	pace := time.NewTicker(pushEvery)
	for time.Since(loadStart) < pushSeconds*time.Second {
		<-pace.C
		probes++
		cl.Produce(ctx, &kgo.Record{Key: key(pushKeys + int64(probes)), Value: value(time.Now().UnixMilli())}, nil)
	}
	pace.Stop()
	produced := load.stop()
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	records := produced + int64(probes)
	conn := n.Conn(t)
	done := pollUntil(t, 5*time.Minute, 20*time.Millisecond, func() (bool, error) {
		var sum *int64
		err := conn.QueryRow(ctx, "SELECT sum(n) FROM "+view).Scan(&sum)
		return err == nil && sum != nil && *sum >= records, err
	})
	if subs > 0 {
		// Every subscriber has every probe, or the deliveries are what
		// half a minute more brings.
		ok := func() (bool, error) {
			mu.Lock()
			defer mu.Unlock()
			return len(waits) >= probes*subs, nil
		}
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		_ = poll.WaitEvery(wctx, 50*time.Millisecond, ok)
		cancel()
	}
	stopSubs()
	subWG.Wait()
	if subs > 0 {
		// The subscribers' cancel requests are connections too, over the
		// node's startup limit at once: what follows waits until it takes
		// new ones again.
		pollUntil(t, time.Minute, 50*time.Millisecond, func() (bool, error) {
			c, err := n.Connect(ctx)
			if err == nil {
				_ = c.Close(ctx)
			}
			return err == nil, nil
		})
	}
	res := pushResult{records: records, took: done.Sub(loadStart), probes: probes, rows: int(rows.Load())}
	res.rate = float64(records) / res.took.Seconds()
	if subs > 0 {
		slices.Sort(waits)
		if len(waits) == 0 {
			t.Fatal("no probe reached a subscriber")
		}
		res.n, res.p50, res.p99 = len(waits), waits[len(waits)/2], waits[min(len(waits)-1, len(waits)*99/100)]
	}
	t.Logf("%s: %d records in %v (%.0f records/s), %d deliveries, p50 %.1f ms, p99 %.1f ms", name, records, res.took.Round(time.Millisecond), res.rate, res.n, res.p50, res.p99)
	return res
}
