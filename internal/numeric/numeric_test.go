package numeric

import (
	"bytes"
	"encoding/hex"
	"math/rand"
	"sort"
	"testing"

	"github.com/cockroachdb/apd/v3"

	"github.com/basindb/basin/internal/pgerr"
)

func mustParse(t *testing.T, s string) *apd.Decimal {
	t.Helper()
	d, err := Parse(s)
	if err != nil {
		t.Fatalf("Parse(%q): %v", s, err)
	}
	return d
}

func TestText(t *testing.T) {
	for in, want := range map[string]string{
		"1.50": "1.50", "0.000": "0.000", "-12": "-12", "NaN": "NaN", "nan": "NaN",
		"Infinity": "Infinity", "-inf": "-Infinity", " 1e3 ": "1000", "1.5e-3": "0.0015",
		"-0": "0", "-0.00": "0.00", ".5": "0.5", "5.": "5", "+007.10": "7.10",
		"12345678901234567890.123": "12345678901234567890.123",
	} {
		if got := Text(mustParse(t, in)); got != want {
			t.Errorf("Text(Parse(%q)) = %q, want %q", in, got, want)
		}
	}
	for _, bad := range []string{"", "abc", "1.2.3", "1e", "--1", "sNaN", "0x10", "1 2", "e5", "."} {
		if _, err := Parse(bad); pgerr.CodeOf(err) != pgerr.InvalidTextRepresentation {
			t.Errorf("Parse(%q) = %v, want 22P02", bad, err)
		}
	}
}

func TestOperatorScales(t *testing.T) {
	type op func(x, y *apd.Decimal) (*apd.Decimal, error)
	for _, c := range []struct {
		name string
		f    op
		x, y string
		want string
	}{
		{"add", Add, "1.5", "2.25", "3.75"},
		{"add", Add, "1.50", "2", "3.50"},
		{"add", Add, "0.1", "0.2", "0.3"},
		{"sub", Sub, "1.00", "1", "0.00"},
		{"sub", Sub, "1", "3.5", "-2.5"},
		{"mul", Mul, "1.5", "2.25", "3.375"},
		{"mul", Mul, "1.50", "2.0", "3.000"},
		{"mul", Mul, "-2", "0.0", "0.0"},
		{"div", Div, "1", "3", "0.33333333333333333333"},
		{"div", Div, "2", "3", "0.66666666666666666667"},
		{"div", Div, "10", "4", "2.5000000000000000"},
		{"div", Div, "1.0", "8", "0.12500000000000000000"},
		{"div", Div, "100000", "3", "33333.333333333333"},
		{"div", Div, "1", "30000", "0.000033333333333333333333"},
		{"div", Div, "-7.5", "2", "-3.7500000000000000"},
		{"div", Div, "1.123456789012345678901", "1", "1.123456789012345678901"},
		{"div", Div, "0", "7", "0.00000000000000000000"},
		{"mod", Mod, "10", "3", "1"},
		{"mod", Mod, "-10.5", "3", "-1.5"},
		{"mod", Mod, "10", "-3.00", "1.00"},
		{"add", Add, "Infinity", "-Infinity", "NaN"},
		{"add", Add, "Infinity", "1", "Infinity"},
		{"mul", Mul, "Infinity", "0", "NaN"},
		{"mul", Mul, "-Infinity", "-2", "Infinity"},
		{"div", Div, "1", "Infinity", "0"},
		{"div", Div, "NaN", "0", "NaN"},
		{"mod", Mod, "5", "Infinity", "5"},
	} {
		got, err := c.f(mustParse(t, c.x), mustParse(t, c.y))
		if err != nil {
			t.Errorf("%s(%s, %s): %v", c.name, c.x, c.y, err)
			continue
		}
		if Text(got) != c.want {
			t.Errorf("%s(%s, %s) = %s, want %s", c.name, c.x, c.y, Text(got), c.want)
		}
	}
	for _, f := range []op{Div, Mod} {
		if _, err := f(mustParse(t, "1"), mustParse(t, "0.0")); pgerr.CodeOf(err) != pgerr.DivisionByZero {
			t.Errorf("x/0 = %v, want 22012", err)
		}
	}
}

