package serde

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/bufbuild/protocompile"
	"github.com/cockroachdb/apd/v3"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
)

// protoCols are avroCols and arrays of the types that are messages in
// Protobuf.
var protoCols = append(append([]catalog.Column{}, avroCols...),
	col("counts", catalog.ArrayOf(catalog.Int)), catalog.Column{Name: "prices", Type: catalog.ArrayOf(catalog.Decimal), Precision: 6, Scale: 2},
	col("stamps", catalog.ArrayOf(catalog.Timestamp)), col("days", catalog.ArrayOf(catalog.Date)),
	col("blobs", catalog.ArrayOf(catalog.Bytea)))

// protoVals are values of protoCols.
func protoVals(t testing.TB) []any {
	dec := func(t testing.TB, s string) *apd.Decimal {
		d, ok := catalog.NewDecimal(s)
		if !ok {
			t.Fatalf("%s is not a numeric", s)
		}
		return d
	}
	return []any{"x", int64(-3), int64(9007199254740993), 1.25, true, time.UnixMicro(1700000000123456).UTC(),
		catalog.DateVal(19724), catalog.TimeOfDay(13*3600e6 + 5e6 + 7), dec(t, "12.50"), dec(t, "-0.000123"),
		catalog.UUIDVal{1, 2, 3, 15: 0xff}, []byte{0, 1, 0xff}, catalog.JSONText(`{"a": [1, 2]}`),
		[]any{"a", ""}, time.UnixMilli(-1).UTC(),
		[]any{int64(1), int64(-2)}, []any{dec(t, "-1.00"), dec(t, "1234.56")},
		[]any{time.UnixMilli(0).UTC()}, []any{catalog.DateVal(-1), catalog.DateVal(0)}, []any{[]byte{}, []byte("z")}}
}

func TestProtobufSchema(t *testing.T) {
	cols := []catalog.Column{col("ID", catalog.BigInt), {Name: "PRICE", Type: catalog.Decimal, Precision: 10, Scale: 2},
		col("AT", catalog.Timestamp), col("TAGS", catalog.ArrayOf(catalog.Varchar))}
	got, err := ProtobufSchema("io.confluent.ksql.avro_schemas.KsqlDataSourceSchema", cols)
	if err != nil {
		t.Fatal(err)
	}
	want := `syntax = "proto3";

package io.confluent.ksql.avro_schemas;

import "confluent/meta.proto";
import "confluent/type/decimal.proto";
import "google/protobuf/timestamp.proto";

message KsqlDataSourceSchema {
  optional int64 ID = 1;
  .confluent.type.Decimal PRICE = 2 [(.confluent.field_meta) = { params: [{ key: "precision", value: "10" }, { key: "scale", value: "2" }] }];
  .google.protobuf.Timestamp AT = 3;
  repeated string TAGS = 4;
}
`
	if got != want {
		t.Fatalf("schema:\n%s\nwant:\n%s", got, want)
	}
	if got, _ := ProtobufSchema("Row", cols[:1]); got != "syntax = \"proto3\";\n\nmessage Row {\n  optional int64 ID = 1;\n}\n" {
		t.Fatalf("without a package:\n%s", got)
	}
	// Every type compiles, and the precision is where ksqlDB reads it.
	text, err := ProtobufSchema("basin.R", protoCols)
	if err != nil {
		t.Fatal(err)
	}
	fd, err := ParseProtobufSchema(text)
	if err != nil {
		t.Fatalf("%s: %v", text, err)
	}
	if md := fd.Messages().Get(0); md.FullName() != "basin.R" || md.Fields().Len() != len(protoCols) {
		t.Fatalf("message %s of %d fields", md.FullName(), md.Fields().Len())
	}
	if !strings.Contains(text, `repeated .confluent.type.Decimal prices = 17 [(.confluent.field_meta)`) {
		t.Errorf("NUMERIC(6,2)[] field:\n%s", text)
	}

	for _, tc := range []struct {
		name string
		cols []catalog.Column
		code pgerr.Code
	}{
		{"R", []catalog.Column{col("span", catalog.Interval)}, pgerr.FeatureNotSupported},
		{"R", []catalog.Column{col("a b", catalog.Int)}, pgerr.InvalidName},
		{"1R", nil, pgerr.InvalidName},
		{"a..R", nil, pgerr.InvalidName},
	} {
		if _, err := ProtobufSchema(tc.name, tc.cols); pgerr.CodeOf(err) != tc.code {
			t.Errorf("%s %v: %v, want %s", tc.name, tc.cols, err, tc.code)
		}
	}
}

