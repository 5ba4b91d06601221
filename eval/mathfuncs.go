package eval

// The mathematical functions over integers and double precision, with
// Postgres 15's results and errors: a logarithm of zero or of a
// negative number is 2201E, a square root of one 2201F, a zero divisor
// 22012, and a result past double precision 22003.

import (
	"math"
	"math/rand/v2"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
)

func init() {
	for name, f := range map[string]func(float64) float64{
		"cbrt": math.Cbrt, "degrees": func(x float64) float64 { return x * 180 / math.Pi },
		"radians": func(x float64) float64 { return x * math.Pi / 180 },
		"sin":     math.Sin, "cos": math.Cos, "tan": math.Tan, "atan": math.Atan,
		"cot":  func(x float64) float64 { return 1 / math.Tan(x) },
		"sinh": math.Sinh, "cosh": math.Cosh, "tanh": math.Tanh, "asinh": math.Asinh,
		"sind":  func(x float64) float64 { return degTrig(math.Sin, x) },
		"cosd":  func(x float64) float64 { return degTrig(math.Cos, x) },
		"tand":  func(x float64) float64 { return roundNear(math.Tan(x * math.Pi / 180)) },
		"cotd":  func(x float64) float64 { return roundNear(1 / math.Tan(x*math.Pi/180)) },
		"atand": func(x float64) float64 { return math.Atan(x) * 180 / math.Pi },
		"sign": func(x float64) float64 {
			switch {
			case x > 0:
				return 1
			case x < 0:
				return -1
			}
			return 0
		},
	} {
		strictFuncs[name] = float1(f)
	}
	strictFuncs["ln"] = logFunc(math.Log)
	strictFuncs["log10"] = logFunc(math.Log10)
	strictFuncs["log"] = logFunc(math.Log10)
	strictFuncs["exp"] = expFunc
	strictFuncs["power"] = power
	strictFuncs["pow"] = power
	strictFuncs["atan2"] = func(_ catalog.Type, a []any) (any, error) { return math.Atan2(a[0].(float64), a[1].(float64)), nil }
	strictFuncs["atan2d"] = func(_ catalog.Type, a []any) (any, error) {
		return math.Atan2(a[0].(float64), a[1].(float64)) * 180 / math.Pi, nil
	}
	for _, name := range []string{"asin", "acos", "asind", "acosd"} {
		strictFuncs[name] = arcFunc(name)
	}
	strictFuncs["acosh"] = func(_ catalog.Type, a []any) (any, error) {
		x := a[0].(float64)
		if x < 1 {
			return nil, errInputRange
		}
		return math.Acosh(x), nil
	}
	strictFuncs["atanh"] = func(_ catalog.Type, a []any) (any, error) {
		x := a[0].(float64)
		if x < -1 || x > 1 {
			return nil, errInputRange
		}
		return math.Atanh(x), nil
	}
	strictFuncs["trunc"] = truncFunc
	strictFuncs["mod"] = modFunc
	strictFuncs["div"] = divFunc
	strictFuncs["gcd"] = gcdFunc
	strictFuncs["lcm"] = lcmFunc
	strictFuncs["width_bucket"] = widthBucket
	strictFuncs["pi"] = func(catalog.Type, []any) (any, error) { return math.Pi, nil }
	strictFuncs["random"] = func(catalog.Type, []any) (any, error) { return rand.Float64(), nil }
}

var (
	errInputRange = pgerr.New(pgerr.NumericValueOutOfRange, "input is out of range")
	errOverflow   = pgerr.New(pgerr.NumericValueOutOfRange, "value out of range: overflow")
	errUnderflow  = pgerr.New(pgerr.NumericValueOutOfRange, "value out of range: underflow")
)

func float1(f func(float64) float64) func(catalog.Type, []any) (any, error) {
	return func(_ catalog.Type, a []any) (any, error) { return f(a[0].(float64)), nil }
}

// degTrig is sind or cosd: exact at the multiples of 30 and 45 degrees
// where the radian computation misses by an ulp, as Postgres's are.
func degTrig(f func(float64) float64, deg float64) float64 {
	if math.IsInf(deg, 0) || math.IsNaN(deg) {
		return math.NaN()
	}
	return roundNear(f(math.Mod(deg, 360) * math.Pi / 180))
}

