package materialize

import (
	"fmt"

	"github.com/basindb/basin/catalog"
)

// Row encoding of STRUCT and MAP values (catalog.Struct, catalog.Map):
//
//	struct    0x14  uvarint length, then a row encoding of the fields'
//	                values, in field order
//	map       0x15  uvarint length, then a row encoding of the entries'
//	                keys and values, alternating: k1, v1, k2, v2, ...
//
// As for arrays, the encoding keeps values, not types: a struct's field
// names and types are its column's. A map's keys are strings in strictly
// increasing order, as catalog.Map holds them; a row whose keys are not
// is corrupt. Structs and maps nest in each other and in arrays, the
// depth bounded with theirs (maxArrayDepth), and are never keys.
const (
	rowStruct = 0x14
	rowMap    = 0x15
)

// nestedKind is what kind of nested value flatValues found.
type nestedKind uint8

const (
	notNested nestedKind = iota
	nestedArray
	nestedStruct
	nestedMap
)

// flatValues returns the values of a nested value v in the order both
// encodings (rows and keys) write them: an array's elements, a struct's
// fields, a map's keys and values in turn; and its kind. A value nested
// at depth maxArrayDepth is an error.
func flatValues(v any, depth int) ([]any, nestedKind, error) {
	var vals []any
	kind := nestedStruct
	switch x := v.(type) {
	case []any:
		vals, kind = x, nestedArray
	case catalog.Struct:
		vals = x
	case catalog.Map:
		kind = nestedMap
		vals = make([]any, 0, 2*len(x))
		for _, e := range x {
			vals = append(vals, e.Key, e.Value)
		}
	default:
		return nil, notNested, nil
	}
	if depth >= maxArrayDepth {
		return nil, kind, fmt.Errorf("%w: values nested deeper than %d", ErrUnsupportedType, maxArrayDepth)
	}
	return vals, kind, nil
}

// appendRowNested appends v when it is a struct or a map.
func appendRowNested(dst []byte, v any, depth int) ([]byte, bool, error) {
	if _, ok := v.([]any); ok {
		return dst, false, nil // arrays are appendRowArray's
	}
	vals, kind, err := flatValues(v, depth)
	if kind == notNested || err != nil {
		return dst, kind != notNested, err
	}
	tag := byte(rowStruct)
	if kind == nestedMap {
		tag = rowMap
	}
	dst = append(dst, tag)
	at := len(dst)
	dst = append(dst, 0) // the length, one byte for small values
	dst, err = appendRow(dst, vals, depth+1)
	if err != nil {
		return dst, true, err
	}
	return putLength(dst, at), true, nil
}

// decodeRowNested decodes a struct or map (tag) at the start of b, the
// bytes after its tag. The result does not alias b.
func decodeRowNested(tag byte, b []byte, col uint64, depth int) (v any, n int, err error) {
	vals, n, err := decodeRowArray(b, col, depth)
	if err != nil {
		return nil, 0, err
	}
	if tag == rowStruct {
		return catalog.Struct(vals), n, nil
	}
	if len(vals)%2 != 0 {
		return nil, 0, fmt.Errorf("%w: map with an odd number of keys and values at column %d", ErrBadEncoding, col)
	}
	m := make(catalog.Map, len(vals)/2)
	for i := range m {
		k, ok := vals[2*i].(string)
		if !ok || i > 0 && k <= m[i-1].Key {
			return nil, 0, fmt.Errorf("%w: map keys not strings in increasing order at column %d", ErrBadEncoding, col)
		}
		m[i] = catalog.MapEntry{Key: k, Value: vals[2*i+1]}
	}
	return m, n, nil
}
