package serde

// JSON record values, and JSON keys' scalars and objects: a lenient
// one-pass decoder with encoding/json behind it for what the scan does not
// take, and an exact encoder.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cockroachdb/apd/v3"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/pgcodec"
)

// decodeJSONValue deserializes a JSON object record value into the values
// of the value columns cols. A null record value (a tombstone) is the
// caller's to handle; here it is an error, like any value that is not a
// JSON object.
func decodeJSONValue(cols []catalog.Column, b []byte) ([]any, error) {
	out := make([]any, len(cols))
	if err := decodeJSONValueInto(out, nil, cols, b); err != nil {
		return nil, err
	}
	return out, nil
}

// decodeJSONValueInto is decodeJSONValue storing column i's value in
// dst[idx[i]] (dst[i] when idx is nil); each of those is set, to nil for
// NULL. dst is garbage after an error.
func decodeJSONValueInto(dst []any, idx []int, cols []catalog.Column, b []byte) error {
	raw, err := trimJSON(b, "value")
	if err != nil {
		return err
	}
	if raw[0] != '{' {
		return notObject(raw, "value", "")
	}
	return decodeJSONFields(dst, idx, cols, raw, "value", "field %q")
}

// encodeJSONValue serializes the values of the value columns cols as a
// JSON object, fields in column order and named as the columns.
func encodeJSONValue(cols []catalog.Column, vals []any) ([]byte, error) {
	if len(cols) != len(vals) {
		return nil, fmt.Errorf("exec: encode value: %d columns and %d values", len(cols), len(vals))
	}
	buf := make([]byte, 0, 2+16*len(cols))
	buf = append(buf, '{')
	var err error
	for i, c := range cols {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendJSONString(buf, c.Name)
		buf = append(buf, ':')
		if buf, err = appendJSONValue(buf, c.Type, c.Name, vals[i]); err != nil {
			return nil, err
		}
	}
	return append(buf, '}'), nil
}

// ---- JSON decoding ----

// trimJSON returns b without surrounding whitespace, or an error if
// nothing is left. Validity is checked by whoever parses it.
func trimJSON(b []byte, what string) ([]byte, error) {
	raw := bytes.TrimSpace(b)
	if len(raw) == 0 {
		return nil, pgerr.New(pgerr.InvalidTextRepresentation, "%s is not valid JSON: it is empty", what)
	}
	return raw, nil
}

// invalidJSON returns the error for raw, which is not valid JSON, saying
// where and why.
func invalidJSON(raw []byte, what string) error {
	var v any
	err := json.Unmarshal(raw, &v)
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return pgerr.New(pgerr.InvalidTextRepresentation, "%s is not valid JSON: %v (at byte %d of %d: %s)",
			what, se, se.Offset, len(raw), snippet(raw))
	}
	return pgerr.New(pgerr.InvalidTextRepresentation, "%s is not valid JSON: %v (%s)", what, err, snippet(raw))
}

// notObject returns the error for raw, which does not start with '{'.
func notObject(raw []byte, what, hint string) error {
	if !json.Valid(raw) {
		return invalidJSON(raw, what)
	}
	return pgerr.New(pgerr.InvalidTextRepresentation, "%s is not a JSON object (found %s)%s", what, describeJSON(raw), hint)
}

// jsonObject is a parsed JSON object whose field values are left raw, to
// be converted to the type of the column they land in.
type jsonObject struct {
	fields map[string]json.RawMessage
	folded map[string][]string // lower-cased name → field names; built on first need
}

// parseJSONObject parses raw, which starts with '{'.
func parseJSONObject(raw []byte, what string) (*jsonObject, error) {
	o := &jsonObject{}
	if err := json.Unmarshal(raw, &o.fields); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, invalidJSON(raw, what)
		}
		return nil, pgerr.New(pgerr.InvalidTextRepresentation, "%s is not a valid JSON object: %v", what, err)
	}
	return o, nil
}

