package exec

import (
	"context"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/planner"
)

// Forwarder reads a partition this node holds no replica of from a node
// that does. The node provides it; a node alone has none.
type Forwarder interface {
	// ReadPartition streams the rows of partition p of rel, only those
	// with the given key when key is not nil, from a node that holds the
	// partition and meets the session's freshness settings (read through
	// env.Session), trying the next replica at once when one fails
	// before sending a row. Each row is rel's columns, then the
	// pseudo-columns (planner.PseudoColumns) as the serving node reports
	// them.
	ReadPartition(ctx context.Context, rel *catalog.Relation, p int32, key []any, env *Env, emit func(catalog.Row) error) error
}

// SetForwarder makes reads of partitions held elsewhere go through f.
func (rt *Runtime) SetForwarder(f Forwarder) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.mu.fwd = f
}

func (rt *Runtime) forwarder() Forwarder {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.mu.fwd
}

// forward reads partition p of the query's relation from another node:
// each row goes through the query as a local row would, and the
// partition's freshness is what the serving node reported.
func (q *pull) forward(ctx context.Context, f Forwarder, p int32, key []any) error {
	rel := q.plan.Rel
	ncols := len(rel.Schema.Columns)
	first := true
	return f.ReadPartition(ctx, rel, p, key, q.env, func(row catalog.Row) error {
		if first {
			first = false
			read := PartitionRead{Partition: p}
			read.ServedBy, _ = row[ncols+planner.PseudoServedBy].(string)
			read.Role, _ = row[ncols+planner.PseudoRole].(string)
			read.OffsetLag, _ = row[ncols+planner.PseudoOffsetLag].(int64)
			read.TimeLagMs, _ = row[ncols+planner.PseudoTimeLag].(int64)
			read.Position, _ = row[ncols+planner.PseudoPosition].(string)
			q.reads = append(q.reads, read)
		}
		return q.input(ctx, row)
	})
}
