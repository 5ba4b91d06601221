package node

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/jackc/pgx/v5"
)

// catalogFixture creates what the catalog tests describe: a stream, a
// table and two views (one grouped, one filtered).
var catalogFixture = []string{
	`CREATE STREAM orders (order_id BIGINT KEY, customer VARCHAR, region VARCHAR, amount DOUBLE, ts TIMESTAMP)
	   WITH (kafka_topic = 'orders', value_format = 'json', partitions = 4)`,
	`CREATE TABLE customers (id VARCHAR PRIMARY KEY, name VARCHAR, tier VARCHAR)
	   WITH (kafka_topic = 'customers', value_format = 'json', partitions = 2)`,
	`CREATE TABLE revenue AS SELECT region, COUNT(*) AS orders, SUM(amount) AS revenue FROM orders WHERE amount > 0 GROUP BY region`,
	`CREATE TABLE big_orders AS SELECT order_id, customer, amount FROM orders WHERE amount > 100`,
}

// startCatalogNode starts a node holding catalogFixture.
func startCatalogNode(t *testing.T) *Node {
	t.Helper()
	n := startNode(t, t.TempDir())
	conn := connect(t, n.PGAddr())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, stmt := range catalogFixture {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	return n
}

// TestPsqlMetaCommands drives the real psql through its describe
// commands (testdata/psql). Directive:
//
//	psql [arg...]   the input is fed to psql -X on standard input, with
//	                the args as extra options; output: what psql prints,
//	                with the server's port shown as PORT and \timing's
//	                durations as N.
//
// The expected output must read like psql's output for a real Postgres
// relation. Regenerate with -rewrite and review the diff.
func TestPsqlMetaCommands(t *testing.T) {
	path, err := exec.LookPath("psql")
	if err != nil {
		t.Fatalf("psql is not installed (CI installs postgresql-client): %v", err)
	}
	n := startCatalogNode(t)
	addr := n.PGAddr()
	host, port := addr[:strings.LastIndexByte(addr, ':')], addr[strings.LastIndexByte(addr, ':')+1:]
	timing := regexp.MustCompile(`Time: [0-9.]+ ms`)
	datadriven.Walk(t, "testdata/psql", func(t *testing.T, file string) {
		datadriven.RunTest(t, file, func(t *testing.T, d *datadriven.TestData) string {
			if d.Cmd != "psql" {
				t.Fatalf("%s: unknown directive %q", d.Pos, d.Cmd)
			}
			args := []string{"-X", "-h", host, "-p", port, "-U", "basin", "-d", "basin"}
			for _, a := range d.CmdArgs {
				args = append(args, a.String())
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, path, args...)
			cmd.Stdin = strings.NewReader(d.Input + "\n")
			cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH"), "LC_ALL=C", "PAGER=", "PSQL_PAGER=",
				"PGCONNECT_TIMEOUT=10", "COLUMNS=200"}
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Run(); err != nil {
				out.WriteString(fmt.Sprintf("(psql: %v)\n", err))
			}
			s := strings.ReplaceAll(out.String(), `port "`+port+`"`, `port "PORT"`)
			return timing.ReplaceAllString(s, "Time: N ms")
		})
	})
}

