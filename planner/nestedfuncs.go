package planner

import (
	"strings"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/sql"
)

// ksqlDB's functions over arrays, maps, structs and JSON strings, and
// the constructors STRUCT(name := x, ...) and MAP(k := v, ...) (which
// sql/ rewrites to StructFunc and MapFunc calls). They are typed here,
// each by its own rule, because their types follow their arguments'
// (ARRAY_MAX of a DATE[] is a DATE); eval (nestedfuncs.go) implements
// them under the same names. They are plain calls, so views and derived
// streams run them as pull queries do.
//
// Where a name is also Postgres's, the arguments decide: ARRAY_LENGTH of
// one argument is ksqlDB's, of two (array, dimension) Postgres's;
// JSON_ARRAY_LENGTH of text (a literal too) is ksqlDB's (NULL for what
// is no JSON array), of json or jsonb Postgres's (which fails for it).

// The function names sql/ gives the constructors.
const (
	StructFunc = sql.StructFunc
	MapFunc    = sql.MapFunc
)

// nestedFuncs are the functions bindNestedFunc types.
var nestedFuncs = map[string]bool{
	"array_contains": true, "array_length": true, "array_distinct": true, "array_except": true,
	"array_intersect": true, "array_union": true, "array_concat": true, "array_join": true,
	"array_max": true, "array_min": true, "array_remove": true, "array_sort": true, "slice": true,
	"map_keys": true, "map_values": true, "map_union": true, "as_map": true, "as_value": true,
	"entries": true, "extractjsonfield": true, "json_array_contains": true, "json_array_length": true,
	"json_concat": true, "json_keys": true, "json_records": true, "json_items": true,
	"is_json_string": true, "to_json_string": true, StructFunc: true, MapFunc: true,
	"transform": true, "filter": true, "reduce": true, ExplodeFunc: true,
}

// bindNestedFunc binds a call of one of nestedFuncs; ok is false for
// any other call, and for the Postgres function of the same name.
func (b *binder) bindNestedFunc(e *sql.Func) (s Scalar, ok bool, err error) {
	name := e.Name
	if !nestedFuncs[name] || e.Distinct || e.Star || e.Over != nil {
		return nil, false, nil
	}
	switch name {
	case "array_length":
		if len(e.Args) != 1 {
			return nil, false, nil // Postgres's array_length(array, dimension)
		}
	case "transform", "filter", "reduce":
		s, err := b.bindLambdaFunc(e)
		return s, true, err
	}
	args, err := b.bindArgs(e.Args)
	if err != nil {
		return nil, true, err
	}
	if name == "json_array_length" && (len(args) != 1 || args[0].Type() != catalog.Varchar && args[0].Type() != catalog.Unknown) {
		return nil, false, nil // Postgres's json_array_length(json)
	}
	s, err = b.typeNestedFunc(name, args, e.Pos)
	return s, true, err
}

