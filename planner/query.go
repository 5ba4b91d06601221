package planner

import (
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"weak"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/sql"
)

// # Relational queries
//
// Every SELECT is planned here, as a QueryPlan: a tree of relational
// operators (Rel) that the relational engine (package query) runs. A
// stream, table or view is read through a RelationRel, the pull plan of
// its rows, which the pull engine runs: each partition from the best
// replica within the session's bounds, with the conditions on it pushed
// into that read (qpush.go). pg_catalog's and information_schema's
// relations are ScanRels over a catalog.PGSnapshot made for the
// statement.
//
// PlanSelect then applies the read rule (readrule.go): a query that is
// all one relation's read is folded into that read, a PullPlan the pull
// engine runs alone, so a key lookup or a filtered scan has no operator
// between the stores and the client.
//
// # Scopes and correlation
//
// Names are resolved in scopes: a SELECT's FROM items, each with its
// alias, columns and offset in the row the SELECT's expressions see,
// and a parent scope (the query the SELECT is a subquery of). A column
// found n scopes up is an OuterRef of depth n; exec keeps the rows of
// the enclosing queries on a stack while it runs a subquery, so OuterRef
// reads the n-th row from the top. A subquery with no OuterRef into its
// parent is run once per statement and its result reused.

// QueryPlan is a query over catalog relations.
type QueryPlan struct {
	Root    Rel
	Columns []catalog.Column
	// Correlated is set when the query reads a column of an enclosing
	// query (it must run again for each row of that query).
	Correlated bool
}

// Rel is a relational operator: it produces rows of Cols().
type Rel interface {
	Cols() []catalog.Column
	explain(b *strings.Builder, indent string, ann Annotator)
}

// ScanRel reads a virtual catalog relation.
type ScanRel struct {
	Table *catalog.VirtualTable
}

// RelationRel reads a basin relation (a table, a view or a stream) in a
// query the relational engine runs. Scan is the pull plan of all its
// rows, which the pull engine runs (exec gives query.Run the reader): each
// partition from the best replica within the session's bounds, as any
// pull query's, once per statement however often the query reads it. Its
// row is the relation's columns, then the pseudo-columns (and ROWTIME,
// ROWPARTITION and ROWOFFSET, for a stream), which * leaves out.
type RelationRel struct {
	Rel  *catalog.Relation
	Scan *PullPlan
	// Init are the subqueries whose values the Scan's conditions read
	// (InitRef): uncorrelated scalar subqueries, each run once, before
	// the read, so that "k = (SELECT ...)" is still a key lookup.
	Init []*SubLink
	// Pseudo is set when the query names one of the relation's
	// pseudo-columns (_partition, ...), which differ per read; when it
	// is not, the read leaves them NULL (ScanWithoutPseudo), and a scan
	// of a quiet partition may be served from the scan cache. Nil: the
	// query may name them.
	Pseudo *bool
	// Used marks the columns of the relation's row the query names
	// (set as the binder resolves them); the read needs only those
	// (PullPlan.Needed: a partition read on another node sends NULL for
	// the others). Nil: every column.
	Used *[]bool
}

// ReadScan is the pull plan the relation's read runs: Scan, without the
// pseudo-columns unless the query names them.
func (r *RelationRel) ReadScan() *PullPlan {
	if r.Rel.Kind == catalog.KindStream {
		return r.Scan
	}
	scan := *r.Scan
	ncols := len(r.Rel.Schema.Columns)
	if r.Pseudo != nil && !*r.Pseudo {
		scan.Output = slices.Clone(scan.Output)
		for i := ncols; i < ncols+len(PseudoColumns) && i < len(scan.Output); i++ {
			scan.Output[i] = &Const{T: scan.Output[i].Type()}
		}
	}
	scan.Needed = r.needed()
	return &scan
}

// needed returns which of the relation's columns the query names; nil
// when it names them all (or Used is unknown).
func (r *RelationRel) needed() []bool {
	if r.Used == nil {
		return nil
	}
	ncols := len(r.Rel.Schema.Columns)
	used := *r.Used
	if len(used) < ncols || !slices.Contains(used[:ncols], false) {
		return nil
	}
	return slices.Clone(used[:ncols])
}

