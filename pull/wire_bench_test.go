package pull

import (
	"testing"
	"time"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/materialize"
)

// BenchmarkWireEncoder encodes one stored (BIGINT, VARCHAR, DOUBLE,
// TIMESTAMP) row straight into a DataRow, as the raw-row path does for a
// client reading in binary.
func BenchmarkWireEncoder(b *testing.B) {
	cols := []catalog.Column{{Name: "id", Type: catalog.BigInt}, {Name: "s", Type: catalog.Varchar},
		{Name: "f", Type: catalog.Double}, {Name: "ts", Type: catalog.Timestamp}}
	enc := newWireEncoder(cols, []int16{1, 1, 1, 1})
	stored, err := materialize.EncodeRow([]any{true, int64(42), "hello, world", 2.5, time.Date(2024, 2, 29, 13, 4, 5, 123456000, time.UTC)})
	if err != nil {
		b.Fatal(err)
	}
	var scratch materialize.RowValue
	dst := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		if dst, _, err = enc.AppendStored(dst[:0], stored, &scratch); err != nil {
			b.Fatal(err)
		}
	}
}
