package planner

import (
	"fmt"
	"slices"
	"strings"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/sql"
)

// queryPlanner plans one catalog query statement.
type queryPlanner struct {
	cat *catalog.Catalog
	// snap resolves reg* constants at plan time; made on first use
	// (snapshot), as most queries have none.
	snap   *catalog.PGSnapshot
	params *Params
	// ctes are the common table expressions in scope, innermost last.
	ctes []*cteDef
	// recursing are the recursive CTEs being planned, innermost last;
	// nextWork numbers their work tables.
	recursing []*recursion
	nextWork  int
}

// cteDef is a WITH query as its references see it: planned where it is
// used, like a derived table, with the CTEs defined before it.
type cteDef struct {
	cte     sql.CTE
	parent  *scope
	visible []*cteDef
}

// snapshot returns the catalog snapshot reg* constants resolve in.
func (qp *queryPlanner) snapshot() *catalog.PGSnapshot {
	if qp.snap == nil && qp.cat != nil {
		qp.snap = qp.cat.PGSnapshot(catalog.SessionInfo{})
	}
	return qp.snap
}

// lookupCTE finds a common table expression by name.
func (qp *queryPlanner) lookupCTE(name string) *cteDef {
	for i := len(qp.ctes) - 1; i >= 0; i-- {
		if strings.EqualFold(qp.ctes[i].cte.Name, name) {
			return qp.ctes[i]
		}
	}
	return nil
}

// level is one query level: a SELECT and its subqueries' view of it.
type level struct {
	correlated bool
}

// scope resolves names over one row.
type scope struct {
	parent *scope
	level  *level
	items  []scopeItem
	cols   []catalog.Column
	// using are the column names of JOIN ... USING, which may be named
	// unqualified although both sides have them; merged are those
	// columns, in the order the joins were planned, as SELECT * shows
	// them (shared by a FROM clause's join scopes, like using).
	using  map[string]bool
	merged *[]mergedCol
	// full maps the (lower-case) names of FULL JOIN ... USING columns
	// to the two columns they merge: the name reads COALESCE of them,
	// as in Postgres (shared like using).
	full map[string][2]*sql.ColumnRef
	// lateralRight is set by the planning of a FROM item that reads the
	// columns of the items before it (LATERAL), to the alias of one of
	// them: it is joined to them as a nested loop, run once per row of
	// theirs.
	lateralRight string
	// hit, on a LATERAL item's view of the items before it, is set to
	// the alias of the first item a name resolves to there.
	hit *string
}

// lateral returns the scope a LATERAL item of s sees: the columns of the
// FROM items before it, as the row of a query level around it, whose
// parent is the scope around the FROM clause.
func (s *scope) lateral(parent *scope, lvl *level) *scope {
	return &scope{parent: parent, level: lvl, items: slices.Clone(s.items), cols: slices.Clone(s.cols), using: s.using, hit: new(string)}
}

// mergedCol is a column of JOIN ... USING: SELECT * shows it once, from
// the side whose value the join keeps (the right one of a RIGHT JOIN),
// before the other columns, and not the two it merges.
type mergedCol struct {
	join   int // the join's number among the FROM clause's USING joins
	from   *sql.ColumnRef
	merges [2]*sql.ColumnRef
	// full is set for a FULL JOIN's column, which is COALESCE(merges).
	full bool
}

// scopeItem is a FROM item as names see it.
type scopeItem struct {
	alias string
	cols  []catalog.Column
	start int // offset of the item's first column in the scope's row
	// rel is the table, view or stream the item reads, if it is one:
	// errors about its columns name it.
	rel *catalog.Relation
	// pseudo, for a basin relation, is its RelationRel.Pseudo: a
	// reference to one of its pseudo-columns sets it. used is its
	// RelationRel.Used: a reference to a column marks it.
	pseudo *bool
	used   *[]bool
}

func (s *scope) add(alias string, cols []catalog.Column) {
	s.items = append(s.items, scopeItem{alias: alias, cols: cols, start: len(s.cols)})
	s.cols = append(s.cols, cols...)
}

// find looks a column reference up in s alone.
func (s *scope) find(ref *sql.ColumnRef) (idx int, col catalog.Column, found bool, err error) {
	idx = -1
	for _, it := range s.items {
		if ref.Table != "" && !strings.EqualFold(it.alias, ref.Table) {
			continue
		}
		for i, c := range it.cols {
			if !strings.EqualFold(c.Name, ref.Name) {
				continue
			}
			if it.rel != nil && i >= len(it.rel.Schema.Columns) && hasColumn(it.cols[:len(it.rel.Schema.Columns)], ref.Name) {
				continue // a stream's column named ROWPARTITION or ROWOFFSET hides the pseudo-column
			}
			if idx >= 0 {
				if s.using[strings.ToLower(ref.Name)] {
					return idx, col, true, nil
				}
				return 0, col, false, pgerr.New(pgerr.AmbiguousColumn, "column reference %q is ambiguous", ref.Name).WithPosition(ref.Pos)
			}
			idx, col = it.start+i, c
			if it.pseudo != nil && i >= len(it.rel.Schema.Columns) {
				*it.pseudo = true
			}
			if it.used != nil && i < len(*it.used) {
				(*it.used)[i] = true
			}
		}
	}
	return idx, col, idx >= 0, nil
}

// hasColumn reports whether cols has a column named name (any case).
func hasColumn(cols []catalog.Column, name string) bool {
	return slices.ContainsFunc(cols, func(c catalog.Column) bool { return strings.EqualFold(c.Name, name) })
}

