package planner

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/serde"
)

// Record formats of streams and tables besides JSON (serde's
// valueformats.go): value_format = 'delimited' (with value_delimiter)
// and 'kafka', key_format = 'none', and wrap_single_value = false for a
// JSON value of one column.

// More key and value formats, as written in key_format and value_format.
const (
	FormatDelimited = "delimited"
	FormatNone      = "none"
	FormatAvro      = "avro"
	FormatProtobuf  = "protobuf"
	FormatProtoNoSR = "protobuf_nosr"
	FormatJSONSR    = "json_sr"
)

// The checks of the format options.
var (
	checkValueFormat = oneOf(FormatJSON, FormatDelimited, FormatKafka, FormatAvro, FormatProtobuf, FormatProtoNoSR, FormatJSONSR)
	checkKeyFormat   = oneOf(FormatKafka, FormatJSON, FormatNone, FormatDelimited, FormatAvro, FormatProtobuf, FormatProtoNoSR, FormatJSONSR)
	// checkStreamKeyFormat is a derived stream's key_format: one its
	// key can be written in.
	checkStreamKeyFormat = oneOf(FormatKafka, FormatJSON, FormatDelimited, FormatAvro, FormatProtobuf, FormatProtoNoSR, FormatJSONSR)
)

func checkDelimiter(v string) error {
	if _, ok := serde.DelimiterRune(v); !ok || v == "" {
		return fmt.Errorf("must be one character other than a quote or a line break, or TAB or SPACE")
	}
	return nil
}

// checkSchemaID checks value_schema_id: a registry's schema id.
func checkSchemaID(v string) error {
	if n, err := strconv.ParseInt(v, 10, 32); err != nil || n <= 0 {
		return fmt.Errorf("must be a schema id of the schema registry, a positive integer")
	}
	return nil
}

// checkFullName checks value_schema_full_name: an Avro full name
// (dotted names of letters, digits and underscores, none starting with a
// digit).
func checkFullName(v string) error {
	for _, part := range strings.Split(v, ".") {
		if part == "" || part[0] >= '0' && part[0] <= '9' || strings.ContainsFunc(part, func(r rune) bool {
			return !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
		}) {
			return fmt.Errorf("must be a dotted Avro name, such as com.example.Order")
		}
	}
	return nil
}

func checkBool(v string) error {
	switch strings.ToLower(v) {
	case "true", "false":
		return nil
	}
	return fmt.Errorf("must be true or false")
}

// checkFormats checks the record formats of r, a stream or table being
// declared (what names it), against its columns.
func checkFormats(r *catalog.Relation, opts map[string]string, what string) error {
	var vals []catalog.Column
	nkeys := 0
	for _, c := range r.Schema.Columns {
		if c.Key {
			nkeys++
		} else {
			vals = append(vals, c)
		}
	}
	bad := func(format string, args ...any) *pgerr.Error {
		return pgerr.New(pgerr.InvalidParameterValue, format, args...)
	}
	if r.KeyFormat == FormatNone && nkeys > 0 {
		return pgerr.New(pgerr.InvalidTableDefinition, "%s %s has key columns, and key_format 'none' reads no key", what, r.Name).
			WithHint("Drop KEY from the columns, or use key_format 'kafka' or 'json'.")
	}
	if _, ok := opts["value_delimiter"]; ok && r.ValueFormat != FormatDelimited {
		return bad("value_delimiter is for value_format 'delimited', and %s %s's is '%s'", what, r.Name, r.ValueFormat)
	}
	if err := checkKeyFormatOptions(r, opts, what); err != nil {
		return err
	}
	_, hasID := opts["value_schema_id"]
	_, hasName := opts["value_schema_full_name"]
	if (hasID || hasName) && !serde.RegistryFormat(r.ValueFormat) {
		return bad("value_schema_id and value_schema_full_name are for the schema registry's formats, and %s %s's value_format is '%s'", what, r.Name, r.ValueFormat)
	}
	if hasID && hasName {
		return bad("value_schema_id names the schema, and value_schema_full_name the one basin would register: give one of them")
	}
	wrap, hasWrap := opts["wrap_single_value"]
	switch r.ValueFormat {
	case FormatAvro, FormatProtobuf, FormatProtoNoSR, FormatJSONSR:
		if hasWrap && strings.EqualFold(wrap, "false") {
			return pgerr.New(pgerr.FeatureNotSupported, "value_format '%s' of %s %s always wraps its columns in a record: wrap_single_value = false is not supported", r.ValueFormat, what, r.Name)
		}
		var err error
		switch r.ValueFormat {
		case FormatAvro:
			_, err = serde.AvroSchema(serde.DefaultAvroName, vals)
		case FormatJSONSR:
			_, err = serde.JSONSchema(serde.DefaultAvroName, vals)
		default:
			_, err = serde.ProtobufSchema(serde.DefaultAvroName, vals)
		}
		if err != nil {
			return pgerr.New(pgerr.FeatureNotSupported, "%s %s cannot be written in value_format '%s': %v", what, r.Name, r.ValueFormat, err)
		}
	case FormatDelimited:
		if hasWrap && strings.EqualFold(wrap, "true") {
			return bad("value_format 'delimited' never wraps its values: wrap_single_value must be false or left out")
		}
		for _, c := range vals {
			if c.Type.HasNested() {
				return pgerr.New(pgerr.FeatureNotSupported, "value column %s of %s %s is %s, which value_format 'delimited' cannot hold", c.Name, what, r.Name, c.Type).
					WithHint("Use value_format 'json' for STRUCT and MAP columns, as ksqlDB's DELIMITED format has no nested types either.")
			}
		}
	case FormatKafka:
		if hasWrap && strings.EqualFold(wrap, "true") {
			return bad("value_format 'kafka' never wraps its value: wrap_single_value must be false or left out")
		}
		if len(vals) != 1 {
			return pgerr.New(pgerr.FeatureNotSupported, "value_format 'kafka' holds one value column, and %s %s has %d", what, r.Name, len(vals)).
				WithHint("Use value_format 'json' or 'delimited' for several value columns.")
		}
		if !kafkaKeyType(vals[0].Type) {
			return pgerr.New(pgerr.FeatureNotSupported, "value column %s of %s %s is %s, which value_format 'kafka' cannot hold", vals[0].Name, what, r.Name, vals[0].Type).
				WithHint("Use value_format 'json', or a value of type VARCHAR, BIGINT, INTEGER, DOUBLE, BOOLEAN, TIMESTAMP, UUID or BYTEA.")
		}
	default:
		if hasWrap && strings.EqualFold(wrap, "false") && len(vals) != 1 {
			return bad("wrap_single_value = false is for a value of one column, and %s %s has %d value columns", what, r.Name, len(vals))
		}
	}
	return nil
}

