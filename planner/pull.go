package planner

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/sql"
)

// Pseudo-columns every materialized row carries for reads. They are never
// part of SELECT *.
var PseudoColumns = []catalog.Column{
	{Name: "_partition", Type: catalog.Int, Hidden: true},
	{Name: "_served_by", Type: catalog.Varchar, Hidden: true},
	{Name: "_role", Type: catalog.Varchar, Hidden: true},
	{Name: "_offset_lag", Type: catalog.BigInt, Hidden: true},
	{Name: "_time_lag_ms", Type: catalog.BigInt, Hidden: true},
	{Name: "_position", Type: catalog.Varchar, Hidden: true},
}

// RowtimeColumn is ROWTIME, the record time of a stream's or table's
// records as ksqlDB has it: BIGINT milliseconds since the Unix epoch,
// the Kafka record's timestamp or, with the source's WITH (timestamp =
// 'col'), that column's value. Persistent queries read it on every
// record (RecordInput), pull queries on a stream's; a table's or view's
// stores do not keep it.
var RowtimeColumn = catalog.Column{Name: "rowtime", Type: catalog.BigInt, Hidden: true}

// RowPartitionColumn and RowOffsetColumn are ROWPARTITION and
// ROWOFFSET, ksqlDB's coordinates of a stream's record: the Kafka
// partition and offset of the record in the stream's topic. A
// persistent query that reads one stream reads them on every record
// (SourceInput), as does a SELECT from a stream; a re-keyed record
// keeps its source record's. A table's or view's stores do not keep
// them, nor does a join's stream (its stages re-send records).
var (
	RowPartitionColumn = catalog.Column{Name: "rowpartition", Type: catalog.Int, Hidden: true}
	RowOffsetColumn    = catalog.Column{Name: "rowoffset", Type: catalog.BigInt, Hidden: true}
)

// RecordInput is the row a persistent query's expressions read from a
// record of src: its columns, then ROWTIME.
func RecordInput(src *catalog.Relation) []catalog.Column {
	return append(append(make([]catalog.Column, 0, len(src.Schema.Columns)+1), src.Schema.Columns...), RowtimeColumn)
}

// SourceInput is the row a persistent query over the one relation src
// reads from its records: RecordInput, then, for a stream, ROWPARTITION
// and ROWOFFSET (the plan's Coords). Columns of src named so come
// first, and so hide them.
func SourceInput(src *catalog.Relation) []catalog.Column {
	in := RecordInput(src)
	if src.Kind == catalog.KindStream {
		in = append(in, RowPartitionColumn, RowOffsetColumn)
	}
	return in
}

// isRecordCoord reports whether name is ROWPARTITION or ROWOFFSET (any
// case).
func isRecordCoord(name string) bool {
	return strings.EqualFold(name, RowPartitionColumn.Name) || strings.EqualFold(name, RowOffsetColumn.Name)
}

// Indexes of the pseudo-columns after a relation's own columns.
const (
	PseudoPartition = iota
	PseudoServedBy
	PseudoRole
	PseudoOffsetLag
	PseudoTimeLag
	PseudoPosition
)

// SortKey is one ORDER BY key, bound over the row the sort sees (the input
// row, or the aggregated row of a grouped query).
type SortKey struct {
	Expr       Scalar
	Desc       bool
	NullsFirst bool
}

