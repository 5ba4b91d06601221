package node

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestPlanCache runs simple-protocol queries that differ only in their
// constants: the second and later of a shape run from the session's plan
// cache (basin_plan_cache_total{result="hit"} counts them), every answer
// is the one the ordinary path gives (the extended protocol with the
// constants inlined, on a second connection), and shapes whose constants
// are not plain values compared with a column are not cached.
func TestPlanCache(t *testing.T) {
	n := startNode(t, t.TempDir(), func(o *Options) { o.HTTPAddr = "127.0.0.1:0" })
	simple := connect(t, n.PGAddr(), func(c *pgx.ConnConfig) { c.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol })
	other := connect(t, n.PGAddr(), func(c *pgx.ConnConfig) { c.DefaultQueryExecMode = pgx.QueryExecModeExec })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	exec := func(q string) {
		t.Helper()
		if _, err := simple.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec("CREATE TABLE pc (id BIGINT PRIMARY KEY, k INTEGER, name VARCHAR, amount DOUBLE) WITH (partitions = 2)")
	exec("INSERT INTO pc VALUES (1, 10, 'a', 1.5), (2, 20, 'b', 2.5), (3, 30, 'c', 3.5), (4, 2147483647, 'd', 4.5)")

	answer := func(conn *pgx.Conn, q string) string {
		rows, err := conn.Query(ctx, q)
		if err != nil {
			return "ERROR " + err.Error()
		}
		var out []string
		for rows.Next() {
			vals, err := rows.Values()
			if err != nil {
				return "ERROR " + err.Error()
			}
			out = append(out, fmt.Sprint(vals...))
		}
		if err := rows.Err(); err != nil {
			return "ERROR " + err.Error()
		}
		return strings.Join(out, "; ")
	}
	hits := func() int {
		b := scrapeMetrics(t, n)
		m := regexp.MustCompile(`(?m)^basin_plan_cache_total\{result="hit"\} (\d+)$`).FindStringSubmatch(b)
		if m == nil {
			t.Fatalf("/metrics has no basin_plan_cache_total{result=\"hit\"}:\n%s", b)
		}
		h, _ := strconv.Atoi(m[1])
		return h
	}
	// check runs each query on both connections; wantHits is how many of
	// them the plan cache answered.
	check := func(wantHits int, queries ...string) {
		t.Helper()
		before := hits()
		for _, q := range queries {
			got, want := answer(simple, q), answer(other, q)
			if got != want {
				t.Errorf("%s:\nsimple protocol: %s\nextended:        %s", q, got, want)
			}
		}
		if got := hits() - before; got != wantHits {
			t.Errorf("%d plan cache hits for %q, want %d", got, queries, wantHits)
		}
	}

	// Key lookups, text comparisons, IN and BETWEEN: the first of each
	// shape is planned, the rest are hits.
	check(3, "SELECT name, amount FROM pc WHERE id = 1", "SELECT name, amount FROM pc WHERE id = 2",
		"SELECT name, amount FROM pc WHERE id = 9", "SELECT name, amount FROM pc WHERE id = 4")
	check(1, "SELECT id FROM pc WHERE name = 'b'", "SELECT id FROM pc WHERE name = 'it''s'")
	check(1, "SELECT id FROM pc WHERE id IN (1, 3) ORDER BY id", "SELECT id FROM pc WHERE id IN (2, 4) ORDER BY id")
	check(1, "SELECT id FROM pc WHERE k BETWEEN 10 AND 20 ORDER BY id", "SELECT id FROM pc WHERE k BETWEEN 20 AND 40 ORDER BY id")
	check(1, "SELECT id FROM pc WHERE amount > 2 ORDER BY id", "SELECT id FROM pc WHERE amount > 3 ORDER BY id")
	// An integer that does not fit the column's type takes the ordinary
	// path (it matches nothing there, and would not convert bound).
	check(1, "SELECT id FROM pc WHERE k = 10", "SELECT id FROM pc WHERE k = 3000000000", "SELECT id FROM pc WHERE k = 2147483647")
	// Not plain values compared with a column: never cached.
	check(0, "SELECT id FROM pc ORDER BY 1 LIMIT 2", "SELECT id FROM pc ORDER BY 1 LIMIT 3")
	check(0, "SELECT id, 'x' FROM pc WHERE id = 1", "SELECT id, 'y' FROM pc WHERE id = 1")
	check(0, "SELECT id FROM pc WHERE id + 1 = 2", "SELECT id FROM pc WHERE id + 1 = 3")
	check(0, "SELECT id FROM pc WHERE id = -1", "SELECT id FROM pc WHERE id = -2") // minus is an operator
	check(0, "SELECT id FROM pc WHERE id = '1'", "SELECT id FROM pc WHERE id = '2'")
	check(0, "SELECT id FROM pc WHERE name = 5", "SELECT id FROM pc WHERE name = 6")
	// More constants than a cached shape takes (exec's maxShapeArgs):
	// the query's own parse folds them, the shape's could not.
	inList := func(from int) string {
		var b strings.Builder
		b.WriteString("SELECT id FROM pc WHERE id IN (")
		for i := range 1025 {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(strconv.Itoa(from + i))
		}
		b.WriteString(") ORDER BY id")
		return b.String()
	}
	check(0, inList(0), inList(1), inList(2))

	// Off, and inside a transaction block, the cache is not used.
	exec("SET basin.plan_cache = off")
	check(0, "SELECT name FROM pc WHERE id = 1", "SELECT name FROM pc WHERE id = 2")
	exec("SET basin.plan_cache = on")
	check(1, "SELECT name FROM pc WHERE id = 1", "SELECT name FROM pc WHERE id = 3")
	exec("BEGIN")
	check(0, "SELECT name FROM pc WHERE id = 1", "SELECT name FROM pc WHERE id = 3")
	exec("COMMIT")

	// The table re-created with other columns: the cached shape is not
	// used, and the query gets the ordinary path's answer.
	exec("DROP TABLE pc")
	exec("CREATE TABLE pc (id BIGINT PRIMARY KEY, name BIGINT, amount VARCHAR) WITH (partitions = 2)")
	exec("INSERT INTO pc VALUES (1, 100, 'x')")
	check(0, "SELECT name, amount FROM pc WHERE id = 1")
	check(1, "SELECT name, amount FROM pc WHERE id = 1", "SELECT name, amount FROM pc WHERE id = 2")
	exec("DROP TABLE pc")
	check(0, "SELECT name, amount FROM pc WHERE id = 1")
}
