package stream

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

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

// changelogRecord is a record of a changelog of rows (a view's, a join
// stage's), decoded by decodeChangelog: a marker, a fence, or a key's
// row or its removal.
type changelogRecord struct {
	marker *materialize.Checkpoint // a marker's checkpoint
	fence  bool
	// present says whether the key has a row (else the record removes
	// it); row is then its columns and ROWTIME (when it changed), in
	// the buffer decodeChangelog was given.
	present bool
	row     catalog.Row
}

// decodeChangelog decodes record r (not a control record) of a changelog
// whose rows have ncols columns, the row into buf (ncols+1 values; nil:
// a new one).
func decodeChangelog(r *kgo.Record, ncols int, buf catalog.Row) (changelogRecord, error) {
	if _, ok := hasHeader(r, headerMarker); ok {
		m, err := materialize.UnmarshalCheckpoint(r.Value)
		if err != nil {
			return changelogRecord{}, fmt.Errorf("marker at %s/%d@%d: %w", r.Topic, r.Partition, r.Offset, err)
		}
		return changelogRecord{marker: &m}, nil
	}
	if _, fence := hasHeader(r, headerFence); fence {
		return changelogRecord{fence: true}, nil
	}
	if r.Value == nil {
		return changelogRecord{}, nil
	}
	present, vals, _, err := DecodeStored(r.Value, ncols)
	if err != nil {
		return changelogRecord{}, fmt.Errorf("undecodable row at %s/%d@%d: %w", r.Topic, r.Partition, r.Offset, err)
	}
	if !present {
		return changelogRecord{}, nil
	}
	if len(buf) < ncols+1 {
		buf = make(catalog.Row, ncols+1)
	}
	row := buf[:ncols+1]
	copy(row, vals[:ncols])
	row[ncols] = r.Timestamp.UnixMilli()
	return changelogRecord{present: true, row: row}, nil
}

// A Change is a record of a view's changelog, as a subscription reads
// it (DecodeChange).
type Change struct {
	// Marker is the checkpoint of a marker record, which ends a
	// transaction and changes no row; nil for a row's record.
	Marker *materialize.Checkpoint
	// Op is what the record does to the view. A record written before
	// changelogs said (no headerOp) is an update when it has a row, a
	// delete when not.
	Op Op
	// Key is the row's key, the values of the view's key columns in
	// order (catalog.Schema.KeyIndexes).
	Key []any
	// Row is the row the key has now (ncols values); nil after a
	// delete, and for OpNone.
	Row catalog.Row
}

// DecodeChange decodes record r (not a control record) of the changelog
// of a view whose rows have ncols columns. A fencing transaction's record
// is OpNone: it is always aborted, and read only by a reader of
// uncommitted records.
func DecodeChange(r *kgo.Record, ncols int) (Change, error) {
	if _, ok := hasHeader(r, headerMarker); ok {
		m, err := materialize.UnmarshalCheckpoint(r.Value)
		if err != nil {
			return Change{}, fmt.Errorf("marker at %s/%d@%d: %w", r.Topic, r.Partition, r.Offset, err)
		}
		return Change{Marker: &m, Op: OpNone}, nil
	}
	if _, fence := hasHeader(r, headerFence); fence {
		return Change{Op: OpNone}, nil
	}
	c := Change{Op: OpUpdate}
	if v, ok := hasHeader(r, headerOp); ok && len(v) == 1 {
		c.Op = Op(v[0])
	} else if r.Value == nil {
		c.Op = OpDelete
	}
	if c.Op == OpNone {
		return c, nil
	}
	key, err := materialize.DecodeKey(r.Key)
	if err != nil {
		return Change{}, fmt.Errorf("undecodable key at %s/%d@%d: %w", r.Topic, r.Partition, r.Offset, err)
	}
	c.Key = key
	if c.Op == OpDelete || r.Value == nil {
		c.Op = OpDelete
		return c, nil
	}
	present, row, _, err := DecodeStored(r.Value, ncols)
	if err != nil {
		return Change{}, fmt.Errorf("undecodable row at %s/%d@%d: %w", r.Topic, r.Partition, r.Offset, err)
	}
	if !present {
		// A hidden group, from a changelog without ops: not a row.
		c.Op = OpDelete
		return c, nil
	}
	c.Row = row[:ncols:ncols]
	return c, nil
}
