package materialize

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/cockroachdb/apd/v3"

	"github.com/basindb/basin/internal/numeric"
)

// Row encoding.
//
// A row value is a uvarint count of values followed by each value as a tag
// byte and a payload:
//
//	NULL          0x00
//	false         0x01
//	true          0x02
//	int64         0x03  zigzag varint
//	float64       0x04  8 bytes little-endian IEEE-754 bits (NaN payload kept)
//	string        0x05  uvarint length, bytes
//	time (µs)     0x06  varint Unix microseconds, for timestamps at basin's
//	                    microsecond precision (the common case)
//	time (ns)     0x07  varint Unix seconds, uvarint nanoseconds, for any
//	                    other time.Time
//	numeric       0x08  uvarint length, Postgres's binary numeric (weight,
//	                    sign, display scale, base-10000 digits), which
//	                    keeps the value's scale
//
// and the tags of blobenc.go (uuid, json, bytea), arrayenc.go (arrays),
// nestedenc.go (structs and maps) and datetime.go (date, time,
// interval).
//
// It is self-describing (no schema needed to decode, so a row written
// before an ALTER still decodes), compact (small ints and current
// timestamps take a few bytes) and cheap: encoding does not allocate
// beyond growing dst, and decoding allocates the []any, the boxed values
// and one copy of the row shared by all its strings. Unlike the key
// encoding it is not order-preserving; rows are values, never compared as
// bytes. New tags may be added; old ones never change meaning.
const (
	rowNull     = 0x00
	rowFalse    = 0x01
	rowTrue     = 0x02
	rowInt      = 0x03
	rowFloat    = 0x04
	rowString   = 0x05
	rowTimeUsec = 0x06
	rowTimeNsec = 0x07
	rowDecimal  = 0x08
)

// maxMicroSec bounds the Unix seconds whose microseconds fit an int64.
const maxMicroSec = math.MaxInt64/1_000_000 - 1

// EncodeRow returns the encoding of vals. Each value must be nil, bool,
// int64, float64, string or time.Time.
func EncodeRow(vals []any) ([]byte, error) {
	return AppendRow(make([]byte, 0, rowSizeHint(vals)), vals)
}

// rowSizeHint is a cheap upper-ish estimate of the encoded size, so
// EncodeRow allocates once in the common case.
func rowSizeHint(vals []any) int {
	n := 2
	for _, v := range vals {
		if s, ok := v.(string); ok {
			n += len(s) + 3
		} else {
			n += 10
		}
	}
	return n
}

// AppendRow appends the encoding of vals to dst.
func AppendRow(dst []byte, vals []any) ([]byte, error) {
	return appendRow(dst, vals, 0)
}

// appendRow is AppendRow of a row that is an array nested depth deep.
func appendRow(dst []byte, vals []any, depth int) ([]byte, error) {
	dst = binary.AppendUvarint(dst, uint64(len(vals)))
	for i, v := range vals {
		switch v := v.(type) {
		case nil:
			dst = append(dst, rowNull)
		case bool:
			if v {
				dst = append(dst, rowTrue)
			} else {
				dst = append(dst, rowFalse)
			}
		case int64:
			dst = append(dst, rowInt)
			dst = binary.AppendVarint(dst, v)
		case float64:
			dst = append(dst, rowFloat)
			dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(v))
		case string:
			dst = append(dst, rowString)
			dst = binary.AppendUvarint(dst, uint64(len(v)))
			dst = append(dst, v...)
		case time.Time:
			sec, nsec := v.Unix(), v.Nanosecond()
			if nsec%1000 == 0 && sec > -maxMicroSec && sec < maxMicroSec {
				dst = append(dst, rowTimeUsec)
				dst = binary.AppendVarint(dst, sec*1e6+int64(nsec/1000))
			} else {
				dst = append(dst, rowTimeNsec)
				dst = binary.AppendVarint(dst, sec)
				dst = binary.AppendUvarint(dst, uint64(nsec))
			}
		case *apd.Decimal:
			dst = append(dst, rowDecimal)
			at := len(dst)
			dst = append(dst, 0) // the length, one byte for most values
			dst = numeric.AppendBinary(dst, v)
			dst = putLength(dst, at)
		default:
			out, ok := appendRowBlob(dst, v)
			if !ok {
				out, ok = appendRowDatetime(dst, v)
			}
			if !ok {
				var err error
				if out, ok, err = appendRowArray(dst, v, depth); err != nil {
					return out, fmt.Errorf("row column %d: %w", i, err)
				}
			}
			if !ok {
				var err error
				if out, ok, err = appendRowNested(dst, v, depth); err != nil {
					return out, fmt.Errorf("row column %d: %w", i, err)
				}
			}
			if !ok {
				return dst, fmt.Errorf("row column %d: %w: %T", i, ErrUnsupportedType, v)
			}
			dst = out
		}
	}
	return dst, nil
}

