package serde

import (
	"testing"
	"time"

	"github.com/hamba/avro/v2"

	"github.com/basindb/basin/catalog"
)

// BenchmarkDecodeJSONRecord decodes a typical input record's JSON value
// into the orders value columns (with SetBytes and allocations, which
// BenchmarkDecodeJSONValue does not report).
func BenchmarkDecodeJSONRecord(b *testing.B) {
	vcols := []catalog.Column{
		{Name: "region", Type: catalog.Varchar},
		{Name: "amount", Type: catalog.Double},
		{Name: "qty", Type: catalog.BigInt},
		{Name: "ts", Type: catalog.Timestamp},
	}
	in := []byte(`{"region":"eu-west","amount":75.5,"qty":3,"ts":1704164645678,"note":"gift wrap"}`)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeJSONValue(vcols, in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodeKafkaKey encodes a BIGINT record key in the kafka
// format, as every produced record does.
func BenchmarkEncodeKafkaKey(b *testing.B) {
	types := []catalog.Type{catalog.BigInt}
	names := []string{"id"}
	vals := []any{int64(123456789)}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := EncodeKey("kafka", types, names, vals); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeAvroRecord decodes BenchmarkDecodeJSONRecord's record
// written in Avro by its writer schema, as a task does.
func BenchmarkDecodeAvroRecord(b *testing.B) {
	vcols := []catalog.Column{
		{Name: "region", Type: catalog.Varchar},
		{Name: "amount", Type: catalog.Double},
		{Name: "qty", Type: catalog.BigInt},
		{Name: "ts", Type: catalog.Timestamp},
	}
	writer := avro.MustParse(`{"type":"record","name":"O","fields":[{"name":"region","type":"string"},{"name":"amount","type":"double"},
		{"name":"qty","type":"long"},{"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},{"name":"note","type":"string"}]}`)
	body, err := avro.Marshal(writer, map[string]any{"region": "eu-west", "amount": 75.5, "qty": int64(3), "ts": time.UnixMilli(1704164645678), "note": "gift wrap"})
	if err != nil {
		b.Fatal(err)
	}
	in := append([]byte{0, 0, 0, 0, 1}, body...)
	dst := make([]any, len(vcols))
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if err := DecodeAvro(dst, nil, vcols, writer, in); err != nil {
			b.Fatal(err)
		}
	}
}