func TestRoundAndTypmod(t *testing.T) {
	for _, c := range []struct {
		x    string
		n    int
		r, t string
	}{
		{"2.5", 0, "3", "2"},
		{"-2.5", 0, "-3", "-2"},
		{"1234.5678", 2, "1234.57", "1234.56"},
		{"1234.5678", -2, "1200", "1200"},
		{"1.5", 3, "1.500", "1.500"},
		{"-0.4", 0, "0", "0"},
	} {
		x := mustParse(t, c.x)
		if got := Text(Round(x, c.n)); got != c.r {
			t.Errorf("round(%s, %d) = %s, want %s", c.x, c.n, got, c.r)
		}
		if got := Text(Trunc(x, c.n)); got != c.t {
			t.Errorf("trunc(%s, %d) = %s, want %s", c.x, c.n, got, c.t)
		}
	}
	for _, c := range []struct{ x, ceil, floor string }{
		{"1.2", "2", "1"}, {"-1.2", "-1", "-2"}, {"3.00", "3", "3"}, {"-0.5", "0", "-1"},
	} {
		if got := Text(Ceil(mustParse(t, c.x))); got != c.ceil {
			t.Errorf("ceil(%s) = %s", c.x, got)
		}
		if got := Text(Floor(mustParse(t, c.x))); got != c.floor {
			t.Errorf("floor(%s) = %s", c.x, got)
		}
	}
	d, err := ApplyTypmod(mustParse(t, "12345678.125"), 10, 2)
	if err != nil || Text(d) != "12345678.13" {
		t.Errorf("numeric(10,2) of 12345678.125 = %v, %v", d, err)
	}
	_, err = ApplyTypmod(mustParse(t, "99999999.995"), 10, 2)
	e, _ := pgerr.As(err)
	if e == nil || e.Code != pgerr.NumericValueOutOfRange || e.Message != "numeric field overflow" ||
		e.Detail != "A field with precision 10, scale 2 must round to an absolute value less than 10^8." {
		t.Errorf("numeric(10,2) of 99999999.995: %#v", err)
	}
	_, err = ApplyTypmod(mustParse(t, "1"), 2, 2)
	if e, _ := pgerr.As(err); e == nil || e.Detail != "A field with precision 2, scale 2 must round to an absolute value less than 1." {
		t.Errorf("numeric(2,2) of 1: %v", err)
	}
}

func TestConversions(t *testing.T) {
	if got := Text(FromFloat64(0.1)); got != "0.1" {
		t.Errorf("0.1::numeric = %s", got)
	}
	if got := Text(FromFloat64(1.0 / 3)); got != "0.333333333333333" {
		t.Errorf("(1/3.0)::numeric = %s", got)
	}
	if got := Text(FromFloat64(1e20)); got != "100000000000000000000" {
		t.Errorf("1e20::numeric = %s", got)
	}
	if f := Float64(mustParse(t, "0.1")); f != 0.1 {
		t.Errorf("0.1::float8 = %v", f)
	}
	for in, want := range map[string]int64{"2.5": 3, "-2.5": -3, "2.49": 2} {
		if n, err := Int64(mustParse(t, in), "bigint", -1<<63, 1<<63-1); err != nil || n != want {
			t.Errorf("%s::bigint = %d, %v", in, n, err)
		}
	}
	if _, err := Int64(mustParse(t, "2147483647.5"), "integer", -1<<31, 1<<31-1); pgerr.CodeOf(err) != pgerr.NumericValueOutOfRange {
		t.Errorf("2147483647.5::int = %v", err)
	}
}

// TestBinary checks the binary format against the bytes Postgres 15
// sends (SELECT x::numeric in binary).
func TestBinary(t *testing.T) {
	for in, want := range map[string]string{
		"1.50":      "0002000000000002" + "00011388",
		"-12":       "0001000040000000" + "000c",
		"12345.678": "0003000100000003" + "000109291a7c",
		"0.000":     "0000000000000003",
		"0":         "0000000000000000",
		"0.0001":    "0001ffff00000004" + "0001",
		"10000":     "0001000100000000" + "0001",
		"NaN":       "000000000000c000"[:8] + "c0000000",
		"Infinity":  "00000000d0000000",
		"-Infinity": "00000000f0000000",
	} {
		d := mustParse(t, in)
		got := hex.EncodeToString(AppendBinary(nil, d))
		if got != want {
			t.Errorf("binary %s = %s, want %s", in, got, want)
		}
		b, _ := hex.DecodeString(want)
		back, err := ParseBinary(b)
		if err != nil || Text(back) != Text(d) {
			t.Errorf("ParseBinary(%s) = %v, %v, want %s", want, back, err, Text(d))
		}
	}
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 2000; i++ {
		d := randDecimal(rng)
		back, err := ParseBinary(AppendBinary(nil, d))
		if err != nil || Text(back) != Text(d) {
			t.Fatalf("binary round trip of %s = %v, %v", Text(d), back, err)
		}
	}
	for _, bad := range []string{"", "0001000000000000", "00010000000000002710", "0000000012340000"} {
		b, _ := hex.DecodeString(bad)
		if _, err := ParseBinary(b); err == nil {
			t.Errorf("ParseBinary(%s) succeeded", bad)
		}
	}
}

