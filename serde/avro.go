package serde

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/cockroachdb/apd/v3"
	"github.com/hamba/avro/v2"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/numeric"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/pgcodec"
)

// Avro values in the Confluent wire format: a zero magic byte, the
// writer schema's id in the schema registry (4 bytes, big-endian), then
// the record in Avro's binary encoding. A reader fetches the writer's
// schema by its id and reads the record's fields by name, so a producer
// may add fields (ignored) or drop optional ones (NULL) without breaking
// it.
//
// The schema basin writes for columns (AvroSchema) is a record of one
// field per column, named as the column, each a union of null and the
// column's type with a null default, as ksqlDB writes them:
//
//	BOOLEAN      boolean
//	INTEGER      int
//	BIGINT       long
//	DOUBLE       double
//	VARCHAR      string
//	NUMERIC(p,s) bytes, logicalType decimal, precision p, scale s
//	NUMERIC      string (a NUMERIC without a scale has none to declare)
//	TIMESTAMP    long, logicalType timestamp-millis (ksqlDB's; the
//	             microseconds are dropped), and TIMESTAMPTZ the same
//	DATE         int, logicalType date
//	TIME         int, logicalType time-millis
//	UUID         string, logicalType uuid
//	BYTEA        bytes
//	JSON, JSONB  string (the JSON text)
//	T[]          array of the element's union
//	STRUCT       record of one field per struct field, each a union of
//	             null and its type, named after the column and the
//	             fields leading to it (KsqlDataSourceSchema_address)
//	MAP          map of the value type's union (Avro maps' keys are
//	             strings, as basin's are)
//
// Reading is lenient as JSON's is: a field of another Avro type converts
// when the JSON reader would convert its value (an int into a BIGINT, a
// long of epoch milliseconds into a TIMESTAMP, a string into most types).

// avroMagic is the first byte of a Confluent-framed value.
const avroMagic = 0

// AvroSchema returns the Avro record schema of columns cols, named name
// (a full name: "io.confluent.ksql.avro_schemas.KsqlDataSourceSchema"
// as ksqlDB's, or the relation's).
func AvroSchema(name string, cols []catalog.Column) (string, error) {
	ns, short := "", name
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		ns, short = name[:i], name[i+1:]
	}
	type field struct {
		Name    string `json:"name"`
		Type    any    `json:"type"`
		Default any    `json:"default"`
	}
	rec := struct {
		Type      string  `json:"type"`
		Name      string  `json:"name"`
		Namespace string  `json:"namespace,omitempty"`
		Fields    []field `json:"fields"`
	}{Type: "record", Name: short, Namespace: ns}
	names := avroNames{used: map[string]bool{short: true}}
	for _, c := range cols {
		t, err := names.avroType(c.Type, c.Precision, c.Scale, short+"_"+c.Name)
		if err != nil {
			return "", fmt.Errorf("column %q: %w", c.Name, err)
		}
		rec.Fields = append(rec.Fields, field{Name: c.Name, Type: []any{"null", t}})
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// avroType is the Avro type of a column of type t; path names the
// records of its STRUCTs.
func (names *avroNames) avroType(t catalog.Type, precision, scale int, path string) (any, error) {
	logical := func(base, lt string) map[string]any { return map[string]any{"type": base, "logicalType": lt} }
	switch t {
	case catalog.Boolean:
		return "boolean", nil
	case catalog.Int:
		return "int", nil
	case catalog.BigInt:
		return "long", nil
	case catalog.Double:
		return "double", nil
	case catalog.Varchar, catalog.JSON, catalog.JSONB:
		return "string", nil
	case catalog.Decimal:
		if precision <= 0 {
			return "string", nil
		}
		return map[string]any{"type": "bytes", "logicalType": "decimal", "precision": precision, "scale": scale}, nil
	case catalog.Timestamp, catalog.TimestampTZ:
		return logical("long", "timestamp-millis"), nil
	case catalog.Date:
		return logical("int", "date"), nil
	case catalog.Time:
		return logical("int", "time-millis"), nil
	case catalog.UUID:
		return logical("string", "uuid"), nil
	case catalog.Bytea:
		return "bytes", nil
	}
	if t.IsArray() {
		e, err := names.avroType(t.Elem(), 0, 0, path)
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": "array", "items": []any{"null", e}}, nil
	}
	if t.IsNested() {
		return names.nestedType(t, path)
	}
	return nil, pgerr.New(pgerr.FeatureNotSupported, "a %s column cannot be written in Avro", t)
}

// AppendAvro appends the Confluent-framed Avro encoding of vals, the
// values of columns cols, under schema (AvroSchema's for cols) whose
// registry id is id.
func AppendAvro(dst []byte, schema avro.Schema, id uint32, cols []catalog.Column, vals []any) ([]byte, error) {
	rec := make(map[string]any, len(cols))
	for i, c := range cols {
		v, err := toAvro(c, avroFieldSchema(schema, c.Name), vals[i])
		if err != nil {
			return nil, fmt.Errorf("column %q: %w", c.Name, err)
		}
		rec[c.Name] = v
	}
	body, err := marshalAvro(schema, rec)
	if err != nil {
		return nil, fmt.Errorf("exec: Avro value: %w", err)
	}
	dst = append(dst, avroMagic)
	dst = binary.BigEndian.AppendUint32(dst, id)
	return append(dst, body...), nil
}

// marshalAvro is avro.Marshal, with a panic of the encoder (a value of
// another Go type than its schema's, which toAvro should have made
// impossible) an error rather than the process's end.
func marshalAvro(schema avro.Schema, rec any) (b []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			b, err = nil, fmt.Errorf("the encoder failed: %v", r)
		}
	}()
	return avro.Marshal(schema, rec)
}

