package eval

import (
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/cockroachdb/apd/v3"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/numeric"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/materialize"
	"github.com/basindb/basin/planner"
	"github.com/basindb/basin/sql"
)

// evalCatalog holds r, the relation test expressions read.
func evalCatalog() *catalog.Catalog {
	cat := catalog.New()
	cat.Apply(0, &catalog.Command{Op: catalog.OpCreate, Relation: &catalog.Relation{
		Name: "r", Kind: catalog.KindTable, Topic: "r", Partitions: 1, KeyFormat: "kafka", ValueFormat: "json",
		Schema: catalog.Schema{Columns: []catalog.Column{
			{Name: "a", Type: catalog.BigInt, Key: true},
			{Name: "i", Type: catalog.Int},
			{Name: "d", Type: catalog.Double},
			{Name: "s", Type: catalog.Varchar},
			{Name: "b", Type: catalog.Boolean},
			{Name: "ts", Type: catalog.Timestamp},
		}}}})
	return cat
}

// viewAggs returns the aggregates of a view over r with the aggregate
// calls aggs, bound over r's record row (its columns, then ROWTIME): the
// ones only a view's aggregator has, besides count, sum, avg, min and
// max, which a pull query folds into a read.
func viewAggs(t *testing.T, aggs string) []planner.AggSpec {
	t.Helper()
	text := "CREATE TABLE v AS SELECT a, " + aggs + " FROM r GROUP BY a"
	stmts, err := sql.ParseStatements(text)
	if err != nil {
		t.Fatal(err)
	}
	p, err := planner.PlanView(evalCatalog(), stmts[0].Stmt.(*sql.CreateTableAs), text)
	if err != nil {
		t.Fatal(err)
	}
	return p.Aggs
}

// planOver plans q against evalCatalog.
func planOver(t *testing.T, q string) (*planner.PullPlan, error) {
	t.Helper()
	stmts, err := sql.Parse(q)
	if err != nil {
		return nil, err
	}
	return planner.PlanSelect(evalCatalog(), stmts[0].(*sql.Select))
}

// evalExpr binds expr over r and evaluates it over row (r's columns).
func evalExpr(t *testing.T, expr string, row catalog.Row) (any, error) {
	t.Helper()
	p, err := planOver(t, "SELECT "+expr+" FROM r")
	if err != nil {
		return nil, err
	}
	full := make(catalog.Row, len(p.Input))
	copy(full, row)
	env := &Env{Now: time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC), User: "u", Database: "basin", Version: "v"}
	return Compile(p.Output[0])(full, env)
}

var (
	t0      = time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	rowA    = catalog.Row{int64(1), int64(10), 1.5, "abc", true, t0}
	rowNull = catalog.Row{int64(2), nil, nil, nil, nil, nil}
	rowMax  = catalog.Row{int64(math.MaxInt64), int64(math.MaxInt32), math.NaN(), "100%_x", false, t0}
	rowMin  = catalog.Row{int64(math.MinInt64), int64(math.MinInt32), math.Inf(-1), "", false, t0}
)

