package numeric

import (
	"math"
	"strconv"
	"strings"

	"github.com/cockroachdb/apd/v3"

	"github.com/basindb/basin/internal/pgerr"
)

// Postgres's limits on a numeric's scale (numeric.h).
const (
	// MaxDisplayScale bounds the scale division and functions choose.
	MaxDisplayScale = 1000
	// minSigDigits is the significant digits a quotient has at least.
	minSigDigits = 16
	// maxPrecision is the largest precision a typmod may name.
	maxPrecision = 1000
)

// exact is a context that never rounds: add, subtract and multiply are
// exact, as Postgres's are.
var exact = apd.Context{
	Precision:   0,
	MaxExponent: apd.MaxExponent,
	MinExponent: apd.MinExponent,
	Traps:       0,
	Rounding:    apd.RoundHalfUp,
}

var (
	// NaN and the infinities are shared; values are never mutated.
	NaN    = &apd.Decimal{Form: apd.NaN}
	PosInf = &apd.Decimal{Form: apd.Infinite}
	NegInf = &apd.Decimal{Form: apd.Infinite, Negative: true}
	Zero   = apd.New(0, 0)
)

// ErrDivByZero is Postgres's division by zero.
func errDivByZero() error { return pgerr.New(pgerr.DivisionByZero, "division by zero") }

// normalize makes d a canonical value in place: exponent ≤ 0 (the
// scale is -exponent), no negative zero. d must not be shared yet.
func normalize(d *apd.Decimal) *apd.Decimal {
	if d.Form != apd.Finite {
		if d.Form == apd.NaNSignaling {
			d.Form = apd.NaN
		}
		if d.Form == apd.NaN {
			d.Negative = false
		}
		return d
	}
	if d.Exponent > 0 {
		d.Coeff.Mul(&d.Coeff, pow10(int(d.Exponent)))
		d.Exponent = 0
	}
	if d.Coeff.Sign() == 0 {
		d.Negative = false
	}
	return d
}

// pow10 returns 10^n as a new BigInt.
func pow10(n int) *apd.BigInt {
	var b apd.BigInt
	return b.Exp(apd.NewBigInt(10), apd.NewBigInt(int64(n)), nil)
}

// Scale is d's display scale: its digits after the point.
func Scale(d *apd.Decimal) int {
	if d.Form != apd.Finite || d.Exponent >= 0 {
		return 0
	}
	return int(-d.Exponent)
}

// FromInt64 returns n as a numeric of scale 0.
func FromInt64(n int64) *apd.Decimal { return apd.New(n, 0) }

// FromFloat64 converts a float8 as Postgres does: through its text with
// 15 significant digits (DBL_DIG), so 0.1::float8::numeric is 0.1.
func FromFloat64(f float64) *apd.Decimal {
	switch {
	case math.IsNaN(f):
		return NaN
	case math.IsInf(f, 1):
		return PosInf
	case math.IsInf(f, -1):
		return NegInf
	}
	d, _, err := apd.NewFromString(strconv.FormatFloat(f, 'g', 15, 64))
	if err != nil {
		return NaN // unreachable: FormatFloat's output is a number
	}
	return normalize(d)
}

// Float64 converts d to float8: the nearest double to its exact value.
func Float64(d *apd.Decimal) float64 {
	switch d.Form {
	case apd.NaN, apd.NaNSignaling:
		return math.NaN()
	case apd.Infinite:
		if d.Negative {
			return math.Inf(-1)
		}
		return math.Inf(1)
	}
	f, err := strconv.ParseFloat(d.Text('e'), 64)
	if err != nil && !math.IsInf(f, 0) {
		return 0
	}
	return f
}

// Int64 converts d to an integer, rounding half away from zero; word
// ("bigint", "integer", "smallint") names the target in errors, and
// lo, hi are its range.
func Int64(d *apd.Decimal, word string, lo, hi int64) (int64, error) {
	switch d.Form {
	case apd.NaN, apd.NaNSignaling:
		return 0, pgerr.New(pgerr.FeatureNotSupported, "cannot convert NaN to %s", word)
	case apd.Infinite:
		return 0, pgerr.New(pgerr.FeatureNotSupported, "cannot convert infinity to %s", word)
	}
	r := roundTo(d, 0)
	if r.Exponent != 0 || !r.Coeff.IsInt64() {
		return 0, pgerr.New(pgerr.NumericValueOutOfRange, "%s out of range", word)
	}
	n := r.Coeff.Int64()
	if r.Negative {
		n = -n
	}
	if n < lo || n > hi {
		return 0, pgerr.New(pgerr.NumericValueOutOfRange, "%s out of range", word)
	}
	return n, nil
}

