package serde

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
)

// Codec turns Kafka records of a stream or table into rows of the
// relation and back: the key columns from and to the record key in the
// relation's key_format, the others from and to the JSON value. A Codec
// is made once per relation and is safe for concurrent use; it keeps no
// state between calls.
type Codec struct {
	rel     *catalog.Relation
	keyCols []catalog.Column
	keyIdx  []int
	valCols []catalog.Column
	valIdx  []int
	// timeIdx is the column of WITH (timestamp = ...), -1 for none;
	// timeLayout the Go layout of its timestamp_format, for a VARCHAR.
	timeIdx    int
	timeLayout string
	// valueFormat is the relation's value_format (valueformats.go):
	// json, delimited or kafka; delim is a DELIMITED value's delimiter;
	// unwrapped is set for a JSON value that is its single value
	// column's value (wrap_single_value = false).
	valueFormat string
	delim       rune
	unwrapped   bool
	// reg is the schema registry of the registry formats (nil without
	// one); writer the schema values are written with, found or
	// registered at the first write (registry.go).
	reg    *Registry
	writer struct {
		sync.Mutex
		ws *writerSchema
		id int
	}
}

// NewCodec returns the codec of rel's records. reg is the schema
// registry the registry formats (avro) read and write schemas in; nil
// when the node has none, which makes each of their records an error.
func NewCodec(rel *catalog.Relation, reg *Registry) *Codec {
	c := &Codec{rel: rel, timeIdx: -1, reg: reg}
	if name, ok := rel.Options["timestamp"]; ok {
		c.timeIdx = rel.Schema.Index(name)
		if f, ok := rel.Options["timestamp_format"]; ok {
			c.timeLayout, _ = TimeLayout(f) // checked at CREATE
		}
	}
	c.valueFormat = strings.ToLower(rel.ValueFormat)
	if c.valueFormat == "" {
		c.valueFormat = valueFormatJSON
	}
	c.delim, _ = DelimiterRune(rel.Options["value_delimiter"]) // checked at CREATE
	c.unwrapped = c.valueFormat == valueFormatJSON && strings.EqualFold(rel.Options["wrap_single_value"], "false")
	for i, col := range rel.Schema.Columns {
		if rel.WindowBound(i) {
			// In a windowed view's record key, after the group's
			// (WindowedKey), as ksqlDB writes them; never in the value.
			continue
		}
		if col.Key {
			c.keyCols = append(c.keyCols, col)
			c.keyIdx = append(c.keyIdx, i)
		} else {
			c.valCols = append(c.valCols, col)
			c.valIdx = append(c.valIdx, i)
		}
	}
	return c
}

// KeyIndex returns the positions in a row of the relation's key columns,
// in key order. The slice is the codec's own: callers must not modify it.
func (c *Codec) KeyIndex() []int { return c.keyIdx }

// Decode builds a row from a record. A nil value is a tombstone: the row
// is nil (the key is still decoded).
func (c *Codec) Decode(key, value []byte) (row catalog.Row, keyVals []any, err error) {
	if len(c.keyCols) > 0 {
		keyVals = make([]any, len(c.keyCols))
		if err = decodeKeyInto(keyVals, nil, c.rel.KeyFormat, c.keyCols, key); err != nil {
			return nil, nil, fmt.Errorf("key: %w", err)
		}
	}
	if value == nil {
		return nil, keyVals, nil
	}
	row = make(catalog.Row, len(c.rel.Schema.Columns))
	if err := c.decodeValue(row, value); err != nil {
		return nil, keyVals, err
	}
	for i, k := range c.keyIdx {
		row[k] = keyVals[i]
	}
	return row, keyVals, nil
}

// DecodeInto is Decode into row, which it overwrites (a row of the
// relation's width): a task that is done with a row before the next
// record reuses it. For a tombstone only the key columns are set. The
// key values are row's at KeyIndex.
func (c *Codec) DecodeInto(row catalog.Row, key, value []byte) (tombstone bool, err error) {
	if len(c.keyCols) > 0 {
		if err := decodeKeyInto(row, c.keyIdx, c.rel.KeyFormat, c.keyCols, key); err != nil {
			return false, fmt.Errorf("key: %w", err)
		}
	}
	if value == nil {
		return true, nil
	}
	return false, c.decodeValue(row, value)
}