func TestEval(t *testing.T) {
	type tc struct {
		expr string
		row  catalog.Row
		want any
		code pgerr.Code // expected error
	}
	cases := []tc{
		// Arithmetic, widening, NULL propagation.
		{expr: "a + i", row: rowA, want: int64(11)},
		{expr: "i + d", row: rowA, want: 11.5},
		{expr: "i / 3", row: rowA, want: int64(3)},
		{expr: "-i / 3", row: rowA, want: int64(-3)},
		{expr: "i % 3", row: rowA, want: int64(1)},
		{expr: "-i % 3", row: rowA, want: int64(-1)},
		{expr: "d / 2", row: rowA, want: 0.75},
		{expr: "i + NULL", row: rowA, want: nil},
		{expr: "i + a", row: rowNull, want: nil},
		{expr: "-d", row: rowNull, want: nil},
		{expr: "i / 0", row: rowA, code: pgerr.DivisionByZero},
		{expr: "i % 0", row: rowA, code: pgerr.DivisionByZero},
		{expr: "d / 0", row: rowA, code: pgerr.DivisionByZero},
		{expr: "i / 0", row: rowNull, want: nil},
		// Overflow.
		{expr: "a + 1", row: rowMax, code: pgerr.NumericValueOutOfRange},
		{expr: "a - 1", row: rowMin, code: pgerr.NumericValueOutOfRange},
		{expr: "a * 2", row: rowMax, code: pgerr.NumericValueOutOfRange},
		{expr: "a * -1", row: rowMin, code: pgerr.NumericValueOutOfRange},
		{expr: "a / -1", row: rowMin, code: pgerr.NumericValueOutOfRange},
		{expr: "a % -1", row: rowMin, want: int64(0)},
		{expr: "-a", row: rowMin, code: pgerr.NumericValueOutOfRange},
		{expr: "-a", row: rowMax, want: int64(-math.MaxInt64)},
		{expr: "i + i", row: rowMax, code: pgerr.NumericValueOutOfRange},
		{expr: "i + 1", row: rowMax, code: pgerr.NumericValueOutOfRange},     // 1 is an integer, as in Postgres
		{expr: "i + 1::bigint", row: rowMax, want: int64(math.MaxInt32 + 1)}, // int + bigint is bigint
		{expr: "-i", row: rowMin, code: pgerr.NumericValueOutOfRange},
		{expr: "abs(i)", row: rowMin, code: pgerr.NumericValueOutOfRange},
		{expr: "abs(a)", row: rowMin, code: pgerr.NumericValueOutOfRange},
		{expr: "abs(-i)", row: rowA, want: int64(10)},
		// Decimal constants are numeric (1e308 * 10 is exact there);
		// cast to double precision they overflow as float8 does.
		{expr: "1e308::float8 * 10", row: rowA, code: pgerr.NumericValueOutOfRange},
		{expr: "1e308::float8 + 1e308::float8", row: rowA, code: pgerr.NumericValueOutOfRange},
		{expr: "1e-300::float8 / 1e300::float8", row: rowA, code: pgerr.NumericValueOutOfRange},
		{expr: "d * 2", row: rowMin, want: math.Inf(-1)}, // infinity in, infinity out
		{expr: "CAST(a AS INT)", row: rowMax, code: pgerr.NumericValueOutOfRange},
		{expr: "CAST(d AS BIGINT)", row: rowMax, code: pgerr.NumericValueOutOfRange},
		// Comparison and three-valued logic.
		{expr: "i > 5", row: rowA, want: true},
		{expr: "i = NULL", row: rowA, want: nil},
		{expr: "i <> 10", row: rowNull, want: nil},
		{expr: "b AND i > 5", row: rowA, want: true},
		{expr: "b AND NULL", row: rowA, want: nil},
		{expr: "NOT b AND NULL", row: rowA, want: false},
		{expr: "b OR NULL", row: rowA, want: true},
		{expr: "NOT b OR NULL", row: rowA, want: nil},
		{expr: "NOT b", row: rowNull, want: nil},
		{expr: "b IS NULL", row: rowNull, want: true},
		{expr: "s IS NOT NULL", row: rowNull, want: false},
		{expr: "i IN (1, 10)", row: rowA, want: true},
		{expr: "i IN (1, NULL)", row: rowA, want: nil},
		{expr: "i NOT IN (1, NULL)", row: rowA, want: nil},
		{expr: "i NOT IN (1, 2)", row: rowA, want: true},
		{expr: "i IN (1, 2)", row: rowNull, want: nil},
		{expr: "i BETWEEN 10 AND 10", row: rowA, want: true},
		{expr: "d = 'NaN'", row: rowMax, want: true},
		{expr: "d > 1e308", row: rowMax, want: true}, // NaN sorts above every number
		{expr: "d < 0", row: rowMin, want: true},
		{expr: "ts > '2024-01-01'", row: rowA, want: true},
		{expr: "s < 'abd'", row: rowA, want: true},
		// LIKE.
		{expr: "s LIKE 'a%'", row: rowA, want: true},
		{expr: "s LIKE 'A%'", row: rowA, want: false},
		{expr: "s ILIKE 'A%'", row: rowA, want: true},
		{expr: "s NOT LIKE '_b_'", row: rowA, want: false},
		{expr: "s LIKE '%'", row: rowNull, want: nil},
		{expr: "s LIKE '100\\%\\_%'", row: rowMax, want: true},
		{expr: "s LIKE '100\\%\\_'", row: rowMax, want: false},
		// CASE.
		{expr: "CASE WHEN b THEN 'yes' ELSE 'no' END", row: rowNull, want: "no"},
		{expr: "CASE WHEN b THEN 'yes' END", row: rowNull, want: nil},
		{expr: "CASE i WHEN 10 THEN 1 WHEN 20 THEN 2 END", row: rowA, want: int64(1)},
		{expr: "CASE WHEN i > 5 THEN d ELSE i END", row: rowA, want: 1.5},
		// Casts.
		{expr: "CAST(d AS INT)", row: rowA, want: int64(2)},
		{expr: "CAST(-d AS INT)", row: rowA, want: int64(-2)},
		{expr: "CAST(s AS INT)", row: rowA, code: pgerr.InvalidTextRepresentation},
		{expr: "CAST(ts AS VARCHAR)", row: rowA, want: "2024-01-02 03:04:05"},
		{expr: "CAST(i AS VARCHAR) || s", row: rowA, want: "10abc"},
		{expr: "CAST(b AS INT)", row: rowA, want: int64(1)},
		{expr: "CAST(s AS BOOLEAN)", row: rowA, code: pgerr.InvalidTextRepresentation},
		{expr: "CAST(d AS VARCHAR)", row: rowMax, want: "NaN"},
		{expr: "CAST(d AS VARCHAR)", row: rowMin, want: "-Infinity"},
		// Functions.
		{expr: "coalesce(i, a)", row: rowNull, want: int64(2)},
		{expr: "coalesce(s, 'none')", row: rowNull, want: "none"},
		{expr: "nullif(i, 10)", row: rowA, want: nil},
		{expr: "nullif(i, NULL)", row: rowA, want: int64(10)},
		{expr: "nullif(i, 9.6)", row: rowA, want: int64(10)},
		{expr: "nullif(i, 10.0)", row: rowA, want: nil},
		{expr: "i IN (9.6, 11)", row: rowA, want: false},
		{expr: "i IN (10.0, 11)", row: rowA, want: true},
		{expr: "greatest(d, 1, 2)", row: rowMax, want: math.NaN()},
		{expr: "least(d, 1, 2)", row: rowMin, want: math.Inf(-1)},
		{expr: "greatest(i, NULL)", row: rowA, want: int64(10)},
		{expr: "concat(s, i, NULL)", row: rowA, want: "abc10"},
		{expr: "length(s)", row: rowNull, want: nil},
		{expr: "upper(s) || lower('X')", row: rowA, want: "ABCx"},
		{expr: "substr(s, 2)", row: rowA, want: "bc"},
		{expr: "substr(s, 0, 2)", row: rowA, want: "a"},
		{expr: "substr(s, -5, 7)", row: rowA, want: "a"},
		{expr: "substr(s, 2, 9223372036854775807)", row: rowA, want: "bc"},
		{expr: "substr(s, -9223372036854775807, 9223372036854775807)", row: rowA, want: ""},
		{expr: "substr(s, 4)", row: rowA, want: ""},
		{expr: "substr(s, 1, -1)", row: rowA, code: pgerr.SubstringError},
		{expr: "round(d)", row: rowA, want: 2.0},
		{expr: "round(-d)", row: rowA, want: -2.0},
		{expr: "round(d * 1.005, 2)", row: rowA, want: 1.51},
		{expr: "sqrt(d - 2)", row: rowA, code: pgerr.InvalidArgumentForPowerFunction},
		{expr: "now()", row: rowA, want: time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)},
		{expr: "current_user || '@' || current_database()", row: rowA, want: "u@basin"},
	}
	for _, c := range cases {
		got, err := evalExpr(t, c.expr, c.row)
		if c.code != "" {
			if pgerr.CodeOf(err) != c.code {
				t.Errorf("%s: got %v, %v; want error %s", c.expr, got, err, c.code)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.expr, err)
			continue
		}
		if !sameValue(got, c.want) {
			t.Errorf("%s = %#v, want %#v", c.expr, got, c.want)
		}
	}
}

