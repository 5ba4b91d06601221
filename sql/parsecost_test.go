package sql

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/basindb/basin/internal/pgerr"
)

// bigInputs are statements of about n bytes, of the shapes a client can
// send at the statement size bound: long IN lists of integers and of
// strings, a multi-row INSERT, and a long chain of operators.
func bigInputs(n int) map[string]string {
	gen := func(head, tail string, item func(k int) string, sep string) string {
		var b strings.Builder
		b.WriteString(head)
		for k := 0; b.Len() < n-len(tail); k++ {
			if k > 0 {
				b.WriteString(sep)
			}
			b.WriteString(item(k))
		}
		b.WriteString(tail)
		return b.String()
	}
	return map[string]string{
		"in-ints":    gen("SELECT * FROM t WHERE k IN (", ")", func(k int) string { return fmt.Sprint(k) }, ", "),
		"in-strings": gen("SELECT * FROM t WHERE k IN (", ")", func(k int) string { return fmt.Sprintf("'key-%d'", k) }, ", "),
		"insert":     gen("INSERT INTO t (k, v) VALUES ", "", func(k int) string { return fmt.Sprintf("(%d, 'v%d')", k, k) }, ", "),
		"plus-chain": gen("SELECT ", "", func(k int) string { return "1" }, "+"),
	}
}

// allocated is the number of bytes f allocates, the collector held off
// so that nothing (the pool of TiDB parsers) is freed in between.
func allocated(f func()) uint64 {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestParseMemoryBound checks that parsing a megabyte statement
// allocates a bounded multiple of its size (a 1 MB IN list once took
// 190 MB, a 1 MB INSERT 210 MB), and twice that much for twice the
// statement: the cost is linear. The chain of operators is refused as
// too deep, before most of it is read.
func TestParseMemoryBound(t *testing.T) {
	const mb = 1 << 20
	ParseStatements("SELECT * FROM t WHERE k IN (1, 2)") // a TiDB parser in the pool
	one, two := bigInputs(mb), bigInputs(2*mb)
	for _, name := range []string{"in-ints", "in-strings", "insert", "plus-chain"} {
		cost := func(text string) uint64 {
			var err error
			a := allocated(func() { _, err = ParseStatements(text) })
			if name == "plus-chain" {
				if pe, ok := pgerr.As(err); !ok || pe.Code != pgerr.StatementTooComplex {
					t.Errorf("%s: got %v, want 54001", name, err)
				}
			} else if err != nil {
				t.Errorf("%s: %v", name, err)
			}
			return a
		}
		a1, a2 := cost(one[name]), cost(two[name])
		t.Logf("%-10s 1 MB: %5.1f MB allocated, %4.1f bytes per byte; 2 MB: %5.1f MB", name,
			float64(a1)/mb, float64(a1)/float64(len(one[name])), float64(a2)/mb)
		if a1 > 40*mb {
			t.Errorf("%s: parsing 1 MB allocated %.1f MB, want at most 40 MB", name, float64(a1)/mb)
		}
		if a2 > 80*mb {
			t.Errorf("%s: parsing 2 MB allocated %.1f MB, want at most 80 MB", name, float64(a2)/mb)
		}
	}
}

// TestShapeOfMemoryBound checks that taking the shape of a megabyte
// statement, as the plan cache does for every simple query, allocates
// a bounded multiple of its size (a 1 MB IN list once took 95 MB).
func TestShapeOfMemoryBound(t *testing.T) {
	const mb = 1 << 20
	for name, text := range bigInputs(mb) {
		a := allocated(func() { ShapeOf(text) })
		t.Logf("%-10s 1 MB: ShapeOf %4.1f MB allocated", name, float64(a)/mb)
		if a > 40*mb {
			t.Errorf("%s: ShapeOf of 1 MB allocated %.1f MB, want at most 40 MB", name, float64(a)/mb)
		}
	}
}

func BenchmarkParseBig(b *testing.B) {
	for name, text := range bigInputs(1 << 20) {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(text)))
			for i := 0; i < b.N; i++ {
				ParseStatements(text)
			}
		})
	}
}