// decodeValue decodes a record value in the relation's value format into
// row's value columns.
func (c *Codec) decodeValue(row catalog.Row, value []byte) error {
	switch {
	case c.valueFormat == valueFormatDelimited:
		return decodeDelimited(row, c.valIdx, c.valCols, c.delim, value)
	case c.valueFormat == valueFormatKafka && len(c.valCols) == 1:
		v, err := decodeKafkaScalar(c.valCols[0], "value", value)
		row[c.valIdx[0]] = v
		return err
	case c.unwrapped && len(c.valCols) == 1:
		return decodeUnwrapped(row, c.valIdx, c.valCols[0], value)
	case c.valueFormat == valueFormatAvro:
		id, err := AvroSchemaID(value)
		if err != nil {
			return err
		}
		ws, err := c.readerSchema(int(id))
		if err != nil {
			return err
		}
		return DecodeAvro(row, c.valIdx, c.valCols, ws.avro, value)
	case c.valueFormat == valueFormatProtobuf:
		id, err := SchemaID(value)
		if err != nil {
			return err
		}
		ws, err := c.readerSchema(int(id))
		if err != nil {
			return err
		}
		return DecodeProtobuf(row, c.valIdx, c.valCols, ws.proto, value)
	case c.valueFormat == valueFormatProtoNoSR:
		md, err := c.noSRMessage()
		if err != nil {
			return err
		}
		return DecodeProtobufNoSR(row, c.valIdx, c.valCols, md, value)
	case c.valueFormat == valueFormatJSONSR:
		// Read as JSON is, by field name: the schema adds nothing.
		return DecodeJSONSR(row, c.valIdx, c.valCols, value)
	case c.valueFormat != valueFormatJSON:
		return fmt.Errorf("exec: value format %q of %s %s with %d value columns", c.valueFormat, strings.ToLower(string(c.rel.Kind)), c.rel.Name, len(c.valCols))
	}
	return decodeJSONValueInto(row, c.valIdx, c.valCols, value)
}

// encodeValue encodes the values of the value columns in the relation's
// value format.
func (c *Codec) encodeValue(vals []any) ([]byte, error) {
	switch {
	case c.valueFormat == valueFormatDelimited:
		return encodeDelimited(c.valCols, c.delim, vals)
	case c.valueFormat == valueFormatKafka && len(c.valCols) == 1:
		if vals[0] == nil {
			// Kafka's serializers write a null as a null value, which
			// is a tombstone: an empty value is as near as a row can be.
			return nil, pgerr.New(pgerr.NotNullViolation, "value column %q of %s is NULL, which value_format 'kafka' cannot write (a null value is a tombstone)", c.valCols[0].Name, c.rel.Name)
		}
		return appendKafkaScalar(nil, "value", c.valCols[0].Type, c.valCols[0].Name, vals[0])
	case c.unwrapped && len(c.valCols) == 1:
		return appendJSONValue(nil, c.valCols[0].Type, c.valCols[0].Name, vals[0])
	case c.valueFormat == valueFormatAvro:
		ws, id, err := c.writerSchema()
		if err != nil {
			return nil, err
		}
		return AppendAvro(nil, ws.avro, uint32(id), c.valCols, vals)
	case c.valueFormat == valueFormatProtobuf:
		ws, id, err := c.writerSchema()
		if err != nil {
			return nil, err
		}
		return AppendProtobuf(nil, ws.md, uint32(id), c.valCols, vals)
	case c.valueFormat == valueFormatProtoNoSR:
		md, err := c.noSRMessage()
		if err != nil {
			return nil, err
		}
		return AppendProtobufNoSR(nil, md, c.valCols, vals)
	case c.valueFormat == valueFormatJSONSR:
		_, id, err := c.writerSchema()
		if err != nil {
			return nil, err
		}
		return AppendJSONSR(nil, uint32(id), c.valCols, vals)
	case c.valueFormat != valueFormatJSON:
		return nil, fmt.Errorf("exec: value format %q of %s %s with %d value columns", c.valueFormat, strings.ToLower(string(c.rel.Kind)), c.rel.Name, len(c.valCols))
	}
	return encodeJSONValue(c.valCols, vals)
}

// KeyRow returns a row of the relation with only its key columns set,
// from record key key (nil where it does not decode): what placement
// hashes for a tombstone.
func (c *Codec) KeyRow(key []byte) catalog.Row {
	row := make(catalog.Row, len(c.rel.Schema.Columns))
	if len(c.keyCols) > 0 {
		if err := decodeKeyInto(row, c.keyIdx, c.rel.KeyFormat, c.keyCols, key); err != nil {
			return make(catalog.Row, len(c.rel.Schema.Columns))
		}
	}
	return row
}

