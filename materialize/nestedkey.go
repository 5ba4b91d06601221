package materialize

import (
	"fmt"

	"github.com/basindb/basin/catalog"
)

// Key encoding of arrays, structs and maps: what grouping and DISTINCT
// over them key by (a view never has such a key column: the planner
// refuses them).
//
//	array   0xa0  each element as 0x01 and its key encoding, or 0x02 for
//	              NULL; then 0x00
//	struct  0xa1  the same, over the fields' values in field order
//	map     0xa2  the same, over the keys and values alternating, the
//	              keys in increasing order
//
// The end 0x00 sorts before any element, so a sequence sorts before the
// sequences it is a prefix of, and a NULL element (0x02) after every
// other, as Postgres orders arrays and records. Equal values have equal
// bytes, as for every key, and DecodeKeyValue takes back only what this
// writes, nested no deeper than a row may nest.
const (
	keyArray  = 0xa0
	keyStruct = 0xa1
	keyMap    = 0xa2

	keyElemEnd  = 0x00
	keyElem     = 0x01
	keyElemNull = 0x02
)

// appendKeyNested appends v when it is an array, a struct or a map.
func appendKeyNested(dst []byte, v any, depth int) ([]byte, bool, error) {
	vals, kind, err := flatValues(v, depth)
	if kind == notNested || err != nil {
		return dst, kind != notNested, err
	}
	dst = append(dst, [...]byte{nestedArray: keyArray, nestedStruct: keyStruct, nestedMap: keyMap}[kind])
	for _, e := range vals {
		if e == nil {
			dst = append(dst, keyElemNull)
			continue
		}
		var err error
		if dst, err = appendKeyValueDepth(append(dst, keyElem), e, depth+1); err != nil {
			return dst, true, err
		}
	}
	return append(dst, keyElemEnd), true, nil
}

// decodeKeyNested decodes an array, struct or map (tag) from b, the
// bytes after its tag.
func decodeKeyNested(tag byte, b []byte, depth int) (v any, rest []byte, ok bool, err error) {
	if tag != keyArray && tag != keyStruct && tag != keyMap {
		return nil, nil, false, nil
	}
	if depth >= maxArrayDepth {
		return nil, nil, true, fmt.Errorf("%w: key values nested deeper than %d", ErrBadEncoding, maxArrayDepth)
	}
	vals := []any{}
	for {
		if len(b) == 0 {
			return nil, nil, true, fmt.Errorf("%w: truncated nested key value", ErrBadEncoding)
		}
		m := b[0]
		b = b[1:]
		if m == keyElemEnd {
			break
		}
		switch m {
		case keyElemNull:
			vals = append(vals, nil)
		case keyElem:
			var e any
			if e, b, err = decodeKeyValueDepth(b, depth+1); err != nil {
				return nil, nil, true, err
			}
			if e == nil {
				return nil, nil, true, fmt.Errorf("%w: a NULL element not written as one", ErrBadEncoding)
			}
			vals = append(vals, e)
		default:
			return nil, nil, true, fmt.Errorf("%w: bad nested key element marker %#02x", ErrBadEncoding, m)
		}
	}
	switch tag {
	case keyStruct:
		return catalog.Struct(vals), b, true, nil
	case keyMap:
		if len(vals)%2 != 0 {
			return nil, nil, true, fmt.Errorf("%w: map key with an odd number of keys and values", ErrBadEncoding)
		}
		m := make(catalog.Map, len(vals)/2)
		for i := range m {
			k, isText := vals[2*i].(string)
			if !isText || i > 0 && k <= m[i-1].Key {
				return nil, nil, true, fmt.Errorf("%w: map keys not strings in increasing order", ErrBadEncoding)
			}
			m[i] = catalog.MapEntry{Key: k, Value: vals[2*i+1]}
		}
		return m, b, true, nil
	}
	return vals, b, true, nil
}
