package jsonb

import "testing"

// FuzzParse checks that no input panics the parser, that a jsonb
// value's canonical text reads back as itself, and that json and jsonb
// json accepts every text jsonb does (jsonb refuses more: \u0000,
// numbers beyond numeric's range).
func FuzzParse(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":[1,2.50,{"c":null}]}`, `"a\u00e9\n"`, `[1e2, -0, 0.5E-3]`, `{"a":`, `tru`, `"\ud83d\ude00"`, `[[[[]]]]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := Parse(s)
		_, jerr := ParseJSON(s)
		if err == nil && jerr != nil {
			t.Fatalf("jsonb and json disagree on %q: %v, %v", s, err, jerr)
		}
		if err != nil {
			return
		}
		text := v.Text()
		again, err := Canonical(text)
		if err != nil || again != text {
			t.Fatalf("canonical text %q of %q reads back as %q, %v", text, s, again, err)
		}
		if Compare(v, v) != 0 || !Contains(v, v) {
			t.Fatalf("%q is not equal to or contained in itself", s)
		}
	})
}