func TestProtobufRoundTrip(t *testing.T) {
	md, err := ProtobufDescriptor("io.confluent.ksql.avro_schemas.KsqlDataSourceSchema", protoCols)
	if err != nil {
		t.Fatal(err)
	}
	vals := protoVals(t)
	enc, err := AppendProtobuf(nil, md, 7, protoCols, vals)
	if err != nil {
		t.Fatal(err)
	}
	// The framing, as another implementation reads it: id 7, the first
	// message's shorthand index.
	var h sr.ConfluentHeader
	id, rest, err := h.DecodeID(enc)
	if err != nil || id != 7 {
		t.Fatalf("schema id %d, %v", id, err)
	}
	if index, _, err := h.DecodeIndex(rest, 0); err != nil || len(index) != 1 || index[0] != 0 || rest[0] != 0 {
		t.Fatalf("index %v, %v (% x)", index, err, rest[:1])
	}
	got := make([]any, len(protoCols))
	if err := DecodeProtobuf(got, nil, protoCols, md.ParentFile(), enc); err != nil {
		t.Fatal(err)
	}
	if !sameAvro(got, vals) {
		t.Fatalf("decoded %#v\nwant %#v", got, vals)
	}

	// PROTOBUF_NOSR is the message alone: the same bytes after the
	// framing.
	bare, err := AppendProtobufNoSR(nil, md, protoCols, vals)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(bare, enc[6:]) {
		t.Fatalf("NOSR value % x, want % x", bare, enc[6:])
	}
	if err := DecodeProtobufNoSR(got, nil, protoCols, md, bare); err != nil || !sameAvro(got, vals) {
		t.Fatalf("NOSR decoded %#v, %v", got, err)
	}

	// NULLs: absent fields. A NULL array is written as no elements,
	// which read back as an empty array.
	nulls := make([]any, len(protoCols))
	enc, err = AppendProtobuf(nil, md, 7, protoCols, nulls)
	if err != nil {
		t.Fatal(err)
	}
	if len(enc) != 6 {
		t.Errorf("all NULLs: % x, want the framing alone", enc)
	}
	want := make([]any, len(protoCols))
	for i, c := range protoCols {
		if c.Type.IsArray() {
			want[i] = []any{}
		}
	}
	if err := DecodeProtobuf(got, nil, protoCols, md.ParentFile(), enc); err != nil || !sameAvro(got, want) {
		t.Fatalf("NULLs decode to %#v, %v", got, err)
	}

	// Zero values are not NULLs.
	zeros := []any{"", int64(0), int64(0), 0.0, false, time.Unix(0, 0).UTC(), catalog.DateVal(0), catalog.TimeOfDay(0),
		dec(t, "0.00"), dec(t, "0"), catalog.UUIDVal{}, []byte{}, catalog.JSONText(`0`), []any{}, time.Unix(0, 0).UTC(),
		[]any{}, []any{}, []any{}, []any{}, []any{}}
	enc, err = AppendProtobuf(nil, md, 7, protoCols, zeros)
	if err != nil {
		t.Fatal(err)
	}
	if err := DecodeProtobuf(got, nil, protoCols, md.ParentFile(), enc); err != nil || !sameAvro(got, zeros) {
		t.Fatalf("zeros decode to %#v, %v", got, err)
	}

	// A row's value columns, in place (idx).
	row := make([]any, 3)
	cols := []catalog.Column{col("qty", catalog.Int), col("name", catalog.Varchar)}
	enc, _ = AppendProtobuf(nil, md, 7, protoCols, vals)
	if err := DecodeProtobuf(row, []int{2, 0}, cols, md.ParentFile(), enc); err != nil || row[2] != int64(-3) || row[0] != "x" || row[1] != nil {
		t.Fatalf("row %#v, %v", row, err)
	}
}