// InitRef is the value of a RelationRel's Init[I] in its Scan.
type InitRef struct {
	I int
	T catalog.Type
}

func (e *InitRef) Type() catalog.Type { return e.T }
func (e *InitRef) String() string     { return "$init" + strconv.Itoa(e.I+1) }

// relationScan returns the pull plan of every row of rel, with the
// pseudo-columns (RelationRel.Scan). Its row layout is the same each
// time for one version of a relation, so it is made once per version
// and shared: plans copy a scan before changing it.
func relationScan(rel *catalog.Relation) *PullPlan {
	shape := relationShape(rel)
	return &PullPlan{Rel: rel, Limit: -1, Params: &Params{Types: map[int]catalog.Type{}},
		Input: shape.input, Output: shape.output, Columns: shape.columns}
}

// scanShape is the row layout of a relation's scan.
type scanShape struct {
	input, columns []catalog.Column
	output         []Scalar
}

// scanShapes caches scanShape by relation version; an entry goes when
// its relation is collected (a DROP or ALTER makes a new version).
var scanShapes sync.Map // weak.Pointer[catalog.Relation] → *scanShape

func relationShape(rel *catalog.Relation) *scanShape {
	key := weak.Make(rel)
	if s, ok := scanShapes.Load(key); ok {
		return s.(*scanShape)
	}
	s := &scanShape{input: append(append([]catalog.Column{}, rel.Schema.Columns...), PseudoColumns...)}
	if rel.Kind == catalog.KindStream {
		s.input = append(s.input, RowtimeColumn, RowPartitionColumn, RowOffsetColumn)
	}
	for i, c := range s.input {
		s.output = append(s.output, &ColRef{Idx: i, T: c.Type, Name: c.Name})
		c.Key = false
		c.Hidden = c.Hidden || i >= len(rel.Schema.Columns)
		s.columns = append(s.columns, c)
	}
	if _, loaded := scanShapes.LoadOrStore(key, s); !loaded {
		runtime.AddCleanup(rel, func(k weak.Pointer[catalog.Relation]) { scanShapes.Delete(k) }, key)
	}
	return s
}

// ValuesRel produces one empty row: the FROM of a SELECT without one.
type ValuesRel struct{}

// FuncRel runs a set-returning function in FROM. A function that is
// not set-returning (string_to_array(...) AS s) is a one-row relation
// of its value, Scalar.
type FuncRel struct {
	Name    string
	Args    []Scalar // bound in the enclosing scope (no sibling columns)
	Scalar  Scalar
	Columns []catalog.Column
}

// JoinRel joins L and R; its rows are L's columns then R's. On is bound
// over that row.
type JoinRel struct {
	Kind sql.JoinKind
	L, R Rel
	// Lateral is set when R reads L's columns (LATERAL, or a function
	// in FROM): R runs once per row of L, with that row as its outer row.
	Lateral bool
	On      Scalar // nil: cross join
	// Equi are the conjuncts of On that compare a column of L with one
	// of R, which exec uses for a hash join.
	Equi []EquiCond
	cols []catalog.Column
}

// EquiCond is L.col = R.col in a join condition; LIdx indexes L's row,
// RIdx R's.
type EquiCond struct {
	LIdx, RIdx int
}

// DerivedRel is a subquery in FROM; Columns carries its alias names.
type DerivedRel struct {
	Query   *QueryPlan
	Columns []catalog.Column
}

// SRF is a set-returning function in a select list. Its values are
// appended to each input row (one column, or one per record field when
// Fields is set), producing as many rows as the longest SRF of the
// select list, as Postgres 10 and later do.
type SRF struct {
	Name string
	Args []Scalar
	T    catalog.Type
}

// WindowCall is a window function over the block's rows; its value is
// appended to each row after the SRFs' values.
type WindowCall struct {
	Func string
	// Args are the function's arguments: lag(x, offset, default),
	// ntile(n), nth_value(x, n); an aggregate's are Agg's.
	Args        []Scalar
	PartitionBy []Scalar
	Order       []SortKey
	// Frame is the rows an aggregate or first_value, last_value and
	// nth_value see; nil is the default frame (the partition without
	// ORDER BY, else the rows up to the current row's last peer).
	Frame *WindowFrame
	// Agg is the aggregate an aggregate window function computes.
	Agg *AggSpec
	T   catalog.Type
}

