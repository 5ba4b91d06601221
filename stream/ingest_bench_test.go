package stream

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/basindb/basin/materialize"
	"github.com/basindb/basin/planner"
)

// Benchmarks of the per-record work of the tasks of bench/'s B2: a
// GROUP BY view of a stream of JSON records, re-keyed through a
// repartition topic. They run the tasks' record paths without Kafka:
// BenchmarkB2Rekey is the re-keying stage per source record,
// BenchmarkB2ViewApply the view task per repartition record, its
// transactions committed to a Pebble store (not fsynced) every
// b2Batch records.

const (
	b2Groups     = 100_000
	b2Partitions = 4
	// b2Source is how many source records the inputs are made of: a view
	// partition gets a quarter of them, over a quarter of the groups, so
	// each group recurs across batches as in B2.
	b2Source = 400_000
	b2Batch  = 10_000 // a transaction, RuntimeOptions.MaxBatch's default
)

// b2Plan plans B2's view over its orders
func b2Plan() (*planner.ViewPlan, error) {
	_, plans, err := planStatements(
		`CREATE STREAM orders (id BIGINT KEY, grp BIGINT, amount BIGINT) WITH (kafka_topic='orders', value_format='json', partitions=4)`,
		`CREATE TABLE per_grp AS SELECT grp, COUNT(*) AS n, SUM(amount) AS total FROM orders GROUP BY grp`)
	if err != nil {
		return nil, err
	}
	plan := plans["per_grp"]
	if !plan.Repartition || plan.View.Partitions != b2Partitions {
		return nil, fmt.Errorf("plan: repartition %v, %d partitions", plan.Repartition, plan.View.Partitions)
	}
	return plan, nil
}

func mustB2Plan(b *testing.B) *planner.ViewPlan {
	b.Helper()
	plan, err := b2Plan()
	if err != nil {
		b.Fatal(err)
	}
	return plan
}

func benchRuntime() *Runtime {
	return &Runtime{opts: RuntimeOptions{Cluster: "bench", Node: "bench"}, log: slog.New(slog.DiscardHandler)}
}

// b2SourceRecords are source records as B2 produces them, all read from
// source partition 0.
var b2SourceRecords = sync.OnceValue(func() []*kgo.Record {
	type orderValue struct {
		Grp    int64 `json:"grp"`
		Amount int64 `json:"amount"`
	}
	ts := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	recs := make([]*kgo.Record, b2Source)
	for id := range int64(b2Source) {
		v, _ := json.Marshal(orderValue{Grp: id % b2Groups, Amount: id % 1000})
		recs[id] = &kgo.Record{Topic: "orders", Partition: 0, Offset: id, Timestamp: ts,
			Key: binary.BigEndian.AppendUint64(nil, uint64(id)), Value: v}
	}
	return recs
})

// b2RepartitionRecords are the re-keyed records of b2SourceRecords that
// land in view partition 0, with the offsets they would have there.
var b2RepartitionRecords = sync.OnceValues(func() ([]*kgo.Record, error) {
	plan, err := b2Plan()
	if err != nil {
		return nil, err
	}
	t := newRekeyTask(benchRuntime(), plan, newTaskState(0), nil)
	b := &rekeyBatch{next: -1}
	for _, r := range b2SourceRecords() {
		t.add(b, r)
	}
	var out []*kgo.Record
	for _, r := range b.recs {
		if r.Partition == 0 {
			r.Offset = int64(len(out))
			out = append(out, r)
		}
	}
	if len(b.bad) > 0 {
		return nil, fmt.Errorf("%d records skipped: %s", len(b.bad), b.bad[0].Value)
	}
	return out, nil
})

func BenchmarkB2Rekey(b *testing.B) {
	src := b2SourceRecords()
	t := newRekeyTask(benchRuntime(), mustB2Plan(b), newTaskState(0), nil)
	batch := &rekeyBatch{next: -1}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		t.add(batch, src[i%len(src)])
		if i++; i%b2Batch == 0 {
			if len(batch.bad) > 0 || len(batch.recs) != b2Batch {
				b.Fatalf("batch of %d records, %d bad", len(batch.recs), len(batch.bad))
			}
			batch = &rekeyBatch{next: -1}
		}
	}
}

func BenchmarkB2ViewApply(b *testing.B) {
	recs, err := b2RepartitionRecords()
	if err != nil {
		b.Fatal(err)
	}
	db, err := materialize.Open(materialize.Options{Dir: b.TempDir(), NoSync: true, CacheSize: 64 << 20})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	plan := mustB2Plan(b)
	store := db.Store(materialize.StoreID{View: plan.View.StoreName(), Partition: 0})
	t := newViewTask(benchRuntime(), plan, newTaskState(0))
	cp := materialize.Checkpoint{Position: materialize.Position{}}
	t.reset(cp)
	batch := t.newBatch(cp)
	n := 0 // records processed, over all rounds
	step := func() {
		r := recs[n%len(recs)]
		if n%len(recs) == 0 {
			// Another round over the same records: forget their source
			// offsets, or they would be dropped as re-sent.
			batch.next.Position = materialize.Position{}
		}
		if err := t.process(store, batch, r); err != nil {
			b.Fatal(err)
		}
		if n++; n%b2Batch == 0 {
			if len(batch.bad) > 0 {
				b.Fatalf("%d records skipped", len(batch.bad))
			}
			vals, err := t.values(batch)
			if err != nil {
				b.Fatal(err)
			}
			if err := t.applyCommitted(store, batch, vals, int64(n)); err != nil {
				b.Fatal(err)
			}
			batch = t.newBatch(batch.next)
		}
	}
	// A first round makes every group: the benchmark is of a view whose
	// groups exist, as B2's are after its first batches.
	for range len(recs) {
		step()
	}
	b.ReportAllocs()
	for b.Loop() {
		step()
	}
}
