package planner

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/cockroachdb/apd/v3"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/numeric"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/pgcodec"
	"github.com/basindb/basin/sql"
)

// AggSpec is one aggregate of a grouped query.
type AggSpec struct {
	// Func is count, sum, min, max or avg; catalog queries also have
	// string_agg, array_agg, bool_and, bool_or and every.
	Func string
	// Arg is the bound argument over the input row; nil for COUNT(*).
	Arg Scalar
	// Arg2 is string_agg's delimiter; for latest_by_offset and
	// earliest_by_offset (views), the record's ROWTIME, by which the
	// sessions that merge order their values.
	Arg2 Scalar
	// KeepNulls is set for latest_by_offset(x, false) and
	// earliest_by_offset(x, false): a NULL x counts as a value.
	KeepNulls bool
	// N is topk's and topkdistinct's k, and latest_by_offset's and
	// earliest_by_offset's n (0 for their one-value form, whose value
	// is not an array).
	N int64
	// Distinct aggregates distinct values only (catalog queries).
	Distinct bool
	T        catalog.Type
	// Filter is the FILTER (WHERE ...) condition: rows where it is not
	// true are not aggregated (catalog queries).
	Filter Scalar
	// Order is the ORDER BY inside the call: the order the values are
	// aggregated in (string_agg, array_agg); for an ordered-set
	// aggregate (percentile_cont, percentile_disc, mode) the WITHIN
	// GROUP key, which is Arg, with Arg2 the fraction (catalog
	// queries).
	Order []SortKey
	// Grouping are GROUPING(...)'s arguments (Func "grouping"), at
	// GroupingPos in the text, and GroupingCols the indexes of the GROUP
	// BY expressions they are.
	Grouping     []Scalar
	GroupingPos  []int
	GroupingCols []int
}

func (a AggSpec) String() string {
	if a.Arg == nil {
		return a.Func + "(*)"
	}
	d := ""
	if a.Distinct {
		d = "DISTINCT "
	}
	args := a.Arg.String()
	if a.N > 0 {
		args += ", " + strconv.FormatInt(a.N, 10)
	}
	switch {
	case offsetAgg(a.Func):
		if a.KeepNulls {
			args += ", false"
		}
	case a.Arg2 != nil:
		args += ", " + a.Arg2.String()
	}
	return a.Func + "(" + d + args + aggClauses(a) + ")"
}

// aggSlot is a placeholder for aggregate i while a grouped select list is
// bound; lift replaces it with a ColRef into the aggregated row.
type aggSlot struct {
	i int
	t catalog.Type
}

func (a *aggSlot) Type() catalog.Type { return a.t }
func (a *aggSlot) String() string     { return "$agg" + strconv.Itoa(a.i) }

// Params collects the types inferred for $n placeholders.
type Params struct {
	Types map[int]catalog.Type
}

// binder resolves names and types of expressions over one input row.
type binder struct {
	cols   []catalog.Column
	rel    string // relation name, for qualified references
	alias  string
	params *Params
	// aggs, when non-nil, collects aggregate calls (a grouped context);
	// when nil, an aggregate is an error.
	aggs *[]AggSpec
	// aggContext names the clause, for "aggregate functions are not
	// allowed in WHERE".
	clause string
	inAgg  bool

	// scope and q are set when binding a catalog query (qbind.go):
	// names resolve in scope, and q plans subqueries.
	scope *scope
	q     *queryPlanner
	// rels, when set, are the relations of a persistent query's join,
	// each a span of cols: names resolve in them, qualified by a
	// relation's alias (or name) or, unqualified, in the one relation
	// that has the column.
	rels []boundRel
	// noRowtime is set for a pull query over a table or view, whose
	// stores keep no record time: ROWTIME gets a hint there.
	noRowtime bool
	// srfs and windows collect a select list's set-returning and window
	// function calls; nil where they are not allowed. srfFields names
	// the fields of record-valued SRFs.
	srfs      *[]SRF
	srfFields [][]catalog.Column
	windows   *[]WindowCall
	// winLift, in a grouped SELECT, moves a window function's
	// expressions onto the aggregated row it runs over.
	winLift func(Scalar, int) (Scalar, error)
	// exactSum is set in queries (not views): sum(bigint) is numeric.
	exactSum bool
	// explode is set while a derived stream's select list is bound,
	// where EXPLODE may stand (explode.go).
	explode bool
	// lambdas are the lambda parameters in scope (lambda.go), outermost
	// first.
	lambdas []lambdaScope
	// windowAt, when not 0, is the index in cols of WINDOWSTART (then
	// WINDOWEND) of a windowed view (window.go), which unqualified names
	// find before the relations of a join.
	windowAt int
}

