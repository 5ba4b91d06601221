package planner

import (
	"strconv"
	"strings"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/pgcodec"
	"github.com/basindb/basin/sql"
)

// Binding of the expressions only catalog queries use. The binder's
// scope and q fields are set for a catalog query (see qbind.go); pull
// queries and views bind without them and get a 0A000 for these
// constructs, which PlanSelect routes away from them anyway.

// walkQuery calls fn for e and every expression under it, down into
// subqueries' expressions unless fn returns false for the subquery.
func walkQuery(e sql.Expr, fn func(sql.Expr) bool) {
	if e == nil || !fn(e) {
		return
	}
	w := func(xs ...sql.Expr) {
		for _, x := range xs {
			walkQuery(x, fn)
		}
	}
	switch e := e.(type) {
	case *sql.Unary:
		w(e.X)
	case *sql.Binary:
		w(e.L, e.R)
	case *sql.IsNull:
		w(e.X)
	case *sql.In:
		w(e.X)
		w(e.List...)
	case *sql.Between:
		w(e.X, e.Lo, e.Hi)
	case *sql.Func:
		w(e.Args...)
		if e.Over != nil {
			w(e.Over.PartitionBy...)
			for _, o := range e.Over.OrderBy {
				w(o.Expr)
			}
		}
	case *sql.Cast:
		w(e.X)
	case *sql.Case:
		w(e.Operand, e.Else)
		for _, wh := range e.Whens {
			w(wh.Cond, wh.Result)
		}
	case *sql.InSubquery:
		w(e.X)
	case *sql.Quantified:
		w(e.X, e.Array)
	case *sql.ArrayExpr:
		w(e.Elems...)
	case *sql.Subscript:
		w(e.X, e.Index)
	case *sql.FieldSelect:
		w(e.X)
	}
}

// selectExprs calls fn for every top-level expression of s.
func selectExprs(s *sql.Select, fn func(sql.Expr)) {
	for _, it := range s.Items {
		if it.Expr != nil {
			fn(it.Expr)
		}
	}
	for _, e := range []sql.Expr{s.Where, s.Having, s.Limit, s.Offset} {
		if e != nil {
			fn(e)
		}
	}
	for _, e := range s.GroupBy {
		fn(e)
	}
	for _, o := range s.OrderBy {
		fn(o.Expr)
	}
	for _, e := range s.DistinctOn {
		fn(e)
	}
}

// isPGType reports whether t is a type the relational engine's casts
// and coercions handle (coerceExt, castPG): the system types, and
// arrays, which columns may now hold but whose text form ('{1,2}') and
// casts are still the catalog engine's. NUMERIC and the other storable
// scalar types are not.
func isPGType(t catalog.Type) bool {
	return t != catalog.Unknown && (!t.Storable() || t.IsArray())
}

// bindExt binds the expressions of ast_query.go.
func (b *binder) bindExt(e sql.Expr) (Scalar, error) {
	switch e.(type) {
	case *sql.ArrayExpr, *sql.Subscript, *sql.FieldSelect:
		// Arrays and the nested types' operators run in views and
		// derived streams as well.
		return b.bindValueExt(e)
	}
	if b.q == nil {
		return nil, pgerr.New(pgerr.FeatureNotSupported, "%s is not supported here", constructName(e)).WithPosition(e.Position())
	}
	switch e := e.(type) {
	case *boundExpr:
		return e.s, nil
	case *sql.Subquery:
		return b.bindSubquery(e)
	case *sql.InSubquery:
		s, err := b.bindQuantified(e.X, "=", false, e.Select, nil, e.Pos)
		if err != nil || !e.Not {
			return s, err
		}
		return &Unary{Op: "NOT", X: s, T: catalog.Boolean}, nil
	case *sql.Quantified:
		return b.bindQuantified(e.X, e.Op, e.All, e.Select, e.Array, e.Pos)
	}
	return nil, pgerr.New(pgerr.FeatureNotSupported, "expression %T is not supported", e)
}

