package pgcodec

import (
	"math"
	"testing"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
)

// The expected lines are what PostgreSQL 15 writes for the same rows
// (COPY (VALUES ...) TO STDOUT, checked against a real server).
func TestAppendCopyRow(t *testing.T) {
	types := []catalog.Type{catalog.BigInt, catalog.Varchar, catalog.Varchar, catalog.Double}
	rows := [][]any{
		{int64(1), "a\tb\\c\nd", nil, 1.5},
		{int64(2), "", `\N`, math.NaN()},
		{int64(3), `x,y"z`, "\r\x01", math.Copysign(0, -1)},
		{int64(4), `\.`, " sp ", 1e20},
	}
	text := DefaultCopyFormat(false)
	csv := DefaultCopyFormat(true)
	csv.Header = true
	for _, tc := range []struct {
		f    *CopyFormat
		want string
	}{
		{&text, "1\ta\\tb\\\\c\\nd\t\\N\t1.5\n2\t\t\\\\N\tNaN\n3\tx,y\"z\t\\r\x01\t-0\n4\t\\\\.\t sp \t1e+20\n"},
		{&csv, "id,s,t,f\n1,\"a\tb\\c\nd\",,1.5\n2,\"\",\\N,NaN\n3,\"x,y\"\"z\",\"\r\x01\",-0\n4,\\., sp ,1e+20\n"},
	} {
		var b []byte
		if tc.f.Header {
			b = AppendCopyHeader(b, []string{"id", "s", "t", "f"}, tc.f)
		}
		for _, r := range rows {
			var err error
			if b, err = AppendCopyRow(b, types, r, tc.f, nil); err != nil {
				t.Fatal(err)
			}
		}
		if string(b) != tc.want {
			t.Errorf("csv=%v:\n got %q\nwant %q", tc.f.CSV, b, tc.want)
		}
	}

	// A lone \. is quoted, a header too; FORCE_QUOTE leaves NULL alone;
	// another quote and escape character.
	f := DefaultCopyFormat(true)
	f.Header = true
	b := AppendCopyHeader(nil, []string{"a,b"}, &f)
	b, _ = AppendCopyRow(b, []catalog.Type{catalog.Varchar}, []any{`\.`}, &f, nil)
	if want := "\"a,b\"\n\"\\.\"\n"; string(b) != want {
		t.Errorf("got %q, want %q", b, want)
	}
	f = DefaultCopyFormat(true)
	f.Null, f.Quote, f.Escape, f.ForceQuote = "N", "'", `\`, []bool{true, true, true}
	b, _ = AppendCopyRow(nil, []catalog.Type{catalog.BigInt, catalog.Varchar, catalog.Varchar}, []any{int64(1), `it's \ q`, nil}, &f, nil)
	if want := `'1','it\'s \\ q',N` + "\n"; string(b) != want {
		t.Errorf("got %q, want %q", b, want)
	}
}

func TestCopyFormatValidate(t *testing.T) {
	for _, tc := range []struct {
		change func(*CopyFormat)
		csv    bool
		code   pgerr.Code
	}{
		{func(f *CopyFormat) { f.Delimiter = ",," }, false, pgerr.FeatureNotSupported},
		{func(f *CopyFormat) { f.Delimiter = "\n" }, false, pgerr.InvalidParameterValue},
		{func(f *CopyFormat) { f.Delimiter = "a" }, false, pgerr.InvalidParameterValue},
		{func(f *CopyFormat) { f.Delimiter = "a" }, true, ""},
		{func(f *CopyFormat) { f.Null = "\r" }, false, pgerr.InvalidParameterValue},
		{func(f *CopyFormat) { f.Delimiter, f.Null = ",", "a,b" }, false, pgerr.FeatureNotSupported},
		{func(f *CopyFormat) { f.Null = `"` }, true, pgerr.FeatureNotSupported},
		{func(f *CopyFormat) { f.Quote = "," }, true, pgerr.InvalidParameterValue},
		{func(f *CopyFormat) { f.Escape = "ab" }, true, pgerr.FeatureNotSupported},
		{func(f *CopyFormat) { f.Delimiter = "é" }, true, pgerr.FeatureNotSupported},
	} {
		f := DefaultCopyFormat(tc.csv)
		tc.change(&f)
		err := f.Validate()
		if got := pgerr.CodeOf(err); got != tc.code && !(tc.code == "" && err == nil) {
			t.Errorf("%+v: got %v, want %s", f, err, tc.code)
		}
	}
}
