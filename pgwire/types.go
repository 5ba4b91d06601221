package pgwire

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/basindb/basin/catalog"
)

// typeLen returns pg_type.typlen of t, as RowDescription reports it: the
// fixed size in bytes, -1 for variable-length types, -2 for unknown
// (a C string).
func typeLen(t catalog.Type) int16 {
	switch t {
	case catalog.Boolean:
		return 1
	case catalog.Int:
		return 4
	case catalog.BigInt, catalog.Double, catalog.Timestamp:
		return 8
	case catalog.Varchar:
		return -1
	}
	return -2
}

// appendText appends the Postgres text format of v, a value of column type
// t, to b. v must not be nil (NULL has no text form; DataRow marks it
// apart). A Go type that does not belong to t is an engine bug and an
// error.
func appendText(b []byte, t catalog.Type, v any) ([]byte, error) {
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
			return appendFloat8(b, x), nil
		}
	case catalog.Varchar, catalog.Unknown:
		if x, ok := v.(string); ok {
			return append(b, x...), nil
		}
	case catalog.Timestamp:
		if x, ok := v.(time.Time); ok {
			return appendTimestamp(b, x), nil
		}
	}
	return b, fmt.Errorf("cannot encode a Go %T as %s", v, t.PGName())
}

// appendFloat8 appends f as Postgres 12 and later print a float8 with the
// default extra_float_digits = 1: the shortest decimal that reads back as
// the same double, in fixed notation when its decimal exponent is in
// [-4, 15) and in exponent notation otherwise, with at least two exponent
// digits. Go's 'g' switches to exponents earlier (1e+06 where Postgres
// prints 1000000), so the choice is made here and only the digits come
// from strconv.
func appendFloat8(b []byte, f float64) []byte {
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

// appendTimestamp appends t in Postgres's ISO style for timestamp without
// time zone: UTC, microseconds with trailing zeros dropped, and years
// before 1 AD as "0001-... BC" (Go's year 0 is 1 BC).
func appendTimestamp(b []byte, t time.Time) []byte {
	t = t.UTC()
	y := t.Year()
	if y > 0 {
		return t.AppendFormat(b, catalog.TimestampLayout)
	}
	b = fmt.Appendf(b, "%04d", 1-y)
	b = t.AppendFormat(b, catalog.TimestampLayout[len("2006"):])
	return append(b, " BC"...)
}