// bindValueExt binds the expressions of ast_query.go that any engine
// evaluates: ARRAY[...], subscripts and field selections.
func (b *binder) bindValueExt(e sql.Expr) (Scalar, error) {
	switch e := e.(type) {
	case *sql.ArrayExpr:
		elems, err := b.bindArgs(e.Elems)
		if err != nil {
			return nil, err
		}
		t, err := commonArgs(elems)
		if err != nil {
			return nil, pgerr.Wrap(err, pgerr.DatatypeMismatch).WithPosition(e.Pos)
		}
		if t == catalog.Unknown {
			t = catalog.Varchar
		}
		if t.IsArray() {
			return nil, pgerr.New(pgerr.FeatureNotSupported, "multidimensional arrays are not supported").WithPosition(e.Pos)
		}
		for i := range elems {
			if elems[i], err = b.coerce(elems[i], t, e.Pos, "ARRAY"); err != nil {
				return nil, err
			}
		}
		return &ArrayLit{Elems: elems, T: catalog.ArrayOf(t)}, nil
	case *sql.Subscript:
		x, err := b.bind(e.X)
		if err != nil {
			return nil, err
		}
		if !x.Type().Subscriptable() && !x.Type().IsMap() {
			return nil, pgerr.New(pgerr.DatatypeMismatch, "cannot subscript type %s because it does not support subscripting", sqlName(x.Type())).WithPosition(e.Pos)
		}
		idx, err := b.bind(e.Index)
		if err != nil {
			return nil, err
		}
		if x.Type().IsMap() {
			// m['k']: the value of key k, NULL when m has none.
			if idx, err = b.coerce(idx, catalog.Varchar, e.Pos, "map key"); err != nil {
				return nil, err
			}
			return &SubscriptOp{X: x, Idx: idx, T: x.Type().Value()}, nil
		}
		if idx, err = b.coerce(idx, catalog.BigInt, e.Pos, "array subscript"); err != nil {
			return nil, err
		}
		return &SubscriptOp{X: x, Idx: idx, T: x.Type().Elem()}, nil
	case *sql.FieldSelect:
		x, err := b.bind(e.X)
		if err != nil {
			return nil, err
		}
		if x.Type().IsStruct() {
			return structField(x, e.Field, e.Pos)
		}
		if x.Type() != catalog.Record {
			return nil, pgerr.New(pgerr.DatatypeMismatch, "column notation .%s applied to type %s, which is not a composite type", e.Field, sqlName(x.Type())).WithPosition(e.Pos)
		}
		for i, f := range b.recordFields(x) {
			if strings.EqualFold(f.Name, e.Field) {
				return &FieldOp{X: x, Idx: i, Name: f.Name, T: f.Type}, nil
			}
		}
		return nil, pgerr.New(pgerr.UndefinedColumn, "could not identify column %q in record data type", e.Field).WithPosition(e.Pos)
	}
	return nil, pgerr.New(pgerr.FeatureNotSupported, "expression %T is not supported", e)
}

func constructName(e sql.Expr) string {
	switch e.(type) {
	case *sql.Subquery, *sql.InSubquery:
		return "a subquery"
	case *sql.Quantified:
		return "ANY/ALL"
	case *sql.ArrayExpr:
		return "an array"
	case *sql.Subscript:
		return "a subscript"
	case *sql.FieldSelect:
		return "a record field"
	}
	return "this expression"
}

// bindSubquery plans a subquery in the current scope.
func (b *binder) bindSubquery(e *sql.Subquery) (Scalar, error) {
	q, err := b.q.planQuery(e.Select, b.scope)
	if err != nil {
		return nil, err
	}
	sl := &SubLink{Query: q}
	switch e.Kind {
	case sql.SubExists:
		sl.Kind, sl.T = SubLinkExists, catalog.Boolean
	case sql.SubArray:
		if len(q.Columns) != 1 {
			return nil, pgerr.New(pgerr.SyntaxError, "subquery must return only one column").WithPosition(e.Pos)
		}
		t := q.Columns[0].Type
		if t == catalog.Unknown {
			t = catalog.Varchar
		}
		if t.IsArray() {
			return nil, pgerr.New(pgerr.FeatureNotSupported, "ARRAY() of arrays is not supported").WithPosition(e.Pos)
		}
		sl.Kind, sl.T = SubLinkArray, catalog.ArrayOf(t)
	default:
		if len(q.Columns) != 1 {
			return nil, pgerr.New(pgerr.SyntaxError, "subquery must return only one column").WithPosition(e.Pos)
		}
		sl.Kind, sl.T = SubLinkScalar, q.Columns[0].Type
	}
	return sl, nil
}

