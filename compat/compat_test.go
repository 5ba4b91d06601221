package compat

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"

	"github.com/basindb/basin/internal/poll"
)

// The fixture every client reads. orders 1..100 have customer c<i%7>,
// region eu/us/apac by i%3 (0/1/2), amount i/4 (exact in binary) and ts
// 2024-05-01 00:00 plus i minutes; so order 42 is c0, eu, 10.5, 00:42.
const fixtureDDL = `
CREATE STREAM orders (order_id BIGINT KEY, customer VARCHAR, region VARCHAR, amount DOUBLE, ts TIMESTAMP)
  WITH (kafka_topic = 'orders', value_format = 'json', partitions = 4);
CREATE TABLE customers (id VARCHAR PRIMARY KEY, name VARCHAR, tier VARCHAR)
  WITH (kafka_topic = 'customers', value_format = 'json', partitions = 2);
CREATE TABLE revenue_by_region AS
  SELECT region, COUNT(*) AS orders, SUM(amount) AS revenue FROM orders GROUP BY region;
CREATE TABLE order_by_id AS
  SELECT order_id, customer, amount, ts FROM orders WHERE amount > 0;
CREATE STREAM pings (client VARCHAR KEY, note VARCHAR) WITH (kafka_topic = 'pings', partitions = 2);
CREATE TABLE ping_counts AS SELECT client, count(*) AS n FROM pings GROUP BY client;
INSERT INTO customers (id, name, tier) VALUES
  ('c1', 'Ann', 'gold'), ('c2', 'Bob', 'silver'), ('c3', 'Cid', 'gold'), ('c4', 'O''Brien', 'gold');
`

// The listing every client gets from SHOW TABLES.
const showTables = "customers:TABLE,order_by_id:VIEW,ping_counts:VIEW,revenue_by_region:VIEW"

func fixtureInserts() string {
	regions := []string{"eu", "us", "apac"}
	var rows []string
	for i := 1; i <= 100; i++ {
		ts := time.Date(2024, 5, 1, 0, i, 0, 0, time.UTC).Format("2006-01-02 15:04:05")
		rows = append(rows, fmt.Sprintf("(%d, 'c%d', '%s', %g, '%s')", i, i%7, regions[i%3], float64(i)/4, ts))
	}
	return "INSERT INTO orders (order_id, customer, region, amount, ts) VALUES " + strings.Join(rows, ", ")
}

// server is the one basin process of a test run.
type server struct {
	cmd    *exec.Cmd
	dir    string // temporary: the binary and the data dir
	host   string
	port   string
	exited chan struct{} // closed when the process has exited
	err    error         // the process's exit status, once exited is closed

	mu  sync.Mutex
	log bytes.Buffer // stderr and stdout of the process
}

func (s *server) output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.String()
}

var (
	setupOnce sync.Once
	srv       *server
	setupErr  error
)

// readyLine is what `basin serve` prints on stderr once it accepts
// connections; with --pg-addr 127.0.0.1:0 it is how we learn the port.
var readyLine = regexp.MustCompile(`ready: psql -h (\S+) -p (\d+) `)