// putLength fills in the uvarint length of the bytes after dst[at],
// where one byte was left for it, moving them when it needs more.
func putLength(dst []byte, at int) []byte {
	n := len(dst) - at - 1
	if n < 0x80 {
		dst[at] = byte(n)
		return dst
	}
	var lb [binary.MaxVarintLen64]byte
	k := binary.PutUvarint(lb[:], uint64(n))
	dst = append(dst, lb[:k-1]...)
	copy(dst[at+k:], dst[at+1:at+1+n])
	copy(dst[at:], lb[:k])
	return dst
}

// DecodeRow decodes a row encoded by EncodeRow. Timestamps come back in
// UTC. The result does not alias b.
func DecodeRow(b []byte) ([]any, error) {
	return DecodeRowInto(nil, b)
}

// DecodeRowInto is DecodeRow reusing dst's storage for the result.
func DecodeRowInto(dst []any, b []byte) ([]any, error) {
	return decodeRow(dst, b, -1)
}

// DecodeRowPrefix is DecodeRowInto of only the first limit values (all of
// them when the row has fewer): a reader that needs the leading columns
// does not box the rest.
func DecodeRowPrefix(dst []any, b []byte, limit int) ([]any, error) {
	return decodeRow(dst, b, limit)
}

// decodeRow decodes the first limit values of a row, every value when
// limit is negative.
func decodeRow(dst []any, b []byte, limit int) ([]any, error) {
	return decodeRowDepth(dst, b, limit, 0)
}