// anotherProducer is a schema another client registered, unlike what
// ProtobufSchema writes: a message before the one the records are of,
// fields in another order and numbering, a field no column has, a
// nested message, a map, an enum, a Timestamp and a wrapper.
const anotherProducer = `syntax = "proto3";
package shop.v1;

import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";

message Envelope {
  string trace = 1;
}

message Order {
  message Line {
    string sku = 1;
    int32 qty = 2;
  }
  enum Status {
    NEW = 0;
    PAID = 1;
  }
  google.protobuf.Timestamp placed = 7;
  int32 qty = 3;
  string customer = 1;
  google.protobuf.StringValue note = 9;
  repeated Line lines = 4;
  map<string, int64> attrs = 5;
  Status status = 6;
  bytes ignored = 12;
  google.protobuf.Int32Value score = 13;
}
`

// orderV2 is anotherProducer evolved: a new optional field.
var orderV2 = strings.Replace(anotherProducer, "bytes ignored = 12;", "bytes ignored = 12;\n  optional string coupon = 14;", 1)

// compileProto compiles a schema as another client would, with
// protocompile alone (not ParseProtobufSchema).
func compileProto(t testing.TB, text string) protoreflect.FileDescriptor {
	t.Helper()
	c := protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
		Accessor: func(path string) (io.ReadCloser, error) {
			if path != "order.proto" {
				return nil, fs.ErrNotExist
			}
			return io.NopCloser(strings.NewReader(text)), nil
		},
	})}
	files, err := c.Compile(context.Background(), "order.proto")
	if err != nil {
		t.Fatal(err)
	}
	return files[0]
}

// setFields sets fields of m by name: a value for a scalar, a func for
// anything else.
func setFields(t testing.TB, m *dynamicpb.Message, fields map[string]any) {
	t.Helper()
	for name, v := range fields {
		fd := m.Descriptor().Fields().ByName(protoreflect.Name(name))
		if fd == nil {
			t.Fatalf("no field %s", name)
		}
		if f, ok := v.(func(*dynamicpb.Message, protoreflect.FieldDescriptor)); ok {
			f(m, fd)
			continue
		}
		m.Set(fd, protoreflect.ValueOf(v))
	}
}

// subMessage sets a message field's fields.
func subMessage(t testing.TB, fields map[string]any) func(*dynamicpb.Message, protoreflect.FieldDescriptor) {
	return func(m *dynamicpb.Message, fd protoreflect.FieldDescriptor) {
		sub := dynamicpb.NewMessage(fd.Message())
		setFields(t, sub, fields)
		m.Set(fd, protoreflect.ValueOfMessage(sub))
	}
}