// PullPlan reads a table, view or stream once and returns rows.
type PullPlan struct {
	// Rel is the relation read; nil for SELECT without FROM.
	Rel *catalog.Relation
	// Input is the row the scan produces: Rel's columns, then
	// PseudoColumns.
	Input []catalog.Column
	// Lookup, when set, holds one value per key column (in schema order):
	// the query reads only that key, in one partition.
	Lookup []Scalar
	// Filter is applied to each input row; nil keeps all.
	Filter Scalar
	// LookupIn, when set, holds one key per value of "k IN (...)" in a
	// top-level AND, on a relation whose key is the one column k: the
	// query reads those keys only, in the partitions they hash to.
	LookupIn [][]Scalar
	// Range, when set, bounds a scan to the keys whose first column is
	// within it (a range in a top-level AND of the filter, which still
	// applies to every row read).
	Range *KeyRange
	// Partition, when set, is the value _partition is pinned to by the
	// filter (_partition = N in a top-level AND): a scan reads only that
	// partition.
	Partition Scalar
	// Where is the WHERE clause as SQL and Alias the FROM alias, when the
	// filter may run on another node as well (PushableFilter): a read
	// forwarded to the node holding a partition sends them, so only
	// matching rows cross the network. Empty when the filter must run
	// here only.
	Where, Alias string
	// Needed marks the relation's columns the query reads (filter,
	// output, grouping, aggregates, ordering); a forwarded read fetches
	// only those and the others are NULL.
	Needed []bool

	// Grouped queries aggregate the filtered rows; Output, Having and
	// Order are then bound over the aggregated row (GroupBy values, then
	// one value per Aggs entry).
	Grouped bool
	GroupBy []Scalar
	Aggs    []AggSpec
	Having  Scalar

	Distinct bool
	Output   []Scalar
	Columns  []catalog.Column
	Order    []SortKey
	// Limit is -1 for none.
	Limit, Offset int64
	Params        *Params

	// Query, when set, is the relational plan of a query the read rule
	// did not fold into one read (query.go): Rel is nil, and Columns,
	// Params, Limit and Offset are the only other fields used.
	Query *QueryPlan
}

// neededColumns marks the columns of Rel that the plan's expressions
// over the input row read.
// Walk calls fn, through the package's Walk, for every expression of p
// and each of their subexpressions: the filter, the partition pin, the
// key lookups, the grouping, the aggregates' arguments, HAVING, the
// output and the ordering. Expressions the plan holds twice (a lookup is
// also part of the filter) are visited twice.
func (p *PullPlan) Walk(fn func(Scalar)) {
	Walk(p.Filter, fn)
	Walk(p.Partition, fn)
	for _, l := range p.Lookup {
		Walk(l, fn)
	}
	for _, in := range p.LookupIn {
		for _, l := range in {
			Walk(l, fn)
		}
	}
	for _, g := range p.GroupBy {
		Walk(g, fn)
	}
	for _, a := range p.Aggs {
		Walk(a.Arg, fn)
		Walk(a.Arg2, fn)
	}
	Walk(p.Having, fn)
	for _, o := range p.Output {
		Walk(o, fn)
	}
	for _, o := range p.Order {
		Walk(o.Expr, fn)
	}
}

func (p *PullPlan) neededColumns() []bool {
	need := make([]bool, len(p.Rel.Schema.Columns))
	mark := func(s Scalar) {
		Walk(s, func(s Scalar) {
			if c, ok := s.(*ColRef); ok && c.Idx < len(need) {
				need[c.Idx] = true
			}
		})
	}
	mark(p.Filter)
	if p.Grouped {
		// Output, Having and Order are over the aggregated row.
		for _, g := range p.GroupBy {
			mark(g)
		}
		for _, a := range p.Aggs {
			mark(a.Arg)
			mark(a.Arg2)
		}
		return need
	}
	for _, o := range p.Output {
		mark(o)
	}
	for _, o := range p.Order {
		mark(o.Expr)
	}
	return need
}

// pushableFuncs are the functions a filter may call and still run on
// another node: their result depends on their arguments only. Session
// functions (current_setting, current_user, now) stay here, and so do
// parameters (a prepared scan is filtered here; its key lookups are
// still pushed as keys).
var pushableFuncs = map[string]bool{
	"lower": true, "upper": true, "length": true, "char_length": true, "abs": true,
	"coalesce": true, "nullif": true, "substr": true, "substring": true, "round": true,
	"floor": true, "ceil": true, "ceiling": true, "trim": true, "btrim": true,
	"ltrim": true, "rtrim": true, "concat": true, "replace": true, "starts_with": true,
	"mod": true, "greatest": true, "least": true,
}

// PushableFilter reports whether filter gives the same answer on every
// node: it reads only the row, constants and parameters, through
// functions of their arguments alone.
func PushableFilter(filter Scalar) bool {
	ok := true
	Walk(filter, func(s Scalar) {
		switch s := s.(type) {
		case *Call:
			ok = ok && pushableFuncs[strings.ToLower(s.Name)]
		case *ParamRef, *InitRef:
			ok = false
		}
	})
	return ok
}

