package serde

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/apd/v3"
	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/internal/srfake"
)

// avroCols are columns of every type AvroSchema writes.
var avroCols = []catalog.Column{
	col("name", catalog.Varchar), col("qty", catalog.Int), col("total", catalog.BigInt), col("amount", catalog.Double),
	col("paid", catalog.Boolean), col("ts", catalog.Timestamp), col("day", catalog.Date), col("at", catalog.Time),
	{Name: "price", Type: catalog.Decimal, Precision: 10, Scale: 2}, col("exact", catalog.Decimal),
	col("id", catalog.UUID), col("raw", catalog.Bytea), col("doc", catalog.JSONB), col("tags", catalog.ArrayOf(catalog.Varchar)),
	col("seen", catalog.TimestampTZ),
}

// sameAvro is sameValues for values that may be numerics (the same
// text), byte strings and arrays.
func sameAvro(a, b []any) bool {
	if len(a) != len(b) {
		return false
	}
	norm := func(v any) any {
		switch x := v.(type) {
		case *apd.Decimal:
			return "numeric " + x.Text('f')
		case []byte:
			return "bytea " + string(x)
		case []any:
			return fmt.Sprintf("array %#v", x)
		}
		return v
	}
	for i := range a {
		if !sameValues([]any{norm(a[i])}, []any{norm(b[i])}) {
			return false
		}
	}
	return true
}

