package planner

import (
	"slices"
	"strings"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/sql"
)

// The aggregates pull queries have besides count, sum, avg, min and max
// (query/aggfuncs.go computes them): the statistical ones, the
// ordered-set ones (WITHIN GROUP), and FILTER and ORDER BY on any
// aggregate. They run in the relational engine; a view, which keeps its
// aggregates incrementally, refuses them with 0A000.

func init() {
	for _, name := range []string{"stddev", "stddev_samp", "stddev_pop", "variance", "var_samp", "var_pop",
		"percentile_cont", "percentile_disc", "mode", "grouping"} {
		queryAggregates[name] = true
	}
}

// orderedSetAggs are the aggregates that take WITHIN GROUP (ORDER BY).
var orderedSetAggs = map[string]bool{"percentile_cont": true, "percentile_disc": true, "mode": true}

// isAnyAggregate reports whether name is an aggregate in some engine.
func isAnyAggregate(name string) bool { return IsAggregate(name) || queryAggregates[name] }

// ViewAggregate reports whether a view keeps aggregate name as rows
// arrive (and leave), besides count, sum, avg, min and max (IsAggregate):
// eval.Aggregator's.
func ViewAggregate(name string) bool {
	switch name {
	case "stddev", "stddev_samp", "stddev_pop", "variance", "var_samp", "var_pop", "bool_and", "bool_or", "every", "string_agg", "array_agg":
		return true
	}
	if _, ok := libraryAggs[name]; ok {
		return true
	}
	return offsetAgg(name)
}

// offsetAgg reports whether name is ksqlDB's latest_by_offset or
// earliest_by_offset.
func offsetAgg(name string) bool { return name == "latest_by_offset" || name == "earliest_by_offset" }

// bindOffsetAgg binds latest_by_offset(x [, n] [, ignore_nulls]) or
// earliest_by_offset(x [, n] [, ignore_nulls]) in a view: the value of
// the group's last (or first) record read, or with n an array of the
// last (first) n values, oldest first; NULLs skipped unless
// ignore_nulls is false, as ksqlDB's. Its Arg2 is ROWTIME, which orders
// the values of sessions that merge.
func (b *binder) bindOffsetAgg(e *sql.Func) (Scalar, error) {
	if e.Star || e.Distinct || len(e.Args) < 1 || len(e.Args) > 3 {
		return nil, pgerr.New(pgerr.UndefinedFunction, "function %s takes a column, optionally a count and whether to ignore NULLs: %s(x [, n] [, ignore_nulls])", e.Name, e.Name).WithPosition(e.Pos)
	}
	spec := AggSpec{Func: e.Name}
	b.inAgg = true
	arg, err := b.bind(e.Args[0])
	if err == nil {
		spec.Arg2, err = b.bind(&sql.ColumnRef{Name: RowtimeColumn.Name, Pos: e.Pos})
	}
	var ignore, count Scalar
	for i := 1; err == nil && i < len(e.Args); i++ {
		var s Scalar
		if s, err = b.bind(e.Args[i]); err != nil {
			break
		}
		switch {
		case i == 1 && len(e.Args) == 3:
			count = s
		case i == 1:
			if k, ok := s.(*Const); ok && k.T != catalog.Boolean {
				count = s
			} else {
				ignore = s
			}
		default:
			ignore = s
		}
	}
	b.inAgg = false
	if err != nil {
		return nil, err
	}
	if count != nil {
		if spec.N, err = constCount(e, count, 1); err != nil {
			return nil, err
		}
	}
	if ignore != nil {
		var v, isBool bool
		if k, ok := ignore.(*Const); ok {
			v, isBool = k.V.(bool)
		}
		if !isBool {
			return nil, pgerr.New(pgerr.InvalidParameterValue, "the last argument of %s, whether to ignore NULLs, must be true or false", e.Name).WithPosition(e.Args[len(e.Args)-1].Position())
		}
		spec.KeepNulls = !v
	}
	spec.Arg, spec.T = arg, arg.Type()
	if spec.T == catalog.Unknown {
		spec.T = catalog.Varchar
	}
	if spec.N > 0 {
		if spec.T.Subscriptable() {
			return nil, pgerr.New(pgerr.FeatureNotSupported, "%s of arrays with a count is not supported", e.Name).WithPosition(e.Pos)
		}
		spec.T = catalog.ArrayOf(spec.T)
	}
	*b.aggs = append(*b.aggs, spec)
	return &aggSlot{i: len(*b.aggs) - 1, t: spec.T}, nil
}

// refuseRetractedAggs refuses the aggregates a view over a table cannot
// take rows back out of.
func refuseRetractedAggs(aggs []AggSpec, src *catalog.Relation) error {
	for _, a := range aggs {
		if offsetAgg(a.Func) {
			return pgerr.New(pgerr.FeatureNotSupported, "%s aggregates a stream, and %s is a %s", a.Func, src.Name, strings.ToLower(string(src.Kind))).
				WithHint("A table's rows change in place: group them and read the values with max(...) or a join instead.")
		}
	}
	return nil
}