// bindQuantified binds x op ANY|ALL over a subquery or an array.
func (b *binder) bindQuantified(xe sql.Expr, op string, all bool, sub *sql.Select, arr sql.Expr, pos int) (Scalar, error) {
	x, err := b.bind(xe)
	if err != nil {
		return nil, err
	}
	if sub != nil {
		q, err := b.q.planQuery(sub, b.scope)
		if err != nil {
			return nil, err
		}
		if len(q.Columns) != 1 {
			return nil, pgerr.New(pgerr.SyntaxError, "subquery has too many columns").WithPosition(pos)
		}
		elem := &Const{T: q.Columns[0].Type, V: 0}
		t, ok := commonType(x, elem)
		if !ok {
			return nil, opError(op, x, elem, pos)
		}
		if x, err = b.coerce(x, t, pos, op); err != nil {
			return nil, err
		}
		kind := SubLinkAny
		if all {
			kind = SubLinkAll
		}
		return &SubLink{Kind: kind, Query: q, X: x, Op: op, T: catalog.Boolean}, nil
	}
	a, err := b.bind(arr)
	if err != nil {
		return nil, err
	}
	at := a.Type()
	if !at.Subscriptable() {
		if c, ok := a.(*Const); ok && (c.V == nil || at == catalog.Varchar) {
			// '{a,b}' takes the array type of the other side.
			et := x.Type()
			if et == catalog.Unknown {
				et = catalog.Varchar
			}
			if a, err = b.coerce(a, catalog.ArrayOf(et), pos, op); err != nil {
				return nil, err
			}
			at = a.Type()
		} else if p, ok := a.(*ParamRef); ok {
			// x = ANY($1): $1 is an array of x's type. The value comes
			// as text or as an array; either reads through text.
			et := x.Type()
			if et == catalog.Unknown {
				et = catalog.Varchar
			}
			a = &PGCast{X: &ParamRef{N: p.N, T: catalog.Varchar}, T: catalog.ArrayOf(et)}
			b.noteParam(p.N, catalog.ArrayOf(et))
			at = a.Type()
		} else {
			return nil, pgerr.New(pgerr.DatatypeMismatch, "op ANY/ALL (array) requires array on right side").WithPosition(pos)
		}
	}
	elem := &Const{T: at.Elem(), V: 0}
	t, ok := commonType(x, elem)
	if !ok {
		return nil, opError(op, x, elem, pos)
	}
	if x, err = b.coerce(x, t, pos, op); err != nil {
		return nil, err
	}
	return &ArrayCmp{X: x, Op: op, All: all, Arr: a}, nil
}

// noteParam records the type a parameter is described with. Oids are
// described as bigint, which every driver can send.
func (b *binder) noteParam(n int, t catalog.Type) {
	if b.params == nil {
		return
	}
	if t.OidLike() {
		t = catalog.BigInt
	} else if t.IsArray() && t.Elem().OidLike() {
		t = catalog.ArrayOf(catalog.BigInt)
	}
	if cur, ok := b.params.Types[n]; !ok || cur == catalog.Unknown {
		b.params.Types[n] = t
	}
}

// bindQueryFunc binds the calls only relational queries make: window
// functions, set-returning functions and the extra aggregates. ok is
// false for any other call.
func (b *binder) bindQueryFunc(e *sql.Func) (s Scalar, ok bool, err error) {
	if e.Over != nil {
		s, err := b.bindWindow(e)
		return s, true, err
	}
	if sig, isSRF := setReturningFuncs[e.Name]; isSRF {
		if b.srfs == nil {
			where := b.clause
			if where == "" {
				where = "this context"
			}
			return nil, true, pgerr.New(pgerr.FeatureNotSupported, "set-returning functions are not allowed in %s", where).WithPosition(e.Pos)
		}
		args, err := b.bindArgs(e.Args)
		if err != nil {
			return nil, true, err
		}
		args, t, fields, err := sig.bind(args, e.Pos)
		if err != nil {
			return nil, true, err
		}
		*b.srfs = append(*b.srfs, SRF{Name: e.Name, Args: args, T: t})
		b.srfFields = append(b.srfFields, fields)
		return &srfSlot{i: len(*b.srfs) - 1, t: t}, true, nil
	}
	if queryAggregates[e.Name] {
		s, err := b.bindAggregate(e)
		return s, true, err
	}
	return nil, false, nil
}