// resolve binds a column reference in s or an enclosing scope.
func (s *scope) resolve(ref *sql.ColumnRef) (Scalar, catalog.Column, error) {
	depth := 0
	for sc := s; sc != nil; sc = sc.parent {
		idx, col, found, err := sc.find(ref)
		if err != nil {
			return nil, col, err
		}
		if found {
			if sc.hit != nil && *sc.hit == "" {
				for _, it := range sc.items {
					if idx >= it.start && idx < it.start+len(it.cols) {
						*sc.hit = it.alias
					}
				}
			}
			if depth == 0 {
				return &ColRef{Idx: idx, T: col.Type, Name: col.Name}, col, nil
			}
			// Every query between here and there reads an outer row.
			for in := s; in != sc; in = in.parent {
				in.level.correlated = true
			}
			return &OuterRef{Depth: depth, Idx: idx, T: col.Type, Name: col.Name}, col, nil
		}
		depth++
	}
	return nil, catalog.Column{}, s.unresolved(ref)
}

// unresolved is the error for a column reference found in no scope,
// with Postgres's message and, where one relation is meant, a hint
// naming its columns.
func (s *scope) unresolved(ref *sql.ColumnRef) error {
	var in *scopeItem
	for i := range s.items {
		it := &s.items[i]
		if ref.Table == "" && len(s.items) == 1 || ref.Table != "" && strings.EqualFold(it.alias, ref.Table) {
			in = it
		}
	}
	if ref.Table != "" && !s.hasAlias(ref.Table) {
		// An alias hides the relation's own name, as in Postgres.
		for _, it := range s.items {
			if it.rel != nil && strings.EqualFold(it.rel.Name, ref.Table) {
				return pgerr.New(pgerr.UndefinedTable, "invalid reference to FROM-clause entry for table %q", ref.Table).
					WithPosition(ref.Pos).WithHint("Perhaps you meant to reference the table alias %q.", it.alias)
			}
		}
		return pgerr.New(pgerr.UndefinedTable, "missing FROM-clause entry for table %q", ref.Table).WithPosition(ref.Pos)
	}
	var err *pgerr.Error
	if ref.Table != "" {
		err = pgerr.New(pgerr.UndefinedColumn, "column %s.%s does not exist", ref.Table, ref.Name)
	} else {
		err = pgerr.New(pgerr.UndefinedColumn, "column %q does not exist", ref.Name)
	}
	err.WithPosition(ref.Pos)
	if in == nil || in.rel == nil {
		return err
	}
	if in.rel.Materialized() && strings.EqualFold(ref.Name, RowtimeColumn.Name) {
		return err.WithHint("ROWTIME is the time of a stream's or table's records: a persistent query reads it (CREATE TABLE ... AS SELECT ..., ROWTIME AS ts), but %s's stores keep only its columns.", in.rel.Name)
	}
	if in.rel.Materialized() && isRecordCoord(ref.Name) {
		return coordsHint(err, in.rel.Name)
	}
	return err.WithHint("%s has columns %s.", in.rel.Name, columnList(in.cols))
}

func (s *scope) hasAlias(name string) bool {
	for sc := s; sc != nil; sc = sc.parent {
		for _, it := range sc.items {
			if strings.EqualFold(it.alias, name) {
				return true
			}
		}
	}
	return false
}

// column returns the column a bound reference reads, for its record
// fields.
func (s *scope) column(e Scalar) (catalog.Column, bool) {
	switch e := e.(type) {
	case *ColRef:
		if e.Idx < len(s.cols) {
			return s.cols[e.Idx], true
		}
	case *OuterRef:
		sc := s
		for d := 0; d < e.Depth && sc != nil; d++ {
			sc = sc.parent
		}
		if sc != nil && e.Idx < len(sc.cols) {
			return sc.cols[e.Idx], true
		}
	}
	return catalog.Column{}, false
}

// planQuery plans a SELECT (and its set operations) as a query level
// under parent.
func (qp *queryPlanner) planQuery(s *sql.Select, parent *scope) (*QueryPlan, error) {
	lvl := &level{}
	root, err := qp.planCompound(s, parent, lvl)
	if err != nil {
		return nil, err
	}
	return &QueryPlan{Root: root, Columns: root.Cols(), Correlated: lvl.correlated}, nil
}

// planCompound plans a SELECT with its UNION/INTERSECT/EXCEPT arms.
func (qp *queryPlanner) planCompound(s *sql.Select, parent *scope, lvl *level) (Rel, error) {
	if len(s.With) > 0 {
		saved := qp.ctes
		defer func() { qp.ctes = saved }()
		for _, c := range s.With {
			qp.ctes = append(qp.ctes, &cteDef{cte: c, parent: parent, visible: append([]*cteDef{}, qp.ctes...)})
		}
		inner := *s
		inner.With = nil
		s = &inner
	}
	if len(s.SetOps) == 0 {
		blk, err := qp.planBlock(s, parent, lvl)
		if err != nil {
			return nil, err
		}
		pullUp(blk)
		return blk, nil
	}
	first := *s
	first.SetOps, first.OrderBy, first.Limit, first.Offset = nil, nil, nil, nil
	var root Rel
	l, err := qp.planBlock(&first, parent, lvl)
	if err != nil {
		return nil, err
	}
	root = l
	for _, op := range s.SetOps {
		r, err := qp.planCompound(op.Select, parent, lvl)
		if err != nil {
			return nil, err
		}
		cols, err := unifyArms(root, r, op.Op)
		if err != nil {
			return nil, err
		}
		root = &SetRel{Op: op.Op, All: op.All, L: root, R: r, Limit: -1, Columns: cols}
	}
	set := root.(*SetRel)
	for _, o := range s.OrderBy {
		k := SortKey{Desc: o.Desc, NullsFirst: o.Desc}
		if o.NullsFirst != nil {
			k.NullsFirst = *o.NullsFirst
		}
		e, err := outputRef(o.Expr, set.Columns)
		if err != nil {
			return nil, err
		}
		k.Expr = e
		set.Order = append(set.Order, k)
	}
	if set.Limit, err = constInt(s.Limit, "LIMIT", -1); err != nil {
		return nil, err
	}
	if set.Offset, err = constInt(s.Offset, "OFFSET", 0); err != nil {
		return nil, err
	}
	return set, nil
}

