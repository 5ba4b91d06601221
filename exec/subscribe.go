package exec

import (
	"context"
	"strings"
	"time"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/eval"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/materialize"
	"github.com/basindb/basin/planner"
	"github.com/basindb/basin/push"
	"github.com/basindb/basin/sql"
)

// subscribeBatch is how many rows a subscription hands the client at a
// time, and subscribeWait how long it waits for more before it flushes
// what it has.
const (
	subscribeBatch = 256
	subscribeWait  = 50 * time.Millisecond
)

// openSubscription starts the subscription of SUBSCRIBE (or SELECT ...
// EMIT CHANGES) st.
func (s *Session) openSubscription(ctx context.Context, st *sql.Subscribe) (*push.Subscription, error) {
	plan, err := planner.PlanSubscribe(s.e.Catalog, st)
	if err != nil {
		return nil, err
	}
	opts := push.Options{Snapshot: plan.Rel.Kind == catalog.KindView}
	for _, o := range st.With {
		v := strings.ToLower(o.Value)
		var b bool
		switch v {
		case "true", "on", "1", "yes":
			b = true
		case "false", "off", "0", "no":
		default:
			return nil, pgerr.New(pgerr.InvalidParameterValue, "invalid value %q for option %s: must be true or false", o.Value, o.Key).WithPosition(o.Pos)
		}
		switch strings.ToLower(o.Key) {
		case "snapshot":
			opts.Snapshot = b
		case "progress":
			opts.Progress = b
		default:
			return nil, pgerr.New(pgerr.InvalidParameterValue, "unrecognized SUBSCRIBE option %q", o.Key).WithPosition(o.Pos).
				WithHint("Valid options are progress, snapshot.")
		}
	}
	if st.AsOf != "" {
		pos, err := materialize.ParsePosition(st.AsOf)
		if err != nil {
			return nil, pgerr.New(pgerr.InvalidParameterValue, "invalid AS OF position %q", st.AsOf).WithPosition(st.AsOfPos).
				WithHint("Give the %s of a row of a subscription.", push.PositionColumn)
		}
		for _, o := range st.With {
			if strings.EqualFold(o.Key, "snapshot") && opts.Snapshot {
				return nil, pgerr.New(pgerr.FeatureNotSupported, "SUBSCRIBE with snapshot = true AS OF a position is not supported").WithPosition(o.Pos).
					WithHint("AS OF continues with the changes after the position; leave snapshot out.")
			}
		}
		opts.Snapshot, opts.AsOf = false, pos
	}
	env, _ := s.statement()
	if plan.Filter != nil {
		f := eval.Compile(plan.Filter)
		opts.Where = func(row catalog.Row) (bool, error) {
			v, err := f(row, env)
			return eval.Truthy(v), err
		}
	}
	if plan.Output != nil {
		out := make([]eval.Expr, len(plan.Output))
		for i, o := range plan.Output {
			out[i] = eval.Compile(o)
		}
		opts.Columns = plan.Columns
		opts.Project = func(row catalog.Row) ([]any, error) {
			return eval.EvalAll(out, row, env)
		}
	}
	return s.e.subscriptions().Subscribe(ctx, plan.Rel, opts)
}

// subscribeStmt runs SUBSCRIBE as a statement of its own: its rows go to
// the client as they come, until the statement is cancelled
// (pg_cancel_backend, statement_timeout, the client gone).
func (s *Session) subscribeStmt(ctx context.Context, st *sql.Subscribe, w ResultWriter) error {
	sub, err := s.openSubscription(ctx, st)
	if err != nil {
		return err
	}
	defer sub.Close()
	if err := w.Columns(sub.Columns()); err != nil {
		return err
	}
	// The columns now: a client waits for them before its first row,
	// which may be long in coming.
	flush := func() error { return nil }
	if f, ok := w.(interface{ Flush() error }); ok {
		flush = f.Flush
	}
	if err := flush(); err != nil {
		return err
	}
	var rows [][]any
	for {
		rows, _, err = sub.Next(ctx, rows[:0], subscribeBatch, subscribeWait)
		for _, r := range rows {
			if err := w.Row(r); err != nil {
				return err
			}
		}
		if err != nil {
			return err
		}
		if len(rows) > 0 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
}

// emitChanges turns SELECT ... FROM relation [WHERE ...] EMIT CHANGES,
// ksqlDB's push query, into the subscription it is.
func emitChanges(sel *sql.Select) (*sql.Subscribe, error) {
	ref, ok := sel.Table(), len(sel.From) == 1
	if !ok || ref == nil || len(sel.SetOps) > 0 || sel.GroupBy != nil || sel.Having != nil || sel.Window != nil ||
		len(sel.OrderBy) > 0 || sel.Limit != nil || sel.Offset != nil || sel.Distinct || len(sel.With) > 0 {
		return nil, pgerr.New(pgerr.FeatureNotSupported, "a push query (EMIT CHANGES) reads one view or stream, with WHERE and a select list only").
			WithHint("Make a view of the query (CREATE TABLE v AS SELECT ...) and push from it: SELECT * FROM v EMIT CHANGES.")
	}
	items := sel.Items
	if len(items) == 1 && items[0].Star {
		items = nil
	}
	return &sql.Subscribe{Name: ref.Name, NamePos: ref.Pos, Items: items, Where: sel.Where}, nil
}
