package node

import (
	"context"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/basindb/basin/internal/poll"
)

var rewriteGaps = flag.Bool("rewrite-gaps", false, "TestBIQueries: write the queries that fail now to testdata/bi/gaps.txt")

// TestBIQueries runs the SQL that BI tools send (testdata/bi/<tool>.sql:
// Superset, Metabase, Grafana, Tableau, Power BI) over a fixture of
// orders, customers and views over them, and compares each answer with
// PostgreSQL's over the same rows: the rows as text (in order when the
// query has an ORDER BY at its top level), then the columns' names and
// type OIDs (which the tools read to pick a column's role and format). The queries basin cannot
// answer yet are listed in testdata/bi/gaps.txt with the failure they
// give: a listed query that now passes fails the test (remove its line:
// the list only shrinks), as does an unlisted query that fails.
// -rewrite-gaps writes the list of what fails now.
func TestBIQueries(t *testing.T) {
	semanticOnly(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	queries := readBICorpus(t, "../testdata/bi")
	gapsFile := "../testdata/bi/gaps.txt"
	gaps := readBIGaps(t, gapsFile)
	m := startPGMirror(t, ctx)
	loadBIFixture(t, m, time.Now().UTC())

	failures := map[string]string{}
	for _, q := range queries {
		want, err := q.run(ctx, m.pg)
		if err != nil {
			t.Errorf("%s: PostgreSQL fails the corpus query (fix the query): %s\n%s", q.id, errText(err), q.sql)
			continue
		}
		if len(want.rows) == 0 && !q.allowEmpty() {
			t.Errorf("%s: PostgreSQL's answer is empty: the fixture does not exercise the query", q.id)
		}
		got, err := q.run(ctx, m.basin)
		switch {
		case err != nil:
			failures[q.id] = "error: " + errText(err)
		case !sameRows(got, want):
			failures[q.id] = fmt.Sprintf("wrong answer: basin gave %d rows, PostgreSQL %d: %s", len(got.rows), len(want.rows), firstDiff(got.rows, want.rows))
		case !slices.Equal(got.columns, want.columns):
			failures[q.id] = fmt.Sprintf("wrong column types: basin's %s, PostgreSQL's %s", strings.Join(got.columns, " "), strings.Join(want.columns, " "))
		}
	}
	if *rewriteGaps {
		writeBIGaps(t, gapsFile, queries, failures)
		return
	}
	for _, q := range queries {
		failure, failed := failures[q.id]
		listed, isGap := gaps[q.id]
		switch {
		case failed && !isGap:
			t.Errorf("%s fails and is not in gaps.txt: %s\n%s", q.id, failure, q.sql)
		case !failed && isGap:
			t.Errorf("%s passes now: remove its line from gaps.txt (it said: %s)", q.id, listed)
		case failed && failure != listed:
			// The cause changed (another gap was closed in front of
			// it): still a gap; the list's text is refreshed by
			// -rewrite-gaps.
			t.Logf("%s still fails, now with: %s", q.id, failure)
		}
	}
	for id := range gaps {
		if !slices.ContainsFunc(queries, func(q biQuery) bool { return q.id == id }) {
			t.Errorf("gaps.txt lists %s, which no corpus file has", id)
		}
	}
	t.Logf("%d BI queries, %d answered as PostgreSQL answers, %d gaps", len(queries), len(queries)-len(failures), len(failures))
}

// loadBIFixture creates the stream, table and views the corpus reads
// and fills basin and PostgreSQL with the same rows: 480 orders over a
// week of March 2026 (deterministic) and 40 over the ten days before
// now (for the tools' filters relative to NOW()), 12 customers (orders
// of c13 and c14 join none). Amounts are distinct multiples of 0.25 and
// times distinct, so that sums are exact in floating point and the
// corpus's orderings have no ties.
func loadBIFixture(t *testing.T, m *pgMirror, now time.Time) {
	t.Helper()
	b, p := m.b(), m.p()
	b.exec(`CREATE STREAM orders (order_id BIGINT KEY, created_at TIMESTAMP, created_epoch BIGINT, region VARCHAR, product VARCHAR,
		quantity INTEGER, amount DOUBLE, status VARCHAR, customer_id VARCHAR) WITH (partitions = 3)`)
	b.exec(`CREATE TABLE customers (customer_id VARCHAR PRIMARY KEY, name VARCHAR, segment VARCHAR, country VARCHAR, signup_at TIMESTAMP)
		WITH (partitions = 2)`)
	p.exec(`CREATE TABLE orders (order_id BIGINT PRIMARY KEY, created_at TIMESTAMP, created_epoch BIGINT, region TEXT, product TEXT,
		quantity INTEGER, amount DOUBLE PRECISION, status TEXT, customer_id TEXT)`)
	p.exec(`CREATE TABLE customers (customer_id TEXT PRIMARY KEY, name TEXT, segment TEXT, country TEXT, signup_at TIMESTAMP)`)

	// The customers first, applied before any order: the join view
	// looks each order's customer up as the table stands when it comes.
	names := []string{"Ada", "Grace", "Alan", "Edsger", "Barbara", "Donald", "Ken", "Frances", "John", "Radia", "Leslie", "Margaret"}
	segments := []string{"Consumer", "Corporate", "Home Office"}
	countries := []string{"US", "DE", "FR", "JP", "BR"}
	var customers []string
	for i, name := range names {
		segment, country := fmt.Sprintf("'%s'", segments[i%3]), fmt.Sprintf("'%s'", countries[i%5])
		if i == 7 {
			segment = "NULL"
		}
		if i == 10 {
			country = "NULL"
		}
		signup := time.Date(2025, time.Month(1+i), 1+2*i, 8+i, 0, 0, 0, time.UTC)
		customers = append(customers, fmt.Sprintf("('c%02d', '%s', %s, %s, '%s')", i+1, name, segment, country, signup.Format("2006-01-02 15:04:05")))
	}
	m.insert("customers", customers)
	if !poll.Cond(30*time.Second, func() bool { return tasksCaughtUp(m.n) }) {
		t.Fatal("the node's tasks did not apply the customers in time")
	}

	views := []struct{ name, create, q, columns string }{
		{"daily_sales", "TABLE",
			"SELECT date_trunc('day', created_at) AS day, region, COUNT(*) AS orders, SUM(amount) AS revenue, SUM(quantity) AS units FROM orders GROUP BY date_trunc('day', created_at), region",
			"day TIMESTAMP, region TEXT, orders BIGINT, revenue DOUBLE PRECISION, units BIGINT"},
		{"hourly_orders", "TABLE",
			"SELECT date_trunc('hour', created_at) AS hour, COUNT(*) AS orders, SUM(amount) AS revenue FROM orders GROUP BY date_trunc('hour', created_at)",
			"hour TIMESTAMP, orders BIGINT, revenue DOUBLE PRECISION"},
		{"region_sales", "TABLE",
			"SELECT region, COUNT(*) AS orders, SUM(amount) AS revenue, MIN(amount) AS smallest, MAX(amount) AS largest FROM orders GROUP BY region",
			"region TEXT, orders BIGINT, revenue DOUBLE PRECISION, smallest DOUBLE PRECISION, largest DOUBLE PRECISION"},
		{"product_status", "TABLE",
			"SELECT product, status, COUNT(*) AS orders, SUM(amount) AS revenue, SUM(quantity) AS units FROM orders GROUP BY product, status",
			"product TEXT, status TEXT, orders BIGINT, revenue DOUBLE PRECISION, units BIGINT"},
		{"order_details", "STREAM",
			"SELECT o.customer_id, o.order_id, o.created_at, o.region, o.product, o.amount, o.status, c.name, c.segment, c.country FROM orders o JOIN customers c ON o.customer_id = c.customer_id",
			"customer_id TEXT, order_id BIGINT, created_at TIMESTAMP, region TEXT, product TEXT, amount DOUBLE PRECISION, status TEXT, name TEXT, segment TEXT, country TEXT"},
		{"segment_sales", "TABLE",
			"SELECT c.segment, COUNT(*) AS orders, SUM(o.amount) AS revenue FROM orders o JOIN customers c ON o.customer_id = c.customer_id GROUP BY c.segment",
			"segment TEXT, orders BIGINT, revenue DOUBLE PRECISION"},
		{"customer_segments", "TABLE",
			"SELECT segment, COUNT(*) AS customers FROM customers GROUP BY segment",
			"segment TEXT, customers BIGINT"},
	}
	for _, v := range views {
		b.exec(fmt.Sprintf("CREATE %s %s AS %s", v.create, v.name, v.q))
	}

	rng := rand.New(rand.NewPCG(20260309, 7))
	const historic, recent = 480, 40
	amounts := rng.Perm(2000) // distinct quarters: 1.00 to 500.75
	slots := rng.Perm(historic)
	week := time.Date(2026, 3, 9, 0, 0, 0, 0, time.UTC)
	spacing := 7 * 24 * time.Hour / historic // 21 minutes
	regions := []string{"east", "west", "north", "south"}
	products := []string{"Widget", "Gadget", "Gizmo", "Doohickey", "Sprocket", "Gear"}
	statuses := []string{"complete", "complete", "complete", "pending", "cancelled", "refunded"}
	var orders []string
	for i := range historic + recent {
		var at time.Time
		if i < historic {
			at = week.Add(time.Duration(slots[i])*spacing + time.Duration(rng.IntN(int(spacing/time.Second)))*time.Second)
		} else {
			// Every six hours back from the hour before now.
			at = now.Truncate(time.Hour).Add(-time.Duration(i-historic)*6*time.Hour - 17*time.Minute)
		}
		text := func(p float64, vals []string) string {
			if rng.Float64() < p {
				return "NULL"
			}
			return "'" + vals[rng.IntN(len(vals))] + "'"
		}
		region, product, status := text(0.03, regions), text(0, products), text(0.02, statuses)
		quantity := fmt.Sprint(1 + rng.IntN(5))
		if rng.Float64() < 0.03 {
			quantity = "NULL"
		}
		customer := fmt.Sprintf("'c%02d'", 1+rng.IntN(14))
		if rng.Float64() < 0.02 {
			customer = "NULL"
		}
		orders = append(orders, fmt.Sprintf("(%d, '%s', %d, %s, %s, %s, %s, %s, %s)", i+1, at.Format("2006-01-02 15:04:05"), at.Unix(),
			region, product, quantity, fmt.Sprint(1+float64(amounts[i])/4), status, customer))
	}
	m.insert("orders", orders)

	for _, v := range views {
		m.mirrorView(v.name, v.q, v.columns, 30*time.Second)
	}
}

// biQuery is a query of the corpus.
type biQuery struct {
	id       string // <tool>/<name>
	sql      string
	extended bool     // run in the extended protocol
	oids     []uint32 // its parameters' types, for the extended protocol
	args     [][]byte // its parameters' text values (nil is NULL)
	ordered  bool     // compared in order: the top level has an ORDER BY
	empty    bool     // meant to return no rows ("-- empty")
}

// allowEmpty reports whether the query is meant to return no rows (a
// metadata probe, a session statement).
func (q biQuery) allowEmpty() bool {
	return q.empty || strings.Contains(q.sql, "LIMIT 0") || strings.HasPrefix(q.sql, "DISCARD")
}

// run runs q over conn and returns its rows as text.
func (q biQuery) run(ctx context.Context, conn *pgx.Conn) (answer, error) {
	return queryAnswer(ctx, conn, q.sql, q.extended, q.oids, q.args, q.ordered)
}

// readBICorpus reads the corpus files. A file is SQL statements, each
// ending with a semicolon at the end of a line, each preceded by
// comment lines: "-- name: <name>" (the query's id is <file>/<name>),
// a description of the tool feature it comes from, and optionally
// "-- param: <type> <text value>" lines (the query runs in the extended
// protocol with those parameters, typed as the tool's driver types
// them; the value NULL is a null) and "-- protocol: extended" (the
// extended protocol without parameters) or "-- protocol: simple". A
// "-- protocol: extended" in the file's header holds for all its
// queries. "-- empty" marks a query meant to return no rows (any other
// must return some, or the fixture does not exercise it).
func readBICorpus(t *testing.T, dir string) []biQuery {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.sql"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus in %s: %v", dir, err)
	}
	oidOf := map[string]uint32{"unknown": 0, "bool": pgtype.BoolOID, "int4": pgtype.Int4OID, "int8": pgtype.Int8OID,
		"float8": pgtype.Float8OID, "numeric": pgtype.NumericOID, "text": pgtype.TextOID, "varchar": pgtype.VarcharOID,
		"date": pgtype.DateOID, "timestamp": pgtype.TimestampOID, "timestamptz": pgtype.TimestamptzOID}
	var out []biQuery
	for _, file := range files {
		tool := strings.TrimSuffix(filepath.Base(file), ".sql")
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		fileExtended := false
		var cur biQuery
		var body []string
		for n, line := range strings.Split(string(data), "\n") {
			where := fmt.Sprintf("%s:%d", file, n+1)
			trimmed := strings.TrimSpace(line)
			switch {
			case strings.HasPrefix(trimmed, "-- name:"):
				if len(body) > 0 {
					t.Fatalf("%s: a name inside the statement of %s", where, cur.id)
				}
				cur = biQuery{id: tool + "/" + strings.TrimSpace(strings.TrimPrefix(trimmed, "-- name:")), extended: fileExtended}
				if slices.ContainsFunc(out, func(q biQuery) bool { return q.id == cur.id }) {
					t.Fatalf("%s: %s named twice", where, cur.id)
				}
			case trimmed == "-- protocol: extended":
				if cur.id == "" {
					fileExtended = true
				}
				cur.extended = true
			case trimmed == "-- protocol: simple":
				cur.extended = false
			case trimmed == "-- empty":
				cur.empty = true
			case strings.HasPrefix(trimmed, "-- param:"):
				typ, val, _ := strings.Cut(strings.TrimSpace(strings.TrimPrefix(trimmed, "-- param:")), " ")
				oid, ok := oidOf[typ]
				if !ok || cur.id == "" {
					t.Fatalf("%s: bad param line %q", where, trimmed)
				}
				cur.extended = true
				cur.oids = append(cur.oids, oid)
				if val == "NULL" {
					cur.args = append(cur.args, nil)
				} else {
					cur.args = append(cur.args, []byte(val))
				}
			case strings.HasPrefix(trimmed, "--") && len(body) == 0, trimmed == "" && len(body) == 0:
			default:
				if cur.id == "" {
					t.Fatalf("%s: a statement without a -- name: line", where)
				}
				body = append(body, line)
				if strings.HasSuffix(trimmed, ";") {
					cur.sql = strings.TrimSuffix(strings.TrimSpace(strings.Join(body, "\n")), ";")
					cur.ordered = topLevelOrderBy(cur.sql)
					out = append(out, cur)
					cur, body = biQuery{}, nil
				}
			}
		}
		if len(body) > 0 {
			t.Fatalf("%s: the last statement has no semicolon", file)
		}
	}
	return out
}