// bindCatalogFunc binds a call of a catalog function: its arguments
// converted as its signature says.
func (b *binder) bindCatalogFunc(name string, sig qfuncSig, args []Scalar, pos int) (Scalar, error) {
	if b.q == nil {
		return nil, pgerr.New(pgerr.FeatureNotSupported, "function %s is not supported in a view", name).WithPosition(pos).
			WithHint("It reads the catalog, which a view's tasks do not have; a pull query can call it.")
	}
	var err error
	for i := range args {
		want := sig.argType(i)
		if want == catalog.Unknown {
			continue
		}
		if args[i], err = b.coerceArg(args[i], want, pos); err != nil {
			return nil, err
		}
	}
	t := sig.result
	if sig.resultOf != nil {
		t = sig.resultOf(args)
	}
	return &Call{Name: name, Args: args, T: t, Fields: sig.fields}, nil
}

// coerceArg converts a catalog function's argument as Postgres's
// function resolution would: implicitly, or by the explicit casts a
// function of that signature accepts (any type to text).
func (b *binder) coerceArg(s Scalar, t catalog.Type, pos int) (Scalar, error) {
	st := s.Type()
	if st == t {
		return s, nil
	}
	if t.Subscriptable() && st.Subscriptable() {
		return s, nil // any array where an array is wanted
	}
	if t == catalog.Varchar && st != catalog.Unknown && !isUntypedLiteral(s) {
		return b.q.castPG(s, t, pos)
	}
	return b.coerce(s, t, pos, "argument")
}

// bindBinaryExt binds the operators only catalog queries use: regular
// expression matches, & and || over arrays. ok is false for the others.
func (b *binder) bindBinaryExt(op string, l, r Scalar, pos int) (s Scalar, ok bool, err error) {
	switch op {
	case "IS DISTINCT FROM", "IS NOT DISTINCT FROM":
		t, ok := commonType(l, r)
		if !ok {
			return nil, true, opError(op, l, r, pos)
		}
		if l, err = b.coerce(l, t, pos, op); err != nil {
			return nil, true, err
		}
		if r, err = b.coerce(r, t, pos, op); err != nil {
			return nil, true, err
		}
		return &OpCall{Op: op, L: l, R: r, T: catalog.Boolean}, true, nil
	case "~", "~*", "!~", "!~*":
		if l, err = b.coerce(l, catalog.Varchar, pos, op); err != nil {
			return nil, true, err
		}
		if r, err = b.coerce(r, catalog.Varchar, pos, op); err != nil {
			return nil, true, err
		}
		return &RegexMatch{X: l, Pattern: r, CI: strings.HasSuffix(op, "*"), Not: strings.HasPrefix(op, "!")}, true, nil
	case "&":
		t, ok := commonType(l, r)
		if !ok || t != catalog.Int && t != catalog.BigInt && t != catalog.Unknown {
			return nil, true, opError(op, l, r, pos)
		}
		if t == catalog.Unknown {
			t = catalog.BigInt
		}
		if l, err = b.coerce(l, t, pos, op); err != nil {
			return nil, true, err
		}
		if r, err = b.coerce(r, t, pos, op); err != nil {
			return nil, true, err
		}
		return &OpCall{Op: "&", L: l, R: r, T: t}, true, nil
	case "||":
		lt, rt := l.Type(), r.Type()
		if !lt.IsArray() && !rt.IsArray() {
			if isPGType(lt) || isPGType(rt) {
				// oid || text and friends: both sides as text.
				if l, err = b.castAny(l, catalog.Varchar, pos); err != nil {
					return nil, true, err
				}
				if r, err = b.castAny(r, catalog.Varchar, pos); err != nil {
					return nil, true, err
				}
				return &Binary{Op: "||", L: l, R: r, T: catalog.Varchar}, true, nil
			}
			return nil, false, nil
		}
		t := lt
		if !t.IsArray() {
			t = rt
		}
		if l, err = b.coerce(l, t, pos, op); err != nil {
			return nil, true, err
		}
		if r, err = b.coerce(r, t, pos, op); err != nil {
			return nil, true, err
		}
		return &OpCall{Op: "||", L: l, R: r, T: t}, true, nil
	}
	return nil, false, nil
}

