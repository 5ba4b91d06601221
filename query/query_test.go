package query

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/eval"
	"github.com/basindb/basin/planner"
	"github.com/basindb/basin/sql"
)

// run plans text over cat and runs it in the catalog-query engine, one
// line per row.
func run(t *testing.T, cat *catalog.Catalog, text string) []string {
	t.Helper()
	st, err := sql.Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := planner.PlanSelect(cat, st[0].(*sql.Select))
	if err != nil {
		t.Fatal(err)
	}
	if plan.Query == nil {
		t.Fatalf("%s: not a catalog query", text)
	}
	var out []string
	env := &eval.Env{User: "u", Database: "basin", Session: session{cat}}
	err = Run(context.Background(), plan, env, nil, func(r catalog.Row) error {
		out = append(out, strings.TrimSuffix(fmt.Sprintln(r...), "\n"))
		return nil
	})
	if err != nil {
		t.Fatalf("%s: %v", text, err)
	}
	return out
}

// session is a session without settings over cat.
type session struct{ cat *catalog.Catalog }

func (session) Setting(string) (string, bool) { return "", false }
func (session) SetConfig(name, _ string, _ bool) (string, error) {
	return "", fmt.Errorf("%s: no settings here", name)
}
func (session) Memo(any) (any, bool) { return nil, false }
func (session) MemoPut(any, any)     {}
func (s session) Snapshot(started time.Time) *catalog.PGSnapshot {
	return s.cat.PGSnapshot(catalog.SessionInfo{User: "u", Database: "basin", Started: started})
}

// TestRun runs catalog queries with a join, a correlated subquery and
// grouping over the virtual catalog of a catalog holding one table.
func TestRun(t *testing.T) {
	cat := catalog.New()
	st, err := sql.Parse("CREATE TABLE kv (k BIGINT PRIMARY KEY, v VARCHAR) WITH (kafka_topic = 'kv', value_format = 'json', partitions = 2)")
	if err != nil {
		t.Fatal(err)
	}
	rel, err := planner.PlanCreateSource(cat, st[0].(*sql.CreateSource), "")
	if err != nil {
		t.Fatal(err)
	}
	cat.Apply(1, &catalog.Command{Op: catalog.OpCreate, Relation: rel})
	for _, c := range []struct {
		text string
		want []string
	}{
		{"SELECT c.relname FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' ORDER BY 1",
			[]string{"kv", "kv_pkey"}}, // the table and its key's index
		{"SELECT a.attname, (SELECT count(*) FROM pg_catalog.pg_attribute b WHERE b.attrelid = a.attrelid AND b.attnum > 0) FROM pg_catalog.pg_attribute a WHERE a.attrelid = 'kv'::regclass AND a.attnum > 0 ORDER BY a.attnum",
			[]string{"k 2", "v 2"}},
		{"SELECT current_user, current_database() FROM pg_catalog.pg_namespace WHERE nspname = 'public'", []string{"u basin"}},
	} {
		if got := run(t, cat, c.text); strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("%s:\n got %q\nwant %q", c.text, got, c.want)
		}
	}
}
