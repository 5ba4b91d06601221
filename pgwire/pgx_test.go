package pgwire

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/big"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/basindb/basin/catalog"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
)

// pgxConfig returns a pgx config for the server in the simple protocol,
// with context cancellation done the Postgres way (a CancelRequest) so
// that a cancelled statement leaves the connection usable.
func (ts *testServer) pgxConfig(t testing.TB, extra ...string) *pgx.ConnConfig {
	t.Helper()
	cfg, err := pgx.ParseConfig(ts.connString(extra...))
	if err != nil {
		t.Fatal(err)
	}
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	cfg.ConnectTimeout = testTimeout
	cfg.BuildContextWatcherHandler = func(pc *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: pc, DeadlineDelay: testTimeout}
	}
	return cfg
}

func (ts *testServer) connect(t testing.TB, extra ...string) *pgx.Conn {
	t.Helper()
	return ts.connectConfig(t, ts.pgxConfig(t, extra...))
}

func (ts *testServer) connectConfig(t testing.TB, cfg *pgx.ConnConfig) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// pgError returns err's *pgconn.PgError or fails the test.
func pgError(t testing.TB, err error) *pgconn.PgError {
	t.Helper()
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		t.Fatalf("want a *pgconn.PgError, got %T: %v", err, err)
	}
	return pe
}

// checkSelectOne runs "select 1" and checks the answer: the connection is
// usable.
func checkSelectOne(t testing.TB, conn *pgx.Conn) {
	t.Helper()
	var n int64
	if err := conn.QueryRow(testCtx(t), "select 1").Scan(&n); err != nil {
		t.Fatalf("select 1: %v", err)
	}
	if n != 1 {
		t.Fatalf("select 1 = %d", n)
	}
}

