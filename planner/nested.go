package planner

import (
	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/jsonb"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/pgcodec"
	"github.com/basindb/basin/sql"
)

// Casts of the nested types: STRUCT, MAP and arrays of them. Postgres
// has none of these types, and clients see them as jsonb (pgcodec
// nested.go), so they convert to and from what a client can write and
// read: jsonb, json and text (JSON text) become a STRUCT or MAP by
// pgcodec.FromJSONB, and a STRUCT or MAP becomes jsonb, json or text as
// the wire shows it. An untyped literal ('{"a": 1}') or a NULL takes a
// nested type from its context, as it takes any other; a parameter is
// sent as jsonb. A STRUCT, MAP or array casts to another of its kind as
// ksqlDB's CAST does (shapeCastable); nothing else converts to or from
// them.

// nestedCastable reports whether a cast from one type to the other
// exists when either is nested.
func nestedCastable(from, to catalog.Type) bool {
	textual := func(t catalog.Type) bool {
		return t == catalog.Varchar || t == catalog.JSONB || t == catalog.JSON || t == catalog.Unknown
	}
	if from == to || to.HasNested() && textual(from) || from.HasNested() && textual(to) && to != catalog.Unknown {
		return true
	}
	return shapeCastable(from, to, 0)
}

// shapeCastable reports whether a value of type from converts to type
// to field by field, as ksqlDB's CAST converts structs, maps and arrays:
// a STRUCT to a STRUCT (the target's fields taken from the source's of
// the same name, NULL where it has none), a MAP to a MAP and an array to
// an array (each value converted), and the scalars inside as casts
// convert them.
func shapeCastable(from, to catalog.Type, depth int) bool {
	if depth > catalog.MaxNestingDepth {
		return false
	}
	switch {
	case from == to:
		return true
	case from.IsStruct() && to.IsStruct():
		for _, f := range to.Fields() {
			if i := fieldByName(from, f.Name); i >= 0 && !shapeCastable(from.Fields()[i].Type, f.Type, depth+1) {
				return false
			}
		}
		return true
	case from.IsMap() && to.IsMap():
		return shapeCastable(from.Value(), to.Value(), depth+1)
	case from.IsArray() && to.IsArray():
		return shapeCastable(from.Elem(), to.Elem(), depth+1)
	case from.HasNested() || to.HasNested() || from.IsArray() || to.IsArray():
		return false
	}
	return castable(from, to) && !IsDatetime(from) && !IsDatetime(to) || from == catalog.Unknown
}

// fieldByName is the index of STRUCT t's field named exactly name, or
// -1: a cast matches field names as ksqlDB's does, case and all.
func fieldByName(t catalog.Type, name string) int {
	for i, f := range t.Fields() {
		if f.Name == name {
			return i
		}
	}
	return -1
}

// convertShape converts v of type from to type to (shapeCastable).
func convertShape(v any, from, to catalog.Type) (any, error) {
	if v == nil || from == to {
		return v, nil
	}
	switch {
	case to.IsStruct():
		src := v.(catalog.Struct)
		out := make(catalog.Struct, len(to.Fields()))
		for i, f := range to.Fields() {
			j := fieldByName(from, f.Name)
			if j < 0 {
				continue
			}
			x, err := convertShape(src[j], from.Fields()[j].Type, f.Type)
			if err != nil {
				return nil, err
			}
			out[i] = x
		}
		return out, nil
	case to.IsMap():
		src := v.(catalog.Map)
		out := make(catalog.Map, len(src))
		for i, e := range src {
			x, err := convertShape(e.Value, from.Value(), to.Value())
			if err != nil {
				return nil, err
			}
			out[i] = catalog.MapEntry{Key: e.Key, Value: x}
		}
		return out, nil
	case to.IsArray():
		src := v.([]any)
		out := make([]any, len(src))
		for i, e := range src {
			x, err := convertShape(e, from.Elem(), to.Elem())
			if err != nil {
				return nil, err
			}
			out[i] = x
		}
		return out, nil
	}
	return ConvertValue(v, to)
}