func hasAggregate(s *sql.Select) bool {
	found := false
	for _, it := range s.Items {
		if it.Expr != nil {
			walk(it.Expr, func(e sql.Expr) {
				if f, ok := e.(*sql.Func); ok && f.Over == nil && (IsAggregate(f.Name) || ViewAggregate(f.Name)) {
					found = true
				}
			})
		}
	}
	return found
}

// walk calls fn for e and every expression under it.
func walk(e sql.Expr, fn func(sql.Expr)) {
	if e == nil {
		return
	}
	fn(e)
	switch e := e.(type) {
	case *sql.Unary:
		walk(e.X, fn)
	case *sql.Binary:
		walk(e.L, fn)
		walk(e.R, fn)
	case *sql.IsNull:
		walk(e.X, fn)
	case *sql.In:
		walk(e.X, fn)
		for _, x := range e.List {
			walk(x, fn)
		}
	case *sql.Between:
		walk(e.X, fn)
		walk(e.Lo, fn)
		walk(e.Hi, fn)
	case *sql.Func:
		for _, x := range e.Args {
			walk(x, fn)
		}
	case *sql.Cast:
		walk(e.X, fn)
	case *sql.Case:
		walk(e.Operand, fn)
		for _, w := range e.Whens {
			walk(w.Cond, fn)
			walk(w.Result, fn)
		}
		walk(e.Else, fn)
	}
}

// expandStar replaces * with the relation's visible columns.
func expandStar(items []sql.SelectItem, input []catalog.Column) ([]sql.SelectItem, error) {
	var out []sql.SelectItem
	for _, it := range items {
		if !it.Star {
			out = append(out, it)
			continue
		}
		if input == nil {
			return nil, pgerr.New(pgerr.SyntaxError, "SELECT * with no tables specified is not valid")
		}
		for _, c := range input {
			if !c.Hidden {
				out = append(out, sql.SelectItem{Expr: &sql.ColumnRef{Name: c.Name}, Text: c.Name})
			}
		}
	}
	return out, nil
}

// outputColumns names the result columns as Postgres does: the alias, a
// column's name, a function's name, else ?column?.
func outputColumns(items []sql.SelectItem, exprs []Scalar) []catalog.Column {
	cols := make([]catalog.Column, len(items))
	for i, it := range items {
		cols[i] = catalog.Column{Name: itemName(it), Type: exprs[i].Type()}
		if cols[i].Type == catalog.Unknown {
			cols[i].Type = catalog.Varchar
		}
	}
	return cols
}

func itemName(it sql.SelectItem) string {
	if it.Alias != "" {
		return it.Alias
	}
	name, _ := exprName(it.Expr)
	return name
}

// exprName is Postgres's FigureColname: a column or function names
// itself (strength 2); a cast takes its operand's name if that is strong,
// else its type's name; CASE is "case" (strength 1); anything else
// ?column? (strength 0).
func exprName(e sql.Expr) (string, int) {
	switch x := e.(type) {
	case *sql.ColumnRef:
		return x.Name, 2
	case *sql.Func:
		return x.Name, 2
	case *sql.Cast:
		if name, strength := exprName(x.X); strength == 2 {
			return name, 2
		}
		return x.Type.PGName(), 1
	case *sql.Case:
		return "case", 1
	case *sql.FieldSelect:
		return x.Field, 2
	case *sql.Subscript:
		// a[1] is named a, as in Postgres.
		return exprName(x.X)
	case *sql.Binary:
		// ksqlDB's s->field names itself after the field (json's ->
		// takes a string, and stays ?column?).
		if r, ok := x.R.(*sql.ColumnRef); ok && x.Op == "->" {
			return r.Name, 2
		}
	}
	return "?column?", 0
}

// bindOrderExpr resolves an ORDER BY entry: an output column's name or
// position first (as Postgres does), else an expression over the input.
func bindOrderExpr(bind func(sql.Expr) (Scalar, error), e sql.Expr, items []sql.SelectItem, output []Scalar, clause string) (Scalar, error) {
	if c, ok := e.(*sql.ColumnRef); ok && c.Table == "" {
		for i, it := range items {
			if strings.EqualFold(itemName(it), c.Name) && (it.Alias != "" || isPlainColumn(it.Expr)) {
				return output[i], nil
			}
		}
	}
	if l, ok := e.(*sql.Literal); ok && (l.Type == catalog.Int || l.Type == catalog.BigInt) {
		n := l.Value.(int64)
		if n < 1 || int(n) > len(output) {
			return nil, pgerr.New(pgerr.InvalidColumnReference, "%s position %d is not in select list", clause, n).WithPosition(l.Pos)
		}
		return output[n-1], nil
	}
	return bind(e)
}