// checkAggSyntax rejects the aggregate clauses on a call of a function
// that is no aggregate, and the aggregates a view cannot maintain.
func (b *binder) checkAggSyntax(e *sql.Func) error {
	what := ""
	switch {
	case e.WithinGroup:
		what = "WITHIN GROUP"
	case e.Filter != nil:
		what = "FILTER"
	case len(e.OrderBy) > 0:
		what = "ORDER BY"
	case e.Distinct:
		what = "DISTINCT"
	}
	if what != "" && !isAnyAggregate(e.Name) && e.Over == nil {
		return pgerr.New(pgerr.WrongObjectType, "%s specified, but %s is not an aggregate function", what, e.Name).WithPosition(e.Pos)
	}
	if b.q == nil && e.Over == nil && (queryAggregates[e.Name] && !ViewAggregate(e.Name) || isAnyAggregate(e.Name) && (e.Filter != nil || len(e.OrderBy) > 0 || e.WithinGroup)) {
		name := e.Name
		if !queryAggregates[e.Name] || ViewAggregate(e.Name) {
			name += " with " + what
		}
		return pgerr.New(pgerr.FeatureNotSupported, "aggregate %s is not supported in a view", name).WithPosition(e.Pos).
			WithHint("A view keeps count, sum, avg, min, max, the stddev and variance family, bool_and, bool_or, string_agg, array_agg, corr, the covariances and ksqlDB's aggregates as rows arrive; pull queries over the view compute the others.")
	}
	return nil
}

// typeStatAgg types the statistical aggregates: double precision over
// numbers (Postgres gives numeric over integers).
func typeStatAgg(e *sql.Func, spec *AggSpec) error {
	switch e.Name {
	case "stddev", "stddev_samp", "stddev_pop", "variance", "var_samp", "var_pop":
		t := spec.Arg.Type()
		if !t.Numeric() && t != catalog.Unknown {
			return pgerr.New(pgerr.UndefinedFunction, "function %s(%s) does not exist", e.Name, sqlName(t)).WithPosition(e.Pos).
				WithHint("No function matches the given name and argument types. You might need to add explicit type casts.")
		}
		if t != catalog.Double {
			spec.Arg = &Cast{X: spec.Arg, T: catalog.Double}
		}
		spec.T = catalog.Double
	}
	return nil
}

// bindAggClauses binds an aggregate's FILTER and ORDER BY.
func (b *binder) bindAggClauses(e *sql.Func, spec *AggSpec) error {
	b.inAgg = true
	defer func() { b.inAgg = false }()
	if e.Filter != nil {
		f, err := b.bind(e.Filter)
		if err != nil {
			return err
		}
		if spec.Filter, err = b.coerce(f, catalog.Boolean, e.Filter.Position(), "argument of FILTER"); err != nil {
			return err
		}
	}
	for _, o := range e.OrderBy {
		k, err := b.bind(o.Expr)
		if err != nil {
			return err
		}
		spec.Order = append(spec.Order, SortKey{Expr: k, Desc: o.Desc, NullsFirst: o.Desc})
	}
	return nil
}