// lookup returns the field for column name: the field of that exact name,
// else the one field whose name equals it ignoring case. It returns a nil
// raw value when there is no such field or the field is JSON null.
func (o *jsonObject) lookup(name, what string) (field string, raw json.RawMessage, err error) {
	if raw, ok := o.fields[name]; ok {
		return name, nullToNil(raw), nil
	}
	if o.folded == nil {
		o.folded = make(map[string][]string, len(o.fields))
		for f := range o.fields {
			l := strings.ToLower(f)
			o.folded[l] = append(o.folded[l], f)
		}
	}
	switch fs := o.folded[strings.ToLower(name)]; len(fs) {
	case 0:
		return name, nil, nil
	case 1:
		return fs[0], nullToNil(o.fields[fs[0]]), nil
	default:
		fs = slices.Clone(fs)
		slices.Sort(fs)
		return "", nil, pgerr.New(pgerr.InvalidTextRepresentation,
			"%s has fields %s that all match column %q; field names match columns ignoring case",
			what, quoteList(fs), name)
	}
}

func nullToNil(raw json.RawMessage) json.RawMessage {
	if len(raw) == 4 && string(raw) == "null" {
		return nil
	}
	return raw
}

// decodeJSONFields decodes raw, which starts with '{', into the columns
// cols (see decodeJSONValueInto for dst and idx): each column takes the
// field lookup finds for it. what names the record part in errors,
// fieldFormat the field. It scans raw once, matching field names to the
// columns as it goes (scanJSONFields); what that scan does not take
// (invalid JSON, names it would have to unescape or fold beyond ASCII,
// fields that match a column ambiguously) goes through parseJSONObject
// and lookup, which make every error.
func decodeJSONFields(dst []any, idx []int, cols []catalog.Column, raw []byte, what, fieldFormat string) error {
	var buf [16]fieldMatch
	var m []fieldMatch
	if len(cols) <= len(buf) {
		m = buf[:len(cols)]
	} else {
		m = make([]fieldMatch, len(cols))
	}
	if !scanJSONFields(raw, cols, m) {
		return decodeJSONFieldsSlow(dst, idx, cols, raw, what, fieldFormat)
	}
	for i, c := range cols {
		field, fraw := c.Name, m[i].exact
		if !m[i].hasExact {
			if m[i].ambiguous {
				return decodeJSONFieldsSlow(dst, idx, cols, raw, what, fieldFormat)
			}
			field, fraw = "", m[i].foldedVal
		}
		if fraw == nil || string(fraw) == "null" {
			setCol(dst, idx, i, nil)
			continue
		}
		v, cerr := decodeJSONColumn(fraw, c)
		if cerr != nil {
			if field == "" {
				field = string(m[i].folded)
			}
			return cerr.wrap(fieldFormat, field)
		}
		setCol(dst, idx, i, v)
	}
	return nil
}

// decodeJSONFieldsSlow is decodeJSONFields through a map of the fields.
func decodeJSONFieldsSlow(dst []any, idx []int, cols []catalog.Column, raw []byte, what, fieldFormat string) error {
	obj, err := parseJSONObject(raw, what)
	if err != nil {
		return err
	}
	for i, c := range cols {
		field, fraw, err := obj.lookup(c.Name, what)
		if err != nil {
			return err
		}
		if fraw == nil {
			setCol(dst, idx, i, nil)
			continue
		}
		v, cerr := decodeJSONColumn(fraw, c)
		if cerr != nil {
			return cerr.wrap(fieldFormat, field)
		}
		setCol(dst, idx, i, v)
	}
	return nil
}

// fieldMatch is what scanJSONFields found for one column: as lookup
// decides, the field named exactly as the column wins; else the one
// field whose name matches it ignoring case. Of fields of the same name
// the last counts, as in encoding/json. The values are raw JSON, slices
// of the scanned object.
type fieldMatch struct {
	exact     []byte // value of the field named as the column
	hasExact  bool
	folded    []byte // name of a field matching the column ignoring case
	foldedVal []byte
	ambiguous bool // fields of different names match ignoring case
}

// maxScanDepth bounds the nesting scanJSONFields skips over; deeper
// values go through encoding/json, which has its own limit.
const maxScanDepth = 1000