// toAvro is a value of column c as the Avro encoder takes it for the
// column's Avro type s (avroType's; nil when not known).
func toAvro(c catalog.Column, s avro.Schema, v any) (any, error) {
	t := c.Type
	if v == nil {
		return nil, nil
	}
	switch x := v.(type) {
	case catalog.Struct, catalog.Map:
		return nestedToAvro(t, s, x)
	case int64:
		if t == catalog.Int {
			return int32(x), nil
		}
	case *apd.Decimal:
		// A NUMERIC(p,s) as a decimal: an exact rational; a NUMERIC as
		// its text.
		if c.Precision <= 0 {
			return numeric.Text(x), nil
		}
		r, ok := new(big.Rat).SetString(numeric.Text(x))
		if !ok {
			return nil, pgerr.New(pgerr.FeatureNotSupported, "%s cannot be written as an Avro decimal", numeric.Text(x))
		}
		return r, nil
	case catalog.DateVal:
		return x.Time(), nil
	case catalog.TimeOfDay:
		return time.Duration(x) * time.Microsecond, nil
	case catalog.UUIDVal:
		return pgcodec.FormatUUID(x), nil
	case catalog.JSONText:
		return string(x), nil
	case []any:
		var items avro.Schema
		if a, ok := avroBranch(s).(*avro.ArraySchema); ok {
			items = a.Items()
		}
		out := make([]any, len(x))
		for i, e := range x {
			ev, err := toAvro(catalog.Column{Type: t.Elem()}, items, e)
			if err != nil {
				return nil, err
			}
			out[i] = ev
		}
		return out, nil
	case time.Time:
		return x.UTC(), nil
	}
	return v, nil
}

// AvroSchemaID returns the registry id of the writer schema of a
// Confluent-framed value.
func AvroSchemaID(b []byte) (uint32, error) {
	if len(b) < 5 || b[0] != avroMagic {
		return 0, pgerr.New(pgerr.InvalidTextRepresentation, "value is not in the schema registry's wire format: it does not start with a zero byte and a 4-byte schema id (%s)", snippet(b)).
			WithHint("A schema-registry format's producer writes a zero byte, the schema id, then the record.")
	}
	return binary.BigEndian.Uint32(b[1:5]), nil
}

