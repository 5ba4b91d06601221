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