func sameValue(a, b any) bool {
	if x, ok := a.(float64); ok {
		if y, ok := b.(float64); ok && x != x && y != y {
			return true
		}
	}
	if x, ok := a.(time.Time); ok {
		y, ok := b.(time.Time)
		return ok && x.Equal(y)
	}
	if x, ok := a.(*apd.Decimal); ok {
		// Numerics are the same when their text is: equal, same scale.
		switch y := b.(type) {
		case *apd.Decimal:
			return numeric.Text(x) == numeric.Text(y)
		case string:
			return numeric.Text(x) == y
		}
	}
	return reflect.DeepEqual(a, b)
}

func TestCompareOrder(t *testing.T) {
	// Each value sorts strictly before the next.
	orders := [][]any{
		{math.Inf(-1), -1e308, int64(-3), -2.5, 0.0, int64(1), 1.5, int64(2), math.MaxFloat64, math.Inf(1), math.NaN()},
		{int64(math.MinInt64), int64(-1), int64(0), int64(math.MaxInt64)},
		{"", "A", "B", "a", "ab", "b", "é"},
		{false, true},
		{t0.Add(-time.Microsecond), t0, t0.Add(time.Microsecond)},
	}
	for _, o := range orders {
		for i := range o {
			for j := range o {
				want := cmp3(i < j, i > j)
				if got := Compare(o[i], o[j]); got != want {
					t.Errorf("Compare(%v, %v) = %d, want %d", o[i], o[j], got, want)
				}
			}
		}
	}
	if Compare(0.0, math.Copysign(0, -1)) != 0 || Compare(math.NaN(), math.NaN()) != 0 || Compare(int64(2), 2.0) != 0 {
		t.Error("equal values do not compare equal")
	}
	vals := []any{int64(3), nil, int64(1), nil, int64(2)}
	sort.SliceStable(vals, func(i, j int) bool { return CompareNullable(vals[i], vals[j], true) < 0 })
	if !reflect.DeepEqual(vals, []any{nil, nil, int64(1), int64(2), int64(3)}) {
		t.Errorf("NULLS FIRST order: %v", vals)
	}
	sort.SliceStable(vals, func(i, j int) bool { return CompareNullable(vals[i], vals[j], false) < 0 })
	if !reflect.DeepEqual(vals, []any{int64(1), int64(2), int64(3), nil, nil}) {
		t.Errorf("NULLS LAST order: %v", vals)
	}
}

