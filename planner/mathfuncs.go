package planner

import "github.com/basindb/basin/catalog"

// The mathematical functions over integers and double precision, as
// Postgres 15 types them (eval/mathfuncs.go computes them). NUMERIC
// overloads of the same names belong with the NUMERIC type.

func init() {
	i, b, d := catalog.Int, catalog.BigInt, catalog.Double
	for _, name := range []string{"ln", "log10", "exp", "cbrt", "degrees", "radians",
		"sin", "cos", "tan", "cot", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh",
		"sind", "cosd", "tand", "cotd", "asind", "acosd", "atand"} {
		overloaded(name, ov(d, d))
	}
	overloaded("log", ov(d, d), ov(d, d, d))
	overloaded("power", ov(d, d, d))
	overloaded("pow", ov(d, d, d))
	overloaded("atan2", ov(d, d, d))
	overloaded("atan2d", ov(d, d, d))
	overloaded("sign", ov(d, d))
	overloaded("trunc", ov(d, d), ov(d, d, i))
	overloaded("mod", ovSame(i, i), ovSame(b, b), ovSame(d, d))
	overloaded("div", ovSame(b, b), ovSame(d, d))
	overloaded("gcd", ovSame(i, i), ovSame(b, b))
	overloaded("lcm", ovSame(i, i), ovSame(b, b))
	overloaded("width_bucket", ov(i, d, d, d, i))
	overloaded("pi", ov(d))
	overloaded("random", ov(d))
}