// Parse reads Postgres's numeric text input: optional spaces, a sign,
// digits with an optional point and exponent, or NaN, Infinity, inf.
func Parse(s string) (*apd.Decimal, error) {
	w := strings.TrimSpace(s)
	bad := func() error {
		return pgerr.New(pgerr.InvalidTextRepresentation, "invalid input syntax for type numeric: \"%s\"", s)
	}
	switch strings.ToLower(w) {
	case "nan":
		return NaN, nil
	case "infinity", "+infinity", "inf", "+inf":
		return PosInf, nil
	case "-infinity", "-inf":
		return NegInf, nil
	}
	if !wellFormed(w) {
		return nil, bad()
	}
	d, _, err := apd.NewFromString(w)
	if err != nil {
		// Well formed, so its exponent is beyond what apd holds.
		return nil, overflow()
	}
	if d.Exponent < -maxScale || d.Exponent > maxIntDigits {
		return nil, pgerr.New(pgerr.NumericValueOutOfRange, "value overflows numeric format")
	}
	return normalize(d), nil
}

// wellFormed checks numeric syntax: [sign] digits [. digits] [e [sign]
// digits], with at least one digit in the mantissa.
func wellFormed(s string) bool {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	digits := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i, digits = i+1, digits+1
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i, digits = i+1, digits+1
		}
	}
	if digits == 0 {
		return false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		n := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i, n = i+1, n+1
		}
		if n == 0 || n > 9 {
			return false
		}
	}
	return i == len(s)
}

// Text is d as Postgres prints it: every digit of its scale, NaN,
// Infinity, -Infinity.
func Text(d *apd.Decimal) string {
	return string(Append(nil, d))
}

// Append appends Text(d) to buf.
func Append(buf []byte, d *apd.Decimal) []byte {
	switch d.Form {
	case apd.NaN, apd.NaNSignaling:
		return append(buf, "NaN"...)
	case apd.Infinite:
		if d.Negative {
			return append(buf, "-Infinity"...)
		}
		return append(buf, "Infinity"...)
	}
	if d.Exponent > 0 {
		var c apd.Decimal
		c.Set(d)
		d = normalize(&c)
	}
	if d.Negative && d.Coeff.Sign() != 0 {
		buf = append(buf, '-')
	}
	digits := d.Coeff.Append(nil, 10)
	if d.Exponent == 0 {
		return append(buf, digits...)
	}
	scale := int(-d.Exponent)
	if len(digits) <= scale {
		buf = append(buf, '0', '.')
		for i := len(digits); i < scale; i++ {
			buf = append(buf, '0')
		}
		return append(buf, digits...)
	}
	buf = append(buf, digits[:len(digits)-scale]...)
	buf = append(buf, '.')
	return append(buf, digits[len(digits)-scale:]...)
}

// Cmp orders two numerics as Postgres does: -Infinity, the numbers,
// Infinity, NaN; 1.0 = 1.00.
func Cmp(x, y *apd.Decimal) int {
	rx, ry := rank(x), rank(y)
	if rx != ry || rx != 2 {
		return cmpInt(rx, ry)
	}
	return x.Cmp(y)
}

