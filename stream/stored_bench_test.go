package stream

import (
	"testing"

	"github.com/basindb/basin/catalog"
)

// benchStoredRow and benchStoredState are a view row (region, count,
// sum, avg) and its aggregate state, the shape of a GROUP BY view's value.
var (
	benchStoredRow   = catalog.Row{"eu", int64(1234), int64(98765), 42.5}
	benchStoredState = []any{int64(1234), int64(98765), float64(52450), int64(1234)}
)

func BenchmarkEncodeStored(b *testing.B) {
	enc, err := EncodeStored(true, benchStoredRow, benchStoredState)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(enc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := EncodeStored(true, benchStoredRow, benchStoredState); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeStored(b *testing.B) {
	enc, err := EncodeStored(true, benchStoredRow, benchStoredState)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(enc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, _, err := DecodeStored(enc, len(benchStoredRow)); err != nil {
			b.Fatal(err)
		}
	}
}
