package serde

import (
	"reflect"
	"testing"

	"github.com/hamba/avro/v2"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
)

// nestedCols are columns of nested types: a struct holding a struct and
// an array, an array of structs, a map of arrays, a map of structs.
func nestedCols(t *testing.T) []catalog.Column {
	t.Helper()
	must := func(typ catalog.Type, err error) catalog.Type {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return typ
	}
	geo := must(catalog.StructOf([]catalog.Field{{Name: "lat", Type: catalog.Double}, {Name: "lon", Type: catalog.Double}}))
	addr := must(catalog.StructOf([]catalog.Field{{Name: "city", Type: catalog.Varchar}, {Name: "Zip", Type: catalog.Int},
		{Name: "geo", Type: geo}, {Name: "lines", Type: catalog.ArrayOf(catalog.Varchar)}}))
	item := must(catalog.StructOf([]catalog.Field{{Name: "sku", Type: catalog.Varchar}, {Name: "qty", Type: catalog.BigInt}}))
	return []catalog.Column{
		col("addr", addr),
		col("items", catalog.ArrayOf(item)),
		col("scores", must(catalog.MapOf(catalog.Varchar, catalog.ArrayOf(catalog.Int)))),
		col("byname", must(catalog.MapOf(catalog.Varchar, item))),
		col("n", catalog.BigInt),
	}
}

func nestedVals() []any {
	return []any{
		catalog.Struct{"Paris", int64(75001), catalog.Struct{48.85, 2.35}, []any{"1 rue", nil}},
		[]any{catalog.Struct{"a", int64(2)}, nil, catalog.Struct{nil, int64(-1)}},
		catalog.Map{{Key: "", Value: []any{}}, {Key: "x", Value: []any{int64(1), nil}}, {Key: "y", Value: nil}},
		catalog.Map{{Key: "k", Value: catalog.Struct{"s", nil}}},
		int64(7),
	}
}

func TestSerdeJSONNested(t *testing.T) {
	cols := nestedCols(t)
	b, err := encodeJSONValue(cols, nestedVals())
	if err != nil {
		t.Fatal(err)
	}
	want := `{"addr":{"city":"Paris","Zip":75001,"geo":{"lat":48.85,"lon":2.35},"lines":["1 rue",null]},` +
		`"items":[{"sku":"a","qty":2},null,{"sku":null,"qty":-1}],` +
		`"scores":{"":[],"x":[1,null],"y":null},"byname":{"k":{"sku":"s","qty":null}},"n":7}`
	if string(b) != want {
		t.Fatalf("encoded\n%s\nwant\n%s", b, want)
	}
	got, err := decodeJSONValue(cols, b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, nestedVals()) {
		t.Fatalf("decoded %#v\nwant %#v", got, nestedVals())
	}

	// Reading is lenient: struct fields match ignoring case, missing
	// ones are NULL, extra ones ignored; map entries come sorted, a
	// repeated key's last value winning.
	got, err = decodeJSONValue(cols, []byte(`{"ADDR": {"CITY": "Lyon", "zip": "69001", "extra": [1]},
		"scores": {"b": [2], "a": ["3"], "b": [4]}, "byname": {}, "items": []}`))
	if err != nil {
		t.Fatal(err)
	}
	wantVals := []any{catalog.Struct{"Lyon", int64(69001), nil, nil}, []any{},
		catalog.Map{{Key: "a", Value: []any{int64(3)}}, {Key: "b", Value: []any{int64(4)}}}, catalog.Map{}, nil}
	if !reflect.DeepEqual(got, wantVals) {
		t.Fatalf("decoded %#v\nwant %#v", got, wantVals)
	}

	for _, c := range []struct{ in, msg string }{
		{`{"addr": [1]}`, `field "addr": expected STRUCT<city VARCHAR, "Zip" INTEGER`},
		{`{"addr": {"geo": {"lat": "north"}}}`, `field "addr": struct field "geo": struct field "lat": expected DOUBLE, found JSON string "north"`},
		{`{"items": [{"qty": 1}, {"qty": true}]}`, `field "items": element 2: struct field "qty": expected BIGINT, found JSON boolean true`},
		{`{"scores": {"k": 5}}`, `field "scores": map key "k": expected INTEGER[], found JSON number "5"`},
		{`{"addr": {"City": "a", "CITY": "b"}}`, `match column "city"`},
	} {
		_, err := decodeJSONValue(cols, []byte(c.in))
		checkErr(t, err, pgerr.InvalidTextRepresentation, c.msg)
	}
	_, err = encodeJSONValue(cols[:1], []any{[]any{"x"}})
	checkErr(t, err, pgerr.InternalError, `a []interface {} is not a STRUCT`)
}

func TestAvroNested(t *testing.T) {
	cols := nestedCols(t)
	text, err := AvroSchema("io.confluent.ksql.avro_schemas.KsqlDataSourceSchema", cols)
	if err != nil {
		t.Fatal(err)
	}
	schema, err := avro.Parse(text)
	if err != nil {
		t.Fatalf("%s: %v", text, err)
	}
	for _, vals := range [][]any{nestedVals(), {nil, nil, nil, nil, nil}, {catalog.Struct{nil, nil, nil, nil}, []any{}, catalog.Map{}, catalog.Map{}, int64(0)}} {
		enc, err := AppendAvro(nil, schema, 7, cols, vals)
		if err != nil {
			t.Fatal(err)
		}
		got := make([]any, len(cols))
		if err := DecodeAvro(got, nil, cols, schema, enc); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, vals) {
			t.Errorf("round trip of %#v\ngave %#v", vals, got)
		}
	}
	// The records are named after their columns and fields.
	rs := schema.(*avro.RecordSchema)
	addr := avroBranch(rs.Fields()[0].Type()).(*avro.RecordSchema)
	geo := avroBranch(addr.Fields()[2].Type()).(*avro.RecordSchema)
	if addr.FullName() != "io.confluent.ksql.avro_schemas.KsqlDataSourceSchema_addr" ||
		geo.FullName() != "io.confluent.ksql.avro_schemas.KsqlDataSourceSchema_addr_geo" {
		t.Errorf("record names %s, %s", addr.FullName(), geo.FullName())
	}

	// A writer whose record lacks a field, and has one more: the
	// missing field reads NULL, the extra is ignored.
	writer := avro.MustParse(`{"type": "record", "name": "w", "fields": [
		{"name": "ADDR", "type": ["null", {"type": "record", "name": "a", "fields": [
			{"name": "city", "type": "string"}, {"name": "other", "type": "int"}]}]},
		{"name": "scores", "type": {"type": "map", "values": {"type": "array", "items": "long"}}}]}`)
	enc, err := avro.Marshal(writer, map[string]any{
		"ADDR":   map[string]any{"a": map[string]any{"city": "Nice", "other": 3}},
		"scores": map[string]any{"k": []any{int64(5)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := make([]any, len(cols))
	if err := DecodeAvro(got, nil, cols, writer, append([]byte{0, 0, 0, 0, 9}, enc...)); err != nil {
		t.Fatal(err)
	}
	want := []any{catalog.Struct{"Nice", nil, nil, nil}, nil, catalog.Map{{Key: "k", Value: []any{int64(5)}}}, nil, nil}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("decoded %#v\nwant %#v", got, want)
	}
}
