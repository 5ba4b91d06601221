//go:build bench

package bench

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/basindb/basin/internal/testcluster"
)

// B7's shape: fkUpdates upserts of fkOrders orders, each naming one of
// B6's joinCustomers customers, on a table topic of ingestPartitions
// partitions.
const (
	fkOrders     = 50_000
	fkUpdates    = 100_000
	fkOrderTopic = "order_rows"
)

// fkOrderValue is the JSON value of the order_rows table.
type fkOrderValue struct {
	Customer int64 `json:"customer"`
	Amount   int64 `json:"amount"`
}

// produceOrderRows writes fkUpdates upserts to the order_rows table:
// every order once, then updates of random orders that move them to
// random customers. It returns the sum of the customers' tiers over the
// orders' last rows, which the join's view must reach.
func produceOrderRows(t *testing.T, c *testcluster.Cluster) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), ingestTimeout)
	defer cancel()
	adm := kadm.NewClient(c.Client(t))
	createTopics(ctx, t, adm, fkOrderTopic)
	cl := c.Client(t, kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedRecords(200_000),
		kgo.ProducerBatchMaxBytes(4<<20), kgo.DefaultProduceTopic(fkOrderTopic))
	rng := rand.New(rand.NewPCG(7, 7))
	last := make([]int64, fkOrders)
	recs := make([]*kgo.Record, 0, fkUpdates)
	for i := range fkUpdates {
		id := i
		if i >= fkOrders {
			id = rng.IntN(fkOrders)
		}
		cust := rng.Int64N(joinCustomers)
		last[id] = cust
		v, _ := json.Marshal(fkOrderValue{Customer: cust, Amount: int64(i % 1000)})
		recs = append(recs, &kgo.Record{Key: binary.BigEndian.AppendUint64(nil, uint64(id)), Value: v})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("producing order rows: %v", err)
	}
	var tiers int64
	for _, cust := range last {
		tiers += cust % 3 // produceCustomers' tier
	}
	return tiers
}

// TestB7ForeignKeyJoin measures how fast a view joining a table of
// 50,000 orders, written as 100,000 upserts that move orders between
// customers, with B6's 100,000 customers on a foreign key takes them in,
// from CREATE TABLE until the view holds the join of the tables' last
// rows, against the Kafka-only floor of the same topology.
func TestB7ForeignKeyJoin(t *testing.T) {
	c := ingestCluster(t)
	n := c.Node(0)
	produceCustomers(t, c)
	wantTiers := produceOrderRows(t, c)

	floorEl, floorOut := fkJoinPipeline(t, c)
	inputs := joinCustomers + fkUpdates
	floorRate := float64(inputs) / floorEl.Seconds()
	t.Logf("Kafka-only pipeline (join in Go maps, write joined rows, apply them to a changelog; transactions): %d input records in %v: %.0f records/s (%d joined rows)",
		inputs, floorEl.Round(time.Millisecond), floorRate, floorOut)

	n.Exec(t, `CREATE TABLE customers (id BIGINT PRIMARY KEY, name VARCHAR, tier BIGINT)
	  WITH (kafka_topic='customers', value_format='json', partitions=4)`)
	n.Exec(t, `CREATE TABLE order_rows (id BIGINT PRIMARY KEY, customer BIGINT, amount BIGINT)
	  WITH (kafka_topic='order_rows', value_format='json', partitions=4)`)
	conn := n.Conn(t)
	start := time.Now()
	defer profileDuring(t, n, "b7-fkjoin", 3)()
	n.Exec(t, `CREATE TABLE order_customers AS SELECT o.id, o.amount, c.name, c.tier FROM order_rows o JOIN customers c ON o.customer = c.id`)
	done := waitView(t, conn, "order_customers", "tier", fkOrders, wantTiers)
	basinEl := done.Sub(start)
	basinRate := float64(inputs) / basinEl.Seconds()
	basinRSS := peakRSS(n.PID())
	t.Logf("basin: order_customers holds the join after %v: %.0f input records/s, peak RSS %d MiB", basinEl.Round(time.Millisecond), basinRate, basinRSS>>20)
	theReport.add(t, result{Bench: "B7", What: "table–table foreign-key join: 100k order upserts against a 100k-row table",
		Basin: basinRate, Ref: floorRate, Unit: "input records/s", RefName: "Kafka-only pipeline of the same topology", HigherBetter: true,
		Target: "≥ 0.6× (B6's)", Met: basinRate >= 0.6*floorRate,
		Note: fmt.Sprintf("basin %.1fs, peak RSS %d MiB; the floor %.1fs (join in Go maps, then a stage applying the joined rows to a changelog)",
			basinEl.Seconds(), basinRSS>>20, floorEl.Seconds())})
}