// BlockRel is one SELECT: filter, expand SRFs, group, window, project,
// distinct, sort, limit.
type BlockRel struct {
	In     Rel
	Filter Scalar
	SRFs   []SRF

	Grouped bool
	GroupBy []Scalar
	// GroupingSets are GROUP BY's grouping sets (ROLLUP, CUBE, GROUPING
	// SETS), each a list of indexes into GroupBy; nil: one, all of it.
	GroupingSets [][]int
	Aggs         []AggSpec
	Having       Scalar

	Windows []WindowCall

	// Output and Order are bound over the row Ordered describes: the
	// input row (or aggregated row), then SRF values, then window
	// values.
	Output   []Scalar
	Distinct bool
	// DistinctOn are DISTINCT ON's expressions: of the rows equal in
	// them, the first in Order's order (then arrival) is kept.
	DistinctOn []Scalar
	Order      []SortKey
	// Limit is -1 for none.
	Limit, Offset int64
	Columns       []catalog.Column
}

// SetRel is UNION, INTERSECT or EXCEPT; Order, Limit and Offset of the
// whole are bound over its output row.
type SetRel struct {
	Op            string
	All           bool
	L, R          Rel
	Order         []SortKey
	Limit, Offset int64
	Columns       []catalog.Column
}

func (r *ScanRel) Cols() []catalog.Column     { return r.Table.Columns }
func (r *RelationRel) Cols() []catalog.Column { return r.Scan.Columns }
func (r *ValuesRel) Cols() []catalog.Column   { return nil }
func (r *FuncRel) Cols() []catalog.Column     { return r.Columns }
func (r *JoinRel) Cols() []catalog.Column     { return r.cols }
func (r *DerivedRel) Cols() []catalog.Column  { return r.Columns }
func (r *BlockRel) Cols() []catalog.Column    { return r.Columns }
func (r *SetRel) Cols() []catalog.Column      { return r.Columns }

// String renders the plan for EXPLAIN.
func (q *QueryPlan) String() string { return q.Explain(nil) }

// Annotator returns what EXPLAIN ANALYZE appends to a line of the plan:
// the line of r's operator (stage "") or of one of the stages a
// BlockRel or SetRel runs in its operator: "Filter", "ProjectSet",
// "Aggregate", "Having", "Window 0" (1, ...), "Project", "Distinct",
// "Sort", "Limit", and "Set" for a SetRel's own line. A nil Rel is the
// whole query.
type Annotator func(r Rel, stage string) string

// Explain renders the plan for EXPLAIN, each operator's line followed
// by what ann gives for it (nil: nothing).
func (q *QueryPlan) Explain(ann Annotator) string {
	var b strings.Builder
	q.Root.explain(&b, "  ", ann)
	return b.String()
}

// line writes one line of EXPLAIN's text: in, the operator's text and
// its annotation.
func line(b *strings.Builder, in string, ann Annotator, r Rel, stage, format string, args ...any) {
	b.WriteString(in)
	fmt.Fprintf(b, format, args...)
	if ann != nil {
		b.WriteString(ann(r, stage))
	}
	b.WriteByte('\n')
}

func (r *ScanRel) explain(b *strings.Builder, in string, ann Annotator) {
	line(b, in, ann, r, "", "Scan %s (catalog)", r.Table.QualifiedName())
}

