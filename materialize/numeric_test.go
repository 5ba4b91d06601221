package materialize

import (
	"bytes"
	"strings"
	"testing"

	"github.com/cockroachdb/apd/v3"

	"github.com/basindb/basin/internal/numeric"
)

func mustDecimal(t *testing.T, s string) *apd.Decimal {
	t.Helper()
	d, err := numeric.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestRowNumeric round-trips numerics through the row encoding, scale
// kept, including one whose encoding needs a two-byte length.
func TestRowNumeric(t *testing.T) {
	long := "1" + strings.Repeat("7", 400) + ".50"
	for _, s := range []string{"1.50", "0.000", "-12", "NaN", "-Infinity", long} {
		row := []any{int64(1), mustDecimal(t, s), "after"}
		b, err := EncodeRow(row)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeRow(b)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		d, ok := got[1].(*apd.Decimal)
		if !ok || numeric.Text(d) != s || got[2] != "after" {
			t.Errorf("round trip of %s = %v", s, got)
		}
		var kinds []RowKind
		if _, err := VisitRowPrefix(b, -1, func(_ int, v *RowValue) error {
			kinds = append(kinds, v.Kind)
			return nil
		}); err != nil || len(kinds) != 3 || kinds[1] != RowDecimal {
			t.Errorf("visit of %s: %v, %v", s, kinds, err)
		}
	}
}

// TestKeyNumeric checks that equal numerics of different scales have one
// key, that keys sort as values, and that a key decodes back.
func TestKeyNumeric(t *testing.T) {
	a, _ := EncodeKey(nil, []any{mustDecimal(t, "1.0"), "x"})
	b, _ := EncodeKey(nil, []any{mustDecimal(t, "1.00"), "x"})
	if !bytes.Equal(a, b) {
		t.Errorf("keys of 1.0 and 1.00 differ: %x %x", a, b)
	}
	vals := []string{"-Infinity", "-10", "-1.5", "-1", "0", "0.001", "1", "1.25", "10", "Infinity", "NaN"}
	var prev []byte
	for _, s := range vals {
		k, err := EncodeKey(nil, []any{mustDecimal(t, s), int64(0)})
		if err != nil {
			t.Fatal(err)
		}
		if prev != nil && bytes.Compare(prev, k) >= 0 {
			t.Errorf("key of %s does not sort after its predecessor", s)
		}
		prev = k
		got, err := DecodeKey(k)
		if err != nil || numeric.Cmp(got[0].(*apd.Decimal), mustDecimal(t, s)) != 0 || got[1] != int64(0) {
			t.Errorf("DecodeKey(key(%s)) = %v, %v", s, got, err)
		}
	}
}
