// Package serde is how basin values become Kafka record keys and values
// and back: the key_format and value_format a table, stream or view is
// declared with. What a producer outside basin writes, a task reads here;
// what basin writes (INSERT, a view's changelog and sink topics), any
// consumer can read as that format says.
//
// # Formats
//
// Keys. key_format = 'kafka' (the default, ksqlDB's KAFKA format) writes a
// single key column the way Kafka's own serializers do, so that any
// producer can write keys basin reads, and both agree on the partition
// (kafka.Partition hashes these bytes):
//
//	VARCHAR    the UTF-8 bytes (StringSerializer)
//	INTEGER    4 bytes, big-endian two's complement (IntegerSerializer)
//	BIGINT     8 bytes, big-endian two's complement (LongSerializer)
//	DOUBLE     8 bytes, big-endian IEEE 754 (DoubleSerializer)
//	BOOLEAN    1 byte, 0 or 1 (BooleanSerializer, Kafka 3.5+)
//	TIMESTAMP  8 bytes, big-endian epoch milliseconds
//
// DATE, TIME, TIMESTAMPTZ and INTERVAL keys are refused in this format
// (a view keyed by one writes JSON keys), as ksqlDB's KAFKA format
// refuses the types it lacks.
//
// ksqlDB's KAFKA format has no TIMESTAMP; basin writes it as a BIGINT of
// epoch milliseconds, the convention of Kafka record timestamps, so the
// microseconds of a timestamp key are truncated (floored). A key with
// several columns cannot be written in this format; key_format = 'json'
// writes a single key column as a JSON scalar and several as a JSON object
// keyed by column name. A NULL key (every key column NULL) is a null
// record key.
//
// Values. value_format = 'json' is a JSON object with one field per value
// column, named as the column. Reading is lenient the way ksqlDB is (field
// names match case-insensitively, missing fields are NULL, extra fields
// are ignored, numbers may arrive as strings); writing is exact and reads
// back to the same values:
//
//	TIMESTAMP  epoch milliseconds as a JSON number, as ksqlDB writes it,
//	           with up to three decimals for the microseconds
//	           (1700000000123.456); read from a number of epoch
//	           milliseconds or from an RFC 3339 / ISO 8601 string
//	DOUBLE     a JSON number; NaN and ±Inf, which JSON cannot carry, as the
//	           strings "NaN", "Infinity" and "-Infinity", which read back
//	DATE, TIME, TIMESTAMPTZ, INTERVAL
//	           ISO text, read also from numbers (json_datetime.go)
//	NUMERIC    a JSON number with the value's exact digits and scale
//	           (1.50), NaN and ±Infinity as DOUBLE's strings; read from a
//	           number's text, never through a float64, or from a string
//	           holding a number; a NUMERIC(p,s) column rounds it to its
//	           scale (too many digits: the record is refused, 22003). A
//	           NUMERIC key column needs key_format 'json'
//
// # Layout
//
//   - key.go: the key formats (EncodeKey, AppendKey, and the decoding a
//     Codec does), the Kafka serializers' encodings.
//
//   - json.go: JSON values, and the scalars and objects of JSON keys. A
//     value is decoded in one pass over the bytes (scanJSONFields),
//     matching field names to columns without a map; what that scan does
//     not take (invalid JSON, names it would have to unescape or fold
//     beyond ASCII, fields matching a column ambiguously) goes through
//     encoding/json, which makes every error, so both paths decode and
//     fail alike.
//
//   - codec.go: Codec, a relation's records as rows: the key columns
//     from the key, the others from the value, each at its place in the
//     row, into a row a task reuses (DecodeInto) or a new one.
//
//   - valueformats.go: the value formats besides a JSON object:
//     DELIMITED (CSV fields in column order, value_delimiter), KAFKA (one
//     column, as Kafka's serializers write it: the kafka key format's
//     encodings) and unwrapped JSON (wrap_single_value = false).
//
//   - nested.go and avro_nested.go: arrays, STRUCTs and MAPs, as JSON
//     arrays and objects and as Avro arrays, records and maps; the Avro
//     side walks the schema along with the value, since the codec
//     gives unions as maps of branch names.
//
//   - avro.go: Avro values in the schema registry's wire format (a zero
//     byte, the writer schema's id, the record): the schema of a list of
//     columns (AvroSchema), writing (AppendAvro) and reading by the
//     writer's schema, field by name (DecodeAvro). avrocolumns.go has the
//     columns of a registry's Avro record schema (AvroColumns).
//
//   - protobuf.go: Protobuf values, in the schema registry's wire format
//     (PROTOBUF: the zero byte and schema id, then the message indexes
//     that name the message in the schema's file, then the message) and
//     bare (PROTOBUF_NOSR). The .proto text of a list of columns
//     (ProtobufSchema, ksqlDB's types), compiling a registry's schema text
//     into descriptors with protocompile (ParseProtobufSchema: well-known
//     imports and the files the registry provides; references not yet),
//     writing (AppendProtobuf, AppendProtobufNoSR) and reading a message
//     with dynamicpb, field by name, through Avro's lenient conversions
//     (DecodeProtobuf, DecodeProtobufNoSR). protobuf_types.go has the
//     message types that carry one value (Timestamp, Date, TimeOfDay,
//     confluent's Decimal, the wrappers) and the sources of the files the
//     registry provides without a reference.
//
//   - jsonschema.go: JSON_SR, the JSON value format's object behind the
//     registry's five bytes: the JSON Schema of a list of columns
//     (JSONSchema, with ksqlDB's Connect annotations), writing
//     (AppendJSONSR) and reading (DecodeJSONSR, without validating against
//     the schema, as ksqlDB), and SchemaID, the id of any of the three
//     framed formats.
//
//   - registry.go: Registry, the schema registry client (franz-go's
//     pkg/sr): writer schemas fetched by id once, parsed and kept (ids
//     never change; compiling a .proto costs far more than a record);
//     the ids a registry said it lacks remembered for a minute; the
//     schemas basin writes registered once per subject. A registry that
//     cannot be asked is ErrRegistryUnavailable (Unavailable), which
//     tasks retry (Codec.Warm) rather than skip records;
//     schemacolumns.go the columns of a Protobuf message and a JSON
//     Schema, for a stream declared without columns.
//
//   - codecparts.go: a record's key and value as the two parts of one
//     Codec for the formats either may be written in (DELIMITED, AVRO,
//     PROTOBUF, PROTOBUF_NOSR, JSON_SR), each with its own options and
//     writer schema; a key of one column in AVRO or JSON_SR is written
//     bare, as ksqlDB writes it.
//
//   - headers.go: the columns read from record headers (HEADER('key'),
//     HEADERS), which DecodeRecordInto sets.
//
// The Codec reads the registry formats by the id in each record and
// writes them with the schema <part>_schema_id names or the one it
// registers for the part's columns (writerSchema). A new format belongs
// in a new file here, behind Codec: callers see only rows and record
// bytes.
//
// # Errors
//
// A record that does not decode is the producer's mistake, reported in
// the processing log: each error says which field, what was expected and
// what was found, and carries a SQLSTATE of class 22 (data exception:
// 22P02 for JSON, 22000 for a Kafka-format key of the wrong size).
// A key format other than 'kafka' or 'json', or several key columns in
// 'kafka', is 0A000.
// A Go value of the wrong type for its column, or a column of a type no
// format carries, is basin's own bug and a plain error (XX000 at the
// wire); those messages still begin "exec:", as before this package was
// split out of exec, so what clients see is unchanged.
//
// # Why the boundary is here
//
// The formats are a contract with everything outside basin that reads or
// writes its topics, and with kafka.Partition, which must hash the same
// key bytes a producer would. They depend on nothing of the engine, so
// they are tested and fuzzed by themselves: serde_test.go and
// codec_test.go, and the fuzz targets FuzzDecodeJSONValue, FuzzDecodeKey,
// FuzzDecodeJSONFields (the one-pass scan against encoding/json),
// FuzzDecodeRecord (whole records through a Codec for several schemas:
// nothing panics, every error has a SQLSTATE, and what decodes encodes
// to a record that decodes to the same row), FuzzDecodeAvro,
// FuzzDecodeProtobuf and FuzzDecodeJSONSR, with their corpus under
// testdata/fuzz.
//
// What a store holds is not a record format: a stored value is
// [present, columns..., aggregate state...] in materialize's
// order-preserving row encoding, framed by stream (EncodeStored), and
// keys in stores are materialize.EncodeKey's. serde imports only catalog
// (types, columns, relations), internal/pgerr (SQLSTATE errors), pgcodec
// (the text forms of dates, times and intervals), internal/numeric and
// internal/jsonb (exact numbers and embedded JSON) besides the standard
// library and the formats' own libraries (hamba/avro, protocompile and
// google.golang.org/protobuf); it must not import materialize, exec,
// planner or node.
package serde
