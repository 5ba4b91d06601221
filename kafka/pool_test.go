package kafka

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// countingPool is a RecordPool that remembers the record slices it gave
// out and how many came back.
type countingPool struct {
	RecordPool
	mu     sync.Mutex
	given  map[*kgo.Record]int // a slice's first element → times given
	puts   int
	reused int
}

func (p *countingPool) GetRecords(n int) []kgo.Record {
	rs := p.RecordPool.GetRecords(n)
	if cap(rs) == 0 {
		return rs
	}
	rs = rs[:1]
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.given[&rs[0]]++; p.given[&rs[0]] > 1 {
		p.reused++
	}
	return rs[:0]
}

func (p *countingPool) PutRecords(rs []kgo.Record) {
	p.mu.Lock()
	p.puts++
	p.mu.Unlock()
	p.RecordPool.PutRecords(rs)
}

// TestRecordPool reads a topic of many small batches, compressed, through
// a consumer with a RecordPool, recycling each record once it is read:
// the records' slices come back and are decoded into again, and every
// record reads as it was produced.
func TestRecordPool(t *testing.T) {
	ctx := testCtx(t)
	b := startTestBroker(t, "")
	if _, _, err := EnsureTopic(ctx, newTestAdmin(t, b.Addrs()), "p", 1, nil); err != nil {
		t.Fatal(err)
	}
	prod := newTxnProducer(t, b.Addrs(), "pool-test")
	const batches, per = 40, 50
	value := func(i int) string { return fmt.Sprintf("v%d-%s", i, strings.Repeat("x", i%37)) }
	for n := range batches {
		var recs []*kgo.Record
		for i := n * per; i < (n+1)*per; i++ {
			recs = append(recs, &kgo.Record{Topic: "p", Key: fmt.Appendf(nil, "k%d", i), Value: []byte(value(i))})
		}
		produceTxn(ctx, t, prod, recs...)
	}

	pool := &countingPool{given: map[*kgo.Record]int{}}
	c := newTestClient(t, b.Addrs(),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"p": {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
		kgo.FetchMaxPartitionBytes(1), // a batch a fetch
		kgo.WithPools(pool))
	next := 0
	for next < batches*per {
		fs := c.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records", next, batches*per)
		}
		if err := fetchErrs(fs); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Attrs.IsControl() {
				return
			}
			if got, want := string(r.Key)+"="+string(r.Value), fmt.Sprintf("k%d=%s", next, value(next)); got != want {
				t.Fatalf("record %d reads %q, want %q", next, got, want)
			}
			next++
		})
		Recycle(fs)
	}
	pool.mu.Lock()
	defer pool.mu.Unlock()
	if pool.puts == 0 || pool.reused == 0 {
		t.Fatalf("%d record slices given back, %d given out again: the pool was not used", pool.puts, pool.reused)
	}
}

func fetchErrs(fs kgo.Fetches) error {
	var err error
	fs.EachError(func(topic string, p int32, e error) { err = fmt.Errorf("%s/%d: %w", topic, p, e) })
	return err
}