// TestProtobufFromAnotherProducer reads records another producer wrote:
// messages built with the reference library from its own schema,
// registered in a schema registry and framed by franz-go's
// implementation of the wire format; the reader fetches the writer's
// schema by the id in the record and reads the message its indexes
// name. A schema evolved with a new field reads old records with the new
// column NULL, and each version reads its own records.
func TestProtobufFromAnotherProducer(t *testing.T) {
	ctx, cl := registryClient(t)
	var h sr.ConfluentHeader
	produce := func(text string, index []int, fields map[string]any) []byte {
		t.Helper()
		ss, err := cl.CreateSchema(ctx, "orders-value", sr.Schema{Schema: text, Type: sr.TypeProtobuf})
		if err != nil {
			t.Fatal(err)
		}
		md := compileProto(t, text).Messages().Get(index[0])
		for _, i := range index[1:] {
			md = md.Messages().Get(i)
		}
		m := dynamicpb.NewMessage(md)
		setFields(t, m, fields)
		body, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		b, err := h.AppendEncode(nil, ss.ID, index)
		if err != nil {
			t.Fatal(err)
		}
		return append(b, body...)
	}
	placed := time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.UTC)
	order := map[string]any{
		"customer": "ann", "qty": int32(3), "status": protoreflect.EnumNumber(1), "ignored": []byte{1},
		"placed": subMessage(t, map[string]any{"seconds": placed.Unix(), "nanos": int32(placed.Nanosecond())}),
		"note":   subMessage(t, map[string]any{"value": "gift"}),
		"score":  subMessage(t, map[string]any{}), // a wrapper present with its zero value
		"lines": func(m *dynamicpb.Message, fd protoreflect.FieldDescriptor) {
			l := m.Mutable(fd).List()
			for _, sku := range []string{"a", "b"} {
				e := l.NewElement()
				setFields(t, e.Message().(*dynamicpb.Message), map[string]any{"sku": sku, "qty": int32(2)})
				l.Append(e)
			}
		},
		"attrs": func(m *dynamicpb.Message, fd protoreflect.FieldDescriptor) {
			m.Mutable(fd).Map().Set(protoreflect.ValueOfString("k").MapKey(), protoreflect.ValueOfInt64(5))
		},
	}
	old := produce(anotherProducer, []int{1}, order)
	order["customer"], order["note"], order["coupon"] = "bob", nil, "X1"
	delete(order, "note")
	cur := produce(orderV2, []int{1}, order)
	line := produce(orderV2, []int{1, 0}, map[string]any{"sku": "c", "qty": int32(-1)})

	cols := []catalog.Column{col("CUSTOMER", catalog.Varchar), col("qty", catalog.BigInt), col("placed", catalog.Timestamp),
		col("note", catalog.Varchar), col("status", catalog.Varchar), col("lines", catalog.JSONB), col("attrs", catalog.JSON),
		col("score", catalog.Int), col("coupon", catalog.Varchar), col("missing", catalog.Double)}
	schemas := map[uint32]protoreflect.FileDescriptor{}
	read := func(b []byte, cols []catalog.Column) []any {
		t.Helper()
		id, err := SchemaID(b)
		if err != nil {
			t.Fatal(err)
		}
		fd, ok := schemas[id]
		if !ok {
			ws, err := cl.SchemaByID(ctx, int(id))
			if err != nil {
				t.Fatal(err)
			}
			if fd, err = ParseProtobufSchema(ws.Schema); err != nil {
				t.Fatal(err)
			}
			schemas[id] = fd
		}
		out := make([]any, len(cols))
		if err := DecodeProtobuf(out, nil, cols, fd, b); err != nil {
			t.Fatal(err)
		}
		return out
	}
	ts := placed.Truncate(time.Microsecond)
	lines, attrs := catalog.JSONText(`[{"qty": 2, "sku": "a"}, {"qty": 2, "sku": "b"}]`), catalog.JSONText(`{"k":5}`)
	if got, want := read(old, cols), []any{"ann", int64(3), ts, "gift", "PAID", lines, attrs, int64(0), nil, nil}; !sameAvro(got, want) {
		t.Errorf("v1 record:\n%#v\nwant %#v", got, want)
	}
	if got, want := read(cur, cols), []any{"bob", int64(3), ts, nil, "PAID", lines, attrs, int64(0), "X1", nil}; !sameAvro(got, want) {
		t.Errorf("v2 record:\n%#v\nwant %#v", got, want)
	}
	lineCols := []catalog.Column{col("SKU", catalog.Varchar), col("QTY", catalog.Int)}
	if got, want := read(line, lineCols), []any{"c", int64(-1)}; !sameAvro(got, want) {
		t.Errorf("nested message record: %#v, want %#v", got, want)
	}

	// The v1 record read by v2's schema: the new optional field unset.
	v2, ok := schemas[uint32(binaryID(cur))]
	if !ok {
		t.Fatal("no v2 schema")
	}
	out := make([]any, len(cols))
	if err := DecodeProtobuf(out, nil, cols, v2, old); err != nil || out[8] != nil || out[0] != "ann" {
		t.Errorf("v1 record by v2's schema: %#v, %v", out, err)
	}

	// basin writing with the producer's schema: the indexes of a message
	// after the first, read back by franz-go's decoder.
	md := v2.Messages().Get(1)
	enc, err := AppendProtobuf(nil, md, 9, []catalog.Column{col("customer", catalog.Varchar), col("COUPON", catalog.Varchar)}, []any{"cy", nil})
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := h.DecodeID(enc)
	if index, _, err := h.DecodeIndex(rest, 0); err != nil || len(index) != 1 || index[0] != 1 {
		t.Fatalf("index %v, %v", index, err)
	}
	enc, err = AppendProtobuf(nil, md.Messages().Get(0), 9, lineCols, []any{"s", int64(4)})
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ = h.DecodeID(enc)
	if index, _, err := h.DecodeIndex(rest, 0); err != nil || len(index) != 2 || index[0] != 1 || index[1] != 0 {
		t.Fatalf("nested index %v, %v", index, err)
	}
	if err := DecodeProtobuf(out[:2], nil, lineCols, v2, enc); err != nil || out[0] != "s" || out[1] != int64(4) {
		t.Fatalf("nested message written: %#v, %v", out[:2], err)
	}
}