// castAny casts with the catalog planner when there is one.
func (b *binder) castAny(x Scalar, t catalog.Type, pos int) (Scalar, error) {
	if b.q != nil {
		return b.q.castPG(x, t, pos)
	}
	return castTo(x, t, pos)
}

// coerceExt is coerce for the system types: oids and integers mix, a
// string literal becomes an oid by name, '{...}' an array.
func (b *binder) coerceExt(s Scalar, t catalog.Type, pos int, what string) (Scalar, bool, error) {
	st := s.Type()
	intLike := func(t catalog.Type) bool { return t == catalog.Int || t == catalog.BigInt || t.OidLike() }
	switch x := s.(type) {
	case *Const:
		if x.V == nil {
			return &Const{T: t}, true, nil
		}
		if st == catalog.Varchar || intLike(st) && intLike(t) {
			c, err := b.castConst(x, t, pos)
			return c, true, err
		}
	case *ParamRef:
		if t.IsReg() || t.Subscriptable() {
			b.noteParam(x.N, catalog.Varchar)
			return &PGCast{X: &ParamRef{N: x.N, T: catalog.Varchar}, T: t}, true, nil
		}
		b.noteParam(x.N, t)
		return &ParamRef{N: x.N, T: t}, true, nil
	}
	switch {
	case intLike(st) && intLike(t):
		return &Cast{X: s, T: t}, true, nil
	case st.Subscriptable() && t.Subscriptable():
		return &PGCast{X: s, T: t}, true, nil
	case st.IsReg() && t == catalog.Varchar:
		return &PGCast{X: s, T: t}, true, nil
	}
	return nil, false, nil
}

// castConst converts a constant for coerceExt and castPG.
func (b *binder) castConst(c *Const, t catalog.Type, pos int) (Scalar, error) {
	if b.q != nil {
		return b.q.castPG(c, t, pos)
	}
	return castPGConst(nil, c, t, pos)
}

// castPG is an explicit cast where either side may be a system type.
func (qp *queryPlanner) castPG(x Scalar, t catalog.Type, pos int) (Scalar, error) {
	st := x.Type()
	if st == t {
		return x, nil
	}
	if st.HasNested() || t.HasNested() {
		return castNested(x, t, pos)
	}
	if c, ok := x.(*Const); ok {
		return castPGConst(qp.snapshot(), c, t, pos)
	}
	if p, ok := x.(*ParamRef); ok && p.T == catalog.Unknown {
		b := &binder{params: qp.params}
		if t.IsReg() || t.Subscriptable() || t == catalog.Record {
			b.noteParam(p.N, catalog.Varchar)
			return &PGCast{X: &ParamRef{N: p.N, T: catalog.Varchar}, T: t}, nil
		}
		b.noteParam(p.N, t)
		return &ParamRef{N: p.N, T: t}, nil
	}
	if !isPGType(st) && !isPGType(t) {
		return castTo(x, t, pos)
	}
	intLike := func(t catalog.Type) bool { return t == catalog.Int || t == catalog.BigInt || t.OidLike() }
	switch {
	case intLike(st) && intLike(t):
		return &Cast{X: x, T: t}, nil
	case st == catalog.Oid && t == catalog.Varchar:
		return &Cast{X: x, T: t}, nil
	case st == catalog.Unknown, st == catalog.Varchar && (t.IsReg() || t.Subscriptable()),
		t == catalog.Varchar, st.Subscriptable() && t.Subscriptable():
		return &PGCast{X: x, T: t}, nil
	}
	return nil, pgerr.New(pgerr.CannotCoerce, "cannot cast type %s to %s", sqlName(st), sqlName(t)).WithPosition(pos)
}

