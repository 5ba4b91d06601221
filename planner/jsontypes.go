package planner

import (
	"strconv"

	"github.com/cockroachdb/apd/v3"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/jsonb"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/pgcodec"
)

// Binding of the operators, casts and functions of uuid, jsonb, json
// and bytea. Both binders call in here: the fast path's bindBinary and
// castable, and the relational engine through them.

// jsonTypes are json and jsonb.
func isJSONType(t catalog.Type) bool { return t == catalog.JSONB || t == catalog.JSON }

// jsonOps are the operators over json values; the value says whether
// json has it too (jsonb has them all).
var jsonOps = map[string]bool{
	"->": true, "->>": true, "#>": true, "#>>": true,
	"@>": false, "<@": false, "?": false, "?|": false, "?&": false, "#-": false,
}

// bindBlobBinary binds the operators of these types: the json
// operators, || over jsonb and bytea, and the comparisons json lacks.
// ok is false for an operator it leaves to bindBinary.
func (b *binder) bindBlobBinary(op string, l, r Scalar, pos int) (s Scalar, ok bool, err error) {
	lt, rt := l.Type(), r.Type()
	if jsonOnly, isJSONOp := jsonOps[op]; isJSONOp {
		s, err := b.bindJSONOp(op, jsonOnly, l, r, pos)
		return s, true, err
	}
	switch {
	case op == "-" && lt == catalog.JSONB:
		// jsonb - text, jsonb - text[], jsonb - integer: deletion.
		switch rt := r.Type(); {
		case rt == catalog.Int || rt == catalog.BigInt:
			r, err = b.coerce(r, catalog.BigInt, pos, op)
		case rt == catalog.ArrayOf(catalog.Varchar):
		case rt == catalog.Varchar || isUntyped(r):
			r, err = b.coerce(r, catalog.Varchar, pos, op)
		default:
			return nil, true, opError(op, l, r, pos)
		}
		if err != nil {
			return nil, true, err
		}
		return &Binary{Op: "-", L: l, R: r, T: catalog.JSONB}, true, nil
	case comparisonOps[op] || op == "IS DISTINCT FROM" || op == "IS NOT DISTINCT FROM":
		if lt == catalog.JSON || rt == catalog.JSON {
			// json has no equality or order (jsonb has both).
			return nil, true, opError(op, l, r, pos)
		}
	case op == "||":
		for _, t := range []catalog.Type{catalog.JSONB, catalog.Bytea} {
			if (lt == t || rt == t) && (lt == t || isUntyped(l)) && (rt == t || isUntyped(r)) {
				if l, err = b.coerce(l, t, pos, op); err != nil {
					return nil, true, err
				}
				if r, err = b.coerce(r, t, pos, op); err != nil {
					return nil, true, err
				}
				return &Binary{Op: "||", L: l, R: r, T: t}, true, nil
			}
		}
	}
	return nil, false, nil
}

func isUntyped(s Scalar) bool { return s.Type() == catalog.Unknown || isUntypedLiteral(s) }