func binaryID(b []byte) uint32 {
	id, _ := SchemaID(b)
	return id
}

// TestProtobufKsqlTypes reads the messages ksqlDB writes for types
// Protobuf lacks, as another client builds them.
func TestProtobufKsqlTypes(t *testing.T) {
	fd, err := ParseProtobufSchema(`syntax = "proto3";
import "confluent/meta.proto";
import "confluent/type/decimal.proto";
import "google/type/date.proto";
import "google/type/timeofday.proto";
import "google/protobuf/wrappers.proto";
message R {
  confluent.type.Decimal d = 1 [(confluent.field_meta) = { params: [{ key: "precision", value: "5" }, { key: "scale", value: "1" }] }];
  google.type.Date day = 2;
  google.type.TimeOfDay at = 3;
  google.protobuf.DoubleValue x = 4;
  google.protobuf.Int64Value n = 5;
  uint64 big = 6;
}`)
	if err != nil {
		t.Fatal(err)
	}
	md := fd.Messages().Get(0)
	cols := []catalog.Column{{Name: "d", Type: catalog.Decimal, Precision: 5, Scale: 2}, col("day", catalog.Date),
		col("at", catalog.Time), col("x", catalog.Double), col("n", catalog.BigInt), col("big", catalog.Decimal)}
	m := dynamicpb.NewMessage(md)
	setFields(t, m, map[string]any{
		"d":   subMessage(t, map[string]any{"value": []byte{0xfe, 0x0c}, "scale": int32(1)}), // -500 × 10^-1
		"day": subMessage(t, map[string]any{"year": int32(2024), "month": int32(2), "day": int32(29)}),
		"at":  subMessage(t, map[string]any{"hours": int32(23), "minutes": int32(59), "seconds": int32(58), "nanos": int32(1500)}),
		"x":   subMessage(t, map[string]any{"value": 0.5}),
		"big": uint64(1 << 63),
	})
	body, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]any, len(cols))
	if err := DecodeProtobufNoSR(got, nil, cols, md, body); err != nil {
		t.Fatal(err)
	}
	want := []any{dec(t, "-50.00"), catalog.DateVal(19782), catalog.TimeOfDay((23*3600+59*60+58)*1e6 + 1), 0.5, nil, dec(t, "9223372036854775808")}
	if !sameAvro(got, want) {
		t.Fatalf("decoded %#v\nwant %#v", got, want)
	}
}

