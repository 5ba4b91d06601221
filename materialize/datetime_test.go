package materialize

import (
	"bytes"
	"testing"
	"time"

	"github.com/basindb/basin/catalog"
)

func TestDatetimeRowRoundTrip(t *testing.T) {
	row := []any{catalog.DateVal(19724), catalog.DateVal(-800000), catalog.TimeOfDay(47045500000),
		catalog.IntervalVal{Months: -14, Days: 3, Micros: -1}, time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC), nil}
	b, err := EncodeRow(row)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeRow(b)
	if err != nil {
		t.Fatal(err)
	}
	for i := range row {
		if got[i] != row[i] && !(i == 4 && got[i].(time.Time).Equal(row[i].(time.Time))) {
			t.Errorf("column %d: %v, want %v", i, got[i], row[i])
		}
	}
	n := 0
	if _, err := VisitRowPrefix(b, -1, func(i int, v *RowValue) error {
		if i < 4 && (v.Kind != RowOther || v.Value != row[i]) {
			t.Errorf("visit %d: %+v", i, v)
		}
		n++
		return nil
	}); err != nil || n != len(row) {
		t.Fatalf("visited %d, %v", n, err)
	}
	if _, err := DecodeRow(b[:len(b)-12]); err == nil {
		t.Error("truncated row decoded")
	}
}

func TestDatetimeKeyOrder(t *testing.T) {
	day := int64(24 * time.Hour / time.Microsecond)
	for _, vals := range [][]any{
		{catalog.DateVal(-5), catalog.DateVal(-1), catalog.DateVal(0), catalog.DateVal(19724)},
		{catalog.TimeOfDay(0), catalog.TimeOfDay(1), catalog.TimeOfDay(day)},
		{catalog.IntervalVal{Micros: -day}, catalog.IntervalVal{}, catalog.IntervalVal{Days: 29, Micros: day - 1},
			catalog.IntervalVal{Months: 1}, catalog.IntervalVal{Months: 1, Micros: 1}},
	} {
		var prev []byte
		for _, v := range vals {
			k, err := EncodeKey(nil, []any{v})
			if err != nil {
				t.Fatal(err)
			}
			if prev != nil && bytes.Compare(prev, k) >= 0 {
				t.Errorf("%v does not sort after the value before it", v)
			}
			prev = k
			back, err := DecodeKey(k)
			if err != nil || len(back) != 1 {
				t.Fatalf("%v: %v, %v", v, back, err)
			}
			if iv, ok := v.(catalog.IntervalVal); ok {
				if back[0].(catalog.IntervalVal).Span() != iv.Span() {
					t.Errorf("%v decoded as %v", v, back[0])
				}
			} else if back[0] != v {
				t.Errorf("%v decoded as %v", v, back[0])
			}
		}
	}
	// '1 mon' and '30 days' are one key, and decode to '1 mon'.
	a, _ := EncodeKey(nil, []any{catalog.IntervalVal{Months: 1}})
	b, _ := EncodeKey(nil, []any{catalog.IntervalVal{Days: 30}})
	if !bytes.Equal(a, b) {
		t.Error("1 mon and 30 days have different keys")
	}
	if v, _ := DecodeKey(b); v[0] != (catalog.IntervalVal{Months: 1}) {
		t.Errorf("30 days key decodes as %v", v[0])
	}
}