// bindJSONOp binds one of jsonOps. The left operand must be jsonb (or
// json, for the access operators): an untyped literal on the left is
// ambiguous to Postgres too.
func (b *binder) bindJSONOp(op string, jsonToo bool, l, r Scalar, pos int) (Scalar, error) {
	lt := l.Type()
	switch {
	case lt == catalog.JSONB, lt == catalog.JSON && jsonToo:
	case isUntyped(l) && op != "<@":
		rn := sqlName(r.Type())
		if isUntyped(r) {
			rn = "unknown"
		}
		return nil, pgerr.New(pgerr.AmbiguousFunction, "operator is not unique: unknown %s %s", op, rn).WithPosition(pos).
			WithHint("Could not choose a best candidate operator. You might need to add explicit type casts.")
	case op == "<@" && isUntyped(l) && r.Type() == catalog.JSONB:
		lt = catalog.JSONB
	default:
		return nil, opError(op, l, r, pos)
	}
	var err error
	switch op {
	case "->", "->>":
		switch rt := r.Type(); {
		case rt == catalog.Int || rt == catalog.BigInt:
			if r, err = b.coerce(r, catalog.BigInt, pos, op); err != nil {
				return nil, err
			}
		case rt == catalog.Varchar || isUntyped(r):
			if r, err = b.coerce(r, catalog.Varchar, pos, op); err != nil {
				return nil, err
			}
		default:
			return nil, opError(op, l, r, pos)
		}
		t := lt
		if op == "->>" {
			t = catalog.Varchar
		}
		return &Binary{Op: op, L: l, R: r, T: t}, nil
	case "#>", "#>>", "?|", "?&", "#-":
		if r, err = b.textArray(r, op, l, pos); err != nil {
			return nil, err
		}
		t := lt
		switch op {
		case "#-":
			if lt != catalog.JSONB {
				return nil, opError(op, l, r, pos)
			}
		case "#>>":
			t = catalog.Varchar
		case "?|", "?&":
			t = catalog.Boolean
		}
		return &Binary{Op: op, L: l, R: r, T: t}, nil
	case "?":
		if r.Type() != catalog.Varchar && !isUntyped(r) {
			return nil, opError(op, l, r, pos)
		}
		if r, err = b.coerce(r, catalog.Varchar, pos, op); err != nil {
			return nil, err
		}
		return &Binary{Op: op, L: l, R: r, T: catalog.Boolean}, nil
	}
	// @> and <@: jsonb on both sides.
	if r.Type() != catalog.JSONB && !isUntyped(r) {
		return nil, opError(op, l, r, pos)
	}
	if l, err = b.coerce(l, catalog.JSONB, pos, op); err != nil {
		return nil, err
	}
	if r, err = b.coerce(r, catalog.JSONB, pos, op); err != nil {
		return nil, err
	}
	return &Binary{Op: op, L: l, R: r, T: catalog.Boolean}, nil
}

// textArray coerces the right operand of #>, #>>, ?| and ?& to text[]:
// a literal '{a,b}' is read as an array, as Postgres reads it.
func (b *binder) textArray(r Scalar, op string, l Scalar, pos int) (Scalar, error) {
	at := catalog.ArrayOf(catalog.Varchar)
	switch x := r.(type) {
	case *Const:
		if x.V == nil {
			return &Const{T: at}, nil
		}
		if s, ok := x.V.(string); ok && x.T == catalog.Varchar {
			v, err := pgcodec.ParseArray(s, at, nil)
			if err != nil {
				return nil, pgerr.Wrap(err, pgerr.InvalidTextRepresentation).WithPosition(pos)
			}
			return &Const{V: v, T: at}, nil
		}
	case *ParamRef:
		if x.T == catalog.Unknown {
			if b.params != nil {
				b.params.Types[x.N] = at
			}
			return &ParamRef{N: x.N, T: at}, nil
		}
	}
	if r.Type() != at {
		return nil, opError(op, l, r, pos)
	}
	return r, nil
}

// blobCastable reports the explicit casts between these types and the
// others beyond text's: json and jsonb both ways, and jsonb scalars to
// numbers and booleans (Postgres 15's casts).
func blobCastable(from, to catalog.Type) bool {
	switch {
	case isJSONType(from) && isJSONType(to):
		return true
	case from == catalog.JSONB:
		return to.Numeric() || to == catalog.Boolean || to == catalog.Decimal
	}
	return false
}

// formatBlob is FormatValue for these types' values; "" for any other.
func formatBlob(v any) string {
	switch v := v.(type) {
	case catalog.UUIDVal:
		return pgcodec.FormatUUID(v)
	case catalog.JSONText:
		return string(v)
	case []byte:
		return pgcodec.FormatBytea(v)
	}
	return ""
}