func (r *RelationRel) explain(b *strings.Builder, in string, ann Annotator) {
	kind, scan := strings.ToLower(string(r.Rel.Kind)), r.Scan
	switch {
	case scan.Lookup != nil:
		line(b, in, ann, r, "", "Read %s %s: key lookup key=(%s) (one partition)", kind, r.Rel.Name, scalarList(scan.Lookup))
	case scan.LookupIn != nil:
		line(b, in, ann, r, "", "Read %s %s: key lookups of %d keys (their partitions)", kind, r.Rel.Name, len(scan.LookupIn))
	case scan.Partition != nil:
		line(b, in, ann, r, "", "Read %s %s: partition %s (from its best replica)", kind, r.Rel.Name, scan.Partition)
	case scan.Range != nil && scan.Range.OnePartition(r.Rel):
		line(b, in, ann, r, "", "Read %s %s: key range %s (one partition, from its best replica)", kind, r.Rel.Name, scan.Range.describe(r.Rel))
	case scan.Range != nil:
		line(b, in, ann, r, "", "Read %s %s: key range %s (every partition, each from its best replica)", kind, r.Rel.Name, scan.Range.describe(r.Rel))
	default:
		line(b, in, ann, r, "", "Read %s %s (every partition, each from its best replica)", kind, r.Rel.Name)
	}
	if scan.Filter != nil {
		fmt.Fprintf(b, "%s  where %s (applied in the read)\n", in, scan.Filter)
	}
	if needed := r.needed(); needed != nil {
		var cols []string
		for i, c := range r.Rel.Schema.Columns {
			if needed[i] {
				cols = append(cols, c.Name)
			}
		}
		if len(cols) == 0 {
			cols = append(cols, "none")
		}
		fmt.Fprintf(b, "%s  needs columns %s\n", in, strings.Join(cols, ", "))
	}
	for i, sub := range r.Init {
		fmt.Fprintf(b, "%s  InitPlan %s (run once, before the read)\n", in, &InitRef{I: i})
		sub.Query.Root.explain(b, in+"    ", ann)
	}
}

func (r *ValuesRel) explain(b *strings.Builder, in string, ann Annotator) {
	line(b, in, ann, r, "", "Values (one row)")
}

func (r *FuncRel) explain(b *strings.Builder, in string, ann Annotator) {
	if r.Scalar != nil {
		line(b, in, ann, r, "", "Result %s", r.Scalar)
		return
	}
	line(b, in, ann, r, "", "Function %s(%s)", r.Name, scalarList(r.Args))
}

func (r *JoinRel) explain(b *strings.Builder, in string, ann Annotator) {
	kind := strings.ToLower(r.Kind.String())
	if r.Kind == sql.JoinInner {
		kind = "join"
	}
	switch {
	case r.Lateral:
		kind = "Lateral nested loop " + kind
	case len(r.Equi) > 0:
		kind = "Hash " + kind
	default:
		kind = "Nested loop " + kind
	}
	if r.On != nil {
		line(b, in, ann, r, "", "%s on %s", kind, r.On)
	} else {
		line(b, in, ann, r, "", "%s", kind)
	}
	r.L.explain(b, in+"  ", ann)
	r.R.explain(b, in+"  ", ann)
}

func (r *DerivedRel) explain(b *strings.Builder, in string, ann Annotator) {
	line(b, in, ann, r, "", "Subquery")
	r.Query.Root.explain(b, in+"  ", ann)
}

func (r *BlockRel) explain(b *strings.Builder, in string, ann Annotator) {
	if r.Limit >= 0 || r.Offset > 0 {
		line(b, in, ann, r, "Limit", "Limit %d offset %d", r.Limit, r.Offset)
	}
	if len(r.Order) > 0 {
		line(b, in, ann, r, "Sort", "Sort [%s]", sortList(r.Order))
	}
	if len(r.DistinctOn) > 0 {
		line(b, in, ann, r, "Distinct", "Distinct on [%s]", scalarList(r.DistinctOn))
	}
	if r.Distinct {
		line(b, in, ann, r, "Distinct", "Distinct")
	}
	line(b, in, ann, r, "Project", "Project [%s]", scalarList(r.Output))
	for i, w := range r.Windows {
		frame := ""
		if w.Frame != nil {
			frame = " " + w.Frame.String()
		}
		line(b, in, ann, r, "Window "+strconv.Itoa(i), "Window %s(%s) partition [%s] order [%s]%s", w.Func, scalarList(w.Args), scalarList(w.PartitionBy), sortList(w.Order), frame)
	}
	if r.Grouped {
		if r.Having != nil {
			line(b, in, ann, r, "Having", "Filter (HAVING) %s", r.Having)
		}
		var as []string
		for _, a := range r.Aggs {
			as = append(as, a.String())
		}
		group := scalarList(r.GroupBy)
		if r.GroupingSets != nil {
			var sets []string
			for _, set := range r.GroupingSets {
				var es []Scalar
				for _, i := range set {
					es = append(es, r.GroupBy[i])
				}
				sets = append(sets, "("+scalarList(es)+")")
			}
			group = "sets " + strings.Join(sets, ", ")
		}
		line(b, in, ann, r, "Aggregate", "HashAggregate group=[%s] aggs=[%s]", group, strings.Join(as, ", "))
	}
	for _, s := range r.SRFs {
		line(b, in, ann, r, "ProjectSet", "ProjectSet %s(%s)", s.Name, scalarList(s.Args))
	}
	if r.Filter != nil {
		line(b, in, ann, r, "Filter", "Filter %s", r.Filter)
	}
	r.In.explain(b, in, ann)
}

