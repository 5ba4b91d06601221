package serde

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
)

func TestJSONSchema(t *testing.T) {
	cols := []catalog.Column{col("ID", catalog.BigInt), {Name: "PRICE", Type: catalog.Decimal, Precision: 10, Scale: 2},
		col("DOC", catalog.JSONB), col("TAGS", catalog.ArrayOf(catalog.Varchar))}
	got, err := JSONSchema("Order", cols)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"object","title":"Order","properties":{` +
		`"ID":{"connect.index":0,"oneOf":[{"type":"null"},{"type":"integer","connect.type":"int64"}]},` +
		`"PRICE":{"connect.index":1,"oneOf":[{"type":"null"},{"type":"number","title":"org.apache.kafka.connect.data.Decimal","connect.version":1,"connect.type":"bytes","connect.parameters":{"scale":"2","connect.decimal.precision":"10"}}]},` +
		`"DOC":{"connect.index":2},` +
		`"TAGS":{"connect.index":3,"oneOf":[{"type":"null"},{"type":"array","items":{"oneOf":[{"type":"null"},{"type":"string"}]}}]}}}`
	if got != want {
		t.Fatalf("schema\n%s\nwant\n%s", got, want)
	}
	all := append(append([]catalog.Column{}, protoCols...), col("span", catalog.Interval), col("docs", catalog.ArrayOf(catalog.JSON)))
	got, err = JSONSchema(`a "quoted" name`, all)
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Properties map[string]map[string]any
	}
	if err := json.Unmarshal([]byte(got), &s); err != nil || len(s.Properties) != len(all) {
		t.Fatalf("%s: %d properties, %v", got, len(s.Properties), err)
	}
	if _, err := JSONSchema("R", []catalog.Column{col("v", catalog.Type(200))}); pgerr.CodeOf(err) != pgerr.FeatureNotSupported {
		t.Errorf("a column of no JSON type: %v", err)
	}
}

// jsonSRCols are protoCols that value_format 'json' reads (not arrays,
// which it writes but does not read yet), and an INTERVAL.
func jsonSRCols(t testing.TB) ([]catalog.Column, []any) {
	var cols []catalog.Column
	var vals []any
	for i, v := range protoVals(t) {
		if c := protoCols[i]; !c.Type.IsArray() {
			cols, vals = append(cols, c), append(vals, v)
		}
	}
	return append(cols, col("span", catalog.Interval)), append(vals, catalog.IntervalVal{Months: 14, Days: -1, Micros: 1})
}

func TestJSONSRRoundTrip(t *testing.T) {
	cols, vals := jsonSRCols(t)
	enc, err := AppendJSONSR(nil, 7, cols, vals)
	if err != nil {
		t.Fatal(err)
	}
	// The framing, as another implementation reads it, then value_format
	// 'json''s object.
	var h sr.ConfluentHeader
	id, body, err := h.DecodeID(enc)
	if err != nil || id != 7 {
		t.Fatalf("schema id %d, %v", id, err)
	}
	plain, err := encodeJSONValue(cols, vals)
	if err != nil || string(body) != string(plain) {
		t.Fatalf("body %s, want %s (%v)", body, plain, err)
	}
	got := make([]any, len(cols))
	if err := DecodeJSONSR(got, nil, cols, enc); err != nil || !sameAvro(got, vals) {
		t.Fatalf("decoded %#v, %v\nwant %#v", got, err, vals)
	}
	nulls := make([]any, len(cols))
	if enc, err = AppendJSONSR(nil, 7, cols, nulls); err != nil {
		t.Fatal(err)
	}
	if err := DecodeJSONSR(got, nil, cols, enc); err != nil || !sameAvro(got, nulls) {
		t.Fatalf("NULLs decode to %#v, %v", got, err)
	}
}

// TestJSONSRFromAnotherProducer reads a record another producer framed
// (franz-go's implementation of the wire format) after registering its
// own schema, which basin does not need to read the record; then one of
// an evolved schema.
func TestJSONSRFromAnotherProducer(t *testing.T) {
	ctx, cl := registryClient(t)
	var h sr.ConfluentHeader
	produce := func(schema string, rec map[string]any) []byte {
		t.Helper()
		ss, err := cl.CreateSchema(ctx, "orders-value", sr.Schema{Schema: schema, Type: sr.TypeJSON})
		if err != nil {
			t.Fatal(err)
		}
		b, err := h.AppendEncode(nil, ss.ID, nil)
		if err != nil {
			t.Fatal(err)
		}
		body, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		return append(b, body...)
	}
	v1 := `{"type":"object","properties":{"qty":{"type":"integer"},"customer":{"type":"string"}}}`
	v2 := `{"type":"object","properties":{"qty":{"type":"integer"},"customer":{"type":"string"},"coupon":{"type":"string"}}}`
	old := produce(v1, map[string]any{"qty": 3, "customer": "ann", "extra": []int{1}})
	cur := produce(v2, map[string]any{"qty": "4", "customer": "bob", "coupon": "X1"})
	cols := []catalog.Column{col("CUSTOMER", catalog.Varchar), col("qty", catalog.BigInt), col("coupon", catalog.Varchar)}
	got := make([]any, len(cols))
	if err := DecodeJSONSR(got, nil, cols, old); err != nil || !sameAvro(got, []any{"ann", int64(3), nil}) {
		t.Errorf("v1 record: %#v, %v", got, err)
	}
	if err := DecodeJSONSR(got, nil, cols, cur); err != nil || !sameAvro(got, []any{"bob", int64(4), "X1"}) {
		t.Errorf("v2 record: %#v, %v", got, err)
	}
	if id, _ := SchemaID(cur); id != 2 {
		t.Errorf("v2 record's schema id %d", id)
	}
}

func TestJSONSRErrors(t *testing.T) {
	cols := []catalog.Column{col("n", catalog.Int)}
	dst := make([]any, 1)
	for _, tc := range []struct {
		in   []byte
		code pgerr.Code
		msg  string
	}{
		{[]byte(`{"n":1}`), pgerr.InvalidTextRepresentation, "not in the schema registry's wire format"},
		{[]byte{0, 0, 0, 1}, pgerr.InvalidTextRepresentation, "not in the schema registry's wire format"},
		{[]byte{0, 0, 0, 0, 1}, pgerr.InvalidTextRepresentation, "value is not valid JSON: it is empty"},
		{append([]byte{0, 0, 0, 0, 1}, `[1]`...), pgerr.InvalidTextRepresentation, "value is not a JSON object"},
		{append([]byte{0, 0, 0, 0, 1}, `{"n":1e10}`...), pgerr.NumericValueOutOfRange, `field "n"`},
	} {
		checkErr(t, DecodeJSONSR(dst, nil, cols, tc.in), tc.code, tc.msg)
	}
}

// FuzzDecodeJSONSR: any bytes decode or fail with a SQLSTATE, and what
// decodes encodes to a value that decodes to the same values.
func FuzzDecodeJSONSR(f *testing.F) {
	cols, vals := jsonSRCols(f)
	for _, vals := range [][]any{vals, make([]any, len(cols))} {
		enc, err := AppendJSONSR(nil, 1, cols, vals)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(enc)
	}
	f.Add(append([]byte{0, 0, 0, 0, 1}, `{"QTY":"5","ts":"2024-01-01T00:00:00Z"}`...))
	f.Fuzz(func(t *testing.T, b []byte) {
		dst := make([]any, len(cols))
		if err := DecodeJSONSR(dst, nil, cols, b); err != nil {
			if _, ok := pgerr.As(err); !ok {
				t.Fatalf("error without a SQLSTATE: %v", err)
			}
			return
		}
		enc, err := AppendJSONSR(nil, 1, cols, dst)
		if err != nil {
			t.Fatalf("decoded %#v, which does not encode: %v", dst, err)
		}
		again := make([]any, len(cols))
		if err := DecodeJSONSR(again, nil, cols, enc); err != nil || !sameAvro(again, dst) {
			t.Fatalf("decoded %#v, which encodes to a value that decodes to %#v, %v", dst, again, err)
		}
	})
}

// TestJSONSchemaNested writes the JSON Schema of STRUCT, MAP and array
// columns, infers the same columns back from it, and round-trips a
// value.
func TestJSONSchemaNested(t *testing.T) {
	addr, err := catalog.StructOf([]catalog.Field{{Name: "city", Type: catalog.Varchar}, {Name: "zip", Type: catalog.Int}})
	if err != nil {
		t.Fatal(err)
	}
	attrs, err := catalog.MapOf(catalog.Varchar, catalog.Double)
	if err != nil {
		t.Fatal(err)
	}
	cols := []catalog.Column{col("id", catalog.BigInt), col("addr", addr), col("lines", catalog.ArrayOf(addr)), col("attrs", attrs)}
	text, err := JSONSchema("Order", cols)
	if err != nil {
		t.Fatal(err)
	}
	back, err := JSONSchemaColumns(text)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range back {
		if c.Name != cols[i].Name || c.Type != cols[i].Type {
			t.Errorf("column %d: %s %s, want %s %s (schema %s)", i, c.Name, c.Type, cols[i].Name, cols[i].Type, text)
		}
	}
	row := []any{int64(1), catalog.Struct{"Oslo", int64(150)}, []any{catalog.Struct{"Rome", nil}}, catalog.NewMap([]catalog.MapEntry{{Key: "w", Value: 1.5}})}
	b, err := AppendJSONSR(nil, 7, cols, row)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]any, len(cols))
	if err := DecodeJSONSR(out, nil, cols, b); err != nil {
		t.Fatal(err)
	}
	if g, w := fmt.Sprint(out), fmt.Sprint(row); g != w {
		t.Errorf("read back %s, wrote %s", g, w)
	}
}
