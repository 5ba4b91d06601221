package stream

import (
	"fmt"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/materialize"
)

// Stored values. Each value in a store is an encoded row:
//
//	[present bool, column values..., aggregate state...]
//
// present is false for a group whose HAVING is false: its state is kept
// so aggregation can go on, but reads skip it.
func EncodeStored(present bool, row catalog.Row, state []any) ([]byte, error) {
	vals := make([]any, 0, 1+len(row)+len(state))
	vals = append(vals, present)
	vals = append(vals, row...)
	vals = append(vals, state...)
	return materialize.EncodeRow(vals)
}

// AppendStored appends what EncodeStored returns to dst; scratch is
// storage for the values to encode, returned for the next call.
func AppendStored(dst []byte, scratch []any, present bool, row catalog.Row, state []any) (_ []byte, _ []any, err error) {
	vals := append(append(append(scratch[:0], present), row...), state...)
	dst, err = materialize.AppendRow(dst, vals)
	clear(vals) // keep no values alive
	return dst, vals[:0], err
}

// DecodeStored splits a stored value into presence, the row (ncols values)
// and the rest (aggregate state).
func DecodeStored(b []byte, ncols int) (present bool, row catalog.Row, state []any, err error) {
	vals, err := materialize.DecodeRow(b)
	if err != nil {
		return false, nil, nil, err
	}
	if len(vals) < 1+ncols {
		return false, nil, nil, fmt.Errorf("exec: stored row has %d values, want at least %d", len(vals), 1+ncols)
	}
	present, _ = vals[0].(bool)
	return present, vals[1 : 1+ncols], vals[1+ncols:], nil
}
