package planner

import (
	"testing"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/sql"
)

// TestDateBucketStoredView checks that a view is planned as its stored
// relation has it when the node starts it again: windowed if it was
// created windowed, and a plain grouped view if an older version created
// it as one (its relation has no window, and its task must group as the
// relation's columns and key say).
func TestDateBucketStoredView(t *testing.T) {
	const view = "CREATE TABLE v AS SELECT date_trunc('hour', at) AS h, count(*) AS n FROM ev GROUP BY 1"
	for _, stored := range []string{"windowed", "plain"} {
		t.Run(stored, func(t *testing.T) {
			cat := catalog.New()
			var offset int64
			apply := func(rel *catalog.Relation) {
				t.Helper()
				ch := cat.Apply(offset, &catalog.Command{Op: catalog.OpCreate, Relation: rel})
				offset++
				if ch.Err != nil {
					t.Fatal(ch.Err)
				}
			}
			plan := func() *ViewPlan {
				t.Helper()
				stmts, err := sql.ParseStatements(view)
				if err != nil {
					t.Fatal(err)
				}
				p, err := PlanView(cat, stmts[0].Stmt.(*sql.CreateTableAs), view)
				if err != nil {
					t.Fatal(err)
				}
				return p
			}
			stmts, err := sql.ParseStatements("CREATE STREAM ev (k VARCHAR KEY, at TIMESTAMP) WITH (partitions = 2, timestamp = 'at')")
			if err != nil {
				t.Fatal(err)
			}
			src, err := PlanCreateSource(cat, stmts[0].Stmt.(*sql.CreateSource), stmts[0].Text)
			if err != nil {
				t.Fatal(err)
			}
			apply(src)
			p := plan()
			if w := p.View.Window; w == nil || !w.Bucket || w.Start != 0 || w.End != -1 || w.Size != 3_600_000 {
				t.Fatalf("created: window %+v, want an hour's tumbling bucket starting at column 0", w)
			}
			rel := *p.View
			if stored == "plain" {
				rel.Window = nil
			}
			apply(&rel)
			p = plan()
			if (p.View.Window != nil) != (stored == "windowed") || (len(p.GroupBy) == 2) != (stored == "windowed") {
				t.Fatalf("re-planned %s view: window %+v, GROUP BY %v", stored, p.View.Window, p.GroupBy)
			}
		})
	}
}

// TestDateBucketOffsets checks the windows' sizes and offsets: ISO weeks
// from a Monday, date_bin's from its origin modulo the stride, before the
// epoch too.
func TestDateBucketOffsets(t *testing.T) {
	cat := catalog.New()
	stmts, err := sql.ParseStatements("CREATE STREAM ev (k VARCHAR KEY, at TIMESTAMP, tz TIMESTAMPTZ) WITH (partitions = 1, timestamp = 'at')")
	if err != nil {
		t.Fatal(err)
	}
	src, err := PlanCreateSource(cat, stmts[0].Stmt.(*sql.CreateSource), stmts[0].Text)
	if err != nil {
		t.Fatal(err)
	}
	from := &sql.TableRef{Name: "ev"}
	for _, c := range []struct {
		expr         string
		size, offset int64 // -1: no bucket
	}{
		{"date_trunc('week', at)", 7 * 86_400_000, 4 * 86_400_000},
		{"date_trunc('Second', ev.at)", 1000, 0},
		{"date_trunc('milliseconds', at)", 1, 0},
		{"date_bin(INTERVAL '1 hour', at, TIMESTAMP '1969-12-31 23:10:00')", 3_600_000, 600_000},
		{"date_bin('10 minutes', at, '2001-01-01 00:03:30')", 600_000, 210_000},
		{"date_bin(INTERVAL '1 day 1 hour', at, TIMESTAMP '1970-01-01')", 90_000_000, 0},
		{"date_trunc('month', at)", -1, 0},
		{"date_trunc('microseconds', at)", -1, 0},
		{"date_trunc('hour', tz)", -1, 0},
		{"date_trunc('hour', x.at)", -1, 0},
		{"date_trunc(unit, at)", -1, 0},
		{"date_bin(INTERVAL '1 month', at, TIMESTAMP '2000-01-01')", -1, 0},
		{"date_bin(INTERVAL '1 second', at, now())", -1, 0},
		{"date_bin(INTERVAL '1.5 milliseconds', at, TIMESTAMP '2000-01-01')", -1, 0},
	} {
		stmts, err := sql.ParseStatements("SELECT " + c.expr + " FROM ev")
		if err != nil {
			t.Fatalf("%s: %v", c.expr, err)
		}
		d := bucketOf(stmts[0].Stmt.(*sql.Select).Items[0].Expr, src, from)
		switch {
		case c.size < 0 && d != nil:
			t.Errorf("%s: a bucket of %d ms from %d, want none", c.expr, d.size, d.offset)
		case c.size >= 0 && d == nil:
			t.Errorf("%s: no bucket, want %d ms from %d", c.expr, c.size, c.offset)
		case c.size >= 0 && (d.size != c.size || d.offset != c.offset):
			t.Errorf("%s: a bucket of %d ms from %d, want %d ms from %d", c.expr, d.size, d.offset, c.size, c.offset)
		}
	}
}