// convertBlob is ConvertValue from these types' values (text inputs are
// CastText's); ok is false for another value.
func convertBlob(v any, t catalog.Type) (any, bool, error) {
	switch x := v.(type) {
	case catalog.UUIDVal:
		if t == catalog.UUID {
			return x, true, nil
		}
	case []byte:
		if t == catalog.Bytea {
			return x, true, nil
		}
	case catalog.JSONText:
		switch t {
		case catalog.JSON:
			return x, true, nil
		case catalog.JSONB:
			c, err := jsonb.Canonical(string(x))
			return catalog.JSONText(c), true, err
		case catalog.Int, catalog.BigInt, catalog.Double, catalog.Boolean, catalog.Decimal:
			out, err := jsonbScalar(x, t)
			return out, true, err
		}
	default:
		return nil, false, nil
	}
	if t == catalog.Varchar {
		return formatBlob(v), true, nil
	}
	return nil, true, pgerr.New(pgerr.CannotCoerce, "cannot cast type %s to %s", sqlName(blobType(v)), sqlName(t))
}

func blobType(v any) catalog.Type {
	switch v.(type) {
	case catalog.UUIDVal:
		return catalog.UUID
	case []byte:
		return catalog.Bytea
	}
	return catalog.JSONB
}

// jsonbScalar is Postgres 15's cast of a jsonb number to a number type
// (numeric's rounding, half away from zero, for the integers) and of a
// jsonb boolean to boolean.
func jsonbScalar(x catalog.JSONText, t catalog.Type) (any, error) {
	v, err := jsonb.Parse(string(x))
	if err != nil {
		return nil, err
	}
	want := jsonb.Number
	if t == catalog.Boolean {
		want = jsonb.Bool
	}
	if v.Kind != want {
		return nil, pgerr.New(pgerr.InvalidParameterValue, "cannot cast jsonb %s to type %s", v.Kind, sqlName(t))
	}
	switch t {
	case catalog.Boolean:
		return v.Bool, nil
	case catalog.Decimal:
		d, ok := catalog.NewDecimal(v.Str)
		if !ok {
			return nil, pgerr.New(pgerr.InvalidTextRepresentation, "invalid input syntax for type numeric: %q", v.Str)
		}
		return d, nil
	case catalog.Double:
		f, err := strconv.ParseFloat(v.Str, 64)
		if err != nil {
			return nil, pgerr.New(pgerr.NumericValueOutOfRange, "value out of range: overflow")
		}
		return f, nil
	}
	d, ok := catalog.NewDecimal(v.Str)
	if !ok {
		return nil, pgerr.New(pgerr.InvalidTextRepresentation, "invalid input syntax for type numeric: %q", v.Str)
	}
	var r apd.Decimal
	if _, err := apd.BaseContext.WithPrecision(1000).Quantize(&r, d, 0); err != nil {
		return nil, pgerr.New(pgerr.NumericValueOutOfRange, "%s out of range", typeWord(t))
	}
	n, err := r.Int64()
	if err != nil || t == catalog.Int && (n > 1<<31-1 || n < -1<<31) {
		return nil, pgerr.New(pgerr.NumericValueOutOfRange, "%s out of range", typeWord(t))
	}
	return n, nil
}

// checkKeyTypes refuses json, jsonb and array key columns: their values
// have no key encoding (equal jsonb values may be written differently,
// json has no equality at all, and arrays are a view's aggregates).
func checkKeyTypes(cols []catalog.Column) error {
	for _, c := range cols {
		if c.Key && c.Type.IsNested() {
			return pgerr.New(pgerr.FeatureNotSupported, "key column %q has type %s, which cannot be a key", c.Name, sqlName(c.Type)).
				WithHint("Key by a column of another type, or by a field or entry of it such as %s->name.", c.Name)
		}
		if c.Key && c.Type.Subscriptable() {
			return pgerr.New(pgerr.FeatureNotSupported, "key column %q has type %s, which cannot be a key", c.Name, sqlName(c.Type)).
				WithHint("Key by a column of another type, or by an expression such as array_to_string(%s, ',').", c.Name)
		}
		if c.Key && isJSONType(c.Type) {
			return pgerr.New(pgerr.FeatureNotSupported, "key column %q has type %s, which cannot be a key", c.Name, sqlName(c.Type)).
				WithHint("Key by a column of another type, or by an expression such as (%s->>'id').", c.Name)
		}
	}
	return nil
}