// scanJSONFields scans raw, a JSON object, matching the names of its
// fields to the names of cols into m (one per column, zero on entry).
// It reports false, leaving the object to encoding/json, when raw is not
// valid JSON or has a field name with an escape or a byte beyond ASCII
// (whose lower case is Unicode's). It accepts exactly what encoding/json
// accepts otherwise, so that only invalid input takes the slow path.
func scanJSONFields(raw []byte, cols []catalog.Column, m []fieldMatch) bool {
	s := jsonScanner{b: raw}
	if !s.consume('{') {
		return false
	}
	s.skipSpace()
	if s.consume('}') {
		return s.atEnd()
	}
	for {
		if s.peek() != '"' {
			return false
		}
		nameStart := s.i + 1
		if !s.skipString() {
			return false
		}
		name := raw[nameStart : s.i-1]
		for _, c := range name {
			if c == '\\' || c >= utf8.RuneSelf {
				return false
			}
		}
		s.skipSpace()
		if !s.consume(':') {
			return false
		}
		s.skipSpace()
		valStart := s.i
		if !s.skipValue(0) {
			return false
		}
		matchField(cols, m, name, raw[valStart:s.i])
		s.skipSpace()
		if s.consume(',') {
			s.skipSpace()
			continue
		}
		if s.consume('}') {
			return s.atEnd()
		}
		return false
	}
}

// matchField records the field name: val (name ASCII) in the matches of
// the columns it matches.
func matchField(cols []catalog.Column, m []fieldMatch, name, val []byte) {
	for i := range cols {
		col := cols[i].Name
		if string(name) == col {
			m[i].exact, m[i].hasExact = val, true
			continue
		}
		if !asciiLowerEqual(name, col) {
			continue
		}
		switch {
		case m[i].folded == nil:
			m[i].folded, m[i].foldedVal = name, val
		case string(m[i].folded) == string(name):
			m[i].foldedVal = val
		default:
			m[i].ambiguous = true
		}
	}
}

// asciiLowerEqual reports whether strings.ToLower(name) ==
// strings.ToLower(col) for an ASCII name.
func asciiLowerEqual(name []byte, col string) bool {
	if len(name) != len(col) {
		for i := 0; i < len(col); i++ {
			if col[i] >= utf8.RuneSelf {
				// Lower-casing may change the length of col (and make
				// ASCII of it: the Kelvin sign is a k).
				return string(lowerASCII(name)) == strings.ToLower(col)
			}
		}
		return false
	}
	for i, c := range name {
		d := col[i]
		if d >= utf8.RuneSelf {
			return string(lowerASCII(name)) == strings.ToLower(col)
		}
		if c != d && toLowerASCII(c) != toLowerASCII(d) {
			return false
		}
	}
	return true
}

func toLowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func lowerASCII(b []byte) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		out[i] = toLowerASCII(c)
	}
	return out
}

// jsonScanner walks JSON text, checking it as encoding/json's scanner
// does.
type jsonScanner struct {
	b []byte
	i int
}

func (s *jsonScanner) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *jsonScanner) consume(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

func (s *jsonScanner) atEnd() bool {
	s.skipSpace()
	return s.i == len(s.b)
}

func (s *jsonScanner) skipSpace() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// skipValue skips one value, depth the nesting it is in.
func (s *jsonScanner) skipValue(depth int) bool {
	switch c := s.peek(); {
	case c == '"':
		return s.skipString()
	case c == '-' || ('0' <= c && c <= '9'):
		return s.skipNumber()
	case c == 't':
		return s.skipLiteral("true")
	case c == 'f':
		return s.skipLiteral("false")
	case c == 'n':
		return s.skipLiteral("null")
	case c == '{' || c == '[':
		if depth >= maxScanDepth {
			return false
		}
		return s.skipContainer(depth + 1)
	}
	return false
}

// skipContainer skips an object or an array.
func (s *jsonScanner) skipContainer(depth int) bool {
	object := s.b[s.i] == '{'
	end := byte(']')
	if object {
		end = '}'
	}
	s.i++
	s.skipSpace()
	if s.consume(end) {
		return true
	}
	for {
		if object {
			if s.peek() != '"' || !s.skipString() {
				return false
			}
			s.skipSpace()
			if !s.consume(':') {
				return false
			}
			s.skipSpace()
		}
		if !s.skipValue(depth) {
			return false
		}
		s.skipSpace()
		if s.consume(',') {
			s.skipSpace()
			continue
		}
		return s.consume(end)
	}
}

// skipString skips a string: s.b[s.i] is its opening quote.
func (s *jsonScanner) skipString() bool {
	b := s.b
	for i := s.i + 1; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			s.i = i + 1
			return true
		case c < 0x20:
			return false
		case c == '\\':
			i++
			if i == len(b) {
				return false
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(b) {
					return false
				}
				for _, h := range b[i+1 : i+5] {
					if !isHex(h) {
						return false
					}
				}
				i += 4
			default:
				return false
			}
		}
	}
	return false
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// skipNumber skips a number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *jsonScanner) skipNumber() bool {
	b, i := s.b, s.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		for i++; i < len(b) && '0' <= b[i] && b[i] <= '9'; i++ {
		}
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i == len(b) || b[i] < '0' || b[i] > '9' {
			return false
		}
		for ; i < len(b) && '0' <= b[i] && b[i] <= '9'; i++ {
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i == len(b) || b[i] < '0' || b[i] > '9' {
			return false
		}
		for ; i < len(b) && '0' <= b[i] && b[i] <= '9'; i++ {
		}
	}
	s.i = i
	return true
}