func (b *binder) bind(e sql.Expr) (Scalar, error) {
	switch e := e.(type) {
	case *sql.Literal:
		return &Const{V: e.Value, T: e.Type}, nil
	case *sql.ColumnRef:
		return b.bindColumn(e)
	case *sql.Param:
		if b.params == nil {
			return nil, pgerr.New(pgerr.UndefinedParameter, "there is no parameter $%d", e.N).WithPosition(e.Pos)
		}
		t, ok := b.params.Types[e.N]
		if !ok {
			b.params.Types[e.N] = catalog.Unknown // counted, typed by context if any
		}
		return &ParamRef{N: e.N, T: t}, nil
	case *sql.Unary:
		x, err := b.bind(e.X)
		if err != nil {
			return nil, err
		}
		switch strings.ToUpper(e.Op) {
		case "NOT":
			if x, err = b.coerce(x, catalog.Boolean, e.Pos, "argument of NOT"); err != nil {
				return nil, err
			}
			return &Unary{Op: "NOT", X: x, T: catalog.Boolean}, nil
		case "+":
			return x, nil
		case "-":
			if c, ok := x.(*Const); ok {
				switch v := c.V.(type) {
				case int64:
					if v == math.MinInt64 || c.T == catalog.Int && v == math.MinInt32 {
						return nil, pgerr.New(pgerr.NumericValueOutOfRange, "%s out of range", typeWord(c.T)).WithPosition(e.Pos)
					}
					return &Const{V: -v, T: c.T}, nil
				case float64:
					return &Const{V: -v, T: c.T}, nil
				case *apd.Decimal:
					return &Const{V: negateDecimal(v), T: c.T}, nil
				}
			}
			if !x.Type().Numeric() && x.Type() != catalog.Unknown && x.Type() != catalog.Interval {
				return nil, opError("-", nil, x, e.Pos)
			}
			return &Unary{Op: "-", X: x, T: x.Type()}, nil
		}
		return nil, pgerr.New(pgerr.FeatureNotSupported, "operator %s is not supported", e.Op).WithPosition(e.Pos)
	case *sql.Binary:
		return b.bindBinary(e)
	case *sql.IsNull:
		x, err := b.bind(e.X)
		if err != nil {
			return nil, err
		}
		return &IsNull{X: x, Not: e.Not}, nil
	case *sql.In:
		x, err := b.bind(e.X)
		if err != nil {
			return nil, err
		}
		list := make([]Scalar, len(e.List))
		for i, le := range e.List {
			if list[i], err = b.bind(le); err != nil {
				return nil, err
			}
		}
		// The comparison type is the common type of x and the whole list
		// (n IN (1.5, 2) compares as DOUBLE, not as n's INT).
		t, untyped := x.Type(), isUntypedLiteral(x) || x.Type() == catalog.Unknown
		for _, l := range list {
			lt, lUntyped := l.Type(), isUntypedLiteral(l) || l.Type() == catalog.Unknown
			switch {
			case lUntyped:
				if t == catalog.Unknown {
					t = lt
				}
			case untyped:
				t, untyped = lt, false
			case lt == t:
			case lt.Numeric() && t.Numeric():
				t = commonNumeric(lt, t)
			case lt.OidLike() || t.OidLike():
				ct, ok := commonType(&Const{T: t, V: 0}, &Const{T: lt, V: 0})
				if !ok {
					return nil, opError("=", x, l, e.Pos)
				}
				t = ct
			default:
				return nil, opError("=", x, l, e.Pos)
			}
		}
		if x, err = b.coerce(x, t, e.Pos, "IN"); err != nil {
			return nil, err
		}
		for i := range list {
			if list[i], err = b.coerce(list[i], t, e.Pos, "IN"); err != nil {
				return nil, err
			}
		}
		return &In{X: x, List: list, Not: e.Not}, nil
	case *sql.Between:
		// x BETWEEN lo AND hi is x >= lo AND x <= hi.
		lo := &sql.Binary{Op: ">=", L: e.X, R: e.Lo, Pos: e.Pos}
		hi := &sql.Binary{Op: "<=", L: e.X, R: e.Hi, Pos: e.Pos}
		var and sql.Expr = &sql.Binary{Op: "AND", L: lo, R: hi, Pos: e.Pos}
		if e.Not {
			and = &sql.Unary{Op: "NOT", X: and, Pos: e.Pos}
		}
		return b.bind(and)
	case *sql.Cast:
		x, err := b.bind(e.X)
		if err != nil {
			return nil, err
		}
		param, _ := x.(*ParamRef)
		if x.Type().HasNested() || e.Type.HasNested() {
			if x, err = castNested(x, e.Type, e.Pos); err != nil {
				return nil, err
			}
			if c, ok := x.(*Cast); ok && param != nil {
				if p, ok := c.X.(*ParamRef); ok {
					b.noteParam(p.N, p.T)
				}
			}
			return x, nil
		}
		if b.q != nil {
			x, err = b.q.castPG(x, e.Type, e.Pos)
		} else {
			x, err = castTo(x, e.Type, e.Pos)
		}
		if err != nil {
			return nil, err
		}
		if p, ok := x.(*ParamRef); ok && param != nil && param.T == catalog.Unknown && p.T != catalog.Unknown {
			x = b.castParam(p)
		}
		return castTypmod(x, e.Precision, e.Scale, e.Pos)
	case *sql.Case:
		return b.bindCase(e)
	case *sql.Func:
		return b.bindFunc(e)
	}
	return b.bindExt(e)
}