func dec(t *testing.T, s string) *apd.Decimal {
	t.Helper()
	d, _, err := apd.NewFromString(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestAvroRoundTrip(t *testing.T) {
	text, err := AvroSchema("io.confluent.ksql.avro_schemas.KsqlDataSourceSchema", avroCols)
	if err != nil {
		t.Fatal(err)
	}
	schema, err := avro.Parse(text)
	if err != nil {
		t.Fatalf("%s: %v", text, err)
	}
	vals := []any{"x", int64(-3), int64(9007199254740993), 1.25, true, time.UnixMilli(1700000000123).UTC(),
		catalog.DateVal(19724), catalog.TimeOfDay(13*3600e6 + 5e6), dec(t, "12.50"), dec(t, "-0.000123"),
		catalog.UUIDVal{1, 2, 3, 15: 0xff}, []byte{0, 1, 0xff}, catalog.JSONText(`{"a": [1, 2]}`),
		[]any{"a", nil}, time.UnixMilli(-1).UTC()}
	enc, err := AppendAvro(nil, schema, 7, avroCols, vals)
	if err != nil {
		t.Fatal(err)
	}
	if id, err := AvroSchemaID(enc); err != nil || id != 7 {
		t.Fatalf("schema id %d, %v", id, err)
	}
	got := make([]any, len(avroCols))
	if err := DecodeAvro(got, nil, avroCols, schema, enc); err != nil {
		t.Fatal(err)
	}
	if !sameAvro(got, vals) {
		t.Fatalf("decoded %#v, want %#v", got, vals)
	}
	nulls := make([]any, len(avroCols))
	enc, err = AppendAvro(nil, schema, 7, avroCols, nulls)
	if err != nil {
		t.Fatal(err)
	}
	if err := DecodeAvro(got, nil, avroCols, schema, enc); err != nil || !sameAvro(got, nulls) {
		t.Fatalf("NULLs decode to %#v, %v", got, err)
	}
	if _, err := AvroSchema("x", []catalog.Column{col("span", catalog.Interval)}); pgerr.CodeOf(err) != pgerr.FeatureNotSupported {
		t.Errorf("an INTERVAL column: %v", err)
	}
}

// TestAvroFromAnotherProducer reads records another producer wrote:
// encoded by the Avro library under its own schema (other field order,
// an int where basin has BIGINT, a field basin has no column for, none
// for one it has), registered in a schema registry and framed as
// Confluent's serializers frame them; the reader fetches the writer's
// schema by the id in the record. A schema evolved with a new optional
// field reads old records with the new column NULL.
func TestAvroFromAnotherProducer(t *testing.T) {
	ctx, cl := registryClient(t)
	v1 := `{"type":"record","name":"Order","namespace":"shop","fields":[
		{"name":"qty","type":"int"},
		{"name":"customer","type":"string"},
		{"name":"note","type":["null","string"],"default":null},
		{"name":"placed","type":{"type":"long","logicalType":"timestamp-millis"}}]}`
	v2 := `{"type":"record","name":"Order","namespace":"shop","fields":[
		{"name":"qty","type":"int"},
		{"name":"customer","type":"string"},
		{"name":"note","type":["null","string"],"default":null},
		{"name":"placed","type":{"type":"long","logicalType":"timestamp-millis"}},
		{"name":"coupon","type":["null","string"],"default":null}]}`
	produce := func(text string, rec map[string]any) []byte {
		t.Helper()
		ss, err := cl.CreateSchema(ctx, "orders-value", sr.Schema{Schema: text})
		if err != nil {
			t.Fatal(err)
		}
		body, err := avro.Marshal(avro.MustParse(text), rec)
		if err != nil {
			t.Fatal(err)
		}
		framed := binary.BigEndian.AppendUint32([]byte{0}, uint32(ss.ID))
		return append(framed, body...)
	}
	placed := time.UnixMilli(1700000000000).UTC()
	old := produce(v1, map[string]any{"qty": 3, "customer": "ann", "note": "gift", "placed": placed})
	cur := produce(v2, map[string]any{"qty": 4, "customer": "bob", "note": nil, "placed": placed, "coupon": "X1"})

	cols := []catalog.Column{col("CUSTOMER", catalog.Varchar), col("qty", catalog.BigInt), col("placed", catalog.Timestamp), col("coupon", catalog.Varchar), col("missing", catalog.Double)}
	read := func(b []byte) []any {
		t.Helper()
		id, err := AvroSchemaID(b)
		if err != nil {
			t.Fatal(err)
		}
		ws, err := cl.SchemaByID(ctx, int(id))
		if err != nil {
			t.Fatal(err)
		}
		out := make([]any, len(cols))
		if err := DecodeAvro(out, nil, cols, avro.MustParse(ws.Schema), b); err != nil {
			t.Fatal(err)
		}
		return out
	}
	if got, want := read(old), []any{"ann", int64(3), placed, nil, nil}; !sameAvro(got, want) {
		t.Errorf("v1 record: %#v, want %#v", got, want)
	}
	if got, want := read(cur), []any{"bob", int64(4), placed, "X1", nil}; !sameAvro(got, want) {
		t.Errorf("v2 record: %#v, want %#v", got, want)
	}
}

func TestAvroErrors(t *testing.T) {
	schema := avro.MustParse(`{"type":"record","name":"R","fields":[{"name":"n","type":"long"}]}`)
	cols := []catalog.Column{col("n", catalog.Int)}
	dst := make([]any, 1)
	for _, tc := range []struct {
		in   []byte
		code pgerr.Code
		msg  string
	}{
		{[]byte(`{"n":1}`), pgerr.InvalidTextRepresentation, "not in the schema registry's wire format"},
		{[]byte{0, 0, 0, 0, 1}, pgerr.InvalidTextRepresentation, "does not decode by its writer schema"},
		{[]byte{0, 0, 0, 0, 1, 0xfe, 0xff, 0xff, 0xff, 0x1f}, pgerr.InvalidTextRepresentation, `field "n"`}, // beyond INTEGER
	} {
		checkErr(t, DecodeAvro(dst, nil, cols, schema, tc.in), tc.code, tc.msg)
	}
}

// FuzzDecodeAvro: any bytes decode or fail with a SQLSTATE.
func FuzzDecodeAvro(f *testing.F) {
	text, err := AvroSchema("R", avroCols)
	if err != nil {
		f.Fatal(err)
	}
	schema := avro.MustParse(text)
	enc, err := AppendAvro(nil, schema, 1, avroCols, make([]any, len(avroCols)))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(enc)
	f.Add([]byte{0, 0, 0, 0, 1, 2, 0x06, 'a', 'b', 'c'})
	f.Fuzz(func(t *testing.T, b []byte) {
		dst := make([]any, len(avroCols))
		if err := DecodeAvro(dst, nil, avroCols, schema, b); err != nil {
			if _, ok := pgerr.As(err); !ok {
				t.Fatalf("error without a SQLSTATE: %v", err)
			}
		}
	})
}

// TestAvroColumnsNested infers STRUCT, MAP and array columns from a
// registry's schema and reads a record of it through a Codec.
func TestAvroColumnsNested(t *testing.T) {
	text := `{"type":"record","name":"Order","fields":[
		{"name":"id","type":"long"},
		{"name":"customer","type":{"type":"record","name":"Customer","fields":[
			{"name":"name","type":"string"},
			{"name":"address","type":["null",{"type":"record","name":"Address","fields":[{"name":"city","type":"string"}]}],"default":null}]}},
		{"name":"lines","type":{"type":"array","items":{"type":"record","name":"Line","fields":[{"name":"sku","type":"string"},{"name":"qty","type":"int"}]}}},
		{"name":"attrs","type":{"type":"map","values":"long"}},
		{"name":"next","type":["null","Order"],"default":null}]}`
	schema := avro.MustParse(text)
	cols, err := AvroColumns(schema)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range cols {
		got = append(got, c.Name+" "+c.Type.String())
	}
	// A recursive record nests deeper than types may: JSONB.
	want := "id BIGINT; customer STRUCT<name VARCHAR, address STRUCT<city VARCHAR>>; lines ARRAY<STRUCT<sku VARCHAR, qty INTEGER>>; attrs MAP<VARCHAR, BIGINT>; next JSONB"
	if g := strings.Join(got, "; "); g != want {
		t.Fatalf("columns %s\nwant    %s", g, want)
	}
	body, err := avro.Marshal(schema, map[string]any{
		"id":       int64(1),
		"customer": map[string]any{"name": "ann", "address": map[string]any{"Address": map[string]any{"city": "Oslo"}}},
		"lines":    []any{map[string]any{"sku": "a", "qty": 2}},
		"attrs":    map[string]any{"x": int64(5)},
		"next":     nil,
	})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]any, len(cols))
	if err := DecodeAvro(out, nil, cols, schema, append([]byte{0, 0, 0, 0, 1}, body...)); err != nil {
		t.Fatal(err)
	}
	if s := fmt.Sprint(out); s != "[1 [ann [Oslo]] [[a 2]] [{x 5}] <nil>]" {
		t.Errorf("decoded %s", s)
	}
}

// registryClient starts an in-process schema registry for the test and
// returns a client of it, and a context that ends with the test (or
// after 30 s).
func registryClient(t *testing.T) (context.Context, *sr.Client) {
	t.Helper()
	reg, err := srfake.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	cl, err := sr.NewClient(sr.URLs(reg.URL()))
	if err != nil {
		t.Fatal(err)
	}
	return ctx, cl
}
