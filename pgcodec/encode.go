package pgcodec

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/cockroachdb/apd/v3"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/numeric"
)

// AppendText appends the Postgres text format of v, a value of column type
// t, to b. v must not be nil (NULL has no text form; DataRow marks it
// apart). A Go type that does not belong to t is an engine bug and an
// error.
func AppendText(b []byte, t catalog.Type, v any) ([]byte, error) {
	switch t {
	case catalog.Boolean:
		if x, ok := v.(bool); ok {
			if x {
				return append(b, 't'), nil
			}
			return append(b, 'f'), nil
		}
	case catalog.Int, catalog.BigInt:
		if x, ok := v.(int64); ok {
			return strconv.AppendInt(b, x, 10), nil
		}
	case catalog.Double:
		if x, ok := v.(float64); ok {
			return AppendFloat8(b, x), nil
		}
	case catalog.Varchar, catalog.Unknown:
		if x, ok := v.(string); ok {
			return append(b, x...), nil
		}
	case catalog.Timestamp:
		if x, ok := v.(time.Time); ok {
			return AppendTimestamp(b, x), nil
		}
	case catalog.Decimal:
		if x, ok := v.(*apd.Decimal); ok {
			return numeric.Append(b, x), nil
		}
	default:
		return appendTextPG(b, t, v)
	}
	return b, fmt.Errorf("cannot encode a Go %T as %s", v, t.PGName())
}

// AppendFloat8 appends f as Postgres 12 and later print a float8 with the
// default extra_float_digits = 1: the shortest decimal that reads back as
// the same double, in fixed notation when its decimal exponent is in
// [-4, 15) and in exponent notation otherwise, with at least two exponent
// digits. Go's 'g' switches to exponents earlier (1e+06 where Postgres
// prints 1000000), so the choice is made here and only the digits come
// from strconv.
func AppendFloat8(b []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, "NaN"...)
	case math.IsInf(f, 1):
		return append(b, "Infinity"...)
	case math.IsInf(f, -1):
		return append(b, "-Infinity"...)
	case f == 0:
		if math.Signbit(f) {
			return append(b, "-0"...)
		}
		return append(b, '0')
	}
	var scratch [32]byte
	e := strconv.AppendFloat(scratch[:0], f, 'e', -1, 64)
	if exp := decimalExponent(e); exp < -4 || exp >= 15 {
		return append(b, e...) // "1.5e+300", "2.5e-05": Postgres's form too
	}
	return strconv.AppendFloat(b, f, 'f', -1, 64)
}

// decimalExponent returns the exponent of a float formatted by strconv
// with 'e' ("-1.25e+07" → 7).
func decimalExponent(e []byte) int {
	for i := len(e) - 1; i >= 0; i-- {
		if e[i] == 'e' {
			n, _ := strconv.Atoi(string(e[i+1:]))
			return n
		}
	}
	return 0
}

// AppendTimestamp appends t in Postgres's ISO style for timestamp without
// time zone: UTC, microseconds with trailing zeros dropped, and years
// before 1 AD as "0001-... BC" (Go's year 0 is 1 BC).
func AppendTimestamp(b []byte, t time.Time) []byte {
	t = t.UTC()
	y := t.Year()
	if y > 0 {
		return t.AppendFormat(b, catalog.TimestampLayout)
	}
	b = fmt.Appendf(b, "%04d", 1-y)
	b = t.AppendFormat(b, catalog.TimestampLayout[len("2006"):])
	return append(b, " BC"...)
}

