package serde

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
)

// part is one side of a record, its key or its value, for the formats
// both sides may be written in: DELIMITED, and the schema registry's
// AVRO, PROTOBUF and JSON_SR, with PROTOBUF_NOSR. Each side has its own
// options (value_delimiter and key_delimiter, value_schema_id and
// key_schema_id, ...) and, in a registry format, its own subject
// (<topic>-value, <topic>-key) and writer schema.
type part struct {
	name   string // "key" or "value"
	format string
	cols   []catalog.Column
	idx    []int
	delim  rune
	// schemaID and fullName are the part's <name>_schema_id and
	// <name>_schema_full_name options.
	schemaID int
	fullName string
	// bare is set for a key of one column in AVRO or JSON_SR: written as
	// the column's value alone, not in a record, as ksqlDB writes such
	// keys (Protobuf has no bare values, so its keys are messages).
	bare bool

	writer struct {
		sync.Mutex
		ws *writerSchema
		id int
	}
	// fieldCols holds, per Avro writer schema id, the column each of
	// its record's fields is read into (avroFieldColumns).
	fieldCols sync.Map
}

func (p *part) init(name, format string, cols []catalog.Column, idx []int, opts map[string]string) {
	p.name, p.format, p.cols, p.idx = name, format, cols, idx
	p.delim, _ = DelimiterRune(opts[name+"_delimiter"]) // checked at CREATE
	p.schemaID, _ = strconv.Atoi(opts[name+"_schema_id"])
	p.fullName = opts[name+"_schema_full_name"]
	if p.fullName == "" {
		p.fullName = DefaultAvroName
		if name == "key" {
			p.fullName = DefaultAvroKeyName
		}
	}
	p.bare = name == "key" && len(cols) == 1 && (format == valueFormatAvro || format == valueFormatJSONSR)
}

// shared reports whether the part's format is one of those either part
// may have, which decodePart and encodePart read and write.
func (p *part) shared() bool {
	switch p.format {
	case valueFormatDelimited, valueFormatAvro, valueFormatProtobuf, valueFormatProtoNoSR, valueFormatJSONSR:
		return true
	}
	return false
}

// DefaultAvroName and DefaultAvroKeyName are the full names of the
// record schemas basin registers when value_schema_full_name and
// key_schema_full_name do not name one: ksqlDB's.
const (
	DefaultAvroName    = "io.confluent.ksql.avro_schemas.KsqlDataSourceSchema"
	DefaultAvroKeyName = "io.confluent.ksql.avro_schemas.KsqlDataSourceSchemaKey"
)

// decodePart decodes b, the record's part p, into dst (at idx).
func (c *Codec) decodePart(p *part, dst []any, idx []int, b []byte) error {
	switch p.format {
	case valueFormatDelimited:
		return decodeDelimited(dst, idx, p.cols, p.delim, b)
	case valueFormatProtoNoSR:
		md, err := c.noSRMessage(p)
		if err != nil {
			return err
		}
		return DecodeProtobufNoSR(dst, idx, p.cols, md, b)
	case valueFormatJSONSR:
		// Read as JSON is, by field name: the schema adds nothing.
		if p.name == "key" {
			if _, err := SchemaID(b); err != nil {
				return err
			}
			return decodeKeyInto(dst, idx, keyFormatJSON, p.cols, b[5:])
		}
		return DecodeJSONSR(dst, idx, p.cols, b)
	}
	id, err := SchemaID(b)
	if err != nil {
		return err
	}
	ws, err := c.readerSchema(p, int(id))
	if err != nil {
		return err
	}
	if p.format == valueFormatProtobuf {
		return DecodeProtobuf(dst, idx, p.cols, ws.proto, b)
	}
	if _, ok := derefAvro(ws.avro).(*avro.RecordSchema); !ok && len(p.cols) == 1 {
		return decodeAvroBare(dst, idx, p.cols[0], ws.avro, b)
	}
	rec, err := avroRecord(ws.avro)
	if err != nil {
		return err
	}
	return decodeAvroFields(dst, idx, p.cols, rec, p.fieldColumns(int(id), rec), b)
}