// fkJoinPipeline does the Kafka reads and writes of B7's join with no
// SQL and no storage and returns the time until its last stage has
// applied every joined row, and how many there were. Stage one reads the
// customers and the order rows from the start, keeps both and an index
// of the orders by customer in Go maps, and in one transaction per fetch
// writes the joined row of each order the fetch changed (an order's own
// change, or its customer's) to a topic of joined rows, as basin's join
// stage does; stage two reads that topic read_committed and writes each
// row to a changelog topic in one transaction per fetch, as basin's view
// task does.
func fkJoinPipeline(t *testing.T, c *testcluster.Cluster) (time.Duration, int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), ingestTimeout)
	defer cancel()
	const joinedTopic, changelog = "floor-fk-joined", "floor-fk-changelog"
	adm := kadm.NewClient(c.Client(t))
	createTopics(ctx, t, adm, joinedTopic, changelog)
	client := func(name string, in []string, out string) (*kgo.Client, error) {
		return kgo.NewClient(
			kgo.SeedBrokers(c.Broker()),
			kgo.ConsumeTopics(in...),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.TransactionalID("floor-fk-"+name),
			kgo.DefaultProduceTopic(out),
			kgo.ProducerBatchMaxBytes(1<<20-64<<10),
			kgo.MaxBufferedRecords(200_000),
			kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		)
	}
	commit := func(cl *kgo.Client, recs []*kgo.Record) error {
		if err := cl.BeginTransaction(); err != nil {
			return err
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			return err
		}
		return cl.EndTransaction(ctx, kgo.TryCommit)
	}
	// poll fetches what there is within a second: the apply stage must
	// see the join stage finish while it waits.
	poll := func(cl *kgo.Client, name string) ([]*kgo.Record, error) {
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		defer pcancel()
		fs := cl.PollFetches(pctx)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		var ferr error
		fs.EachError(func(topic string, p int32, err error) {
			if pctx.Err() == nil {
				ferr = fmt.Errorf("%s: %s/%d: %w", name, topic, p, err)
			}
		})
		return fs.Records(), ferr
	}
	var joined atomic.Int64
	joinDone := make(chan struct{})
	join := func() error {
		defer close(joinDone)
		cl, err := client("join", []string{joinCustomerTopic, fkOrderTopic}, joinedTopic)
		if err != nil {
			return err
		}
		defer cl.Close()
		customers := make(map[string]customerValue, joinCustomers)
		orders := make(map[string]fkOrderValue, fkOrders)
		byCustomer := make(map[string]map[string]bool, joinCustomers)
		for got := 0; got < joinCustomers+fkUpdates; {
			recs, err := poll(cl, "join")
			if err != nil {
				return err
			}
			got += len(recs)
			changed := map[string]bool{}
			for _, r := range recs {
				if r.Topic == joinCustomerTopic {
					var v customerValue
					_ = json.Unmarshal(r.Value, &v)
					customers[string(r.Key)] = v
					for o := range byCustomer[string(r.Key)] {
						changed[o] = true
					}
					continue
				}
				var v fkOrderValue
				_ = json.Unmarshal(r.Value, &v)
				if old, ok := orders[string(r.Key)]; ok {
					delete(byCustomer[string(binary.BigEndian.AppendUint64(nil, uint64(old.Customer)))], string(r.Key))
				}
				orders[string(r.Key)] = v
				ck := string(binary.BigEndian.AppendUint64(nil, uint64(v.Customer)))
				if byCustomer[ck] == nil {
					byCustomer[ck] = map[string]bool{}
				}
				byCustomer[ck][string(r.Key)] = true
				changed[string(r.Key)] = true
			}
			out := make([]*kgo.Record, 0, len(changed))
			for o := range changed {
				ov := orders[o]
				rec := &kgo.Record{Key: []byte(o)}
				if cu, ok := customers[string(binary.BigEndian.AppendUint64(nil, uint64(ov.Customer)))]; ok {
					rec.Value, _ = json.Marshal(map[string]any{"amount": ov.Amount, "name": cu.Name, "tier": cu.Tier})
				}
				out = append(out, rec)
			}
			if len(out) == 0 {
				continue
			}
			if err := commit(cl, out); err != nil {
				return err
			}
			joined.Add(int64(len(out)))
		}
		return nil
	}
	apply := func() error {
		cl, err := client("apply", []string{joinedTopic}, changelog)
		if err != nil {
			return err
		}
		defer cl.Close()
		var got int64
		for {
			select {
			case <-joinDone:
				if got >= joined.Load() {
					return nil
				}
			default:
			}
			recs, err := poll(cl, "apply")
			if err != nil {
				return err
			}
			if len(recs) == 0 {
				continue
			}
			got += int64(len(recs))
			out := make([]*kgo.Record, len(recs))
			for i, r := range recs {
				out[i] = &kgo.Record{Key: r.Key, Value: r.Value}
			}
			if err := commit(cl, out); err != nil {
				return err
			}
		}
	}
	start := time.Now()
	errs := make(chan error, 2)
	go func() { errs <- join() }()
	go func() { errs <- apply() }()
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatalf("Kafka pipeline: %v", err)
		}
	}
	return time.Since(start), joined.Load()
}