// castPGConst folds a cast of a constant. snap resolves names of
// relations; without it, such a cast is left to run.
func castPGConst(snap *catalog.PGSnapshot, c *Const, t catalog.Type, pos int) (Scalar, error) {
	if c.V == nil {
		return &Const{T: t}, nil
	}
	bad := func(what string) error {
		return pgerr.New(pgerr.InvalidTextRepresentation, "invalid input syntax for type %s: %q", what, FormatValue(c.V)).WithPosition(pos)
	}
	switch {
	case t.OidLike():
		switch v := c.V.(type) {
		case int64:
			if v < 0 || v > 1<<32-1 {
				return nil, pgerr.New(pgerr.NumericValueOutOfRange, "OID out of range").WithPosition(pos)
			}
			return &Const{V: v, T: t}, nil
		case string:
			s := strings.TrimSpace(v)
			if n, err := strconv.ParseInt(s, 10, 64); err == nil && n >= 0 {
				return &Const{V: n, T: t}, nil
			}
			oid, err := regByName(snap, s, t, pos)
			if err != nil {
				if snap == nil && t == catalog.RegClass {
					return &PGCast{X: c, T: t}, nil
				}
				return nil, err
			}
			return &Const{V: oid, T: t}, nil
		}
		return nil, bad(t.PGName())
	case c.T.IsReg() && t == catalog.Varchar:
		if snap == nil {
			return &PGCast{X: c, T: t}, nil
		}
		return &Const{V: RegName(snap, c.T, c.V.(int64)), T: t}, nil
	case c.T == catalog.Oid && t == catalog.Varchar:
		return &Const{V: FormatValue(c.V), T: t}, nil
	case t.Subscriptable():
		s, ok := c.V.(string)
		if !ok {
			if c.T.Subscriptable() {
				return &PGCast{X: c, T: t}, nil
			}
			return nil, pgerr.New(pgerr.CannotCoerce, "cannot cast type %s to %s", sqlName(c.T), sqlName(t)).WithPosition(pos)
		}
		v, err := ParseArray(s, t)
		if err != nil {
			return nil, pgerr.Wrap(err, pgerr.InvalidTextRepresentation).WithPosition(pos)
		}
		return &Const{V: v, T: t}, nil
	case c.T.Subscriptable() && t == catalog.Varchar:
		return &Const{V: FormatArrayValue(c.T, c.V.([]any)), T: t}, nil
	case !isPGType(c.T) && !isPGType(t):
		return castTo(c, t, pos)
	}
	return nil, pgerr.New(pgerr.CannotCoerce, "cannot cast type %s to %s", sqlName(c.T), sqlName(t)).WithPosition(pos)
}

// regByName resolves a name as the input function of reg type t does.
func regByName(snap *catalog.PGSnapshot, name string, t catalog.Type, pos int) (int64, error) {
	switch t {
	case catalog.RegClass:
		if snap != nil {
			if oid, ok := snap.RelationOIDByName(name); ok {
				return oid, nil
			}
		}
		return 0, pgerr.New(pgerr.UndefinedTable, "relation %q does not exist", name).WithPosition(pos)
	case catalog.RegType:
		if oid, ok := catalog.TypeOIDByName(name); ok {
			return oid, nil
		}
		return 0, pgerr.New(pgerr.UndefinedObject, "type %q does not exist", name).WithPosition(pos)
	case catalog.RegProc:
		if oid, ok := catalog.ProcOIDByName(name); ok {
			return oid, nil
		}
		return 0, pgerr.New(pgerr.UndefinedFunction, "function %q does not exist", name).WithPosition(pos)
	case catalog.RegNamespace:
		if oid, ok := catalog.NamespaceOID(strings.Trim(strings.ToLower(name), `"`)); ok {
			return oid, nil
		}
		return 0, pgerr.New(pgerr.InvalidSchemaName, "schema %q does not exist", name).WithPosition(pos)
	}
	return 0, pgerr.New(pgerr.InvalidTextRepresentation, "invalid input syntax for type oid: %q", name).WithPosition(pos)
}

// RegByName resolves a name to an oid as the input function of reg
// type t does; exec uses it for casts at run time.
func RegByName(snap *catalog.PGSnapshot, name string, t catalog.Type) (int64, error) {
	if n, err := strconv.ParseInt(strings.TrimSpace(name), 10, 64); err == nil && n >= 0 {
		return n, nil
	}
	return regByName(snap, name, t, 0)
}

// RegName is the output function of reg type t: the name of the object
// with that oid, or the number when there is none ("-" for 0).
func RegName(snap *catalog.PGSnapshot, t catalog.Type, oid int64) string {
	if oid == 0 {
		return "-"
	}
	switch t {
	case catalog.RegClass:
		if snap != nil {
			if n, ok := snap.RelationName(oid); ok {
				return n
			}
		}
	case catalog.RegType:
		if pt, ok := catalog.TypeByOID(oid); ok {
			return pt.SQLName
		}
	case catalog.RegProc:
		if n, ok := catalog.ProcName(oid); ok {
			return n
		}
	case catalog.RegNamespace:
		if n, ok := catalog.NamespaceName(oid); ok {
			return n
		}
	}
	return strconv.FormatInt(oid, 10)
}

