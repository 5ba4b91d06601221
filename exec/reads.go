package exec

import (
	"context"
	"time"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/eval"
	"github.com/basindb/basin/ha"
	"github.com/basindb/basin/planner"
	"github.com/basindb/basin/pull"
	"github.com/basindb/basin/query"
)

// read runs a pull query of the session: a catalog query in the
// relational engine (query.go), reading the relations it names through
// the pull engine, any other in the pull engine with its state in q
// (nil: a new one). Every query is reported to ObservePull.
func (e *Engine) read(q *pull.Query, ctx context.Context, plan *planner.PullPlan, code *pull.PullCode, env *eval.Env, opts *pull.ReadOptions,
	emit func(catalog.Row) error) (reads []pull.PartitionRead, err error) {
	start := time.Now()
	defer func() { e.observePull(plan, reads, start, err) }()
	if plan.Query != nil {
		// The tables, views and streams the query names are read as
		// pull queries of all their rows, each once per statement.
		read := map[*planner.PullPlan][]catalog.Row{}
		reader := func(ctx context.Context, scan *planner.PullPlan, init []any, admit func(catalog.Row) error) ([]catalog.Row, error) {
			if rows, ok := read[scan]; ok {
				return rows, nil
			}
			env := env
			if len(init) > 0 {
				// The values of the subqueries the read's conditions
				// use: the same for the whole statement, as they are
				// uncorrelated.
				e := *env
				e.Init = init
				env = &e
			}
			var rows []catalog.Row
			// The rows a pull query emits are its own (pull.Query.project),
			// never reused: they are kept as they are.
			r, err := e.Reads.Run(new(pull.Query), ctx, scan, pull.CompilePull(scan), env, opts, func(row catalog.Row) error {
				rows = append(rows, row)
				return admit(row)
			})
			for i := range r {
				r[i].Rel = scan.Rel
			}
			reads = append(reads, r...)
			if err != nil {
				return nil, err
			}
			read[scan] = rows
			return rows, nil
		}
		return reads, query.Run(ctx, plan, env, reader, emit)
	}
	if q == nil {
		q = new(pull.Query)
	}
	return e.Reads.Run(q, ctx, plan, code, env, opts, emit)
}

// PullStats describes a finished pull query, for metrics.
type PullStats struct {
	// Plan is "lookup" (key lookups), "scan", "stream" or "catalog"
	// (catalog queries and SELECT without FROM).
	Plan string
	// Route is "forwarded" when some partition was served by another
	// node, else "restoring" or "standby" when some partition was served
	// by such a replica here, else "local".
	Route    string
	Duration time.Duration
	Err      error
}

// observePull reports a finished pull query to the observer, if any.
func (e *Engine) observePull(plan *planner.PullPlan, reads []pull.PartitionRead, start time.Time, err error) {
	if e.ObservePull == nil {
		return
	}
	st := PullStats{Plan: "scan", Route: "local", Duration: time.Since(start), Err: err}
	switch {
	case plan.Query != nil || plan.Rel == nil:
		st.Plan = "catalog"
	case plan.Rel.Kind == catalog.KindStream:
		st.Plan = "stream"
	case plan.Lookup != nil || plan.LookupIn != nil:
		st.Plan = "lookup"
	}
	for _, r := range reads {
		switch {
		case r.ServedBy != e.Node:
			st.Route = "forwarded"
		case st.Route == "forwarded":
		case r.Role == ha.RoleRestoring.String():
			st.Route = "restoring"
		case (r.Role == ha.RoleStandby.String() || r.Role == ha.RoleWarmup.String()) && st.Route == "local":
			st.Route = "standby"
		}
	}
	e.ObservePull(st)
}
