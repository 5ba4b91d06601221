package push

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/kafka"
	"github.com/basindb/basin/materialize"
	"github.com/basindb/basin/planner"
	"github.com/basindb/basin/sql"
	"github.com/basindb/basin/stream"
)

// TestTailSharedAndBehind follows a stream's records with subscriptions
// that share its tail, one that falls behind what the tail keeps and one
// that starts at the stream's start: each returns every record once, in
// order, with the position after it, and the ones behind move onto the
// tail once they catch up.
func TestTailSharedAndBehind(t *testing.T) {
	defer func(b, m, k int) { tailBytes, tailMinBytes, tailTake = b, m, k }(tailBytes, tailMinBytes, tailTake)
	tailBytes, tailMinBytes, tailTake = 64*changeSize(30, 2), 16*changeSize(30, 2), 8

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	broker, err := kafka.StartBroker(kafka.BrokerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer broker.Close()
	db, err := materialize.Open(materialize.Options{Dir: t.TempDir(), NoSync: true, CacheSize: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rt, err := stream.NewRuntime(stream.RuntimeOptions{Brokers: broker.Addrs(), Cluster: "t", Node: "a", DB: db})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	create := "CREATE STREAM events (id BIGINT, part INTEGER) WITH (kafka_topic = 'events', value_format = 'json', partitions = 2)"
	st, err := sql.Parse(create)
	if err != nil {
		t.Fatal(err)
	}
	cat := catalog.New()
	rel, err := planner.PlanCreateSource(cat, st[0].(*sql.CreateSource), create)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := kafka.EnsureTopic(ctx, rt.Admin(), rel.Topic, rel.Partitions, nil); err != nil {
		t.Fatal(err)
	}
	prod, err := kafka.NewClient(kafka.ClientOptions{Brokers: broker.Addrs(), ClientID: "test"}, kafka.ProducerOpts()...)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	produce := func(from, to int) {
		t.Helper()
		var recs []*kgo.Record
		for i := from; i < to; i++ {
			p := int32(i % 2)
			recs = append(recs, &kgo.Record{Topic: rel.Topic, Partition: p, Value: fmt.Appendf(nil, `{"id": %d, "part": %d}`, i, p)})
		}
		if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	produce(0, 10) // before the subscriptions: only "start" returns them

	f := NewFeeds(rt, "t")
	defer f.Close()
	sub := func(opts Options) *Subscription {
		t.Helper()
		s, err := f.Subscribe(ctx, rel, opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	prompt, slow, start := sub(Options{}), sub(Options{}), sub(Options{Snapshot: true})
	if prompt.tail == nil || prompt.cl != nil || slow.cl != nil {
		t.Fatal("the subscriptions at the stream's end do not read from its tail")
	}
	if start.cl == nil {
		t.Fatal("the subscription from the stream's start reads from its tail, which does not have its records")
	}

	// takeAll reads s's rows until it has returned ids from to to-1 (each
	// partition's in order) and checks each one's position.
	got := map[*Subscription]map[int32]int64{} // the next id of each partition
	takeAll := func(name string, s *Subscription, from, to int) {
		t.Helper()
		next := got[s]
		if next == nil {
			next = map[int32]int64{0: int64(from), 1: int64(from + 1)}
			got[s] = next
		}
		var rows [][]any
		for next[0] < int64(to) || next[1] < int64(to+1) {
			rows, _, err = s.Next(ctx, rows[:0], 5, time.Second)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			for _, r := range rows {
				id, part := r[0].(int64), int32(r[1].(int64))
				if id != next[part] {
					t.Fatalf("%s: id %d from partition %d, want %d", name, id, part, next[part])
				}
				next[part] += 2
				pos, err := materialize.ParsePosition(r[len(r)-1].(string))
				if err != nil {
					t.Fatal(err)
				}
				if off := pos[rel.Topic][part]; off != id/2+1 {
					t.Fatalf("%s: id %d at position %d of partition %d, want %d", name, id, off, part, id/2+1)
				}
			}
		}
	}
	for round := range 6 {
		from := 10 + round*100
		produce(from, from+100)
		takeAll("prompt", prompt, 10, from+100)
		takeAll("start", start, 0, from+100)
	}
	if prompt.cl != nil || start.cl != nil {
		t.Fatal("the subscriptions that keep up do not read from the tail")
	}
	// slow took nothing while the tail kept about 32 records a partition: it
	// reads its own from where it is, and then the tail's.
	takeAll("slow", slow, 10, 610)
	if slow.cl != nil {
		t.Fatal("the subscription that caught up does not read from the tail")
	}
	produce(610, 650)
	takeAll("slow", slow, 10, 650)
	if slow.cl != nil {
		t.Fatal("the subscription that caught up left the tail")
	}
}
