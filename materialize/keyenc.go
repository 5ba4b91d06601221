package materialize

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/cockroachdb/apd/v3"

	"github.com/basindb/basin/internal/numeric"
)

// Order-preserving key encoding.
//
// A key is the concatenation of its values, each a tag byte followed by a
// payload whose bytes sort like the value:
//
//	NULL       0x05
//	false      0x10
//	true       0x11
//	int64      0x20  8 bytes big-endian, sign bit flipped
//	float64    0x30  8 bytes big-endian IEEE-754 bits: positive values with
//	                 the sign bit set, negative values with all bits flipped;
//	                 -0 is written as +0 and every NaN as one NaN that sorts
//	                 after +Inf (Postgres orders NaN above all numbers)
//	string     0x40  the bytes with 0x00 escaped as 0x00 0xff, terminated by
//	                 0x00 0x01
//	time.Time  0x50  Unix seconds (8 bytes, sign flipped) then nanoseconds
//	                 (4 bytes), both big-endian
//	numeric    0x25  numeric.AppendKey: -Infinity, negatives, zero,
//	                 positives, Infinity, NaN; a finite value as its
//	                 exponent and significant digits, so 1.0 and 1.00
//	                 (equal in SQL) have one key, which decodes with the
//	                 fewest digits after the point
//
// so bytes.Compare of two encodings is the SQL order of the tuples: NULL
// first, then values ascending, strings bytewise (collation "C"), tuples
// lexicographic with a tuple sorting before every tuple it is a prefix of.
// The string terminator is what makes "a" sort before "ab" whatever
// follows it, and what makes the encoding of a tuple prefix a byte prefix
// of the encoding of every tuple that extends it (so a range scan over
// "all keys whose first column is X" is a scan of [enc(X), PrefixEnd(enc(X)))).
// This is the FoundationDB tuple layer and CockroachDB's key encoding,
// narrowed to basin's types.
//
// blobenc.go, datetime.go and nestedkey.go add the tags of their types
// (arrays, structs and maps in nestedkey.go).
//
// Values of different types sort by tag; a key column holds one type, so
// that order never shows up in SQL. The encoding is canonical: equal SQL
// values have equal bytes (-0 and +0, all NaNs), and DecodeKey rejects
// every byte string that EncodeKey would not produce, so one tuple never
// has two keys.
const (
	keyNull   = 0x05
	keyFalse  = 0x10
	keyTrue   = 0x11
	keyInt    = 0x20
	keyFloat  = 0x30
	keyString = 0x40
	keyTime   = 0x50
	keyNum    = 0x25
)

const (
	keyEscape     = 0x00 // first byte of an escape or of the terminator
	keyEscaped00  = 0xff // 0x00 0xff is a literal 0x00
	keyTerminator = 0x01 // 0x00 0x01 ends a string
	signBit       = uint64(1) << 63
	// canonicalNaN is math.NaN()'s bit pattern; every NaN is written as it.
	canonicalNaN = 0x7FF8000000000001
)

// EncodeKey appends the order-preserving encoding of the tuple vals to dst.
// Each value must be nil, bool, int64, float64, string or time.Time.
func EncodeKey(dst []byte, vals []any) ([]byte, error) {
	for i, v := range vals {
		var err error
		if dst, err = AppendKeyValue(dst, v); err != nil {
			return dst, fmt.Errorf("key column %d: %w", i, err)
		}
	}
	return dst, nil
}

// AppendKeyValue appends the encoding of one value, so a caller can build
// a key prefix for a range scan column by column.
func AppendKeyValue(dst []byte, v any) ([]byte, error) {
	return appendKeyValueDepth(dst, v, 0)
}

// appendKeyValueDepth is AppendKeyValue of a value nested depth deep in
// an array, struct or map.
func appendKeyValueDepth(dst []byte, v any, depth int) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(dst, keyNull), nil
	case bool:
		if v {
			return append(dst, keyTrue), nil
		}
		return append(dst, keyFalse), nil
	case int64:
		dst = append(dst, keyInt)
		return binary.BigEndian.AppendUint64(dst, uint64(v)^signBit), nil
	case float64:
		dst = append(dst, keyFloat)
		return binary.BigEndian.AppendUint64(dst, floatKeyBits(v)), nil
	case string:
		dst = append(dst, keyString)
		return appendEscaped(dst, v), nil
	case time.Time:
		dst = append(dst, keyTime)
		dst = binary.BigEndian.AppendUint64(dst, uint64(v.Unix())^signBit)
		return binary.BigEndian.AppendUint32(dst, uint32(v.Nanosecond())), nil
	case *apd.Decimal:
		return numeric.AppendKey(append(dst, keyNum), v), nil
	}
	if out, ok := appendKeyBlob(dst, v); ok {
		return out, nil
	}
	if out, ok := appendKeyDatetime(dst, v); ok {
		return out, nil
	}
	if out, ok, err := appendKeyNested(dst, v, depth); ok {
		return out, err
	}
	return dst, fmt.Errorf("%w: %T", ErrUnsupportedType, v)
}

func floatKeyBits(f float64) uint64 {
	if f != f {
		return canonicalNaN | signBit
	}
	if f == 0 {
		return signBit // +0, also for -0
	}
	b := math.Float64bits(f)
	if b&signBit != 0 {
		return ^b
	}
	return b | signBit
}