// boundRel is one relation of a join a binder resolves names in: its
// columns are cols[lo:hi] of the binder's.
type boundRel struct {
	name, alias string
	lo, hi      int
}

// visible is the name a qualified reference to r must use: its alias
// when it has one (which hides its name, as in Postgres).
func (r boundRel) visible() string {
	if r.alias != "" {
		return r.alias
	}
	return r.name
}

// bindJoinColumn resolves e among the relations of a join.
func (b *binder) bindJoinColumn(e *sql.ColumnRef) (Scalar, error) {
	found := -1
	for _, r := range b.rels {
		if e.Table != "" && !strings.EqualFold(e.Table, r.visible()) {
			continue
		}
		for i := r.lo; i < r.hi; i++ {
			if !strings.EqualFold(b.cols[i].Name, e.Name) {
				continue
			}
			if found >= 0 {
				return nil, pgerr.New(pgerr.AmbiguousColumn, "column reference %q is ambiguous", e.Name).WithPosition(e.Pos).
					WithHint("Qualify it with the relation's name or alias: %s.%s.", r.visible(), e.Name)
			}
			found = i
		}
	}
	if found >= 0 {
		c := b.cols[found]
		return &ColRef{Idx: found, T: c.Type, Name: c.Name}, nil
	}
	if e.Table != "" {
		known := false
		for _, r := range b.rels {
			known = known || strings.EqualFold(e.Table, r.visible())
		}
		if !known {
			return nil, pgerr.New(pgerr.UndefinedTable, "missing FROM-clause entry for table %q", e.Table).WithPosition(e.Pos)
		}
	}
	if isRecordCoord(e.Name) {
		// A join's stages re-send records: the coordinates a join
		// task reads are not those of the stream's topic.
		return nil, pgerr.New(pgerr.FeatureNotSupported, "%s is not supported in a join", strings.ToUpper(e.Name)).WithPosition(e.Pos).
			WithHint("Derive a stream that keeps it as a column (CREATE STREAM s2 AS SELECT ROWPARTITION AS part, ROWOFFSET AS off, * FROM s) and join that.")
	}
	if e.Table != "" {
		return nil, pgerr.New(pgerr.UndefinedColumn, "column %s.%s does not exist", e.Table, e.Name).WithPosition(e.Pos)
	}
	return nil, pgerr.New(pgerr.UndefinedColumn, "column %q does not exist", e.Name).WithPosition(e.Pos)
}

// coordsHint is the hint of ROWPARTITION or ROWOFFSET named over rel,
// a table's or a view's rows, which keep no record coordinates.
func coordsHint(err *pgerr.Error, rel string) *pgerr.Error {
	return err.WithHint("ROWPARTITION and ROWOFFSET are the partition and offset of a stream's records: a query over the stream reads them (CREATE TABLE ... AS SELECT ..., ROWOFFSET AS off FROM stream ...), but %s's rows keep only its columns.", rel)
}

func (b *binder) bindColumn(e *sql.ColumnRef) (Scalar, error) {
	if p, ok := b.lambdaParam(e); ok {
		return p, nil
	}
	if b.windowAt > 0 && e.Table == "" {
		for i := b.windowAt; i < b.windowAt+2; i++ {
			if strings.EqualFold(b.cols[i].Name, e.Name) {
				return &ColRef{Idx: i, T: b.cols[i].Type, Name: b.cols[i].Name}, nil
			}
		}
	}
	if b.scope != nil {
		// An unqualified column of a FULL JOIN ... USING is COALESCE of
		// the two it merges, unless a nearer scope has the name.
		for sc := b.scope; e.Table == "" && sc != nil; sc = sc.parent {
			if m, ok := sc.full[strings.ToLower(e.Name)]; ok {
				return b.bind(coalesceMerged(m, e.Pos))
			}
			if _, _, found, _ := sc.find(e); found {
				break
			}
		}
		s, _, err := b.scope.resolve(e)
		return s, err
	}
	if b.rels != nil {
		return b.bindJoinColumn(e)
	}
	if e.Table != "" {
		// An alias hides the relation's own name, as in Postgres.
		visible := b.rel
		if b.alias != "" {
			visible = b.alias
		}
		if !strings.EqualFold(e.Table, visible) {
			if b.alias != "" && strings.EqualFold(e.Table, b.rel) {
				return nil, pgerr.New(pgerr.UndefinedTable, "invalid reference to FROM-clause entry for table %q", e.Table).
					WithPosition(e.Pos).WithHint("Perhaps you meant to reference the table alias %q.", b.alias)
			}
			return nil, pgerr.New(pgerr.UndefinedTable, "missing FROM-clause entry for table %q", e.Table).WithPosition(e.Pos)
		}
	}
	for i, c := range b.cols {
		if strings.EqualFold(c.Name, e.Name) {
			return &ColRef{Idx: i, T: c.Type, Name: c.Name}, nil
		}
	}
	name := e.Name
	if e.Table != "" {
		name = e.Table + "." + e.Name
	}
	err := pgerr.New(pgerr.UndefinedColumn, "column %q does not exist", name).WithPosition(e.Pos)
	switch {
	case b.noRowtime && strings.EqualFold(e.Name, RowtimeColumn.Name):
		err.WithHint("ROWTIME is the time of a stream's or table's records: a persistent query reads it (CREATE TABLE ... AS SELECT ..., ROWTIME AS ts), but %s's stores keep only its columns.", b.rel)
	case b.rel != "" && isRecordCoord(e.Name):
		coordsHint(err, b.rel)
	case b.rel != "":
		err.WithHint("%s has columns %s.", b.rel, columnList(b.cols))
	}
	return nil, err
}

