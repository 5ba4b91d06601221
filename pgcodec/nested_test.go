package pgcodec

import (
	"reflect"
	"testing"
	"time"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/jsonb"
)

func TestNestedWire(t *testing.T) {
	must := func(typ catalog.Type, err error) catalog.Type {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return typ
	}
	inner := must(catalog.StructOf([]catalog.Field{{Name: "at", Type: catalog.Timestamp}, {Name: "d", Type: catalog.Date}, {Name: "f", Type: catalog.Double}}))
	st := must(catalog.StructOf([]catalog.Field{{Name: "name", Type: catalog.Varchar}, {Name: "n", Type: catalog.BigInt},
		{Name: "tags", Type: catalog.ArrayOf(catalog.Varchar)}, {Name: "when", Type: inner}, {Name: "ok", Type: catalog.Boolean}}))
	mt := must(catalog.MapOf(catalog.Varchar, catalog.ArrayOf(catalog.Int)))
	sv := catalog.Struct{"a \"b\"", int64(-3), []any{"x", nil}, catalog.Struct{time.Date(2024, 1, 2, 3, 4, 5, 6000, time.UTC), catalog.DateVal(19724), 1.5}, true}
	mv := catalog.Map{{Key: "a", Value: []any{}}, {Key: "bb", Value: []any{int64(1)}}, {Key: "c", Value: nil}}

	for _, c := range []struct {
		t    catalog.Type
		v    any
		text string
	}{
		{st, sv, `{"n": -3, "ok": true, "name": "a \"b\"", "tags": ["x", null], "when": {"d": "2024-01-02", "f": 1.5, "at": "2024-01-02T03:04:05.000006"}}`},
		{mt, mv, `{"a": [], "c": null, "bb": [1]}`},
		{st, catalog.Struct{nil, nil, nil, nil, nil}, `{"n": null, "ok": null, "name": null, "tags": null, "when": null}`},
		{catalog.ArrayOf(st), []any{catalog.Struct{"q", nil, []any{}, nil, false}, nil},
			`{"{\"n\": null, \"ok\": false, \"name\": \"q\", \"tags\": [], \"when\": null}",NULL}`},
	} {
		text, err := AppendText(nil, c.t, c.v)
		if err != nil || string(text) != c.text {
			t.Errorf("AppendText(%s) = %s, %v; want %s", c.t, text, err, c.text)
		}
		bin, err := AppendBinary(nil, c.t, c.v)
		if err != nil {
			t.Fatalf("AppendBinary(%s): %v", c.t, err)
		}
		if c.t.IsNested() {
			if string(bin) != "\x01"+c.text {
				t.Errorf("AppendBinary(%s) = %q", c.t, bin)
			}
			j, err := jsonb.Parse(c.text)
			if err != nil {
				t.Fatal(err)
			}
			back, err := FromJSONB(c.t, j)
			if err != nil || !reflect.DeepEqual(back, c.v) {
				t.Errorf("FromJSONB(%s) = %#v, %v; want %#v", c.text, back, err, c.v)
			}
		}
	}
	// array_send's element oid: jsonb, 3802.
	if bin, _ := AppendBinary(nil, catalog.ArrayOf(st), []any{nil}); string(bin[8:12]) != "\x00\x00\x0e\xda" {
		t.Errorf("jsonb[] element oid %x, want 0eda", bin[8:12])
	}

	// Reading is lenient as JSON records are: names ignoring case,
	// numbers from strings; a type mismatch is an error.
	j, _ := jsonb.Parse(`{"NAME": "z", "n": "42", "extra": 1, "when": {"at": "2024-01-02 03:04:05"}}`)
	got, err := FromJSONB(st, j)
	want := catalog.Struct{"z", int64(42), nil, catalog.Struct{time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC), nil, nil}, nil}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("FromJSONB = %#v, %v; want %#v", got, err, want)
	}
	for _, bad := range []string{`[1]`, `{"n": true}`, `{"tags": "x"}`, `{"when": {"d": "not a date"}}`} {
		j, _ := jsonb.Parse(bad)
		if v, err := FromJSONB(st, j); err == nil {
			t.Errorf("FromJSONB(%s) = %#v, want an error", bad, v)
		}
	}
	if _, err := AppendText(nil, st, []any{"x"}); err == nil {
		t.Error("a []any encoded as a struct")
	}
}
