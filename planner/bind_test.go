package planner

import (
	"testing"

	"github.com/basindb/basin/catalog"
)

// TestConvertValueSameType checks that a value already of the target type
// comes back as it went in, without allocating (a parameter is converted
// to its column's type on every execution), and that the int range check
// still applies.
func TestConvertValueSameType(t *testing.T) {
	big := any(int64(1) << 40)
	cases := []struct {
		v any
		t catalog.Type
	}{
		{any(int64(123456)), catalog.BigInt},
		{any(int64(123456)), catalog.Int},
		{any(3.25), catalog.Double},
		{any("text"), catalog.Varchar},
	}
	for _, c := range cases {
		var got any
		var err error
		if n := testing.AllocsPerRun(100, func() { got, err = ConvertValue(c.v, c.t) }); n != 0 {
			t.Errorf("ConvertValue(%v, %v): %v allocations, want 0", c.v, c.t, n)
		}
		if err != nil || got != c.v {
			t.Errorf("ConvertValue(%v, %v) = %v, %v", c.v, c.t, got, err)
		}
	}
	if _, err := ConvertValue(big, catalog.Int); err == nil {
		t.Errorf("ConvertValue(%v, int) did not fail", big)
	}
	if got, err := ConvertValue(big, catalog.BigInt); err != nil || got != big {
		t.Errorf("ConvertValue(%v, bigint) = %v, %v", big, got, err)
	}
}
