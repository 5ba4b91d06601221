package kafka

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// testTimeout bounds each wait in these tests; a wait that reaches it is a
// failure, never a pass.
const testTimeout = 30 * time.Second

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// startTestBroker starts a broker on a free loopback port, closed at the
// end of the test.
func startTestBroker(t testing.TB, dataDir string) *Broker {
	t.Helper()
	b, err := StartBroker(BrokerOptions{DataDir: dataDir, Logger: testLogger(t)})
	if err != nil {
		t.Fatalf("StartBroker: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func newTestClient(t testing.TB, addrs []string, extra ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := NewClient(ClientOptions{Brokers: addrs, ClientID: t.Name(), Logger: testLogger(t)}, extra...)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func newTestAdmin(t testing.TB, addrs []string) *kadm.Client {
	return kadm.NewClient(newTestClient(t, addrs))
}

// newTxnProducer returns a transactional producer with basin's producer
// options.
func newTxnProducer(t testing.TB, addrs []string, txnID string) *kgo.Client {
	return newTestClient(t, addrs, append(ProducerOpts(), kgo.TransactionalID(txnID))...)
}

// produceTxn produces recs in one transaction and commits it.
func produceTxn(ctx context.Context, t testing.TB, cl *kgo.Client, recs ...*kgo.Record) {
	t.Helper()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatalf("BeginTransaction: %v", err)
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("EndTransaction(commit): %v", err)
	}
}

// keyedRecord returns a record for topic whose partition is chosen by
// Partition over its key, as basin produces.
func keyedRecord(topic string, partitions int32, key, value string) *kgo.Record {
	return &kgo.Record{
		Topic:     topic,
		Key:       []byte(key),
		Value:     []byte(value),
		Partition: Partition([]byte(key), partitions),
	}
}

// consumeUntil reads topic from the start with the given extra options
// until done returns true for the values seen so far, and returns them.
func consumeUntil(ctx context.Context, t testing.TB, addrs []string, topic string, done func(map[string]bool) bool, extra ...kgo.Opt) map[string]bool {
	t.Helper()
	opts := append([]kgo.Opt{
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	}, extra...)
	cl := newTestClient(t, addrs, opts...)
	defer cl.Close()
	seen := make(map[string]bool)
	for !done(seen) {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consuming %s: %v; seen so far: %v", topic, ctx.Err(), seen)
		}
		fs.EachError(func(topic string, p int32, err error) {
			t.Fatalf("consuming %s[%d]: %v", topic, p, err)
		})
		fs.EachRecord(func(r *kgo.Record) {
			if seen[string(r.Value)] {
				t.Errorf("value %q consumed twice", r.Value)
			}
			seen[string(r.Value)] = true
		})
	}
	return seen
}

func hasAll(vals ...string) func(map[string]bool) bool {
	return func(seen map[string]bool) bool {
		for _, v := range vals {
			if !seen[v] {
				return false
			}
		}
		return true
	}
}