// startServer builds cmd/basin and starts it with an embedded broker on a
// port the kernel picks, and waits until it is ready.
func startServer() (*server, error) {
	dir, err := os.MkdirTemp("", "basin-compat-")
	if err != nil {
		return nil, err
	}
	s := &server{dir: dir, exited: make(chan struct{})}
	bin := filepath.Join(dir, "basin")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/basin").CombinedOutput(); err != nil {
		return s, fmt.Errorf("go build ../cmd/basin: %v\n%s", err, out)
	}
	level := os.Getenv("BASIN_TEST_LOG")
	if level == "" {
		level = "warn"
	}
	s.cmd = exec.Command(bin, "serve", "--data-dir", filepath.Join(dir, "data"),
		"--pg-addr", "127.0.0.1:0", "--http-addr", "off", "--cluster", "compat", "--log-level", level)
	stderr, err := s.cmd.StderrPipe()
	if err != nil {
		return s, err
	}
	s.cmd.Stdout = writerFunc(func(p []byte) (int, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.log.Write(p)
	})
	if err := s.cmd.Start(); err != nil {
		return s, err
	}
	ready := make(chan [2]string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			s.mu.Lock()
			s.log.WriteString(line + "\n")
			s.mu.Unlock()
			if m := readyLine.FindStringSubmatch(line); m != nil {
				select {
				case ready <- [2]string{m[1], m[2]}:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		s.err = s.cmd.Wait()
		close(s.exited)
	}()
	select {
	case hp := <-ready:
		s.host, s.port = hp[0], hp[1]
		return s, nil
	case <-s.exited:
		return s, fmt.Errorf("basin serve exited before it was ready (%v):\n%s", s.err, s.output())
	case <-time.After(90 * time.Second):
		return s, fmt.Errorf("basin serve not ready within 90s:\n%s", s.output())
	}
}

// stop sends SIGTERM and waits for a clean exit.
func (s *server) stop() error {
	defer os.RemoveAll(s.dir)
	if s.cmd == nil || s.cmd.Process == nil {
		return nil
	}
	select {
	case <-s.exited:
		return fmt.Errorf("basin serve exited during the tests: %v", s.err)
	default:
	}
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	select {
	case <-s.exited:
		if s.err != nil {
			return fmt.Errorf("basin serve exited with %v after SIGTERM", s.err)
		}
		return nil
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
		return errors.New("basin serve did not stop within 30s of SIGTERM")
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestMain stops the shared server, then fails the run if a goroutine
// outlives the tests and the server.
func TestMain(m *testing.M) {
	code := m.Run()
	if srv != nil {
		// A failing test has logged the server's output already.
		if err := srv.stop(); err != nil {
			fmt.Fprintf(os.Stderr, "compat: %v\nbasin serve output:\n%s", err, srv.output())
			code = 1
		}
	}
	if javacDir != "" {
		os.RemoveAll(javacDir)
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: Errors on successful test run: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// setup starts the server and creates the fixture once per run; every
// test that calls it shares them.
func setup(t *testing.T) *server {
	t.Helper()
	setupOnce.Do(func() {
		srv, setupErr = startServer()
		if setupErr == nil {
			setupErr = createFixture(srv)
		}
	})
	if setupErr != nil {
		t.Fatal(setupErr)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("basin serve output so far:\n%s", srv.output())
		}
	})
	return srv
}

func (s *server) pgxURL() string {
	return fmt.Sprintf("postgres://basin@%s:%s/basin?sslmode=disable&connect_timeout=10", s.host, s.port)
}

// createFixture creates the relations and rows, and waits until the views
// reflect every row.
func createFixture(s *server) error {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cfg, err := pgx.ParseConfig(s.pgxURL())
	if err != nil {
		return err
	}
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("connecting with pgx: %w", err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, fixtureDDL); err != nil {
		return fmt.Errorf("creating the fixture: %w", err)
	}
	if _, err := conn.Exec(ctx, fixtureInserts()); err != nil {
		return fmt.Errorf("inserting orders: %w", err)
	}
	// The views catch up asynchronously: wait for the counts.
	want := map[string]string{
		"SELECT count(*) FROM order_by_id":          "100",
		"SELECT sum(orders) FROM revenue_by_region": "100",
		"SELECT count(*) FROM customers":            "4",
	}
	for q, w := range want {
		var got string
		var qerr error
		err := poll.Wait(ctx, func() (bool, error) {
			var n *int64
			if qerr = conn.QueryRow(ctx, q).Scan(&n); qerr == nil && n != nil {
				got = fmt.Sprint(*n)
			}
			return got == w, nil
		})
		if err != nil {
			return fmt.Errorf("%s: got %s (last error %v), want %s before the deadline", q, got, qerr, w)
		}
	}
	return nil
}

// clientEnv is the environment of every client process: libpq-style PG*
// variables (psycopg2, node-postgres and pgbench read them) and UTC, so
// that drivers that render timestamps in local time render them the same
// everywhere.
func (s *server) clientEnv() []string {
	return append(os.Environ(), "PGHOST="+s.host, "PGPORT="+s.port, "PGUSER=basin", "PGDATABASE=basin",
		"PGSSLMODE=disable", "PGCONNECT_TIMEOUT=10", "TZ=UTC", "PGTZ=", "PGOPTIONS=")
}

// runClient runs a client process in dir and returns its standard output.
// The test fails (but goes on) if it exits non-zero.
func runClient(t *testing.T, s *server, dir string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = s.clientEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	t.Logf("$ %s %s (%s)\n%s", name, strings.Join(args, " "), time.Since(start).Round(time.Millisecond), indent(stdout.String()))
	if stderr.Len() > 0 {
		t.Logf("stderr:\n%s", indent(stderr.String()))
	}
	if err != nil {
		t.Errorf("%s %s: %v", name, strings.Join(args, " "), err)
	}
	return stdout.String()
}

func indent(s string) string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return "    (nothing)"
	}
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}

// parseOutput reads the "name: value" lines a client script prints.
func parseOutput(t *testing.T, out string) map[string]string {
	t.Helper()
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		name, value, ok := strings.Cut(line, ": ")
		if !ok {
			name, value = strings.TrimSuffix(line, ":"), ""
		}
		if _, dup := got[name]; dup {
			t.Errorf("client printed %q twice", name)
		}
		got[name] = value
	}
	return got
}

