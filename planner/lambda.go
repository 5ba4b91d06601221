package planner

import (
	"fmt"
	"strings"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/sql"
)

// ksqlDB's lambdas: TRANSFORM, FILTER and REDUCE over an array or a map,
// with x => expr or (k, v) => expr arguments (sql/ rewrites them into
// sql.LambdaFunc calls).
//
// A lambda's body is bound as any expression, its parameters resolving
// before columns (bindColumn). Each parameter is a LambdaParam: its
// slot among all the lambda parameters in scope where it is used,
// counted from the outermost lambda, and that count (Depth). The body
// runs over the row it would run over without the lambda with the
// values of every parameter in scope appended, outermost first, so a
// parameter is at len(row) - Depth + Slot whatever the row's length: a
// lambda inside a lambda, in a view, a pull query or an aggregated row,
// reads its own and its enclosing lambdas' parameters the same way, and
// the columns beneath are remapped, lifted and walked as everywhere
// else.

// Lambda is a lambda argument: Body over the row with one value per
// parameter appended.
type Lambda struct {
	Names []string
	Types []catalog.Type
	Body  Scalar
}

// LambdaParam reads a lambda parameter: slot Slot of the Depth
// parameters in scope, which end the row.
type LambdaParam struct {
	Name        string
	Slot, Depth int
	T           catalog.Type
}

func (e *Lambda) Type() catalog.Type      { return e.Body.Type() }
func (e *LambdaParam) Type() catalog.Type { return e.T }
func (e *Lambda) String() string {
	return fmt.Sprintf("(%s) => %s", strings.Join(e.Names, ", "), e.Body)
}
func (e *LambdaParam) String() string { return e.Name }

// lambdaScope is a lambda parameter in scope of the expression being
// bound.
type lambdaScope struct {
	name string
	t    catalog.Type
}

// lambdaParam resolves an unqualified name to the innermost lambda
// parameter of that name.
func (b *binder) lambdaParam(e *sql.ColumnRef) (Scalar, bool) {
	if e.Table != "" {
		return nil, false
	}
	for i := len(b.lambdas) - 1; i >= 0; i-- {
		if b.lambdas[i].name == e.Name {
			return &LambdaParam{Name: e.Name, Slot: i, Depth: len(b.lambdas), T: b.lambdas[i].t}, true
		}
	}
	return nil, false
}

// bindLambda binds the lambda e (a sql.LambdaFunc call) with parameters
// of types types.
func (b *binder) bindLambda(fn string, e sql.Expr, types []catalog.Type) (*Lambda, error) {
	f, ok := e.(*sql.Func)
	if !ok || f.Name != sql.LambdaFunc || len(f.Args) < 2 {
		return nil, pgerr.New(pgerr.UndefinedFunction, "%s takes a lambda here (x => ... or (x, y) => ...)", strings.ToUpper(fn)).WithPosition(e.Position())
	}
	names := make([]string, len(f.Args)-1)
	for i, a := range f.Args[:len(f.Args)-1] {
		l, ok := a.(*sql.Literal)
		if !ok {
			return nil, pgerr.New(pgerr.SyntaxError, "a lambda's parameters are names").WithPosition(a.Position())
		}
		names[i], _ = l.Value.(string)
	}
	if len(names) != len(types) {
		return nil, pgerr.New(pgerr.UndefinedFunction, "the lambda of %s here has %d parameters, and takes %d", strings.ToUpper(fn), len(names), len(types)).
			WithPosition(f.Pos)
	}
	base := len(b.lambdas)
	for i, n := range names {
		for _, m := range names[:i] {
			if m == n {
				return nil, pgerr.New(pgerr.DuplicateColumn, "lambda parameter %q named more than once", n).WithPosition(f.Pos)
			}
		}
		b.lambdas = append(b.lambdas, lambdaScope{name: n, t: types[i]})
	}
	defer func() { b.lambdas = b.lambdas[:base] }()
	body, err := b.bind(f.Args[len(f.Args)-1])
	if err != nil {
		return nil, err
	}
	return &Lambda{Names: names, Types: types, Body: body}, nil
}

// coerceLambda makes the lambda l's result type t.
func (b *binder) coerceLambda(l *Lambda, t catalog.Type, pos int, what string) error {
	body, err := b.coerce(l.Body, t, pos, what)
	if err != nil {
		return err
	}
	l.Body = body
	return nil
}