func TestPgxTypes(t *testing.T) {
	ts := startServer(t, Options{})
	conn := ts.connect(t)
	ctx := testCtx(t)

	rows, err := conn.Query(ctx, "types")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	fds := rows.FieldDescriptions()
	if len(fds) != len(typesCols) {
		t.Fatalf("%d fields, want %d", len(fds), len(typesCols))
	}
	wantLen := map[catalog.Type]int16{catalog.Boolean: 1, catalog.Int: 4, catalog.BigInt: 8, catalog.Double: 8, catalog.Varchar: -1, catalog.Timestamp: 8}
	for i, fd := range fds {
		col := typesCols[i]
		if fd.Name != col.Name || fd.DataTypeOID != col.Type.OID() || fd.DataTypeSize != wantLen[col.Type] ||
			fd.TypeModifier != -1 || fd.Format != 0 || fd.TableOID != 0 || fd.TableAttributeNumber != 0 {
			t.Errorf("field %d = %+v, want name %s oid %d len %d", i, fd, col.Name, col.Type.OID(), wantLen[col.Type])
		}
	}

	var (
		b  bool
		i  int32
		n  int64
		f  float64
		s  string
		tm time.Time
		e  string
	)
	if !rows.Next() {
		t.Fatalf("no first row: %v", rows.Err())
	}
	if err := rows.Scan(&b, &i, &n, &f, &s, &tm, &e); err != nil {
		t.Fatal(err)
	}
	if b != true || i != -42 || n != math.MaxInt64 || f != 0.1 || s != "héllo, world" || !tm.Equal(typesTime) || e != "" {
		t.Errorf("row 1 = %v %v %v %v %q %v %q", b, i, n, f, s, tm, e)
	}
	if !rows.Next() {
		t.Fatalf("no second row: %v", rows.Err())
	}
	var (
		nb *bool
		ni *int32
		nn *int64
		nf *float64
		ns *string
		nt *time.Time
		ne *string
	)
	if err := rows.Scan(&nb, &ni, &nn, &nf, &ns, &nt, &ne); err != nil {
		t.Fatal(err)
	}
	if nb != nil || ni != nil || nn != nil || nf != nil || ns != nil || nt != nil || ne != nil {
		t.Errorf("row 2 should be all NULL: %v %v %v %v %v %v %v", nb, ni, nn, nf, ns, nt, ne)
	}
	if rows.Next() {
		t.Fatal("a third row")
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if tag := rows.CommandTag().String(); tag != "SELECT 2" {
		t.Errorf("tag %q", tag)
	}
}

func TestPgxFloats(t *testing.T) {
	ts := startServer(t, Options{})
	conn := ts.connect(t)
	rows, err := conn.Query(testCtx(t), "floats")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for i := 0; rows.Next(); i++ {
		c := floatCases[i]
		if got := string(rows.RawValues()[0]); got != c.text {
			t.Errorf("%v: text %q, want %q", c.f, got, c.text)
		}
		var f float64
		if err := rows.Scan(&f); err != nil {
			t.Fatal(err)
		}
		if math.Float64bits(f) != math.Float64bits(c.f) && !(math.IsNaN(f) && math.IsNaN(c.f)) {
			t.Errorf("%v: decoded %v", c.f, f)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
}

func TestPgxError(t *testing.T) {
	ts := startServer(t, Options{})
	conn := ts.connect(t)

	_, err := conn.Exec(testCtx(t), "boom")
	pe := pgError(t, err)
	if pe.Code != "42601" || pe.Severity != "ERROR" || pe.Position != 1 ||
		pe.Message != `syntax error at or near "boom"` || pe.Detail != "boom is not a statement" || pe.Hint != "Try SELECT." {
		t.Errorf("error = %+v", pe)
	}
	checkSelectOne(t, conn)

	// An error after rows were sent: the rows arrive, then the error.
	rows, err := conn.Query(testCtx(t), "partial")
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for rows.Next() {
		var n int64
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		got = append(got, n)
	}
	if pe := pgError(t, rows.Err()); pe.Code != "22012" {
		t.Errorf("partial: %v", pe)
	}
	if len(got) != 1 || got[0] != 1 {
		t.Errorf("partial rows = %v", got)
	}
	checkSelectOne(t, conn)
}

func TestPgxInternalErrors(t *testing.T) {
	ts := startServer(t, Options{})
	conn := ts.connect(t)

	for _, c := range []struct {
		query, message, stackHas string
	}{
		{"bare error", "internal error: disk on fire", ""},
		{"panic", "internal error: panic: kaboom", "fakeSession).Query"},
		{"bad value", "internal error: pgwire: Row: column 1: cannot encode a Go string as int8", ""},
	} {
		_, err := conn.Exec(testCtx(t), c.query)
		pe := pgError(t, err)
		if pe.Code != "XX000" || pe.Message != c.message {
			t.Errorf("%s: got %s %q, want XX000 %q", c.query, pe.Code, pe.Message, c.message)
		}
		logged := false
		for _, rec := range ts.logs.find(slog.LevelError, "internal error") {
			if strings.Contains(c.message, rec["err"]) && strings.Contains(rec["stack"], "goroutine") &&
				strings.Contains(rec["stack"], c.stackHas) && rec["pid"] != "" {
				logged = true
			}
		}
		if !logged {
			t.Errorf("%s: no internal error logged with a stack (want it to contain %q)", c.query, c.stackHas)
		}
		checkSelectOne(t, conn)
	}
}

func TestPgxCancelByContext(t *testing.T) {
	ts := startServer(t, Options{})
	conn := ts.connect(t)

	ctx, cancel := context.WithTimeout(testCtx(t), 50*time.Millisecond)
	defer cancel()
	_, err := conn.Exec(ctx, "slow")
	pe := pgError(t, err)
	if pe.Code != "57014" || pe.Message != "canceling statement due to user request" {
		t.Errorf("got %s %q", pe.Code, pe.Message)
	}
	ts.waitStarted(t, "slow")
	checkSelectOne(t, conn)
}

func TestPgxCancelRequest(t *testing.T) {
	ts := startServer(t, Options{})
	conn := ts.connect(t)

	errc := make(chan error, 1)
	go func() {
		_, err := conn.Exec(testCtx(t), "slow")
		errc <- err
	}()
	ts.waitStarted(t, "slow")
	if err := conn.PgConn().CancelRequest(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if pe := pgError(t, <-errc); pe.Code != "57014" {
		t.Errorf("got %v", pe)
	}
	checkSelectOne(t, conn)

	// A cancel between statements cancels nothing, not even the next one.
	if err := conn.PgConn().CancelRequest(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	checkSelectOne(t, conn)
}

func TestPgxConnectionLimit(t *testing.T) {
	ts := startServer(t, Options{MaxConnections: 2})
	c1 := ts.connect(t)
	_ = ts.connect(t)

	_, err := pgx.ConnectConfig(testCtx(t), ts.pgxConfig(t))
	pe := pgError(t, err)
	if pe.Code != "53300" || pe.Message != "sorry, too many clients already" || pe.Severity != "FATAL" {
		t.Errorf("got %+v", pe)
	}

	// A cancel request is not a session: it still gets through.
	errc := make(chan error, 1)
	go func() {
		_, err := c1.Exec(testCtx(t), "slow")
		errc <- err
	}()
	ts.waitStarted(t, "slow")
	if err := c1.PgConn().CancelRequest(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if pe := pgError(t, <-errc); pe.Code != "57014" {
		t.Errorf("cancel at the limit: %v", pe)
	}

	// Freeing a slot admits the next client.
	if err := c1.Close(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the closed connection's slot to free", func() bool { return ts.sessionCount() < 2 })
	_ = ts.connect(t)
}

func TestPgxStreaming(t *testing.T) {
	ts := startServer(t, Options{})
	conn := ts.connect(t)

	const n = 100_000
	rows, err := conn.Query(testCtx(t), fmt.Sprintf("stream %d", n))
	if err != nil {
		t.Fatal(err)
	}
	count := 0
	for rows.Next() {
		var i int64
		var s string
		if err := rows.Scan(&i, &s); err != nil {
			t.Fatal(err)
		}
		if i != int64(count) || s != fmt.Sprintf("row-%d", count) {
			t.Fatalf("row %d = %d %q", count, i, s)
		}
		count++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if count != n || rows.CommandTag().String() != fmt.Sprintf("SELECT %d", n) {
		t.Fatalf("%d rows, tag %q", count, rows.CommandTag())
	}
}

// TestPgxRowsBeforeCompletion checks the flush policy: rows past the
// flush threshold reach the client while the statement is still running.
// A server that buffered until ReadyForQuery would never release the gate.
func TestPgxRowsBeforeCompletion(t *testing.T) {
	ts := startServer(t, Options{})
	conn := ts.connect(t)

	rows, err := conn.Query(testCtx(t), "gate")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	if !rows.Next() {
		t.Fatalf("no row before the statement completed: %v", rows.Err())
	}
	ts.waitStarted(t, "gate")
	close(ts.b.gate)
	count := 1
	for rows.Next() {
		count++
	}
	if err := rows.Err(); err != nil || count != 20000 {
		t.Fatalf("%d rows, err %v", count, err)
	}
}

func TestPgxNoticeEmptyMultiAndParameters(t *testing.T) {
	ts := startServer(t, Options{})
	var mu sync.Mutex
	var notices []*pgconn.Notice
	cfg := ts.pgxConfig(t)
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		mu.Lock()
		notices = append(notices, n)
		mu.Unlock()
	}
	conn := ts.connectConfig(t, cfg)
	ctx := testCtx(t)

	checkSelectOne(t, conn) // warm up
	var n int64
	if err := conn.QueryRow(ctx, "notice").Scan(&n); err != nil || n != 1 {
		t.Fatalf("notice: %v %v", n, err)
	}
	mu.Lock()
	if len(notices) != 1 || notices[0].Severity != "NOTICE" || notices[0].Code != "00000" ||
		notices[0].Message != "served by node-a" || notices[0].Detail != "offset lag 0" {
		t.Errorf("notices = %+v", notices)
	}
	mu.Unlock()

	tag, err := conn.Exec(ctx, "-- ping")
	if err != nil || tag.String() != "" {
		t.Errorf("empty query: tag %q err %v", tag, err)
	}

	results, err := conn.PgConn().Exec(ctx, "multi").ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 2 || results[0].CommandTag.String() != "SELECT 1" || len(results[0].Rows) != 1 ||
		results[1].CommandTag.String() != "CREATE TABLE" {
		t.Errorf("multi = %+v", results)
	}

	if got := conn.PgConn().ParameterStatus("server_version"); got != "15.0 (basin)" {
		t.Errorf("server_version = %q", got)
	}
	if _, err := conn.Exec(ctx, "set app=reporting"); err != nil {
		t.Fatal(err)
	}
	if got := conn.PgConn().ParameterStatus("application_name"); got != "reporting" {
		t.Errorf("application_name after SET = %q", got)
	}
}

func TestPgxStartupRefusals(t *testing.T) {
	ts := startServer(t, Options{})

	cfg := ts.pgxConfig(t)
	cfg.User = "refused"
	_, err := pgx.ConnectConfig(testCtx(t), cfg)
	if pe := pgError(t, err); pe.Code != "28000" || pe.Severity != "FATAL" {
		t.Errorf("refused user: %+v", pe)
	}

	cfg.User = "open-panics"
	_, err = pgx.ConnectConfig(testCtx(t), cfg)
	if pe := pgError(t, err); pe.Code != "XX000" || pe.Message != "internal error: panic: open exploded" {
		t.Errorf("panicking Open: %+v", pe)
	}
	checkSelectOne(t, ts.connect(t))
}

func TestPgxProtocol32Negotiated(t *testing.T) {
	ts := startServer(t, Options{})
	conn := ts.connect(t, "max_protocol_version=3.2")
	checkSelectOne(t, conn)
	cfg := ts.pgxConfig(t, "min_protocol_version=3.2")
	if _, err := pgx.ConnectConfig(testCtx(t), cfg); err == nil || !strings.Contains(err.Error(), "protocol version") {
		t.Errorf("a client requiring 3.2 should give up: %v", err)
	}
}

func TestPgxTLS(t *testing.T) {
	ts := startServer(t, Options{TLSConfig: selfSignedTLS(t)})
	conn := ts.connect(t, "sslmode=require")
	if _, ok := conn.PgConn().Conn().(*tls.Conn); !ok {
		t.Fatalf("connection is %T, want TLS", conn.PgConn().Conn())
	}
	checkSelectOne(t, conn)

	// Cancel works over TLS too.
	errc := make(chan error, 1)
	go func() {
		_, err := conn.Exec(testCtx(t), "slow")
		errc <- err
	}()
	ts.waitStarted(t, "slow")
	if err := conn.PgConn().CancelRequest(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if pe := pgError(t, <-errc); pe.Code != "57014" {
		t.Errorf("got %v", pe)
	}
	checkSelectOne(t, conn)
}

// TestCloseEndsSessions checks Close with a statement running: the
// statement's context ends, the client hears 57P01, and Close returns
// with every session closed (checked by startServer's cleanup).
func TestCloseEndsSessions(t *testing.T) {
	ts := startServer(t, Options{})
	conn := ts.connect(t)
	idle := ts.connect(t)

	errc := make(chan error, 1)
	go func() {
		_, err := conn.Exec(testCtx(t), "slow")
		errc <- err
	}()
	ts.waitStarted(t, "slow")
	if err := ts.Close(); err != nil {
		t.Fatal(err)
	}
	if pe := pgError(t, <-errc); pe.Code != "57P01" || pe.Severity != "FATAL" {
		t.Errorf("running statement: %+v", pe)
	}
	if _, err := idle.Exec(testCtx(t), "select 1"); err == nil {
		t.Error("idle connection still works after Close")
	}
	if n := ts.b.open.Load(); n != 0 {
		t.Errorf("%d sessions open after Close returned", n)
	}
	if err := ts.Start(); !errors.Is(err, ErrServerClosed) {
		t.Errorf("Start after Close: %v", err)
	}
}

func TestNewServerValidates(t *testing.T) {
	for _, opts := range []Options{
		{MaxConnections: -1},
		{MaxMessageSize: -1},
		{MaxMessageSize: 10},
		{StartupTimeout: -time.Second},
	} {
		if _, err := NewServer(opts, newFakeBackend()); err == nil {
			t.Errorf("NewServer(%+v) accepted", opts)
		}
	}
	if _, err := NewServer(Options{}, nil); err == nil {
		t.Error("NewServer with a nil Backend accepted")
	}
	s, err := NewServer(Options{}, newFakeBackend())
	if err != nil {
		t.Fatal(err)
	}
	if s.opts.Addr != DefaultAddr || s.opts.MaxConnections != DefaultMaxConnections ||
		s.opts.MaxMessageSize != DefaultMaxMessageSize || s.opts.StartupTimeout != DefaultStartupTimeout || s.opts.Logger == nil {
		t.Errorf("defaults not filled in: %+v", s.opts)
	}
	if s.Addr() != nil {
		t.Error("Addr before Start")
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close before Start: %v", err)
	}

	// An address in use fails Start with the address in the error.
	ts := startServer(t, Options{})
	addr := ts.Addr().String()
	s2, err := NewServer(Options{Addr: addr}, newFakeBackend())
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if err := s2.Start(); err == nil || !strings.Contains(err.Error(), addr) {
		t.Errorf("Start on a busy address: %v", err)
	}
}

// selfSignedTLS returns a server TLS config with a fresh self-signed
// certificate for 127.0.0.1.
func selfSignedTLS(t testing.TB) *tls.Config {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "basin test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		DNSNames:     []string{"localhost"},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
}