func columnList(cols []catalog.Column) string {
	var names []string
	for _, c := range cols {
		if !c.Hidden {
			names = append(names, c.Name)
		}
	}
	return strings.Join(names, ", ")
}

var comparisonOps = map[string]bool{"=": true, "<>": true, "!=": true, "<": true, "<=": true, ">": true, ">=": true}

func (b *binder) bindBinary(e *sql.Binary) (Scalar, error) {
	op := strings.ToUpper(e.Op)
	if op == "!=" {
		op = "<>"
	}
	l, err := b.bind(e.L)
	if err != nil {
		return nil, err
	}
	if op == "->" && l.Type().IsStruct() {
		return b.bindDeref(e, l)
	}
	r, err := b.bind(e.R)
	if err != nil {
		return nil, err
	}
	if s, ok, err := b.bindBlobBinary(op, l, r, e.Pos); ok {
		return s, err
	}
	if s, ok, err := b.bindBinaryExt(op, l, r, e.Pos); ok {
		return s, err
	}
	if s, ok, err := b.bindDatetimeArith(op, l, r, e.Pos); ok {
		return s, err
	}
	switch {
	case op == "AND" || op == "OR":
		if l, err = b.coerce(l, catalog.Boolean, e.Pos, "argument of "+op); err != nil {
			return nil, err
		}
		if r, err = b.coerce(r, catalog.Boolean, e.Pos, "argument of "+op); err != nil {
			return nil, err
		}
		return &Binary{Op: op, L: l, R: r, T: catalog.Boolean}, nil
	case comparisonOps[op]:
		t, ok := commonType(l, r)
		if !ok {
			return nil, opError(op, l, r, e.Pos)
		}
		if l, err = b.coerce(l, t, e.Pos, op); err != nil {
			return nil, err
		}
		if r, err = b.coerce(r, t, e.Pos, op); err != nil {
			return nil, err
		}
		return &Binary{Op: op, L: l, R: r, T: catalog.Boolean}, nil
	case op == "+" || op == "-" || op == "*" || op == "/" || op == "%":
		t, ok := commonType(l, r)
		if !ok || (t != catalog.Unknown && !t.Numeric()) {
			return nil, opError(op, l, r, e.Pos)
		}
		if t == catalog.Unknown {
			t = catalog.BigInt
		}
		if l, err = b.coerce(l, t, e.Pos, op); err != nil {
			return nil, err
		}
		if r, err = b.coerce(r, t, e.Pos, op); err != nil {
			return nil, err
		}
		return &Binary{Op: op, L: l, R: r, T: t}, nil
	case op == "||":
		if l, err = castTo(l, catalog.Varchar, e.Pos); err != nil {
			return nil, err
		}
		if r, err = castTo(r, catalog.Varchar, e.Pos); err != nil {
			return nil, err
		}
		return &Binary{Op: "||", L: l, R: r, T: catalog.Varchar}, nil
	case op == "LIKE" || op == "ILIKE" || op == "NOT LIKE" || op == "NOT ILIKE":
		if l, err = b.coerce(l, catalog.Varchar, e.Pos, op); err != nil {
			return nil, err
		}
		if r, err = b.coerce(r, catalog.Varchar, e.Pos, op); err != nil {
			return nil, err
		}
		return &Binary{Op: op, L: l, R: r, T: catalog.Boolean}, nil
	}
	return nil, pgerr.New(pgerr.UndefinedFunction, "operator does not exist: %s", op).WithPosition(e.Pos)
}

// commonType returns the type both sides are compared or computed in.
// Untyped NULLs, parameters and string literals take the other side's
// type, as Postgres's "unknown" literals do.
func commonType(l, r Scalar) (catalog.Type, bool) {
	lt, rt := l.Type(), r.Type()
	switch {
	case lt == rt:
		return lt, true
	case lt == catalog.Unknown || isUntypedLiteral(l):
		return rt, true
	case rt == catalog.Unknown || isUntypedLiteral(r):
		return lt, true
	case lt.Numeric() && rt.Numeric():
		return commonNumeric(lt, rt), true
	case (lt.OidLike() || rt.OidLike()) && (lt.OidLike() || lt == catalog.Int || lt == catalog.BigInt) &&
		(rt.OidLike() || rt == catalog.Int || rt == catalog.BigInt):
		// oids compare with each other and with integers as oids.
		return catalog.Oid, true
	}
	return datetimeCommon(lt, rt)
}