// Encode returns the record key and value of a row.
func (c *Codec) Encode(row catalog.Row) (key, value []byte, err error) {
	if len(c.keyCols) > 0 {
		kv := make([]any, len(c.keyIdx))
		for i, k := range c.keyIdx {
			kv[i] = row[k]
		}
		if key, err = c.EncodeKey(kv); err != nil {
			return nil, nil, err
		}
	}
	vv := make([]any, len(c.valIdx))
	for i, v := range c.valIdx {
		vv[i] = row[v]
	}
	value, err = c.encodeValue(vv)
	return key, value, err
}

// EncodeKey returns the record key of the key column values vals (in key
// order), as EncodeKey does for the relation's key format.
func (c *Codec) EncodeKey(vals []any) ([]byte, error) {
	types := make([]catalog.Type, len(c.keyCols))
	names := make([]string, len(c.keyCols))
	for i, k := range c.keyCols {
		types[i], names[i] = k.Type, k.Name
	}
	return EncodeKey(c.rel.KeyFormat, types, names, vals)
}

// Rowtime is ROWTIME of a record decoded into row: milliseconds since the
// epoch of its Kafka timestamp ts or, with WITH (timestamp = 'col'), of
// col's value (NULL when col is NULL); a VARCHAR col is read with the
// timestamp_format, in UTC unless the format has a zone, and one that
// does not match is an error (22007).
func (c *Codec) Rowtime(row catalog.Row, ts time.Time) (any, error) {
	if c.timeIdx < 0 {
		return ts.UnixMilli(), nil
	}
	switch v := row[c.timeIdx].(type) {
	case int64:
		return v, nil
	case time.Time:
		return v.UnixMilli(), nil
	case string:
		t, err := time.Parse(c.timeLayout, v)
		if err != nil {
			return nil, pgerr.New(pgerr.InvalidDatetimeFormat, "timestamp column %s: %q does not match timestamp_format %q", c.rel.Schema.Columns[c.timeIdx].Name, v, c.rel.Options["timestamp_format"])
		}
		return t.UnixMilli(), nil
	}
	return nil, nil
}

// registry returns the codec's registry, or the error of a relation in a
// registry format on a node without one.
func (c *Codec) registry() (*Registry, error) {
	if c.reg == nil {
		return nil, NoRegistryError(strings.ToLower(string(c.rel.Kind)), c.rel.Name, c.valueFormat)
	}
	return c.reg, nil
}

// NoRegistryError is the error of a relation of a registry format (what
// kind, named name) where no schema registry is configured.
func NoRegistryError(what, name, format string) error {
	return pgerr.New(pgerr.ObjectNotInPrerequisiteState, "value_format '%s' of %s %s needs a schema registry, and basin was started without one", format, what, name).
		WithHint("Start basin with --schema-registry URL (docs/configuration.md).")
}

// readerSchema returns the writer schema of a record of the relation,
// by the id in it.
func (c *Codec) readerSchema(id int) (*writerSchema, error) {
	reg, err := c.registry()
	if err != nil {
		return nil, err
	}
	ws, err := reg.schemaByID(id)
	if err != nil {
		return nil, err
	}
	if ws.typ != c.schemaType() {
		return nil, pgerr.New(pgerr.InvalidTextRepresentation, "the record's schema id %d is a %s schema, and %s %s is value_format '%s'", id, ws.typ, strings.ToLower(string(c.rel.Kind)), c.rel.Name, c.valueFormat)
	}
	return ws, nil
}

// schemaType is the registry schema type of the codec's value format.
func (c *Codec) schemaType() sr.SchemaType { return schemaTypeOf(c.valueFormat) }

// DefaultAvroName is the full name of the Avro record schemas basin
// registers when value_schema_full_name does not name one: ksqlDB's.
const DefaultAvroName = "io.confluent.ksql.avro_schemas.KsqlDataSourceSchema"

