package query

import (
	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/eval"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/planner"
)

// The scalars only the relational engine evaluates: a subquery's value
// and a reference to an enclosing query's row. eval compiles every
// other scalar by itself.

func init() { eval.Extend(compileQueryExpr) }

// compileQueryExpr compiles subqueries and outer references; nil for any
// other scalar.
func compileQueryExpr(s planner.Scalar) eval.Expr {
	switch s := s.(type) {
	case *planner.OuterRef:
		depth, idx := s.Depth, s.Idx
		return func(_ catalog.Row, env *eval.Env) (any, error) {
			if env.Scope == nil || len(env.Scope.Outer) < depth {
				return nil, pgerr.New(pgerr.InternalError, "outer reference %s without an outer row", s)
			}
			return env.Scope.Outer[len(env.Scope.Outer)-depth][idx], nil
		}
	case *planner.SubLink:
		return compileSubLink(s)
	}
	return nil
}

// compileSubLink compiles a subquery expression. An uncorrelated
// subquery runs once per statement; a correlated one once per row.
func compileSubLink(s *planner.SubLink) eval.Expr {
	sub := compileRel(s.Query.Root)
	var x eval.Expr
	if s.X != nil {
		x = eval.Compile(s.X)
	}
	var (
		cached []catalog.Row
		done   bool
	)
	run := func(row catalog.Row, env *eval.Env) ([]catalog.Row, error) {
		if !s.Query.Correlated && done {
			return cached, nil
		}
		rows, held, err := input(sub, env.WithOuter(row))
		if err != nil {
			return nil, err
		}
		if !s.Query.Correlated {
			// Kept for the statement.
			cached, done = rows, true
			env.Scope.Mem.Pin(held)
		} else {
			// The caller only reads them to make its value.
			release(env, held)
		}
		return rows, nil
	}
	return func(row catalog.Row, env *eval.Env) (any, error) {
		if env.Scope == nil {
			return nil, pgerr.New(pgerr.InternalError, "subquery outside a catalog query")
		}
		rows, err := run(row, env)
		if err != nil {
			return nil, err
		}
		switch s.Kind {
		case planner.SubLinkExists:
			return len(rows) > 0, nil
		case planner.SubLinkArray:
			out := make([]any, len(rows))
			for i, r := range rows {
				out[i] = r[0]
			}
			return out, nil
		case planner.SubLinkAny, planner.SubLinkAll:
			v, err := x(row, env)
			if err != nil {
				return nil, err
			}
			vals := make([]any, len(rows))
			for i, r := range rows {
				vals[i] = r[0]
			}
			return eval.Quantify(v, vals, s.Op, s.Kind == planner.SubLinkAll)
		}
		switch len(rows) {
		case 0:
			return nil, nil
		case 1:
			return rows[0][0], nil
		}
		return nil, pgerr.New(pgerr.CardinalityViolation, "more than one row returned by a subquery used as an expression")
	}
}