func TestLike(t *testing.T) {
	for _, c := range []struct {
		s, p string
		fold bool
		want bool
	}{
		{"abc", "abc", false, true},
		{"abc", "a%", false, true},
		{"abc", "%c", false, true},
		{"abc", "%b%", false, true},
		{"abc", "a_c", false, true},
		{"abc", "a__c", false, false},
		{"abc", "", false, false},
		{"", "", false, true},
		{"", "%", false, true},
		{"", "_", false, false},
		{"abc", "ABC", false, false},
		{"abc", "ABC", true, true},
		{"a%c", "a\\%c", false, true},
		{"abc", "a\\%c", false, false},
		{"a_c", "a\\_c", false, true},
		{"abc", "a\\_c", false, false},
		{"a\\c", "a\\\\c", false, true},
		{"héllo", "h_llo", false, true},
		{"héllo", "%é%", false, true},
		{"ÉCOLE", "école", true, true},
		{"aaa", "%%a", false, true},
		{"ab", "%a%b%", false, true},
		{"ba", "%a%b%", false, false},
		{"abc", "abc\\", false, false},
	} {
		if got := Like(c.s, c.p, c.fold); got != c.want {
			t.Errorf("Like(%q, %q, %v) = %v, want %v", c.s, c.p, c.fold, got, c.want)
		}
	}
}

