package eval

// NUMERIC in expressions: the operators, comparisons with the other
// number types, and the numeric overloads of round, trunc, abs, ceil,
// floor and sign. The arithmetic itself is internal/numeric's.

import (
	"github.com/cockroachdb/apd/v3"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/numeric"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/planner"
	"github.com/basindb/basin/sql"
)

// decimalOp is BinaryOp for operands the planner coerced to numeric.
func decimalOp(op string, a, b any) (any, error) {
	x, okx := a.(*apd.Decimal)
	y, oky := b.(*apd.Decimal)
	if !okx || !oky {
		return nil, pgerr.New(pgerr.DatatypeMismatch, "operator %s: expected numeric operands, got %T and %T", op, a, b)
	}
	switch op {
	case "+":
		return numeric.Add(x, y)
	case "-":
		return numeric.Sub(x, y)
	case "*":
		return numeric.Mul(x, y)
	case "/":
		return numeric.Div(x, y)
	case "%":
		return numeric.Mod(x, y)
	}
	return nil, pgerr.New(pgerr.UndefinedFunction, "operator does not exist: numeric %s numeric", op)
}

// compareDecimal orders a numeric against another value: exactly against
// numerics and integers, as float8 against a double (Postgres casts the
// numeric to float8 there). ok is false when a is no numeric.
func compareDecimal(a, b any) (c int, ok bool) {
	x, isDec := a.(*apd.Decimal)
	if !isDec {
		if y, bDec := b.(*apd.Decimal); bDec {
			if c, ok := compareDecimal(y, a); ok {
				return -c, true
			}
		}
		return 0, false
	}
	switch y := b.(type) {
	case *apd.Decimal:
		return numeric.Cmp(x, y), true
	case int64:
		return numeric.Cmp(x, numeric.FromInt64(y)), true
	case float64:
		return compareFloat(numeric.Float64(x), y), true
	}
	return 0, false
}

func init() {
	for name := range map[string]bool{"round": true, "trunc": true, "abs": true, "ceil": true, "ceiling": true, "floor": true, "sign": true} {
		strictFuncs[name] = withDecimal(name, strictFuncs[name])
	}
}

// withDecimal wraps a math function so that a numeric argument takes
// the numeric overload (the planner typed the call numeric) and any
// other the function as it was.
func withDecimal(name string, other func(catalog.Type, []any) (any, error)) func(catalog.Type, []any) (any, error) {
	return func(t catalog.Type, a []any) (any, error) {
		x, ok := a[0].(*apd.Decimal)
		if !ok {
			if other == nil {
				return nil, pgerr.New(pgerr.UndefinedFunction, "function %s does not exist", name)
			}
			return other(t, a)
		}
		n := 0
		if len(a) > 1 {
			n64, _ := a[1].(int64)
			n = int(max(min(n64, 1<<20), -1<<20))
		}
		switch name {
		case "round":
			return numeric.Round(x, n), nil
		case "trunc":
			return numeric.Trunc(x, n), nil
		case "abs":
			return numeric.Abs(x), nil
		case "ceil", "ceiling":
			return numeric.Ceil(x), nil
		case "floor":
			return numeric.Floor(x), nil
		}
		return numeric.SignOf(x), nil
	}
}

// decimalSum adds v, a numeric, to a running sum (nil: none yet).
func decimalSum(sum any, v *apd.Decimal, sign int64) any {
	if sign < 0 {
		v = numeric.Neg(v)
	}
	s, ok := sum.(*apd.Decimal)
	if !ok {
		// No sum yet; or a float sum an avg's state held before avg of
		// integers was numeric, carried on exactly from its value.
		f, isFloat := sum.(float64)
		if !isFloat {
			return v
		}
		s = numeric.FromFloat64(f)
	}
	out, err := numeric.Add(s, v)
	if err != nil {
		return s // beyond numeric's range; cannot happen with stored values
	}
	return out
}

// decimalAvg is avg's result: the sum over the count, with numeric
// division's scale, as Postgres's numeric_avg.
func decimalAvg(sum any, n int64) any {
	s, ok := sum.(*apd.Decimal)
	if !ok {
		s = numeric.Zero
		if f, isFloat := sum.(float64); isFloat {
			s = numeric.FromFloat64(f)
		}
	}
	out, err := numeric.Div(s, numeric.FromInt64(n))
	if err != nil {
		return nil
	}
	return out
}

// toDecimal is an avg argument as a numeric: integers exactly, doubles
// as float8 to numeric casts them.
func toDecimal(v any) *apd.Decimal {
	switch x := v.(type) {
	case *apd.Decimal:
		return x
	case int64:
		return numeric.FromInt64(x)
	case float64:
		return numeric.FromFloat64(x)
	}
	return numeric.NaN
}

// EvalColumnValue evaluates an INSERT value for column c: EvalValue as
// c's type, then fitted to a NUMERIC(p,s) column's modifiers (rounded
// to the scale, or 22003 with too many digits), as Postgres stores it.
func EvalColumnValue(e sql.Expr, c catalog.Column, env *Env) (any, error) {
	v, err := EvalValue(e, c.Type, env)
	if err != nil || v == nil || c.Type != catalog.Decimal || c.Precision <= 0 {
		return v, err
	}
	return planner.ConvertTypmod(v, c.Type, c.Precision, c.Scale)
}