func (s *jsonScanner) skipLiteral(lit string) bool {
	if len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit {
		s.i += len(lit)
		return true
	}
	return false
}

// convError is a failure to convert one JSON value to a column type; wrap
// adds which field or column it was.
type convError struct {
	code pgerr.Code
	msg  string
}

func (e *convError) wrap(format string, args ...any) error {
	return pgerr.New(e.code, "%s: %s", fmt.Sprintf(format, args...), e.msg)
}

func mismatch(t catalog.Type, raw []byte) *convError {
	return &convError{pgerr.InvalidTextRepresentation, fmt.Sprintf("expected %s, found %s", t, describeJSON(raw))}
}

// decodeJSONScalar converts one valid, non-null JSON value to a value of
// type t.
func decodeJSONScalar(raw []byte, t catalog.Type) (any, *convError) {
	if len(raw) == 4 && string(raw) == "null" {
		return nil, nil
	}
	switch t {
	case catalog.Varchar:
		if raw[0] == '"' {
			return jsonText(raw)
		}
		// Numbers, booleans and nested JSON land in a VARCHAR column as
		// their JSON text, as in ksqlDB.
		if !utf8.Valid(raw) {
			return nil, &convError{pgerr.CharacterNotInRepertoire, fmt.Sprintf("%s is not valid UTF-8", describeJSON(raw))}
		}
		return string(raw), nil

	case catalog.Boolean:
		switch raw[0] {
		case 't':
			return true, nil
		case 'f':
			return false, nil
		case '"':
			s := strings.TrimSpace(jsonString(raw))
			if strings.EqualFold(s, "true") {
				return true, nil
			}
			if strings.EqualFold(s, "false") {
				return false, nil
			}
		}
		return nil, mismatch(t, raw)

	case catalog.Int, catalog.BigInt:
		text, ok := numberText(raw)
		if !ok {
			return nil, mismatch(t, raw)
		}
		return parseIntegral(text, t, raw)

	case catalog.Double:
		text, ok := numberText(raw)
		if !ok {
			if raw[0] == '"' {
				if f, ok := parseNonFinite(jsonString(raw)); ok {
					return f, nil
				}
			}
			return nil, mismatch(t, raw)
		}
		f, err := strconv.ParseFloat(string(text), 64)
		if err != nil && !math.IsInf(f, 0) {
			return nil, mismatch(t, raw)
		}
		if math.IsInf(f, 0) {
			return nil, &convError{pgerr.NumericValueOutOfRange, fmt.Sprintf("%s is out of range for DOUBLE", describeJSON(raw))}
		}
		return f, nil

	case catalog.Timestamp:
		if text, ok := numberText(raw); ok {
			return parseEpochMillis(text, raw)
		}
		if raw[0] == '"' {
			if ts, ok := parseTimestamp(strings.TrimSpace(jsonString(raw))); ok {
				return ts, nil
			}
			return nil, &convError{pgerr.InvalidDatetimeFormat, fmt.Sprintf(
				"expected TIMESTAMP, found %s (want epoch milliseconds, RFC 3339 or 'YYYY-MM-DD HH:MM:SS[.ffffff]')", describeJSON(raw))}
		}
		return nil, mismatch(t, raw)

	case catalog.Decimal:
		return decodeJSONDecimal(raw)
	}
	if isBlobType(t) {
		return decodeJSONBlob(raw, t)
	}
	if v, ok, cerr := decodeJSONDatetime(raw, t); ok {
		return v, cerr
	}
	if v, ok, cerr := decodeJSONNested(raw, t); ok {
		return v, cerr
	}
	return nil, &convError{pgerr.FeatureNotSupported, fmt.Sprintf("type %s cannot be read from JSON", t)}
}

