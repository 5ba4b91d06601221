package kafka

import (
	"errors"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestEnsureTopic(t *testing.T) {
	ctx := testCtx(t)
	b := startTestBroker(t, "")
	adm := newTestAdmin(t, b.Addrs())

	configs := map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}
	created, n, err := EnsureTopic(ctx, adm, "changelog", 4, configs)
	if err != nil || !created || n != 4 {
		t.Fatalf("EnsureTopic(new) = %v, %d, %v; want true, 4, nil", created, n, err)
	}
	created, n, err = EnsureTopic(ctx, adm, "changelog", 4, nil)
	if err != nil || created || n != 4 {
		t.Fatalf("EnsureTopic(existing) = %v, %d, %v; want false, 4, nil", created, n, err)
	}
	// A different count is reported, not an error, and changes nothing.
	created, n, err = EnsureTopic(ctx, adm, "changelog", 8, nil)
	if err != nil || created || n != 4 {
		t.Fatalf("EnsureTopic(existing, 8) = %v, %d, %v; want false, 4, nil", created, n, err)
	}

	rcs, err := adm.DescribeTopicConfigs(ctx, "changelog")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On("changelog", nil)
	if err != nil {
		t.Fatal(err)
	}
	var policy string
	for _, c := range rc.Configs {
		if c.Key == "cleanup.policy" && c.Value != nil {
			policy = *c.Value
		}
	}
	if policy != "compact" {
		t.Errorf("cleanup.policy = %q, want compact", policy)
	}

	if _, _, err := EnsureTopic(ctx, adm, "zero", 0, nil); err == nil {
		t.Error("EnsureTopic with 0 partitions succeeded")
	}
}

func TestEnsureTopicConcurrent(t *testing.T) {
	ctx := testCtx(t)
	b := startTestBroker(t, "")
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		creates int
	)
	for range 8 {
		adm := newTestAdmin(t, b.Addrs())
		wg.Go(func() {
			created, n, err := EnsureTopic(ctx, adm, "shared", 3, nil)
			if err != nil || n != 3 {
				t.Errorf("EnsureTopic = %v, %d, %v", created, n, err)
			}
			if created {
				mu.Lock()
				creates++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if creates != 1 {
		t.Errorf("%d callers created the topic, want 1", creates)
	}
}

func TestTopicPartitionsAndDelete(t *testing.T) {
	ctx := testCtx(t)
	b := startTestBroker(t, "")
	adm := newTestAdmin(t, b.Addrs())

	if _, err := TopicPartitions(ctx, adm, "t"); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("TopicPartitions(missing) = %v, want ErrUnknownTopic", err)
	}
	if _, _, err := EnsureTopic(ctx, adm, "t", 5, nil); err != nil {
		t.Fatal(err)
	}
	// Right after the miss above: not served from a stale cache.
	if n, err := TopicPartitions(ctx, adm, "t"); err != nil || n != 5 {
		t.Fatalf("TopicPartitions = %d, %v; want 5", n, err)
	}
	if err := DeleteTopic(ctx, adm, "t"); err != nil {
		t.Fatalf("DeleteTopic: %v", err)
	}
	if _, err := TopicPartitions(ctx, adm, "t"); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("TopicPartitions(deleted) = %v, want ErrUnknownTopic", err)
	}
	if err := DeleteTopic(ctx, adm, "t"); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("DeleteTopic(deleted) = %v, want ErrUnknownTopic", err)
	}
	// Recreated with another partition count.
	if created, n, err := EnsureTopic(ctx, adm, "t", 2, nil); err != nil || !created || n != 2 {
		t.Fatalf("EnsureTopic(recreate) = %v, %d, %v", created, n, err)
	}
}

func TestEndOffsets(t *testing.T) {
	ctx := testCtx(t)
	b := startTestBroker(t, "")
	adm := newTestAdmin(t, b.Addrs())

	if _, err := EndOffsets(ctx, adm, "t"); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("EndOffsets(missing) = %v, want ErrUnknownTopic", err)
	}
	if _, _, err := EnsureTopic(ctx, adm, "t", 2, nil); err != nil {
		t.Fatal(err)
	}
	check := func(what string, want map[int32]int64) {
		t.Helper()
		got, err := EndOffsets(ctx, adm, "t")
		if err != nil {
			t.Fatalf("%s: EndOffsets: %v", what, err)
		}
		if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
			t.Fatalf("%s: EndOffsets = %v, want %v", what, got, want)
		}
	}
	check("empty", map[int32]int64{0: 0, 1: 0})

	p := newTestClient(t, b.Addrs(), ProducerOpts()...)
	for i := range 3 {
		r := &kgo.Record{Topic: "t", Partition: 0, Value: []byte{byte(i)}}
		if err := p.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	check("3 records on partition 0", map[int32]int64{0: 3, 1: 0})

	tp := newTxnProducer(t, b.Addrs(), "txn")
	if err := tp.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	recs := []*kgo.Record{{Topic: "t", Partition: 1, Value: []byte("a")}, {Topic: "t", Partition: 1, Value: []byte("b")}}
	if err := tp.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	check("open transaction on partition 1", map[int32]int64{0: 3, 1: 0})
	if err := tp.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	// Two records and the commit marker.
	check("committed transaction on partition 1", map[int32]int64{0: 3, 1: 3})
}