// castNested is castTo where x's type or t is nested.
func castNested(x Scalar, t catalog.Type, pos int) (Scalar, error) {
	from := x.Type()
	if from == t {
		return x, nil
	}
	if !nestedCastable(from, t) {
		return nil, pgerr.New(pgerr.CannotCoerce, "cannot cast type %s to %s", sqlName(from), sqlName(t)).WithPosition(pos)
	}
	switch x := x.(type) {
	case *Const:
		if x.V == nil {
			return &Const{T: t}, nil
		}
		v, err := ConvertNested(x.V, from, t)
		if err != nil {
			return nil, pgerr.Wrap(err, pgerr.InvalidTextRepresentation).WithPosition(pos)
		}
		return &Const{V: v, T: t}, nil
	case *ParamRef:
		if x.T == catalog.Unknown {
			return &Cast{X: &ParamRef{N: x.N, T: catalog.JSONB}, T: t}, nil
		}
	}
	return &Cast{X: x, T: t}, nil
}

// coerceNested is coerce where s's type or t is nested: only what
// Postgres converts implicitly, NULL and untyped literals and
// parameters.
func (b *binder) coerceNested(s Scalar, t catalog.Type, pos int, what string) (Scalar, error) {
	st := s.Type()
	switch x := s.(type) {
	case *Const:
		if x.V == nil || isUntypedLiteral(x) && t.HasNested() {
			return castNested(x, t, pos)
		}
	case *ParamRef:
		if t.HasNested() {
			if b.params != nil {
				if pt, ok := b.params.Types[x.N]; !ok || pt == catalog.Unknown {
					b.params.Types[x.N] = catalog.JSONB
				}
			}
			return &Cast{X: &ParamRef{N: x.N, T: catalog.JSONB}, T: t}, nil
		}
	}
	if st == catalog.Unknown {
		return &Cast{X: s, T: t}, nil
	}
	return nil, pgerr.New(pgerr.DatatypeMismatch, "%s: expected %s, found %s", what, sqlName(t), sqlName(st)).WithPosition(pos)
}

// ConvertNested converts a non-NULL value of type from to type to,
// either of them nested (see nestedCastable).
func ConvertNested(v any, from, to catalog.Type) (any, error) {
	if from.HasNested() && to.HasNested() || from.IsArray() && to.IsArray() {
		return convertShape(v, from, to)
	}
	if to.HasNested() {
		var text string
		switch x := v.(type) {
		case string:
			text = x
		case catalog.JSONText:
			text = string(x)
		default:
			return v, nil // already of the type
		}
		j, err := jsonb.Parse(text)
		if err != nil {
			return nil, err
		}
		out, err := pgcodec.FromJSONB(to, j)
		if err != nil {
			return nil, pgerr.Wrap(err, pgerr.InvalidTextRepresentation)
		}
		return out, nil
	}
	j, err := pgcodec.NestedJSONB(from, v)
	if err != nil {
		return nil, err
	}
	if to == catalog.Varchar {
		return j.Text(), nil
	}
	return catalog.JSONText(j.Text()), nil
}

// bindDeref binds ksqlDB's s->field, l -> e.R with l the bound left
// operand, a STRUCT (field a name, quoted or not, or a string): the
// field, as (s).field reads it.
func (b *binder) bindDeref(e *sql.Binary, l Scalar) (Scalar, error) {
	var name string
	switch r := e.R.(type) {
	case *sql.ColumnRef:
		if r.Table != "" {
			return nil, pgerr.New(pgerr.SyntaxError, "a struct field is one name, not %s.%s", r.Table, r.Name).WithPosition(r.Pos)
		}
		name = r.Name
	case *sql.Literal:
		name, _ = r.Value.(string)
	}
	if name == "" {
		return nil, pgerr.New(pgerr.UndefinedFunction, "operator does not exist: %s -> %s", sqlName(l.Type()), "expression").
			WithPosition(e.Pos).WithHint("A STRUCT's field is named after ->: %s->name.", sql.FormatExpr(e.L))
	}
	return structField(l, name, e.R.Position())
}

// structField is field name of STRUCT x.
func structField(x Scalar, name string, pos int) (Scalar, error) {
	t := x.Type()
	i := t.FieldIndex(name)
	if i < 0 {
		return nil, pgerr.New(pgerr.UndefinedColumn, "field %q does not exist in %s", name, sqlName(t)).WithPosition(pos)
	}
	f := t.Fields()[i]
	return &FieldOp{X: x, Idx: i, Name: f.Name, T: f.Type}, nil
}
