package planner

import (
	"fmt"
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
)

// The checks of the format options.
var (
	checkValueFormat = oneOf(FormatJSON, FormatDelimited, FormatKafka)
	checkKeyFormat   = oneOf(FormatKafka, FormatJSON, FormatNone)
)

func checkDelimiter(v string) error {
	if _, ok := serde.DelimiterRune(v); !ok || v == "" {
		return fmt.Errorf("must be one character other than a quote or a line break, or TAB or SPACE")
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
	wrap, hasWrap := opts["wrap_single_value"]
	switch r.ValueFormat {
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
	for _, k := range []string{"value_delimiter", "wrap_single_value"} {
		if v, ok := rel.Options[k]; ok {
			out[k] = v
		}
	}
	return out
}