// formatOptions are the options of rel that say how its records are
// written besides its formats (value_delimiter, wrap_single_value): what
// a query writing into rel's topic (INSERT INTO ... SELECT) needs.
func formatOptions(rel *catalog.Relation) map[string]string {
	out := map[string]string{}
	for _, k := range []string{"value_delimiter", "wrap_single_value", "value_schema_id", "value_schema_full_name",
		"key_delimiter", "key_schema_id", "key_schema_full_name"} {
		if v, ok := rel.Options[k]; ok {
			out[k] = v
		}
	}
	return out
}

// sharedKeyFormat reports whether key format f is one of those keys and
// values share (serde's parts): 'delimited', 'protobuf_nosr' and the
// schema registry's, whose bytes depend on options or a schema besides
// the key's values.
func sharedKeyFormat(f string) bool {
	switch f {
	case FormatDelimited, FormatProtoNoSR, FormatAvro, FormatProtobuf, FormatJSONSR:
		return true
	}
	return false
}

// sameKeyBytes reports whether equal keys of a and b are surely the
// same record key bytes, so in the same partition of relations
// partitioned alike: the same key format and, in a registry format,
// the same schema id (which the bytes carry), or the same delimiter.
func sameKeyBytes(a, b *catalog.Relation) bool {
	if a.KeyFormat != b.KeyFormat {
		return false
	}
	switch {
	case a.KeyFormat == FormatDelimited:
		return a.Options["key_delimiter"] == b.Options["key_delimiter"]
	case serde.RegistryFormat(a.KeyFormat):
		id := a.Options["key_schema_id"]
		return id != "" && id == b.Options["key_schema_id"]
	}
	return true
}

// checkKeyFormatOptions checks the key options of r against its
// key_format: key_delimiter for 'delimited', key_schema_id and
// key_schema_full_name for the registry's formats, and that the key
// columns can be written in the format.
func checkKeyFormatOptions(r *catalog.Relation, opts map[string]string, what string) error {
	var keys []catalog.Column
	for i, c := range r.Schema.Columns {
		if c.Key && !r.WindowBound(i) { // a window is written after the key
			keys = append(keys, c)
		}
	}
	bad := func(format string, args ...any) *pgerr.Error {
		return pgerr.New(pgerr.InvalidParameterValue, format, args...)
	}
	if _, ok := opts["key_delimiter"]; ok && r.KeyFormat != FormatDelimited {
		return bad("key_delimiter is for key_format 'delimited', and %s %s's is '%s'", what, r.Name, r.KeyFormat)
	}
	_, hasID := opts["key_schema_id"]
	_, hasName := opts["key_schema_full_name"]
	if (hasID || hasName) && !serde.RegistryFormat(r.KeyFormat) {
		return bad("key_schema_id and key_schema_full_name are for the schema registry's formats, and %s %s's key_format is '%s'", what, r.Name, r.KeyFormat)
	}
	if hasID && hasName {
		return bad("key_schema_id names the schema, and key_schema_full_name the one basin would register: give one of them")
	}
	if len(keys) == 0 {
		return nil
	}
	var err error
	switch r.KeyFormat {
	case FormatAvro:
		_, err = serde.AvroSchema(serde.DefaultAvroKeyName, keys)
	case FormatJSONSR:
		_, err = serde.JSONSchema(serde.DefaultAvroKeyName, keys)
	case FormatProtobuf, FormatProtoNoSR:
		_, err = serde.ProtobufSchema(serde.DefaultAvroKeyName, keys)
	}
	if err != nil {
		return pgerr.New(pgerr.FeatureNotSupported, "the key of %s %s cannot be written in key_format '%s': %v", what, r.Name, r.KeyFormat, err)
	}
	return nil
}
