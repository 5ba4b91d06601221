package planner

import (
	"math"

	"github.com/cockroachdb/apd/v3"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/numeric"
	"github.com/basindb/basin/internal/pgerr"
)

// numericRank orders the number types by Postgres's implicit casts:
// integer → bigint → numeric → double precision. Mixed operands meet at
// the higher one, so int * numeric is numeric and numeric * double is
// double.
func numericRank(t catalog.Type) int {
	switch t {
	case catalog.Int:
		return 1
	case catalog.BigInt:
		return 2
	case catalog.Decimal:
		return 3
	case catalog.Double:
		return 4
	}
	return 0
}

// commonNumeric is the type two number types compute in. Two integers
// compute in bigint (basin has no int4 arithmetic of its own).
func commonNumeric(lt, rt catalog.Type) catalog.Type {
	t := lt
	if numericRank(rt) > numericRank(lt) {
		t = rt
	}
	if t == catalog.Int {
		return catalog.BigInt
	}
	return t
}

// convertDecimal is ConvertValue's part for NUMERIC: to it from numbers
// and text, from it to numbers and text. ok is false when neither v
// nor t is a numeric.
func convertDecimal(v any, t catalog.Type) (out any, ok bool, err error) {
	if d, isDec := v.(*apd.Decimal); isDec {
		switch t {
		case catalog.Decimal:
			return d, true, nil
		case catalog.Int:
			n, err := numeric.Int64(d, "integer", math.MinInt32, math.MaxInt32)
			return n, true, err
		case catalog.BigInt:
			n, err := numeric.Int64(d, "bigint", math.MinInt64, math.MaxInt64)
			return n, true, err
		case catalog.Double:
			return numeric.Float64(d), true, nil
		case catalog.Varchar:
			return numeric.Text(d), true, nil
		}
		return nil, true, pgerr.New(pgerr.CannotCoerce, "cannot cast type numeric to %s", sqlName(t))
	}
	if t != catalog.Decimal {
		return nil, false, nil
	}
	switch v := v.(type) {
	case int64:
		return numeric.FromInt64(v), true, nil
	case float64:
		return numeric.FromFloat64(v), true, nil
	case string:
		d, err := numeric.Parse(v)
		return d, true, err
	case bool:
		return nil, true, pgerr.New(pgerr.CannotCoerce, "cannot cast type boolean to numeric")
	}
	return nil, false, nil
}

// ConvertTypmod is ConvertValue to NUMERIC(precision, scale): the value
// rounded to the scale, or 22003 when it has too many digits.
// precision 0 is ConvertValue.
func ConvertTypmod(v any, t catalog.Type, precision, scale int) (any, error) {
	out, err := ConvertValue(v, t)
	if err != nil || precision <= 0 || t != catalog.Decimal {
		return out, err
	}
	return numeric.ApplyTypmod(out.(*apd.Decimal), precision, scale)
}

// castTypmod applies a cast's NUMERIC(p,s) modifiers to x, already of
// type numeric: folded for constants, else a Cast that carries them.
func castTypmod(x Scalar, precision, scale, pos int) (Scalar, error) {
	if precision <= 0 || x.Type() != catalog.Decimal {
		return x, nil
	}
	if c, ok := x.(*Const); ok {
		if c.V == nil {
			return c, nil
		}
		v, err := ConvertTypmod(c.V, catalog.Decimal, precision, scale)
		if err != nil {
			if pe, ok := pgerr.As(err); ok {
				return nil, pe.WithPosition(pos)
			}
			return nil, err
		}
		return &Const{V: v, T: catalog.Decimal}, nil
	}
	if p, ok := x.(*ParamRef); ok {
		// A parameter is converted to numeric when bound; its modifiers
		// apply after.
		return &Cast{X: p, T: catalog.Decimal, Precision: precision, Scale: scale}, nil
	}
	return &Cast{X: x, T: catalog.Decimal, Precision: precision, Scale: scale}, nil
}

// numericFuncs are the functions with a numeric overload: given a
// numeric first argument they compute exactly and return numeric.
var numericFuncs = map[string]int{ // name → most arguments
	"round": 2, "trunc": 2, "abs": 1, "ceil": 1, "ceiling": 1, "floor": 1, "sign": 1,
}

// bindNumericFunc binds round(numeric [, int]), trunc, abs, ceil,
// floor and sign over a numeric argument; ok is false for any other
// call, which binds as before.
func bindNumericFunc(name string, args []Scalar, pos int) (s Scalar, ok bool, err error) {
	most, known := numericFuncs[name]
	if !known || len(args) == 0 || len(args) > most || args[0].Type() != catalog.Decimal {
		return nil, false, nil
	}
	if len(args) == 2 {
		if args[1], err = castTo(args[1], catalog.BigInt, pos); err != nil {
			return nil, true, err
		}
	}
	return &Call{Name: name, Args: args, T: catalog.Decimal}, true, nil
}

// negateConst is -c for a numeric constant.
func negateDecimal(v *apd.Decimal) *apd.Decimal { return numeric.Neg(v) }

// checkKafkaKeyTypes refuses a NUMERIC key column under key_format
// 'kafka': Kafka's serializers have no decimal (ksqlDB refuses it too).
func checkKafkaKeyTypes(r *catalog.Relation) error {
	if r.KeyFormat != FormatKafka {
		return nil
	}
	for _, c := range r.Schema.Columns {
		if c.Key && c.Type == catalog.Decimal {
			return pgerr.New(pgerr.FeatureNotSupported, "key column %s is NUMERIC, which key_format 'kafka' cannot hold", c.Name).
				WithHint("Use WITH (key_format = 'json') for a NUMERIC key.")
		}
	}
	return nil
}

// avgType is avg's result type, as Postgres's: numeric for integers and
// numerics (the exact mean, with numeric division's scale), double
// precision for doubles.
func avgType(arg catalog.Type) catalog.Type {
	switch arg {
	case catalog.Int, catalog.BigInt, catalog.Decimal:
		return catalog.Decimal
	}
	return catalog.Double
}

// castParam is $n::t for a parameter nothing typed before: the
// parameter takes type t (ParameterDescription says so), and the cast
// stays a typed expression, so that $1::numeric * 2 computes in numeric
// rather than letting the untyped parameter take the other side's type.
func (b *binder) castParam(p *ParamRef) Scalar {
	b.noteParam(p.N, p.T)
	return &Cast{X: p, T: p.T}
}

// kafkaKeys reports whether key_format 'kafka' can hold every key
// column of cols (a NUMERIC key cannot: a view grouped by one is keyed
// in JSON unless told otherwise).
func kafkaKeys(cols []catalog.Column) bool {
	for _, c := range cols {
		if c.Key && !kafkaKeyType(c.Type) {
			return false
		}
	}
	return true
}
