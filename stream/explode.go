package stream

import (
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/eval"
)

// EXPLODE in a derived stream (planner/explode.go): a source record is
// one record per element of its exploded arrays, which zip (the
// longest sets the count; a shorter one is NULL past its end), each
// with the other columns' values. All of a source record's records go
// in its batch's transaction, so a failure takes none of them.

// deriveExploded is derive for a plan with EXPLODE items.
func (t *streamTask) deriveExploded(r *kgo.Record, recs []*kgo.Record) ([]*kgo.Record, error) {
	ncols := len(t.src.Schema.Columns)
	row := t.row
	tombstone, err := t.codec.DecodeInto(row[:ncols], r.Key, r.Value)
	if err != nil || tombstone {
		return recs, err
	}
	if row[ncols], err = t.codec.Rowtime(row, r.Timestamp); err != nil {
		return recs, err
	}
	if len(row) > ncols+1 {
		setCoords(row, ncols, r.Partition, r.Offset)
	}
	if t.filter != nil {
		keep, err := t.filter(row, t.env)
		if err != nil || !eval.Truthy(keep) {
			return recs, err
		}
	}
	for i, o := range t.output {
		if t.derived[i], err = o(row, t.env); err != nil {
			return recs, err
		}
	}
	arrays := make([][]any, len(t.plan.Explode))
	n := 0
	for k, i := range t.plan.Explode {
		a, _ := t.derived[i].([]any) // NULL: no elements
		arrays[k] = a
		n = max(n, len(a))
	}
	out := make(catalog.Row, len(t.derived))
	for e := range n {
		copy(out, t.derived)
		for k, i := range t.plan.Explode {
			out[i] = nil
			if e < len(arrays[k]) {
				out[i] = arrays[k][e]
			}
		}
		rec, err := t.encode(r, row, out)
		if err != nil {
			return recs, err
		}
		recs = append(recs, rec)
	}
	return recs, nil
}