// fieldColumns returns avroFieldColumns of the part's columns for the
// writer schema rec, whose id is id, found once per id.
func (p *part) fieldColumns(id int, rec *avro.RecordSchema) []int {
	if fc, ok := p.fieldCols.Load(id); ok {
		return fc.([]int)
	}
	fc := avroFieldColumns(rec, p.cols)
	p.fieldCols.Store(id, fc)
	return fc
}

// decodeAvroBare decodes a Confluent-framed Avro value that is not a
// record into column c: a key of one column.
func decodeAvroBare(dst []any, idx []int, c catalog.Column, writer avro.Schema, b []byte) error {
	r := avroReaders.Get().(*avro.Reader)
	defer avroReaders.Put(r)
	r.Reset(b[5:])
	r.Error = nil
	raw, branch := readAvroField(r, writer)
	if r.Error != nil {
		return pgerr.New(pgerr.InvalidTextRepresentation, "%s does not decode by its writer schema: %v", c.Name, r.Error)
	}
	v, err := fromAvro(c, branch, raw)
	if err != nil {
		return pgerr.New(pgerr.InvalidTextRepresentation, "column %q: %v", c.Name, err)
	}
	setCol(dst, idx, 0, v)
	return nil
}

// encodePart encodes vals, the values of part p's columns: never nil,
// which would be a null key or value (a tombstone), even where the
// encoding of all NULLs is no bytes (a Protobuf message without fields).
func (c *Codec) encodePart(p *part, vals []any) ([]byte, error) {
	b, err := c.appendPart(p, vals)
	if b == nil && err == nil {
		b = []byte{}
	}
	return b, err
}

func (c *Codec) appendPart(p *part, vals []any) ([]byte, error) {
	switch p.format {
	case valueFormatDelimited:
		return encodeDelimited(p.cols, p.delim, vals)
	case valueFormatProtoNoSR:
		md, err := c.noSRMessage(p)
		if err != nil {
			return nil, err
		}
		return AppendProtobufNoSR(nil, md, p.cols, vals)
	}
	ws, id, err := c.writerSchema(p)
	if err != nil {
		return nil, err
	}
	switch p.format {
	case valueFormatProtobuf:
		return AppendProtobuf(nil, ws.md, uint32(id), p.cols, vals)
	case valueFormatJSONSR:
		if p.bare {
			dst := binary.BigEndian.AppendUint32([]byte{avroMagic}, uint32(id))
			return appendJSONValue(dst, p.cols[0].Type, p.cols[0].Name, vals[0])
		}
		return AppendJSONSR(nil, uint32(id), p.cols, vals)
	}
	if p.bare {
		v, err := toAvro(p.cols[0], ws.avro, vals[0])
		if err != nil {
			return nil, fmt.Errorf("column %q: %w", p.cols[0].Name, err)
		}
		body, err := marshalAvro(ws.avro, v)
		if err != nil {
			return nil, fmt.Errorf("exec: Avro %s: %w", p.name, err)
		}
		dst := binary.BigEndian.AppendUint32([]byte{avroMagic}, uint32(id))
		return append(dst, body...), nil
	}
	return AppendAvro(nil, ws.avro, uint32(id), p.cols, vals)
}

// registry returns the codec's registry, or the error of a relation in a
// registry format on a node without one.
func (c *Codec) registry(p *part) (*Registry, error) {
	if c.reg == nil {
		return nil, NoRegistryError(strings.ToLower(string(c.rel.Kind)), c.rel.Name, p.name+"_format", p.format)
	}
	return c.reg, nil
}

// NoRegistryError is the error of a relation (what kind, named name)
// whose option (value_format or key_format) is format, a registry
// format, where no schema registry is configured.
func NoRegistryError(what, name, option, format string) error {
	return pgerr.New(pgerr.ObjectNotInPrerequisiteState, "%s '%s' of %s %s needs a schema registry, and basin was started without one", option, format, what, name).
		WithHint("Start basin with --schema-registry URL (docs/configuration.md).")
}