// topLevelOrderBy reports whether q has an ORDER BY outside every
// parenthesis (a subquery's or a window's orders nothing in the
// answer), string literal and quoted identifier.
func topLevelOrderBy(q string) bool {
	depth := 0
	var words []string
	word := strings.Builder{}
	flush := func() {
		if word.Len() > 0 {
			words = append(words, strings.ToUpper(word.String()))
			word.Reset()
		}
	}
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case c == '\'' || c == '"':
			flush()
			j := strings.IndexByte(q[i+1:], c)
			if j < 0 {
				return false
			}
			i += j + 1
			words = append(words, "")
		case c == '(':
			flush()
			depth++
		case c == ')':
			flush()
			depth--
		case depth == 0 && (unicode.IsLetter(rune(c)) || c == '_'):
			word.WriteByte(c)
		default:
			flush()
			if depth == 0 && len(words) >= 2 && words[len(words)-2] == "ORDER" && words[len(words)-1] == "BY" {
				return true
			}
		}
	}
	flush()
	return false
}

// readBIGaps reads gaps.txt: "<id>: <failure>" lines; # starts a
// comment line.
func readBIGaps(t *testing.T, file string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(file)
	if os.IsNotExist(err) {
		return map[string]string{}
	}
	if err != nil {
		t.Fatal(err)
	}
	gaps := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		id, failure, ok := strings.Cut(line, ": ")
		if !ok {
			t.Fatalf("%s: a line without \"<id>: <failure>\": %q", file, line)
		}
		gaps[id] = failure
	}
	return gaps
}