func randDecimal(rng *rand.Rand) *apd.Decimal {
	switch rng.Intn(20) {
	case 0:
		return NaN
	case 1:
		return PosInf
	case 2:
		return NegInf
	}
	d := &apd.Decimal{Negative: rng.Intn(2) == 0, Exponent: -int32(rng.Intn(12))}
	d.Coeff.SetInt64(rng.Int63n([]int64{10, 1000, 1e9, 1e18}[rng.Intn(4)]))
	if rng.Intn(4) == 0 {
		d.Coeff.Mul(&d.Coeff, pow10(rng.Intn(30)))
	}
	return normalize(d)
}

// TestKeyOrder checks that keys sort as the values do, that equal values
// of different scales encode the same, and that keys decode back.
func TestKeyOrder(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	vals := make([]*apd.Decimal, 3000)
	for i := range vals {
		vals[i] = randDecimal(rng)
	}
	vals = append(vals, mustParse(t, "1.0"), mustParse(t, "1.00"), mustParse(t, "-1.0"), mustParse(t, "-1"), Zero, mustParse(t, "0.00"))
	sort.Slice(vals, func(i, j int) bool { return Cmp(vals[i], vals[j]) < 0 })
	for i := 1; i < len(vals); i++ {
		a, b := AppendKey(nil, vals[i-1]), AppendKey(nil, vals[i])
		c := bytes.Compare(a, b)
		if want := Cmp(vals[i-1], vals[i]); c != want {
			t.Fatalf("key(%s) vs key(%s) = %d, want %d", Text(vals[i-1]), Text(vals[i]), c, want)
		}
		// Self-delimiting: a suffix does not change the order of keys
		// that differ.
		if c != 0 && bytes.Compare(append(a, 0xff, 0xff), append(b, 0x00)) != c {
			t.Fatalf("keys of %s and %s are not self-delimiting", Text(vals[i-1]), Text(vals[i]))
		}
		d, n, err := ParseKey(append(b, 7, 7))
		if err != nil || n != len(b) || Cmp(d, vals[i]) != 0 {
			t.Fatalf("ParseKey(key(%s)) = %v, %d, %v", Text(vals[i]), d, n, err)
		}
	}
}

// TestRange checks that results beyond numeric's 131072 digits before
// the point are refused rather than computed.
func TestRange(t *testing.T) {
	big := mustParse(t, "1e60000")
	if _, err := Mul(big, big); pgerr.CodeOf(err) != pgerr.NumericValueOutOfRange {
		t.Errorf("1e60000 * 1e60000 = %v", err)
	}
	huge, tiny := mustParse(t, "1e90000"), mustParse(t, "1e-16000")
	if _, err := Div(huge, tiny); pgerr.CodeOf(err) != pgerr.NumericValueOutOfRange {
		t.Errorf("1e90000 / 1e-16000 = %v", err)
	}
	if d, err := Add(big, big); err != nil || intDigits(d) != 60001 {
		t.Errorf("1e60000 + 1e60000: %v", err)
	}
}

// FuzzParse checks that no text makes Parse, the binary and key
// encodings or the operators panic, and that valid values round-trip.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"1.50", "-0.000", "NaN", "1e-300", "99999999999999999999.99", "-inf", "1e5"} {
		f.Add(s, "3")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		x, err := Parse(a)
		if err != nil {
			return
		}
		if back, err := ParseBinary(AppendBinary(nil, x)); err != nil || Text(back) != Text(x) {
			t.Fatalf("binary round trip of %s: %v, %v", Text(x), back, err)
		}
		if back, n, err := ParseKey(AppendKey(nil, x)); err != nil || Cmp(back, x) != 0 || n != len(AppendKey(nil, x)) {
			t.Fatalf("key round trip of %s: %v, %v", Text(x), back, err)
		}
		y, err := Parse(b)
		if err != nil {
			return
		}
		for _, op := range []func(x, y *apd.Decimal) (*apd.Decimal, error){Add, Sub, Mul, Div, Mod} {
			_, _ = op(x, y)
		}
		_, _ = ApplyTypmod(x, 10, 2)
		_ = Round(x, 3)
	})
}

// FuzzParseBinary checks that arbitrary bytes never make the binary or
// key decoders panic.
func FuzzParseBinary(f *testing.F) {
	f.Add(AppendBinary(nil, apd.New(150, -2)))
	f.Add(AppendKey(nil, apd.New(-150, -2)))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 64 {
			return
		}
		_, _ = ParseBinary(b)
		_, _, _ = ParseKey(b)
	})
}
