//go:build bench

package bench

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/basindb/basin/internal/testcluster"
)

// B6's table: joinCustomers rows keyed by a BIGINT id, which the
// orders' grp (B2's shape: grp = id % 100,000) looks up.
const (
	joinCustomers     = ingestGroups
	joinCustomerTopic = "customers"
)

// customerValue is the JSON value of the customers table.
type customerValue struct {
	Name string `json:"name"`
	Tier int64  `json:"tier"`
}

// produceCustomers writes the joinCustomers rows of the customers table.
func produceCustomers(t *testing.T, c *testcluster.Cluster) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), ingestTimeout)
	defer cancel()
	adm := kadm.NewClient(c.Client(t))
	createTopics(ctx, t, adm, joinCustomerTopic)
	cl := c.Client(t, kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedRecords(200_000),
		kgo.ProducerBatchMaxBytes(4<<20), kgo.DefaultProduceTopic(joinCustomerTopic))
	recs := make([]*kgo.Record, 0, joinCustomers)
	for id := range joinCustomers {
		v, _ := json.Marshal(customerValue{Name: fmt.Sprintf("customer %d", id), Tier: int64(id % 3)})
		recs = append(recs, &kgo.Record{Key: binary.BigEndian.AppendUint64(nil, uint64(id)), Value: v})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("producing customers: %v", err)
	}
}

