package pgcodec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/basindb/basin/catalog"
)

// Encodings of the system types catalog queries return: oids, vectors
// and arrays. (reg* and record values reach the wire as text; see
// planner.planCatalogQuery.)

func pgTypeLen(t catalog.Type) int16 {
	switch t {
	case catalog.Date:
		return 4
	case catalog.Time, catalog.TimestampTZ:
		return 8
	case catalog.Interval:
		return 16
	}
	if t.OidLike() {
		return 4
	}
	if t == catalog.UUID {
		return 16
	}
	return -1
}

func appendTextPG(b []byte, t catalog.Type, v any) ([]byte, error) {
	if out, ok := appendTextBlob(b, t, v); ok {
		return out, nil
	}
	if out, ok, err := appendTextNested(b, t, v); ok {
		return out, err
	}
	if out, ok, err := appendTextDatetime(b, t, v); ok {
		return out, err
	}
	switch {
	case t.OidLike():
		if x, ok := v.(int64); ok {
			return fmt.Appendf(b, "%d", x), nil
		}
	case t.Subscriptable():
		if x, ok := v.([]any); ok {
			elem := t.Elem()
			return append(b, catalog.FormatArray(t, x, func(e any) string {
				out, err := AppendText(nil, elem, e)
				if err != nil {
					return fmt.Sprint(e)
				}
				return string(out)
			})...), nil
		}
	case t == catalog.Record:
		if x, ok := v.(string); ok {
			return append(b, x...), nil
		}
	}
	if x, ok := v.(string); ok {
		return append(b, x...), nil
	}
	return b, fmt.Errorf("cannot encode a Go %T as %s", v, t.PGName())
}

// appendBinaryPG is the send function of the system types: oid is a
// uint32, arrays and vectors array_send's format (dimensions, element
// oid, then each element's length and binary value).
func appendBinaryPG(b []byte, t catalog.Type, v any) ([]byte, error) {
	if out, ok := appendBinaryBlob(b, t, v); ok {
		return out, nil
	}
	if out, ok, err := appendTextNested(append(b, 1), t, v); ok {
		// jsonb's binary form: version 1, then the text.
		return out, err
	}
	if out, ok, err := appendBinaryDatetime(b, t, v); ok {
		return out, err
	}
	switch {
	case t.OidLike():
		if x, ok := v.(int64); ok {
			if x < 0 || x > math.MaxUint32 {
				return b, fmt.Errorf("oid %d out of range", x)
			}
			return binary.BigEndian.AppendUint32(b, uint32(x)), nil
		}
	case t.Subscriptable():
		x, ok := v.([]any)
		if !ok {
			break
		}
		elem := t.Elem()
		lower := int32(1)
		if t == catalog.Int2Vector || t == catalog.OidVector {
			lower = 0
		}
		hasNull := int32(0)
		for _, e := range x {
			if e == nil {
				hasNull = 1
			}
		}
		ndim := int32(1)
		if len(x) == 0 {
			ndim = 0
		}
		b = binary.BigEndian.AppendUint32(b, uint32(ndim))
		b = binary.BigEndian.AppendUint32(b, uint32(hasNull))
		b = binary.BigEndian.AppendUint32(b, elem.OID())
		if ndim == 0 {
			return b, nil
		}
		b = binary.BigEndian.AppendUint32(b, uint32(len(x)))
		b = binary.BigEndian.AppendUint32(b, uint32(lower))
		for _, e := range x {
			var err error
			if b, err = AppendValue(b, elem, FormatBinary, e); err != nil {
				return b, err
			}
		}
		return b, nil
	case t == catalog.Record:
		if x, ok := v.(string); ok {
			return append(b, x...), nil
		}
	}
	if x, ok := v.(string); ok {
		return append(b, x...), nil
	}
	if x, ok := v.(time.Time); ok {
		return AppendBinary(b, catalog.Timestamp, x)
	}
	return b, fmt.Errorf("cannot encode a Go %T as %s", v, t.PGName())
}

// pgParamTypes are the system types a client may declare for a
// parameter: oids, and arrays of basin's types (x = ANY($1)).
var pgParamTypes = map[uint32]catalog.Type{
	26:   catalog.Oid,
	1000: catalog.ArrayOf(catalog.Boolean),
	1005: catalog.ArrayOf(catalog.Int),
	1007: catalog.ArrayOf(catalog.Int),
	1016: catalog.ArrayOf(catalog.BigInt),
	1022: catalog.ArrayOf(catalog.Double),
	1009: catalog.ArrayOf(catalog.Varchar),
	1015: catalog.ArrayOf(catalog.Varchar),
	1003: catalog.ArrayOf(catalog.Varchar),
	1028: catalog.ArrayOf(catalog.Oid),
	1231: catalog.ArrayOf(catalog.Decimal),
}

func pgParamType(oid uint32) (catalog.Type, bool) {
	if t, ok := datetimeOIDs[oid]; ok {
		return t, true
	}
	t, ok := pgParamTypes[oid]
	return t, ok
}

func decodeTextPG(t catalog.Type, s string) (any, error) {
	if isBlobType(t) {
		return castTextBlob(s, t)
	}
	if IsDatetime(t) || t.IsArray() && IsDatetime(t.Elem()) {
		v, _, err := ParseText(t, s, nil)
		return v, err
	}
	if t == catalog.Oid {
		n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 32)
		if err != nil {
			return nil, invalidInput(26, s)
		}
		return int64(n), nil
	}
	return ParseArray(s, t, nil)
}

// decodeBinaryPG is the receive function of oid and of one-dimensional
// arrays (array_recv: dimensions, a NULL flag, the element oid, then
// each dimension's length and lower bound, then each element's length
// and bytes).
func decodeBinaryPG(t catalog.Type, b []byte) (any, error) {
	if isBlobType(t) {
		return decodeBinaryBlob(t, b)
	}
	if IsDatetime(t) {
		return decodeBinaryDatetime(t, b)
	}
	if t == catalog.Oid {
		if len(b) != 4 {
			return nil, fmt.Errorf("a binary oid is 4 bytes, this one is %d", len(b))
		}
		return int64(binary.BigEndian.Uint32(b)), nil
	}
	if len(b) < 12 {
		return nil, errors.New("array header too short")
	}
	ndim := int32(binary.BigEndian.Uint32(b))
	elemOID := binary.BigEndian.Uint32(b[8:])
	b = b[12:]
	switch {
	case ndim == 0:
		return []any{}, nil
	case ndim != 1:
		return nil, errors.New("multidimensional arrays are not supported")
	case len(b) < 8:
		return nil, errors.New("array dimensions too short")
	}
	n := int(int32(binary.BigEndian.Uint32(b)))
	b = b[8:]
	if n < 0 || n > len(b)/4 {
		return nil, fmt.Errorf("array of %d elements in %d bytes", n, len(b))
	}
	out := make([]any, n)
	for i := range out {
		if len(b) < 4 {
			return nil, errors.New("array element truncated")
		}
		l := int32(binary.BigEndian.Uint32(b))
		b = b[4:]
		if l < 0 {
			continue // NULL
		}
		if int(l) > len(b) {
			return nil, errors.New("array element truncated")
		}
		v, err := decodeBinary(elemOID, b[:l])
		if err != nil {
			return nil, err
		}
		out[i] = v
		b = b[l:]
	}
	if len(b) != 0 {
		return nil, errors.New("trailing bytes after the array")
	}
	return out, nil
}
