package serde

// Record keys: the key formats and the single-column Kafka serializers'
// encodings (doc.go has the table).

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
)

// Key formats, as written in key_format.
const (
	keyFormatKafka = "kafka"
	keyFormatJSON  = "json"
)

// keyFormat resolves a key_format; the empty string is the default.
func keyFormat(format string) (string, error) {
	switch strings.ToLower(format) {
	case "", keyFormatKafka:
		return keyFormatKafka, nil
	case keyFormatJSON:
		return keyFormatJSON, nil
	}
	return "", pgerr.New(pgerr.FeatureNotSupported, "key format %q is not supported", format).
		WithHint("use key_format = 'kafka' or key_format = 'json'")
}

func errMultiColumnKafkaKey(names []string) error {
	return pgerr.New(pgerr.FeatureNotSupported,
		"key_format 'kafka' supports a single key column, not %d (%s)", len(names), strings.Join(names, ", ")).
		WithHint("use key_format = 'json' for a key of several columns")
}

// EncodeKey serializes the key columns (types, names and values in key
// order) in the given key format. It returns nil, a null record key, when
// there are no key columns or all of them are NULL.
func EncodeKey(format string, types []catalog.Type, names []string, vals []any) ([]byte, error) {
	b, null, err := AppendKey(nil, format, types, names, vals)
	if err != nil || null {
		return nil, err
	}
	if b == nil {
		b = []byte{} // an empty key, not a null one
	}
	return b, nil
}

// AppendKey appends the key EncodeKey returns to dst; null reports a
// null record key, for which nothing is appended.
func AppendKey(dst []byte, format string, types []catalog.Type, names []string, vals []any) (_ []byte, null bool, err error) {
	f, err := keyFormat(format)
	if err != nil {
		return dst, false, err
	}
	if len(types) != len(vals) || len(names) != len(vals) {
		return dst, false, fmt.Errorf("exec: encode key: %d types, %d names and %d values", len(types), len(names), len(vals))
	}
	allNull := true
	for _, v := range vals {
		allNull = allNull && v == nil
	}
	if f == keyFormatKafka && len(vals) > 1 {
		return dst, false, errMultiColumnKafkaKey(names)
	}
	if allNull {
		return dst, true, nil
	}
	if f == keyFormatKafka {
		dst, err = appendKafkaKey(dst, types[0], names[0], vals[0])
		return dst, false, err
	}
	if len(vals) == 1 {
		dst, err = appendJSONValue(dst, types[0], names[0], vals[0])
		return dst, false, err
	}
	dst = append(dst, '{')
	for i, v := range vals {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, names[i])
		dst = append(dst, ':')
		if dst, err = appendJSONValue(dst, types[i], names[i], v); err != nil {
			return dst, false, err
		}
	}
	return append(dst, '}'), false, nil
}

func appendKafkaKey(dst []byte, t catalog.Type, name string, v any) ([]byte, error) {
	return appendKafkaScalar(dst, "key", t, name, v)
}

// appendKafkaScalar writes v as Kafka's serializer for its type does:
// a KAFKA-format key, or value (part says which).
func appendKafkaScalar(dst []byte, part string, t catalog.Type, name string, v any) ([]byte, error) {
	switch t {
	case catalog.Varchar:
		if s, ok := v.(string); ok {
			return append(dst, s...), nil
		}
	case catalog.Int:
		if i, ok := v.(int64); ok {
			if i < math.MinInt32 || i > math.MaxInt32 {
				return dst, pgerr.New(pgerr.NumericValueOutOfRange, "%s column %q: %d is out of range for INTEGER", part, name, i)
			}
			return binary.BigEndian.AppendUint32(dst, uint32(int32(i))), nil
		}
	case catalog.BigInt:
		if i, ok := v.(int64); ok {
			return binary.BigEndian.AppendUint64(dst, uint64(i)), nil
		}
	case catalog.Double:
		if f, ok := v.(float64); ok {
			return binary.BigEndian.AppendUint64(dst, math.Float64bits(f)), nil
		}
	case catalog.Boolean:
		if b, ok := v.(bool); ok {
			if b {
				return append(dst, 1), nil
			}
			return append(dst, 0), nil
		}
	case catalog.Timestamp:
		if ts, ok := v.(time.Time); ok {
			return binary.BigEndian.AppendUint64(dst, uint64(ts.UnixMilli())), nil
		}
	case catalog.Decimal:
		return dst, pgerr.New(pgerr.FeatureNotSupported, "%s column %q is NUMERIC, which %s_format 'kafka' cannot hold", part, name, part).
			WithHint("Use %s_format = 'json' for a NUMERIC %s.", part, part)
	default:
		if isBlobType(t) {
			return appendKafkaKeyBlob(dst, part, t, name, v)
		}
		return dst, fmt.Errorf("exec: %s column %q has type %s, which cannot be serialized", part, name, t)
	}
	return dst, badGoValue(name, t, v)
}