// jsonString decodes a valid JSON string literal. Invalid UTF-8 becomes
// U+FFFD, as encoding/json does.
func jsonString(raw []byte) string {
	inner := raw[1 : len(raw)-1]
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return string(inner)
	}
	var s string
	json.Unmarshal(raw, &s) // raw was validated
	return s
}

// jsonText decodes a valid JSON string literal into a VARCHAR value,
// which holds exactly what the record says or is an error: a string
// that is not valid UTF-8, or whose \u escapes are not characters (a
// lone UTF-16 surrogate), would become U+FFFD, and the record is skipped
// into the processing log instead (docs/sql.md, "Record formats"). A NUL
// character (\u0000) is kept, as INSERT writes it: a VARCHAR holds it,
// though no Postgres text value does.
func jsonText(raw []byte) (any, *convError) {
	inner := raw[1 : len(raw)-1]
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return string(inner), nil
	}
	if !utf8.Valid(inner) {
		return nil, &convError{pgerr.CharacterNotInRepertoire, fmt.Sprintf("string %s is not valid UTF-8", snippet(inner))}
	}
	s := jsonString(raw)
	if strings.ContainsRune(s, utf8.RuneError) && !bytes.Contains(inner, []byte("\xef\xbf\xbd")) &&
		!bytes.Contains(bytes.ToLower(inner), []byte(`\ufffd`)) {
		return nil, &convError{pgerr.CharacterNotInRepertoire, fmt.Sprintf(
			"string %s has a \\u escape that is not a character (a lone UTF-16 surrogate)", snippet(inner))}
	}
	return s, nil
}

// numberText returns the text of a JSON number, or of a JSON string that
// holds one (surrounding spaces allowed), the way ksqlDB accepts numbers
// sent as strings. The text of a number is raw itself: most numbers are
// parsed without a copy.
func numberText(raw []byte) ([]byte, bool) {
	switch c := raw[0]; {
	case c == '-' || (c >= '0' && c <= '9'):
		return raw, true
	case c == '"':
		s := strings.TrimSpace(jsonString(raw))
		return []byte(s), isDecimal(s)
	}
	return nil, false
}

// isDecimal reports whether s is a decimal number: an optional sign,
// digits with an optional fraction, an optional exponent.
func isDecimal(s string) bool {
	i := 0
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		i++
	}
	digits := 0
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		digits++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
			digits++
		}
	}
	if digits == 0 {
		return false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '-' || s[i] == '+') {
			i++
		}
		exp := 0
		for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
			exp++
		}
		if exp == 0 {
			return false
		}
	}
	return i == len(s)
}

// parseNonFinite reads the strings encodeJSONValue writes for non-finite
// doubles, and the other spellings strconv knows ("inf", "+Infinity").
func parseNonFinite(s string) (float64, bool) {
	s = strings.TrimSpace(s)
	switch strings.ToLower(strings.TrimLeft(s, "+-")) {
	case "nan", "inf", "infinity":
		f, err := strconv.ParseFloat(s, 64)
		return f, err == nil
	}
	return 0, false
}

// parseIntegral parses a decimal number that must be an integer in the
// range of t.
func parseIntegral(text []byte, t catalog.Type, raw []byte) (any, *convError) {
	lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
	if t == catalog.Int {
		lo, hi = math.MinInt32, math.MaxInt32
	}
	// The error is made only when needed: most values parse.
	outOfRange := func() *convError {
		return &convError{pgerr.NumericValueOutOfRange, fmt.Sprintf("%s is out of range for %s", describeJSON(raw), t)}
	}
	i, err := strconv.ParseInt(string(text), 10, 64)
	if err != nil {
		// An exponent or a fraction ("1e3", "2.0"), or beyond int64.
		f, ferr := strconv.ParseFloat(string(text), 64)
		if ferr != nil && !math.IsInf(f, 0) {
			return nil, mismatch(t, raw)
		}
		if f != math.Trunc(f) {
			return nil, &convError{pgerr.InvalidTextRepresentation,
				fmt.Sprintf("expected %s, found %s, which is not an integer", t, describeJSON(raw))}
		}
		if f < -(1<<63) || f >= 1<<63 {
			return nil, outOfRange()
		}
		i = int64(f)
	}
	if i < lo || i > hi {
		return nil, outOfRange()
	}
	return i, nil
}

