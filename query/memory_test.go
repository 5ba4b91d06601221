package query

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/eval"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/planner"
	"github.com/basindb/basin/sql"
)

// runLimited plans text and runs it under a basin.query_memory of limit
// (0: none), measuring it into an Analysis; it returns the rows
// returned, the analysis, the plan and the error.
func runLimited(t *testing.T, text string, limit int64) (int, *Analysis, *planner.PullPlan, error) {
	t.Helper()
	st, err := sql.Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	cat := catalog.New()
	plan, err := planner.PlanSelect(cat, st[0].(*sql.Select))
	if err != nil {
		t.Fatal(err)
	}
	if plan.Query == nil {
		t.Fatalf("%s: not a relational plan", text)
	}
	a := &Analysis{}
	env := &eval.Env{User: "u", Database: "basin", Session: session{cat}, QueryMemory: limit}
	n := 0
	err = Run(WithAnalysis(context.Background(), a), plan, env, nil, func(catalog.Row) error {
		n++
		return nil
	})
	return n, a, plan, err
}

// TestQueryMemory runs queries whose operators buffer more than a 64kB
// basin.query_memory: each fails with 53200 naming the setting and the
// operator, and runs under the default.
func TestQueryMemory(t *testing.T) {
	padded := "SELECT '" + strings.Repeat("x", 100) + "' || x AS p FROM generate_series(1, 150) x"
	for _, c := range []struct{ q, what string }{
		{"SELECT a, b FROM generate_series(1, 300) a JOIN generate_series(1, 300) b ON a % 2 = b % 2", "join"},
		{"SELECT a, b FROM generate_series(1, 300) a, generate_series(1, 300) b", "join"},
		{"SELECT x FROM generate_series(1, 1000) x ORDER BY x DESC", "ORDER BY"},
		{"SELECT x % 700, count(*) FROM generate_series(1, 1000) x GROUP BY 1", "GROUP BY"},
		{"SELECT array_agg(x) FROM generate_series(1, 1000) x", "GROUP BY"},
		{"SELECT count(DISTINCT x) FROM generate_series(1, 1000) x", "GROUP BY"},
		{"SELECT rank() OVER (PARTITION BY x % 3 ORDER BY x) FROM generate_series(1, 1000) x", "window functions"},
		{"SELECT DISTINCT x FROM generate_series(1, 1000) x", "DISTINCT"},
		{"SELECT generate_series(1, 3000)", "set-returning functions"},
		{"SELECT x FROM generate_series(1, 3000) x", "generate_series()"},
		// Rows of 100-character strings, whose sets outgrow the rows.
		{padded + " UNION " + padded, "UNION"},
		{padded + " INTERSECT " + padded, "INTERSECT"},
		{padded + " EXCEPT " + padded, "EXCEPT"},
		{"WITH w AS (" + padded + ") SELECT count(*) FROM w a JOIN w b ON a.p = b.p", "join"},
		{"SELECT 1 WHERE 5 IN (SELECT x FROM generate_series(1, 1000) x ORDER BY x)", "ORDER BY"},
	} {
		_, _, _, err := runLimited(t, c.q, 64<<10)
		pe, ok := pgerr.As(err)
		if !ok || pe.Code != pgerr.OutOfMemory || pe.Message != "query needs more than basin.query_memory (64kB) for its "+c.what ||
			!strings.Contains(pe.Hint, "basin.query_memory") {
			t.Errorf("%s under 64kB: %v, want 53200 for its %s", c.q, err, c.what)
		}
		if _, _, _, err := runLimited(t, c.q, 256<<20); err != nil {
			t.Errorf("%s under 256MB: %v", c.q, err)
		}
	}
	// What fits runs.
	if n, _, _, err := runLimited(t, "SELECT a, b FROM generate_series(1, 30) a JOIN generate_series(1, 30) b ON a = b ORDER BY a DESC", 64<<10); err != nil || n != 30 {
		t.Errorf("small join under 64kB: %d rows, %v", n, err)
	}
}

// TestQueryMemoryReleased checks that an operator gives its input's
// memory back once it has made its rows: a pipeline of nested SELECTs
// peaks at what one stage holds, however deep, and a correlated
// subquery's rows are given back after each outer row.
func TestQueryMemoryReleased(t *testing.T) {
	_, one, _, err := runLimited(t, "SELECT count(*) FROM (SELECT x + 1 AS x FROM generate_series(1, 1000) x) a", 0)
	if err != nil {
		t.Fatal(err)
	}
	_, four, _, err := runLimited(t, "SELECT count(*) FROM (SELECT x + 1 AS x FROM (SELECT x + 1 AS x FROM (SELECT x + 1 AS x FROM (SELECT x + 1 AS x FROM generate_series(1, 1000) x) a) b) c) d", 0)
	if err != nil {
		t.Fatal(err)
	}
	if one.PeakMemory == 0 || four.PeakMemory != one.PeakMemory {
		t.Errorf("peak of four nested stages %d, of one %d: want the same", four.PeakMemory, one.PeakMemory)
	}
	// 300 runs of a subquery of up to 300 rows: 3.6 MB if kept.
	n, a, _, err := runLimited(t, "SELECT a FROM generate_series(1, 300) a WHERE 150 IN (SELECT b FROM generate_series(1, 300) b WHERE b >= a)", 64<<10)
	if err != nil || n != 150 {
		t.Fatalf("correlated subquery under 64kB: %d rows, %v", n, err)
	}
	if a.PeakMemory > 64<<10 {
		t.Errorf("peak %d past the limit", a.PeakMemory)
	}
}

