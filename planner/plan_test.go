package planner

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/sql"
)

// TestPlan runs testdata/plan against a catalog built by the file itself.
// Commands:
//
//	define  the input, CREATE STREAM|TABLE or CREATE TABLE ... AS, is
//	        planned and applied to the catalog; output: the error, if any.
//	plan    the input, a SELECT, CTAS or CREATE STREAM|TABLE, is planned
//	        and not applied; output: the plan (PullPlan.String or
//	        ViewPlan.String), then the result or relation columns, or the
//	        error with a caret under its position.
//
// Rewrite expected output with -rewrite and review the diff.
func TestPlan(t *testing.T) {
	cat := catalog.New()
	var offset int64
	datadriven.RunTest(t, "testdata/plan", func(t *testing.T, d *datadriven.TestData) string {
		stmts, err := sql.ParseStatements(d.Input)
		if err != nil {
			return planError(d.Input, err)
		}
		if len(stmts) != 1 {
			t.Fatalf("%s: want one statement, got %d", d.Pos, len(stmts))
		}
		st := stmts[0]
		switch d.Cmd {
		case "define":
			var rel *catalog.Relation
			switch s := st.Stmt.(type) {
			case *sql.CreateSource:
				if rel, err = PlanCreateSource(cat, s, st.Text); err != nil {
					return planError(d.Input, err)
				}
				if rel.Partitions == 0 {
					rel.Partitions = 4
				}
			case *sql.CreateTableAs:
				p, err := PlanView(cat, s, st.Text)
				if err != nil {
					return planError(d.Input, err)
				}
				rel = p.View
			default:
				t.Fatalf("%s: define takes CREATE statements", d.Pos)
			}
			ch := cat.Apply(offset, &catalog.Command{Op: catalog.OpCreate, Relation: rel})
			offset++
			if ch.Err != nil {
				return planError(d.Input, ch.Err)
			}
			return ""
		case "plan":
			switch s := st.Stmt.(type) {
			case *sql.Select:
				p, err := PlanSelect(cat, s)
				if err != nil {
					return planError(d.Input, err)
				}
				var b strings.Builder
				b.WriteString(p.String())
				fmt.Fprintf(&b, "columns: %s\n", columns(p.Columns))
				if len(p.Params.Types) > 0 {
					for n := 1; n <= len(p.Params.Types); n++ {
						fmt.Fprintf(&b, "$%d: %s\n", n, p.Params.Types[n])
					}
				}
				return b.String()
			case *sql.CreateTableAs:
				p, err := PlanView(cat, s, st.Text)
				if err != nil {
					return planError(d.Input, err)
				}
				return p.String() + fmt.Sprintf("columns: %s\nkey_format: %s, partitions: %d, repartition: %v\n",
					columns(p.View.Schema.Columns), p.View.KeyFormat, p.View.Partitions, p.Repartition)
			case *sql.CreateSource:
				rel, err := PlanCreateSource(cat, s, st.Text)
				if err != nil {
					return planError(d.Input, err)
				}
				return fmt.Sprintf("%s %s topic=%s partitions=%d key_format=%s value_format=%s\ncolumns: %s\n",
					rel.Kind, rel.Name, rel.Topic, rel.Partitions, rel.KeyFormat, rel.ValueFormat, columns(rel.Schema.Columns))
			}
			t.Fatalf("%s: plan takes SELECT or CREATE", d.Pos)
		}
		t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
		return ""
	})
}

func columns(cols []catalog.Column) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		parts[i] = c.Name + " " + c.Type.String()
		if c.Key {
			parts[i] += " KEY"
		}
	}
	return strings.Join(parts, ", ")
}

// planError renders an error with its SQLSTATE and a caret under its
// position in the input.
func planError(text string, err error) string {
	pe, ok := pgerr.As(err)
	if !ok {
		return fmt.Sprintf("error without SQLSTATE: %v\n", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "error %s: %s\n", pe.Code, pe.Message)
	if pe.Position > 0 {
		runes := []rune(text)
		p := pe.Position - 1
		if p > len(runes) {
			p = len(runes)
		}
		start := p
		for start > 0 && runes[start-1] != '\n' {
			start--
		}
		end := p
		for end < len(runes) && runes[end] != '\n' {
			end++
		}
		fmt.Fprintf(&b, "%s\n%s^\n", string(runes[start:end]), strings.Repeat(" ", p-start))
	}
	if pe.Detail != "" {
		fmt.Fprintf(&b, "detail: %s\n", pe.Detail)
	}
	if pe.Hint != "" {
		fmt.Fprintf(&b, "hint: %s\n", pe.Hint)
	}
	return b.String()
}