func TestAggregator(t *testing.T) {
	p, err := planOver(t, "SELECT count(*), count(i), sum(i), sum(d), avg(i), min(s), max(s), min(d), max(d), min(ts) FROM r")
	if err != nil {
		t.Fatal(err)
	}
	agg := NewAggregator(p.Aggs)
	width := len(p.Input)
	pad := func(r catalog.Row) catalog.Row {
		full := make(catalog.Row, width)
		copy(full, r)
		return full
	}
	st := agg.Init()
	// An empty group: counts are 0, everything else NULL.
	want := []any{int64(0), int64(0), nil, nil, nil, nil, nil, nil, nil, nil}
	if got := agg.Results(nil, st); !reflect.DeepEqual(got, want) {
		t.Fatalf("empty group: %v, want %v", got, want)
	}
	rows := []catalog.Row{
		{int64(1), int64(10), 1.5, "b", true, t0},
		{int64(2), nil, nil, nil, nil, nil},
		{int64(3), int64(-4), math.NaN(), "a", false, t0.Add(-time.Hour)},
		{int64(4), int64(3), -2.0, "c", false, t0},
	}
	for i, r := range rows {
		if err := agg.Add(st, pad(r), nil); err != nil {
			t.Fatal(err)
		}
		// The state goes through the row encoding between rows, as it
		// does in a store between transactions and to a replica.
		b, err := materialize.EncodeRow(append([]any{int64(i)}, st...))
		if err != nil {
			t.Fatal(err)
		}
		vals, err := materialize.DecodeRow(b)
		if err != nil {
			t.Fatal(err)
		}
		st = vals[1:]
	}
	got := agg.Results(nil, st)
	// avg of integers is numeric, with numeric division's scale.
	want = []any{int64(4), int64(3), int64(9), math.NaN(), "3.0000000000000000", "a", "c", -2.0, math.NaN(), t0.Add(-time.Hour)}
	if len(got) != len(want) {
		t.Fatalf("results %v, want %v", got, want)
	}
	for i := range want {
		if !sameValue(got[i], want[i]) {
			t.Errorf("%s = %#v, want %#v", p.Aggs[i], got[i], want[i])
		}
	}

	// A query's sum over bigints is numeric, as Postgres's: it goes on
	// exactly past bigint's range. A view's is bigint (its spec's type),
	// and overflows with 22003, not silently.
	p, err = planOver(t, "SELECT sum(a) FROM r")
	if err != nil {
		t.Fatal(err)
	}
	if p.Aggs[0].T != catalog.Decimal {
		t.Fatalf("sum(bigint) is %s, want NUMERIC", p.Aggs[0].T)
	}
	for _, view := range []bool{false, true} {
		specs := slices.Clone(p.Aggs)
		if view {
			specs[0].T = catalog.BigInt
		}
		agg = NewAggregator(specs)
		st = agg.Init()
		for _, x := range []int64{math.MaxInt64, -1, 2} {
			err = agg.Add(st, pad(catalog.Row{x}), nil)
		}
		switch {
		case view && pgerr.CodeOf(err) != pgerr.NumericValueOutOfRange:
			t.Fatalf("bigint sum overflow: %v", err)
		case !view && err != nil:
			t.Fatalf("numeric sum past bigint: %v", err)
		case !view && !sameValue(agg.Results(nil, st)[0], "9223372036854775808"):
			t.Fatalf("numeric sum past bigint = %v", agg.Results(nil, st)[0])
		}
	}
}

// TestRetractingAggregator adds and takes back random rows of a group,
// as a view over a table does, and after each step checks the results
// against an aggregator that folds the rows the group holds then (the
// same aggregates recomputed), with the state through the row encoding
// between steps. A group that loses its last row is Empty.
func TestRetractingAggregator(t *testing.T) {
	p, err := planOver(t, "SELECT count(*), count(i), count(DISTINCT i), sum(i), avg(i), min(s), max(s), min(i), max(ts), count(DISTINCT s) FROM r")
	if err != nil {
		t.Fatal(err)
	}
	p.Aggs = append(p.Aggs, viewAggs(t, "stddev_samp(i), var_pop(d), stddev_pop(d), variance(i), bool_and(b), bool_or(b), every(b), string_agg(s, '-'), "+libraryAggs)...)
	width := len(p.Input)
	agg := NewRetractingAggregator(p.Aggs)
	rng := rand.New(rand.NewPCG(4, 5))
	st := agg.Init()
	var held []catalog.Row
	for step := range 2000 {
		if len(held) > 0 && rng.IntN(5) < 2 {
			k := rng.IntN(len(held))
			if err := agg.Retract(st, held[k], nil); err != nil {
				t.Fatal(err)
			}
			held = append(held[:k], held[k+1:]...)
		} else {
			r := make(catalog.Row, width)
			if rng.IntN(6) > 0 {
				r[1] = int64(rng.IntN(20) - 10)
			}
			if rng.IntN(6) > 0 {
				r[3] = string(rune('a' + rng.IntN(8)))
			}
			if rng.IntN(6) > 0 {
				r[5] = t0.Add(time.Duration(rng.IntN(50)) * time.Minute)
			}
			if rng.IntN(6) > 0 {
				r[2] = float64(rng.IntN(100)) / 4
			}
			if rng.IntN(6) > 0 {
				r[4] = rng.IntN(3) > 0
			}
			if err := agg.Add(st, r, nil); err != nil {
				t.Fatal(err)
			}
			held = append(held, r)
		}
		b, err := materialize.EncodeRow(st)
		if err != nil {
			t.Fatal(err)
		}
		if st, err = materialize.DecodeRow(b); err != nil {
			t.Fatal(err)
		}
		fresh := NewAggregator(p.Aggs)
		want := fresh.Init()
		for _, r := range held {
			if err := fresh.Add(want, r, nil); err != nil {
				t.Fatal(err)
			}
		}
		got, exp := agg.Results(nil, st), fresh.Results(nil, want)
		for i := range exp {
			if !closeValue(unordered(p.Aggs[i], got[i]), unordered(p.Aggs[i], exp[i])) {
				t.Fatalf("step %d, %d rows: %s = %#v, recomputed %#v", step, len(held), p.Aggs[i], got[i], exp[i])
			}
		}
		if agg.Empty(st) != (len(held) == 0) {
			t.Fatalf("step %d: Empty = %v with %d rows", step, agg.Empty(st), len(held))
		}
	}
}

