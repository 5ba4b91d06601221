//go:build bench

package bench

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/basindb/basin/internal/testcluster"
)

// B9: windowed aggregation. The throughput half writes windowRecords
// records, keyed by one of windowKeys BIGINT keys, whose times rise over
// ten minutes, and times a view counting each key per one-minute
// tumbling window from its CREATE until it holds every record, against
// the Kafka-only floor of the same topology. The freshness half writes a
// steady load into a windowed view and a plain GROUP BY view of the same
// stream and times, for probe records of keys of their own, the wait
// from the probe's produce until a pull query of each view shows it.
const (
	windowRecords = 1_000_000
	windowKeys    = 100_000
	windowTopic   = "clicks"
	windowSpan    = int64(10 * 60 * 1000) // the records' times, in ms
	windowBase    = int64(1_700_000_000_000)
)

type clickValue struct {
	Ts     int64 `json:"ts"`
	Amount int64 `json:"amount"`
}

// clickTime is the time of record id: rising over windowSpan.
func clickTime(id int64) int64 { return windowBase + id*windowSpan/windowRecords }

// produceClicks writes windowRecords records to windowTopic, record id
// keyed by id % windowKeys, before any view exists.
func produceClicks(t *testing.T, c *testcluster.Cluster) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), ingestTimeout)
	defer cancel()
	createTopics(ctx, t, kadm.NewClient(c.Client(t)), windowTopic)
	cl := c.Client(t,
		kgo.ProducerLinger(5*time.Millisecond),
		kgo.MaxBufferedRecords(200_000),
		kgo.ProducerBatchMaxBytes(4<<20),
		kgo.DefaultProduceTopic(windowTopic),
	)
	const slice = 50_000
	for first := int64(0); first < windowRecords; first += slice {
		recs := make([]*kgo.Record, 0, slice)
		for id := first; id < min(first+slice, windowRecords); id++ {
			v, _ := json.Marshal(clickValue{Ts: clickTime(id), Amount: id % 1000})
			recs = append(recs, &kgo.Record{Key: binary.BigEndian.AppendUint64(nil, uint64(id%windowKeys)), Value: v})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("producing records %d..: %v", first, err)
		}
	}
}

// windowFloor does the Kafka reads and writes a windowed view grouped by
// its stream's key must do, with no SQL and no storage: it reads the
// topic and, in one transaction per fetch, writes one changelog record
// per key and window the fetch changed. It returns the time until it
// has read every record.
func windowFloor(t *testing.T, c *testcluster.Cluster) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), ingestTimeout)
	defer cancel()
	const changelog = "floor-window-changelog"
	createTopics(ctx, t, kadm.NewClient(c.Client(t)), changelog)
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(c.Broker()),
		kgo.ConsumeTopics(windowTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.TransactionalID("floor-window"),
		kgo.DefaultProduceTopic(changelog),
		kgo.ProducerBatchMaxBytes(4<<20),
		kgo.MaxBufferedRecords(200_000),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	start := time.Now()
	for got := 0; got < windowRecords; {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("floor: %d of %d records: %v", got, windowRecords, err)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("floor: %s/%d: %v", topic, p, err) })
		recs := fs.Records()
		if len(recs) == 0 {
			continue
		}
		got += len(recs)
		seen := make(map[string]bool, len(recs))
		out := make([]*kgo.Record, 0, len(recs))
		for _, r := range recs {
			var v clickValue
			_ = json.Unmarshal(r.Value, &v)
			key := binary.BigEndian.AppendUint64(slices.Clip(r.Key), uint64(v.Ts/60_000*60_000))
			if !seen[string(key)] {
				seen[string(key)] = true
				out = append(out, &kgo.Record{Key: key, Value: r.Value, Partition: r.Partition})
			}
		}
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := cl.ProduceSync(ctx, out...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			t.Fatal(err)
		}
	}
	return time.Since(start)
}

// TestB9Windows measures windowed aggregation: its ingest rate against
// the Kafka-only floor, and the freshness of a windowed view under a
// steady load beside a plain GROUP BY view's.
func TestB9Windows(t *testing.T) {
	c := ingestCluster(t)
	n := c.Node(0)
	produceClicks(t, c)

	floorEl := windowFloor(t, c)
	floorRate := float64(windowRecords) / floorEl.Seconds()
	t.Logf("Kafka-only floor: %d records in %v: %.0f records/s", windowRecords, floorEl.Round(time.Millisecond), floorRate)

	conn := n.Conn(t)
	n.Exec(t, `CREATE STREAM clicks (k BIGINT KEY, ts BIGINT, amount BIGINT)
		WITH (kafka_topic = 'clicks', value_format = 'json', partitions = 4, timestamp = 'ts')`)
	start := time.Now()
	n.Exec(t, `CREATE TABLE per_minute AS SELECT k, COUNT(*) AS n FROM clicks
		WINDOW TUMBLING (SIZE 1 MINUTE, GRACE PERIOD 1 HOUR) GROUP BY k`)
	// Each key has a record every windowKeys records, 0.6 s apart in
	// time: every key is in each of the ten minutes.
	done := waitWindows(t, conn, "per_minute", windowRecords)
	basinEl := done.Sub(start)
	basinRate := float64(windowRecords) / basinEl.Seconds()
	basinRSS := peakRSS(n.PID())
	t.Logf("basin: per_minute reflects %d records in %v: %.0f records/s, peak RSS %d MiB", windowRecords, basinEl.Round(time.Millisecond), basinRate, basinRSS>>20)
	var windows int64
	if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM per_minute").Scan(&windows); err != nil {
		t.Fatal(err)
	}
	theReport.add(t, result{Bench: "B9", What: "ingest 1M records into a 1-minute tumbling count of 100k keys",
		Basin: basinRate, Ref: floorRate, Unit: "records/s", RefName: "Kafka-only pipeline of the windowed view", HigherBetter: true,
		Target: "≥ 0.6×", Met: basinRate >= 0.6*floorRate,
		Note: fmt.Sprintf("basin %.1fs, %d windows, peak RSS %d MiB; the floor reads the topic and writes one changelog record per key and window per fetch, in a transaction per fetch: %.1fs", basinEl.Seconds(), windows, basinRSS>>20, floorEl.Seconds())})

	windowed, plain := freshness(t, c, n)
	theReport.add(t, result{Bench: "B9", What: "freshness at 20k records/s: produce to a pull query showing it, p99",
		Basin: windowed.p99, Ref: plain.p99, Unit: "ms", RefName: "a plain GROUP BY view of the same stream, same run", HigherBetter: false,
		Target: "p99 ≤ 50 ms", Met: windowed.p99 <= 50,
		Note: fmt.Sprintf("windowed view p50 %.1f ms, p99 %.1f ms (%d probes); GROUP BY view p50 %.1f ms, p99 %.1f ms; load %.0f records/s",
			windowed.p50, windowed.p99, windowed.n, plain.p50, plain.p99, windowed.rate)})
}

