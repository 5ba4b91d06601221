package pgcodec

import (
	"encoding/binary"
	"math"
	"time"

	"github.com/cockroachdb/apd/v3"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/numeric"
)

// epochMicros is EpochUnix in Unix microseconds.
const epochMicros = EpochUnix * 1_000_000

// DecodePeer decodes a value of a row another basin node sent (a
// forwarded read) from its wire form, type oid in format, to the Go
// value basin uses (int64, float64, bool, string, UTC time), for the
// types a view's columns and the pseudo-columns mostly have; ok is false
// for any other type or form (the driver then decodes the row). A nil b
// is NULL. Unlike DecodeParam it refuses nothing with an error: what it
// cannot read, the driver can.
func DecodePeer(oid uint32, format int16, b []byte) (v any, ok bool) {
	if b == nil {
		return nil, true
	}
	if t, ok := pgParamTypes[oid]; ok && isBlobType(t) {
		return decodePeerBlob(t, format, b)
	}
	if t, ok := pgParamTypes[oid]; ok && t == catalog.ArrayOf(catalog.JSONB) {
		// jsonb[]: an array of STRUCTs or MAPs (NestedFromPeer).
		v, err := DecodeParam(1, oid, format, b)
		return v, err == nil
	}
	if t, ok := datetimeOIDs[oid]; ok && IsDatetime(t) {
		var v any
		var err error
		if format == FormatText {
			v, _, err = ParseText(t, string(b), nil)
		} else {
			v, err = decodeBinaryDatetime(t, b)
		}
		return v, err == nil
	}
	if format == FormatText {
		switch oid {
		case oidText, oidVarchar, oidName:
			return string(b), true
		case oidNumeric:
			d, err := numeric.Parse(string(b))
			return d, err == nil
		}
		return nil, false
	}
	switch oid {
	case oidInt8:
		if len(b) == 8 {
			return int64(binary.BigEndian.Uint64(b)), true
		}
	case oidInt4:
		if len(b) == 4 {
			return int64(int32(binary.BigEndian.Uint32(b))), true
		}
	case oidInt2:
		if len(b) == 2 {
			return int64(int16(binary.BigEndian.Uint16(b))), true
		}
	case oidFloat8:
		if len(b) == 8 {
			return math.Float64frombits(binary.BigEndian.Uint64(b)), true
		}
	case oidFloat4:
		if len(b) == 4 {
			return float64(math.Float32frombits(binary.BigEndian.Uint32(b))), true
		}
	case oidBool:
		if len(b) == 1 {
			return b[0] != 0, true
		}
	case oidText, oidVarchar, oidName:
		return string(b), true
	case oidNumeric:
		d, err := numeric.ParseBinary(b)
		return d, err == nil
	case oidTimestamp:
		if len(b) == 8 {
			us := int64(binary.BigEndian.Uint64(b))
			if us > math.MaxInt64-epochMicros || us == math.MinInt64 {
				return nil, false // infinity, or beyond time's range: pgx's way
			}
			return time.UnixMicro(us + epochMicros).UTC(), true
		}
	}
	return nil, false
}

// FromDriver converts a value pgx decoded from a peer's row to the Go
// value basin uses (the widths differ: int4 arrives as int32, basin
// keeps int64).
func FromDriver(v any) any {
	switch v := v.(type) {
	case int16:
		return int64(v)
	case int32:
		return int64(v)
	case float32:
		return float64(v)
	case time.Time:
		return v.UTC()
	case pgtype.Numeric:
		return numericFromDriver(v)
	}
	return v
}

// numericFromDriver converts pgx's numeric to basin's; an invalid one
// (NULL) is nil.
func numericFromDriver(n pgtype.Numeric) any {
	switch {
	case !n.Valid:
		return nil
	case n.NaN:
		return numeric.NaN
	case n.InfinityModifier == pgtype.Infinity:
		return numeric.PosInf
	case n.InfinityModifier == pgtype.NegativeInfinity:
		return numeric.NegInf
	}
	d := &apd.Decimal{Exponent: n.Exp}
	if n.Int != nil {
		d.Coeff.SetMathBigInt(n.Int)
		if n.Int.Sign() < 0 {
			d.Negative = true
			d.Coeff.Abs(&d.Coeff)
		}
	}
	if t, err := numeric.Parse(numeric.Text(d)); err == nil {
		return t
	}
	return d
}