func isPlainColumn(e sql.Expr) bool {
	_, ok := e.(*sql.ColumnRef)
	return ok
}

func constInt(e sql.Expr, clause string, def int64) (int64, error) {
	if e == nil {
		return def, nil
	}
	var col *sql.ColumnRef
	walk(e, func(x sql.Expr) {
		if c, ok := x.(*sql.ColumnRef); ok && col == nil {
			col = c
		}
	})
	if col != nil {
		return 0, pgerr.New(pgerr.InvalidColumnReference, "argument of %s must not contain variables", clause).WithPosition(col.Pos)
	}
	b := &binder{clause: clause}
	s, err := b.bind(e)
	if err != nil {
		return 0, err
	}
	c, ok := s.(*Const)
	if !ok {
		return 0, pgerr.New(pgerr.FeatureNotSupported, "%s must be a constant", clause).WithPosition(e.Position())
	}
	if c.V == nil {
		return def, nil
	}
	v, err := ConvertValue(c.V, catalog.BigInt)
	if err != nil {
		return 0, err
	}
	n := v.(int64)
	if n < 0 {
		code := pgerr.InvalidRowCountInLimitClause
		if clause == "OFFSET" {
			code = pgerr.InvalidRowCountInResultOffsetClause
		}
		return 0, pgerr.New(code, "%s must not be negative", clause).WithPosition(e.Position())
	}
	return n, nil
}

// keyLookup returns the key values when filter pins every key column of
// rel to a constant or parameter with equality in a top-level AND.
func keyLookup(rel *catalog.Relation, filter Scalar) []Scalar {
	keys := rel.Schema.KeyIndexes()
	if len(keys) == 0 {
		return nil
	}
	found := make(map[int]Scalar)
	pinned(filter, func(c *ColRef, val Scalar) {
		if c.Idx < len(rel.Schema.Columns) {
			found[c.Idx] = val
		}
	})
	out := make([]Scalar, len(keys))
	for i, k := range keys {
		v, ok := found[k]
		if !ok {
			return nil
		}
		out[i] = v
	}
	return out
}

// keyIn returns the keys of "k IN (v1, v2, ...)" in a top-level AND of
// filter, where k is rel's only key column and every v a constant or a
// parameter; nil otherwise.
func keyIn(rel *catalog.Relation, filter Scalar) [][]Scalar {
	keys := rel.Schema.KeyIndexes()
	if len(keys) != 1 {
		return nil
	}
	var out [][]Scalar
	conjuncts(filter, func(c Scalar) {
		in, ok := c.(*In)
		if !ok || in.Not || out != nil {
			return
		}
		col, ok := in.X.(*ColRef)
		widened := false
		if c, isCast := in.X.(*Cast); isCast {
			col, ok = c.X.(*ColRef)
			widened = true
		}
		if !ok || col.Idx != keys[0] {
			return
		}
		var list [][]Scalar
		for _, v := range in.List {
			if widened {
				// CAST(k AS BIGINT) IN (1, 2): back to INTEGER constants,
				// as for k = 1.
				if _, v = intKey(in.X, v); v.Type() != col.T {
					return
				}
			}
			switch v.(type) {
			case *Const, *ParamRef, *InitRef:
				list = append(list, []Scalar{v})
			default:
				return
			}
		}
		out = list
	})
	return out
}

// conjuncts calls fn for each conjunct of a top-level AND of cond.
func conjuncts(cond Scalar, fn func(Scalar)) {
	if b, ok := cond.(*Binary); ok && b.Op == "AND" {
		conjuncts(b.L, fn)
		conjuncts(b.R, fn)
		return
	}
	fn(cond)
}

