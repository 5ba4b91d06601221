package materialize

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/basindb/basin/catalog"
)

func mustKey(t testing.TB, vals ...any) []byte {
	t.Helper()
	k, err := EncodeKey(nil, vals)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// encKey is mustKey for goroutines without a testing.T; vals are known
// encodable.
func encKey(vals ...any) []byte {
	k, err := EncodeKey(nil, vals)
	if err != nil {
		panic(err)
	}
	return k
}

func sign(c int) int { return min(max(c, -1), 1) }

// TestKeyOrderProperty checks, on random tuples of random schemas, that
// comparing encodings as bytes agrees with SQL order for every pair, and
// that every encoding decodes back to its tuple.
func TestKeyOrderProperty(t *testing.T) {
	g := newValueGen(t)
	for round := 0; round < 200; round++ {
		schema := g.schema()
		tuples := make([][]any, 60)
		keys := make([][]byte, len(tuples))
		for i := range tuples {
			tuples[i] = g.tuple(schema)
			keys[i] = mustKey(t, tuples[i]...)
		}
		for i := range tuples {
			for j := range tuples {
				want := sign(compareSQL(tuples[i], tuples[j]))
				if got := bytes.Compare(keys[i], keys[j]); got != want {
					t.Fatalf("schema %v:\n%#v\n%#v\nSQL order %d, byte order %d\n%x\n%x",
						schema, tuples[i], tuples[j], want, got, keys[i], keys[j])
				}
			}
			got, err := DecodeKey(keys[i])
			if err != nil {
				t.Fatalf("decode %x (%#v): %v", keys[i], tuples[i], err)
			}
			sameRow(t, tuples[i], got, false)
		}
		// Sorting by bytes and sorting by SQL give the same order.
		byBytes := slices.Clone(tuples)
		slices.SortStableFunc(byBytes, func(a, b []any) int { return bytes.Compare(mustKey(t, a...), mustKey(t, b...)) })
		bySQL := slices.Clone(tuples)
		slices.SortStableFunc(bySQL, compareSQL)
		for i := range byBytes {
			if compareSQL(byBytes[i], bySQL[i]) != 0 {
				t.Fatalf("position %d: byte sort has %#v, SQL sort has %#v", i, byBytes[i], bySQL[i])
			}
		}
	}
}

func TestKeyOrderCases(t *testing.T) {
	nan, negZero := math.NaN(), math.Copysign(0, -1)
	t0 := time.Unix(0, 0)
	// Each tuple sorts strictly before the next.
	ascending := [][][]any{
		{{nil}, {false}, {true}},
		{{nil}, {int64(math.MinInt64)}, {int64(-1)}, {int64(0)}, {int64(1)}, {int64(math.MaxInt64)}},
		{{nil}, {math.Inf(-1)}, {-math.MaxFloat64}, {-1.0}, {-math.SmallestNonzeroFloat64}, {0.0},
			{math.SmallestNonzeroFloat64}, {1.0}, {math.MaxFloat64}, {math.Inf(1)}, {nan}},
		{{nil}, {""}, {"\x00"}, {"\x00\x00"}, {"\x00\x01"}, {"\x01"}, {"a"}, {"a\x00"}, {"a\x00b"}, {"a\x01"}, {"ab"}, {"b"}, {"\xff"}, {"\xff\xff"}},
		{{nil}, {t0.Add(-time.Second)}, {t0.Add(-time.Nanosecond)}, {t0}, {t0.Add(time.Nanosecond)}, {t0.Add(time.Second)}},
		// Tuples: lexicographic, prefix first, a shorter string first
		// whatever follows it.
		{{"a"}, {"a", nil}, {"a", int64(-5)}, {"a", int64(7)}, {"a\x00", nil}, {"ab", nil}, {"ab", int64(1)}},
		{{int64(1)}, {int64(1), nil}, {int64(1), nil, nil}, {int64(1), false}, {int64(2)}},
	}
	for _, seq := range ascending {
		for i := 1; i < len(seq); i++ {
			a, b := mustKey(t, seq[i-1]...), mustKey(t, seq[i]...)
			if bytes.Compare(a, b) >= 0 {
				t.Errorf("%#v should sort before %#v: %x vs %x", seq[i-1], seq[i], a, b)
			}
		}
	}
	// Canonical: equal SQL values, equal bytes.
	equal := [][2]any{
		{0.0, negZero},
		{nan, math.Float64frombits(0xfff8000000000000)},
		{nan, math.Float64frombits(0x7ff0000000000001)},
		{t0, t0.In(time.FixedZone("x", -7200))},
	}
	for _, e := range equal {
		if a, b := mustKey(t, e[0]), mustKey(t, e[1]); !bytes.Equal(a, b) {
			t.Errorf("%v and %v should encode equally: %x vs %x", e[0], e[1], a, b)
		}
	}
}

// TestKeyPrefix checks that the encoding of a tuple prefix is a byte
// prefix of the encoding of the tuple, and that [enc(prefix),
// PrefixEnd(enc(prefix))) holds exactly the tuples extending it.
func TestKeyPrefix(t *testing.T) {
	g := newValueGen(t)
	for range 2000 {
		schema := g.schema()
		a, b := g.tuple(schema), g.tuple(schema)
		for n := 0; n <= len(a); n++ {
			p := mustKey(t, a[:n]...)
			if !bytes.HasPrefix(mustKey(t, a...), p) {
				t.Fatalf("enc(%#v) is not a prefix of enc(%#v)", a[:n], a)
			}
			kb := mustKey(t, b...)
			extends := len(b) >= n && compareSQL(b[:n], a[:n]) == 0
			end := PrefixEnd(p)
			inRange := bytes.Compare(kb, p) >= 0 && (end == nil || bytes.Compare(kb, end) < 0)
			if extends != inRange {
				t.Fatalf("%#v extends %#v: %v, but in key range: %v", b, a[:n], extends, inRange)
			}
		}
	}
}

func TestPrefixEnd(t *testing.T) {
	for _, c := range []struct{ in, want []byte }{
		{nil, nil},
		{[]byte{}, nil},
		{[]byte{0xff, 0xff}, nil},
		{[]byte("a"), []byte("b")},
		{[]byte{'a', 0xff}, []byte("b")},
		{[]byte{'a', 0xfe, 0xff}, []byte{'a', 0xff}},
		{[]byte{0x00}, []byte{0x01}},
	} {
		in := slices.Clone(c.in)
		if got := PrefixEnd(in); !bytes.Equal(got, c.want) || (got == nil) != (c.want == nil) {
			t.Errorf("PrefixEnd(%x) = %x, want %x", c.in, got, c.want)
		}
		if !bytes.Equal(in, c.in) {
			t.Errorf("PrefixEnd modified its input %x to %x", c.in, in)
		}
	}
}

func TestKeyErrors(t *testing.T) {
	if _, err := EncodeKey(nil, []any{int64(1), 3}); !errors.Is(err, ErrUnsupportedType) {
		t.Errorf("encoding an int: got %v, want ErrUnsupportedType", err)
	}
	if _, err := EncodeKey(nil, []any{struct{}{}}); !errors.Is(err, ErrUnsupportedType) {
		t.Errorf("encoding a struct: got %v, want ErrUnsupportedType", err)
	}
	for _, b := range [][]byte{
		{0x99},                        // unknown tag
		{keyInt, 1, 2, 3},             // truncated
		{keyFloat, 0x80},              // truncated
		{keyString, 'a'},              // unterminated
		{keyString, 'a', 0x00},        // unterminated
		{keyString, 'a', 0x00, 0x02},  // bad escape
		{keyString, 0x00, 0xff, 0x00}, // unterminated after escape
		{keyTime, 0x80, 0, 0, 0, 0, 0, 0, 0, 0x3b, 0x9a, 0xca, 0x00}, // nanos == 1e9
		// -0 and a non-canonical NaN never come out of the encoder.
		{keyFloat, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
		{keyFloat, 0xff, 0xf0, 0, 0, 0, 0, 0, 2},
	} {
		if v, err := DecodeKey(b); !errors.Is(err, ErrBadEncoding) {
			t.Errorf("DecodeKey(%x) = %#v, %v; want ErrBadEncoding", b, v, err)
		}
	}
}

func FuzzDecodeKey(f *testing.F) {
	f.Add([]byte{})
	f.Add(mustKey(f, nil, true, false, int64(-3), 1.5, "a\x00b", time.Unix(1700000000, 5)))
	f.Add(mustKey(f, math.NaN(), math.Inf(-1), "", "\xff"))
	f.Add(mustKey(f, []any{int64(1), nil, "a"}, catalog.Struct{nil, catalog.Map{{Key: "k", Value: []any{}}}}, catalog.Map{}))
	f.Fuzz(func(t *testing.T, b []byte) {
		vals, err := DecodeKey(b)
		if err != nil {
			if !errors.Is(err, ErrBadEncoding) {
				t.Fatalf("error %v does not wrap ErrBadEncoding", err)
			}
			return
		}
		// The decoder accepts only canonical encodings: re-encoding gives
		// back the same bytes, so one tuple never has two keys.
		again, err := EncodeKey(nil, vals)
		if err != nil {
			t.Fatalf("re-encoding %#v: %v", vals, err)
		}
		if !bytes.Equal(again, b) {
			t.Fatalf("DecodeKey(%x) = %#v re-encodes to %x", b, vals, again)
		}
	})
}

func BenchmarkEncodeKey(b *testing.B) {
	vals := []any{"eu-west", int64(123456), time.Unix(1700000000, 0)}
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = EncodeKey(buf[:0], vals)
	}
}

func BenchmarkDecodeKey(b *testing.B) {
	k := mustKey(b, "eu-west", int64(123456), time.Unix(1700000000, 0))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeKey(k); err != nil {
			b.Fatal(err)
		}
	}
}