func TestProtobufErrors(t *testing.T) {
	md, err := ProtobufDescriptor("R", []catalog.Column{col("n", catalog.BigInt), col("s", catalog.Varchar), col("d", catalog.Date)})
	if err != nil {
		t.Fatal(err)
	}
	fd := md.ParentFile()
	cols := []catalog.Column{col("n", catalog.Int), col("s", catalog.Varchar), col("d", catalog.Date)}
	dst := make([]any, len(cols))
	for _, tc := range []struct {
		in   []byte
		code pgerr.Code
		msg  string
	}{
		{[]byte(`{"n":1}`), pgerr.InvalidTextRepresentation, "not in the schema registry's wire format"},
		{[]byte{0, 0, 0, 0, 1}, pgerr.InvalidTextRepresentation, "message indexes are cut short"},
		{[]byte{0, 0, 0, 0, 1, 0x80}, pgerr.InvalidTextRepresentation, "message indexes are cut short"},
		{[]byte{0, 0, 0, 0, 1, 1}, pgerr.InvalidTextRepresentation, "message indexes have a count of -1"},
		{[]byte{0, 0, 0, 0, 1, 2, 2}, pgerr.InvalidTextRepresentation, "[1] name no message of schema"},
		{[]byte{0, 0, 0, 0, 1, 4, 0, 0}, pgerr.InvalidTextRepresentation, "[0 0] name no message"},
		{[]byte{0, 0, 0, 0, 1, 0, 0x08}, pgerr.InvalidTextRepresentation, "does not decode as message R"},
		{[]byte{0, 0, 0, 0, 1, 0, 0x12, 0x01, 0xff}, pgerr.InvalidTextRepresentation, "does not decode as message R"}, // not UTF-8
		{[]byte{0, 0, 0, 0, 1, 0, 0x08, 0x80, 0x80, 0x80, 0x80, 0x10}, pgerr.InvalidTextRepresentation, `field "n"`},  // beyond INTEGER
		{[]byte{0, 0, 0, 0, 1, 0, 0x1a, 0x02, 0x10, 0x0d}, pgerr.DatetimeFieldOverflow, `field "d": google.type.Date 0-13-0`},
	} {
		checkErr(t, DecodeProtobuf(dst, nil, cols, fd, tc.in), tc.code, tc.msg)
	}

	// Writing.
	arr, err := ProtobufDescriptor("R", []catalog.Column{col("a", catalog.ArrayOf(catalog.BigInt)), col("p", catalog.Decimal), col("d", catalog.Date)})
	if err != nil {
		t.Fatal(err)
	}
	acols := []catalog.Column{col("a", catalog.ArrayOf(catalog.BigInt)), col("p", catalog.Decimal), col("d", catalog.Date)}
	for _, tc := range []struct {
		vals []any
		code pgerr.Code
		msg  string
	}{
		{[]any{[]any{int64(1), nil}, nil, nil}, pgerr.NullValueNotAllowedDataException, `column "a": element 2 of the array is NULL`},
		{[]any{nil, dec(t, "NaN"), nil}, pgerr.InvalidParameterValue, `column "p": NaN cannot be written as a Protobuf decimal`},
		{[]any{nil, nil, catalog.DateVal(-800000)}, pgerr.DatetimeFieldOverflow, `column "d"`},
		{[]any{nil, "1", nil}, pgerr.DatatypeMismatch, `column "p" of type NUMERIC cannot be written`},
	} {
		_, err := AppendProtobuf(nil, arr, 1, acols, tc.vals)
		checkErr(t, err, tc.code, tc.msg)
	}
	_, err = AppendProtobuf(nil, arr, 1, []catalog.Column{col("zz", catalog.Int)}, []any{nil})
	checkErr(t, err, pgerr.DatatypeMismatch, `message R has no field for column "zz"`)

	// Schemas.
	_, err = ParseProtobufSchema(`syntax = "proto3"; import "other.proto"; message M { int32 a = 1; }`)
	checkErr(t, err, pgerr.InvalidParameterValue, "schema references are not supported")
	_, err = ParseProtobufSchema(`message {`)
	checkErr(t, err, pgerr.InvalidParameterValue, "Protobuf schema does not compile")
}