func appendEscaped(dst []byte, s string) []byte {
	for {
		i := indexZero(s)
		if i < 0 {
			dst = append(dst, s...)
			return append(dst, keyEscape, keyTerminator)
		}
		dst = append(dst, s[:i]...)
		dst = append(dst, keyEscape, keyEscaped00)
		s = s[i+1:]
	}
}

func indexZero(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return i
		}
	}
	return -1
}

// DecodeKey decodes a tuple encoded by EncodeKey. Timestamps come back in
// UTC. It returns an error wrapping ErrBadEncoding for any input EncodeKey
// would not have produced.
func DecodeKey(b []byte) ([]any, error) {
	var vals []any
	for len(b) > 0 {
		v, rest, err := DecodeKeyValue(b)
		if err != nil {
			return nil, fmt.Errorf("key column %d: %w", len(vals), err)
		}
		vals = append(vals, v)
		b = rest
	}
	return vals, nil
}

// DecodeKeyValue decodes the first value of an encoded key and returns the
// rest of the key.
func DecodeKeyValue(b []byte) (v any, rest []byte, err error) {
	return decodeKeyValueDepth(b, 0)
}

// decodeKeyValueDepth is DecodeKeyValue of a value nested depth deep in
// an array, struct or map.
func decodeKeyValueDepth(b []byte, depth int) (v any, rest []byte, err error) {
	if len(b) == 0 {
		return nil, nil, fmt.Errorf("%w: empty key value", ErrBadEncoding)
	}
	tag, b := b[0], b[1:]
	switch tag {
	case keyNull:
		return nil, b, nil
	case keyFalse:
		return false, b, nil
	case keyTrue:
		return true, b, nil
	case keyInt:
		if len(b) < 8 {
			return nil, nil, fmt.Errorf("%w: truncated int", ErrBadEncoding)
		}
		return int64(binary.BigEndian.Uint64(b) ^ signBit), b[8:], nil
	case keyFloat:
		if len(b) < 8 {
			return nil, nil, fmt.Errorf("%w: truncated float", ErrBadEncoding)
		}
		u := binary.BigEndian.Uint64(b)
		var bits uint64
		if u&signBit != 0 {
			bits = u &^ signBit
		} else {
			bits = ^u
		}
		f := math.Float64frombits(bits)
		if (f != f && bits != canonicalNaN) || bits == signBit {
			return nil, nil, fmt.Errorf("%w: non-canonical float %#x", ErrBadEncoding, u)
		}
		return f, b[8:], nil
	case keyString:
		return decodeEscaped(b)
	case keyNum:
		d, n, err := numeric.ParseKey(b)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: bad numeric", ErrBadEncoding)
		}
		return d, b[n:], nil
	case keyTime:
		if len(b) < 12 {
			return nil, nil, fmt.Errorf("%w: truncated timestamp", ErrBadEncoding)
		}
		sec := int64(binary.BigEndian.Uint64(b) ^ signBit)
		nsec := binary.BigEndian.Uint32(b[8:])
		if nsec >= 1e9 {
			return nil, nil, fmt.Errorf("%w: timestamp nanoseconds %d out of range", ErrBadEncoding, nsec)
		}
		return time.Unix(sec, int64(nsec)).UTC(), b[12:], nil
	}
	if v, rest, ok, err := decodeKeyBlob(tag, b); ok {
		return v, rest, err
	}
	if v, rest, ok, err := decodeKeyDatetime(tag, b); ok {
		return v, rest, err
	}
	if v, rest, ok, err := decodeKeyNested(tag, b, depth); ok {
		return v, rest, err
	}
	return nil, nil, fmt.Errorf("%w: unknown key tag %#02x", ErrBadEncoding, tag)
}

func decodeEscaped(b []byte) (any, []byte, error) {
	i := bytes.IndexByte(b, keyEscape)
	if i < 0 || i+1 >= len(b) {
		return nil, nil, fmt.Errorf("%w: unterminated string", ErrBadEncoding)
	}
	if b[i+1] == keyTerminator {
		// Fast path: no escaped zero bytes.
		return string(b[:i]), b[i+2:], nil
	}
	var s []byte
	for {
		switch b[i+1] {
		case keyTerminator:
			s = append(s, b[:i]...)
			return string(s), b[i+2:], nil
		case keyEscaped00:
			s = append(s, b[:i]...)
			s = append(s, 0)
			b = b[i+2:]
		default:
			return nil, nil, fmt.Errorf("%w: bad string escape 0x00 %#02x", ErrBadEncoding, b[i+1])
		}
		i = bytes.IndexByte(b, keyEscape)
		if i < 0 || i+1 >= len(b) {
			return nil, nil, fmt.Errorf("%w: unterminated string", ErrBadEncoding)
		}
	}
}

// PrefixEnd returns the smallest key greater than every key that has
// prefix b, for use as an exclusive upper bound. It returns nil, meaning no
// upper bound, when b is empty or all 0xff. b is not modified.
func PrefixEnd(b []byte) []byte {
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] != 0xff {
			end := make([]byte, i+1)
			copy(end, b)
			end[i]++
			return end
		}
	}
	return nil
}