// partitionPin returns the value the _partition pseudo-column is pinned
// to with equality in a top-level AND of filter, nil if none.
func partitionPin(rel *catalog.Relation, filter Scalar) Scalar {
	idx := len(rel.Schema.Columns) + PseudoPartition
	var pin Scalar
	pinned(filter, func(c *ColRef, val Scalar) {
		if c.Idx == idx {
			pin = val
		}
	})
	return pin
}

// pinned calls fn for each column that a top-level AND of filter
// compares with equality to a constant or a parameter.
func pinned(filter Scalar, fn func(c *ColRef, val Scalar)) {
	equalities(filter, func(l, r Scalar) {
		col, val := intKey(l, r)
		if _, ok := col.(*ColRef); !ok {
			col, val = intKey(r, l)
		}
		c, ok := col.(*ColRef)
		if !ok {
			return
		}
		switch val.(type) {
		case *Const, *ParamRef, *InitRef:
			fn(c, val)
		}
	})
}

// equalities calls fn with both sides of each "=" among the conjuncts of
// a top-level AND of cond.
func equalities(cond Scalar, fn func(l, r Scalar)) {
	b, ok := cond.(*Binary)
	if !ok {
		return
	}
	switch b.Op {
	case "AND":
		equalities(b.L, fn)
		equalities(b.R, fn)
	case "=":
		fn(b.L, b.R)
	}
}

// intKey undoes the widening of an INTEGER column compared with a
// BIGINT constant (k = 3 binds as CAST(k AS BIGINT) = 3), so that the
// comparison can still be a key lookup. A constant outside INTEGER's
// range matches no row and is left to the scan.
func intKey(col, val Scalar) (Scalar, Scalar) {
	cast, ok := col.(*Cast)
	if !ok || cast.T != catalog.BigInt || cast.X.Type() != catalog.Int {
		return col, val
	}
	ref, ok := cast.X.(*ColRef)
	c, isConst := val.(*Const)
	if !ok || !isConst {
		return col, val
	}
	if n, ok := c.V.(int64); ok && n >= math.MinInt32 && n <= math.MaxInt32 {
		return ref, &Const{V: n, T: catalog.Int}
	}
	return col, val
}

// grouping is a bound grouped select.
type grouping struct {
	groupBy []Scalar  // over the input row
	aggs    []AggSpec // over the input row
	output  []Scalar  // over the aggregated row
	having  Scalar    // over the aggregated row
	// post binds further expressions (ORDER BY) over the aggregated row.
	post func(sql.Expr) (Scalar, error)
}

// bindGrouped binds GROUP BY, the select list and HAVING of a grouped
// query. Select items and HAVING are bound over the input with aggregates
// collected, then lifted onto the aggregated row: a subexpression equal
// to a GROUP BY expression reads that group value, an aggregate reads its
// result, and any other column reference is a grouping error.
func bindGrouped(b *binder, groupBy []sql.Expr, items []sql.SelectItem, having sql.Expr) (*grouping, error) {
	g := &grouping{}
	b.clause = "GROUP BY"
	windows := b.windows
	b.windows = nil // not in GROUP BY or HAVING
	for _, e := range groupBy {
		// GROUP BY may name an output column by alias or position.
		e = resolveGroupAlias(e, items, b.cols)
		s, err := b.bind(e)
		if err != nil {
			return nil, err
		}
		g.groupBy = append(g.groupBy, s)
	}
	b.clause = ""
	b.aggs = &g.aggs
	b.windows = windows
	if b.windows != nil {
		b.winLift = g.lift
	}
	defer func() { b.aggs, b.winLift = nil, nil }()
	for _, it := range items {
		s, err := b.bind(it.Expr)
		if err != nil {
			return nil, err
		}
		out, err := g.lift(s, it.Expr.Position())
		if err != nil {
			return nil, err
		}
		g.output = append(g.output, out)
	}
	if having != nil {
		b.windows, b.clause = nil, "HAVING"
		s, err := b.bind(having)
		b.windows, b.clause = windows, ""
		if err != nil {
			return nil, err
		}
		if s, err = b.coerce(s, catalog.Boolean, having.Position(), "argument of HAVING"); err != nil {
			return nil, err
		}
		if g.having, err = g.lift(s, having.Position()); err != nil {
			return nil, err
		}
	}
	// ORDER BY may add aggregates of its own; they extend the aggregated
	// row.
	g.post = func(e sql.Expr) (Scalar, error) {
		b.aggs = &g.aggs
		if b.windows != nil {
			b.winLift = g.lift
		}
		defer func() { b.aggs, b.winLift = nil, nil }()
		s, err := b.bind(e)
		if err != nil {
			return nil, err
		}
		return g.lift(s, e.Position())
	}
	return g, nil
}

