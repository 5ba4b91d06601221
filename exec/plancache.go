package exec

import (
	"context"
	"math"
	"slices"
	"sync/atomic"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/planner"
	"github.com/basindb/basin/sql"
)

// The plan cache of the simple query protocol. PostgreSQL parses and
// plans every simple query anew; basin remembers, per session, the plan
// of each query shape (sql.Shape: the text with its integer and string
// constants lifted out as parameters) and runs later queries of the same
// shape as a bound prepared statement, skipping the parser and planner.
// A client sending "SELECT ... WHERE id = 42", then "... id = 43", parses
// once.
//
// A shape is cached only when running it bound is certain to mean what
// the literal query means; otherwise its entry says so and the query
// takes the ordinary path:
//   - the statement is a SELECT and every lifted constant is, in its
//     WHERE clause, compared with a column: an operand of = <> < <= > >=
//     whose other operand is a column, an element of column IN (...), or
//     a bound of column BETWEEN ... AND ... (a constant in ORDER BY 1,
//     LIMIT 10, arithmetic or the select list is not just a value to
//     compare with);
//   - the column is an integer or a double for an integer constant, and
//     text for a string constant (a string compared with a timestamp
//     column is a timestamp literal, converted at planning); and a query
//     whose integer does not fit the column's type (id = 3000000000 for
//     an INTEGER id, which matches nothing) takes the ordinary path;
//   - the bound statement's result columns are the literal one's.
//
// A query with more than maxShapeArgs constants is not cached: its
// shape would cost, to prepare, far more than the query's own parse of
// folded constants (sql's literals.go), and would be kept with a key as
// long as the query.
//
// Inside a transaction block the cache is not used, so that nothing it
// does can fail the block. A catalog change re-plans the bound statement
// as prepared statements are (Prepared.Bind); a failure there drops the
// entry and the query takes the ordinary path, whose error the client
// then gets.

// settingPlanCache turns the cache off for a session.
const settingPlanCache = "basin.plan_cache"

// planCacheSize bounds the shapes a session remembers; when full, the
// cache starts over.
const planCacheSize = 256

// maxShapeArgs bounds the constants of a cached shape.
const maxShapeArgs = 1024

// planCacheCounters count what the sessions' plan caches did.
type planCacheCounters struct {
	hits, cached, uncacheable atomic.Int64
}

// PlanCacheStats is what the plan caches of an engine's sessions did
// since it started: queries run from a cached plan, shapes cached, and
// shapes found not cacheable.
type PlanCacheStats struct {
	Hits, Cached, Uncacheable int64
}

// PlanCacheStats returns the counts of the plan caches of e's sessions.
func (e *Engine) PlanCacheStats() PlanCacheStats {
	c := &e.planCache
	return PlanCacheStats{Hits: c.hits.Load(), Cached: c.cached.Load(), Uncacheable: c.uncacheable.Load()}
}

// cachedShape is a plan cache entry: the bound form of a shape, or nil
// when the shape cannot be cached.
type cachedShape struct {
	p *Prepared
}

// cachedQuery runs text from the plan cache when its shape is there. It
// reports whether it ran it; when not, learn (non-nil when the shape is
// worth learning) is to be called after the ordinary path ran text
// successfully.
func (s *Session) cachedQuery(ctx context.Context, text string, w ResultWriter) (ran bool, learn func(), err error) {
	if s.inTxn || s.vars[settingPlanCache] == "off" {
		return false, nil, nil
	}
	sh, ok := sql.ShapeOf(text)
	if !ok || len(sh.Args) == 0 || len(sh.Args) > maxShapeArgs {
		return false, nil, nil
	}
	e, hit := s.plans[sh.Key]
	if !hit {
		return false, func() { s.learnShape(ctx, text, sh) }, nil
	}
	if e.p == nil || !fits(e.p.params, sh.Args) {
		return false, nil, nil
	}
	pt, err := e.p.Bind(ctx, sh.Args)
	if err != nil {
		// Re-planning after a catalog change failed: forget the shape;
		// the ordinary path reports what is wrong with the query now.
		delete(s.plans, sh.Key)
		return false, nil, nil
	}
	pt.text = text
	s.e.planCache.hits.Add(1)
	if err := w.Columns(e.p.cols); err != nil {
		return true, nil, err
	}
	_, err = pt.Execute(ctx, w, 0)
	pt.Close()
	return true, nil, err
}