// bindLambdaFunc binds TRANSFORM, FILTER or REDUCE.
func (b *binder) bindLambdaFunc(e *sql.Func) (Scalar, error) {
	name, pos := e.Name, e.Pos
	want := map[string]int{"transform": 2, "filter": 2, "reduce": 3}[name]
	if len(e.Args) < 1 {
		return nil, pgerr.New(pgerr.UndefinedFunction, "function %s() does not exist", name).WithPosition(pos)
	}
	coll, err := b.bind(e.Args[0])
	if err != nil {
		return nil, err
	}
	ct := coll.Type()
	if !ct.IsArray() && !ct.IsMap() {
		return nil, pgerr.New(pgerr.UndefinedFunction, "%s takes an array or a map, not %s", strings.ToUpper(name), sqlName(ct)).WithPosition(pos)
	}
	if name == "transform" && ct.IsMap() {
		want = 3
	}
	if len(e.Args) != want {
		return nil, pgerr.New(pgerr.UndefinedFunction, "%s of %s takes %d arguments, not %d", strings.ToUpper(name), sqlName(ct), want, len(e.Args)).
			WithPosition(pos).WithHint("TRANSFORM(array, x => ...), TRANSFORM(map, (k, v) => key, (k, v) => value), FILTER(array, x => ...), FILTER(map, (k, v) => ...), REDUCE(array, state, (s, x) => ...), REDUCE(map, state, (s, k, v) => ...).")
	}
	// The parameters a lambda over the collection takes.
	elems := []catalog.Type{ct.Elem()}
	if ct.IsMap() {
		elems = []catalog.Type{ct.Key(), ct.Value()}
	}
	switch name {
	case "transform":
		l, err := b.bindLambda(name, e.Args[1], elems)
		if err != nil {
			return nil, err
		}
		if !ct.IsMap() {
			t, err := b.elementResult(l, pos)
			if err != nil {
				return nil, err
			}
			return &Call{Name: name, Args: []Scalar{coll, l}, T: catalog.ArrayOf(t)}, nil
		}
		if err := b.coerceLambda(l, catalog.Varchar, pos, "the key lambda of TRANSFORM"); err != nil {
			return nil, err
		}
		lv, err := b.bindLambda(name, e.Args[2], elems)
		if err != nil {
			return nil, err
		}
		vt := lv.Type()
		if vt == catalog.Unknown {
			vt = catalog.Varchar
			if err := b.coerceLambda(lv, vt, pos, "the value lambda of TRANSFORM"); err != nil {
				return nil, err
			}
		}
		m, merr := nestedType(catalog.MapOf(catalog.Varchar, vt))
		if merr != nil {
			return nil, merr.WithPosition(pos)
		}
		return &Call{Name: name, Args: []Scalar{coll, l, lv}, T: m}, nil
	case "filter":
		l, err := b.bindLambda(name, e.Args[1], elems)
		if err != nil {
			return nil, err
		}
		if err := b.coerceLambda(l, catalog.Boolean, pos, "the lambda of FILTER"); err != nil {
			return nil, err
		}
		return &Call{Name: name, Args: []Scalar{coll, l}, T: ct}, nil
	}
	// REDUCE: the state's type is the initial value's, widened to the
	// lambda's result when that is a wider number (0 then s + 1.5).
	init, err := b.bind(e.Args[1])
	if err != nil {
		return nil, err
	}
	st := init.Type()
	if st == catalog.Unknown || isUntypedLiteral(init) && st == catalog.Varchar && !isUntyped(init) {
		st = catalog.Unknown
	}
	for try := 0; ; try++ {
		l, err := b.bindLambda(name, e.Args[2], append([]catalog.Type{st}, elems...))
		if err != nil {
			return nil, err
		}
		lt := l.Type()
		next := st
		switch {
		case lt == st:
		case st == catalog.Unknown:
			next = lt
		case st.Numeric() && lt.Numeric():
			if t, ok := commonType(&Const{T: st, V: 0}, &Const{T: lt, V: 0}); ok {
				next = t
			}
		}
		if next != st && try == 0 {
			st = next
			continue
		}
		if st == catalog.Unknown {
			st = catalog.Varchar
		}
		if init, err = b.coerce(init, st, pos, "the initial state of REDUCE"); err != nil {
			return nil, err
		}
		if err := b.coerceLambda(l, st, pos, "the lambda of REDUCE"); err != nil {
			return nil, err
		}
		return &Call{Name: name, Args: []Scalar{coll, init, l}, T: st}, nil
	}
}

// elementResult is the element type of TRANSFORM's array: the lambda's
// result, which must not be an array.
func (b *binder) elementResult(l *Lambda, pos int) (catalog.Type, error) {
	t := l.Type()
	switch {
	case t == catalog.Unknown:
		t = catalog.Varchar
		if err := b.coerceLambda(l, t, pos, "the lambda of TRANSFORM"); err != nil {
			return 0, err
		}
	case t.IsArray():
		return 0, pgerr.New(pgerr.FeatureNotSupported, "TRANSFORM to arrays would make an array of arrays, which basin does not have").WithPosition(pos)
	}
	return t, nil
}
