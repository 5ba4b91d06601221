package kafka

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestNewClientNeedsBrokers(t *testing.T) {
	if _, err := NewClient(ClientOptions{}); err == nil || !strings.Contains(err.Error(), "no brokers") {
		t.Fatalf("NewClient without brokers: %v", err)
	}
}

func TestWaitReady(t *testing.T) {
	b := startTestBroker(t, "")
	if err := WaitReady(testCtx(t), newTestClient(t, b.Addrs())); err != nil {
		t.Fatalf("WaitReady: %v", err)
	}

	// Nothing listens on a port we just closed.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	err = WaitReady(ctx, newTestClient(t, []string{addr}))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitReady without a broker = %v, want a deadline error", err)
	}
}

// Records go to the partition basin chose, not to one a client
// partitioner picks, and read_committed consumers read them.
func TestProducerAndConsumerOpts(t *testing.T) {
	ctx := testCtx(t)
	b := startTestBroker(t, "")
	adm := newTestAdmin(t, b.Addrs())
	if _, _, err := EnsureTopic(ctx, adm, "t", 4, nil); err != nil {
		t.Fatal(err)
	}
	p := newTestClient(t, b.Addrs(), ProducerOpts()...)
	want := map[string]int32{}
	for _, k := range []string{"a", "b", "c", "d", "e", "f"} {
		r := keyedRecord("t", 4, k, k)
		want[k] = r.Partition
		if err := p.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	c := newTestClient(t, b.Addrs(), append(ConsumerOpts(),
		kgo.ConsumeTopics("t"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	for len(want) > 0 {
		fs := c.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("still missing %v", want)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if p, ok := want[string(r.Key)]; !ok || p != r.Partition {
				t.Errorf("key %q in partition %d, want %d", r.Key, r.Partition, p)
			}
			delete(want, string(r.Key))
		})
	}
}
