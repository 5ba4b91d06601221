package eval

import (
	"reflect"
	"testing"

	"github.com/basindb/basin/internal/jsonb"
	"github.com/basindb/basin/internal/pgerr"
)

func TestParseJSONPath(t *testing.T) {
	for _, c := range []struct {
		path string
		want []jsonPathStep
	}{
		{"$", nil},
		{"$.log.cloud", []jsonPathStep{{"log", -1}, {"cloud", -1}}},
		{"$.a[0][12]", []jsonPathStep{{"a", -1}, {"", 0}, {"", 12}}},
		{`$["a b"]['c.d']`, []jsonPathStep{{"a b", -1}, {"c.d", -1}}},
		{" $.x ", []jsonPathStep{{"x", -1}}},
	} {
		got, err := parseJSONPath(c.path)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("parseJSONPath(%q) = %v, %v; want %v", c.path, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "a.b", "$.", "$.*", "$[*]", "$[-1]", "$[1", "$x"} {
		if _, err := parseJSONPath(bad); pgerr.CodeOf(err) != pgerr.InvalidParameterValue {
			t.Errorf("parseJSONPath(%q): %v, want 22023", bad, err)
		}
	}
}

func TestJSONConcat(t *testing.T) {
	parse := func(s string) jsonb.Value {
		v, err := jsonb.ParseJSON(s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, c := range []struct {
		in   []string
		want string
	}{
		{[]string{`{"a": 1, "b": 2}`, `{"c": 3, "a": 4}`}, `{"a":4,"b":2,"c":3}`},
		{[]string{`[1, [2]]`, `[[[3]], [[[4]]]]`}, `[1,[2],[[3]],[[[4]]]]`},
		{[]string{`[1, 2]`, `3`, `{"a": "x\ny"}`}, `[1,2,3,{"a":"x\ny"}]`},
		{[]string{`"s"`, `null`}, `["s",null]`},
	} {
		docs := make([]jsonb.Value, len(c.in))
		for i, s := range c.in {
			docs[i] = parse(s)
		}
		if got := compactJSON(jsonConcat(docs)); got != c.want {
			t.Errorf("json_concat(%v) = %s, want %s", c.in, got, c.want)
		}
	}
}