// TestNestedKeys checks the keys of arrays, structs and maps: they decode
// back, equal values have one key, and keys sort as the values do
// (element by element, NULL last, a prefix first).
func TestNestedKeys(t *testing.T) {
	ordered := []any{
		[]any{},
		[]any{int64(1)},
		[]any{int64(1), int64(2)},
		[]any{int64(1), nil},
		[]any{int64(2)},
		[]any{nil},
	}
	structs := []any{
		catalog.Struct{"a", nil},
		catalog.Struct{"b", []any{"x"}},
		catalog.Struct{"b", []any{"y"}},
		catalog.Struct{nil, nil},
	}
	maps := []any{
		catalog.Map{},
		catalog.Map{{Key: "a", Value: int64(1)}},
		catalog.Map{{Key: "a", Value: int64(1)}, {Key: "b", Value: nil}},
		catalog.Map{{Key: "a", Value: int64(2)}},
		catalog.Map{{Key: "a", Value: nil}},
		catalog.Map{{Key: "b", Value: catalog.Struct{int64(0)}}},
	}
	for _, vals := range [][]any{ordered, structs, maps} {
		var prev []byte
		for i, v := range vals {
			k := mustKey(t, v, "tail")
			got, err := DecodeKey(k)
			if err != nil || len(got) != 2 {
				t.Fatalf("DecodeKey(%x) = %#v, %v", k, got, err)
			}
			sameRow(t, []any{v, "tail"}, got, true)
			if i > 0 && bytes.Compare(prev, k) >= 0 {
				t.Errorf("key of %#v does not sort after the one before", v)
			}
			prev = k
		}
	}
	for _, bad := range [][]byte{
		{keyArray},                               // no end
		{keyArray, keyElem, keyNull, keyElemEnd}, // a NULL not written as one
		{keyArray, 0x07, keyElemEnd},             // an unknown marker
		{keyMap, keyElem, keyInt, 0x80, 0, 0, 0, 0, 0, 0, 1, keyElemNull, keyElemEnd},                                // an int key
		{keyMap, keyElem, keyString, 'b', 0, 1, keyElemNull, keyElem, keyString, 'a', 0, 1, keyElemNull, keyElemEnd}, // keys out of order
	} {
		if v, err := DecodeKey(bad); !errors.Is(err, ErrBadEncoding) {
			t.Errorf("DecodeKey(%x) = %#v, %v; want ErrBadEncoding", bad, v, err)
		}
	}
}