// isUntypedLiteral reports whether s is a string literal or parameter,
// which Postgres types from context.
func isUntypedLiteral(s Scalar) bool {
	switch s := s.(type) {
	case *Const:
		return s.T == catalog.Varchar || s.V == nil
	case *ParamRef:
		return true
	}
	return false
}

// coerce converts s to type t where Postgres would do so implicitly: NULLs,
// string literals, parameters and numeric widening.
func (b *binder) coerce(s Scalar, t catalog.Type, pos int, what string) (Scalar, error) {
	st := s.Type()
	if st == t || t == catalog.Unknown {
		return s, nil
	}
	if t.HasNested() || st.HasNested() {
		return b.coerceNested(s, t, pos, what)
	}
	if isPGType(t) || isPGType(st) {
		if c, ok, err := b.coerceExt(s, t, pos, what); ok {
			return c, err
		}
	}
	switch s := s.(type) {
	case *Const:
		if s.V == nil {
			return &Const{T: t}, nil
		}
		// Only string literals are untyped; a typed constant converts
		// implicitly as a column of its type would (numeric widening).
		if s.T != catalog.Varchar && !(st.Numeric() && t.Numeric()) {
			break
		}
		if c, ok, err := castDatetimeConst(s, t, pos); ok {
			return c, err
		}
		v, err := ConvertValue(s.V, t)
		if err != nil {
			return nil, pgerr.Wrap(err, pgerr.InvalidTextRepresentation).WithPosition(pos)
		}
		return &Const{V: v, T: t}, nil
	case *ParamRef:
		if b.params != nil {
			if _, ok := b.params.Types[s.N]; !ok || b.params.Types[s.N] == catalog.Unknown {
				b.params.Types[s.N] = t
			}
		}
		return &ParamRef{N: s.N, T: t}, nil
	}
	if st == catalog.Unknown {
		return &Cast{X: s, T: t}, nil
	}
	if st.Numeric() && t.Numeric() || datetimeImplicit(st, t) {
		return &Cast{X: s, T: t}, nil
	}
	if strings.HasPrefix(what, "argument of ") {
		return nil, pgerr.New(pgerr.DatatypeMismatch, "%s must be type %s, not type %s", what, sqlName(t), sqlName(st)).WithPosition(pos)
	}
	return nil, pgerr.New(pgerr.DatatypeMismatch, "%s: expected %s, found %s", what, sqlName(t), sqlName(st)).WithPosition(pos)
}

func opError(op string, l, r Scalar, pos int) error {
	if l == nil {
		return pgerr.New(pgerr.UndefinedFunction, "operator does not exist: %s %s", op, sqlName(r.Type())).
			WithPosition(pos).WithHint("No operator matches the given name and argument type. You might need to add an explicit type cast.")
	}
	return pgerr.New(pgerr.UndefinedFunction, "operator does not exist: %s %s %s", sqlName(l.Type()), op, sqlName(r.Type())).
		WithPosition(pos).WithHint("No operator matches the given name and argument types. You might need to add explicit type casts.")
}

// castTo is an explicit cast. Constants are folded so that errors in
// literals surface at plan time.
func castTo(x Scalar, t catalog.Type, pos int) (Scalar, error) {
	if x.Type() == t {
		return x, nil
	}
	if x.Type().HasNested() || t.HasNested() {
		return castNested(x, t, pos)
	}
	if c, ok := x.(*Const); ok {
		if c.V == nil {
			return &Const{T: t}, nil
		}
		if _, isText := c.V.(string); isText && t.IsArray() {
			// An array literal, '{a,b}', into an array column.
			return castPGConst(nil, c, t, pos)
		}
		if c, ok, err := castDatetimeConst(c, t, pos); ok {
			return c, err
		}
		v, err := ConvertValue(c.V, t)
		if err != nil {
			return nil, pgerr.Wrap(err, pgerr.InvalidTextRepresentation).WithPosition(pos)
		}
		return &Const{V: v, T: t}, nil
	}
	if p, ok := x.(*ParamRef); ok && p.T == catalog.Unknown {
		return &ParamRef{N: p.N, T: t}, nil
	}
	if !castable(x.Type(), t) {
		return nil, pgerr.New(pgerr.CannotCoerce, "cannot cast type %s to %s", sqlName(x.Type()), sqlName(t)).WithPosition(pos)
	}
	return &Cast{X: x, T: t}, nil
}

func castable(from, to catalog.Type) bool {
	intLike := func(t catalog.Type) bool { return t == catalog.Int || t == catalog.BigInt || t.OidLike() }
	switch {
	case intLike(from) && intLike(to):
		return true
	case from == to, from == catalog.Unknown, to == catalog.Varchar, from == catalog.Varchar:
		return true
	case from.Numeric() && to.Numeric():
		return true
	case from == catalog.Boolean && (to == catalog.Int || to == catalog.BigInt):
		return true
	case (from == catalog.Int || from == catalog.BigInt) && to == catalog.Boolean:
		return true
	case blobCastable(from, to):
		return true
	case IsDatetime(from) || IsDatetime(to):
		return datetimeCastable(from, to)
	}
	return false
}

