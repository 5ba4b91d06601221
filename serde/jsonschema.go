package serde

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
)

// JSON_SR: JSON values in the schema registry's wire format, a zero magic
// byte, the writer schema's id (4 bytes, big-endian), then the same JSON
// object value_format 'json' reads and writes. The schema is a JSON
// Schema the registry holds for producers and other readers; reading
// does not validate a value against it, as ksqlDB does not: the object
// is read by field name, as leniently as JSON's.
//
// The schema basin writes for columns (JSONSchema) is an object with a
// property per column, named as the column, with its column index in
// "connect.index" and a type that is null or the column's, a oneOf as
// ksqlDB writes a nullable field. The types describe the JSON basin
// writes (json.go), with Kafka Connect's annotations where ksqlDB puts
// them, so that a Connect-based reader (ksqlDB) types the columns alike:
//
//	BOOLEAN       boolean
//	INTEGER       integer, connect.type int32
//	BIGINT        integer, connect.type int64
//	DOUBLE        number, connect.type float64 (NaN and ±Infinity, which
//	              basin writes as strings, are outside the schema: JSON
//	              has no number for them)
//	VARCHAR       string
//	NUMERIC(p,s)  number, titled as Connect's Decimal with scale s and
//	              precision p in connect.parameters
//	NUMERIC       number
//	TIMESTAMP     number: epoch milliseconds (a fraction for the
//	              microseconds, so not Connect's integer Timestamp)
//	TIMESTAMPTZ   string, format date-time
//	DATE          string, format date
//	TIME          string, format time
//	INTERVAL      string, format duration (ISO 8601)
//	UUID          string, format uuid
//	BYTEA         string of base64, connect.type bytes
//	JSON, JSONB   any JSON value (the schema {}), NULL included
//	T[]           array of the element's null-or-type

// SchemaID returns the registry id of the writer schema of a value in
// the schema registry's wire format, whichever the format (Avro,
// Protobuf, JSON Schema): all three start with the same five bytes.
func SchemaID(b []byte) (uint32, error) { return AvroSchemaID(b) }

// JSONSchema returns the JSON Schema of columns cols, titled name.
func JSONSchema(name string, cols []catalog.Column) (string, error) {
	b := []byte(`{"type":"object","title":`)
	b = appendJSONString(b, name)
	b = append(b, `,"properties":{`...)
	for i, c := range cols {
		if i > 0 {
			b = append(b, ',')
		}
		t, err := jsonSchemaType(c.Type, c.Precision, c.Scale)
		if err != nil {
			return "", pgerr.New(pgerr.CodeOf(err), "column %q: %v", c.Name, err)
		}
		b = appendJSONString(b, c.Name)
		b = append(b, `:{"connect.index":`...)
		b = strconv.AppendInt(b, int64(i), 10)
		if t = nullable(t); t != "{}" {
			b = append(b, ',')
		}
		b = append(b, strings.TrimPrefix(t, "{")...)
	}
	return string(append(b, "}}"...)), nil
}

// nullable is the schema of null or a value of schema t (a JSON object).
func nullable(t string) string {
	if t == "{}" {
		return t // already takes null
	}
	return `{"oneOf":[{"type":"null"},` + t + `]}`
}

// jsonSchemaType is the JSON Schema, a JSON object, of a value of type t.
func jsonSchemaType(t catalog.Type, precision, scale int) (string, error) {
	format := func(f string) string { return `{"type":"string","format":"` + f + `"}` }
	switch t {
	case catalog.Boolean:
		return `{"type":"boolean"}`, nil
	case catalog.Int:
		return `{"type":"integer","connect.type":"int32"}`, nil
	case catalog.BigInt:
		return `{"type":"integer","connect.type":"int64"}`, nil
	case catalog.Double:
		return `{"type":"number","connect.type":"float64"}`, nil
	case catalog.Varchar:
		return `{"type":"string"}`, nil
	case catalog.Decimal:
		if precision <= 0 {
			return `{"type":"number"}`, nil
		}
		return `{"type":"number","title":"org.apache.kafka.connect.data.Decimal","connect.version":1,"connect.type":"bytes","connect.parameters":{"scale":"` +
			strconv.Itoa(scale) + `","connect.decimal.precision":"` + strconv.Itoa(precision) + `"}}`, nil
	case catalog.Timestamp:
		// Epoch milliseconds, as Kafka Connect's Timestamp (a number:
		// the microseconds are a fraction).
		return `{"type":"number","title":"org.apache.kafka.connect.data.Timestamp","connect.version":1}`, nil
	case catalog.TimestampTZ:
		return format("date-time"), nil
	case catalog.Date:
		return format("date"), nil
	case catalog.Time:
		return format("time"), nil
	case catalog.Interval:
		return format("duration"), nil
	case catalog.UUID:
		return format("uuid"), nil
	case catalog.Bytea:
		return `{"type":"string","contentEncoding":"base64","connect.type":"bytes"}`, nil
	case catalog.JSON, catalog.JSONB:
		return `{}`, nil
	}
	if t.IsStruct() {
		var b strings.Builder
		b.WriteString(`{"type":"object","properties":{`)
		for i, f := range t.Fields() {
			ft, err := jsonSchemaType(f.Type, 0, 0)
			if err != nil {
				return "", err
			}
			if i > 0 {
				b.WriteByte(',')
			}
			name, _ := json.Marshal(f.Name)
			fmt.Fprintf(&b, `%s:%s`, name, nullable(ft))
		}
		b.WriteString(`}}`)
		return b.String(), nil
	}
	if t.IsMap() {
		vt, err := jsonSchemaType(t.Value(), 0, 0)
		if err != nil {
			return "", err
		}
		return `{"type":"object","additionalProperties":` + nullable(vt) + `}`, nil
	}
	if t.IsArray() {
		e, err := jsonSchemaType(t.Elem(), 0, 0)
		if err != nil {
			return "", err
		}
		return `{"type":"array","items":` + nullable(e) + `}`, nil
	}
	return "", pgerr.New(pgerr.FeatureNotSupported, "a %s column cannot be written in JSON", t)
}

// AppendJSONSR appends the Confluent-framed JSON encoding of vals, the
// values of columns cols, whose schema (JSONSchema's for cols) has
// registry id id: the JSON is value_format 'json”s object.
func AppendJSONSR(dst []byte, id uint32, cols []catalog.Column, vals []any) ([]byte, error) {
	body, err := encodeJSONValue(cols, vals)
	if err != nil {
		return nil, err
	}
	dst = append(dst, avroMagic)
	dst = binary.BigEndian.AppendUint32(dst, id)
	return append(dst, body...), nil
}

// DecodeJSONSR decodes a Confluent-framed JSON value into the columns
// cols as value_format 'json' decodes the object after the framing (see
// decodeJSONValueInto for dst and idx). The schema its id names is not
// needed: the object is read by field name.
func DecodeJSONSR(dst []any, idx []int, cols []catalog.Column, b []byte) error {
	if _, err := SchemaID(b); err != nil {
		return err
	}
	return decodeJSONValueInto(dst, idx, cols, b[5:])
}