// decodeRowDepth is decodeRow of a row that is an array nested depth
// deep.
func decodeRowDepth(dst []any, b []byte, limit, depth int) ([]any, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 {
		return nil, fmt.Errorf("%w: bad row header", ErrBadEncoding)
	}
	row := b
	b = b[k:]
	// Every value takes at least one byte: this bounds the allocation for
	// garbage input.
	if n > uint64(len(b)) {
		return nil, fmt.Errorf("%w: row claims %d values in %d bytes", ErrBadEncoding, n, len(b))
	}
	limited := limit >= 0 && uint64(limit) < n
	if limited {
		n = uint64(limit)
	}
	if uint64(cap(dst)) < n {
		dst = make([]any, 0, n)
	}
	dst = dst[:0]
	// strs is a copy of the whole row, made at the first non-empty string;
	// every string value is a substring of it (one allocation per row, not
	// per string).
	var strs string
	for i := uint64(0); i < n; i++ {
		if len(b) == 0 {
			return nil, fmt.Errorf("%w: row truncated at column %d", ErrBadEncoding, i)
		}
		tag := b[0]
		b = b[1:]
		switch tag {
		case rowNull:
			dst = append(dst, nil)
		case rowFalse:
			dst = append(dst, false)
		case rowTrue:
			dst = append(dst, true)
		case rowInt:
			v, k := binary.Varint(b)
			if k <= 0 {
				return nil, fmt.Errorf("%w: bad int at column %d", ErrBadEncoding, i)
			}
			dst = append(dst, v)
			b = b[k:]
		case rowFloat:
			if len(b) < 8 {
				return nil, fmt.Errorf("%w: truncated float at column %d", ErrBadEncoding, i)
			}
			dst = append(dst, math.Float64frombits(binary.LittleEndian.Uint64(b)))
			b = b[8:]
		case rowString:
			l, k := binary.Uvarint(b)
			if k <= 0 || l > uint64(len(b)-k) {
				return nil, fmt.Errorf("%w: bad string at column %d", ErrBadEncoding, i)
			}
			if l == 0 {
				dst = append(dst, "")
			} else {
				if strs == "" {
					strs = string(row)
				}
				start := len(row) - len(b) + k
				dst = append(dst, strs[start:start+int(l)])
			}
			b = b[k+int(l):]
		case rowTimeUsec:
			v, k := binary.Varint(b)
			if k <= 0 {
				return nil, fmt.Errorf("%w: bad timestamp at column %d", ErrBadEncoding, i)
			}
			dst = append(dst, time.UnixMicro(v).UTC())
			b = b[k:]
		case rowTimeNsec:
			sec, k := binary.Varint(b)
			if k <= 0 {
				return nil, fmt.Errorf("%w: bad timestamp at column %d", ErrBadEncoding, i)
			}
			nsec, k2 := binary.Uvarint(b[k:])
			if k2 <= 0 || nsec >= 1e9 {
				return nil, fmt.Errorf("%w: bad timestamp at column %d", ErrBadEncoding, i)
			}
			dst = append(dst, time.Unix(sec, int64(nsec)).UTC())
			b = b[k+k2:]
		case rowDecimal:
			l, k := binary.Uvarint(b)
			if k <= 0 || l > uint64(len(b)-k) {
				return nil, fmt.Errorf("%w: bad numeric at column %d", ErrBadEncoding, i)
			}
			d, err := numeric.ParseBinary(b[k : k+int(l)])
			if err != nil {
				return nil, fmt.Errorf("%w: bad numeric at column %d", ErrBadEncoding, i)
			}
			dst = append(dst, d)
			b = b[k+int(l):]
		case rowArray:
			a, n, err := decodeRowArray(b, i, depth)
			if err != nil {
				return nil, err
			}
			dst = append(dst, a)
			b = b[n:]
		case rowStruct, rowMap:
			v, n, err := decodeRowNested(tag, b, i, depth)
			if err != nil {
				return nil, err
			}
			dst = append(dst, v)
			b = b[n:]
		default:
			v, n, ok, err := decodeRowBlob(tag, b, i)
			if !ok {
				v, n, ok, err = decodeRowDatetime(tag, b)
				if err != nil {
					err = fmt.Errorf("column %d: %w", i, err)
				}
			}
			if !ok {
				return nil, fmt.Errorf("%w: unknown row tag %#02x at column %d", ErrBadEncoding, tag, i)
			}
			if err != nil {
				return nil, err
			}
			dst = append(dst, v)
			b = b[n:]
		}
	}
	if len(b) != 0 && !limited {
		return nil, fmt.Errorf("%w: %d trailing bytes after row", ErrBadEncoding, len(b))
	}
	return dst, nil
}

// RowKind is the kind of a RowValue.
type RowKind uint8

// The kinds of row values.
const (
	RowNull RowKind = iota
	RowBool
	RowInt
	RowFloat
	RowString
	RowTime
	// RowOther is a value of another type (DATE, TIME, INTERVAL, an
	// array, a struct, a map), boxed in Value.
	RowOther
	// RowDecimal is a numeric: Bytes holds it in Postgres's binary form.
	RowDecimal
)

// RowValue is one value of an encoded row, as VisitRowPrefix hands it
// over: unboxed, its string bytes aliasing the encoding.
type RowValue struct {
	Kind  RowKind
	Bool  bool
	Int   int64
	Float float64
	Bytes []byte
	Time  time.Time
	// Tag is a RowBlob's row tag (blobenc.go).
	Tag byte
	// Value is a RowOther's value (a date, time, interval or array).
	Value any
}

// VisitRowPrefix calls fn with each of the first limit values of the
// encoded row b (all of them when it has fewer), in order, without
// allocating: the fast way from a stored row to another encoding. v is
// reused between calls. It returns how many values it visited; an error
// of fn stops it and is returned.
func VisitRowPrefix(b []byte, limit int, fn func(i int, v *RowValue) error) (int, error) {
	var v RowValue
	return VisitRowPrefixWith(b, limit, &v, fn)
}