// outputRef binds an ORDER BY item of a compound query: an output
// column's name or position.
func outputRef(e sql.Expr, cols []catalog.Column) (Scalar, error) {
	switch x := e.(type) {
	case *sql.Literal:
		if n, ok := x.Value.(int64); ok {
			if n < 1 || int(n) > len(cols) {
				return nil, pgerr.New(pgerr.InvalidColumnReference, "ORDER BY position %d is not in select list", n).WithPosition(x.Pos)
			}
			return &ColRef{Idx: int(n - 1), T: cols[n-1].Type, Name: cols[n-1].Name}, nil
		}
	case *sql.ColumnRef:
		if x.Table == "" {
			for i, c := range cols {
				if strings.EqualFold(c.Name, x.Name) {
					return &ColRef{Idx: i, T: c.Type, Name: c.Name}, nil
				}
			}
		}
	}
	return nil, pgerr.New(pgerr.FeatureNotSupported,
		"ORDER BY of a UNION, INTERSECT or EXCEPT must name an output column or its position").WithPosition(e.Position())
}

// unifyArms checks that two arms of a set operation have the same
// number of columns and gives each column the arms' common type.
func unifyArms(l, r Rel, op string) ([]catalog.Column, error) {
	lc, rc := l.Cols(), r.Cols()
	if len(lc) != len(rc) {
		return nil, pgerr.New(pgerr.SyntaxError, "each %s query must have the same number of columns", op)
	}
	out := make([]catalog.Column, len(lc))
	for i := range lc {
		t, ok := commonType(&Const{T: lc[i].Type, V: 0}, &Const{T: rc[i].Type, V: 0})
		switch {
		case lc[i].Type == catalog.Unknown:
			t, ok = rc[i].Type, true
		case rc[i].Type == catalog.Unknown:
			t, ok = lc[i].Type, true
		}
		if !ok {
			return nil, pgerr.New(pgerr.DatatypeMismatch, "%s types %s and %s cannot be matched", op, sqlName(lc[i].Type), sqlName(rc[i].Type))
		}
		if t == catalog.Unknown {
			t = catalog.Varchar
		}
		out[i] = lc[i]
		out[i].Type = t
		setArmType(l, i, t)
		setArmType(r, i, t)
	}
	return out, nil
}

// setArmType makes column i of an arm type t, casting its output.
func setArmType(r Rel, i int, t catalog.Type) {
	switch r := r.(type) {
	case *BlockRel:
		if r.Output[i].Type() != t {
			if c, ok := r.Output[i].(*Const); ok && c.V == nil {
				r.Output[i] = &Const{T: t}
			} else {
				r.Output[i] = &Cast{X: r.Output[i], T: t}
			}
		}
		r.Columns[i].Type = t
	case *SetRel:
		setArmType(r.L, i, t)
		setArmType(r.R, i, t)
		r.Columns[i].Type = t
	}
}