// ConvertValue converts a non-NULL value to type t, as a cast would. It is
// shared by planning (constant folding) and execution.
func ConvertValue(v any, t catalog.Type) (any, error) {
	// A value already of the type is returned as it came, not boxed
	// again: a parameter converted to its column's type on every
	// execution would otherwise allocate each time.
	switch x := v.(type) {
	case string:
		if t == catalog.Varchar {
			return v, nil
		}
	case int64:
		if t == catalog.BigInt || t == catalog.Int && x <= 1<<31-1 && x >= -1<<31 {
			return v, nil
		}
	case float64:
		if t == catalog.Double {
			return v, nil
		}
	}
	if out, ok, err := convertDatetime(v, t); ok {
		return out, err
	}
	if s, ok := v.(string); ok {
		if out, ok, err := pgcodec.CastText(s, t); ok {
			return out, err
		}
	}
	if out, ok, err := convertBlob(v, t); ok {
		return out, err
	}
	if out, ok, err := convertDecimal(v, t); ok {
		return out, err
	}
	switch t {
	case catalog.Varchar:
		return FormatValue(v), nil
	case catalog.Int, catalog.BigInt:
		var n int64
		switch v := v.(type) {
		case int64:
			n = v
		case float64:
			if v != v || v > 9.223372036854775e18 || v < -9.223372036854775e18 {
				return nil, pgerr.New(pgerr.NumericValueOutOfRange, "%s out of range", typeWord(t))
			}
			n = int64(roundHalfAway(v))
		case bool:
			if v {
				n = 1
			}
		default:
			return nil, pgerr.New(pgerr.CannotCoerce, "cannot cast %T to %s", v, t)
		}
		if t == catalog.Int && (n > 1<<31-1 || n < -1<<31) {
			return nil, pgerr.New(pgerr.NumericValueOutOfRange, "integer out of range")
		}
		return n, nil
	case catalog.Double:
		switch v := v.(type) {
		case int64:
			return float64(v), nil
		case float64:
			return v, nil
		}
	case catalog.Boolean:
		switch v := v.(type) {
		case bool:
			return v, nil
		case int64:
			return v != 0, nil
		}
	case catalog.Oid, catalog.RegClass, catalog.RegType, catalog.RegProc, catalog.RegNamespace:
		switch v := v.(type) {
		case int64:
			if v < 0 || v > 1<<32-1 {
				return nil, pgerr.New(pgerr.NumericValueOutOfRange, "OID out of range")
			}
			return v, nil
		}
	case catalog.Timestamp:
		switch v := v.(type) {
		case time.Time:
			return catalog.NormalizeTime(v), nil
		case int64:
			return time.UnixMilli(v).UTC(), nil
		case string:
			ts, err := ParseTimestamp(v)
			if err != nil {
				return nil, err
			}
			return ts, nil
		}
	}
	return nil, pgerr.New(pgerr.CannotCoerce, "cannot cast %s to %s", FormatValue(v), t)
}

// sqlName is the name Postgres's messages give a type (format_type).
func sqlName(t catalog.Type) string {
	switch t {
	case catalog.Boolean:
		return "boolean"
	case catalog.Int:
		return "integer"
	case catalog.BigInt:
		return "bigint"
	case catalog.Double:
		return "double precision"
	case catalog.Varchar:
		return "text"
	case catalog.Timestamp:
		return "timestamp without time zone"
	case catalog.Unknown:
		return "unknown"
	}
	if t.HasNested() {
		// Errors name a compound type as it was declared, not as the
		// jsonb the wire calls it.
		return t.String()
	}
	return t.SQLName()
}

func typeWord(t catalog.Type) string {
	switch t {
	case catalog.Int:
		return "integer"
	case catalog.BigInt:
		return "bigint"
	}
	return strings.ToLower(t.String())
}

func roundHalfAway(f float64) float64 {
	if f < 0 {
		return -float64(int64(-f + 0.5))
	}
	return float64(int64(f + 0.5))
}

// ParseTimestamp parses timestamp input text (pgcodec.ParseTimestamp).
func ParseTimestamp(s string) (time.Time, error) { return pgcodec.ParseTimestamp(s) }

// FormatValue renders a value as Postgres text output does.
func FormatValue(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		return FormatFloat(v)
	case *apd.Decimal:
		return numeric.Text(v)
	case bool:
		if v {
			return "true"
		}
		return "false"
	case time.Time:
		return v.UTC().Format(catalog.TimestampLayout)
	case []any:
		return catalog.FormatArray(catalog.ArrayOf(catalog.Unknown), v, FormatValue)
	case catalog.DateVal:
		return string(pgcodec.AppendDate(nil, v))
	case catalog.TimeOfDay:
		return string(pgcodec.AppendTimeOfDay(nil, v))
	case catalog.IntervalVal:
		return string(pgcodec.AppendInterval(nil, v))
	}
	return formatBlob(v)
}

