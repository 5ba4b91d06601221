package planner

import (
	"testing"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/sql"
)

// Benchmarks of planning the SELECTs a client sends most: a key lookup
// and a filtered scan. Parsing is measured separately so the two costs
// can be told apart.
// Run with: go test -run '^$' -bench . -benchmem ./planner/

func benchCatalog() *catalog.Catalog {
	cat := catalog.New()
	cat.Apply(0, &catalog.Command{Op: catalog.OpCreate, Relation: &catalog.Relation{
		Name: "orders", Kind: catalog.KindTable, Topic: "orders", Partitions: 8, KeyFormat: "kafka", ValueFormat: "json",
		Schema: catalog.Schema{Columns: []catalog.Column{
			{Name: "id", Type: catalog.BigInt, Key: true},
			{Name: "region", Type: catalog.Varchar},
			{Name: "amount", Type: catalog.Double},
			{Name: "qty", Type: catalog.BigInt},
			{Name: "ts", Type: catalog.Timestamp},
		}}}})
	return cat
}

var benchQueries = []struct{ name, q string }{
	{"lookup", "SELECT id, region, amount FROM orders WHERE id = 42"},
	{"scan-filter", "SELECT region, amount * 2 FROM orders WHERE amount > 100 AND region = 'eu'"},
}

// BenchmarkParseSelect parses the benchmark queries.
func BenchmarkParseSelect(b *testing.B) {
	for _, bc := range benchQueries {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := sql.Parse(bc.q); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPlanSelect plans an already parsed query against the catalog.
func BenchmarkPlanSelect(b *testing.B) {
	cat := benchCatalog()
	for _, bc := range benchQueries {
		b.Run(bc.name, func(b *testing.B) {
			stmts, err := sql.Parse(bc.q)
			if err != nil {
				b.Fatal(err)
			}
			sel := stmts[0].(*sql.Select)
			p, err := PlanSelect(cat, sel)
			if err != nil {
				b.Fatal(err)
			}
			if bc.name == "lookup" && p.Lookup == nil {
				b.Fatal("lookup query planned without Lookup")
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := PlanSelect(cat, sel); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