func resolveGroupAlias(e sql.Expr, items []sql.SelectItem, input []catalog.Column) sql.Expr {
	switch x := e.(type) {
	case *sql.Literal:
		if n, ok := x.Value.(int64); ok && n >= 1 && int(n) <= len(items) {
			return items[n-1].Expr
		}
	case *sql.ColumnRef:
		// A name that is both an input column and an output alias is the
		// input column, as in Postgres.
		if x.Table == "" && (catalog.Schema{Columns: input}).Index(x.Name) < 0 {
			for _, it := range items {
				if it.Alias != "" && strings.EqualFold(it.Alias, x.Name) {
					return it.Expr
				}
			}
		}
	}
	return e
}

// lift rewrites s, bound over the input row, onto the aggregated row.
func (g *grouping) lift(s Scalar, pos int) (Scalar, error) {
	for i, ge := range g.groupBy {
		if Equal(s, ge) {
			return &ColRef{Idx: i, T: ge.Type(), Name: ge.String()}, nil
		}
	}
	switch x := s.(type) {
	case *aggSlot:
		return &ColRef{Idx: len(g.groupBy) + x.i, T: x.t, Name: g.aggs[x.i].String()}, nil
	case *ColRef:
		return nil, pgerr.New(pgerr.GroupingError,
			"column %q must appear in the GROUP BY clause or be used in an aggregate function", x.Name).WithPosition(pos)
	case *Const, *ParamRef:
		return s, nil
	case *Unary:
		y, err := g.lift(x.X, pos)
		if err != nil {
			return nil, err
		}
		return &Unary{Op: x.Op, X: y, T: x.T}, nil
	case *Binary:
		l, err := g.lift(x.L, pos)
		if err != nil {
			return nil, err
		}
		r, err := g.lift(x.R, pos)
		if err != nil {
			return nil, err
		}
		return &Binary{Op: x.Op, L: l, R: r, T: x.T}, nil
	case *IsNull:
		y, err := g.lift(x.X, pos)
		if err != nil {
			return nil, err
		}
		return &IsNull{X: y, Not: x.Not}, nil
	case *In:
		y, err := g.lift(x.X, pos)
		if err != nil {
			return nil, err
		}
		list := make([]Scalar, len(x.List))
		for i, l := range x.List {
			if list[i], err = g.lift(l, pos); err != nil {
				return nil, err
			}
		}
		return &In{X: y, List: list, Not: x.Not}, nil
	case *Cast:
		y, err := g.lift(x.X, pos)
		if err != nil {
			return nil, err
		}
		c := *x // with its typmod
		c.X = y
		return &c, nil
	case *Case:
		c := &Case{T: x.T}
		for _, a := range x.Arms {
			cond, err := g.lift(a.Cond, pos)
			if err != nil {
				return nil, err
			}
			res, err := g.lift(a.Result, pos)
			if err != nil {
				return nil, err
			}
			c.Arms = append(c.Arms, CaseArm{Cond: cond, Result: res})
		}
		if x.Else != nil {
			e, err := g.lift(x.Else, pos)
			if err != nil {
				return nil, err
			}
			c.Else = e
		}
		return c, nil
	case *Call:
		args := make([]Scalar, len(x.Args))
		for i, a := range x.Args {
			var err error
			if args[i], err = g.lift(a, pos); err != nil {
				return nil, err
			}
		}
		c := *x
		c.Args = args
		return &c, nil
	}
	return g.liftExt(s, pos)
}

// String renders the plan for EXPLAIN.
func (p *PullPlan) String() string { return p.Explain(nil) }

