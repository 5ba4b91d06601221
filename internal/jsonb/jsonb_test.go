package jsonb

import (
	"strings"
	"testing"

	"github.com/basindb/basin/internal/pgerr"
)

// The expected texts and details are Postgres 15's.
func TestCanonical(t *testing.T) {
	for in, want := range map[string]string{
		`{"b":1,"aa":[1,2.50,{"c":null}],"a":1e2}`: `{"a": 100, "b": 1, "aa": [1, 2.50, {"c": null}]}`,
		`{"a":1,"a":2}`: `{"a": 2}`,
		`[1, -0, 1.0e1, 1.50e-1, 1E+2, 0.0001e-3]`: `[1, 0, 10, 0.150, 100, 0.0000001]`,
		`"a\u00e9\"\\\/\n\u0001"`:                  `"aé\"\\/\n\u0001"`,
		`{"":true, "é":false,"z":{}}`:              `{"": true, "z": {}, "é": false}`,
		"  [ ]  ":                                  `[]`,
		`12345678901234567890.123`:                 `12345678901234567890.123`,
		`{"aa":1,"b":2,"ab":3}`:                    `{"b": 2, "aa": 1, "ab": 3}`,
		`"a\tb"`:                                   `"a\tb"`,
	} {
		got, err := Canonical(in)
		if err != nil || got != want {
			t.Errorf("Canonical(%s) = %s, %v; want %s", in, got, err, want)
		}
	}
}

func TestSyntaxErrors(t *testing.T) {
	for in, detail := range map[string]string{
		`{"a":`:    "The input string ended unexpectedly.",
		`{"a" 1}`:  `Expected ":", but found "1".`,
		`[1,2`:     "The input string ended unexpectedly.",
		`tru`:      `Token "tru" is invalid.`,
		`[1,]`:     `Expected JSON value, but found "]".`,
		`{1:2}`:    `Expected string or "}", but found "1".`,
		`01`:       `Token "01" is invalid.`,
		`"\x"`:     `Escape sequence "\x" is invalid.`,
		`1 2`:      `Expected end of input, but found "2".`,
		`"\ud800"`: "Unicode low surrogate must follow a high surrogate.",
		``:         "The input string ended unexpectedly.",
	} {
		_, err := Parse(in)
		e, ok := pgerr.As(err)
		if !ok || e.Code != pgerr.InvalidTextRepresentation || e.Detail != detail {
			t.Errorf("Parse(%s) = %v (%+v); want 22P02 with detail %s", in, err, e, detail)
		}
	}
	if _, err := Parse(`"\u0000"`); pgerr.CodeOf(err) != pgerr.UntranslatableCharacter {
		t.Errorf(`jsonb "\u0000": %v, want 22P05`, err)
	}
	for _, n := range []string{"1e131072", "1e-16384", "1e99999999999"} {
		if _, err := Parse(n); pgerr.CodeOf(err) != pgerr.NumericValueOutOfRange {
			t.Errorf("jsonb %s: %v, want 22003", n, err)
		}
		if _, err := ParseJSON(n); err != nil {
			t.Errorf("json %s: %v", n, err)
		}
	}
	if v, err := Parse("0e-16383"); err != nil || v.Text() != "0."+strings.Repeat("0", 16383) {
		t.Errorf("0e-16383: %v", err)
	}
	if _, err := ParseJSON(`"\u0000"`); err != nil {
		t.Errorf(`json "\u0000": %v`, err)
	}
}

func mustParse(t *testing.T, s string) Value {
	t.Helper()
	v, err := Parse(s)
	if err != nil {
		t.Fatalf("Parse(%s): %v", s, err)
	}
	return v
}