// DecodeAvro decodes a Confluent-framed Avro value, written with schema
// writer (the one its id names), into the columns cols: each from the
// field of its name (else the one of its name ignoring case), NULL when
// the record has none (see decodeJSONValueInto for dst and idx).
func DecodeAvro(dst []any, idx []int, cols []catalog.Column, writer avro.Schema, b []byte) error {
	rec, err := avroRecord(writer)
	if err != nil {
		return err
	}
	return decodeAvroFields(dst, idx, cols, rec, avroFieldColumns(rec, cols), b)
}

// avroRecord is the record schema writer is (through a named
// reference).
func avroRecord(writer avro.Schema) (*avro.RecordSchema, error) {
	rec, ok := derefAvro(writer).(*avro.RecordSchema)
	if !ok {
		return nil, pgerr.New(pgerr.InvalidTextRepresentation, "the writer schema is a %s, not a record", writer.Type())
	}
	return rec, nil
}

// avroFieldColumns returns, for each field of rec, the column of cols it
// is read into, -1 for none: the column of its name, else of its name
// ignoring case. It depends on the writer schema alone, so a codec keeps
// it per schema id (part.fieldCols).
func avroFieldColumns(rec *avro.RecordSchema, cols []catalog.Column) []int {
	fields := rec.Fields()
	fieldCol := make([]int, len(fields))
	for i := range fieldCol {
		fieldCol[i] = -1
	}
	for i, c := range cols {
		at := -1
		for j, f := range fields {
			if f.Name() == c.Name {
				at = j
				break
			}
			if at < 0 && strings.EqualFold(f.Name(), c.Name) {
				at = j
			}
		}
		if at >= 0 && fieldCol[at] < 0 {
			fieldCol[at] = i
		}
	}
	return fieldCol
}

// decodeAvroFields is DecodeAvro with the field of each column found
// (avroFieldColumns).
func decodeAvroFields(dst []any, idx []int, cols []catalog.Column, rec *avro.RecordSchema, fieldCol []int, b []byte) error {
	if _, err := AvroSchemaID(b); err != nil {
		return err
	}
	for i := range cols {
		setCol(dst, idx, i, nil)
	}
	// The record's fields in the writer's order, each read by its
	// schema (a Reader, not avro.Unmarshal, which takes a record cut
	// short for one whose last fields are zero); a union of null and a
	// type without the map the generic reader wraps its branch in.
	r := avroReaders.Get().(*avro.Reader)
	defer avroReaders.Put(r)
	r.Reset(b[5:])
	r.Error = nil
	for j, f := range rec.Fields() {
		v, branch := readAvroField(r, f.Type())
		if r.Error != nil {
			return pgerr.New(pgerr.InvalidTextRepresentation, "value does not decode by its writer schema: %v", r.Error)
		}
		i := fieldCol[j]
		if i < 0 {
			continue
		}
		c := cols[i]
		v, err := fromAvro(c, branch, v)
		if err != nil {
			return pgerr.New(pgerr.InvalidTextRepresentation, "field %q: %v", c.Name, err)
		}
		setCol(dst, idx, i, v)
	}
	return nil
}

// avroReaders are the readers of DecodeAvro, reused.
var avroReaders = sync.Pool{New: func() any { return avro.NewReader(nil, 0) }}

// readAvroField reads one value of schema s: a union's branch as its
// value (NULL for null), anything else as the generic reader does; and
// the schema of what it read (the branch of a union).
func readAvroField(r *avro.Reader, s avro.Schema) (any, avro.Schema) {
	u, ok := s.(*avro.UnionSchema)
	if !ok {
		return r.ReadNext(s), s
	}
	types := u.Types()
	i := r.ReadLong()
	if i < 0 || i >= int64(len(types)) {
		r.ReportError("Read", "unknown union branch")
		return nil, s
	}
	if types[i].Type() == avro.Null {
		return nil, types[i]
	}
	return r.ReadNext(types[i]), types[i]
}