// waitWindows waits until relation's counts sum to records.
func waitWindows(t *testing.T, conn *pgx.Conn, relation string, records int64) time.Time {
	t.Helper()
	return pollUntil(t, ingestTimeout, 200*time.Millisecond, func() (bool, error) {
		ok, _, err := caughtUp(conn, relation)
		if err != nil || !ok {
			return false, err
		}
		_, s, err := countAndSum(conn, relation, "n")
		return s == records, err
	})
}

type freshnessResult struct {
	p50, p99 float64 // ms
	n        int
	rate     float64 // records/s of load
}

// Freshness: freshLoad records/s of keys 0 to windowKeys-1 for
// freshSeconds, at the time they are produced; every freshEvery a probe
// record of a key of its own (windowKeys and up), after which one
// session per view polls a lookup of the probe's key until it shows.
const (
	freshLoad    = 20_000
	freshSeconds = 20
	freshEvery   = 100 * time.Millisecond
)

// freshness runs the freshness half of B9 and returns the windowed
// view's and the GROUP BY view's.
func freshness(t *testing.T, c *testcluster.Cluster, n *testcluster.Node) (windowed, plain freshnessResult) {
	t.Helper()
	n.Exec(t, `CREATE STREAM live (k BIGINT KEY, ts BIGINT, amount BIGINT)
		WITH (kafka_topic = 'live', value_format = 'json', partitions = 4, timestamp = 'ts')`)
	n.Exec(t, `CREATE TABLE live_minute AS SELECT k, COUNT(*) AS n FROM live
		WINDOW TUMBLING (SIZE 1 MINUTE, GRACE PERIOD 1 MINUTE) GROUP BY k`)
	n.Exec(t, `CREATE TABLE live_total AS SELECT k, COUNT(*) AS n FROM live GROUP BY k`)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cl := c.Client(t, kgo.ProducerLinger(time.Millisecond), kgo.DefaultProduceTopic("live"), kgo.MaxBufferedRecords(100_000))
	value := func(ts int64) []byte {
		v, _ := json.Marshal(clickValue{Ts: ts, Amount: 1})
		return v
	}
	key := func(k int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(k)) }

	// The load, in slices of 10 ms of records.
	load := startPacedLoad(ctx, cl, freshLoad, func(id int64) *kgo.Record {
		return &kgo.Record{Key: key(id % windowKeys), Value: value(time.Now().UnixMilli())}
	})
	loadStart := load.start

	lookup := map[string]string{
		"live_minute": "SELECT n FROM live_minute WHERE k = $1 AND windowstart = $2",
		"live_total":  "SELECT n FROM live_total WHERE k = $1",
	}
	conns := map[string]*pgx.Conn{}
	for view := range lookup {
		conns[view] = n.Conn(t)
	}
	waits := map[string][]float64{}
	probe := int64(windowKeys)
	pace := time.NewTicker(freshEvery)
	defer pace.Stop()
	for time.Since(loadStart) < freshSeconds*time.Second {
		<-pace.C
		probe++
		ts := time.Now().UnixMilli()
		sent := time.Now()
		if err := cl.ProduceSync(ctx, &kgo.Record{Key: key(probe), Value: value(ts)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		for view, q := range lookup {
			args := []any{probe}
			if view == "live_minute" {
				args = append(args, ts/60_000*60_000)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				// A lookup a millisecond, so that the polling leaves
				// the two cores to the views.
				every := time.NewTicker(time.Millisecond)
				defer every.Stop()
				for ctx.Err() == nil {
					<-every.C
					var got int64
					err := conns[view].QueryRow(ctx, q, args...).Scan(&got)
					if err == nil && got == 1 {
						mu.Lock()
						waits[view] = append(waits[view], float64(time.Since(sent).Microseconds())/1000)
						mu.Unlock()
						return
					}
					if err != nil && err != pgx.ErrNoRows {
						t.Errorf("%s: %v", view, err)
						return
					}
				}
			}()
		}
		wg.Wait()
	}
	produced := load.stop()
	rate := float64(produced) / time.Since(loadStart).Seconds()
	res := func(view string) freshnessResult {
		ws := slices.Clone(waits[view])
		slices.Sort(ws)
		if len(ws) == 0 {
			t.Fatalf("%s: no probe seen", view)
		}
		return freshnessResult{p50: ws[len(ws)/2], p99: ws[min(len(ws)-1, len(ws)*99/100)], n: len(ws), rate: rate}
	}
	return res("live_minute"), res("live_total")
}
