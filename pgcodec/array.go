package pgcodec

import (
	"strconv"
	"strings"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/numeric"
	"github.com/basindb/basin/internal/pgerr"
)

// ParseArray parses an array's text form ({a,b,"c d",NULL}, or "1 2"
// for a vector) into values of t's element type. Elements of the
// oid-like types are read as numbers and unknown and record elements
// kept as text; cast converts the others (planner passes its
// ConvertValue; nil is CastText alone, enough for the array types a
// parameter may have).
func ParseArray(s string, t catalog.Type, cast func(string, catalog.Type) (any, error)) ([]any, error) {
	elem := t.Elem()
	if cast == nil {
		cast = castTextOnly
	}
	conv := func(x string) (any, error) {
		if elem.OidLike() {
			n, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64)
			if err != nil {
				return nil, pgerr.New(pgerr.InvalidTextRepresentation, "invalid input syntax for type oid: %q", x)
			}
			return n, nil
		}
		if elem == catalog.Unknown || elem == catalog.Record {
			return x, nil
		}
		return cast(x, elem)
	}
	s = strings.TrimSpace(s)
	if t == catalog.Int2Vector || t == catalog.OidVector {
		var out []any
		for _, f := range strings.Fields(s) {
			v, err := conv(f)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	}
	if len(s) < 2 || s[0] != '{' || s[len(s)-1] != '}' {
		return nil, pgerr.New(pgerr.InvalidTextRepresentation, "malformed array literal: %q", s).
			WithDetail("Array value must start with \"{\" or dimension information.")
	}
	body := s[1 : len(s)-1]
	out := []any{}
	if strings.TrimSpace(body) == "" {
		return out, nil
	}
	var cur strings.Builder
	quoted, inQuotes, escaped := false, false, false
	flush := func() error {
		text := cur.String()
		cur.Reset()
		if !quoted {
			text = strings.TrimSpace(text)
			if strings.EqualFold(text, "null") {
				out = append(out, nil)
				return nil
			}
		}
		v, err := conv(text)
		if err != nil {
			return err
		}
		out = append(out, v)
		return nil
	}
	for i := 0; i < len(body); i++ {
		ch := body[i]
		switch {
		case escaped:
			cur.WriteByte(ch)
			escaped = false
		case ch == '\\':
			escaped = true
		case ch == '"':
			inQuotes, quoted = !inQuotes, true
		case ch == '{' && !inQuotes:
			return nil, pgerr.New(pgerr.FeatureNotSupported, "multidimensional arrays are not supported")
		case ch == ',' && !inQuotes:
			if err := flush(); err != nil {
				return nil, err
			}
			quoted = false
		default:
			cur.WriteByte(ch)
		}
	}
	if inQuotes {
		return nil, pgerr.New(pgerr.InvalidTextRepresentation, "malformed array literal: %q", s)
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return out, nil
}

// CastText is the input function basin's casts from text and array
// literals use for boolean, integer, bigint, double precision, text and
// the oid-like types; ok is false for any other t. It is not
// DecodeParam's, which follows Postgres for bind parameters: DecodeParam
// takes any prefix of "true" and refuses hex floats, CastText the
// reverse. The two stay apart so that neither path changes what it
// accepts.
func CastText(s string, t catalog.Type) (v any, ok bool, err error) {
	if isBlobType(t) {
		v, err := castTextBlob(s, t)
		return v, true, err
	}
	switch t {
	case catalog.Varchar:
		return s, true, nil
	case catalog.Int, catalog.BigInt:
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil {
			word := "bigint"
			if t == catalog.Int {
				word = "integer"
			}
			return nil, true, pgerr.New(pgerr.InvalidTextRepresentation, "invalid input syntax for type %s: %q", word, s)
		}
		if t == catalog.Int && (n > 1<<31-1 || n < -1<<31) {
			return nil, true, pgerr.New(pgerr.NumericValueOutOfRange, "integer out of range")
		}
		return n, true, nil
	case catalog.Double:
		w := strings.TrimSpace(s)
		switch strings.ToLower(w) {
		case "infinity", "+infinity", "inf":
			w = "+Inf"
		case "-infinity", "-inf":
			w = "-Inf"
		}
		f, err := strconv.ParseFloat(w, 64)
		if err != nil {
			return nil, true, pgerr.New(pgerr.InvalidTextRepresentation, "invalid input syntax for type double precision: %q", s)
		}
		return f, true, nil
	case catalog.Decimal:
		d, err := numeric.Parse(s)
		return d, true, err
	case catalog.Boolean:
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "t", "true", "yes", "y", "on", "1":
			return true, true, nil
		case "f", "false", "no", "n", "off", "0":
			return false, true, nil
		}
		return nil, true, pgerr.New(pgerr.InvalidTextRepresentation, "invalid input syntax for type boolean: %q", s)
	case catalog.Oid, catalog.RegClass, catalog.RegType, catalog.RegProc, catalog.RegNamespace:
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil || n < 0 || n > 1<<32-1 {
			return nil, true, pgerr.New(pgerr.InvalidTextRepresentation, "invalid input syntax for type oid: %q", s)
		}
		return n, true, nil
	}
	return nil, false, nil
}

// castTextOnly is CastText with the error a cast to another type gets.
func castTextOnly(s string, t catalog.Type) (any, error) {
	if v, ok, err := CastText(s, t); ok {
		return v, err
	}
	return nil, pgerr.New(pgerr.CannotCoerce, "cannot cast %s to %s", s, t)
}