// maxAbsMillis keeps epoch milliseconds within int64 microseconds.
const maxAbsMillis = math.MaxInt64 / 1000

// parseEpochMillis reads epoch milliseconds, possibly fractional.
func parseEpochMillis(b []byte, raw []byte) (any, *convError) {
	outOfRange := func() *convError {
		return &convError{pgerr.NumericValueOutOfRange, fmt.Sprintf("%s is out of range for TIMESTAMP (epoch milliseconds)", describeJSON(raw))}
	}
	if ms, err := strconv.ParseInt(string(b), 10, 64); err == nil {
		if ms < -maxAbsMillis || ms > maxAbsMillis {
			return nil, outOfRange()
		}
		return time.UnixMilli(ms).UTC(), nil
	}
	text := string(b)
	// A decimal fraction is read exactly, to the microsecond (further
	// digits are cut), so that what encodeJSONValue writes reads back to
	// the same time at any magnitude.
	if intPart, frac, ok := strings.Cut(strings.TrimPrefix(text, "-"), "."); ok && allDigits(intPart) && allDigits(frac) {
		ms, err := strconv.ParseInt(intPart, 10, 64)
		if err != nil || ms > maxAbsMillis-1 {
			return nil, outOfRange()
		}
		frac = (frac + "000")[:3]
		us := ms*1000 + int64(frac[0]-'0')*100 + int64(frac[1]-'0')*10 + int64(frac[2]-'0')
		if text[0] == '-' {
			us = -us
		}
		return time.UnixMicro(us).UTC(), nil
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil && !math.IsInf(f, 0) {
		return nil, mismatch(catalog.Timestamp, raw)
	}
	if math.IsInf(f, 0) || math.Abs(f) > maxAbsMillis {
		return nil, outOfRange()
	}
	return time.UnixMicro(int64(math.Round(f * 1000))).UTC(), nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return len(s) > 0
}

// timestampLayouts are tried in order; a date and time may be separated by
// 'T' or a space (normalized to 'T' first). Fractional seconds are
// accepted after the seconds by every layout. Without a zone, UTC.
var timestampLayouts = []string{
	"2006-01-02T15:04:05Z07:00",
	"2006-01-02T15:04:05Z0700",
	"2006-01-02T15:04:05Z07",
	"2006-01-02T15:04:05",
	"2006-01-02T15:04",
	"2006-01-02",
}

func parseTimestamp(s string) (time.Time, bool) {
	if len(s) > 10 && s[10] == ' ' {
		s = s[:10] + "T" + s[11:]
	}
	for _, l := range timestampLayouts {
		if ts, err := time.Parse(l, s); err == nil {
			return catalog.NormalizeTime(ts), true
		}
	}
	return time.Time{}, false
}

// describeJSON describes a JSON value for an error message.
func describeJSON(raw []byte) string {
	switch raw[0] {
	case 'n':
		return "null"
	case 't', 'f':
		return "JSON boolean " + string(raw)
	case '"':
		s := jsonString(raw)
		if len(s) > 40 {
			s = truncateUTF8(s, 40) + "..."
		}
		return "JSON string " + strconv.Quote(s)
	case '{':
		return "JSON object " + snippet(raw)
	case '[':
		return "JSON array " + snippet(raw)
	}
	return "JSON number " + snippet(raw)
}

// snippet quotes up to 40 bytes of b for an error message.
func snippet(b []byte) string {
	if len(b) > 40 {
		return strconv.Quote(truncateUTF8(string(b), 40)) + "..."
	}
	return strconv.Quote(string(b))
}

func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func quoteList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ", ")
}

// ---- JSON encoding ----