// FormatArrayValue renders an array or vector as Postgres text.
func FormatArrayValue(t catalog.Type, v []any) string {
	return catalog.FormatArray(t, v, FormatValue)
}

// ParseArray parses an array's text form ({a,b,"c d",NULL}, or "1 2"
// for a vector) into values of t's element type, each element converted
// as a cast from text would (pgcodec.ParseArray reads the form).
func ParseArray(s string, t catalog.Type) ([]any, error) {
	return pgcodec.ParseArray(s, t, func(x string, elem catalog.Type) (any, error) {
		return ConvertValue(x, elem)
	})
}

// liftExt is grouping.lift for the scalars of catalog queries.
func (g *grouping) liftExt(s Scalar, pos int) (Scalar, error) {
	switch x := s.(type) {
	case *OuterRef:
		return x, nil
	case *SubLink:
		if x.Query.Correlated {
			return nil, pgerr.New(pgerr.FeatureNotSupported, "a correlated subquery in a grouped query is not supported").WithPosition(pos)
		}
		if x.X == nil {
			return x, nil
		}
	case *winSlot:
		return x, nil // bound over the aggregated row already
	case *srfSlot:
		return nil, pgerr.New(pgerr.FeatureNotSupported, "set-returning functions in a grouped query are not supported").WithPosition(pos)
	}
	var err error
	out := mapChildren(s, func(c Scalar) Scalar {
		if err != nil {
			return c
		}
		var l Scalar
		l, err = g.lift(c, pos)
		return l
	})
	return out, err
}

// mapScalar applies fn to every node of s, children first, copying the
// nodes it changes below. Subqueries' plans are not entered.
func mapScalar(s Scalar, fn func(Scalar) Scalar) Scalar {
	if s == nil {
		return nil
	}
	return fn(mapChildren(s, func(c Scalar) Scalar { return mapScalar(c, fn) }))
}

// mapChildren returns s with fn applied to each direct child.
func mapChildren(s Scalar, fn func(Scalar) Scalar) Scalar {
	m := func(x Scalar) Scalar {
		if x == nil {
			return nil
		}
		return fn(x)
	}
	ms := func(xs []Scalar) []Scalar {
		out := make([]Scalar, len(xs))
		for i, x := range xs {
			out[i] = m(x)
		}
		return out
	}
	// Each node is copied whole, then its children replaced, so no field
	// is lost on the way (a cast's typmod, a call's record fields).
	switch x := s.(type) {
	case *Unary:
		c := *x
		c.X = m(x.X)
		return &c
	case *Binary:
		c := *x
		c.L, c.R = m(x.L), m(x.R)
		return &c
	case *IsNull:
		c := *x
		c.X = m(x.X)
		return &c
	case *In:
		c := *x
		c.X, c.List = m(x.X), ms(x.List)
		return &c
	case *Cast:
		c := *x
		c.X = m(x.X)
		return &c
	case *Case:
		c := *x
		c.Else, c.Arms = m(x.Else), nil
		for _, a := range x.Arms {
			c.Arms = append(c.Arms, CaseArm{Cond: m(a.Cond), Result: m(a.Result)})
		}
		return &c
	case *Call:
		c := *x
		c.Args = ms(x.Args)
		return &c
	case *SubLink:
		c := *x
		c.X = m(x.X)
		return &c
	case *ArrayLit:
		c := *x
		c.Elems = ms(x.Elems)
		return &c
	case *ArrayCmp:
		c := *x
		c.X, c.Arr = m(x.X), m(x.Arr)
		return &c
	case *SubscriptOp:
		c := *x
		c.X, c.Idx = m(x.X), m(x.Idx)
		return &c
	case *FieldOp:
		c := *x
		c.X = m(x.X)
		return &c
	case *RegexMatch:
		c := *x
		c.X, c.Pattern = m(x.X), m(x.Pattern)
		return &c
	case *OpCall:
		c := *x
		c.L, c.R = m(x.L), m(x.R)
		return &c
	case *PGCast:
		c := *x
		c.X = m(x.X)
		return &c
	case *Lambda:
		c := *x
		c.Body = m(x.Body)
		return &c
	}
	return s
}