// AppendBinary appends the Postgres binary format of v, a non-NULL value
// of column type t, to b: what the type's send function produces.
func AppendBinary(b []byte, t catalog.Type, v any) ([]byte, error) {
	switch t {
	case catalog.Boolean:
		if x, ok := v.(bool); ok {
			if x {
				return append(b, 1), nil
			}
			return append(b, 0), nil
		}
	case catalog.Int:
		if x, ok := v.(int64); ok {
			if x < math.MinInt32 || x > math.MaxInt32 {
				return b, fmt.Errorf("integer %d out of range for int4", x)
			}
			return binary.BigEndian.AppendUint32(b, uint32(int32(x))), nil
		}
	case catalog.BigInt:
		if x, ok := v.(int64); ok {
			return binary.BigEndian.AppendUint64(b, uint64(x)), nil
		}
	case catalog.Double:
		if x, ok := v.(float64); ok {
			return binary.BigEndian.AppendUint64(b, math.Float64bits(x)), nil
		}
	case catalog.Varchar, catalog.Unknown:
		if x, ok := v.(string); ok {
			return append(b, x...), nil
		}
	case catalog.Timestamp:
		if x, ok := v.(time.Time); ok {
			us, ok := TimestampMicros(x)
			if !ok {
				return b, fmt.Errorf("timestamp %v out of range", x)
			}
			return binary.BigEndian.AppendUint64(b, uint64(us)), nil
		}
	case catalog.Decimal:
		if x, ok := v.(*apd.Decimal); ok {
			return numeric.AppendBinary(b, x), nil
		}
	default:
		return appendBinaryPG(b, t, v)
	}
	return b, fmt.Errorf("cannot encode a Go %T as %s", v, t.PGName())
}

// TimestampMicros is t as a binary timestamp holds it: microseconds
// since EpochUnix. ok is false when that overflows, which happens within
// Postgres's range (4713 BC to 294276 AD) for t.UnixMicro or a Duration,
// hence the count from seconds.
func TimestampMicros(t time.Time) (us int64, ok bool) {
	secs := t.Unix() - EpochUnix
	if secs > math.MaxInt64/1000000-1 || secs < math.MinInt64/1000000+1 {
		return 0, false
	}
	return secs*1e6 + int64(t.Nanosecond()/1000), true
}

// AppendValue appends v, a value of column type t, as a DataRow
// column or an array element carries it: its length, then its encoding
// in format (FormatBinary, else text); length -1 and no bytes for NULL
// (a nil v). On an error dst may hold part of the value; the caller
// drops the row.
func AppendValue(dst []byte, t catalog.Type, format int16, v any) ([]byte, error) {
	if v == nil {
		return AppendNull(dst), nil
	}
	at := len(dst)
	dst = StartValue(dst)
	var err error
	if format == FormatBinary {
		dst, err = AppendBinary(dst, t, v)
	} else {
		dst, err = AppendText(dst, t, v)
	}
	if err != nil {
		return dst, err
	}
	EndValue(dst, at)
	return dst, nil
}

// AppendNull appends a NULL value: length -1 and no bytes.
func AppendNull(dst []byte) []byte {
	return binary.BigEndian.AppendUint32(dst, math.MaxUint32)
}

// StartValue appends the length of a value to come; once its bytes are
// appended, EndValue(dst, at), with at the len(dst) StartValue was
// given, fills it in.
func StartValue(dst []byte) []byte {
	return append(dst, 0, 0, 0, 0)
}

// EndValue fills in the length StartValue left at dst[at:].
func EndValue(dst []byte, at int) {
	binary.BigEndian.PutUint32(dst[at:], uint32(len(dst)-at-4))
}

// StartDataRow appends the head of a DataRow message of n values to
// dst; once they are appended, EndDataRow(dst, start), with start the
// len(dst) StartDataRow was given, fills in the message's length.
func StartDataRow(dst []byte, n int) []byte {
	dst = append(dst, 'D', 0, 0, 0, 0)
	return binary.BigEndian.AppendUint16(dst, uint16(n))
}

// EndDataRow fills in the length of the DataRow message at dst[start:].
func EndDataRow(dst []byte, start int) {
	binary.BigEndian.PutUint32(dst[start+1:], uint32(len(dst)-start-1))
}

// AppendDataRow appends the DataRow message of wire values (nil for
// NULL) to dst.
func AppendDataRow(dst []byte, vals [][]byte) []byte {
	start := len(dst)
	dst = StartDataRow(dst, len(vals))
	for _, v := range vals {
		if v == nil {
			dst = AppendNull(dst)
			continue
		}
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(v)))
		dst = append(dst, v...)
	}
	EndDataRow(dst, start)
	return dst
}