// appendJSONValue appends v, a value of type t, as JSON.
func appendJSONValue(buf []byte, t catalog.Type, name string, v any) ([]byte, error) {
	if v == nil {
		return append(buf, "null"...), nil
	}
	switch t {
	case catalog.Boolean:
		if b, ok := v.(bool); ok {
			return strconv.AppendBool(buf, b), nil
		}
	case catalog.Int, catalog.BigInt:
		if i, ok := v.(int64); ok {
			return strconv.AppendInt(buf, i, 10), nil
		}
	case catalog.Double:
		if f, ok := v.(float64); ok {
			return appendJSONFloat(buf, f), nil
		}
	case catalog.Varchar:
		if s, ok := v.(string); ok {
			return appendJSONString(buf, s), nil
		}
	case catalog.Timestamp:
		if ts, ok := v.(time.Time); ok {
			return appendEpochMillis(buf, ts), nil
		}
	case catalog.Decimal:
		if d, ok := v.(*apd.Decimal); ok {
			return appendJSONDecimal(buf, d), nil
		}
	default:
		if isBlobType(t) {
			return appendJSONBlob(buf, t, name, v)
		}
		if out, ok := appendJSONDatetime(buf, t, v); ok {
			return out, nil
		}
		if pgcodec.IsDatetime(t) {
			break
		}
		if t.IsArray() {
			if a, ok := v.([]any); ok {
				return appendJSONArray(buf, t.Elem(), name, a)
			}
			break
		}
		if out, ok, err := appendJSONNested(buf, t, name, v); ok {
			return out, err
		}
		return nil, fmt.Errorf("exec: column %q has type %s, which cannot be written as JSON", name, t)
	}
	return nil, badGoValue(name, t, v)
}

// appendJSONArray writes an array column's value (a view's array_agg or
// collect_list) as a JSON array of its elements, each written as a
// column of the element type would be; a nested array's elements are
// arrays.
func appendJSONArray(buf []byte, elem catalog.Type, name string, a []any) ([]byte, error) {
	buf = append(buf, '[')
	for i, x := range a {
		if i > 0 {
			buf = append(buf, ',')
		}
		var err error
		if sub, ok := x.([]any); ok {
			buf, err = appendJSONArray(buf, elem, name, sub)
		} else {
			buf, err = appendJSONValue(buf, elem, name, x)
		}
		if err != nil {
			return nil, err
		}
	}
	return append(buf, ']'), nil
}

// appendJSONFloat writes f as encoding/json does, and the non-finite
// values as strings.
func appendJSONFloat(buf []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(buf, `"NaN"`...)
	case math.IsInf(f, 1):
		return append(buf, `"Infinity"`...)
	case math.IsInf(f, -1):
		return append(buf, `"-Infinity"`...)
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	buf = strconv.AppendFloat(buf, f, format, -1, 64)
	if format == 'e' {
		// Clean up e-09 to e-9, as encoding/json does.
		n := len(buf)
		if n >= 4 && buf[n-4] == 'e' && buf[n-3] == '-' && buf[n-2] == '0' {
			buf[n-2] = buf[n-1]
			buf = buf[:n-1]
		}
	}
	return buf
}

// appendEpochMillis writes ts as epoch milliseconds, with the microseconds
// as up to three decimals: exact, so it reads back to the same time.
func appendEpochMillis(buf []byte, ts time.Time) []byte {
	us := ts.UnixMicro()
	if us < 0 {
		buf = append(buf, '-')
	}
	a := uint64(us)
	if us < 0 {
		a = -a
	}
	buf = strconv.AppendUint(buf, a/1000, 10)
	if frac := a % 1000; frac != 0 {
		buf = append(buf, '.', byte('0'+frac/100), byte('0'+frac/10%10), byte('0'+frac%10))
		buf = bytes.TrimRight(buf, "0")
	}
	return buf
}

const hexDigits = "0123456789abcdef"

// appendJSONString writes s as a JSON string. Invalid UTF-8 becomes
// U+FFFD; U+2028 and U+2029 are escaped, as encoding/json does, so the
// output is also valid JavaScript.
func appendJSONString(buf []byte, s string) []byte {
	buf = append(buf, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			buf = append(buf, s[start:i]...)
			switch c {
			case '"', '\\':
				buf = append(buf, '\\', c)
			case '\n':
				buf = append(buf, '\\', 'n')
			case '\r':
				buf = append(buf, '\\', 'r')
			case '\t':
				buf = append(buf, '\\', 't')
			default:
				buf = append(buf, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			buf = append(buf, s[start:i]...)
			buf = append(buf, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			buf = append(buf, s[start:i]...)
			buf = append(buf, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	buf = append(buf, s[start:]...)
	return append(buf, '"')
}

// EncodeJSONObject returns the JSON object of values vals of columns
// cols, keyed by column name, as value_format 'json' writes a row.
func EncodeJSONObject(cols []catalog.Column, vals []any) ([]byte, error) {
	return encodeJSONValue(cols, vals)
}