// planBlock plans one SELECT without set operations.
func (qp *queryPlanner) planBlock(s *sql.Select, parent *scope, lvl *level) (*BlockRel, error) {
	blk := &BlockRel{Limit: -1, Distinct: s.Distinct}
	in, sc, err := qp.planFrom(s.From, parent, lvl)
	if err != nil {
		return nil, err
	}
	blk.In = in
	b := &binder{cols: sc.cols, params: qp.params, scope: sc, q: qp, exactSum: true}
	if s.Where != nil {
		b.clause = "WHERE"
		f, err := b.bind(s.Where)
		if err != nil {
			return nil, err
		}
		if f, err = b.coerce(f, catalog.Boolean, s.Where.Position(), "argument of WHERE"); err != nil {
			return nil, err
		}
		blk.Filter = f
	}
	blk.In, blk.Filter = optimizeJoins(blk.In, blk.Filter)
	blk.In, blk.Filter = pushIntoReads(blk.In, blk.Filter)
	if err := checkOffsetAggs(s, blk.In); err != nil {
		return nil, err
	}
	b.clause = ""
	items, err := expandScopeStar(s.Items, sc)
	if err != nil {
		return nil, err
	}
	grouped := len(s.GroupBy) > 0 || s.Having != nil || hasQueryAggregate(s)
	var srfs []SRF
	var wins []WindowCall
	b.srfs, b.windows = &srfs, &wins
	bindOrder := func(e sql.Expr) (Scalar, error) {
		b.clause = "ORDER BY"
		defer func() { b.clause = "" }()
		return b.bind(e)
	}
	aggregated := func() int { return 0 }
	var grp *grouping
	if grouped {
		b.srfs = nil
		g, err := bindGrouped(b, s.GroupBy, items, s.Having)
		if err != nil {
			return nil, err
		}
		blk.Grouped, blk.GroupBy, blk.Having, blk.Output = true, g.groupBy, g.having, g.output
		blk.GroupingSets = canonicalSets(s.GroupingSets, g.groupBy)
		bindOrder = g.post
		aggregated = func() int { return len(g.groupBy) + len(g.aggs) }
		defer func() { blk.Aggs = g.aggs }()
		grp = g
	} else {
		out, err := b.bindItems(items)
		if err != nil {
			return nil, err
		}
		blk.Output = out
	}
	blk.Columns = outputColumns(items, blk.Output)
	for i, o := range blk.Output {
		if o.Type() == catalog.Record {
			blk.Columns[i].Fields = b.recordFields(o)
		}
	}
	for _, o := range s.OrderBy {
		k := SortKey{Desc: o.Desc, NullsFirst: o.Desc}
		if o.NullsFirst != nil {
			k.NullsFirst = *o.NullsFirst
		}
		e, err := bindOrderExpr(bindOrder, o.Expr, items, blk.Output, "ORDER BY")
		if err != nil {
			return nil, err
		}
		if blk.Distinct && !containsScalar(blk.Output, e) {
			return nil, pgerr.New(pgerr.InvalidColumnReference, "for SELECT DISTINCT, ORDER BY expressions must appear in select list").
				WithPosition(o.Expr.Position())
		}
		k.Expr = e
		blk.Order = append(blk.Order, k)
	}
	// DISTINCT ON's expressions are read as ORDER BY's are.
	for _, d := range s.DistinctOn {
		e, err := bindOrderExpr(bindOrder, d, items, blk.Output, "DISTINCT ON")
		if err != nil {
			return nil, err
		}
		blk.DistinctOn = append(blk.DistinctOn, e)
	}
	if err := checkDistinctOnOrder(blk, s.DistinctOn); err != nil {
		return nil, err
	}
	// SRF and window values follow the input row: resolve their
	// placeholders to columns now that all are known.
	base := len(sc.cols)
	if grouped {
		base = aggregated() // the window values follow the aggregated row
	}
	fix := func(s Scalar) Scalar {
		return mapScalar(s, func(x Scalar) Scalar {
			switch x := x.(type) {
			case *srfSlot:
				return &ColRef{Idx: base + x.i, T: x.t, Name: x.String()}
			case *winSlot:
				return &ColRef{Idx: base + len(srfs) + x.i, T: x.t, Name: x.String()}
			}
			return x
		})
	}
	for i := range blk.Output {
		blk.Output[i] = fix(blk.Output[i])
	}
	for i := range blk.Order {
		blk.Order[i].Expr = fix(blk.Order[i].Expr)
	}
	for i := range blk.DistinctOn {
		blk.DistinctOn[i] = fix(blk.DistinctOn[i])
	}
	blk.SRFs, blk.Windows = srfs, wins
	if grp != nil {
		if err := resolveGrouping(grp.aggs, grp.groupBy); err != nil {
			return nil, err
		}
	}
	if blk.Limit, err = constInt(s.Limit, "LIMIT", -1); err != nil {
		return nil, err
	}
	if blk.Offset, err = constInt(s.Offset, "OFFSET", 0); err != nil {
		return nil, err
	}
	return blk, nil
}

// canonicalSets rewrites grouping sets (indexes into groupBy) so that
// each refers to the first of the GROUP BY expressions equal to its own
// once bound (ROLLUP (1, region) names region twice): the aggregated
// row's column of an expression is the first equal one's.
func canonicalSets(sets [][]int, groupBy []Scalar) [][]int {
	if sets == nil {
		return nil
	}
	out := make([][]int, len(sets))
	for k, set := range sets {
		out[k] = []int{}
		for _, i := range set {
			c := slices.IndexFunc(groupBy, func(g Scalar) bool { return Equal(g, groupBy[i]) })
			if !slices.Contains(out[k], c) {
				out[k] = append(out[k], c)
			}
		}
	}
	return out
}

// checkDistinctOnOrder checks, as Postgres does, that an ORDER BY with
// DISTINCT ON starts with the DISTINCT ON expressions (in any order): an
// ORDER BY key that is not one of them may come only after every one of
// them has. exprs are the user's DISTINCT ON expressions, for positions.
func checkDistinctOnOrder(blk *BlockRel, exprs []sql.Expr) error {
	if len(blk.DistinctOn) == 0 {
		return nil
	}
	mismatch := func(i int) error {
		return pgerr.New(pgerr.InvalidColumnReference, "SELECT DISTINCT ON expressions must match initial ORDER BY expressions").
			WithPosition(exprs[i].Position())
	}
	index := func(e Scalar) int {
		return slices.IndexFunc(blk.DistinctOn, func(d Scalar) bool { return Equal(d, e) })
	}
	skipped := false
	matched := make([]bool, len(blk.DistinctOn))
	for _, k := range blk.Order {
		i := index(k.Expr)
		switch {
		case i < 0:
			skipped = true
		case skipped:
			return mismatch(i)
		default:
			matched[i] = true
		}
	}
	if skipped {
		for i, d := range blk.DistinctOn {
			// A repeated expression is matched where its first copy is.
			if !matched[i] && !matched[index(d)] {
				return mismatch(i)
			}
		}
	}
	return nil
}

func containsScalar(list []Scalar, e Scalar) bool {
	for _, o := range list {
		if Equal(o, e) {
			return true
		}
	}
	return false
}