// expect compares a client's output lines with the wanted values; a want
// value is the exact text unless it is a matcher.
type matcher func(got string) error

func expect(t *testing.T, client string, got map[string]string, want map[string]any) {
	t.Helper()
	names := make([]string, 0, len(want))
	for n := range want {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		g, ok := got[n]
		if !ok {
			t.Errorf("%s: no %q line in the output", client, n)
			continue
		}
		switch w := want[n].(type) {
		case string:
			if g != w {
				t.Errorf("%s: %s:\n got: %s\nwant: %s", client, n, g, w)
			}
		case matcher:
			if err := w(g); err != nil {
				t.Errorf("%s: %s: %v (got %s)", client, n, err, g)
			}
		default:
			panic(fmt.Sprintf("bad want %T", w))
		}
	}
}

// hasItems matches a comma-separated list that holds each item, where an
// item is a name optionally followed by ":"-suffixes (e.g. "customers:TABLE").
func hasItems(items ...string) matcher {
	return func(got string) error {
		have := map[string]bool{}
		for _, it := range strings.Split(got, ",") {
			name, _, _ := strings.Cut(it, ":")
			have[name] = true
		}
		var missing []string
		for _, it := range items {
			if !have[it] {
				missing = append(missing, it)
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("lacks %s", strings.Join(missing, ", "))
		}
		return nil
	}
}

func nonEmpty(got string) error {
	if strings.TrimSpace(got) == "" {
		return errors.New("empty")
	}
	return nil
}

func hasPrefix(p string) matcher {
	return func(got string) error {
		if !strings.HasPrefix(got, p) {
			return fmt.Errorf("does not start with %q", p)
		}
		return nil
	}
}

// need fails the test if a program or file a client needs is missing.
func need(t *testing.T, what, install string) string {
	t.Helper()
	if filepath.IsAbs(what) {
		if _, err := os.Stat(what); err != nil {
			t.Fatalf("%s is missing: %s (.ci/run does this)", what, install)
		}
		return what
	}
	p, err := exec.LookPath(what)
	if err != nil {
		t.Fatalf("%s is not installed: %s (.ci/run does this)", what, install)
	}
	return p
}

const (
	debianPython = "/usr/bin/python3" // Debian's python3-* packages are importable only by it
	pgjdbcJar    = "/usr/share/java/postgresql.jar"
)

// needPython returns Debian's python3 once it can import each module, or
// fails the test with the package to install.
func needPython(t *testing.T, modules ...string) string {
	t.Helper()
	py := need(t, debianPython, "apt-get install python3")
	for _, m := range modules {
		if out, err := exec.Command(py, "-c", "import "+m).CombinedOutput(); err != nil {
			t.Fatalf("%s cannot import %s: apt-get install python3-%s (.ci/run does this)\n%s", py, m, m, out)
		}
	}
	return py
}

func TestPsycopg2(t *testing.T) {
	py := needPython(t, "psycopg2")
	s := setup(t)
	got := parseOutput(t, runClient(t, s, "python", py, "psycopg2_client.py"))
	t.Logf("psycopg2 version %s (libpq %s)", got["version"], got["libpq"])
	expect(t, "psycopg2", got, map[string]any{
		"version":             matcher(nonEmpty),
		"server_version":      "150000",
		"show tables":         showTables,
		"description":         "region:25,orders:20,revenue:701",
		"rowcount":            "2",
		"regions":             "eu|33|420.75|int|float;us|34|429.25|int|float",
		"order 42":            "42|c0|10.5|2024-05-01T00:42:00",
		"fetchone after last": "None",
		"gold":                "c1=Ann,c3=Cid",
		"bad query":           `42703 UndefinedColumn column "nope" does not exist`,
		"missing relation":    "42P01",
		"after error":         "100",
		"notify":              "hello|from psycopg2|True",
		"view notify":         "ping_counts|psycopg2|1|insert|True",
	})
}

func TestNodePostgres(t *testing.T) {
	node := need(t, "node", "apt-get install nodejs")
	need(t, filepath.Join(mustAbs(t, "node"), "node_modules", "pg", "package.json"), "run `make compat-deps` (npm ci in compat/node)")
	s := setup(t)
	got := parseOutput(t, runClient(t, s, "node", node, "client.js"))
	t.Logf("node-postgres (pg) version %s, node %s", got["version"], got["node"])
	expect(t, "node-postgres", got, map[string]any{
		"version":      matcher(nonEmpty),
		"server":       "PostgreSQL 15.0",
		"show tables":  showTables,
		"fields":       "region:25,orders:20,revenue:701",
		"eu":           "eu|33|420.75",
		"order 7":      "7|c0|1.75|2024-05-01T00:07:00.000Z",
		"order 42":     "42|c0|10.5|2024-05-01T00:42:00.000Z",
		"c3 orders":    "3,10,17",
		"bad query":    `42703 column "nope" does not exist`,
		"syntax error": "42601 position 1",
		"after error":  "1",
		"notify":       "hello|from node|true",
		"view notify":  "ping_counts|node|1|insert|true",
	})
}

var (
	javacOnce sync.Once
	javacDir  string
	javacErr  error
)

// compileJDBC compiles jdbc/Client.java once per run.
func compileJDBC(t *testing.T) (java, classpath string) {
	t.Helper()
	java = need(t, "java", "apt-get install default-jdk-headless")
	javac := need(t, "javac", "apt-get install default-jdk-headless")
	need(t, pgjdbcJar, "apt-get install libpostgresql-jdbc-java")
	javacOnce.Do(func() {
		javacDir, javacErr = os.MkdirTemp("", "basin-compat-jdbc-")
		if javacErr != nil {
			return
		}
		out, err := exec.Command(javac, "-nowarn", "-cp", pgjdbcJar, "-d", javacDir, "jdbc/Client.java").CombinedOutput()
		if err != nil {
			javacErr = fmt.Errorf("javac jdbc/Client.java: %v\n%s", err, out)
		}
	})
	if javacErr != nil {
		t.Fatal(javacErr)
	}
	return java, javacDir + string(os.PathListSeparator) + pgjdbcJar
}

func (s *server) jdbcURL() string {
	return fmt.Sprintf("jdbc:postgresql://%s:%s/basin?sslmode=disable&connectTimeout=10&ApplicationName=basin-compat", s.host, s.port)
}

func TestJDBC(t *testing.T) {
	java, cp := compileJDBC(t)
	s := setup(t)
	got := parseOutput(t, runClient(t, s, ".", java, "-cp", cp, "Client", s.jdbcURL(), "basic"))
	t.Logf("pgjdbc version %s (java %s)", got["version"], got["java"])
	expect(t, "pgjdbc", got, map[string]any{
		"version":         hasPrefix("PostgreSQL JDBC Driver "),
		"product":         "PostgreSQL 15.0",
		"show tables":     showTables,
		"columns":         "region:text,orders:int8,revenue:float8",
		"eu":              "eu|33|420.75",
		"order 42":        "42|c0|10.5|2024-05-01 00:42:00.0|Long",
		"order 49":        "49|c0|12.25|2024-05-01 00:49:00.0|Long",
		"server prepared": "true",
		"counts over 10":  "9,9,9,8,8,8,9",
		"fetch size 7":    "100 rows, sum 5050",
		"bad query":       `42703 ERROR: column "nope" does not exist`,
		"syntax error":    "42601",
		"after error":     "100",
		"notify":          "hello|from jdbc|true",
		"view notify":     "ping_counts|jdbc|1|insert|true",
	})
}

func TestSQLAlchemy(t *testing.T) {
	py := needPython(t, "psycopg2", "sqlalchemy")
	s := setup(t)
	got := parseOutput(t, runClient(t, s, "python", py, "sqlalchemy_client.py", s.sqlalchemyURL(), "basic"))
	t.Logf("SQLAlchemy version %s", got["version"])
	expect(t, "SQLAlchemy", got, map[string]any{
		"version":             hasPrefix("1.4."),
		"server_version_info": "15.0",
		"default_schema_name": "public",
		"us":                  "us|34|429.25",
		"orders 10-12":        "10|c3|2.5;11|c4|2.75;12|c5|3.0",
		"scalar":              "20",
		"bad query":           "42703 ProgrammingError",
	})
}

func (s *server) sqlalchemyURL() string {
	return fmt.Sprintf("postgresql+psycopg2://basin@%s:%s/basin", s.host, s.port)
}

// TestPgbench runs pgbench/lookup.sql in each query mode; the script
// checks the rows it reads, so a wrong or missing row aborts the run.
func TestPgbench(t *testing.T) {
	pgbench := need(t, "pgbench", "apt-get install postgresql-15 (pgbench is in the server package)")
	s := setup(t)
	version, err := exec.Command(pgbench, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("pgbench --version: %v\n%s", err, version)
	}
	t.Logf("pgbench version: %s", strings.TrimSpace(string(version)))
	for _, mode := range []string{"simple", "extended", "prepared"} {
		t.Run(mode, func(t *testing.T) {
			const clients, perClient = 4, 50
			out := runClient(t, s, "pgbench", pgbench, "-n", "-M", mode, "-f", "lookup.sql",
				"-c", fmt.Sprint(clients), "-j", "2", "-t", fmt.Sprint(perClient), "-h", s.host, "-p", s.port, "-U", "basin", "basin")
			for _, want := range []string{
				"query mode: " + mode,
				fmt.Sprintf("number of transactions actually processed: %d/%d", clients*perClient, clients*perClient),
				"number of failed transactions: 0 (0.000%)",
			} {
				if !strings.Contains(out, want) {
					t.Errorf("pgbench -M %s output lacks %q", mode, want)
				}
			}
		})
	}
	t.Run("catalog", func(t *testing.T) {
		out := runClient(t, s, "pgbench", pgbench, "-n", "-M", "prepared", "-f", "catalog.sql", "-t", "5",
			"-h", s.host, "-p", s.port, "-U", "basin", "basin")
		if !strings.Contains(out, "number of transactions actually processed: 5/5") {
			t.Errorf("pgbench catalog.sql:\n%s", out)
		}
	})
	t.Run("bad query", func(t *testing.T) {
		out, err := exec.Command(pgbench, "-n", "-M", "prepared", "-f", "pgbench/bad.sql", "-t", "1",
			"-h", s.host, "-p", s.port, "-U", "basin", "basin").CombinedOutput()
		if err == nil || !strings.Contains(string(out), `ERROR:  column "nope" does not exist`) {
			t.Errorf("pgbench bad.sql: %v\n%s", err, out)
		}
	})
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
