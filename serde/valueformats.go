package serde

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
)

// The value formats besides a JSON object (json.go):
//
//   - DELIMITED: the value columns' values in column order, separated by
//     value_delimiter (a comma unless it says otherwise), quoted as CSV
//     is (RFC 4180: a field holding the delimiter, a quote or a line
//     break is in double quotes, a quote in it doubled). An empty field
//     is NULL, and NULL is written as one; a record with another number
//     of fields than the value columns is refused. Scalars are written as
//     JSON writes them (TIMESTAMP as epoch milliseconds, DATE and the
//     other time types as ISO text), without JSON's quotes, and read as
//     a JSON string holding them would be (numbers, booleans, times).
//   - KAFKA: one value column, written as Kafka's serializer for its type
//     writes it (the KAFKA key format's encodings, key.go).
//   - JSON with wrap_single_value = false: one value column, whose value
//     is the record's value itself (a JSON scalar, array or object), not
//     an object with one field.
//
// Value formats as written in value_format.
const (
	valueFormatJSON      = "json"
	valueFormatDelimited = "delimited"
	valueFormatKafka     = "kafka"
	valueFormatAvro      = "avro"
	valueFormatProtobuf  = "protobuf"
	valueFormatProtoNoSR = "protobuf_nosr"
	valueFormatJSONSR    = "json_sr"
)

// DelimiterRune returns the delimiter a value_delimiter names: one
// character, or TAB or SPACE (ksqlDB's names for those two); ok is false
// for anything else, and for a character CSV cannot delimit by (a quote,
// a line break, the Unicode replacement character).
func DelimiterRune(s string) (r rune, ok bool) {
	switch strings.ToUpper(s) {
	case "":
		return ',', true
	case "TAB":
		return '\t', true
	case "SPACE":
		return ' ', true
	}
	r, n := utf8.DecodeRuneInString(s)
	if n != len(s) || r == '"' || r == '\r' || r == '\n' || r == utf8.RuneError {
		return 0, false
	}
	return r, true
}

// decodeDelimited decodes a DELIMITED record value into the value
// columns cols (see decodeJSONValueInto for dst and idx).
func decodeDelimited(dst []any, idx []int, cols []catalog.Column, delim rune, b []byte) error {
	r := csv.NewReader(bytes.NewReader(b))
	r.Comma = delim
	r.FieldsPerRecord = -1
	fields, err := r.Read()
	switch {
	case err == io.EOF:
		// An empty value (or only a line break): one empty field.
		fields = []string{""}
	case err != nil:
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return pgerr.New(pgerr.InvalidTextRepresentation, "value is not a valid DELIMITED record: %v (%s)", err, snippet(b))
	}
	if _, err := r.Read(); err != io.EOF {
		return pgerr.New(pgerr.InvalidTextRepresentation, "value holds more than one DELIMITED line (%s)", snippet(b)).
			WithHint("A record's value is one line of delimited fields; a line break inside a field must be quoted.")
	}
	if len(fields) != len(cols) {
		return pgerr.New(pgerr.InvalidTextRepresentation, "value has %d DELIMITED fields, and the value columns are %d (%s): %s",
			len(fields), len(cols), columnNames(cols), snippet(b)).
			WithHint("Each record's value holds one field per value column, in column order, separated by %s.", describeDelimiter(delim))
	}
	for i, f := range fields {
		if f == "" {
			setCol(dst, idx, i, nil)
			continue
		}
		var raw []byte
		if cols[i].Type == catalog.JSON || cols[i].Type == catalog.JSONB {
			raw = []byte(f) // the field is the JSON text
		} else {
			raw = appendJSONString(nil, f)
		}
		v, cerr := decodeJSONColumn(raw, cols[i])
		if cerr != nil && cerr.code == pgerr.InvalidTextRepresentation {
			// The field's text, not the JSON string it was read as.
			return pgerr.New(cerr.code, "DELIMITED field %d (column %q): %s is not a valid %s", i+1, cols[i].Name, snippet([]byte(f)), cols[i].TypeString())
		}
		if cerr != nil {
			return cerr.wrap("DELIMITED field %d (column %q)", i+1, cols[i].Name)
		}
		setCol(dst, idx, i, v)
	}
	return nil
}

// encodeDelimited encodes the values of the value columns cols as a
// DELIMITED record value, without a line break at its end.
func encodeDelimited(cols []catalog.Column, delim rune, vals []any) ([]byte, error) {
	fields := make([]string, len(cols))
	for i, c := range cols {
		if vals[i] == nil {
			continue
		}
		b, err := appendJSONValue(nil, c.Type, c.Name, vals[i])
		if err != nil {
			return nil, err
		}
		if len(b) > 0 && b[0] == '"' && c.Type != catalog.JSON && c.Type != catalog.JSONB {
			var s string
			if err := json.Unmarshal(b, &s); err != nil {
				return nil, fmt.Errorf("exec: column %q: %w", c.Name, err)
			}
			fields[i] = s
		} else {
			fields[i] = string(b)
		}
	}
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	w.Comma = delim
	if err := w.Write(fields); err != nil {
		return nil, fmt.Errorf("exec: DELIMITED value: %w", err)
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return nil, fmt.Errorf("exec: DELIMITED value: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// describeDelimiter names a delimiter for messages.
func describeDelimiter(d rune) string {
	switch d {
	case ',':
		return "commas"
	case '\t':
		return "tabs"
	case ' ':
		return "spaces"
	}
	return fmt.Sprintf("%q", d)
}

// columnNames lists the names of cols.
func columnNames(cols []catalog.Column) string {
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.Name
	}
	return strings.Join(names, ", ")
}

// decodeUnwrapped decodes a JSON value that is the value of the single
// value column c itself (wrap_single_value = false).
func decodeUnwrapped(dst []any, idx []int, c catalog.Column, b []byte) error {
	raw, err := trimJSON(b, "value")
	if err != nil {
		return err
	}
	if !json.Valid(raw) {
		return invalidJSON(raw, "value")
	}
	v, cerr := decodeJSONColumn(raw, c)
	if cerr != nil {
		return cerr.wrap("value (column %q, unwrapped)", c.Name)
	}
	setCol(dst, idx, 0, v)
	return nil
}