// writerSchema returns the schema the codec writes values with, and its
// id: value_schema_id's, or the schema of the value columns registered
// under the topic's value subject.
func (c *Codec) writerSchema() (*writerSchema, int, error) {
	c.writer.Lock()
	defer c.writer.Unlock()
	if c.writer.ws != nil {
		return c.writer.ws, c.writer.id, nil
	}
	reg, err := c.registry()
	if err != nil {
		return nil, 0, err
	}
	var ws *writerSchema
	var id int
	if s, ok := c.rel.Options["value_schema_id"]; ok {
		id, _ = strconv.Atoi(s) // checked at CREATE
		if ws, err = c.readerSchema(id); err != nil {
			return nil, 0, err
		}
		if ws.typ == sr.TypeProtobuf {
			w := *ws // the registry's, shared
			ws = &w
			if ws.md = c.protoMessage(ws.proto); ws.md == nil {
				return nil, 0, pgerr.New(pgerr.InvalidParameterValue, "schema id %d of %s has no message %s", id, c.rel.Name, c.rel.Options["value_schema_full_name"])
			}
		}
	} else {
		name := c.rel.Options["value_schema_full_name"]
		if name == "" {
			name = DefaultAvroName
		}
		ws = &writerSchema{typ: c.schemaType()}
		var err error
		switch ws.typ {
		case sr.TypeProtobuf:
			if ws.text, err = ProtobufSchema(name, c.valCols); err == nil {
				if ws.proto, err = ParseProtobufSchema(ws.text); err == nil {
					ws.md = ws.proto.Messages().Get(0)
				}
			}
		case sr.TypeJSON:
			ws.text, err = JSONSchema(name, c.valCols)
		default:
			if ws.text, err = AvroSchema(name, c.valCols); err == nil {
				ws.avro, err = avro.Parse(ws.text)
			}
		}
		if err != nil {
			return nil, 0, fmt.Errorf("exec: the %s schema of %s: %w", ws.typ, c.rel.Name, err)
		}
		if id, err = reg.register(context.Background(), ValueSubject(c.OutputTopic()), ws.typ, ws.text); err != nil {
			return nil, 0, err
		}
	}
	c.writer.ws, c.writer.id = ws, id
	return ws, id, nil
}

// protoMessage is the message of Protobuf file fd values are written as:
// the one value_schema_full_name names, else the first.
func (c *Codec) protoMessage(fd protoreflect.FileDescriptor) protoreflect.MessageDescriptor {
	if fd == nil || fd.Messages().Len() == 0 {
		return nil
	}
	name := c.rel.Options["value_schema_full_name"]
	if name == "" {
		return fd.Messages().Get(0)
	}
	for i := range fd.Messages().Len() {
		if md := fd.Messages().Get(i); string(md.FullName()) == name || string(md.Name()) == name {
			return md
		}
	}
	return nil
}

// noSRMessage is the message of a PROTOBUF_NOSR value: the one of
// ProtobufSchema for the value columns, made once.
func (c *Codec) noSRMessage() (protoreflect.MessageDescriptor, error) {
	c.writer.Lock()
	defer c.writer.Unlock()
	if c.writer.ws == nil {
		name := c.rel.Options["value_schema_full_name"]
		if name == "" {
			name = DefaultAvroName
		}
		md, err := ProtobufDescriptor(name, c.valCols)
		if err != nil {
			return nil, fmt.Errorf("exec: the Protobuf schema of %s: %w", c.rel.Name, err)
		}
		c.writer.ws = &writerSchema{typ: sr.TypeProtobuf, md: md}
	}
	return c.writer.ws.md, nil
}

// OutputTopic is the topic the codec's records are written to: a
// stream's or table's own, a view's kafka_topic.
func (c *Codec) OutputTopic() string {
	if c.rel.Kind == catalog.KindView {
		if t := c.rel.Options["kafka_topic"]; t != "" {
			return t
		}
	}
	return c.rel.Topic
}

// PrepareWrite readies the codec to write records: for a registry
// format it finds the schema value_schema_id names, or registers the
// value columns' schema under the topic's value subject, so that a
// statement that will write records fails now if the registry refuses
// the schema (incompatible with the subject's) or cannot be reached.
func (c *Codec) PrepareWrite() error {
	if !RegistryFormat(c.valueFormat) {
		return nil
	}
	_, _, err := c.writerSchema()
	return err
}

// Warm fetches the writer schema of record value value, in a registry
// format, unless the codec has it: a task calls it for every record it
// fetched before it decodes any, so that a registry that cannot be
// reached fails the batch (the error is Unavailable), to be tried again,
// rather than the records being skipped as bad. Any other problem is
// left for the decoding to report.
func (c *Codec) Warm(value []byte) error {
	if c.reg == nil || value == nil || !RegistryFormat(c.valueFormat) || c.valueFormat == valueFormatJSONSR {
		return nil // JSON_SR reads without its schema
	}
	id, err := AvroSchemaID(value)
	if err != nil {
		return nil
	}
	if _, err := c.reg.schemaByID(int(id)); Unavailable(err) {
		return err
	}
	return nil
}

// Registered reports whether the codec's value format keeps its schemas
// in a schema registry.
func (c *Codec) Registered() bool { return RegistryFormat(c.valueFormat) }