// checkOffsetAggs refuses latest_by_offset and earliest_by_offset in a
// block that does not read one stream. They take a group's values in
// the order the block reads them, which over a stream is its records'
// (offset order within each partition). A table's or view's rows have
// no offsets: a scan reads them partition by partition in key order, so
// the "latest" would be the greatest key's; and a join's or subquery's
// rows come in no order at all. Views refuse them over tables too
// (refuseRetractedAggs).
func checkOffsetAggs(s *sql.Select, in Rel) error {
	var call *sql.Func
	var err error
	selectExprs(s, func(e sql.Expr) {
		walkQuery(e, func(x sql.Expr) bool {
			if f, ok := x.(*sql.Func); ok && offsetAgg(f.Name) {
				if call == nil {
					call = f
				}
				// Their binding (bindOffsetAgg, shared with views) takes
				// no FILTER or ORDER BY: refuse them rather than ignore
				// them.
				if err == nil && (f.Filter != nil || len(f.OrderBy) > 0) {
					what, hint := "FILTER", "Filter the records with WHERE."
					if f.Filter == nil {
						what, hint = "ORDER BY", "The values are taken in the order the records are read: use array_agg(x ORDER BY ...) for another order."
					}
					err = pgerr.New(pgerr.FeatureNotSupported, "%s with %s is not supported", f.Name, what).WithPosition(f.Pos).WithHint("%s", hint)
				}
			}
			_, sub := x.(*sql.Subquery)
			return !sub // a subquery's aggregates are its own block's
		})
	})
	if call == nil || err != nil {
		return err
	}
	hint := "A table's or view's rows have no offsets: order the values, as in (array_agg(x ORDER BY k DESC))[1]."
	if r, ok := in.(*RelationRel); ok {
		if r.Rel.Kind == catalog.KindStream {
			return nil
		}
		return pgerr.New(pgerr.FeatureNotSupported, "%s aggregates a stream, and %s is a %s", call.Name, r.Rel.Name, strings.ToLower(string(r.Rel.Kind))).
			WithPosition(call.Pos).WithHint("%s", hint)
	}
	return pgerr.New(pgerr.FeatureNotSupported, "%s aggregates the records of one stream, in the order they are read; this query reads no single stream", call.Name).
		WithPosition(call.Pos).WithHint("%s", hint)
}

// hasQueryAggregate reports whether the select list calls an aggregate
// (other than as a window function).
func hasQueryAggregate(s *sql.Select) bool {
	found := false
	for _, it := range s.Items {
		if it.Expr == nil {
			continue
		}
		walkQuery(it.Expr, func(e sql.Expr) bool {
			if f, ok := e.(*sql.Func); ok && f.Over == nil && (IsAggregate(f.Name) || queryAggregates[f.Name]) {
				found = true
			}
			_, sub := e.(*sql.Subquery)
			return !sub // an aggregate in a subquery is the subquery's
		})
	}
	return found
}

// expandScopeStar replaces * and t.* with the FROM items' columns.
func expandScopeStar(items []sql.SelectItem, sc *scope) ([]sql.SelectItem, error) {
	var out []sql.SelectItem
	for _, it := range items {
		if !it.Star {
			out = append(out, it)
			continue
		}
		if len(sc.items) == 0 {
			return nil, pgerr.New(pgerr.SyntaxError, "SELECT * with no tables specified is not valid")
		}
		// An unqualified * shows each JOIN ... USING column once, first:
		// a later (outer) join's before an earlier one's, as Postgres
		// does.
		var merged []mergedCol
		if it.Table == "" && sc.merged != nil {
			merged = slices.Clone(*sc.merged)
			slices.SortStableFunc(merged, func(a, b mergedCol) int { return b.join - a.join })
		}
		hidden := map[[2]string]bool{}
		shown := map[string]bool{}
		for _, m := range merged {
			for _, r := range m.merges {
				hidden[[2]string{strings.ToLower(r.Table), strings.ToLower(r.Name)}] = true
			}
			if name := strings.ToLower(m.from.Name); !shown[name] {
				shown[name] = true
				var e sql.Expr = &sql.ColumnRef{Table: m.from.Table, Name: m.from.Name}
				if m.full {
					e = coalesceMerged(m.merges, m.merges[0].Pos)
				}
				out = append(out, sql.SelectItem{Expr: e, Alias: m.from.Name, Text: m.from.Name})
			}
		}
		found := false
		for _, si := range sc.items {
			if it.Table != "" && !strings.EqualFold(si.alias, it.Table) {
				continue
			}
			found = true
			for _, c := range si.cols {
				if !c.Hidden && !hidden[[2]string{strings.ToLower(si.alias), strings.ToLower(c.Name)}] {
					out = append(out, sql.SelectItem{Expr: &sql.ColumnRef{Table: si.alias, Name: c.Name}, Text: c.Name})
				}
			}
		}
		if !found {
			return nil, pgerr.New(pgerr.UndefinedTable, "missing FROM-clause entry for table %q", it.Table)
		}
	}
	return out, nil
}

// planFrom plans a FROM list: its items joined left to right.
func (qp *queryPlanner) planFrom(from []sql.FromItem, parent *scope, lvl *level) (Rel, *scope, error) {
	sc := &scope{parent: parent, level: lvl, using: map[string]bool{}, merged: new([]mergedCol), full: map[string][2]*sql.ColumnRef{}}
	if len(from) == 0 {
		return &ValuesRel{}, sc, nil
	}
	var rel Rel
	for _, it := range from {
		r, err := qp.planFromItem(it, parent, lvl, sc)
		if err != nil {
			return nil, nil, err
		}
		if rel == nil {
			rel = r
		} else {
			rel = &JoinRel{Kind: sql.JoinCross, L: rel, R: r, cols: concatCols(rel.Cols(), r.Cols()), Lateral: sc.lateralRight != ""}
		}
		sc.lateralRight = ""
	}
	seen := map[string]bool{}
	for _, it := range sc.items {
		a := strings.ToLower(it.alias)
		if a != "" && seen[a] {
			return nil, nil, pgerr.New(pgerr.DuplicateAlias, "table name %q specified more than once", it.alias)
		}
		seen[a] = true
	}
	return rel, sc, nil
}