// TestOperators checks containment, existence, concatenation and
// ordering against Postgres 15's answers.
func TestOperators(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{`{"a":1,"b":{"c":[1,2]}}`, `{"b":{"c":[2]}}`, true},
		{`{"a":1}`, `{"a":2}`, false},
		{`[1,2,[3,4]]`, `[[3]]`, true},
		{`[1,2,[3,4]]`, `[3]`, false},
		{`["foo","bar"]`, `"foo"`, true},
		{`[["foo"]]`, `"foo"`, false},
		{`{"a":[1,2]}`, `{"a":1}`, false},
		{`"a"`, `"a"`, true},
		{`[1,1]`, `[1,1,1]`, true},
		{`{}`, `[]`, false},
	} {
		if got := Contains(mustParse(t, c.a), mustParse(t, c.b)); got != c.want {
			t.Errorf("%s @> %s = %v, want %v", c.a, c.b, got, c.want)
		}
	}
	v := mustParse(t, `{"a":1,"b":[2]}`)
	if !v.Exists("a") || v.Exists("c") || !mustParse(t, `["x",1]`).Exists("x") || mustParse(t, `[1]`).Exists("1") || !mustParse(t, `"s"`).Exists("s") {
		t.Error("Exists")
	}
	for _, c := range [][3]string{
		{`{"a":1,"b":2}`, `{"b":3,"c":4}`, `{"a": 1, "b": 3, "c": 4}`},
		{`[1,2]`, `[3]`, `[1, 2, 3]`},
		{`[1]`, `{"a":1}`, `[1, {"a": 1}]`},
		{`1`, `"x"`, `[1, "x"]`},
		{`{"a":1}`, `2`, `[{"a": 1}, 2]`},
	} {
		if got := Concat(mustParse(t, c[0]), mustParse(t, c[1])).Text(); got != c[2] {
			t.Errorf("%s || %s = %s, want %s", c[0], c[1], got, c[2])
		}
	}
	// Ascending, as ORDER BY on Postgres 15 sorts them.
	order := []string{`[]`, `null`, `"a"`, `"b"`, `1`, `2.0`, `10`, `false`, `true`, `[9]`, `[1, 2]`, `{}`, `{"b": 1}`, `{"a": 1, "b": 0}`}
	for i := range order {
		for j := range order {
			want := cmpInt(i, j)
			if i == j {
				want = 0
			}
			if got := Compare(mustParse(t, order[i]), mustParse(t, order[j])); got != want {
				t.Errorf("Compare(%s, %s) = %d, want %d", order[i], order[j], got, want)
			}
		}
	}
	if Compare(mustParse(t, `1.0`), mustParse(t, `1`)) != 0 {
		t.Error("1.0 and 1 differ")
	}
}

func TestAccess(t *testing.T) {
	v := mustParse(t, `{"a":{"b":["x",{"c":null}]}}`)
	if got, ok := v.Path([]string{"a", "b", "-1", "c"}); !ok || got.Kind != Null {
		t.Errorf("path: %v %v", got, ok)
	}
	if _, ok := v.Path([]string{"a", "b", "z"}); ok {
		t.Error("a non-integer index found something")
	}
	j, _ := ParseJSON(`{"a": [1,  2], "a": {"x" : 1.50}}`)
	f, _ := j.Field("a")
	if got := f.JSONText(); got != `{"x" : 1.50}` {
		t.Errorf("json -> = %s", got)
	}
	if got, _ := mustParse(t, `[1,{"a":"x"}]`).Elems[1].AsText(false); got != `{"a": "x"}` {
		t.Errorf("->> of an object = %s", got)
	}
	if got := mustParse(t, `{"a":[1,{}],"b":{}}`).Pretty(); got != "{\n    \"a\": [\n        1,\n        {\n        }\n    ],\n    \"b\": {\n    }\n}" {
		t.Errorf("pretty = %q", got)
	}
}

func TestEqualityKey(t *testing.T) {
	if EqualityKey(`{"a": [1.0, 2.50]}`) != EqualityKey(`{"a": [1, 2.5]}`) {
		t.Error("equal values have different keys")
	}
	if EqualityKey(`{"a": 1}`) == EqualityKey(`{"a": 10}`) || EqualityKey(`"1"`) == EqualityKey(`1`) {
		t.Error("different values have one key")
	}
}