// TestB6StreamTableJoin measures how fast a derived stream that enriches
// each of 1M orders with its customer's row (100,000 rows) writes its
// records, from CREATE STREAM until a read_committed consumer of its
// topic has them all, against the Kafka-only floor of the same topology.
// The orders are keyed by their id, so the join first routes them by
// customer, as basin must.
func TestB6StreamTableJoin(t *testing.T) {
	c := ingestCluster(t)
	n := c.Node(0)
	// The table first: each order then joins its customer's row, which
	// is older (a stream–table join sees the table as of each record).
	produceCustomers(t, c)
	produceOrders(t, c)

	floorEl := joinPipeline(t, c)
	floorRate := float64(ingestRecords) / floorEl.Seconds()
	t.Logf("Kafka-only pipeline (route by customer, then join against the table in memory, transactions): %d records in %v: %.0f records/s",
		ingestRecords, floorEl.Round(time.Millisecond), floorRate)

	n.Exec(t, createOrders)
	n.Exec(t, `CREATE TABLE customers (id BIGINT PRIMARY KEY, name VARCHAR, tier BIGINT)
	  WITH (kafka_topic='customers', value_format='json', partitions=4)`)
	start := time.Now()
	n.Exec(t, `CREATE STREAM enriched AS SELECT o.grp, o.id, o.amount, c.name, c.tier FROM orders o JOIN customers c ON o.grp = c.id`)
	rawConsume(t, c, "enriched", ingestRecords, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	basinEl := time.Since(start)
	basinRate := float64(ingestRecords) / basinEl.Seconds()
	basinRSS := peakRSS(n.PID())
	t.Logf("basin: enriched holds %d records after %v: %.0f records/s, peak RSS %d MiB", ingestRecords, basinEl.Round(time.Millisecond), basinRate, basinRSS>>20)
	if got := countRecords(t, c, "enriched", 2*time.Second); got != ingestRecords {
		t.Fatalf("enriched holds %d records, want %d", got, ingestRecords)
	}
	theReport.add(t, result{Bench: "B6", What: "stream–table join: enrich 1M records against a 100k-row table",
		Basin: basinRate, Ref: floorRate, Unit: "records/s", RefName: "Kafka-only pipeline of the same topology", HigherBetter: true,
		Target: "≥ 0.6×", Met: basinRate >= 0.6*floorRate,
		Note: fmt.Sprintf("basin %.1fs, peak RSS %d MiB; the floor %.1fs (route by customer, then join in a Go map)", basinEl.Seconds(), basinRSS>>20, floorEl.Seconds())})
}

// joinPipeline does the Kafka reads and writes of B6's join with no SQL
// and no storage and returns the time until its last stage has written
// every joined record: stage one reads the orders and, in one
// transaction per fetch, writes each to a repartition topic keyed by its
// customer; stage two reads the customers topic and that repartition
// topic (read_committed), keeps the customers in a Go map, and in one
// transaction per fetch writes one joined record per order.
func joinPipeline(t *testing.T, c *testcluster.Cluster) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), ingestTimeout)
	defer cancel()
	const repartition, out = "floor-join-repartition", "floor-enriched"
	adm := kadm.NewClient(c.Client(t))
	createTopics(ctx, t, adm, repartition, out)
	stage := func(name string, in []string, outTopic string, each func(recs []*kgo.Record) []*kgo.Record, until int) error {
		cl, err := kgo.NewClient(
			kgo.SeedBrokers(c.Broker()),
			kgo.ConsumeTopics(in...),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.TransactionalID("floor-"+name),
			kgo.DefaultProduceTopic(outTopic),
			kgo.ProducerBatchMaxBytes(1<<20-64<<10), // under the broker's max.message.bytes (1 MiB)
			kgo.MaxBufferedRecords(200_000),
			kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		)
		if err != nil {
			return err
		}
		defer cl.Close()
		for got := 0; got < until; {
			fs := cl.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("%s: %d of %d records: %w", name, got, until, err)
			}
			var ferr error
			fs.EachError(func(topic string, p int32, err error) { ferr = fmt.Errorf("%s: %s/%d: %w", name, topic, p, err) })
			if ferr != nil {
				return ferr
			}
			recs := each(fs.Records())
			if len(recs) == 0 {
				continue
			}
			got += len(recs)
			if err := cl.BeginTransaction(); err != nil {
				return err
			}
			if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				return err
			}
			if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
				return err
			}
		}
		return nil
	}
	route := func(recs []*kgo.Record) []*kgo.Record {
		out := make([]*kgo.Record, 0, len(recs))
		for _, r := range recs {
			var v orderValue
			_ = json.Unmarshal(r.Value, &v)
			out = append(out, &kgo.Record{Key: binary.BigEndian.AppendUint64(nil, uint64(v.Grp)), Value: r.Value})
		}
		return out
	}
	customers := make(map[string]customerValue, joinCustomers)
	var waiting []*kgo.Record // orders fetched before the whole table
	join := func(recs []*kgo.Record) []*kgo.Record {
		out := make([]*kgo.Record, 0, len(recs))
		if len(customers) < joinCustomers {
			// The orders are newer than every customer: as basin's join
			// task, hold them back until the table is read.
			var rest []*kgo.Record
			for _, r := range recs {
				if r.Topic == joinCustomerTopic {
					var v customerValue
					_ = json.Unmarshal(r.Value, &v)
					customers[string(r.Key)] = v
				} else {
					rest = append(rest, r)
				}
			}
			waiting = append(waiting, rest...)
			if len(customers) < joinCustomers {
				return nil
			}
			recs, waiting = waiting, nil
		}
		for _, r := range recs {
			if r.Topic == joinCustomerTopic {
				var v customerValue
				_ = json.Unmarshal(r.Value, &v)
				customers[string(r.Key)] = v
				continue
			}
			cu, ok := customers[string(r.Key)]
			if !ok {
				continue
			}
			var o orderValue
			_ = json.Unmarshal(r.Value, &o)
			v, _ := json.Marshal(map[string]any{"grp": o.Grp, "amount": o.Amount, "name": cu.Name, "tier": cu.Tier})
			out = append(out, &kgo.Record{Key: r.Key, Value: v})
		}
		return out
	}
	start := time.Now()
	errs := make(chan error, 2)
	go func() { errs <- stage("route", []string{ingestTopic}, repartition, route, ingestRecords) }()
	go func() { errs <- stage("join", []string{joinCustomerTopic, repartition}, out, join, ingestRecords) }()
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatalf("Kafka pipeline: %v", err)
		}
	}
	return time.Since(start)
}