// FuzzDecodeProtobuf: any bytes decode or fail with a SQLSTATE, by
// basin's schema and by another producer's (wrappers, maps, enums,
// nested messages into columns of other types), and what decodes by
// basin's schema encodes to a value that decodes to the same values.
func FuzzDecodeProtobuf(f *testing.F) {
	md, err := ProtobufDescriptor("R", protoCols)
	if err != nil {
		f.Fatal(err)
	}
	other, err := ParseProtobufSchema(orderV2)
	if err != nil {
		f.Fatal(err)
	}
	otherCols := []catalog.Column{col("customer", catalog.Int), col("qty", catalog.Varchar), col("placed", catalog.Date),
		col("note", catalog.Varchar), col("status", catalog.BigInt), col("lines", catalog.JSONB), col("attrs", catalog.Varchar),
		col("score", catalog.Double), col("sku", catalog.Bytea)}
	for _, vals := range [][]any{protoVals(f), make([]any, len(protoCols))} {
		enc, err := AppendProtobuf(nil, md, 1, protoCols, vals)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(enc)
	}
	m := dynamicpb.NewMessage(other.Messages().Get(1))
	setFields(f, m, map[string]any{"customer": "12", "qty": int32(3), "status": protoreflect.EnumNumber(1),
		"note": subMessage(f, map[string]any{"value": "n"}), "score": subMessage(f, map[string]any{"value": int32(2)}),
		"placed": subMessage(f, map[string]any{"seconds": int64(86400)})})
	body, err := proto.Marshal(m)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(append([]byte{0, 0, 0, 0, 2, 2, 2}, body...))
	f.Add([]byte{0, 0, 0, 0, 2, 4, 2, 0, 0x0a, 0x01, 'x'})
	f.Fuzz(func(t *testing.T, b []byte) {
		dst := make([]any, len(protoCols))
		err := DecodeProtobuf(dst, nil, protoCols, md.ParentFile(), b)
		if err != nil {
			if _, ok := pgerr.As(err); !ok {
				t.Fatalf("error without a SQLSTATE: %v", err)
			}
		} else {
			enc, err := AppendProtobuf(nil, md, 1, protoCols, dst)
			if err != nil {
				t.Fatalf("decoded %#v, which does not encode: %v", dst, err)
			}
			again := make([]any, len(protoCols))
			if err := DecodeProtobuf(again, nil, protoCols, md.ParentFile(), enc); err != nil || !sameAvro(again, dst) {
				t.Fatalf("decoded %#v, which encodes to a value that decodes to %#v, %v", dst, again, err)
			}
		}
		odst := make([]any, len(otherCols))
		if err := DecodeProtobuf(odst, nil, otherCols, other, b); err != nil {
			if _, ok := pgerr.As(err); !ok {
				t.Fatalf("error without a SQLSTATE: %v", err)
			}
		}
	})
}