// fromAvro converts a decoded Avro value, written with schema s (nil
// when not known), to a value of column c.
func fromAvro(c catalog.Column, s avro.Schema, v any) (_ any, err error) {
	if s != nil {
		v = avroUnwrap(s, v)
	}
	if v == nil {
		return nil, nil
	}
	t := c.Type
	if t.IsNested() {
		return nestedFromAvro(t, avroBranch(s), v)
	}
	switch x := v.(type) {
	case int64:
		if v, ok := avroInt(t, x); ok {
			return v, nil
		}
	case float64:
		if t == catalog.Double {
			return x, nil
		}
	case bool:
		if t == catalog.Boolean {
			return x, nil
		}
	case time.Time:
		switch t {
		case catalog.Timestamp, catalog.TimestampTZ:
			return x.UTC().Truncate(time.Microsecond), nil
		case catalog.Date:
			return catalog.DateOf(x.UTC()), nil
		}
	case time.Duration:
		if t == catalog.Time {
			return catalog.TimeOfDay(x / time.Microsecond), nil
		}
	case *big.Rat:
		if t == catalog.Decimal {
			scale := ratScale(x)
			if c.Precision > 0 {
				scale = max(scale, c.Scale) // the column's scale, as its values have it
			}
			d, _, err := apd.NewFromString(x.FloatString(scale))
			if err != nil {
				return nil, err
			}
			return d, nil
		}
		v = x.FloatString(ratScale(x))
	case []byte:
		if t == catalog.Bytea {
			return append([]byte{}, x...), nil
		}
	case string:
		if t == catalog.Varchar && utf8.ValidString(x) {
			return x, nil
		}
		if t == catalog.JSON || t == catalog.JSONB {
			// The field holds the JSON text.
			if !json.Valid([]byte(x)) {
				return nil, fmt.Errorf("the string %s is not valid JSON", snippet([]byte(x)))
			}
			out, cerr := decodeJSONColumn([]byte(x), c)
			if cerr != nil {
				return nil, fmt.Errorf("%s", cerr.msg)
			}
			return out, nil
		}
	case float32:
		v = float64(x)
	case int:
		if v, ok := avroInt(t, int64(x)); ok {
			return v, nil
		}
		v = int64(x)
	case int32:
		if v, ok := avroInt(t, int64(x)); ok {
			return v, nil
		}
		v = int64(x)
	case []any:
		if !t.IsArray() {
			break
		}
		var items avro.Schema
		if a, ok := avroBranch(s).(*avro.ArraySchema); ok {
			items = a.Items()
		}
		out := make([]any, len(x))
		for i, e := range x {
			ev, err := fromAvro(catalog.Column{Type: t.Elem()}, items, e)
			if err != nil {
				return nil, err
			}
			out[i] = ev
		}
		return out, nil
	}
	// Through the JSON reader's conversions, which are lenient as
	// ksqlDB's are.
	var raw []byte
	if f, ok := v.(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
		raw = appendJSONFloat(nil, f)
	} else if raw, err = json.Marshal(v); err != nil {
		return nil, err
	}
	out, cerr := decodeJSONColumn(raw, c)
	if cerr != nil {
		return nil, fmt.Errorf("%s", cerr.msg)
	}
	return out, nil
}

// avroInt is integer x as a value of an integer or DOUBLE column of type
// t, without the JSON reader's detour; ok is false for other types and
// for an INTEGER out of range, which the JSON reader refuses.
func avroInt(t catalog.Type, x int64) (any, bool) {
	switch t {
	case catalog.BigInt:
		return x, true
	case catalog.Int:
		return x, x >= math.MinInt32 && x <= math.MaxInt32
	case catalog.Double:
		return float64(x), true
	}
	return nil, false
}

// ratScale is the least number of decimals that write the rational r
// decoded from an Avro decimal exactly (its denominator, reduced, divides
// a power of ten); a column's NUMERIC(p,s) then rounds it to its scale.
func ratScale(r *big.Rat) int {
	d := new(big.Int).Set(r.Denom())
	count := func(p int64) int {
		n, q, m, bp := 0, new(big.Int), new(big.Int), big.NewInt(p)
		for {
			q.QuoRem(d, bp, m)
			if m.Sign() != 0 {
				return n
			}
			d.Set(q)
			n++
		}
	}
	twos, fives := count(2), count(5)
	if d.Cmp(big.NewInt(1)) != 0 {
		return 18 // no decimal writes it exactly: 18 places
	}
	return max(twos, fives)
}
