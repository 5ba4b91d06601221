package exec

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/pgcodec"
)

// lookupBenchRows is the size of the table the lookup benchmarks read.
const lookupBenchRows = 10_000

// benchLookupSession starts a broker, a runtime and a 4-partition table
// of lookupBenchRows rows, and returns a new session on it once every row
// is readable: the whole read path of B1 below the wire protocol.
func benchLookupSession(b *testing.B) *Session {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	b.Cleanup(cancel)
	e := startTableEngine(ctx, b, "CREATE TABLE items (id BIGINT PRIMARY KEY, name VARCHAR, amount DOUBLE) WITH (kafka_topic = 'items', value_format = 'json', partitions = 4)")
	s := e.NewSession(map[string]string{"user": "bench"}, Client{})
	b.Cleanup(s.Close)
	for start := 0; start < lookupBenchRows; start += 500 {
		q := "INSERT INTO items VALUES "
		for i := start; i < start+500; i++ {
			if i > start {
				q += ", "
			}
			q += "(" + strconv.Itoa(i) + ", 'item-" + strconv.Itoa(i) + "', " + strconv.Itoa(i) + ".5)"
		}
		if err := s.Query(ctx, q, &discardWriter{}); err != nil {
			b.Fatal(err)
		}
	}
	w := &countWriter{}
	if err := s.Query(ctx, "SELECT count(*) FROM items", w); err != nil || w.last != int64(lookupBenchRows) {
		b.Fatalf("count: %v %v", w.last, err)
	}
	// A session of its own for the reads, as pgbench's: the loading
	// session's writes would make each of its reads wait for them.
	r := e.NewSession(map[string]string{"user": "bench"}, Client{})
	b.Cleanup(r.Close)
	return r
}

// BenchmarkPreparedLookup is one Bind and Execute of a prepared key
// lookup, as pgbench -M prepared runs it, below the wire protocol.
func BenchmarkPreparedLookup(b *testing.B) {
	s := benchLookupSession(b)
	ctx := context.Background()
	p, err := s.Prepare(ctx, "SELECT name, amount FROM items WHERE id = $1", nil)
	if err != nil {
		b.Fatal(err)
	}
	w := &countWriter{}
	params := []any{int64(0)}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		params[0] = int64((i * 7919) % lookupBenchRows)
		pt, err := p.Bind(ctx, params)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := pt.Execute(ctx, w, 0); err != nil {
			b.Fatal(err)
		}
		pt.Close() // as pgwire does when the next Bind replaces it
		i++
	}
	if w.rows != i {
		b.Fatalf("%d rows for %d lookups", w.rows, i)
	}
}

// BenchmarkSimpleLookup is one simple-protocol key lookup, as pgbench -M
// simple runs it: from the plan cache after the first.
func BenchmarkSimpleLookup(b *testing.B) {
	for _, cache := range []string{"on", "off"} {
		b.Run("plan_cache="+cache, func(b *testing.B) {
			s := benchLookupSession(b)
			ctx := context.Background()
			if err := s.Query(ctx, "SET basin.plan_cache = "+cache, &discardWriter{}); err != nil {
				b.Fatal(err)
			}
			w := &countWriter{}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				q := "SELECT name, amount FROM items WHERE id = " + strconv.Itoa((i*7919)%lookupBenchRows)
				if err := s.Query(ctx, q, w); err != nil {
					b.Fatal(err)
				}
				i++
			}
			if w.rows != i {
				b.Fatalf("%d rows for %d lookups", w.rows, i)
			}
		})
	}
}

// countWriter counts rows and keeps the last row's first value.
type countWriter struct {
	rows int
	last any
}

func (w *countWriter) Columns([]catalog.Column) error { return nil }
func (w *countWriter) Row(r []any) error {
	w.rows++
	w.last = r[0]
	return nil
}
func (w *countWriter) Complete(string) error                               { return nil }
func (w *countWriter) Empty() error                                        { return nil }
func (w *countWriter) Notice(*pgerr.Error) error                           { return nil }
func (w *countWriter) Flush() error                                        { return nil }
func (w *countWriter) CopyOut([]catalog.Column, *pgcodec.CopyFormat) error { return nil }

// BenchmarkScanSelectStar is SELECT * of the whole table on a node
// alone: the local half of B3, per row.
func BenchmarkScanSelectStar(b *testing.B) {
	s := benchLookupSession(b)
	ctx := context.Background()
	p, err := s.Prepare(ctx, "SELECT * FROM items", nil)
	if err != nil {
		b.Fatal(err)
	}
	w := &countWriter{}
	b.ReportAllocs()
	for b.Loop() {
		pt, err := p.Bind(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := pt.Execute(ctx, w, 0); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(w.rows), "ns/row")
}
