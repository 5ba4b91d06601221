package serde

import (
	"testing"
	"time"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
)

// delimitedCols are valueCols and a DATE.
var delimitedCols = append(append([]catalog.Column{}, valueCols...), col("day", catalog.Date))

func TestDelimitedRoundTrip(t *testing.T) {
	for _, delim := range []rune{',', '\t', ' ', ';', '|'} {
		vals := []any{`a "quoted", spaced;|	value`, int64(-3), int64(9007199254740993), 1.5, true, time.Date(2024, 1, 2, 3, 4, 5, 678_000_000, time.UTC), catalog.DateVal(19724)}
		enc, err := encodeDelimited(delimitedCols, delim, vals)
		if err != nil {
			t.Fatal(err)
		}
		back := make([]any, len(delimitedCols))
		if err := decodeDelimited(back, nil, delimitedCols, delim, enc); err != nil {
			t.Fatalf("%q: %v", enc, err)
		}
		if !sameValues(back, vals) {
			t.Fatalf("delimiter %q: %q decodes to %#v, want %#v", delim, enc, back, vals)
		}
		nulls := make([]any, len(delimitedCols))
		enc, err = encodeDelimited(delimitedCols, delim, nulls)
		if err != nil {
			t.Fatal(err)
		}
		if err := decodeDelimited(back, nil, delimitedCols, delim, enc); err != nil || !sameValues(back, nulls) {
			t.Fatalf("NULLs as %q decode to %#v, %v", enc, back, err)
		}
	}
}

func TestDelimitedErrors(t *testing.T) {
	for _, tc := range []struct{ in, msg string }{
		{`a,1`, `value has 2 DELIMITED fields, and the value columns are 7`},
		{"a,1,2,3,true,1,2024-01-01\nb,1,2,3,true,1,2024-01-01", `value holds more than one DELIMITED line`},
		{`"a,1,2,3,true,1,2024-01-01`, `value is not a valid DELIMITED record`},
		{`a,x,2,3,true,1,2024-01-01`, `DELIMITED field 2 (column "qty"): "x" is not a valid INTEGER`},
		{`a,1,2,3,maybe,1,2024-01-01`, `DELIMITED field 5 (column "paid"): "maybe" is not a valid BOOLEAN`},
	} {
		dst := make([]any, len(delimitedCols))
		err := decodeDelimited(dst, nil, delimitedCols, ',', []byte(tc.in))
		checkErr(t, err, pgerr.InvalidTextRepresentation, tc.msg)
	}
}

// FuzzDecodeDelimited: any value decodes or fails with a SQLSTATE, and
// what decodes encodes to a value that decodes to the same.
func FuzzDecodeDelimited(f *testing.F) {
	for _, s := range []string{
		`c1,3,9007199254740993,9.5,true,1704164645678,2024-01-02`,
		`"x, ""y""",,,NaN,false,2024-01-02T03:04:05Z,`,
		``, `,,,,,,`, "a\tb", `"`, "\"multi\nline\",1,2,3,true,1,2024-01-01",
	} {
		f.Add([]byte(s), uint8(0))
		f.Add([]byte(s), uint8(1))
	}
	f.Fuzz(func(t *testing.T, b []byte, d uint8) {
		delim := []rune{',', '\t', ';'}[int(d)%3]
		vals := make([]any, len(delimitedCols))
		if err := decodeDelimited(vals, nil, delimitedCols, delim, b); err != nil {
			if _, ok := pgerr.As(err); !ok {
				t.Fatalf("error without a SQLSTATE: %v", err)
			}
			return
		}
		enc, err := encodeDelimited(delimitedCols, delim, vals)
		if err != nil {
			t.Fatalf("encode %#v: %v", vals, err)
		}
		back := make([]any, len(delimitedCols))
		if err := decodeDelimited(back, nil, delimitedCols, delim, enc); err != nil {
			t.Fatalf("decode of re-encoded %q: %v", enc, err)
		}
		if !sameValues(back, vals) {
			t.Fatalf("%q decodes to %#v, re-encoded %q decodes to %#v", b, vals, enc, back)
		}
	})
}