// Explain renders the plan for EXPLAIN, each line of a relational plan
// (Query) followed by what ann gives for its operator; a plan the pull
// engine runs has its first line, the query's output, annotated as the
// whole query (a nil Rel).
func (p *PullPlan) Explain(ann Annotator) string {
	if p.Query != nil {
		var b strings.Builder
		if p.Limit >= 0 || p.Offset > 0 {
			line(&b, "  ", ann, nil, "", "Limit %d offset %d", p.Limit, p.Offset)
		}
		return b.String() + p.Query.Explain(ann)
	}
	text := p.explainPull()
	if ann == nil {
		return text
	}
	first, rest, _ := strings.Cut(text, "\n")
	return first + ann(nil, "") + "\n" + rest
}

func (p *PullPlan) explainPull() string {
	var b strings.Builder
	if p.Limit >= 0 || p.Offset > 0 {
		fmt.Fprintf(&b, "  Limit %d offset %d\n", p.Limit, p.Offset)
	}
	if len(p.Order) > 0 {
		var ks []string
		for _, k := range p.Order {
			s := k.Expr.String()
			if k.Desc {
				s += " DESC"
			}
			if k.NullsFirst != k.Desc {
				s += map[bool]string{true: " NULLS FIRST", false: " NULLS LAST"}[k.NullsFirst]
			}
			ks = append(ks, s)
		}
		fmt.Fprintf(&b, "  Sort [%s]\n", strings.Join(ks, ", "))
	}
	if p.Distinct {
		b.WriteString("  Distinct\n")
	}
	var outs []string
	for _, o := range p.Output {
		outs = append(outs, o.String())
	}
	fmt.Fprintf(&b, "  Project [%s]\n", strings.Join(outs, ", "))
	if p.Grouped {
		var gs, as []string
		for _, g := range p.GroupBy {
			gs = append(gs, g.String())
		}
		for _, a := range p.Aggs {
			as = append(as, a.String())
		}
		if p.Having != nil {
			fmt.Fprintf(&b, "  Filter (HAVING) %s\n", p.Having)
		}
		fmt.Fprintf(&b, "  HashAggregate group=[%s] aggs=[%s]\n", strings.Join(gs, ", "), strings.Join(as, ", "))
	}
	if p.Filter != nil {
		fmt.Fprintf(&b, "  Filter %s\n", p.Filter)
	}
	switch {
	case p.Rel == nil:
		b.WriteString("  Values (one row)\n")
	case p.Rel.Kind == catalog.KindStream:
		fmt.Fprintf(&b, "  Scan stream %s (topic %s, %d partitions, up to the end offsets at start)\n", p.Rel.Name, p.Rel.Topic, p.Rel.Partitions)
	case p.Lookup != nil:
		var ks []string
		for _, k := range p.Lookup {
			ks = append(ks, k.String())
		}
		fmt.Fprintf(&b, "  Key lookup %s key=(%s) (one partition)\n", p.Rel.Name, strings.Join(ks, ", "))
	case p.LookupIn != nil:
		var ks []string
		for _, k := range p.LookupIn {
			ks = append(ks, k[0].String())
		}
		fmt.Fprintf(&b, "  Key lookups %s keys=(%s) (the partitions they hash to)\n", p.Rel.Name, strings.Join(ks, ", "))
	case p.Partition != nil:
		fmt.Fprintf(&b, "  Scan %s partition %s (one of %d partitions)\n", p.Rel.Name, p.Partition, p.Rel.Partitions)
	case p.Range != nil && p.Range.OnePartition(p.Rel):
		fmt.Fprintf(&b, "  Scan %s key range %s (one partition)\n", p.Rel.Name, p.Range.describe(p.Rel))
	case p.Range != nil:
		fmt.Fprintf(&b, "  Scan %s key range %s (%d partitions)\n", p.Rel.Name, p.Range.describe(p.Rel), p.Rel.Partitions)
	default:
		fmt.Fprintf(&b, "  Scan %s (%d partitions)\n", p.Rel.Name, p.Rel.Partitions)
	}
	return b.String()
}

// KeyRange bounds a scan to a range of keys: those whose leading key
// columns equal Prefix (one value each, in key order) and whose next key
// column is between Lo and Hi. Prefix values, Lo and Hi are constants or
// parameters of their column's type; Lo and Hi are nil when open.
type KeyRange struct {
	Prefix         []Scalar
	Lo, Hi         Scalar
	LoIncl, HiIncl bool
}

