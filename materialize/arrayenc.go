package materialize

import (
	"encoding/binary"
	"fmt"

	"github.com/basindb/basin/catalog"
)

// Row encoding of arrays: a view's array_agg, collect_list or topk
// column.
//
//	array     0x13  uvarint length, then a row encoding of the elements
//	                (count, each element's tag and payload; an element
//	                may be an array, for a multidimensional one)
//
// The element type is the column's, as for every other value: the
// encoding keeps what the elements are (ints, strings, ...), not their
// SQL type. Arrays are never keys: the planner refuses array key
// columns, so there is no key encoding.
const rowArray = 0x13

// maxArrayDepth bounds the nesting of arrays, structs and maps a row may
// hold, so that a corrupt row cannot recurse without end. The deepest
// type a column may have (catalog.MaxNestingDepth levels of STRUCT or
// MAP, each maybe inside an array) fits.
const maxArrayDepth = 2*catalog.MaxNestingDepth + 2

// appendRowArray appends v when it is an array.
func appendRowArray(dst []byte, v any, depth int) ([]byte, bool, error) {
	a, ok := v.([]any)
	if !ok {
		return dst, false, nil
	}
	if depth >= maxArrayDepth {
		return dst, true, fmt.Errorf("%w: values nested deeper than %d", ErrUnsupportedType, maxArrayDepth)
	}
	dst = append(dst, rowArray)
	at := len(dst)
	dst = append(dst, 0) // the length, one byte for short arrays
	dst, err := appendRow(dst, a, depth+1)
	if err != nil {
		return dst, true, err
	}
	return putLength(dst, at), true, nil
}

// arraySpan returns the encoded elements of an array at the start of b
// (the bytes after its tag) and the array's encoded length.
func arraySpan(b []byte, col uint64) (elems []byte, n int, err error) {
	l, k := binary.Uvarint(b)
	if k <= 0 || l > uint64(len(b)-k) {
		return nil, 0, fmt.Errorf("%w: bad array at column %d", ErrBadEncoding, col)
	}
	return b[k : k+int(l)], k + int(l), nil
}

// decodeRowArray decodes an array at the start of b (the bytes after its
// tag). The result does not alias b.
func decodeRowArray(b []byte, col uint64, depth int) (v []any, n int, err error) {
	elems, n, err := arraySpan(b, col)
	if err != nil {
		return nil, 0, err
	}
	if depth >= maxArrayDepth {
		return nil, 0, fmt.Errorf("%w: values nested deeper than %d at column %d", ErrBadEncoding, maxArrayDepth, col)
	}
	out, err := decodeRowDepth(nil, elems, -1, depth+1)
	if err != nil {
		return nil, 0, fmt.Errorf("array at column %d: %w", col, err)
	}
	if out == nil {
		out = []any{}
	}
	return out, n, nil
}