// writeBIGaps writes the failures to gaps.txt in the corpus's order.
func writeBIGaps(t *testing.T, file string, queries []biQuery, failures map[string]string) {
	t.Helper()
	var sb strings.Builder
	sb.WriteString("# BI corpus queries basin does not answer as PostgreSQL does yet (TestBIQueries).\n")
	sb.WriteString("# One line per query: <tool>/<name>: its failure. A query that starts passing must\n")
	sb.WriteString("# leave the list; regenerate with go test ./node -run TestBIQueries -args -rewrite-gaps.\n")
	for _, q := range queries {
		if f, ok := failures[q.id]; ok {
			fmt.Fprintf(&sb, "%s: %s\n", q.id, f)
		}
	}
	if err := os.WriteFile(file, []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestTopLevelOrderBy(t *testing.T) {
	for q, want := range map[string]bool{
		"SELECT a FROM t ORDER BY a":                                   true,
		"select a from t order by 1 limit 3":                           true,
		"SELECT a FROM (SELECT a FROM t ORDER BY a LIMIT 2) s":         false,
		"SELECT rank() OVER (ORDER BY a) FROM t":                       false,
		`SELECT 'ORDER BY' AS "order by" FROM t`:                       false,
		"SELECT a FROM t UNION SELECT b FROM u ORDER BY 1":             true,
		"SELECT a FROM t JOIN (SELECT b FROM u ORDER BY b) x ON a = b": false,
		"SELECT sorder, bycol FROM t":                                  false,
		"SELECT a FROM t WHERE a IN (SELECT b FROM u) ORDER BY a DESC": true,
	} {
		if got := topLevelOrderBy(q); got != want {
			t.Errorf("topLevelOrderBy(%q) = %v, want %v", q, got, want)
		}
	}
}

// sameRows reports whether basin's rows are PostgreSQL's: equal as
// text, except that a double precision value may differ from
// PostgreSQL's in its last digits. A float aggregate's rounding depends
// on the order it meets the rows in (stddev, variance and sums of
// fractions), which differs between basin's partitions and
// PostgreSQL's heap, as it would between two PostgreSQL plans.
func sameRows(got, want answer) bool {
	if slices.Equal(got.rows, want.rows) {
		return true
	}
	if len(got.rows) != len(want.rows) || !slices.Equal(got.columns, want.columns) {
		return false
	}
	for i := range got.rows {
		g, w := strings.Split(got.rows[i], "|"), strings.Split(want.rows[i], "|")
		if len(g) != len(w) || len(g) != len(got.columns) {
			return false
		}
		for j := range g {
			if g[j] == w[j] {
				continue
			}
			if !strings.HasSuffix(got.columns[j], ":701") || !closeFloats(g[j], w[j]) {
				return false
			}
		}
	}
	return true
}

// closeFloats reports whether two float8 texts agree to 12 significant
// digits.
func closeFloats(a, b string) bool {
	x, err1 := strconv.ParseFloat(a, 64)
	y, err2 := strconv.ParseFloat(b, 64)
	if err1 != nil || err2 != nil {
		return false
	}
	return math.Abs(x-y) <= 1e-12*math.Max(math.Abs(x), math.Abs(y))
}

// TestSameRows: a float8 value may differ from PostgreSQL's in its last
// digits only; any other difference is a wrong answer.
func TestSameRows(t *testing.T) {
	cols := []string{"region:25", "sd:701", "n:20"}
	want := answer{columns: cols, rows: []string{"east|145.4659760308842|3"}}
	for got, same := range map[string]bool{
		"east|145.4659760308842|3":   true,
		"east|145.46597603088418|3":  true,
		"east|145.46597603|3":        false,
		"east|145.4659760308842|4":   false,
		"west|145.4659760308842|3":   false,
		"east|NaN|3":                 false,
		"east|145.4659760308842|3|x": false,
	} {
		if sameRows(answer{columns: cols, rows: []string{got}}, want) != same {
			t.Errorf("sameRows(%q) = %v", got, !same)
		}
	}
	other := answer{columns: []string{"region:25", "sd:1700", "n:20"}, rows: []string{"east|145.46597603088418|3"}}
	if sameRows(other, answer{columns: other.columns, rows: want.rows}) {
		t.Error("a numeric column compared loosely")
	}
}
