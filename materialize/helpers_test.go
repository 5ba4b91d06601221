package materialize

import (
	"bytes"
	"cmp"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/apd/v3"

	"github.com/basindb/basin/catalog"
)

// compareSQL is the reference order of key tuples: SQL semantics, written
// independently of the encoding. NULL first; NaN above every number; -0
// equals 0; strings bytewise; a tuple before every tuple it prefixes.
func compareSQL(a, b []any) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if c := compareValue(a[i], b[i]); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(a), len(b))
}

func compareValue(a, b any) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return -1
	case b == nil:
		return 1
	}
	switch a := a.(type) {
	case bool:
		bb := b.(bool)
		switch {
		case a == bb:
			return 0
		case !a:
			return -1
		}
		return 1
	case int64:
		return cmp.Compare(a, b.(int64))
	case float64:
		bf := b.(float64)
		an, bn := math.IsNaN(a), math.IsNaN(bf)
		switch {
		case an && bn:
			return 0
		case an:
			return 1
		case bn:
			return -1
		}
		return cmp.Compare(a, bf)
	case string:
		return strings.Compare(a, b.(string))
	case time.Time:
		return a.Compare(b.(time.Time))
	}
	panic(fmt.Sprintf("unexpected %T", a))
}

// sameValue reports whether a and b are the same value of the same Go
// type (NaN equals NaN; times by instant and UTC location; -0 and 0 differ
// only if exactSign).
func sameValue(a, b any, exactSign bool) bool {
	switch a := a.(type) {
	case nil:
		return b == nil
	case float64:
		bf, ok := b.(float64)
		if !ok {
			return false
		}
		if math.IsNaN(a) {
			return math.IsNaN(bf)
		}
		if exactSign && math.Signbit(a) != math.Signbit(bf) {
			return false
		}
		return a == bf
	case time.Time:
		bt, ok := b.(time.Time)
		return ok && a.Equal(bt) && bt.Location() == time.UTC
	case []any:
		ba, ok := b.([]any)
		if !ok || len(a) != len(ba) {
			return false
		}
		for i := range a {
			if !sameValue(a[i], ba[i], exactSign) {
				return false
			}
		}
		return true
	case catalog.Struct:
		bs, ok := b.(catalog.Struct)
		return ok && sameValue([]any(a), []any(bs), exactSign)
	case catalog.Map:
		bm, ok := b.(catalog.Map)
		if !ok || len(a) != len(bm) {
			return false
		}
		for i := range a {
			if a[i].Key != bm[i].Key || !sameValue(a[i].Value, bm[i].Value, exactSign) {
				return false
			}
		}
		return true
	case []byte:
		bb, ok := b.([]byte)
		return ok && bytes.Equal(a, bb)
	case *apd.Decimal:
		bd, ok := b.(*apd.Decimal)
		return ok && a.Cmp(bd) == 0 && a.Exponent == bd.Exponent
	}
	return a == b
}

func sameRow(t *testing.T, want, got []any, exactSign bool) {
	t.Helper()
	if len(want) != len(got) {
		t.Fatalf("got %d values %v, want %d values %v", len(got), got, len(want), want)
	}
	for i := range want {
		if !sameValue(want[i], got[i], exactSign) {
			t.Fatalf("value %d: got %#v (%T), want %#v (%T)", i, got[i], got[i], want[i], want[i])
		}
	}
}

// valueGen makes random basin values biased towards the edge cases of the
// encodings: zero bytes and 0xff in strings, prefixes, int and float
// limits, NaN, -0, negative and pre-1970 times.
type valueGen struct{ r *rand.Rand }

var seedFlag = flag.Uint64("seed", 0, "seed of the randomized tests (default: random, logged)")

func newValueGen(t testing.TB) valueGen {
	seed := *seedFlag
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("seed %d (rerun with -seed=%d)", seed, seed)
	return valueGen{rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

const (
	kindBool = iota
	kindInt
	kindFloat
	kindString
	kindTime
	numKinds
)

func (g valueGen) value(kind int) any {
	r := g.r
	switch kind {
	case kindBool:
		return r.IntN(2) == 0
	case kindInt:
		switch r.IntN(4) {
		case 0:
			edges := []int64{math.MinInt64, math.MinInt64 + 1, -1 << 32, -256, -1, 0, 1, 255, 256, 1 << 32, math.MaxInt64 - 1, math.MaxInt64}
			return edges[r.IntN(len(edges))]
		case 1:
			return r.Int64N(11) - 5
		}
		return int64(r.Uint64())
	case kindFloat:
		switch r.IntN(4) {
		case 0:
			edges := []float64{math.NaN(), math.Float64frombits(0xfff8000000000000), math.Inf(-1), math.Inf(1), 0, math.Copysign(0, -1),
				math.MaxFloat64, -math.MaxFloat64, math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64, 1, -1, 0.5, -0.5}
			return edges[r.IntN(len(edges))]
		case 1:
			return float64(r.Int64N(11) - 5)
		}
		return r.NormFloat64() * math.Pow(10, float64(r.IntN(40)-20))
	case kindString:
		if r.IntN(10) == 0 {
			us := []string{"é", "日本", "😀", "Ω", "\u00ff", "z"}
			return us[r.IntN(len(us))] + us[r.IntN(len(us))]
		}
		alphabet := []byte{0x00, 0x01, 0x02, 'a', 'b', 0xfe, 0xff}
		b := make([]byte, r.IntN(5))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		return string(b)
	case kindTime:
		var sec int64
		switch r.IntN(3) {
		case 0:
			sec = r.Int64N(2e12) - 1e12
		case 1:
			sec = r.Int64N(5) - 2
		default:
			sec = 1.7e9 + r.Int64N(1000)
		}
		nsecs := []int64{0, 1, 999, 1000, 999_999_999, r.Int64N(1e9), r.Int64N(1e6) * 1000}
		return time.Unix(sec, nsecs[r.IntN(len(nsecs))]).In(time.FixedZone("x", 3600))
	}
	panic("bad kind")
}

// tuple returns a random tuple over schema (column kinds), possibly a
// strict prefix, with NULLs.
func (g valueGen) tuple(schema []int) []any {
	n := len(schema)
	if g.r.IntN(4) == 0 {
		n = g.r.IntN(len(schema) + 1)
	}
	t := make([]any, n)
	for i := range t {
		if g.r.IntN(7) == 0 {
			continue // NULL
		}
		t[i] = g.value(schema[i])
	}
	return t
}

func (g valueGen) schema() []int {
	s := make([]int, 1+g.r.IntN(4))
	for i := range s {
		s[i] = g.r.IntN(numKinds)
	}
	return s
}

// anyRow is a row of random values of any kinds.
func (g valueGen) anyRow() []any {
	row := make([]any, g.r.IntN(12))
	for i := range row {
		if g.r.IntN(6) == 0 {
			continue
		}
		row[i] = g.value(g.r.IntN(numKinds))
	}
	return row
}