// VisitRowPrefixWith is VisitRowPrefix holding each value in v, the
// caller's: v escapes to fn, so a caller that visits many rows saves an
// allocation per row with a v that is already on the heap.
func VisitRowPrefixWith(b []byte, limit int, v *RowValue, fn func(i int, v *RowValue) error) (int, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 {
		return 0, fmt.Errorf("%w: bad row header", ErrBadEncoding)
	}
	b = b[k:]
	if limit >= 0 && uint64(limit) < n {
		n = uint64(limit)
	}
	for i := uint64(0); i < n; i++ {
		if len(b) == 0 {
			return int(i), fmt.Errorf("%w: row truncated at column %d", ErrBadEncoding, i)
		}
		tag := b[0]
		b = b[1:]
		switch tag {
		case rowNull:
			v.Kind = RowNull
		case rowFalse, rowTrue:
			v.Kind, v.Bool = RowBool, tag == rowTrue
		case rowInt:
			x, k := binary.Varint(b)
			if k <= 0 {
				return int(i), fmt.Errorf("%w: bad int at column %d", ErrBadEncoding, i)
			}
			v.Kind, v.Int = RowInt, x
			b = b[k:]
		case rowFloat:
			if len(b) < 8 {
				return int(i), fmt.Errorf("%w: truncated float at column %d", ErrBadEncoding, i)
			}
			v.Kind, v.Float = RowFloat, math.Float64frombits(binary.LittleEndian.Uint64(b))
			b = b[8:]
		case rowString:
			l, k := binary.Uvarint(b)
			if k <= 0 || l > uint64(len(b)-k) {
				return int(i), fmt.Errorf("%w: bad string at column %d", ErrBadEncoding, i)
			}
			v.Kind, v.Bytes = RowString, b[k:k+int(l)]
			b = b[k+int(l):]
		case rowTimeUsec:
			x, k := binary.Varint(b)
			if k <= 0 {
				return int(i), fmt.Errorf("%w: bad timestamp at column %d", ErrBadEncoding, i)
			}
			v.Kind, v.Time = RowTime, time.UnixMicro(x).UTC()
			b = b[k:]
		case rowTimeNsec:
			sec, k := binary.Varint(b)
			if k <= 0 {
				return int(i), fmt.Errorf("%w: bad timestamp at column %d", ErrBadEncoding, i)
			}
			nsec, k2 := binary.Uvarint(b[k:])
			if k2 <= 0 || nsec >= 1e9 {
				return int(i), fmt.Errorf("%w: bad timestamp at column %d", ErrBadEncoding, i)
			}
			v.Kind, v.Time = RowTime, time.Unix(sec, int64(nsec)).UTC()
			b = b[k+k2:]
		case rowDecimal:
			l, k := binary.Uvarint(b)
			if k <= 0 || l > uint64(len(b)-k) {
				return int(i), fmt.Errorf("%w: bad numeric at column %d", ErrBadEncoding, i)
			}
			v.Kind, v.Bytes = RowDecimal, b[k:k+int(l)]
			b = b[k+int(l):]
		case rowArray:
			a, n, err := decodeRowArray(b, i, 0)
			if err != nil {
				return int(i), err
			}
			v.Kind, v.Value = RowOther, a
			b = b[n:]
		case rowStruct, rowMap:
			x, n, err := decodeRowNested(tag, b, i, 0)
			if err != nil {
				return int(i), err
			}
			v.Kind, v.Value = RowOther, x
			b = b[n:]
		default:
			if x, k, ok, err := decodeRowDatetime(tag, b); ok {
				if err != nil {
					return int(i), fmt.Errorf("column %d: %w", i, err)
				}
				v.Kind, v.Value = RowOther, x
				b = b[k:]
				break
			}
			p, n, ok, err := blobSpan(tag, b, i)
			if !ok {
				return int(i), fmt.Errorf("%w: unknown row tag %#02x at column %d", ErrBadEncoding, tag, i)
			}
			if err != nil {
				return int(i), err
			}
			v.Kind, v.Bytes, v.Tag = RowBlob, p, tag
			b = b[n:]
		}
		if err := fn(int(i), v); err != nil {
			return int(i), err
		}
	}
	return int(n), nil
}