func concatCols(a, b []catalog.Column) []catalog.Column {
	out := make([]catalog.Column, 0, len(a)+len(b))
	return append(append(out, a...), b...)
}

// planFromItem plans one FROM item and adds what it names to into
// (whose row it extends).
func (qp *queryPlanner) planFromItem(it sql.FromItem, parent *scope, lvl *level, into *scope, cte ...*cteDef) (Rel, error) {
	switch it := it.(type) {
	case *sql.TableRef:
		if it.Schema == "" {
			if def := qp.lookupCTE(it.Name); def != nil {
				if r, err := qp.recursiveCTE(def, it, lvl, into); r != nil || err != nil {
					return r, err
				}
				alias := it.Alias
				if alias == "" {
					alias = def.cte.Name
				}
				cols := def.cte.Columns
				if len(it.Columns) > 0 {
					cols = it.Columns // the reference's own renaming
				}
				return qp.planFromItem(&sql.SubqueryRef{Select: def.cte.Select, Alias: alias, Columns: cols, Pos: it.Pos},
					parent, lvl, into, def)
			}
		}
		if r := qp.basinRelation(it); r != nil {
			scan := relationScan(r)
			alias := it.Alias
			if alias == "" {
				alias = it.Name
			}
			cols, err := renameColumns(scan.Columns, it.Columns, alias)
			if err != nil {
				return nil, err
			}
			into.add(alias, cols)
			pseudo, used := new(bool), new([]bool)
			*used = make([]bool, len(cols))
			item := &into.items[len(into.items)-1]
			item.rel, item.pseudo, item.used = r, pseudo, used
			return &RelationRel{Rel: r, Scan: scan, Pseudo: pseudo, Used: used}, nil
		}
		t, err := qp.resolveTable(it)
		if err != nil {
			return nil, err
		}
		alias := it.Alias
		if alias == "" {
			alias = t.Name
		}
		cols, err := renameColumns(t.Columns, it.Columns, alias)
		if err != nil {
			return nil, err
		}
		into.add(alias, cols)
		return &ScanRel{Table: t}, nil
	case *sql.SubqueryRef:
		qparent := parent
		var ls *scope
		if it.Lateral && len(into.cols) > 0 {
			ls = into.lateral(parent, lvl)
			qparent = ls
		}
		if len(cte) > 0 {
			// A CTE's query sees the CTEs defined before it, and the
			// scopes around its WITH.
			saved := qp.ctes
			qp.ctes = cte[0].visible
			defer func() { qp.ctes = saved }()
			qparent = cte[0].parent
		}
		q, err := qp.planQuery(it.Select, qparent)
		if err != nil {
			return nil, err
		}
		switch {
		case ls != nil && *ls.hit != "":
			// It reads the items before it (and if it reads the query
			// around too, that marked this level).
			into.lateralRight = *ls.hit
		case q.Correlated:
			lvl.correlated = true
		}
		cols := append([]catalog.Column{}, q.Columns...)
		if len(it.Columns) > len(cols) {
			return nil, pgerr.New(pgerr.InvalidColumnReference, "table %q has %d columns available but %d columns specified",
				it.Alias, len(cols), len(it.Columns))
		}
		for i, name := range it.Columns {
			cols[i].Name = name
		}
		into.add(it.Alias, cols)
		return &DerivedRel{Query: q, Columns: cols}, nil
	case *sql.FuncRef:
		return qp.planFuncRef(it, parent, into)
	case *sql.Join:
		if it.Within != nil {
			return nil, pgerr.New(pgerr.FeatureNotSupported, "WITHIN bounds a stream–stream join of a derived stream, not a query").WithPosition(it.Within.Pos).
				WithHint("Create the join with CREATE STREAM ... AS SELECT ... JOIN ... WITHIN ..., or compare the times in WHERE.")
		}
		js := &scope{parent: parent, level: lvl, using: into.using, merged: into.merged, full: into.full}
		l, err := qp.planFromItem(it.Left, parent, lvl, js)
		if err != nil {
			return nil, err
		}
		r, err := qp.planFromItem(it.Right, parent, lvl, js)
		if err != nil {
			return nil, err
		}
		j := &JoinRel{Kind: it.Kind, L: l, R: r, cols: concatCols(l.Cols(), r.Cols()), Lateral: js.lateralRight != ""}
		if j.Lateral && (it.Kind == sql.JoinRight || it.Kind == sql.JoinFull) {
			return nil, pgerr.New(pgerr.InvalidColumnReference, "invalid reference to FROM-clause entry for table %q", js.lateralRight).
				WithPosition(it.Pos).
				WithDetail("The combining JOIN type must be INNER or LEFT for a LATERAL reference.")
		}
		js.lateralRight = ""
		b := &binder{cols: js.cols, params: qp.params, scope: js, q: qp, clause: "JOIN conditions", exactSum: true}
		on := it.On
		using := it.Using
		if it.Natural {
			// USING every column name both sides show, in the left
			// side's order; none makes it a cross join (ON TRUE).
			using = naturalColumns(js, len(l.Cols()))
			if len(using) == 0 && on == nil {
				on = &sql.Literal{Value: true, Type: catalog.Boolean, Pos: it.Pos}
			}
		}
		joinNo := 0
		if into.merged != nil && len(*into.merged) > 0 {
			joinNo = (*into.merged)[len(*into.merged)-1].join + 1
		}
		for _, u := range using {
			if _, ok := into.full[strings.ToLower(u)]; ok {
				return nil, pgerr.New(pgerr.FeatureNotSupported, "JOIN ... USING (%s) of a column a FULL JOIN ... USING merged is not supported", u).WithPosition(it.Pos).
					WithHint("Write the condition with ON, comparing COALESCE of the merged columns.")
			}
			// A name an inner join already merged is one column.
			mergedBefore := into.using[strings.ToLower(u)]
			into.using[strings.ToLower(u)] = true
			var lref, rref *sql.ColumnRef
			for _, si := range js.items {
				for _, c := range si.cols {
					if strings.EqualFold(c.Name, u) {
						ref := &sql.ColumnRef{Table: si.alias, Name: c.Name, Pos: it.Pos}
						switch left := si.start < len(l.Cols()); {
						case left && lref == nil:
							lref = ref
						case left && !mergedBefore:
							return nil, pgerr.New(pgerr.AmbiguousColumn, "common column name %q appears more than once in left table", u).WithPosition(it.Pos)
						case !left && rref == nil:
							rref = ref
						}
					}
				}
			}
			if lref == nil || rref == nil {
				return nil, pgerr.New(pgerr.UndefinedColumn, "column %q specified in USING clause does not exist in both tables", u).WithPosition(it.Pos)
			}
			if into.merged != nil {
				m := mergedCol{join: joinNo, from: lref, merges: [2]*sql.ColumnRef{lref, rref}, full: it.Kind == sql.JoinFull}
				if it.Kind == sql.JoinRight {
					m.from = rref
				}
				*into.merged = append(*into.merged, m)
			}
			if it.Kind == sql.JoinFull {
				if into.full == nil {
					return nil, pgerr.New(pgerr.FeatureNotSupported, "FULL JOIN ... USING is not supported here").WithPosition(it.Pos).
						WithHint("Write the condition with ON, and COALESCE the two columns where you need the merged one.")
				}
				into.full[strings.ToLower(u)] = [2]*sql.ColumnRef{lref, rref}
			}
			var eq sql.Expr = &sql.Binary{Op: "=", L: lref, R: rref, Pos: it.Pos}
			if on != nil {
				eq = &sql.Binary{Op: "AND", L: on, R: eq, Pos: it.Pos}
			}
			on = eq
		}
		if on != nil {
			cond, err := b.bind(on)
			if err != nil {
				return nil, err
			}
			if cond, err = b.coerce(cond, catalog.Boolean, on.Position(), "argument of JOIN/ON"); err != nil {
				return nil, err
			}
			j.On = cond
			j.Equi = equiConds(cond, len(l.Cols()))
			if j.Kind == sql.JoinCross {
				j.Kind = sql.JoinInner
			}
		} else if j.Kind == sql.JoinLeft || j.Kind == sql.JoinRight || j.Kind == sql.JoinFull {
			return nil, pgerr.New(pgerr.SyntaxError, "%s needs an ON or USING condition", j.Kind).WithPosition(it.Pos)
		}
		for _, si := range js.items {
			into.add(si.alias, si.cols)
			into.items[len(into.items)-1].rel = si.rel
			into.items[len(into.items)-1].pseudo = si.pseudo
			into.items[len(into.items)-1].used = si.used
		}
		return j, nil
	}
	return nil, pgerr.New(pgerr.FeatureNotSupported, "FROM item %T is not supported", it)
}

