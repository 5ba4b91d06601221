package planner

import (
	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/sql"
)

// The read rule.
//
// Every SELECT is planned as a relational query. Most that clients send
// are all one relation's read: a key lookup, a filtered scan, a grouping
// or a top-N of one table, view or stream. The read rule folds such a
// query into that relation's read (its RelationRel.Scan): the select
// list, grouping, DISTINCT, ordering and LIMIT join the lookup, pin and
// filter pushIntoReads put there, and the pull engine runs the whole on
// each partition's rows as it reads them, encoding them for the wire
// where they are read, with no operator between the read and the
// client. It is a rule of the one planner, not a second one: the
// expressions were bound by planBlock, and a query the rule does not
// take runs as the relational engine's plan, reading the relation
// through the same Scan.
//
// The rule takes a query whose root is one SELECT over one relation
// (named in its FROM, or under a derived table pulled up: qpullup.go), with its whole WHERE pushed into the read, no
// set-returning or window functions, grouping sets or DISTINCT ON, only
// the aggregates the pull engine folds (count, sum, avg, min and max,
// DISTINCT for count alone, without FILTER or ORDER BY), and only the
// expressions the evaluator compiles by itself (no subquery, no outer
// reference, no system types), calling none of the catalog's functions.

// readRule returns q folded into its relation's read, with top's LIMIT
// and OFFSET and parameters, or nil when the rule does not apply.
func readRule(q *QueryPlan, s *sql.Select, top *PullPlan) *PullPlan {
	blk, ok := q.Root.(*BlockRel)
	if !ok || q.Correlated || len(s.From) != 1 || len(s.With) > 0 {
		return nil
	}
	rel, ok := blk.In.(*RelationRel)
	if !ok || len(rel.Init) > 0 || blk.Filter != nil || len(blk.SRFs) > 0 || len(blk.Windows) > 0 || blk.GroupingSets != nil ||
		len(blk.DistinctOn) > 0 || blk.Limit >= 0 || blk.Offset > 0 {
		return nil
	}
	for _, a := range blk.Aggs {
		if !foldableAgg(a) {
			return nil
		}
	}
	exprs := append(append([]Scalar{blk.Having}, blk.Output...), blk.GroupBy...)
	for _, o := range blk.Order {
		exprs = append(exprs, o.Expr)
	}
	for _, e := range exprs {
		if !compilable(e) {
			return nil
		}
	}
	for _, c := range blk.Columns {
		if c.Type.IsReg() || c.Type == catalog.Record {
			return nil // sent as names and text by the relational engine
		}
	}
	p := *rel.Scan
	p.Output, p.Columns, p.Distinct, p.Order = blk.Output, blk.Columns, blk.Distinct, blk.Order
	p.Grouped, p.GroupBy, p.Aggs, p.Having = blk.Grouped, blk.GroupBy, blk.Aggs, blk.Having
	p.Limit, p.Offset, p.Params = top.Limit, top.Offset, top.Params
	p.Needed = p.neededColumns()
	// A filter that gives the same answer on every node is sent, as
	// SQL, with the reads forwarded to other nodes, so only matching
	// rows cross the network.
	// (Not when the relation was under a derived table or its columns
	// renamed: its WHERE reads other names.)
	if ref, ok := s.From[0].(*sql.TableRef); ok && len(ref.Columns) == 0 && p.Filter != nil && p.Rel.Materialized() && PushableFilter(p.Filter) && s.Where != nil {
		p.Where, p.Alias = sql.FormatExpr(s.Where), ref.Alias
	}
	return &p
}

// foldableAgg reports whether the pull engine's aggregator folds a.
func foldableAgg(a AggSpec) bool {
	switch a.Func {
	case "count", "min", "max":
	case "sum", "avg":
		if a.T == catalog.Interval {
			return false // the relational engine's (query/query.go)
		}
	default:
		return false
	}
	return a.Filter == nil && len(a.Order) == 0 && (!a.Distinct || a.Func == "count") && compilable(a.Arg)
}

// compilable reports whether the evaluator compiles e by itself: e holds
// none of the scalars only the relational engine runs.
func compilable(e Scalar) bool {
	ok := true
	Walk(e, func(x Scalar) {
		switch x := x.(type) {
		case *ColRef, *Const, *ParamRef, *Unary, *Binary, *IsNull, *In, *Case:
		case *Call:
			// The catalog's functions read the statement's snapshot,
			// which the relational engine makes once.
			ok = ok && scalarFuncs[x.Name].sys == nil
		case *Cast:
			ok = ok && !isPGType(x.T) && !isPGType(x.X.Type())
		default:
			ok = false
		}
	})
	return ok
}