// TestRetractingSumOverflow takes rows back in an order whose partial
// sums leave BIGINT: the sum is kept in 128 bits, reads NULL while it is
// beyond BIGINT, and is exact again once it is back within.
func TestRetractingSumOverflow(t *testing.T) {
	p, err := planOver(t, "SELECT sum(a) FROM r")
	if err != nil {
		t.Fatal(err)
	}
	agg := NewRetractingAggregator(p.Aggs)
	st := agg.Init()
	row := func(v int64) catalog.Row { return catalog.Row{v, nil, nil, nil, nil, nil} }
	for _, v := range []int64{math.MaxInt64, -1, 1} {
		if err := agg.Add(st, row(v), nil); err != nil {
			t.Fatal(err)
		}
	}
	check := func(want any) {
		t.Helper()
		if got := agg.Results(nil, st)[0]; got != want {
			t.Fatalf("sum = %v, want %v", got, want)
		}
	}
	check(int64(math.MaxInt64))
	if err := agg.Retract(st, row(-1), nil); err != nil {
		t.Fatal(err)
	}
	check(nil) // MaxInt64 + 1
	if err := agg.Retract(st, row(1), nil); err != nil {
		t.Fatal(err)
	}
	check(int64(math.MaxInt64))
	for _, v := range []int64{math.MinInt64, math.MinInt64} {
		if err := agg.Add(st, row(v), nil); err != nil {
			t.Fatal(err)
		}
	}
	check(nil) // MaxInt64 + 2 MinInt64
	if err := agg.Retract(st, row(math.MaxInt64), nil); err != nil {
		t.Fatal(err)
	}
	check(nil)
	if err := agg.Retract(st, row(math.MinInt64), nil); err != nil {
		t.Fatal(err)
	}
	check(int64(math.MinInt64))
	if err := agg.Retract(st, row(math.MinInt64), nil); err != nil {
		t.Fatal(err)
	}
	check(nil) // no rows
	if !agg.Empty(st) {
		t.Fatal("the group is not empty with no rows")
	}
}