// bindOrderedSet binds percentile_cont(f), percentile_disc(f) and mode()
// WITHIN GROUP (ORDER BY x).
func (b *binder) bindOrderedSet(e *sql.Func) (Scalar, error) {
	if !orderedSetAggs[e.Name] || !e.WithinGroup {
		// As Postgres: the call fits no signature of the function.
		var types []string
		for _, a := range e.Args {
			s, err := b.bind(a)
			if err != nil {
				return nil, err
			}
			types = append(types, sqlName(s.Type()))
		}
		for _, o := range e.OrderBy {
			s, err := b.bind(o.Expr)
			if err != nil {
				return nil, err
			}
			types = append(types, sqlName(s.Type()))
		}
		return nil, pgerr.New(pgerr.UndefinedFunction, "function %s(%s) does not exist", e.Name, strings.Join(types, ", ")).WithPosition(e.Pos).
			WithHint("No function matches the given name and argument types. You might need to add explicit type casts.")
	}
	direct := 1
	if e.Name == "mode" {
		direct = 0
	}
	if len(e.Args) != direct || len(e.OrderBy) != 1 || e.Distinct {
		return nil, pgerr.New(pgerr.UndefinedFunction, "function %s does not take %d direct and %d ordered arguments",
			e.Name, len(e.Args), len(e.OrderBy)).WithPosition(e.Pos)
	}
	spec := AggSpec{Func: e.Name}
	if err := b.bindAggClauses(e, &spec); err != nil {
		return nil, err
	}
	key := spec.Order[0].Expr
	switch e.Name {
	case "percentile_cont":
		if t := key.Type(); !t.Numeric() && t != catalog.Unknown && t != catalog.Interval {
			return nil, pgerr.New(pgerr.UndefinedFunction, "function percentile_cont(double precision, %s) does not exist", sqlName(t)).
				WithPosition(e.Pos).WithHint("No function matches the given name and argument types. You might need to add explicit type casts.")
		}
		if key.Type() != catalog.Double && key.Type() != catalog.Interval {
			key = &Cast{X: key, T: catalog.Double}
			spec.Order[0].Expr = key
		}
		spec.T = key.Type()
	default:
		spec.T = key.Type()
		if spec.T == catalog.Unknown {
			spec.T = catalog.Varchar
		}
	}
	spec.Arg = key
	if direct == 1 {
		// The fraction is evaluated once per group, outside the
		// aggregate's rows: it may not refer to them.
		f, err := b.bind(e.Args[0])
		if err != nil {
			return nil, err
		}
		if spec.Arg2, err = b.coerce(f, catalog.Double, e.Pos, e.Name); err != nil {
			return nil, err
		}
	}
	if b.aggs == nil {
		clause := b.clause
		if clause == "" {
			clause = "this context"
		}
		return nil, pgerr.New(pgerr.GroupingError, "aggregate functions are not allowed in %s", clause).WithPosition(e.Pos)
	}
	*b.aggs = append(*b.aggs, spec)
	return &aggSlot{i: len(*b.aggs) - 1, t: spec.T}, nil
}

// aggClauses writes an AggSpec's ORDER BY and FILTER for its String.
func aggClauses(a AggSpec) string {
	var s strings.Builder
	if len(a.Order) > 0 {
		s.WriteString(" ORDER BY ")
		for i, k := range a.Order {
			if i > 0 {
				s.WriteString(", ")
			}
			s.WriteString(k.Expr.String())
			if k.Desc {
				s.WriteString(" DESC")
			}
		}
	}
	if a.Filter != nil {
		s.WriteString(" FILTER " + a.Filter.String())
	}
	return s.String()
}

// bindGroupingCall binds GROUPING(e, ...), which is, in a group of a
// query with grouping sets, a bit mask of the arguments outside the
// group's set (the last argument the lowest bit); 0 without grouping
// sets. It is bound as an aggregate whose arguments resolveGrouping
// matches to the GROUP BY expressions once all are bound.
func (b *binder) bindGroupingCall(e *sql.Func) (Scalar, error) {
	switch {
	case b.aggs == nil:
		clause := b.clause
		if clause == "" {
			clause = "this context"
		}
		return nil, pgerr.New(pgerr.GroupingError, "grouping operations are not allowed in %s", clause).WithPosition(e.Pos)
	case b.inAgg:
		return nil, pgerr.New(pgerr.GroupingError, "aggregate function calls cannot be nested").WithPosition(e.Pos)
	case e.Star || e.Distinct || e.Filter != nil || len(e.OrderBy) > 0 || e.WithinGroup:
		return nil, pgerr.New(pgerr.SyntaxError, "syntax error at or near \"grouping\"").WithPosition(e.Pos)
	case len(e.Args) == 0:
		return nil, pgerr.New(pgerr.SyntaxError, "syntax error at or near \")\"").WithPosition(e.Pos)
	case len(e.Args) > 31:
		return nil, pgerr.New(pgerr.TooManyArguments, "GROUPING must have fewer than 32 arguments").WithPosition(e.Pos)
	}
	spec := AggSpec{Func: "grouping", T: catalog.Int}
	b.inAgg = true
	defer func() { b.inAgg = false }()
	for _, a := range e.Args {
		s, err := b.bind(a)
		if err != nil {
			return nil, err
		}
		spec.Grouping = append(spec.Grouping, s)
		spec.GroupingPos = append(spec.GroupingPos, a.Position())
	}
	*b.aggs = append(*b.aggs, spec)
	return &aggSlot{i: len(*b.aggs) - 1, t: spec.T}, nil
}

// resolveGrouping matches each GROUPING call's arguments among aggs to
// the GROUP BY expressions groupBy.
func resolveGrouping(aggs []AggSpec, groupBy []Scalar) error {
	for k := range aggs {
		a := &aggs[k]
		if a.Func != "grouping" {
			continue
		}
		a.GroupingCols = a.GroupingCols[:0]
		for n, arg := range a.Grouping {
			i := slices.IndexFunc(groupBy, func(g Scalar) bool { return Equal(g, arg) })
			if i < 0 {
				return pgerr.New(pgerr.GroupingError, "arguments to GROUPING must be grouping expressions of the associated query level").
					WithPosition(a.GroupingPos[n])
			}
			a.GroupingCols = append(a.GroupingCols, i)
		}
	}
	return nil
}
