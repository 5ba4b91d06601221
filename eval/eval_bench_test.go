package eval

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/planner"
	"github.com/basindb/basin/sql"
)

// Benchmarks of the per-record hot paths of a task: filter evaluation,
// aggregate updates and the stored-row codec. Decoding input records and
// encoding record keys are package serde's benchmarks.
// Run with: go test -run '^$' -bench . -benchmem ./eval/

// benchOrdersCatalog holds orders(id BIGINT key, region VARCHAR,
// amount DOUBLE, qty BIGINT, ts TIMESTAMP).
func benchOrdersCatalog() *catalog.Catalog {
	cat := catalog.New()
	cat.Apply(0, &catalog.Command{Op: catalog.OpCreate, Relation: &catalog.Relation{
		Name: "orders", Kind: catalog.KindTable, Topic: "orders", Partitions: 1, KeyFormat: "kafka", ValueFormat: "json",
		Schema: catalog.Schema{Columns: []catalog.Column{
			{Name: "id", Type: catalog.BigInt, Key: true},
			{Name: "region", Type: catalog.Varchar},
			{Name: "amount", Type: catalog.Double},
			{Name: "qty", Type: catalog.BigInt},
			{Name: "ts", Type: catalog.Timestamp},
		}}}})
	return cat
}

func benchPlan(b *testing.B, q string) *planner.PullPlan {
	b.Helper()
	stmts, err := sql.Parse(q)
	if err != nil {
		b.Fatal(err)
	}
	p, err := planner.PlanSelect(benchOrdersCatalog(), stmts[0].(*sql.Select))
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// benchOrderRow returns an input row of orders, padded to the plan's
// input width (pseudo-columns NULL).
func benchOrderRow(p *planner.PullPlan) catalog.Row {
	row := make(catalog.Row, len(p.Input))
	copy(row, catalog.Row{int64(42), "eu", 75.5, int64(3), time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)})
	return row
}

// BenchmarkEvalFilter evaluates a compiled WHERE clause over one row.
func BenchmarkEvalFilter(b *testing.B) {
	for _, bc := range []struct{ name, where string }{
		{"cmp", "amount > 100"},
		{"arith-and-eq", "amount * 2 > 100 AND region = 'eu'"},
		{"or-in-like", "region IN ('us', 'eu', 'apac') OR region LIKE 'e%'"},
		// A long IN list is a set: the cost of a row does not grow with
		// the list (a pull query's key IN (...) filters every row found).
		{"in-100", "qty IN (" + inList(100, 7) + ")"},
		{"in-10k", "qty IN (" + inList(10000, 7) + ")"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			p := benchPlan(b, "SELECT id FROM orders WHERE "+bc.where)
			if p.Filter == nil {
				b.Fatalf("%s: no filter in plan", bc.where)
			}
			f := Compile(p.Filter)
			row := benchOrderRow(p)
			env := &Env{Now: time.Now()}
			if _, err := f(row, env); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := f(row, env); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkEvalProjection evaluates a SELECT list of three expressions
// into a new row, as a view's projection does per record.
func BenchmarkEvalProjection(b *testing.B) {
	p := benchPlan(b, "SELECT id, amount * qty, upper(region) FROM orders")
	exprs := make([]Expr, len(p.Output))
	for i, s := range p.Output {
		exprs[i] = Compile(s)
	}
	row := benchOrderRow(p)
	env := &Env{Now: time.Now()}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := EvalAll(exprs, row, env); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAggregatorAdd folds one row into the state of a group with
// COUNT(*), SUM(qty) and AVG(amount).
func BenchmarkAggregatorAdd(b *testing.B) {
	p := benchPlan(b, "SELECT region, count(*), sum(qty), avg(amount) FROM orders GROUP BY region")
	if len(p.Aggs) != 3 {
		b.Fatalf("plan has %d aggregates, want 3", len(p.Aggs))
	}
	a := NewAggregator(p.Aggs)
	st := a.Init()
	row := benchOrderRow(p)
	env := &Env{}
	b.ReportAllocs()
	for b.Loop() {
		if err := a.Add(st, row, env); err != nil {
			b.Fatal(err)
		}
	}
	if st[0].(int64) == 0 {
		b.Fatal("count did not move")
	}
}

// inList is "0, 1, ..., n-1" times step: the values of an IN list.
func inList(n, step int) string {
	vals := make([]string, n)
	for i := range vals {
		vals[i] = strconv.Itoa(i * step)
	}
	return strings.Join(vals, ", ")
}