// FormatFloat formats a float8 as Postgres does with the default
// extra_float_digits: the shortest text that reads back exactly, in
// fixed notation for decimal exponents in [-4, 15) (pgcodec.AppendFloat8,
// as the wire sends it).
func FormatFloat(f float64) string { return string(pgcodec.AppendFloat8(nil, f)) }

func (b *binder) bindCase(e *sql.Case) (Scalar, error) {
	c := &Case{}
	var results []Scalar
	for _, w := range e.Whens {
		cond := w.Cond
		if e.Operand != nil {
			cond = &sql.Binary{Op: "=", L: e.Operand, R: w.Cond, Pos: e.Pos}
		}
		cs, err := b.bind(cond)
		if err != nil {
			return nil, err
		}
		if cs, err = b.coerce(cs, catalog.Boolean, e.Pos, "CASE WHEN"); err != nil {
			return nil, err
		}
		rs, err := b.bind(w.Result)
		if err != nil {
			return nil, err
		}
		c.Arms = append(c.Arms, CaseArm{Cond: cs})
		results = append(results, rs)
	}
	if e.Else != nil {
		es, err := b.bind(e.Else)
		if err != nil {
			return nil, err
		}
		results = append(results, es)
	}
	t := catalog.Unknown
	for _, r := range results {
		if t == catalog.Unknown {
			t = r.Type()
			continue
		}
		nt, ok := commonType(&Const{T: t, V: 0}, r)
		if !ok {
			return nil, pgerr.New(pgerr.DatatypeMismatch, "CASE types %s and %s cannot be matched", sqlName(t), sqlName(r.Type())).WithPosition(e.Pos)
		}
		t = nt
	}
	if t == catalog.Unknown {
		t = catalog.Varchar
	}
	for i := range results {
		r, err := b.coerce(results[i], t, e.Pos, "CASE")
		if err != nil {
			return nil, err
		}
		if i < len(c.Arms) {
			c.Arms[i].Result = r
		} else {
			c.Else = r
		}
	}
	c.T = t
	return c, nil
}

// IsAggregate reports whether name is an aggregate function.
func IsAggregate(name string) bool {
	switch name {
	case "count", "sum", "min", "max", "avg", "count_distinct":
		return true
	}
	return false
}

func (b *binder) bindFunc(e *sql.Func) (Scalar, error) {
	if err := b.checkAggSyntax(e); err != nil {
		return nil, err
	}
	if b.q != nil && e.Over == nil && IsAggregate(e.Name) {
		return b.bindAggregate(e)
	}
	if b.q != nil {
		if s, ok, err := b.bindQueryFunc(e); ok {
			return s, err
		}
	} else if e.Over != nil {
		return nil, pgerr.New(pgerr.FeatureNotSupported, "window functions are not supported here").WithPosition(e.Pos)
	}
	if IsAggregate(e.Name) || b.q == nil && ViewAggregate(e.Name) {
		return b.bindAggregate(e)
	}
	if s, ok, err := b.bindNestedFunc(e); ok {
		return s, err
	}
	if e.Name == sql.LambdaFunc {
		return nil, pgerr.New(pgerr.SyntaxError, "a lambda (x => ...) is an argument of TRANSFORM, FILTER or REDUCE only").WithPosition(e.Pos)
	}
	args := make([]Scalar, len(e.Args))
	for i, a := range e.Args {
		s, err := b.bind(a)
		if err != nil {
			return nil, err
		}
		args[i] = s
	}
	return b.bindScalarFunc(e.Name, args, e.Pos)
}

