package testcluster

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// QueryTimeout bounds each statement of the SQL helpers that take a
// testing.TB, connecting included.
const QueryTimeout = 30 * time.Second

// Node is one `basin serve` process of a cluster. Its fields are fixed
// once Start or AddNode has returned it; Restart keeps them.
type Node struct {
	*Process

	// Index is the node's position in Cluster.Nodes.
	Index int
	// ID is its --node-id, "node-<Index>".
	ID string
	// PGAddr and HTTPAddr are its Postgres and HTTP addresses, host:port
	// on 127.0.0.1.
	PGAddr   string
	HTTPAddr string
	// DataDir is its --data-dir.
	DataDir string

	password string // Options.Password
}

// readyLine is what `basin serve` prints on stderr when node.Start has
// returned (see docs/operations.md).
var readyLine = regexp.MustCompile(`basin \S+ ready: psql -h (\S+) -p (\d+) `)

// checkReady is the node's readiness check; see the package comment.
func (n *Node) checkReady(ctx context.Context, logFrom int) error {
	m := readyLine.FindStringSubmatch(n.log.since(logFrom))
	if m == nil {
		return errors.New(`no "ready: psql ..." line in its log yet`)
	}
	if got := net.JoinHostPort(m[1], m[2]); got != n.PGAddr {
		return fmt.Errorf("it reports Postgres on %s, not on %s as asked", got, n.PGAddr)
	}
	qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	rows, err := n.QueryCtx(qctx, "SELECT 1")
	if err != nil {
		return fmt.Errorf("SELECT 1: %w", err)
	}
	if len(rows) != 1 || len(rows[0]) != 1 || rows[0][0] != "1" {
		return fmt.Errorf("SELECT 1 returned %v", rows)
	}
	status, body, err := n.HTTPGet(qctx, "/healthz")
	if err != nil {
		return err
	}
	if status != http.StatusOK {
		return fmt.Errorf("GET /healthz: %d %s", status, body)
	}
	return nil
}

func (n *Node) connConfig() (*pgx.ConnConfig, error) {
	cfg, err := pgx.ParseConfig("postgres://basin@" + n.PGAddr + "/basin?sslmode=disable")
	if err != nil {
		return nil, err
	}
	cfg.ConnectTimeout = 10 * time.Second
	cfg.Password = n.password
	// Every value comes back as text, which is what Query returns.
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	return cfg, nil
}

// Connect opens a connection to the node (user basin, database basin,
// no TLS, simple protocol). The caller closes it.
func (n *Node) Connect(ctx context.Context) (*pgx.Conn, error) {
	cfg, err := n.connConfig()
	if err != nil {
		return nil, err
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("testcluster: connecting to %s at %s: %w", n.ID, n.PGAddr, err)
	}
	return conn, nil
}

// Conn opens a connection to the node, closed when the test ends: a
// session, for tests that need SET or a transaction across statements.
func (n *Node) Conn(t testing.TB) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), QueryTimeout)
	defer cancel()
	conn, err := n.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Bounded: the node may be stopped or gone by now.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = conn.Close(ctx)
	})
	return conn
}

// Exec runs sql (one or more statements when there are no args) in a
// session of its own and fails the test on error.
func (n *Node) Exec(t testing.TB, sql string, args ...any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), QueryTimeout)
	defer cancel()
	if err := n.ExecCtx(ctx, sql, args...); err != nil {
		t.Fatal(err)
	}
}

// ExecCtx runs sql in a session of its own.
func (n *Node) ExecCtx(ctx context.Context, sql string, args ...any) error {
	conn, err := n.Connect(ctx)
	if err != nil {
		return err
	}
	defer closeConn(conn)
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		return fmt.Errorf("testcluster: %s: %s: %w", n.ID, sql, err)
	}
	return nil
}

// Query runs a query in a session of its own and returns its rows as
// text (see Text); it fails the test on error.
func (n *Node) Query(t testing.TB, sql string, args ...any) [][]string {
	t.Helper()
	rows, err := n.QueryErr(t, sql, args...)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// QueryErr is Query for tests that expect errors: it returns the error
// (a *pgconn.PgError for an error of the server; errors.As finds it).
func (n *Node) QueryErr(t testing.TB, sql string, args ...any) ([][]string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), QueryTimeout)
	defer cancel()
	return n.QueryCtx(ctx, sql, args...)
}

// QueryCtx runs a query in a session of its own, connecting included
// within ctx.
func (n *Node) QueryCtx(ctx context.Context, sql string, args ...any) ([][]string, error) {
	conn, err := n.Connect(ctx)
	if err != nil {
		return nil, err
	}
	defer closeConn(conn)
	rows, err := conn.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("testcluster: %s: %s: %w", n.ID, sql, err)
	}
	out, err := Text(rows)
	if err != nil {
		return nil, fmt.Errorf("testcluster: %s: %s: %w", n.ID, sql, err)
	}
	return out, nil
}

// Text reads and closes rows, returning the text of each value and
// "NULL" for NULL. The values are the server's text format when the
// connection uses the simple protocol, as Node's connections do.
func Text(rows pgx.Rows) ([][]string, error) {
	defer rows.Close()
	var out [][]string
	for rows.Next() {
		raw := rows.RawValues()
		row := make([]string, len(raw))
		for i, v := range raw {
			if v == nil {
				row[i] = "NULL"
			} else {
				row[i] = string(v)
			}
		}
		out = append(out, row)
	}
	return out, rows.Err()
}

func closeConn(conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = conn.Close(ctx)
}

// HTTPGet sends GET path to the node's HTTP address and returns the
// status and body. A node with a certificate (--tls-cert) serves the
// address over TLS only and answers plaintext with 400: HTTPGet then
// asks again with https, without verifying the certificate (tests use
// self-signed ones).
func (n *Node) HTTPGet(ctx context.Context, path string) (status int, body []byte, err error) {
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	status, body, err = n.httpGet(ctx, http.DefaultClient, "http://"+n.HTTPAddr+path)
	if err == nil && status == http.StatusBadRequest && strings.Contains(string(body), "HTTP request to an HTTPS server") {
		status, body, err = n.httpGet(ctx, tlsClient, "https://"+n.HTTPAddr+path)
	}
	if err != nil {
		return 0, nil, fmt.Errorf("testcluster: GET %s on %s: %w", path, n.ID, err)
	}
	return status, body, nil
}

// tlsClient is HTTPGet's client for nodes that serve HTTPS.
var tlsClient = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}

func (n *Node) httpGet(ctx context.Context, cl *http.Client, url string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := cl.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, fmt.Errorf("reading the body: %w", err)
	}
	return resp.StatusCode, body, nil
}

// GetJSON sends GET path to the node's HTTP address and decodes the JSON
// answer into v. A status other than 200 is an error that holds the body.
func (n *Node) GetJSON(t testing.TB, path string, v any) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), QueryTimeout)
	defer cancel()
	status, body, err := n.HTTPGet(ctx, path)
	if err != nil {
		return err
	}
	if status != http.StatusOK {
		return fmt.Errorf("testcluster: GET %s on %s: %d %s", path, n.ID, status, strings.TrimSpace(string(body)))
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("testcluster: GET %s on %s: %w in %q", path, n.ID, err, body)
	}
	return nil
}