func badGoValue(name string, t catalog.Type, v any) error {
	return fmt.Errorf("exec: column %q: a %T is not a %s value", name, v, t)
}

// decodeKey deserializes a record key into the values of the key columns
// cols (in key order). A nil key decodes to all NULLs.
func decodeKey(format string, cols []catalog.Column, b []byte) ([]any, error) {
	out := make([]any, len(cols))
	if err := decodeKeyInto(out, nil, format, cols, b); err != nil {
		return nil, err
	}
	return out, nil
}

// decodeKeyInto is decodeKey storing key column i's value in
// dst[idx[i]] (dst[i] when idx is nil); each of those is set, to nil for
// NULL. dst is garbage after an error.
func decodeKeyInto(dst []any, idx []int, format string, cols []catalog.Column, b []byte) error {
	f, err := keyFormat(format)
	if err != nil {
		return err
	}
	if f == keyFormatKafka && len(cols) > 1 {
		names := make([]string, len(cols))
		for i, c := range cols {
			names[i] = c.Name
		}
		return errMultiColumnKafkaKey(names)
	}
	for i := range cols {
		setCol(dst, idx, i, nil)
	}
	if b == nil || len(cols) == 0 {
		return nil
	}
	if f == keyFormatKafka {
		v, err := decodeKafkaKey(cols[0], b)
		setCol(dst, idx, 0, v)
		return err
	}

	raw, err := trimJSON(b, "key")
	if err != nil {
		return err
	}
	if raw[0] != '{' {
		if !json.Valid(raw) {
			return invalidJSON(raw, "key")
		}
		if string(raw) == "null" {
			return nil
		}
		if len(cols) > 1 {
			return notObject(raw, "key", fmt.Sprintf("; a key of %d columns is a JSON object with a field per column", len(cols)))
		}
		v, cerr := decodeJSONColumn(raw, cols[0])
		if cerr != nil {
			return cerr.wrap("key column %q", cols[0].Name)
		}
		setCol(dst, idx, 0, v)
		return nil
	}
	// An object: one field per key column. A single key column may come
	// wrapped in an object too, as some producers write it.
	return decodeJSONFields(dst, idx, cols, raw, "key", "key field %q")
}

// setCol stores column i's value in dst[idx[i]], or dst[i] when idx is
// nil.
func setCol(dst []any, idx []int, i int, v any) {
	if idx != nil {
		dst[idx[i]] = v
	} else {
		dst[i] = v
	}
}

func decodeKafkaKey(c catalog.Column, b []byte) (any, error) { return decodeKafkaScalar(c, "key", b) }

// decodeKafkaScalar reads a value as Kafka's serializer for column c's
// type writes it: a KAFKA-format key, or value (part says which).
func decodeKafkaScalar(c catalog.Column, part string, b []byte) (any, error) {
	want := func(n int, what string) error {
		return pgerr.New(pgerr.DataException,
			"%s column %q: expected %d bytes (%s), found %d bytes", part, c.Name, n, what, len(b)).
			WithHint("%s_format 'kafka' reads a %s %s as Kafka's serializers write it; is the %s written in another format?", part, c.Type, part, part)
	}
	switch c.Type {
	case catalog.Varchar:
		if !utf8.Valid(b) {
			return nil, pgerr.New(pgerr.DataException, "%s column %q: %s is not valid UTF-8 (%s)", part, c.Name, part, snippet(b))
		}
		return string(b), nil
	case catalog.Int:
		if len(b) != 4 {
			return nil, want(4, "a big-endian 32-bit INTEGER")
		}
		return int64(int32(binary.BigEndian.Uint32(b))), nil
	case catalog.BigInt:
		if len(b) != 8 {
			return nil, want(8, "a big-endian 64-bit BIGINT")
		}
		return int64(binary.BigEndian.Uint64(b)), nil
	case catalog.Double:
		if len(b) != 8 {
			return nil, want(8, "a big-endian IEEE 754 DOUBLE")
		}
		return math.Float64frombits(binary.BigEndian.Uint64(b)), nil
	case catalog.Boolean:
		if len(b) != 1 {
			return nil, want(1, "a BOOLEAN")
		}
		switch b[0] {
		case 0:
			return false, nil
		case 1:
			return true, nil
		}
		return nil, pgerr.New(pgerr.DataException, "%s column %q: BOOLEAN %s byte is %d, want 0 or 1", part, c.Name, part, b[0])
	case catalog.Timestamp:
		if len(b) != 8 {
			return nil, want(8, "big-endian 64-bit epoch milliseconds")
		}
		return time.UnixMilli(int64(binary.BigEndian.Uint64(b))).UTC(), nil
	}
	if isBlobType(c.Type) {
		return decodeKafkaKeyBlob(c, part, b)
	}
	return nil, fmt.Errorf("exec: %s column %q has type %s, which cannot be deserialized", part, c.Name, c.Type)
}
