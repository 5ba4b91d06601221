package serde

import (
	"testing"

	"github.com/cockroachdb/apd/v3"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/numeric"
	"github.com/basindb/basin/internal/pgerr"
)

// TestJSONNumeric reads numerics from JSON numbers and strings exactly
// (no float64 on the way), rounds them to a column's scale, and writes
// them back with their digits.
func TestJSONNumeric(t *testing.T) {
	cols := []catalog.Column{
		{Name: "n", Type: catalog.Decimal},
		{Name: "p", Type: catalog.Decimal, Precision: 10, Scale: 2},
	}
	for in, want := range map[string][2]string{
		`{"n": 0.1, "p": 1.005}`:                        {"0.1", "1.01"},
		`{"n": 12345678901234567890.123456789, "p": 3}`: {"12345678901234567890.123456789", "3.00"},
		`{"n": "1.50", "p": " -2.5 "}`:                  {"1.50", "-2.50"},
		`{"n": "NaN", "p": 1e2}`:                        {"NaN", "100.00"},
		`{"n": 1E-3, "p": "Infinity"}`:                  {"", ""}, // p overflows
		`{"n": -0.0, "p": 0}`:                           {"0.0", "0.00"},
		`{"n": "-Infinity", "p": 99999999.994}`:         {"-Infinity", "99999999.99"},
		`{"n": 1, "p": 99999999.995}`:                   {"", ""},
		`{"n": true, "p": 1}`:                           {"", ""},
	} {
		vals, err := decodeJSONValue(cols, []byte(in))
		if want[0] == "" {
			if err == nil {
				t.Errorf("%s decoded to %v", in, vals)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		for i, w := range want {
			if d, ok := vals[i].(*apd.Decimal); !ok || numeric.Text(d) != w {
				t.Errorf("%s: column %d = %v, want %s", in, i, vals[i], w)
			}
		}
	}
	_, err := decodeJSONValue(cols, []byte(`{"n": 1, "p": 123456789}`))
	if pgerr.CodeOf(err) != pgerr.NumericValueOutOfRange {
		t.Errorf("overflow: %v", err)
	}
	d1, _ := numeric.Parse("1.50")
	d2, _ := numeric.Parse("-Infinity")
	b, err := encodeJSONValue(cols, []any{d1, d2})
	if err != nil || string(b) != `{"n":1.50,"p":"-Infinity"}` {
		t.Errorf("encode = %s, %v", b, err)
	}
	if _, err := EncodeKey("kafka", []catalog.Type{catalog.Decimal}, []string{"k"}, []any{d1}); pgerr.CodeOf(err) != pgerr.FeatureNotSupported {
		t.Errorf("a NUMERIC kafka key: %v", err)
	}
}