// typeNestedFunc types a call of one of nestedFuncs over bound args.
func (b *binder) typeNestedFunc(name string, args []Scalar, pos int) (Scalar, error) {
	noFunc := func() error {
		return pgerr.New(pgerr.UndefinedFunction, "function %s(%s) does not exist", name, argTypes(args)).WithPosition(pos).
			WithHint("docs/sql.md lists the functions over arrays, maps and JSON strings and the arguments they take.")
	}
	nargs := func(min, max int) error {
		if len(args) < min || len(args) > max {
			return noFunc()
		}
		return nil
	}
	// array makes argument i an array (an untyped literal is read as
	// one of elem, or of text), and returns its type.
	array := func(i int, elem catalog.Type) (catalog.Type, error) {
		t := args[i].Type()
		if t.IsArray() {
			return t, nil
		}
		if !isUntyped(args[i]) {
			return 0, noFunc()
		}
		if elem == catalog.Unknown {
			elem = catalog.Varchar
		}
		c, err := b.coerce(args[i], catalog.ArrayOf(elem), pos, "argument of "+name)
		if err != nil {
			return 0, err
		}
		args[i] = c
		return c.Type(), nil
	}
	// to coerces argument i to t.
	to := func(i int, t catalog.Type) error {
		if args[i].Type() == t {
			return nil
		}
		c, err := b.coerce(args[i], t, pos, "argument of "+name)
		if err != nil {
			return noFunc()
		}
		args[i] = c
		return nil
	}
	// sameArrays makes arguments lo.. arrays of one type.
	sameArrays := func(lo int) (catalog.Type, error) {
		var t catalog.Type
		for i := lo; i < len(args); i++ {
			if at := args[i].Type(); at.IsArray() {
				t = at
				break
			}
		}
		for i := lo; i < len(args); i++ {
			if t == 0 {
				at, err := array(i, catalog.Unknown)
				if err != nil {
					return 0, err
				}
				t = at
				continue
			}
			if args[i].Type() != t {
				if err := to(i, t); err != nil {
					return 0, err
				}
			}
		}
		return t, nil
	}
	call := func(t catalog.Type) (Scalar, error) { return &Call{Name: name, Args: args, T: t}, nil }
	text := catalog.Varchar

	switch name {
	case "array_contains", "array_remove":
		if err := nargs(2, 2); err != nil {
			return nil, err
		}
		t, err := array(0, args[1].Type())
		if err != nil {
			return nil, err
		}
		if err := to(1, t.Elem()); err != nil {
			return nil, err
		}
		if name == "array_contains" {
			return call(catalog.Boolean)
		}
		return call(t)
	case "array_length":
		t, err := array(0, catalog.Unknown)
		if err != nil {
			return nil, err
		}
		_ = t
		return call(catalog.Int)
	case "array_distinct", "array_sort", "array_max", "array_min", "array_join":
		max := 1
		if name == "array_sort" || name == "array_join" {
			max = 2
		}
		if err := nargs(1, max); err != nil {
			return nil, err
		}
		t, err := array(0, catalog.Unknown)
		if err != nil {
			return nil, err
		}
		if len(args) == 2 {
			if err := to(1, text); err != nil {
				return nil, err
			}
		}
		if name != "array_distinct" && t.Elem().HasNested() {
			return nil, pgerr.New(pgerr.UndefinedFunction, "%s takes an array of a primitive type, not %s", strings.ToUpper(name), sqlName(t)).WithPosition(pos)
		}
		switch name {
		case "array_max", "array_min":
			return call(t.Elem())
		case "array_join":
			return call(text)
		}
		return call(t)
	case "array_except", "array_intersect", "array_union", "array_concat":
		if err := nargs(2, 2); err != nil {
			return nil, err
		}
		t, err := sameArrays(0)
		if err != nil {
			return nil, err
		}
		return call(t)
	case "slice":
		if err := nargs(3, 3); err != nil {
			return nil, err
		}
		t, err := array(0, catalog.Unknown)
		if err != nil {
			return nil, err
		}
		for i := 1; i < 3; i++ {
			if err := to(i, catalog.BigInt); err != nil {
				return nil, err
			}
		}
		return call(t)
	case "map_keys", "map_values":
		if err := nargs(1, 1); err != nil {
			return nil, err
		}
		t := args[0].Type()
		if !t.IsMap() {
			return nil, noFunc()
		}
		if name == "map_keys" {
			return call(catalog.ArrayOf(t.Key()))
		}
		if t.Value().IsArray() {
			return nil, pgerr.New(pgerr.FeatureNotSupported, "MAP_VALUES of %s would be an array of arrays, which basin does not have", sqlName(t)).WithPosition(pos)
		}
		return call(catalog.ArrayOf(t.Value()))
	case "map_union":
		if err := nargs(2, 2); err != nil {
			return nil, err
		}
		var t catalog.Type
		for _, a := range args {
			if a.Type().IsMap() {
				t = a.Type()
			}
		}
		if t == 0 {
			return nil, noFunc()
		}
		for i := range args {
			if err := to(i, t); err != nil {
				return nil, err
			}
		}
		return call(t)
	case "as_map":
		if err := nargs(2, 2); err != nil {
			return nil, err
		}
		if _, err := array(0, text); err != nil {
			return nil, err
		}
		if err := to(0, catalog.ArrayOf(text)); err != nil {
			return nil, err
		}
		vt, err := array(1, catalog.Unknown)
		if err != nil {
			return nil, err
		}
		m, merr := nestedType(catalog.MapOf(text, vt.Elem()))
		if merr != nil {
			return nil, merr.WithPosition(pos)
		}
		return call(m)
	case "as_value":
		if err := nargs(1, 1); err != nil {
			return nil, err
		}
		t := args[0].Type()
		if t == catalog.Unknown {
			t = text
			if err := to(0, t); err != nil {
				return nil, err
			}
		}
		return call(t)
	case "entries":
		if err := nargs(2, 2); err != nil {
			return nil, err
		}
		t := args[0].Type()
		if !t.IsMap() {
			return nil, noFunc()
		}
		if err := to(1, catalog.Boolean); err != nil {
			return nil, err
		}
		st, serr := nestedType(catalog.StructOf([]catalog.Field{{Name: "k", Type: t.Key()}, {Name: "v", Type: t.Value()}}))
		if serr != nil {
			return nil, serr.WithPosition(pos)
		}
		return call(catalog.ArrayOf(st))
	case "extractjsonfield", "json_array_contains", "json_array_length", "json_concat", "json_keys",
		"json_records", "json_items", "is_json_string":
		min, max := 1, 1
		switch name {
		case "extractjsonfield", "json_array_contains":
			min, max = 2, 2
		case "json_concat":
			min, max = 2, -1
		}
		if len(args) < min || max >= 0 && len(args) > max {
			return nil, noFunc()
		}
		for i := range args {
			if name == "json_array_contains" && i == 1 {
				if args[1].Type().HasNested() || args[1].Type().IsArray() {
					return nil, noFunc()
				}
				continue
			}
			if err := to(i, text); err != nil {
				return nil, err
			}
		}
		switch name {
		case "json_array_contains", "is_json_string":
			return call(catalog.Boolean)
		case "json_array_length":
			return call(catalog.Int)
		case "json_keys", "json_items":
			return call(catalog.ArrayOf(text))
		case "json_records":
			m, _ := catalog.MapOf(text, text)
			return call(m)
		}
		return call(text)
	case "to_json_string":
		if err := nargs(1, 1); err != nil {
			return nil, err
		}
		if args[0].Type() == catalog.Unknown {
			if err := to(0, text); err != nil {
				return nil, err
			}
		}
		return call(text)
	case ExplodeFunc:
		if err := nargs(1, 1); err != nil {
			return nil, err
		}
		if !b.explode {
			return nil, pgerr.New(pgerr.FeatureNotSupported, "EXPLODE is a table function: it stands alone in the select list of a derived stream or of a query").WithPosition(pos).
				WithHint("CREATE STREAM s AS SELECT id, EXPLODE(items) AS item FROM t; a view cannot explode.")
		}
		t, err := array(0, catalog.Unknown)
		if err != nil {
			return nil, err
		}
		return call(t.Elem())
	case StructFunc:
		if len(args)%2 != 0 {
			return nil, noFunc()
		}
		var fields []catalog.Field
		seen := map[string]bool{}
		for i := 0; i < len(args); i += 2 {
			n, _ := args[i].(*Const)
			if n == nil {
				return nil, noFunc()
			}
			fname, _ := n.V.(string)
			if fname == "" {
				return nil, noFunc()
			}
			if seen[fname] {
				return nil, pgerr.New(pgerr.DuplicateColumn, "field %q specified more than once", fname).WithPosition(pos)
			}
			seen[fname] = true
			if isUntyped(args[i+1]) || args[i+1].Type() == catalog.Unknown {
				if err := to(i+1, text); err != nil {
					return nil, err
				}
			}
			ft := args[i+1].Type()
			if !ft.Storable() {
				return nil, pgerr.New(pgerr.FeatureNotSupported, "a STRUCT field of type %s is not supported", sqlName(ft)).WithPosition(pos)
			}
			fields = append(fields, catalog.Field{Name: fname, Type: ft})
		}
		t, serr := nestedType(catalog.StructOf(fields))
		if serr != nil {
			return nil, serr.WithPosition(pos)
		}
		vals := make([]Scalar, 0, len(args)/2)
		for i := 1; i < len(args); i += 2 {
			vals = append(vals, args[i])
		}
		return &Call{Name: name, Args: vals, T: t}, nil
	case MapFunc:
		if len(args)%2 != 0 || len(args) == 0 {
			return nil, noFunc()
		}
		var vals []Scalar
		for i := 0; i < len(args); i += 2 {
			if err := to(i, text); err != nil {
				return nil, err
			}
			vals = append(vals, args[i+1])
		}
		vt, err := commonArgs(vals)
		if err != nil {
			return nil, pgerr.Wrap(err, pgerr.DatatypeMismatch).WithPosition(pos)
		}
		if vt == catalog.Unknown {
			vt = text
		}
		for i := 1; i < len(args); i += 2 {
			if err := to(i, vt); err != nil {
				return nil, err
			}
		}
		m, merr := nestedType(catalog.MapOf(text, vt))
		if merr != nil {
			return nil, merr.WithPosition(pos)
		}
		return call(m)
	}
	return nil, noFunc()
}

// nestedType is a composite type catalog made, or its error with a
// SQLSTATE.
func nestedType(t catalog.Type, err error) (catalog.Type, *pgerr.Error) {
	if err == nil {
		return t, nil
	}
	return 0, nestedErr(err)
}

func nestedErr(err error) *pgerr.Error {
	if strings.Contains(err.Error(), "nested deeper") {
		return pgerr.New(pgerr.StatementTooComplex, "%s", strings.TrimPrefix(err.Error(), "catalog: "))
	}
	return pgerr.New(pgerr.FeatureNotSupported, "%s", strings.TrimPrefix(err.Error(), "catalog: "))
}