// learnShape decides whether sh, the shape of text that just ran on the
// ordinary path, can be cached, and remembers the answer.
func (s *Session) learnShape(ctx context.Context, text string, sh sql.Shape) {
	if s.plans == nil || len(s.plans) >= planCacheSize {
		s.plans = make(map[string]*cachedShape)
	}
	e := &cachedShape{}
	s.plans[sh.Key] = e
	defer func() {
		if e.p != nil {
			s.e.planCache.cached.Add(1)
		} else {
			s.e.planCache.uncacheable.Add(1)
		}
	}()
	stmts, err := sql.ParseStatements(text)
	if err != nil || len(stmts) != 1 {
		return
	}
	lit, ok := stmts[0].Stmt.(*sql.Select)
	if !ok {
		return
	}
	want, err := planner.PlanSelect(s.e.Catalog, lit)
	if err != nil {
		return
	}
	// The parameters' types are inferred from the columns they are
	// compared with.
	p, err := s.prepare(ctx, sh.Text, nil)
	if err != nil {
		return
	}
	st, ok := p.stmt.(*sql.Select)
	if !ok || p.limitParam != 0 || p.offsetParam != 0 || len(p.params) != len(sh.Args) {
		return
	}
	for i, a := range sh.Args {
		switch p.params[i] {
		case catalog.Int, catalog.BigInt, catalog.Double:
			if _, isInt := a.(int64); !isInt {
				return
			}
		case catalog.Varchar:
			if _, isStr := a.(string); !isStr {
				return
			}
		default:
			return
		}
	}
	if !slices.EqualFunc(p.cols, want.Columns, func(a, b catalog.Column) bool { return a.Name == b.Name && a.Type == b.Type }) {
		return
	}
	if comparedParams(st.Where) != len(sh.Args) {
		return
	}
	e.p = p
}

// fits reports whether each integer argument is exactly representable
// in its parameter's type.
func fits(types []catalog.Type, args []any) bool {
	for i, a := range args {
		n, isInt := a.(int64)
		if !isInt {
			continue
		}
		var lim int64
		switch types[i] {
		case catalog.Int:
			lim = math.MaxInt32
		case catalog.Double:
			lim = 1 << 53
		default:
			continue
		}
		if n > lim || n < -lim {
			return false
		}
	}
	return true
}

// comparedParams counts the parameters in e that are only compared with
// a column: an operand of a comparison whose other operand is a column,
// an element of column IN (...), a bound of column BETWEEN. Subqueries
// are not looked into.
func comparedParams(e sql.Expr) int {
	if e == nil {
		return 0
	}
	isCol := func(x sql.Expr) bool { _, ok := x.(*sql.ColumnRef); return ok }
	isParam := func(x sql.Expr) bool { _, ok := x.(*sql.Param); return ok }
	n := 0
	mapExpr(e, func(x sql.Expr) sql.Expr {
		switch x := x.(type) {
		case *sql.Binary:
			switch x.Op {
			case "=", "<>", "<", "<=", ">", ">=":
				if isParam(x.L) && isCol(x.R) || isCol(x.L) && isParam(x.R) {
					n++
				}
			}
		case *sql.In:
			if isCol(x.X) {
				for _, l := range x.List {
					if isParam(l) {
						n++
					}
				}
			}
		case *sql.Between:
			if isCol(x.X) {
				if isParam(x.Lo) {
					n++
				}
				if isParam(x.Hi) {
					n++
				}
			}
		}
		return x
	})
	return n
}