// OnePartition reports whether the range's prefix holds rel's whole
// partition key, so that its keys are all in one partition: a windowed
// view's group, whose windows are the range (catalog.Window).
func (r *KeyRange) OnePartition(rel *catalog.Relation) bool {
	n := len(rel.PartitionKeyIndexes())
	return rel.Window != nil && n > 0 && len(r.Prefix) >= n
}

// describe shows r as EXPLAIN does: "(k >= $1 AND k < $2)", or
// "(k = 'eu')" for a prefix.
func (r *KeyRange) describe(rel *catalog.Relation) string {
	keys := rel.Schema.KeyIndexes()
	var parts []string
	for i, v := range r.Prefix {
		parts = append(parts, fmt.Sprintf("%s = %s", rel.Schema.Columns[keys[i]].Name, v))
	}
	if len(r.Prefix) < len(keys) {
		col := rel.Schema.Columns[keys[len(r.Prefix)]].Name
		if r.Lo != nil {
			parts = append(parts, fmt.Sprintf("%s %s %s", col, map[bool]string{true: ">=", false: ">"}[r.LoIncl], r.Lo))
		}
		if r.Hi != nil {
			parts = append(parts, fmt.Sprintf("%s %s %s", col, map[bool]string{true: "<=", false: "<"}[r.HiIncl], r.Hi))
		}
	}
	return "(" + strings.Join(parts, " AND ") + ")"
}

// rangeKeyType reports whether key columns of type t take part in key
// ranges: those whose key encoding orders (and equals) as SQL compares.
func rangeKeyType(t catalog.Type) bool {
	switch t {
	case catalog.Int, catalog.BigInt, catalog.Varchar, catalog.Timestamp, catalog.TimestampTZ, catalog.Date:
		return true
	}
	return false
}

// keyRange returns the range of keys a top-level AND of filter keeps
// rel's scan in, nil if none: equalities (=) on the leading key columns
// make its prefix, and =, <, <=, > and >= on the key column after them
// its bounds, each against a constant or parameter of the column's own
// type. It is only where a scan starts and stops: the filter still
// decides each row.
func keyRange(rel *catalog.Relation, filter Scalar) *KeyRange {
	keys := rel.Schema.KeyIndexes()
	type bound struct {
		op  string
		val Scalar
	}
	bounds := make([][]bound, len(keys))
	conjuncts(filter, func(c Scalar) {
		b, ok := c.(*Binary)
		if !ok {
			return
		}
		op, col, val := b.Op, b.L, b.R
		if _, isCol := col.(*ColRef); !isCol {
			// 5 < k is k > 5.
			col, val = val, col
			op = map[string]string{"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "="}[op]
		}
		ref, ok := col.(*ColRef)
		if !ok || val.Type() != ref.T || !rangeKeyType(ref.T) {
			return
		}
		k := slices.Index(keys, ref.Idx)
		if k < 0 {
			return
		}
		switch v := val.(type) {
		case *Const:
			if v.V == nil {
				return
			}
		case *ParamRef, *InitRef:
		default:
			return
		}
		switch op {
		case "=", "<", "<=", ">", ">=":
			bounds[k] = append(bounds[k], bound{op, val})
		}
	})
	var r KeyRange
	k := 0
	for ; k < len(keys); k++ {
		i := slices.IndexFunc(bounds[k], func(b bound) bool { return b.op == "=" })
		if i < 0 {
			break
		}
		r.Prefix = append(r.Prefix, bounds[k][i].val)
	}
	if k < len(keys) {
		for _, b := range bounds[k] {
			switch b.op {
			case ">", ">=":
				if r.Lo == nil {
					r.Lo, r.LoIncl = b.val, b.op == ">="
				}
			case "<", "<=":
				if r.Hi == nil {
					r.Hi, r.HiIncl = b.val, b.op == "<="
				}
			}
		}
	}
	if len(r.Prefix) == 0 && r.Lo == nil && r.Hi == nil {
		return nil
	}
	return &r
}

// BindValue binds an INSERT value: an expression without columns,
// converted to the column's type t as an assignment would. exec evaluates
// it once per row inserted.
func BindValue(e sql.Expr, t catalog.Type) (Scalar, error) {
	b := &binder{clause: "VALUES"}
	s, err := b.bind(e)
	if err != nil {
		return nil, err
	}
	return castTo(s, t, e.Position())
}