// rank places the special values around the finite ones.
func rank(d *apd.Decimal) int {
	switch d.Form {
	case apd.NaN, apd.NaNSignaling:
		return 4
	case apd.Infinite:
		if d.Negative {
			return 0
		}
		return 3
	}
	return 2
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func isNaN(d *apd.Decimal) bool { return d.Form == apd.NaN || d.Form == apd.NaNSignaling }

// Sign is -1, 0 or 1 (NaN: 0).
func Sign(d *apd.Decimal) int {
	if isNaN(d) {
		return 0
	}
	return d.Sign()
}

func infOf(neg bool) *apd.Decimal {
	if neg {
		return NegInf
	}
	return PosInf
}

// Add is x + y, of the larger scale.
func Add(x, y *apd.Decimal) (*apd.Decimal, error) {
	if x.Form != apd.Finite || y.Form != apd.Finite {
		switch {
		case isNaN(x) || isNaN(y):
			return NaN, nil
		case x.Form == apd.Infinite && y.Form == apd.Infinite:
			if x.Negative != y.Negative {
				return NaN, nil
			}
			return x, nil
		case x.Form == apd.Infinite:
			return x, nil
		}
		return y, nil
	}
	d := new(apd.Decimal)
	if _, err := exact.Add(d, x, y); err != nil {
		return nil, overflow()
	}
	return checkRange(normalize(d))
}

// maxIntDigits is the most digits before the point a numeric has:
// apd's largest exponent (Postgres allows 131072; basin stops a little
// short). maxScale is the most after it, Postgres's 16383.
const (
	maxIntDigits = apd.MaxExponent
	maxScale     = 16383
)

// intDigits is the number of digits of finite d before the point.
func intDigits(d *apd.Decimal) int64 {
	if d.Coeff.Sign() == 0 {
		return 0
	}
	return d.NumDigits() + int64(d.Exponent)
}

// checkRange refuses a result with more digits before the point than
// numeric holds, as Postgres does (and so bounds the work of a chain of
// products).
func checkRange(d *apd.Decimal) (*apd.Decimal, error) {
	if d.Form == apd.Finite && intDigits(d) > maxIntDigits {
		return nil, overflow()
	}
	return d, nil
}

// Neg is -x.
func Neg(x *apd.Decimal) *apd.Decimal {
	switch {
	case isNaN(x):
		return x
	case x.Form == apd.Infinite:
		return infOf(!x.Negative)
	case x.Coeff.Sign() == 0:
		return x
	}
	d := new(apd.Decimal)
	d.Neg(x)
	return d
}

// Abs is |x|.
func Abs(x *apd.Decimal) *apd.Decimal {
	if x.Negative {
		return Neg(x)
	}
	return x
}

// Sub is x - y, of the larger scale.
func Sub(x, y *apd.Decimal) (*apd.Decimal, error) { return Add(x, Neg(y)) }

// Mul is x * y, of the sum of the scales.
func Mul(x, y *apd.Decimal) (*apd.Decimal, error) {
	if x.Form != apd.Finite || y.Form != apd.Finite {
		switch {
		case isNaN(x) || isNaN(y):
			return NaN, nil
		case x.Form == apd.Infinite && y.Form == apd.Infinite:
			return infOf(x.Negative != y.Negative), nil
		case x.Form == apd.Infinite:
			if y.Sign() == 0 {
				return NaN, nil
			}
			return infOf(x.Negative != y.Negative), nil
		}
		if x.Sign() == 0 {
			return NaN, nil
		}
		return infOf(x.Negative != y.Negative), nil
	}
	if intDigits(x)+intDigits(y) > maxIntDigits+1 {
		return nil, overflow()
	}
	if Scale(x)+Scale(y) > 16383 {
		// Postgres rounds a product's scale to NUMERIC_DSCALE_MAX.
		d := new(apd.Decimal)
		if _, err := exact.Mul(d, x, y); err != nil {
			return nil, overflow()
		}
		return roundTo(d, 16383), nil
	}
	d := new(apd.Decimal)
	if _, err := exact.Mul(d, x, y); err != nil {
		return nil, overflow()
	}
	return checkRange(normalize(d))
}

func overflow() error {
	return pgerr.New(pgerr.NumericValueOutOfRange, "value overflows numeric format")
}

// Div is x / y, rounded half away from zero to Postgres's
// select_div_scale: at least 16 significant digits, and no fewer
// digits after the point than either operand has.
func Div(x, y *apd.Decimal) (*apd.Decimal, error) {
	if x.Form != apd.Finite || y.Form != apd.Finite {
		switch {
		case isNaN(x) || isNaN(y):
			return NaN, nil
		case x.Form == apd.Infinite:
			if y.Form == apd.Infinite {
				return NaN, nil
			}
			if y.Sign() == 0 {
				return nil, errDivByZero()
			}
			return infOf(x.Negative != y.Negative), nil
		}
		return Zero, nil
	}
	if y.Sign() == 0 {
		return nil, errDivByZero()
	}
	if intDigits(x)-intDigits(y) > maxIntDigits+1 {
		return nil, overflow()
	}
	d, err := DivScale(x, y, divScale(x, y))
	if err != nil {
		return nil, err
	}
	return checkRange(d)
}

// DivScale is x / y for finite x and non-zero y, rounded half away from
// zero to scale digits after the point.
func DivScale(x, y *apd.Decimal, scale int) (*apd.Decimal, error) {
	// x/y·10^scale = cx·10^(ex+scale) / (cy·10^ey): an integer division
	// of big integers, exact before its one rounding.
	var num, den apd.BigInt
	num.Set(&x.Coeff)
	den.Set(&y.Coeff)
	shift := int(x.Exponent) + scale - int(y.Exponent)
	if shift >= 0 {
		num.Mul(&num, pow10(shift))
	} else {
		den.Mul(&den, pow10(-shift))
	}
	var q, r apd.BigInt
	q.QuoRem(&num, &den, &r)
	r.Mul(&r, apd.NewBigInt(2))
	if r.CmpAbs(&den) >= 0 {
		q.Add(&q, apd.NewBigInt(1))
	}
	d := &apd.Decimal{Exponent: int32(-scale), Negative: x.Negative != y.Negative}
	d.Coeff.Set(&q)
	return normalize(d), nil
}

// weight returns the base-10000 weight of d's first non-zero digit and
// that digit (numeric.c's NumericVar view), or 0, 0 for zero.
func weight(d *apd.Decimal) (w int, first int) {
	if d.Coeff.Sign() == 0 {
		return 0, 0
	}
	digits := d.Coeff.Append(nil, 10)
	adj := len(digits) - 1 + int(d.Exponent) // power of ten of the first digit
	w = floorDiv(adj, 4)
	n := adj - 4*w + 1 // decimal digits in the first base-10000 digit
	for i := 0; i < n; i++ {
		first *= 10
		if i < len(digits) {
			first += int(digits[i] - '0')
		}
	}
	return w, first
}

func floorDiv(a, b int) int {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// divScale is numeric.c's select_div_scale.
func divScale(x, y *apd.Decimal) int {
	w1, f1 := weight(x)
	w2, f2 := weight(y)
	qw := w1 - w2
	if f1 <= f2 {
		qw--
	}
	s := minSigDigits - qw*4
	s = max(s, Scale(x), Scale(y), 0)
	return min(s, MaxDisplayScale)
}

// Mod is x % y: the remainder of the truncated quotient, with x's sign
// and the larger scale.
func Mod(x, y *apd.Decimal) (*apd.Decimal, error) {
	if x.Form != apd.Finite || y.Form != apd.Finite {
		switch {
		case isNaN(x) || isNaN(y):
			return NaN, nil
		case x.Form == apd.Infinite:
			if y.Form == apd.Finite && y.Sign() == 0 {
				return nil, errDivByZero()
			}
			return NaN, nil
		}
		return x, nil
	}
	if y.Sign() == 0 {
		return nil, errDivByZero()
	}
	e := min(x.Exponent, y.Exponent)
	var a, b apd.BigInt
	a.Mul(&x.Coeff, pow10(int(x.Exponent-e)))
	b.Mul(&y.Coeff, pow10(int(y.Exponent-e)))
	d := &apd.Decimal{Exponent: e, Negative: x.Negative}
	d.Coeff.Rem(&a, &b)
	return normalize(d), nil
}

// roundTo rounds a finite d half away from zero to scale digits after
// the point (scale may be negative: to tens, hundreds, ...). The result
// has scale max(scale, 0).
func roundTo(d *apd.Decimal, scale int) *apd.Decimal {
	return rescale(d, scale, true)
}

// rescale rounds (round) or truncates d to scale digits after the point.
func rescale(d *apd.Decimal, scale int, round bool) *apd.Decimal {
	if d.Form != apd.Finite {
		return d
	}
	out := new(apd.Decimal)
	out.Negative = d.Negative
	drop := -int(d.Exponent) - scale // digits to remove
	if drop <= 0 {
		out.Exponent = d.Exponent
		out.Coeff.Set(&d.Coeff)
	} else {
		var q, r apd.BigInt
		p := pow10(drop)
		q.QuoRem(&d.Coeff, p, &r)
		if round {
			r.Mul(&r, apd.NewBigInt(2))
			if r.Cmp(p) >= 0 {
				q.Add(&q, apd.NewBigInt(1))
			}
		}
		out.Coeff.Set(&q)
		out.Exponent = int32(-scale)
	}
	// The scale shown is never below 0 (round(x, -2) is 1200, not 12e2),
	// and never below the one asked for.
	target := int32(-max(scale, 0))
	if out.Exponent > target {
		out.Coeff.Mul(&out.Coeff, pow10(int(out.Exponent-target)))
		out.Exponent = target
	}
	return normalize(out)
}

// Round is round(x, n): half away from zero, to n digits after the
// point (n < 0 rounds left of it).
func Round(x *apd.Decimal, n int) *apd.Decimal {
	return rescale(x, clampScale(n), true)
}

// Trunc is trunc(x, n).
func Trunc(x *apd.Decimal, n int) *apd.Decimal {
	return rescale(x, clampScale(n), false)
}

// clampScale keeps a scale argument within Postgres's bounds.
func clampScale(n int) int {
	return max(min(n, MaxDisplayScale), -MaxDisplayScale)
}

// Ceil is the smallest integer not below x.
func Ceil(x *apd.Decimal) *apd.Decimal {
	t := rescale(x, 0, false)
	if x.Form == apd.Finite && !x.Negative && x.Cmp(t) != 0 {
		r, _ := Add(t, apd.New(1, 0))
		return r
	}
	return t
}

// Floor is the largest integer not above x.
func Floor(x *apd.Decimal) *apd.Decimal {
	t := rescale(x, 0, false)
	if x.Form == apd.Finite && x.Negative && x.Cmp(t) != 0 {
		r, _ := Sub(t, apd.New(1, 0))
		return r
	}
	return t
}

// SignOf is sign(x): -1, 0 or 1 as a numeric, NaN for NaN.
func SignOf(x *apd.Decimal) *apd.Decimal {
	if isNaN(x) {
		return NaN
	}
	return apd.New(int64(x.Sign()), 0)
}

// ApplyTypmod fits x to NUMERIC(precision, scale): rounds it half away
// from zero to scale digits, then fails with numeric field overflow when
// more than precision-scale digits remain before the point. precision 0
// is an unconstrained NUMERIC: x is returned as it is.
func ApplyTypmod(x *apd.Decimal, precision, scale int) (*apd.Decimal, error) {
	if precision <= 0 {
		return x, nil
	}
	switch {
	case isNaN(x):
		return x, nil
	case x.Form == apd.Infinite:
		return nil, pgerr.New(pgerr.NumericValueOutOfRange, "numeric field overflow").
			WithDetail("A field with precision %d, scale %d cannot hold an infinite value.", precision, scale)
	}
	r := roundTo(x, scale)
	maxDigits := precision - scale
	if r.Coeff.Sign() != 0 {
		// Digits before the point: the coefficient's digits less the scale.
		intDigits := int(r.NumDigits()) + int(r.Exponent)
		if intDigits > maxDigits {
			detail := "1"
			if maxDigits != 0 {
				detail = "10^" + strconv.Itoa(maxDigits)
			}
			return nil, pgerr.New(pgerr.NumericValueOutOfRange, "numeric field overflow").
				WithDetail("A field with precision %d, scale %d must round to an absolute value less than %s.", precision, scale, detail)
		}
	}
	return r, nil
}

// CheckTypmod validates NUMERIC(precision, scale) as Postgres 15 does.
func CheckTypmod(precision, scale int) error {
	if precision < 1 || precision > maxPrecision {
		return pgerr.New(pgerr.InvalidParameterValue, "NUMERIC precision %d must be between 1 and %d", precision, maxPrecision)
	}
	if scale < -1000 || scale > 1000 {
		return pgerr.New(pgerr.InvalidParameterValue, "NUMERIC scale %d must be between -1000 and 1000", scale)
	}
	return nil
}
