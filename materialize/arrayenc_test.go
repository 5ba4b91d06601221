package materialize

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/numeric"
)

func TestArrayRowRoundTrip(t *testing.T) {
	long := make([]any, 300) // a length past one byte's uvarint
	for i := range long {
		long[i] = strings.Repeat("x", i%7)
	}
	row := []any{
		[]any{int64(1), nil, int64(-3)},
		[]any{},
		[]any{"a", "", "ccc"},
		[]any{[]any{int64(1), int64(2)}, []any{int64(3), nil}}, // two dimensions
		[]any{numeric.FromInt64(12), time.UnixMicro(1_700_000_000_000_001).UTC(), catalog.DateVal(19724), catalog.JSONText(`{"a":1}`)},
		long,
		int64(9),
	}
	enc, err := EncodeRow(row)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeRow(enc)
	if err != nil || !reflect.DeepEqual(got, row) {
		t.Fatalf("DecodeRow = %#v, %v; want %#v", got, err, row)
	}
	var values []any
	if _, err := VisitRowPrefix(enc, -1, func(_ int, v *RowValue) error {
		if v.Kind == RowOther {
			values = append(values, v.Value)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(values, row[:6]) {
		t.Errorf("visited arrays %#v, want %#v", values, row[:6])
	}
	for cut := 1; cut < len(enc); cut++ {
		if _, err := DecodeRow(enc[:cut]); err == nil {
			t.Errorf("a row cut at %d decoded", cut)
		}
	}
}

// TestArrayRowDepth checks that arrays nest only so deep, in writing and
// in reading: a corrupt row cannot recurse without end.
func TestArrayRowDepth(t *testing.T) {
	var v any = int64(1)
	for range maxArrayDepth + 1 {
		v = []any{v}
	}
	if _, err := EncodeRow([]any{v}); !errors.Is(err, ErrUnsupportedType) {
		t.Errorf("EncodeRow of arrays %d deep: %v", maxArrayDepth+1, err)
	}
	// By hand: a row of one array holding a row of one array ...
	enc := []byte{1, rowInt, 2}
	for range maxArrayDepth + 1 {
		enc = append([]byte{1, rowArray, byte(len(enc))}, enc...)
	}
	if _, err := DecodeRow(enc); !errors.Is(err, ErrBadEncoding) {
		t.Errorf("DecodeRow of arrays %d deep: %v", maxArrayDepth+1, err)
	}
}

func TestNestedRowRoundTrip(t *testing.T) {
	long := make(catalog.Map, 200) // a length past one byte's uvarint
	for i := range long {
		long[i] = catalog.MapEntry{Key: strings.Repeat("k", i+1), Value: int64(i)}
	}
	row := []any{
		catalog.Struct{"Paris", int64(75001), catalog.Struct{48.85, nil}, []any{"1 rue", nil}},
		[]any{catalog.Struct{"a", int64(2)}, nil, catalog.Struct{}},
		catalog.Map{{Key: "", Value: []any{}}, {Key: "x", Value: catalog.Map{{Key: "y", Value: true}}}},
		catalog.Map{},
		long,
		"tail",
	}
	enc, err := EncodeRow(row)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeRow(enc)
	if err != nil || !reflect.DeepEqual(got, row) {
		t.Fatalf("DecodeRow = %#v, %v; want %#v", got, err, row)
	}
	var values []any
	if _, err := VisitRowPrefix(enc, -1, func(_ int, v *RowValue) error {
		if v.Kind == RowOther {
			values = append(values, v.Value)
		}
		return nil
	}); err != nil || !reflect.DeepEqual(values, row[:5]) {
		t.Fatalf("VisitRowPrefix values = %#v, %v", values, err)
	}

	// Nesting beyond the bound fails to encode, and a row claiming it
	// fails to decode.
	deep := any(int64(1))
	for range maxArrayDepth + 1 {
		deep = catalog.Struct{deep}
	}
	if _, err := EncodeRow([]any{deep}); !errors.Is(err, ErrUnsupportedType) {
		t.Errorf("encoding a struct nested %d deep: %v", maxArrayDepth+1, err)
	}
	var b []byte
	for range maxArrayDepth + 1 {
		b = append([]byte{1, rowStruct, byte(len(b) + 1)}, b...)
	}
	b = append(b, rowNull)
	if _, err := DecodeRow(b); !errors.Is(err, ErrBadEncoding) {
		t.Errorf("decoding a struct nested %d deep: %v", maxArrayDepth+1, err)
	}
	for _, bad := range [][]byte{
		{1, rowMap, 4, 1, rowString, 1, 'b'},                                       // a key without a value
		{1, rowMap, 5, 2, rowInt, 2, rowNull, 0},                                   // an int key
		{1, rowMap, 11, 4, rowString, 1, 'a', rowNull, rowString, 1, 'a', rowNull}, // a repeated key
		{1, rowStruct, 9, 1, rowNull},                                              // a length past the end
	} {
		if v, err := DecodeRow(bad); !errors.Is(err, ErrBadEncoding) {
			t.Errorf("DecodeRow(%x) = %#v, %v; want ErrBadEncoding", bad, v, err)
		}
	}
}
