package planner

import (
	"math"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
)

// Overloaded scalar functions. A function with several signatures
// (mod(int, int) and mod(bigint, bigint), to_char over timestamps and
// numbers) lists them as overloads; the call takes the one its
// arguments fit best, as Postgres's function resolution does in the
// cases basin meets: an argument of the parameter's type fits exactly,
// an untyped literal, NULL or parameter fits any type, and an integer
// fits a wider integer or double precision. Among the fitting
// overloads the one with the most exact fits wins, the first listed on
// a tie. When none fits the error is Postgres's 42883 with its hint.

// overload is one signature of a scalar function.
type overload struct {
	// args are the parameter types; with variadic the last repeats.
	args     []catalog.Type
	variadic bool
	// result is the result type; resultArg >= 0 takes the type of
	// that argument instead (after conversion).
	result    catalog.Type
	resultArg int
}

// ov is an overload with a fixed result type.
func ov(result catalog.Type, args ...catalog.Type) overload {
	return overload{args: args, result: result, resultArg: -1}
}

// ovSame is an overload whose result has the type of its first argument.
func ovSame(args ...catalog.Type) overload {
	return overload{args: args, resultArg: 0}
}

func (o overload) param(i int) catalog.Type {
	if i >= len(o.args) {
		return o.args[len(o.args)-1]
	}
	return o.args[i]
}

// fits scores how well args fit o: -1 when they do not, else the
// number of exact fits.
func (o overload) fits(args []Scalar) int {
	if len(args) < len(o.args) && !(o.variadic && len(args) >= len(o.args)-1) || len(args) > len(o.args) && !o.variadic {
		return -1
	}
	score := 0
	for i, a := range args {
		t := o.param(i)
		switch st := a.Type(); {
		case t == catalog.Unknown || st == t || t == catalog.Int && isInt4Literal(a):
			score++
		case st == catalog.Unknown || isUntypedLiteral(a):
		case implicitlyWidens(st, t):
		default:
			return -1
		}
	}
	return score
}

// isInt4Literal reports whether a is an integer constant Postgres would
// type integer: basin types integer literals bigint.
func isInt4Literal(a Scalar) bool {
	c, ok := a.(*Const)
	if !ok || c.T != catalog.BigInt {
		return false
	}
	v, ok := c.V.(int64)
	return ok && v >= math.MinInt32 && v <= math.MaxInt32
}

// implicitlyWidens reports whether Postgres converts a value of type
// from to type to implicitly in a function call.
func implicitlyWidens(from, to catalog.Type) bool {
	rank := func(t catalog.Type) int {
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
	if rf, rt := rank(from), rank(to); rf > 0 && rt > 0 {
		return rf < rt
	}
	switch {
	case from == catalog.Date:
		return to == catalog.Timestamp || to == catalog.TimestampTZ
	case from == catalog.Timestamp:
		return to == catalog.TimestampTZ
	}
	return false
}

// funcBinders bind the functions with overloads: each picks the
// overload the arguments fit, converts them, and returns the result
// type. Their scalarFuncs entries only bound the argument count.
var funcBinders = map[string]func(args []Scalar, pos int) ([]Scalar, catalog.Type, error){}

// overloads are the signatures of each overloaded function, for pg_proc.
var overloads = map[string][]overload{}

// overloaded registers a function with the given overloads.
func overloaded(name string, ovs ...overload) {
	lo, hi := 1<<30, 0
	for _, o := range ovs {
		n := len(o.args)
		if o.variadic {
			n--
			hi = -1
		}
		lo = min(lo, n)
		if hi >= 0 {
			hi = max(hi, len(o.args))
		}
	}
	scalarFuncs[name] = funcSig{minArgs: lo, maxArgs: hi}
	overloads[name] = ovs
	funcBinders[name] = func(args []Scalar, pos int) ([]Scalar, catalog.Type, error) {
		return resolveOverload(name, ovs, args, pos)
	}
}

// resolveOverload picks the overload args fit best and converts them.
func resolveOverload(name string, ovs []overload, args []Scalar, pos int) ([]Scalar, catalog.Type, error) {
	best, bestScore := -1, -1
	for i, o := range ovs {
		if s := o.fits(args); s > bestScore {
			best, bestScore = i, s
		}
	}
	if best < 0 {
		return nil, 0, pgerr.New(pgerr.UndefinedFunction, "function %s(%s) does not exist", name, argTypes(args)).WithPosition(pos).
			WithHint("No function matches the given name and argument types. You might need to add explicit type casts.")
	}
	o := ovs[best]
	out := make([]Scalar, len(args))
	b := binder{}
	for i, a := range args {
		t := o.param(i)
		if t == catalog.Unknown {
			out[i] = a
			continue
		}
		c, err := b.coerce(a, t, pos, name)
		if err != nil {
			return nil, 0, err
		}
		out[i] = c
	}
	if o.resultArg >= 0 {
		return out, out[o.resultArg].Type(), nil
	}
	return out, o.result, nil
}