// roundNear snaps a trigonometric result within a few ulps of 0, ±0.5
// or ±1 to it.
func roundNear(x float64) float64 {
	for _, v := range []float64{0, 0.5, -0.5, 1, -1} {
		if math.Abs(x-v) < 1e-15 {
			return v
		}
	}
	return x
}

func arcFunc(name string) func(catalog.Type, []any) (any, error) {
	return func(_ catalog.Type, a []any) (any, error) {
		x := a[0].(float64)
		if math.IsNaN(x) {
			return x, nil
		}
		if x < -1 || x > 1 {
			return nil, errInputRange
		}
		switch name {
		case "asin":
			return math.Asin(x), nil
		case "acos":
			return math.Acos(x), nil
		case "asind":
			return roundNear(math.Asin(x)*180/math.Pi/90) * 90, nil
		}
		return roundNear(math.Acos(x)*180/math.Pi/90) * 90, nil
	}
}

// logFunc is ln, log10 or log(x); log(b, x) takes its base first.
func logFunc(f func(float64) float64) func(catalog.Type, []any) (any, error) {
	return func(_ catalog.Type, a []any) (any, error) {
		x := a[len(a)-1].(float64)
		if err := logArg(x); err != nil {
			return nil, err
		}
		if len(a) == 1 {
			return f(x), nil
		}
		base := a[0].(float64)
		if err := logArg(base); err != nil {
			return nil, err
		}
		if base == 1 {
			return nil, errDivByZero
		}
		return math.Log(x) / math.Log(base), nil
	}
}

func logArg(x float64) error {
	switch {
	case x == 0:
		return pgerr.New(pgerr.InvalidArgumentForLogarithm, "cannot take logarithm of zero")
	case x < 0:
		return pgerr.New(pgerr.InvalidArgumentForLogarithm, "cannot take logarithm of a negative number")
	}
	return nil
}

func expFunc(_ catalog.Type, a []any) (any, error) {
	x := a[0].(float64)
	r := math.Exp(x)
	switch {
	case math.IsInf(r, 1) && !math.IsInf(x, 1):
		return nil, errOverflow
	case r == 0 && !math.IsInf(x, -1):
		return nil, errUnderflow
	}
	return r, nil
}

// power is power(x, y) over double precision, with Postgres's errors for
// the cases without a real result.
func power(_ catalog.Type, a []any) (any, error) {
	x, y := a[0].(float64), a[1].(float64)
	if x == 0 && y < 0 {
		return nil, pgerr.New(pgerr.InvalidArgumentForPowerFunction, "zero raised to a negative power is undefined")
	}
	if x < 0 && y != math.Trunc(y) && !math.IsInf(y, 0) {
		return nil, pgerr.New(pgerr.InvalidArgumentForPowerFunction, "a negative number raised to a non-integer power yields a complex result")
	}
	r := math.Pow(x, y)
	switch {
	case math.IsInf(r, 0) && !math.IsInf(x, 0) && !math.IsInf(y, 0):
		return nil, errOverflow
	case r == 0 && x != 0 && !math.IsInf(y, 0) && !math.IsInf(x, 0):
		return nil, errUnderflow
	}
	return r, nil
}

// truncFunc is trunc(x) and trunc(x, places) over double precision.
func truncFunc(_ catalog.Type, a []any) (any, error) {
	x := a[0].(float64)
	if len(a) == 1 {
		return math.Trunc(x), nil
	}
	p := a[1].(int64)
	if p > 300 || math.IsInf(x, 0) || math.IsNaN(x) {
		return x, nil
	}
	if p < -300 {
		return 0.0, nil
	}
	m := math.Pow(10, float64(p))
	return math.Trunc(x*m) / m, nil
}

// modFunc is mod(x, y), with the sign of x as Postgres's.
func modFunc(t catalog.Type, a []any) (any, error) {
	switch x := a[0].(type) {
	case int64:
		y := a[1].(int64)
		if y == 0 {
			return nil, errDivByZero
		}
		if y == -1 {
			return int64(0), nil
		}
		return x % y, nil
	case float64:
		y := a[1].(float64)
		if y == 0 {
			return nil, errDivByZero
		}
		return math.Mod(x, y), nil
	}
	return nil, nil
}

