package pgwire

import (
	"io"
	"testing"
	"time"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/pgcodec"
)

// Benchmarks of result encoding: a DataRow built from basin values
// through the connection's resultWriter (the path of every row a SELECT
// returns), in text format (simple Query) and binary (a portal asking for
// binary results), and the per-type value encoders underneath.
// Run with: go test -run '^$' -bench . -benchmem ./pgwire/

var (
	benchRowCols = []catalog.Column{
		{Name: "id", Type: catalog.BigInt},
		{Name: "customer", Type: catalog.Varchar},
		{Name: "amount", Type: catalog.Double},
		{Name: "ts", Type: catalog.Timestamp},
	}
	benchRowVals = []any{int64(1234567), "customer-000123", 9876.54321, time.Date(2024, 5, 6, 7, 8, 9, 123456000, time.UTC)}
)

// countWriter discards what it is given and counts the bytes.
type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// BenchmarkDataRow encodes one (BIGINT, VARCHAR, DOUBLE, TIMESTAMP) row
// as a DataRow into the connection's buffer (flushed to a discarding
// writer at the usual threshold). SetBytes is the row's size on the wire.
func BenchmarkDataRow(b *testing.B) {
	for _, bc := range []struct {
		name    string
		formats []int16 // nil: a simple Query, all text
	}{
		{"text", nil},
		{"binary", []int16{pgcodec.FormatBinary, pgcodec.FormatBinary, pgcodec.FormatBinary, pgcodec.FormatBinary}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var out countWriter
			w := &writer{w: &out}
			rw := &resultWriter{w: w}
			if bc.formats == nil {
				if err := rw.Columns(benchRowCols); err != nil {
					b.Fatal(err)
				}
			} else {
				rw.startPortal(benchRowCols, bc.formats)
			}
			if err := w.flush(); err != nil {
				b.Fatal(err)
			}
			if err := rw.Row(benchRowVals); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(w.buffered()))
			b.ReportAllocs()
			for b.Loop() {
				if err := rw.Row(benchRowVals); err != nil {
					b.Fatal(err)
				}
			}
			if err := w.flush(); err != nil {
				b.Fatal(err)
			}
		})
	}
}

// BenchmarkAppendValue encodes one value of each type in text and binary
// format, without the message framing.
func BenchmarkAppendValue(b *testing.B) {
	for i, col := range benchRowCols {
		v := benchRowVals[i]
		for _, format := range []struct {
			name   string
			append func([]byte, catalog.Type, any) ([]byte, error)
		}{{"text", pgcodec.AppendText}, {"binary", pgcodec.AppendBinary}} {
			b.Run(col.Type.PGName()+"/"+format.name, func(b *testing.B) {
				buf, err := format.append(nil, col.Type, v)
				if err != nil {
					b.Fatal(err)
				}
				b.SetBytes(int64(len(buf)))
				b.ReportAllocs()
				for b.Loop() {
					if buf, err = format.append(buf[:0], col.Type, v); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkRowDescription encodes the RowDescription of the same four
// columns, sent once per simple Query.
func BenchmarkRowDescription(b *testing.B) {
	rw := &resultWriter{w: &writer{w: io.Discard}}
	b.ReportAllocs()
	for b.Loop() {
		rw.reset()
		if err := rw.Columns(benchRowCols); err != nil {
			b.Fatal(err)
		}
		rw.w.buf = rw.w.buf[:0]
	}
}