// TestProtobufColumnsNested infers STRUCT, MAP and array columns from a
// schema's messages and reads a message of it into them.
func TestProtobufColumnsNested(t *testing.T) {
	fd := compileProto(t, `syntax = "proto3";
import "google/protobuf/timestamp.proto";
message Order {
  message Line { string sku = 1; int32 qty = 2; }
  message Customer { string name = 1; optional Address address = 2; }
  message Address { string city = 1; google.protobuf.Timestamp since = 2; }
  int64 id = 1;
  Customer customer = 2;
  repeated Line lines = 3;
  map<string, int64> attrs = 4;
  map<int32, string> by_number = 5;
}`)
	md := fd.Messages().Get(0)
	cols, err := ProtobufColumns(md)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range cols {
		got = append(got, c.Name+" "+c.Type.String())
	}
	want := "id BIGINT; customer STRUCT<name VARCHAR, address STRUCT<city VARCHAR, since TIMESTAMP>>; lines ARRAY<STRUCT<sku VARCHAR, qty INTEGER>>; attrs MAP<VARCHAR, BIGINT>; by_number JSONB"
	if g := strings.Join(got, "; "); g != want {
		t.Fatalf("columns %s\nwant    %s", g, want)
	}
	m := dynamicpb.NewMessage(md)
	setFields(t, m, map[string]any{
		"id": int64(1),
		"customer": subMessage(t, map[string]any{"name": "ann", "address": subMessage(t, map[string]any{"city": "Oslo",
			"since": subMessage(t, map[string]any{"seconds": int64(1700000000)})})}),
		"lines": func(m *dynamicpb.Message, fd protoreflect.FieldDescriptor) {
			l := m.Mutable(fd).List()
			line := dynamicpb.NewMessage(fd.Message())
			setFields(t, line, map[string]any{"sku": "a", "qty": int32(2)})
			l.Append(protoreflect.ValueOfMessage(line))
		},
		"attrs": func(m *dynamicpb.Message, fd protoreflect.FieldDescriptor) {
			m.Mutable(fd).Map().Set(protoreflect.ValueOfString("x").MapKey(), protoreflect.ValueOfInt64(5))
		},
	})
	body, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]any, len(cols))
	if err := DecodeProtobuf(out, nil, cols, fd, append([]byte{0, 0, 0, 0, 1, 0}, body...)); err != nil {
		t.Fatal(err)
	}
	if s := fmt.Sprint(out); s != "[1 [ann [Oslo 2023-11-14 22:13:20 +0000 UTC]] [[a 2]] [{x 5}] {}]" {
		t.Errorf("decoded %s", s)
	}
}

// TestProtobufNestedRoundTrip writes STRUCT, MAP and arrays of STRUCT
// columns as Protobuf messages and maps, and reads them back.
func TestProtobufNestedRoundTrip(t *testing.T) {
	addr, err := catalog.StructOf([]catalog.Field{{Name: "city", Type: catalog.Varchar}, {Name: "since", Type: catalog.Timestamp}})
	if err != nil {
		t.Fatal(err)
	}
	cust, err := catalog.StructOf([]catalog.Field{{Name: "name", Type: catalog.Varchar}, {Name: "address", Type: addr}, {Name: "tags", Type: catalog.ArrayOf(catalog.Varchar)}})
	if err != nil {
		t.Fatal(err)
	}
	attrs, err := catalog.MapOf(catalog.Varchar, catalog.BigInt)
	if err != nil {
		t.Fatal(err)
	}
	cols := []catalog.Column{col("id", catalog.BigInt), col("customer", cust), col("lines", catalog.ArrayOf(addr)), col("attrs", attrs)}
	text, err := ProtobufSchema("shop.Order", cols)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, "message Customer {") || !strings.Contains(text, "optional CustomerAddress address = 2;") || !strings.Contains(text, "map<string, int64> attrs = 4;") {
		t.Errorf("schema:\n%s", text)
	}
	md, err := ProtobufDescriptor("shop.Order", cols)
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	since := time.UnixMilli(1700000000000).UTC()
	row := []any{int64(1), catalog.Struct{"ann", catalog.Struct{"Oslo", since}, []any{"a", "b"}},
		[]any{catalog.Struct{"Rome", nil}}, catalog.NewMap([]catalog.MapEntry{{Key: "x", Value: int64(5)}})}
	b, err := AppendProtobufNoSR(nil, md, cols, row)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]any, len(cols))
	if err := DecodeProtobufNoSR(out, nil, cols, md, b); err != nil {
		t.Fatal(err)
	}
	if g, w := fmt.Sprint(out), fmt.Sprint(row); g != w {
		t.Errorf("read back %s, wrote %s", g, w)
	}
	if _, err := AppendProtobufNoSR(nil, md, cols, []any{int64(1), nil, nil, catalog.NewMap([]catalog.MapEntry{{Key: "y"}})}); pgerr.CodeOf(err) != pgerr.NullValueNotAllowedDataException {
		t.Errorf("a NULL map value: %v", err)
	}
}