func (r *SetRel) explain(b *strings.Builder, in string, ann Annotator) {
	if r.Limit >= 0 || r.Offset > 0 {
		line(b, in, ann, r, "Limit", "Limit %d offset %d", r.Limit, r.Offset)
	}
	if len(r.Order) > 0 {
		line(b, in, ann, r, "Sort", "Sort [%s]", sortList(r.Order))
	}
	all := ""
	if r.All {
		all = " ALL"
	}
	line(b, in, ann, r, "Set", "%s%s", r.Op, all)
	r.L.explain(b, in+"  ", ann)
	r.R.explain(b, in+"  ", ann)
}

func scalarList(ss []Scalar) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = s.String()
	}
	return strings.Join(parts, ", ")
}

func sortList(ks []SortKey) string {
	parts := make([]string, len(ks))
	for i, k := range ks {
		parts[i] = k.Expr.String()
		if k.Desc {
			parts[i] += " DESC"
		}
	}
	return strings.Join(parts, ", ")
}

// Scalars of catalog queries.

// OuterRef reads column Idx of the row Depth queries up.
type OuterRef struct {
	Depth int
	Idx   int
	T     catalog.Type
	Name  string
}

// SubLinkKind says what a subquery expression computes.
type SubLinkKind uint8

const (
	SubLinkScalar SubLinkKind = iota + 1
	SubLinkExists
	SubLinkArray
	// SubLinkAny is x op ANY (subquery), IN included; SubLinkAll
	// x op ALL (subquery).
	SubLinkAny
	SubLinkAll
)

// SubLink is a subquery in an expression.
type SubLink struct {
	Kind  SubLinkKind
	Query *QueryPlan
	// X and Op compare each row's value for SubLinkAny and SubLinkAll;
	// the comparison is bound over X's type and the subquery's column.
	X  Scalar
	Op string
	T  catalog.Type
}

// ArrayLit is ARRAY[elems].
type ArrayLit struct {
	Elems []Scalar
	T     catalog.Type
}

// ArrayCmp is X op ANY|ALL (Arr).
type ArrayCmp struct {
	X   Scalar
	Op  string
	All bool
	Arr Scalar
}

// SubscriptOp is X[Idx]: arrays count from 1, vectors from 0.
type SubscriptOp struct {
	X, Idx Scalar
	T      catalog.Type
}

// FieldOp is (X).field, field Idx of a record.
type FieldOp struct {
	X    Scalar
	Idx  int
	Name string
	T    catalog.Type
}

// RegexMatch is X ~ Pattern and its case-insensitive and negated forms.
type RegexMatch struct {
	X, Pattern Scalar
	CI, Not    bool
}

// OpCall is an operator the older scalars lack: & (bitwise and), ||
// over arrays, IS [NOT] DISTINCT FROM.
type OpCall struct {
	Op   string
	L, R Scalar
	T    catalog.Type
}

// PGCast is a cast that needs the catalog or the array format: text to
// and from the reg* types, arrays to and from text and other arrays.
type PGCast struct {
	X Scalar
	T catalog.Type
}

