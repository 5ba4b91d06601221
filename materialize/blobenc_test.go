package materialize

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/basindb/basin/catalog"
)

func TestBlobRowRoundTrip(t *testing.T) {
	row := []any{catalog.UUIDVal{1, 2, 3, 15: 0xff}, catalog.JSONText(`{"a": [1, 2]}`), []byte{0, 1, 0xff}, []byte{}, int64(7), "x"}
	enc, err := EncodeRow(row)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeRow(enc)
	if err != nil || !reflect.DeepEqual(got, row) {
		t.Fatalf("DecodeRow = %#v, %v; want %#v", got, err, row)
	}
	var kinds []RowKind
	if _, err := VisitRowPrefix(enc, -1, func(_ int, v *RowValue) error { kinds = append(kinds, v.Kind); return nil }); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(kinds, []RowKind{RowBlob, RowBlob, RowBlob, RowBlob, RowInt, RowString}) {
		t.Errorf("kinds %v", kinds)
	}
	for cut := 1; cut < len(enc); cut++ {
		if _, err := DecodeRow(enc[:cut]); err == nil {
			t.Errorf("a row cut at %d decoded", cut)
		}
	}
}

// TestBlobKeyOrder checks uuid and bytea keys sort as Postgres sorts the
// values: bytewise, a prefix first.
func TestBlobKeyOrder(t *testing.T) {
	ordered := [][]any{
		{catalog.UUIDVal{}}, {catalog.UUIDVal{15: 1}}, {catalog.UUIDVal{0: 1}}, {catalog.UUIDVal{0: 0xff}},
	}
	byteas := [][]any{{[]byte{}}, {[]byte{0}}, {[]byte{0, 0}}, {[]byte{0, 1}}, {[]byte{1}}, {[]byte{0xff}}}
	for _, set := range [][][]any{ordered, byteas} {
		var prev []byte
		for i, vals := range set {
			k, err := EncodeKey(nil, append(vals, int64(1)))
			if err != nil {
				t.Fatal(err)
			}
			if i > 0 && bytes.Compare(prev, k) >= 0 {
				t.Errorf("%v does not sort after the previous value", vals)
			}
			back, err := DecodeKey(k)
			if err != nil || !reflect.DeepEqual(back[0], vals[0]) || back[1] != int64(1) {
				t.Errorf("DecodeKey(%v) = %v, %v", vals, back, err)
			}
			prev = k
		}
	}
}

func TestJSONKeyEquality(t *testing.T) {
	a, _ := EncodeKey(nil, []any{catalog.JSONText(`{"a": 1.0}`)})
	b, _ := EncodeKey(nil, []any{catalog.JSONText(`{"a": 1}`)})
	c, _ := EncodeKey(nil, []any{catalog.JSONText(`{"a": 2}`)})
	if !bytes.Equal(a, b) || bytes.Equal(a, c) {
		t.Errorf("keys %x %x %x", a, b, c)
	}
}