// readerSchema returns the writer schema of a record's part p, by the
// id in it.
func (c *Codec) readerSchema(p *part, id int) (*writerSchema, error) {
	reg, err := c.registry(p)
	if err != nil {
		return nil, err
	}
	ws, err := reg.schemaByID(id)
	if err != nil {
		return nil, err
	}
	if want := schemaTypeOf(p.format); ws.typ != want {
		return nil, pgerr.New(pgerr.InvalidTextRepresentation, "the record's %s schema id %d is a %s schema, and %s %s is %s_format '%s'",
			p.name, id, ws.typ, strings.ToLower(string(c.rel.Kind)), c.rel.Name, p.name, p.format)
	}
	return ws, nil
}

// writerSchema returns the schema the codec writes part p with, and its
// id: <part>_schema_id's, or the schema of the part's columns
// registered under the topic's subject of the part.
func (c *Codec) writerSchema(p *part) (*writerSchema, int, error) {
	p.writer.Lock()
	defer p.writer.Unlock()
	if p.writer.ws != nil {
		return p.writer.ws, p.writer.id, nil
	}
	reg, err := c.registry(p)
	if err != nil {
		return nil, 0, err
	}
	ws, id := (*writerSchema)(nil), p.schemaID
	if id != 0 {
		if ws, err = c.readerSchema(p, id); err != nil {
			return nil, 0, err
		}
		if ws.typ == sr.TypeProtobuf {
			w := *ws // the registry's, shared
			ws = &w
			if ws.md = protoMessage(ws.proto, ""); ws.md == nil {
				return nil, 0, pgerr.New(pgerr.InvalidParameterValue, "schema id %d of %s has no message", id, c.rel.Name)
			}
		}
	} else {
		ws = &writerSchema{typ: schemaTypeOf(p.format)}
		switch {
		case ws.typ == sr.TypeProtobuf:
			if ws.text, err = ProtobufSchema(p.fullName, p.cols); err == nil {
				if ws.proto, err = ParseProtobufSchema(ws.text); err == nil {
					ws.md = ws.proto.Messages().Get(0)
				}
			}
		case ws.typ == sr.TypeJSON && p.bare:
			ws.text, err = jsonSchemaType(p.cols[0].Type, p.cols[0].Precision, p.cols[0].Scale)
		case ws.typ == sr.TypeJSON:
			ws.text, err = JSONSchema(p.fullName, p.cols)
		case p.bare:
			var t any
			names := avroNames{used: map[string]bool{}}
			if t, err = names.avroType(p.cols[0].Type, p.cols[0].Precision, p.cols[0].Scale, "KsqlDataSourceSchemaKey"); err == nil {
				var b []byte
				if b, err = json.Marshal(t); err == nil {
					ws.text = string(b)
					ws.avro, err = avro.Parse(ws.text)
				}
			}
		default:
			if ws.text, err = AvroSchema(p.fullName, p.cols); err == nil {
				ws.avro, err = avro.Parse(ws.text)
			}
		}
		if err != nil {
			return nil, 0, fmt.Errorf("exec: the %s schema of the %s of %s: %w", ws.typ, p.name, c.rel.Name, err)
		}
		subject := ValueSubject(c.OutputTopic())
		if p.name == "key" {
			subject = KeySubject(c.OutputTopic())
		}
		if id, err = reg.register(context.Background(), subject, ws.typ, ws.text); err != nil {
			return nil, 0, err
		}
	}
	p.writer.ws, p.writer.id = ws, id
	return ws, id, nil
}

