package node

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/basindb/basin/internal/poll"
	"github.com/basindb/basin/kafka"
)

// TestDerivedStream writes random orders, bad records among them, to a
// stream with three partitions, and derives two streams from it: one
// filtered and projected, keeping the key (and so each record's
// partition), and one re-keyed by region into four partitions. The
// node is closed and started again halfway. Each derived stream must
// then hold, read by a consumer of committed records, exactly the
// records of its query over the source, once each: the same rows as
// the same SQL run as a pull query over the source, every record of the
// re-keyed stream in the partition its key hashes to, every one of the
// other in its source record's partition. kcat reads the re-keyed one
// the same. An INSERT ... SELECT query writes into a third stream, also
// once per record.
func TestDerivedStream(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start, broker := restartable(t)
	n := start()
	c := sqlConn{t, ctx, connect(t, n.PGAddr())}
	exec := func(q string) { t.Helper(); c.exec(q) }
	exec("CREATE STREAM orders (id BIGINT KEY, region VARCHAR, amount BIGINT) WITH (partitions = 3)")
	exec("CREATE STREAM big WITH (kafka_topic = 'big_orders') AS SELECT id, region, amount * 10 AS cents FROM orders WHERE amount >= 50")
	exec("CREATE STREAM by_region WITH (partitions = 4) AS SELECT region, id, amount FROM orders PARTITION BY region")
	// An INSERT ... SELECT query writes the European orders into a
	// stream of its own, declared with two partitions.
	exec("CREATE STREAM eu_orders (id BIGINT KEY, amount BIGINT, region VARCHAR) WITH (partitions = 2)")
	exec("INSERT INTO eu_orders SELECT id, amount, region FROM orders WHERE region = 'eu'")

	rng := rand.New(rand.NewPCG(16, 1))
	regions := []string{"eu", "us", "apac", "latam", "mea"}
	prod, err := kafka.NewClient(kafka.ClientOptions{Brokers: []string{broker}, Logger: testLogger()}, kafka.ProducerOpts()...)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	id := int64(0)
	write := func(count int) {
		t.Helper()
		var rows []string
		for range count {
			id++
			rows = append(rows, fmt.Sprintf("(%d, '%s', %d)", id, regions[rng.IntN(len(regions))], rng.IntN(100)))
		}
		exec("INSERT INTO orders VALUES " + strings.Join(rows, ", "))
		// A record that is not JSON goes to the processing log.
		if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("not json")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	write(300)
	waitTasks(t, n, 9) // three per query
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	n = start()
	c.conn = connect(t, n.PGAddr())
	write(300)
	waitTasks(t, n, 9) // three per query

	// What each stream's query gives over the source, as a pull query.
	want := func(q string) []string { return c.rows(q) }
	wantBig := want("SELECT id, region, amount * 10 FROM orders WHERE amount >= 50")
	wantByRegion := want("SELECT region, id, amount FROM orders")
	if len(wantBig) < 100 || len(wantByRegion) != 600 {
		t.Fatalf("the source holds %d and %d of the records", len(wantBig), len(wantByRegion))
	}
	srcPartition := map[string]int32{} // id → partition of its source record
	for _, r := range want("SELECT id, _partition FROM orders") {
		var k string
		var p int32
		fmt.Sscan(r, &k, &p)
		srcPartition[k] = p
	}

	// The derived topics, read by a consumer of committed records.
	cl, err := kafka.NewClient(kafka.ClientOptions{Brokers: []string{broker}, Logger: testLogger()},
		kgo.ConsumeTopics("big_orders", "by_region"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got := map[string][]string{}
	var misplaced []string
	complete := func() bool {
		return len(got["big_orders"]) >= len(wantBig) && len(got["by_region"]) >= len(wantByRegion)
	}
	poll.Cond(30*time.Second, func() bool {
		fctx, fcancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer fcancel()
		cl.PollFetches(fctx).EachRecord(func(r *kgo.Record) {
			var v map[string]any
			if err := json.Unmarshal(r.Value, &v); err != nil {
				t.Errorf("%s: a value that is not a JSON object: %q", r.Topic, r.Value)
				return
			}
			switch r.Topic {
			case "big_orders":
				// The key, id, is a BIGINT in key_format 'kafka': 8 bytes,
				// big-endian; the value holds the other columns.
				if len(r.Key) != 8 {
					t.Errorf("big_orders: key %x is not a BIGINT", r.Key)
					return
				}
				key := fmt.Sprint(int64(binary.BigEndian.Uint64(r.Key)))
				got[r.Topic] = append(got[r.Topic], fmt.Sprint(key, " ", v["region"], " ", v["cents"]))
				if p := srcPartition[key]; r.Partition != p {
					misplaced = append(misplaced, fmt.Sprintf("big_orders id %s in partition %d, its source record in %d", key, r.Partition, p))
				}
			case "by_region":
				got[r.Topic] = append(got[r.Topic], fmt.Sprint(string(r.Key), " ", v["id"], " ", v["amount"]))
				if p := kafka.Partition(r.Key, 4); r.Partition != p {
					misplaced = append(misplaced, fmt.Sprintf("by_region key %s in partition %d, not %d", r.Key, r.Partition, p))
				}
			}
		})
		return complete()
	})
	for topic, want := range map[string][]string{"big_orders": wantBig, "by_region": wantByRegion} {
		slices.Sort(got[topic])
		if !slices.Equal(got[topic], want) {
			t.Errorf("%s holds %d records, want the %d of its query over orders; first differences: %s",
				topic, len(got[topic]), len(want), firstDiff(got[topic], want))
		}
	}
	if len(misplaced) > 0 {
		t.Errorf("%d records misplaced, as %s", len(misplaced), misplaced[0])
	}
	// The pull query over a derived stream reads the same.
	if pull := want("SELECT id, region, cents FROM big"); !slices.Equal(pull, wantBig) {
		t.Errorf("SELECT over big: %d rows, want %d: %s", len(pull), len(wantBig), firstDiff(pull, wantBig))
	}
	if got, want := want("SELECT id, amount, region FROM eu_orders"), want("SELECT id, amount, region FROM orders WHERE region = 'eu'"); !slices.Equal(got, want) {
		t.Errorf("eu_orders: %d records, want %d: %s", len(got), len(want), firstDiff(got, want))
	}
	// kcat, reading committed records, sees one record per order.
	lines := kcatLines(t, broker, "by_region")
	if len(lines) != len(wantByRegion) {
		t.Errorf("kcat reads %d records of by_region, want %d", len(lines), len(wantByRegion))
	}
	for _, l := range lines {
		if k, _, _ := strings.Cut(l, "\t"); !slices.Contains(regions, k) {
			t.Errorf("kcat reads %q: the key is not a region", l)
			break
		}
	}
	// The bad records went to the processing log, once per query and
	// bad record.
	var logged int64
	if err := c.conn.QueryRow(ctx, "SELECT count(*) FROM basin_processing_log WHERE query_id LIKE 'CSAS%'").Scan(&logged); err != nil {
		t.Fatal(err)
	}
	if logged != 4 {
		t.Errorf("the processing log holds %d records of the derived streams' queries, want 4", logged)
	}
	if err := c.conn.QueryRow(ctx, "SELECT count(*) FROM basin_processing_log WHERE query_id = 'INSERTQUERY_1'").Scan(&logged); err != nil {
		t.Fatal(err)
	}
	if logged != 2 {
		t.Errorf("the processing log holds %d records of INSERTQUERY_1, want 2", logged)
	}
}

// firstDiff describes where two sorted lists first differ.
func firstDiff(got, want []string) string {
	for i := 0; i < len(got) || i < len(want); i++ {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			return fmt.Sprintf("at %d: got %q, want %q", i, g, w)
		}
	}
	return "none"
}

// kcatLines consumes topic to its end with kcat, reading committed
// records only, and returns "key\tvalue" per record.
func kcatLines(t *testing.T, broker, topic string) []string {
	t.Helper()
	out := kcatRun(t, "-C", "-b", broker, "-t", topic, "-e", "-q", "-Z", "-X", "isolation.level=read_committed", "-f", "%k\t%s\n")
	if out == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(out, "\n"), "\n")
}