// renameColumns returns cols with the first len(names) of those a
// SELECT * shows renamed (FROM t AS x(a, b)), as Postgres renames them.
func renameColumns(cols []catalog.Column, names []string, alias string) ([]catalog.Column, error) {
	if len(names) == 0 {
		return cols, nil
	}
	out := slices.Clone(cols)
	k := 0
	for i := range out {
		if k < len(names) && !out[i].Hidden {
			out[i].Name = names[k]
			k++
		}
	}
	if k < len(names) {
		return nil, pgerr.New(pgerr.InvalidColumnReference, "table %q has %d columns available but %d columns specified", alias, k, len(names))
	}
	return out, nil
}

// naturalColumns are the names of NATURAL JOIN's USING: those of the
// visible columns of the join's left side (the first n of js) that the
// right side has too, each once, in the left side's order.
func naturalColumns(js *scope, n int) []string {
	right := map[string]bool{}
	for _, c := range js.cols[n:] {
		if !c.Hidden {
			right[strings.ToLower(c.Name)] = true
		}
	}
	var out []string
	seen := map[string]bool{}
	for _, c := range js.cols[:n] {
		name := strings.ToLower(c.Name)
		if !c.Hidden && right[name] && !seen[name] {
			seen[name] = true
			out = append(out, c.Name)
		}
	}
	return out
}

// equiConds finds the conjuncts of cond that compare a column of the
// left side (indexes below n) with one of the right side.
func equiConds(cond Scalar, n int) []EquiCond {
	var out []EquiCond
	equalities(cond, func(lhs, rhs Scalar) {
		l, lok := lhs.(*ColRef)
		r, rok := rhs.(*ColRef)
		if !lok || !rok || l.T != r.T {
			return
		}
		switch {
		case l.Idx < n && r.Idx >= n:
			out = append(out, EquiCond{LIdx: l.Idx, RIdx: r.Idx - n})
		case r.Idx < n && l.Idx >= n:
			out = append(out, EquiCond{LIdx: r.Idx, RIdx: l.Idx - n})
		}
	})
	return out
}

// basinRelation returns the table, view or stream ref names, nil when
// it names none (a catalog relation, or nothing).
func (qp *queryPlanner) basinRelation(ref *sql.TableRef) *catalog.Relation {
	schema := strings.ToLower(ref.Schema)
	if qp.cat == nil || (schema != "" && schema != "public") {
		return nil
	}
	if schema == "" {
		if _, ok := catalog.LookupVirtual("", ref.Name); ok {
			return nil
		}
	}
	r, _ := qp.cat.Lookup(ref.Name)
	return r
}