// TestExplainAnalyze checks the numbers EXPLAIN ANALYZE shows on each
// line of a plan: rows per operator and stage, loops of an operator
// that ran more than once, times when timing.
func TestExplainAnalyze(t *testing.T) {
	const q = "SELECT g, count(*) FROM (SELECT x % 3 AS g FROM generate_series(1, 10) x WHERE x > 2) s GROUP BY g HAVING count(*) > 2 ORDER BY g LIMIT 1"
	n, a, plan, err := runLimited(t, q, 0)
	if err != nil || n != 1 {
		t.Fatalf("%d rows, %v", n, err)
	}
	got := plan.Explain(a.Annotator(false))
	want := `  Limit 1 offset 0 (actual rows=1)
  Sort [g] (actual rows=2)
  Project [g, count(*)] (actual rows=2)
  Filter (HAVING) (count(*) > 2) (actual rows=2)
  HashAggregate group=[g] aggs=[count(*), count(*)] (actual rows=3)
  Subquery (actual rows=8)
    Project [(x % 3)] (actual rows=8)
    Filter (x > 2) (actual rows=8)
    Function generate_series(1, 10) (actual rows=10)
`
	if got != want {
		t.Errorf("EXPLAIN (ANALYZE, TIMING OFF):\n%s\nwant:\n%s", got, want)
	}
	timed := regexp.MustCompile(`^  .* \(actual rows=\d+ time=\d+\.\d{3}ms\)$`)
	for _, l := range strings.Split(strings.TrimSuffix(plan.Explain(a.Annotator(true)), "\n"), "\n") {
		if !timed.MatchString(l) {
			t.Errorf("timed line %q", l)
		}
	}
	if a.Rows != 1 || a.PeakMemory <= 0 {
		t.Errorf("rows %d, peak memory %d", a.Rows, a.PeakMemory)
	}
	// A branch that never runs, and a Rel that ran twice.
	_, a, plan, err = runLimited(t, "SELECT x FROM generate_series(1, 3) x WHERE false", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := a.Op(plan.Query.Root, "Project"); !ok {
		t.Errorf("the block's Project stage was not recorded")
	}
	if s := a.Annotator(false)(&planner.ValuesRel{}, ""); s != " (never executed)" {
		t.Errorf("an operator that never ran: %q", s)
	}
	a.record(plan.Query.Root, "Loop", 2, timeNow())
	a.record(plan.Query.Root, "Loop", 3, timeNow())
	if s := a.Annotator(false)(plan.Query.Root, "Loop"); s != " (actual rows=5 loops=2)" {
		t.Errorf("an operator that ran twice: %q", s)
	}
}

func timeNow() time.Time { return time.Now() }

// TestSortLimitKeepsTopN checks that a sort under a LIMIT keeps only the
// rows that can still be among the first: 5,000 rows sort within a
// limit their full sort would pass, ties in arrival order.
func TestSortLimitKeepsTopN(t *testing.T) {
	collect := func(text string, limit int64) ([]int64, error) {
		st, err := sql.Parse(text)
		if err != nil {
			t.Fatal(err)
		}
		cat := catalog.New()
		plan, err := planner.PlanSelect(cat, st[0].(*sql.Select))
		if err != nil {
			t.Fatal(err)
		}
		var got []int64
		env := &eval.Env{User: "u", Database: "basin", Session: session{cat}, QueryMemory: limit}
		err = Run(context.Background(), plan, env, nil, func(r catalog.Row) error {
			got = append(got, r[0].(int64))
			return nil
		})
		return got, err
	}
	const limit = 512 << 10
	if _, err := collect("SELECT x FROM generate_series(1, 5000) x ORDER BY x % 7, x DESC", limit); err == nil {
		t.Fatal("the full sort fits in 512kB: the test needs more rows")
	}
	for _, q := range []string{
		"SELECT x FROM generate_series(1, 5000) x ORDER BY x % 7, x DESC LIMIT 3 OFFSET 2",
		"SELECT * FROM (SELECT x FROM generate_series(1, 5000) x ORDER BY x % 7, x DESC LIMIT 3 OFFSET 2) s",
	} {
		got, err := collect(q, limit)
		if err != nil || fmt.Sprint(got) != "[4984 4977 4970]" {
			t.Errorf("%s: %v %v, want [4984 4977 4970]", q, got, err)
		}
	}
	got, err := collect("SELECT x FROM generate_series(1, 5000) x ORDER BY x % 2 LIMIT 600", limit)
	if err != nil || len(got) != 600 {
		t.Fatalf("ORDER BY x %% 2 LIMIT 600: %d rows, %v", len(got), err)
	}
	for i, x := range got {
		if x != int64(2*(i+1)) {
			t.Fatalf("ORDER BY x %% 2 LIMIT 600: row %d is %d, want %d (ties in arrival order)", i, x, 2*(i+1))
		}
	}
	// A top-N equals the first rows of the full sort, with many ties
	// and rows that arrive in every order relative to the kept ones.
	for _, order := range []string{"(x * 7919) % 97 DESC", "(x * 7919) % 13, x % 5 DESC", "x % 3, (x * 31) % 1000"} {
		full, err := collect("SELECT x FROM generate_series(1, 6000) x ORDER BY "+order, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{1, 7, 600, 1500, 5999} {
			got, err := collect(fmt.Sprintf("SELECT x FROM generate_series(1, 6000) x ORDER BY %s LIMIT %d", order, n), 0)
			if err != nil || fmt.Sprint(got) != fmt.Sprint(full[:n]) {
				t.Fatalf("ORDER BY %s LIMIT %d: %v, want the full sort's first rows", order, n, err)
			}
		}
	}
}
