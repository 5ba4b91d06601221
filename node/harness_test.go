package node

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/basindb/basin/internal/poll"
	"github.com/basindb/basin/kafka"
	"github.com/basindb/basin/pgcodec"
)

// testLogger logs to stderr when BASIN_TEST_LOG is set (e.g. "debug"),
// else nowhere.
func testLogger() *slog.Logger {
	lvl := os.Getenv("BASIN_TEST_LOG")
	if lvl == "" {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	var l slog.Level
	_ = l.UnmarshalText([]byte(lvl))
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: l}))
}

// startNode starts an in-process node with an embedded broker in dir and
// stops it when the test ends (unless the test stopped it).
func startNode(t testing.TB, dir string, mod ...func(*Options)) *Node {
	t.Helper()
	opts := Options{DataDir: dir, PGAddr: "127.0.0.1:0", HTTPAddr: "off", Cluster: "test", Logger: testLogger()}
	for _, m := range mod {
		m(&opts)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	n, err := Start(ctx, opts)
	if err != nil {
		t.Fatalf("starting node: %v", err)
	}
	t.Cleanup(func() { _ = n.Close() })
	return n
}

// connect opens a pgx connection to addr using the simple query protocol.
// mod, if given, adjusts the configuration first.
func connect(t testing.TB, addr string, mod ...func(*pgx.ConnConfig)) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(fmt.Sprintf("postgres://basin@%s/basin?sslmode=disable", addr))
	if err != nil {
		t.Fatal(err)
	}
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	for _, m := range mod {
		m(cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("connecting to %s: %v", addr, err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

// queryText runs a query and renders its rows one per line, values
// separated by "|", NULL as NULL.
func queryText(ctx context.Context, conn *pgx.Conn, q string, colnames bool) (string, error) {
	rows, err := conn.Query(ctx, q, textResults)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var b strings.Builder
	if colnames {
		var names []string
		for _, f := range rows.FieldDescriptions() {
			names = append(names, f.Name)
		}
		b.WriteString(strings.Join(names, "|") + "\n")
	}
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return "", err
		}
		parts := make([]string, len(vals))
		raw := rows.RawValues()
		for i, v := range vals {
			parts[i] = formatTestValue(v)
			if text, ok := blobText(rows.FieldDescriptions()[i], rows.RawValues()[i]); ok {
				parts[i] = text
				continue
			}
			if _, ok := textResults[rows.FieldDescriptions()[i].DataTypeOID]; ok && raw[i] != nil {
				parts[i] = string(raw[i]) // Postgres's text, as psql shows it
			}
		}
		b.WriteString(strings.Join(parts, "|") + "\n")
	}
	return b.String(), rows.Err()
}

// textResults are the types whose values a logic test shows as the
// server writes them in text: the date and time types, whose text
// depends on the session's TimeZone and IntervalStyle.
var textResults = pgx.QueryResultFormatsByOID{
	1082: pgx.TextFormatCode, 1083: pgx.TextFormatCode, 1184: pgx.TextFormatCode, 1186: pgx.TextFormatCode,
	1182: pgx.TextFormatCode, 1183: pgx.TextFormatCode, 1185: pgx.TextFormatCode, 1187: pgx.TextFormatCode,
}

func formatTestValue(v any) string {
	switch v := v.(type) {
	case nil:
		return "NULL"
	case time.Time:
		return v.UTC().Format("2006-01-02 15:04:05.999999")
	case float64:
		return string(pgcodec.AppendFloat8(nil, v)) // as psql shows it
	case []any:
		parts := make([]string, len(v))
		for i, e := range v {
			parts[i] = formatTestValue(e)
		}
		return "[" + strings.Join(parts, " ") + "]"
	case pgtype.Numeric:
		// pgx's numeric as its text: the digits and scale the server sent.
		if t, err := v.Value(); err == nil && t != nil {
			return fmt.Sprint(t)
		}
	}
	return fmt.Sprint(v)
}

func errorText(err error) string {
	if pe, ok := err.(*pgconn.PgError); ok {
		s := fmt.Sprintf("ERROR %s: %s", pe.Code, pe.Message)
		if pe.Position > 0 {
			s += fmt.Sprintf(" (position %d)", pe.Position)
		}
		return s + "\n"
	}
	return "ERROR: " + err.Error() + "\n"
}

// eventually calls fn until it returns nil, failing the test with its
// last error once d has passed (internal/poll).
func eventually(t testing.TB, d time.Duration, fn func() error) {
	t.Helper()
	poll.Until(t, d, fn)
}

func kadmClient(cl *kgo.Client) *kadm.Client { return kadm.NewClient(cl) }

// sqlConn runs a test's statements and reads on one connection.
type sqlConn struct {
	t    testing.TB
	ctx  context.Context
	conn *pgx.Conn
}

// exec runs q, failing the test on an error.
func (c sqlConn) exec(q string) {
	c.t.Helper()
	if _, err := c.conn.Exec(c.ctx, q); err != nil {
		c.t.Fatalf("%s: %v", q, err)
	}
}

// rows runs q and returns its rows, each its values separated by
// spaces, sorted.
func (c sqlConn) rows(q string) []string {
	c.t.Helper()
	rs, err := c.conn.Query(c.ctx, q)
	if err != nil {
		c.t.Fatalf("%s: %v", q, err)
	}
	defer rs.Close()
	var out []string
	for rs.Next() {
		vals, err := rs.Values()
		if err != nil {
			c.t.Fatal(err)
		}
		fields := make([]string, len(vals))
		for i, v := range vals {
			fields[i] = fmt.Sprint(v)
		}
		out = append(out, strings.Join(fields, " "))
	}
	if rs.Err() != nil {
		c.t.Fatalf("%s: %v", q, rs.Err())
	}
	slices.Sort(out)
	return out
}

// restartable returns a function that starts a node in one data dir
// over a broker of its own (so that the broker outlives the node, which
// can then be closed and started again), and the broker's address.
func restartable(t *testing.T) (start func() *Node, broker string) {
	t.Helper()
	start, broker, _ = restartableIn(t)
	return start, broker
}

// restartableIn is restartable that also returns the node's data dir,
// for tests that move its state aside between starts; mod, if given,
// adjusts the node's options.
func restartableIn(t *testing.T, mod ...func(*Options)) (start func() *Node, broker, dir string) {
	t.Helper()
	b, err := kafka.StartBroker(kafka.BrokerOptions{Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	dir = t.TempDir()
	return func() *Node {
		return startNode(t, dir, append([]func(*Options){func(o *Options) { o.Brokers = b.Addrs(); o.ClusterSecret = "s" }}, mod...)...)
	}, b.Addrs()[0], dir
}

// waitTasks waits until n runs count tasks and each has applied all the
// input it knows of.
func waitTasks(t *testing.T, n *Node, count int) {
	t.Helper()
	if !poll.Cond(30*time.Second, func() bool { return len(n.localTasks().Tasks) == count && tasksCaughtUp(n) }) {
		var behind []string
		for _, ts := range n.localTasks().Tasks {
			if ts.State != "RUNNING" || ts.OffsetLag != 0 {
				behind = append(behind, fmt.Sprintf("%s %s lag %d", ts.Task, ts.State, ts.OffsetLag))
			}
		}
		t.Fatalf("the node runs %d tasks, want %d, all caught up; behind: %s", len(n.localTasks().Tasks), count, strings.Join(behind, ", "))
	}
}