// resolveTable finds a catalog relation (pg_catalog's,
// information_schema's).
func (qp *queryPlanner) resolveTable(ref *sql.TableRef) (*catalog.VirtualTable, error) {
	schema := strings.ToLower(ref.Schema)
	switch {
	case schema == "" || catalog.IsSystemSchema(schema):
		if t, ok := catalog.LookupVirtual(schema, ref.Name); ok {
			return t, nil
		}
	case schema != "public":
		return nil, pgerr.New(pgerr.InvalidSchemaName, "schema %q does not exist", ref.Schema).WithPosition(ref.Pos)
	}
	name := ref.Name
	if ref.Schema != "" {
		name = ref.Schema + "." + ref.Name
	}
	return nil, pgerr.New(pgerr.UndefinedTable, "relation %q does not exist", name).WithPosition(ref.Pos).
		WithHint("SHOW STREAMS and SHOW TABLES list what exists.")
}

// planFuncRef plans a set-returning function in FROM.
func (qp *queryPlanner) planFuncRef(it *sql.FuncRef, parent *scope, into *scope) (Rel, error) {
	// A function in FROM may read the columns of the items before it, as
	// in Postgres (LATERAL or not): it is then run once per row of
	// theirs. Its arguments are bound as the level of a query of their
	// own, over those items.
	if len(into.cols) > 0 {
		ls := into.lateral(parent, into.level)
		tmp := &scope{}
		r, err := qp.planFuncRefIn(it, &scope{parent: ls, level: &level{}}, tmp)
		if err == nil && *ls.hit != "" {
			into.lateralRight = *ls.hit
			into.add(tmp.items[0].alias, tmp.items[0].cols)
			return r, nil
		}
	}
	return qp.planFuncRefIn(it, &scope{parent: parent, level: into.level}, into)
}

// planFuncRefIn plans a function in FROM with its arguments bound in sc.
func (qp *queryPlanner) planFuncRefIn(it *sql.FuncRef, sc *scope, into *scope) (Rel, error) {
	b := &binder{params: qp.params, scope: sc, q: qp, clause: "functions in FROM"}
	sig, ok := setReturningFuncs[it.Func.Name]
	if !ok {
		// A plain function: one row holding its value.
		if IsAggregate(it.Func.Name) || queryAggregates[it.Func.Name] {
			return nil, pgerr.New(pgerr.GroupingError, "aggregate functions are not allowed in functions in FROM").WithPosition(it.Pos)
		}
		v, err := b.bind(it.Func)
		if err != nil {
			return nil, err
		}
		name := it.Func.Name
		if len(it.Columns) > 0 {
			name = it.Columns[0]
		} else if it.Alias != "" {
			name = it.Alias
		}
		alias := it.Alias
		if alias == "" {
			alias = it.Func.Name
		}
		cols := []catalog.Column{{Name: name, Type: v.Type()}}
		into.add(alias, cols)
		return &FuncRel{Name: it.Func.Name, Scalar: v, Columns: cols}, nil
	}
	args, err := b.bindArgs(it.Func.Args)
	if err != nil {
		return nil, err
	}
	args, t, fields, err := sig.bind(args, it.Func.Pos)
	if err != nil {
		return nil, err
	}
	var cols []catalog.Column
	if t == catalog.Record {
		cols = append(cols, fields...)
	} else {
		name := it.Func.Name
		if it.Alias != "" {
			name = it.Alias
		}
		cols = []catalog.Column{{Name: name, Type: t}}
	}
	if len(it.Columns) > len(cols) {
		return nil, pgerr.New(pgerr.InvalidColumnReference, "%s returns %d columns, %d aliases given", it.Func.Name, len(cols), len(it.Columns)).WithPosition(it.Pos)
	}
	for i, n := range it.Columns {
		cols[i].Name = n
	}
	alias := it.Alias
	if alias == "" {
		alias = it.Func.Name
	}
	into.add(alias, cols)
	return &FuncRel{Name: it.Func.Name, Args: args, Columns: cols}, nil
}

func (b *binder) bindArgs(es []sql.Expr) ([]Scalar, error) {
	out := make([]Scalar, len(es))
	for i, e := range es {
		s, err := b.bind(e)
		if err != nil {
			return nil, err
		}
		out[i] = s
	}
	return out, nil
}

// srfSlot and winSlot stand for a select list's SRF and window values
// while it is bound; planBlock turns them into columns.
type srfSlot struct {
	i int
	t catalog.Type
}

type winSlot struct {
	i int
	t catalog.Type
}

func (s *srfSlot) Type() catalog.Type { return s.t }
func (s *srfSlot) String() string     { return fmt.Sprintf("$srf%d", s.i) }
func (s *winSlot) Type() catalog.Type { return s.t }
func (s *winSlot) String() string     { return fmt.Sprintf("$window%d", s.i) }

// recordFields names the fields of a record-valued expression.
func (b *binder) recordFields(e Scalar) []catalog.Column {
	switch e := e.(type) {
	case *Call:
		return e.Fields
	case *srfSlot:
		if b.srfFields != nil {
			return b.srfFields[e.i]
		}
	case *ColRef, *OuterRef:
		if b.scope != nil {
			if c, ok := b.scope.column(e); ok {
				return c.Fields
			}
		}
	}
	return nil
}

// coalesceMerged is the column a FULL JOIN ... USING merges: the first
// of its two columns that is not NULL.
func coalesceMerged(m [2]*sql.ColumnRef, pos int) sql.Expr {
	return &sql.Func{Name: "coalesce", Args: []sql.Expr{m[0], m[1]}, Pos: pos}
}