// protoMessage is the message of Protobuf file fd named name, the first
// when name is "".
func protoMessage(fd protoreflect.FileDescriptor, name string) protoreflect.MessageDescriptor {
	if fd == nil || fd.Messages().Len() == 0 {
		return nil
	}
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

// noSRMessage is the message of part p in PROTOBUF_NOSR: the one of
// ProtobufSchema for its columns, made once.
func (c *Codec) noSRMessage(p *part) (protoreflect.MessageDescriptor, error) {
	p.writer.Lock()
	defer p.writer.Unlock()
	if p.writer.ws == nil {
		md, err := ProtobufDescriptor(p.fullName, p.cols)
		if err != nil {
			return nil, fmt.Errorf("exec: the Protobuf schema of the %s of %s: %w", p.name, c.rel.Name, err)
		}
		p.writer.ws = &writerSchema{typ: sr.TypeProtobuf, md: md}
	}
	return p.writer.ws.md, nil
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

// PrepareWrite readies the codec to write records: for a part in a
// registry format it finds the schema <part>_schema_id names, or
// registers the part's columns' schema under the topic's subject, so
// that a statement that will write records fails now if the registry
// refuses the schema (incompatible with the subject's) or cannot be
// reached.
func (c *Codec) PrepareWrite() error {
	for _, p := range []*part{&c.key, &c.value} {
		if RegistryFormat(p.format) && len(p.cols) > 0 {
			if _, _, err := c.writerSchema(p); err != nil {
				return err
			}
		}
	}
	return nil
}

// PrepareKey readies the codec to write record keys, as PrepareWrite
// does for both parts: a task that writes keys in a registry format
// calls it before each batch, so that a registry that cannot be reached
// fails the batch, to be tried again, rather than a record.
func (c *Codec) PrepareKey() error {
	if !RegistryFormat(c.key.format) || len(c.key.cols) == 0 {
		return nil
	}
	_, _, err := c.writerSchema(&c.key)
	return err
}

// KeySchemaID returns the id of the schema the codec writes record keys
// with, in a registry format: key_schema_id, or that of the key
// columns' schema registered under the topic's key subject.
func (c *Codec) KeySchemaID() (int, error) {
	if !RegistryFormat(c.key.format) || len(c.key.cols) == 0 {
		return 0, fmt.Errorf("exec: %s %s has no key in a registry format", strings.ToLower(string(c.rel.Kind)), c.rel.Name)
	}
	_, id, err := c.writerSchema(&c.key)
	return id, err
}

// RegisterKeySchema registers the schema the codec writes record keys
// with, in a registry format, under the key subject of its output topic,
// even when key_schema_id names it: a view keyed as its source writes
// its keys in the source's key schema, and a reader that looks for
// the schema of its topic's keys by subject finds it.
func (c *Codec) RegisterKeySchema(ctx context.Context) error {
	if !RegistryFormat(c.key.format) || len(c.key.cols) == 0 {
		return nil
	}
	ws, _, err := c.writerSchema(&c.key)
	if err != nil {
		return err
	}
	_, err = c.reg.register(ctx, KeySubject(c.OutputTopic()), ws.typ, ws.text)
	return err
}

// Warm fetches the writer schemas of a record's key and value, in a
// registry format, unless the codec has them: a task calls it for every
// record it fetched before it decodes any, so that a registry that
// cannot be reached fails the batch (the error is Unavailable), to be
// tried again, rather than the records being skipped as bad. Any other
// problem is left for the decoding to report.
func (c *Codec) Warm(key, value []byte) error {
	if c.reg == nil {
		return nil
	}
	for _, x := range []struct {
		p *part
		b []byte
	}{{&c.key, key}, {&c.value, value}} {
		if x.b == nil || len(x.p.cols) == 0 || !RegistryFormat(x.p.format) || x.p.format == valueFormatJSONSR {
			continue // JSON_SR reads without its schema
		}
		id, err := SchemaID(x.b)
		if err != nil {
			continue
		}
		if _, err := c.reg.schemaByID(int(id)); Unavailable(err) {
			return err
		}
	}
	return nil
}

// Registered reports whether the codec's key or value format keeps its
// schemas in a schema registry.
func (c *Codec) Registered() bool {
	return RegistryFormat(c.valueFormat) || RegistryFormat(c.key.format) && len(c.keyCols) > 0
}
