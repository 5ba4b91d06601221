package exec

import (
	"context"
	"time"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/planner"
	"github.com/basindb/basin/sql"
)

// Row sources: what COPY TO STDOUT and cursors read.
//
// Both deliver a query's rows in pieces: COPY as a stream of lines the
// client reads until the end, a cursor as pages the client asks for with
// FETCH. Neither cares how the rows are made, so both read a RowSource,
// which hands rows over as they come. A SELECT is one whose rows are all
// there at once: openSource runs it to its end first and hands out what
// it collected (a snapshot, as Postgres's INSENSITIVE cursors are). A
// live source (SUBSCRIBE, a view's changes as they happen) is one that
// may have no row ready yet, and never ends on its own: it plugs in at
// openSource, and COPY and FETCH wait on it through Next's wait and the
// statement's context, so a cancel or statement_timeout stops them.

// A RowSource is an incremental result: a query's rows as they come.
type RowSource interface {
	// Columns are the columns of every row.
	Columns() []catalog.Column
	// Next appends up to n rows to dst and returns it, waiting for at
	// least one until wait passes (0: do not wait; < 0: until n rows or
	// the end); done reports the source has no more rows (then rows
	// holds the last of them, if any). It returns ctx's error when ctx
	// ends while it waits. The rows belong to the caller.
	Next(ctx context.Context, dst [][]any, n int, wait time.Duration) (rows [][]any, done bool, err error)
	// Close releases the source and stops anything it runs; it returns
	// when that has stopped.
	Close() error
}

// finishedSource is a RowSource over rows that are all known: a SELECT
// run to its end.
type finishedSource struct {
	cols []catalog.Column
	rows [][]any
}

func (f *finishedSource) Columns() []catalog.Column { return f.cols }

func (f *finishedSource) Next(_ context.Context, dst [][]any, n int, _ time.Duration) ([][]any, bool, error) {
	n = min(n, len(f.rows))
	dst = append(dst, f.rows[:n]...)
	// What was handed out is not kept.
	clear(f.rows[:n])
	f.rows = f.rows[n:]
	return dst, len(f.rows) == 0, nil
}

func (f *finishedSource) Close() error {
	f.rows = nil
	return nil
}

// openSource starts the rows of q, the query of a COPY or a cursor.
func (s *Session) openSource(ctx context.Context, q sql.Statement, w ResultWriter) (RowSource, error) {
	switch q := q.(type) {
	case *sql.Subscribe:
		return s.openSubscription(ctx, q)
	case *sql.Select:
		if q.Emit == sql.EmitChanges {
			sub, err := emitChanges(q)
			if err != nil {
				return nil, err
			}
			return s.openSubscription(ctx, sub)
		}
		plan, err := planner.PlanSelect(s.e.Catalog, q)
		if err != nil {
			return nil, err
		}
		src := &finishedSource{cols: plan.Columns}
		env, opts := s.statement()
		reads, err := s.e.read(nil, ctx, plan, nil, env, opts, func(r catalog.Row) error {
			// Pull may reuse a row's memory for the next.
			src.rows = append(src.rows, append([]any(nil), r...))
			return nil
		})
		if err != nil {
			return nil, err
		}
		s.afterRead(plan.Rel, reads, w)
		return src, nil
	}
	return nil, pgerr.New(pgerr.FeatureNotSupported, "%s cannot be the query of COPY or a cursor", sql.Format(q))
}