// TestIntrospection runs the catalog queries that drivers, ORMs and BI
// tools send (testdata/introspection; each file names where its queries
// come from). Directive:
//
//	query   the input is one query, run with the simple protocol and
//	        again with the extended protocol (binary results where pgx
//	        asks for them); both must succeed and agree. {{oid NAME}}
//	        in the input stands for the oid of relation NAME, which the
//	        tools learn from an earlier query. Output: the row count,
//	        then the rows that mention one of the fixture's relations
//	        (sorted), which is how each query shows it returns basin's
//	        objects.
func TestIntrospection(t *testing.T) {
	n := startCatalogNode(t)
	simple := connect(t, n.PGAddr())
	extended := connect(t, n.PGAddr(), func(c *pgx.ConnConfig) {
		c.DefaultQueryExecMode = pgx.QueryExecModeCacheStatement
	})
	oids := map[string]string{}
	{
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		rows, err := simple.Query(ctx, "SELECT relname, oid::text FROM pg_class WHERE relnamespace = 2200")
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var name, oid string
			if err := rows.Scan(&name, &oid); err != nil {
				t.Fatal(err)
			}
			oids[name] = oid
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
	}
	placeholder := regexp.MustCompile(`\{\{oid ([a-z_]+)\}\}`)
	mentions := regexp.MustCompile(`\b(orders|customers|revenue|big_orders)\b`)
	datadriven.Walk(t, "../testdata/introspection", func(t *testing.T, file string) {
		datadriven.RunTest(t, file, func(t *testing.T, d *datadriven.TestData) string {
			if d.Cmd != "query" {
				t.Fatalf("%s: unknown directive %q", d.Pos, d.Cmd)
			}
			q := placeholder.ReplaceAllStringFunc(d.Input, func(m string) string {
				name := placeholder.FindStringSubmatch(m)[1]
				oid, ok := oids[name]
				if !ok {
					t.Fatalf("%s: no relation %s", d.Pos, name)
				}
				return oid
			})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			got, err := queryText(ctx, simple, q, false)
			if err != nil {
				return "error (simple protocol): " + errorText(err)
			}
			gotExt, err := queryText(ctx, extended, q, false)
			if err != nil {
				return "error (extended protocol): " + errorText(err)
			}
			if gotExt != got {
				t.Errorf("%s: the extended protocol returned\n%s\nthe simple protocol\n%s", d.Pos, gotExt, got)
			}
			lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
			if got == "" {
				lines = nil
			}
			out := fmt.Sprintf("%d rows\n", len(lines))
			if len(lines) <= 12 {
				return out + got
			}
			var basin []string
			for _, l := range lines {
				if mentions.MatchString(l) {
					basin = append(basin, l)
				}
			}
			sort.Strings(basin)
			out += "rows mentioning the fixture's relations:\n"
			for _, l := range basin {
				out += l + "\n"
			}
			return out
		})
	})
}

// TestCatalogParameters runs catalog queries with parameters over the
// extended protocol, as pgx sends them: parameter types come from the
// plan (oids as bigint, arrays for ANY), values in binary.
func TestCatalogParameters(t *testing.T) {
	n := startCatalogNode(t)
	conn := connect(t, n.PGAddr(), func(c *pgx.ConnConfig) {
		c.DefaultQueryExecMode = pgx.QueryExecModeCacheStatement
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var oid uint32
	if err := conn.QueryRow(ctx, "SELECT oid FROM pg_class WHERE relname = $1", "customers").Scan(&oid); err != nil {
		t.Fatal(err)
	}
	strs := func(q string, args ...any) string {
		t.Helper()
		rows, err := conn.Query(ctx, q, args...)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		vals, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return strings.Join(vals, ",")
	}
	for _, c := range []struct {
		q    string
		args []any
		want string
	}{
		{"SELECT relname FROM pg_class WHERE oid = $1", []any{oid}, "customers"},
		{"SELECT relname FROM pg_class WHERE oid = $1", []any{int64(oid)}, "customers"},
		{"SELECT relname FROM pg_class WHERE relname = ANY($1) ORDER BY 1", []any{[]string{"orders", "revenue", "nope"}}, "orders,revenue"},
		{"SELECT relname FROM pg_class WHERE oid = ANY($1)", []any{[]int64{int64(oid)}}, "customers"},
		{"SELECT attname FROM pg_attribute WHERE attrelid = $1::regclass ORDER BY attnum", []any{"customers"}, "id,name,tier"},
		{"SELECT c.relname FROM pg_class c WHERE c.relnamespace = $1::regnamespace AND c.relkind = $2 ORDER BY 1", []any{"public", "m"}, "big_orders,revenue"},
		{"SELECT relname FROM pg_class WHERE relnamespace = 2200 AND relkind = 'r' ORDER BY 1 LIMIT $1", []any{2}, "basin_processing_log,customers"},
	} {
		if got := strs(c.q, c.args...); got != c.want {
			t.Errorf("%s %v = %q, want %q", c.q, c.args, got, c.want)
		}
	}
}