// divFunc is div(x, y): the quotient truncated toward zero.
func divFunc(t catalog.Type, a []any) (any, error) {
	switch x := a[0].(type) {
	case int64:
		y := a[1].(int64)
		if y == 0 {
			return nil, errDivByZero
		}
		if y == -1 {
			if x == math.MinInt64 {
				return nil, ErrOutOfRange
			}
			return -x, nil
		}
		return x / y, nil
	case float64:
		y := a[1].(float64)
		if y == 0 {
			return nil, errDivByZero
		}
		return math.Trunc(x / y), nil
	}
	return nil, nil
}

// intRange returns the error for a result out of t's range, nil when v
// fits.
func intRange(t catalog.Type, v int64) error {
	if t == catalog.Int && (v > math.MaxInt32 || v < math.MinInt32) {
		return ErrIntOutOfRange
	}
	return nil
}

func gcd(x, y int64) (int64, bool) {
	// Work in negatives: the most negative value has no positive.
	if x > 0 {
		x = -x
	}
	if y > 0 {
		y = -y
	}
	for y != 0 {
		x, y = y, x%y
	}
	if x == math.MinInt64 {
		return 0, false
	}
	return -x, true
}

func gcdFunc(t catalog.Type, a []any) (any, error) {
	g, ok := gcd(a[0].(int64), a[1].(int64))
	if !ok {
		return nil, ErrOutOfRange
	}
	if err := intRange(t, g); err != nil {
		return nil, err
	}
	return g, nil
}

func lcmFunc(t catalog.Type, a []any) (any, error) {
	x, y := a[0].(int64), a[1].(int64)
	if x == 0 || y == 0 {
		return int64(0), nil
	}
	g, ok := gcd(x, y)
	if !ok {
		return nil, outOfRange(t)
	}
	q := x / g
	r := q * y
	if q != 0 && (r/q != y || (q == -1 && y == math.MinInt64)) {
		return nil, outOfRange(t)
	}
	if r < 0 {
		if r == math.MinInt64 {
			return nil, outOfRange(t)
		}
		r = -r
	}
	if err := intRange(t, r); err != nil {
		return nil, err
	}
	return r, nil
}

func outOfRange(t catalog.Type) error {
	if t == catalog.Int {
		return ErrIntOutOfRange
	}
	return ErrOutOfRange
}

// widthBucket is width_bucket(x, lo, hi, count): the bucket of count
// equal buckets over [lo, hi) x falls in, 0 below and count+1 above
// (lo > hi counts downward).
func widthBucket(_ catalog.Type, a []any) (any, error) {
	x, lo, hi, n := a[0].(float64), a[1].(float64), a[2].(float64), a[3].(int64)
	switch {
	case n <= 0:
		return nil, pgerr.New(pgerr.InvalidArgumentForWidthBucketFunction, "count must be greater than zero")
	case math.IsNaN(x) || math.IsNaN(lo) || math.IsNaN(hi):
		return nil, pgerr.New(pgerr.InvalidArgumentForWidthBucketFunction, "operand, lower bound, and upper bound cannot be NaN")
	case math.IsInf(lo, 0) || math.IsInf(hi, 0):
		return nil, pgerr.New(pgerr.InvalidArgumentForWidthBucketFunction, "lower and upper bounds must be finite")
	case lo == hi:
		return nil, pgerr.New(pgerr.InvalidArgumentForWidthBucketFunction, "lower bound cannot equal upper bound")
	}
	var r int64
	if lo < hi {
		switch {
		case x < lo:
			r = 0
		case x >= hi:
			r = n + 1
		default:
			r = int64(float64(n)*((x-lo)/(hi-lo))) + 1
		}
	} else {
		switch {
		case x > lo:
			r = 0
		case x <= hi:
			r = n + 1
		default:
			r = int64(float64(n)*((lo-x)/(lo-hi))) + 1
		}
	}
	if r > math.MaxInt32 {
		return nil, ErrIntOutOfRange
	}
	return r, nil
}