func (b *binder) bindAggregate(e *sql.Func) (Scalar, error) {
	if e.Name == "grouping" {
		return b.bindGroupingCall(e)
	}
	if b.aggs == nil {
		clause := b.clause
		if clause == "" {
			clause = "this context"
		}
		return nil, pgerr.New(pgerr.GroupingError, "aggregate functions are not allowed in %s", clause).WithPosition(e.Pos)
	}
	if b.inAgg {
		return nil, pgerr.New(pgerr.GroupingError, "aggregate function calls cannot be nested").WithPosition(e.Pos)
	}
	if e.Distinct && b.q == nil && e.Name != "count" {
		return nil, pgerr.New(pgerr.FeatureNotSupported, "%s(DISTINCT ...) is not supported", e.Name).WithPosition(e.Pos).
			WithHint("COUNT(DISTINCT x) is.")
	}
	if orderedSetAggs[e.Name] || e.WithinGroup {
		return b.bindOrderedSet(e)
	}
	if offsetAgg(e.Name) {
		return b.bindOffsetAgg(e)
	}
	spec := AggSpec{Func: e.Name, Distinct: e.Distinct}
	if e.Name == "count_distinct" {
		// ksqlDB's COUNT_DISTINCT(x) is COUNT(DISTINCT x).
		if e.Distinct || e.Star {
			return nil, pgerr.New(pgerr.SyntaxError, "COUNT_DISTINCT takes one argument, without DISTINCT or *").WithPosition(e.Pos)
		}
		spec.Func, spec.Distinct = "count", true
	}
	nargs := 1
	if e.Name == "string_agg" || isObjectAgg(e.Name) {
		nargs = 2
	}
	if n, ok := libraryAggs[e.Name]; ok {
		nargs = n
	}
	switch {
	case e.Star:
		if e.Name != "count" {
			return nil, pgerr.New(pgerr.SyntaxError, "%s(*) is not valid; only COUNT(*) is", e.Name).WithPosition(e.Pos)
		}
	case len(e.Args) != nargs:
		return nil, pgerr.New(pgerr.UndefinedFunction, "function %s takes exactly %d argument%s", e.Name, nargs,
			map[bool]string{true: "", false: "s"}[nargs == 1]).WithPosition(e.Pos)
	default:
		b.inAgg = true
		arg, err := b.bind(e.Args[0])
		if err == nil && nargs == 2 {
			spec.Arg2, err = b.bind(e.Args[1])
		}
		b.inAgg = false
		if err != nil {
			return nil, err
		}
		spec.Arg = arg
	}
	switch spec.Func {
	case "count":
		spec.T = catalog.BigInt
	case "sum":
		switch spec.Arg.Type() {
		case catalog.Int, catalog.Unknown:
			spec.T = catalog.BigInt
		case catalog.BigInt:
			// Postgres's sum(bigint) is numeric, and a query's is too; a
			// view's stays bigint (ksqlDB's type), failing with 22003
			// past its range.
			spec.T = catalog.BigInt
			if b.exactSum {
				spec.T = catalog.Decimal
			}
		case catalog.Double:
			spec.T = catalog.Double
		case catalog.Decimal:
			spec.T = catalog.Decimal
		case catalog.Interval:
			if err := b.intervalAgg(e); err != nil {
				return nil, err
			}
			spec.T = catalog.Interval
		default:
			return nil, pgerr.New(pgerr.UndefinedFunction, "function sum(%s) does not exist", sqlName(spec.Arg.Type())).WithPosition(e.Pos)
		}
	case "avg":
		if spec.Arg.Type() == catalog.Interval {
			if err := b.intervalAgg(e); err != nil {
				return nil, err
			}
			spec.T = catalog.Interval
			break
		}
		if !spec.Arg.Type().Numeric() && spec.Arg.Type() != catalog.Unknown {
			return nil, pgerr.New(pgerr.UndefinedFunction, "function avg(%s) does not exist", sqlName(spec.Arg.Type())).WithPosition(e.Pos)
		}
		spec.T = avgType(spec.Arg.Type())
	case "min", "max":
		spec.T = spec.Arg.Type()
	case "string_agg":
		var err error
		if spec.Arg, err = b.castAny(spec.Arg, catalog.Varchar, e.Pos); err != nil {
			return nil, err
		}
		if spec.Arg2, err = b.coerce(spec.Arg2, catalog.Varchar, e.Pos, "string_agg"); err != nil {
			return nil, err
		}
		if _, ok := spec.Arg2.(*Const); !ok && b.q == nil {
			return nil, pgerr.New(pgerr.FeatureNotSupported, "the delimiter of string_agg in a view must be a constant").WithPosition(e.Args[1].Position()).
				WithHint("A view keeps the group's values and joins them with one delimiter.")
		}
		spec.T = catalog.Varchar
	case "array_agg", "collect_list", "collect_set", "topk", "topkdistinct", "histogram", "corr", "correlation", "covar_pop", "covar_samp":
		if err := b.typeLibraryAgg(e, &spec); err != nil {
			return nil, err
		}
	case "bool_and", "bool_or", "every":
		var err error
		if spec.Arg, err = b.coerce(spec.Arg, catalog.Boolean, e.Pos, e.Name); err != nil {
			return nil, err
		}
		spec.T = catalog.Boolean
	default:
		if err := typeStatAgg(e, &spec); err != nil {
			return nil, err
		}
	}
	if err := b.bindAggClauses(e, &spec); err != nil {
		return nil, err
	}
	if t, ok := jsonAggType(spec.Func); ok {
		spec.T = t
	}
	*b.aggs = append(*b.aggs, spec)
	return &aggSlot{i: len(*b.aggs) - 1, t: spec.T}, nil
}

// bindItems binds the expressions of a select list, in order.
func (b *binder) bindItems(items []sql.SelectItem) ([]Scalar, error) {
	out := make([]Scalar, 0, len(items))
	for _, it := range items {
		e, err := b.bind(it.Expr)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// intervalAgg checks that sum or avg of an interval is in a query: a
// view's aggregates keep numbers.
func (b *binder) intervalAgg(e *sql.Func) error {
	if b.q != nil {
		return nil
	}
	return pgerr.New(pgerr.FeatureNotSupported, "%s of an interval is not supported in a view", e.Name).WithPosition(e.Pos).
		WithHint("Sum the interval's seconds, sum(extract(epoch FROM x)), and make an interval of the result when reading it.")
}