// TestAggregatorMerge folds random rows into three states, merges them
// in turn (as session windows that join do) and checks the results
// against one state that folded every row, for the sums of a view
// (BIGINT) and of a query (NUMERIC) alike; a merge that overflows a
// BIGINT sum fails with 22003 and leaves its state as it was.
func TestAggregatorMerge(t *testing.T) {
	p, err := planOver(t, "SELECT count(*), count(i), count(DISTINCT i), sum(i), avg(i), min(s), max(s), min(i), max(ts), count(DISTINCT s), sum(d), avg(d), sum(a) FROM r")
	if err != nil {
		t.Fatal(err)
	}
	p.Aggs = append(p.Aggs, viewAggs(t, "stddev(i), var_samp(d), stddev_pop(i), var_pop(d), bool_and(b), bool_or(b), string_agg(s, ', '), "+libraryAggs)...)
	width := len(p.Input)
	rng := rand.New(rand.NewPCG(8, 9))
	for _, view := range []bool{false, true} {
		specs := slices.Clone(p.Aggs)
		if view {
			for i := range specs {
				if specs[i].Func == "sum" && specs[i].T == catalog.Decimal {
					specs[i].T = catalog.BigInt
				}
			}
		}
		for trial := range 200 {
			agg := NewAggregator(specs)
			parts := [][]any{agg.Init(), agg.Init(), agg.Init()}
			all := agg.Init()
			for range rng.IntN(30) {
				r := make(catalog.Row, width)
				if rng.IntN(6) > 0 {
					r[0] = int64(rng.IntN(2000) - 1000)
				}
				if rng.IntN(6) > 0 {
					r[1] = int64(rng.IntN(20) - 10)
				}
				if rng.IntN(6) > 0 {
					r[2] = float64(rng.IntN(100)) / 4
				}
				if rng.IntN(6) > 0 {
					r[3] = string(rune('a' + rng.IntN(8)))
				}
				if rng.IntN(6) > 0 {
					r[5] = t0.Add(time.Duration(rng.IntN(50)) * time.Minute)
				}
				if rng.IntN(6) > 0 {
					r[4] = rng.IntN(3) > 0
				}
				if err := agg.Add(parts[rng.IntN(3)], r, nil); err != nil {
					t.Fatal(err)
				}
				if err := agg.Add(all, r, nil); err != nil {
					t.Fatal(err)
				}
			}
			got := parts[0]
			for _, st := range parts[1:] {
				if err := agg.Merge(got, st); err != nil {
					t.Fatal(err)
				}
			}
			g, w := agg.Results(nil, got), agg.Results(nil, all)
			for i := range w {
				if !closeValue(unordered(specs[i], g[i]), unordered(specs[i], w[i])) {
					t.Fatalf("view %v, trial %d: merged %s = %#v, folded %#v", view, trial, specs[i], g[i], w[i])
				}
			}
		}
	}
	p, err = planOver(t, "SELECT count(*), sum(a) FROM r")
	if err != nil {
		t.Fatal(err)
	}
	p.Aggs[1].T = catalog.BigInt
	agg := NewAggregator(p.Aggs)
	x, y := agg.Init(), agg.Init()
	row := func(v int64) catalog.Row { return catalog.Row{v, nil, nil, nil, nil, nil} }
	if err := agg.Add(x, row(math.MaxInt64), nil); err != nil {
		t.Fatal(err)
	}
	if err := agg.Add(y, row(1), nil); err != nil {
		t.Fatal(err)
	}
	if err := agg.Merge(x, y); pgerr.CodeOf(err) != pgerr.NumericValueOutOfRange {
		t.Fatalf("merging past BIGINT: %v", err)
	}
	if res := agg.Results(nil, x); res[0] != int64(1) || res[1] != int64(math.MaxInt64) {
		t.Fatalf("after a failed merge: %v", res)
	}
}

// libraryAggs are calls of the aggregate library (libagg.go) over r.
const libraryAggs = "array_agg(i), collect_list(s), collect_set(i), topk(i, 3), topkdistinct(s, 2), histogram(s), corr(d, i), correlation(i, d), covar_pop(d, i), covar_samp(i, d)"

// unordered sorts the value of an array aggregate whose order is the
// rows' (array_agg, collect_list, collect_set), whose rows came in
// another order or were merged or taken back.
func unordered(s planner.AggSpec, v any) any {
	a, ok := v.([]any)
	if !ok || s.Func != "array_agg" && s.Func != "collect_list" && s.Func != "collect_set" {
		return v
	}
	a = slices.Clone(a)
	slices.SortFunc(a, func(x, y any) int { return CompareNullable(x, y, false) })
	return a
}

// closeValue is sameValue, but floats need only agree to about 1e-9 of
// their size: a statistical aggregate's state merged or taken back is
// rounded otherwise than one folded row by row.
func closeValue(a, b any) bool {
	x, ok1 := a.(float64)
	y, ok2 := b.(float64)
	if ok1 && ok2 {
		return math.Abs(x-y) <= 1e-9*max(1, math.Abs(x), math.Abs(y)) || x != x && y != y
	}
	return sameValue(a, b)
}
