package materialize

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/basindb/basin/catalog"
)

func mustRow(t testing.TB, vals ...any) []byte {
	t.Helper()
	b, err := EncodeRow(vals)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRowRoundTrip(t *testing.T) {
	cet := time.FixedZone("CET", 3600)
	rows := [][]any{
		{},
		{nil},
		{nil, nil, true, false},
		{int64(0), int64(-1), int64(1), int64(math.MinInt64), int64(math.MaxInt64), int64(-300)},
		{0.0, math.Copysign(0, -1), -1.5, math.NaN(), math.Inf(1), math.Inf(-1), math.MaxFloat64, math.SmallestNonzeroFloat64},
		{"", "a", "héllo wörld", "日本語", "😀", "a\x00b", "\xff\xfe", string(make([]byte, 300))},
		{
			time.Unix(1700000000, 123456000), // microsecond precision
			time.Unix(1700000000, 123456789), // nanosecond precision
			time.Unix(-1, 999_999_000),       // before 1970
			time.Time{},                      // year 1
			time.Date(9999, 12, 31, 23, 59, 59, 999_999_000, time.UTC),
			time.Unix(maxMicroSec+10, 0),            // too far for microseconds
			time.Unix(-maxMicroSec-10, 5),           // too far back
			time.Date(2024, 3, 1, 12, 0, 0, 0, cet), // comes back in UTC
		},
		{int64(7), "x", nil, 2.5, true, time.Unix(0, 0)},
	}
	for _, row := range rows {
		b := mustRow(t, row...)
		got, err := DecodeRow(b)
		if err != nil {
			t.Fatalf("DecodeRow(EncodeRow(%#v)): %v", row, err)
		}
		sameRow(t, row, got, true)
	}
	g := newValueGen(t)
	var reuse []any
	for range 5000 {
		row := g.anyRow()
		b := mustRow(t, row...)
		var err error
		reuse, err = DecodeRowInto(reuse, b)
		if err != nil {
			t.Fatalf("DecodeRow(EncodeRow(%#v)): %v", row, err)
		}
		sameRow(t, row, reuse, true)
	}
}

// TestRowStringsDoNotAlias checks that decoded strings survive the reuse
// of the encoded buffer (a Pebble iterator's value is reused on Next).
func TestRowStringsDoNotAlias(t *testing.T) {
	b := mustRow(t, "abc", int64(1), "def")
	row, err := DecodeRow(b)
	if err != nil {
		t.Fatal(err)
	}
	for i := range b {
		b[i] = 'z'
	}
	if row[0] != "abc" || row[2] != "def" {
		t.Fatalf("decoded strings changed with the buffer: %#v", row)
	}
}

func TestRowErrors(t *testing.T) {
	if _, err := EncodeRow([]any{int64(1), int32(2)}); !errors.Is(err, ErrUnsupportedType) {
		t.Errorf("encoding int32: got %v, want ErrUnsupportedType", err)
	}
	for _, b := range [][]byte{
		nil,
		{0x80},                   // header varint truncated
		{2, rowNull},             // fewer values than the header says
		{1, rowNull, rowNull},    // trailing bytes
		{0xff, 0xff, 0xff, 0x0f}, // huge count
		{1, 0x42},                // unknown tag
		{1, rowInt, 0x80},        // truncated varint
		{1, rowFloat, 1, 2, 3},   // truncated float
		{1, rowString, 5, 'a'},   // string longer than the row
		{1, rowString, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, // absurd length
		{1, rowTimeNsec, 0, 0x80, 0x94, 0xeb, 0xdc, 0x03},                          // nanos == 1e9
	} {
		if v, err := DecodeRow(b); !errors.Is(err, ErrBadEncoding) {
			t.Errorf("DecodeRow(%x) = %#v, %v; want ErrBadEncoding", b, v, err)
		}
	}
}

func FuzzDecodeRow(f *testing.F) {
	f.Add([]byte{0})
	f.Add(mustRow(f, nil, true, false, int64(-3), 1.5, "a\x00b", time.Unix(1700000000, 5), time.Unix(1700000000, 5000)))
	f.Add(mustRow(f, math.NaN(), "日本", int64(math.MinInt64)))
	f.Add(mustRow(f, []any{int64(1), nil, []any{"a"}}, []any{}))
	f.Add(mustRow(f, catalog.Struct{"a", nil, catalog.Struct{int64(1)}}, catalog.Map{{Key: "k", Value: []any{catalog.Map{}}}},
		[]any{catalog.Struct{}, catalog.Map{{Key: "", Value: nil}, {Key: "z", Value: 1.5}}}))
	f.Add([]byte{1, rowMap, 4, 2, rowString, 1, 'b', rowNull})                             // odd entry count
	f.Add([]byte{1, rowMap, 9, 4, rowString, 1, 'b', rowNull, rowString, 1, 'a', rowNull}) // keys out of order
	f.Fuzz(func(t *testing.T, b []byte) {
		vals, err := DecodeRow(b)
		if err != nil {
			if !errors.Is(err, ErrBadEncoding) {
				t.Fatalf("error %v does not wrap ErrBadEncoding", err)
			}
			return
		}
		again, err := EncodeRow(vals)
		if err != nil {
			t.Fatalf("re-encoding %#v: %v", vals, err)
		}
		vals2, err := DecodeRow(again)
		if err != nil {
			t.Fatalf("decoding re-encoded %#v: %v", vals, err)
		}
		sameRow(t, vals, vals2, true)
	})
}

// benchRow is a typical aggregate row: key columns, counts, sums, a
// timestamp and a NULL.
var benchRow = []any{"eu-west", int64(123456), 98765.4321, time.Unix(1700000000, 123000), nil, "customer-000042", true, int64(-7)}

func BenchmarkEncodeRow(b *testing.B) {
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = AppendRow(buf[:0], benchRow); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(buf)))
}

func BenchmarkDecodeRow(b *testing.B) {
	enc := mustRow(b, benchRow...)
	b.SetBytes(int64(len(enc)))
	b.ReportAllocs()
	var row []any
	for b.Loop() {
		var err error
		if row, err = DecodeRowInto(row, enc); err != nil {
			b.Fatal(err)
		}
	}
}