func (e *OuterRef) Type() catalog.Type    { return e.T }
func (e *SubLink) Type() catalog.Type     { return e.T }
func (e *ArrayLit) Type() catalog.Type    { return e.T }
func (e *ArrayCmp) Type() catalog.Type    { return catalog.Boolean }
func (e *SubscriptOp) Type() catalog.Type { return e.T }
func (e *FieldOp) Type() catalog.Type     { return e.T }
func (e *RegexMatch) Type() catalog.Type  { return catalog.Boolean }
func (e *OpCall) Type() catalog.Type      { return e.T }
func (e *PGCast) Type() catalog.Type      { return e.T }

func (e *OuterRef) String() string {
	if e.Name != "" {
		return fmt.Sprintf("outer%d.%s", e.Depth, e.Name)
	}
	return fmt.Sprintf("$outer%d.col%d", e.Depth, e.Idx)
}

func (e *SubLink) String() string {
	inner := "(" + strings.TrimSpace(strings.ReplaceAll(e.Query.String(), "\n", "; ")) + ")"
	switch e.Kind {
	case SubLinkExists:
		return "EXISTS" + inner
	case SubLinkArray:
		return "ARRAY" + inner
	case SubLinkAny:
		return fmt.Sprintf("(%s %s ANY %s)", e.X, e.Op, inner)
	case SubLinkAll:
		return fmt.Sprintf("(%s %s ALL %s)", e.X, e.Op, inner)
	}
	return "SUBQUERY" + inner
}

func (e *ArrayLit) String() string { return "ARRAY[" + scalarList(e.Elems) + "]" }

func (e *ArrayCmp) String() string {
	q := "ANY"
	if e.All {
		q = "ALL"
	}
	return fmt.Sprintf("(%s %s %s(%s))", e.X, e.Op, q, e.Arr)
}

func (e *SubscriptOp) String() string { return fmt.Sprintf("%s[%s]", e.X, e.Idx) }
func (e *FieldOp) String() string     { return fmt.Sprintf("(%s).%s", e.X, e.Name) }

func (e *RegexMatch) String() string {
	op := "~"
	if e.Not {
		op = "!~"
	}
	if e.CI {
		op += "*"
	}
	return fmt.Sprintf("(%s %s %s)", e.X, op, e.Pattern)
}

func (e *OpCall) String() string { return fmt.Sprintf("(%s %s %s)", e.L, e.Op, e.R) }
func (e *PGCast) String() string { return fmt.Sprintf("CAST(%s AS %s)", e.X, e.T) }

// PlanSelect plans a pull query over cat: every SELECT, whatever it
// reads, is planned here as a relational query (planQuery), and then
// the read rule (readrule.go) folds a query that is all one relation's
// read (a lookup, a filtered scan, a grouping of one relation) into that
// read, which the pull engine runs on each partition. Top-level LIMIT
// and OFFSET go to the PullPlan, where prepared statements set them from
// parameters. Relation errors are 42P01 and column errors 42703, with
// positions.
func PlanSelect(cat *catalog.Catalog, s *sql.Select) (*PullPlan, error) {
	if err := refuseWindow(s, "a query", false); err != nil {
		return nil, err
	}
	p := &PullPlan{Limit: -1, Params: &Params{Types: map[int]catalog.Type{}}}
	qp := &queryPlanner{cat: cat, params: p.Params}
	top := *s
	top.Limit, top.Offset = nil, nil
	q, err := qp.planQuery(&top, nil)
	if err != nil {
		return nil, err
	}
	if p.Limit, err = constInt(s.Limit, "LIMIT", -1); err != nil {
		return nil, err
	}
	if p.Offset, err = constInt(s.Offset, "OFFSET", 0); err != nil {
		return nil, err
	}
	if read := readRule(q, s, p); read != nil {
		return read, nil
	}
	p.Query = q
	// reg* values reach the client as names, records as text.
	p.Columns = make([]catalog.Column, len(q.Columns))
	for i, c := range q.Columns {
		if c.Type.IsReg() || c.Type == catalog.Record {
			c.Type = catalog.Varchar
		}
		if c.Type == catalog.Unknown {
			c.Type = catalog.Varchar
		}
		c.Fields = nil
		p.Columns[i] = c
	}
	return p, nil
}
