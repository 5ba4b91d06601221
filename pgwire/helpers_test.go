package pgwire

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"math"
	"net"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/internal/poll"
	"github.com/basindb/basin/pgcodec"
)

// testTimeout bounds every wait in these tests: a condition that does not
// hold by then is a failure, never a reason to wait longer.
const testTimeout = 20 * time.Second

// fakeBackend answers a fixed set of query texts (see fakeSession.Query).
// It counts open sessions so tests can check that every session a
// connection opened was closed.
type fakeBackend struct {
	open atomic.Int64
	// started receives the text of each blocking query ("slow", "gate")
	// once it is running, so tests wait for that instead of sleeping.
	started chan string
	// gate releases the "gate" query.
	gate chan struct{}
	// noBlock makes "slow" and "gate" return at once (the fuzz target
	// must not depend on the client to end a query).
	noBlock bool

	// slowCtx is the context of the last "slow" query.
	slowCtx atomic.Pointer[context.Context]
	// closed receives one value per closed session, if there is room.
	closed chan struct{}

	// listeners are the sessions that ran "listen <channel>", by
	// channel: "notify <channel> <payload>" queues a notification for
	// each of them, at once (the fake has no transactions to wait for).
	lmu       sync.Mutex
	listeners map[string][]*fakeSession
}

func newFakeBackend() *fakeBackend {
	return &fakeBackend{started: make(chan string, 16), gate: make(chan struct{}), closed: make(chan struct{}, 64)}
}

func (b *fakeBackend) Open(ctx context.Context, params map[string]string, info ConnInfo) (Session, error) {
	if params["user"] == "refused" {
		return nil, pgerr.New(pgerr.InvalidAuthorizationSpecification, `role "refused" is not permitted to log in`)
	}
	if params["user"] == "open-panics" {
		panic("open exploded")
	}
	b.open.Add(1)
	return &fakeSession{b: b, pid: info.PID, params: map[string]string{
		"server_version":              "15.0 (basin)",
		"server_encoding":             "UTF8",
		"client_encoding":             "UTF8",
		"DateStyle":                   "ISO, MDY",
		"integer_datetimes":           "on",
		"standard_conforming_strings": "on",
		"TimeZone":                    "UTC",
		"application_name":            params["application_name"],
	}}, nil
}

// fakeSession is one session of fakeBackend.
type fakeSession struct {
	b      *fakeBackend
	params map[string]string
	closed atomic.Bool
	inTxn  bool // after "begin", until "commit"
	pid    uint32

	// nmu guards the notifications queued for the client and the wake
	// function pgwire gave.
	nmu    sync.Mutex
	queued []Notification
	wake   func()
}

// notify queues a notification from pid on channel for every session
// that listens to it, and wakes each.
func (b *fakeBackend) notify(pid uint32, channel, payload string) {
	b.lmu.Lock()
	ls := slices.Clone(b.listeners[channel])
	b.lmu.Unlock()
	for _, l := range ls {
		l.nmu.Lock()
		l.queued = append(l.queued, Notification{PID: pid, Channel: channel, Payload: payload})
		wake := l.wake
		l.nmu.Unlock()
		wake()
	}
}

func (s *fakeSession) SetWake(wake func()) {
	s.nmu.Lock()
	s.wake = wake
	s.nmu.Unlock()
}

func (s *fakeSession) Notifications() ([]Notification, *pgerr.Error) {
	s.nmu.Lock()
	defer s.nmu.Unlock()
	ns := s.queued
	s.queued = nil
	return ns, nil
}

// The rows of "types": one of each type, then all NULLs.
var (
	typesCols = []catalog.Column{
		{Name: "b", Type: catalog.Boolean},
		{Name: "i", Type: catalog.Int},
		{Name: "n", Type: catalog.BigInt},
		{Name: "f", Type: catalog.Double},
		{Name: "s", Type: catalog.Varchar},
		{Name: "ts", Type: catalog.Timestamp},
		{Name: "e", Type: catalog.Varchar},
	}
	typesTime = time.Date(2024, 2, 29, 13, 4, 5, 123456000, time.UTC)
	typesRow  = []any{true, int64(-42), int64(math.MaxInt64), 0.1, "héllo, world", typesTime, ""}
)

// floatCases are float8 values and their text as PostgreSQL 15 prints
// them (checked against a real server: SELECT '<value>'::float8).
var floatCases = []struct {
	f    float64
	text string
}{
	{1e6, "1000000"},
	{1e14, "100000000000000"},
	{1e15, "1e+15"},
	{0.0001, "0.0001"},
	{0.00001, "1e-05"},
	{0.1, "0.1"},
	{3, "3"},
	{-2.5, "-2.5"},
	{math.NaN(), "NaN"},
	{math.Inf(1), "Infinity"},
	{math.Inf(-1), "-Infinity"},
	{1.5e300, "1.5e+300"},
	{math.Copysign(0, -1), "-0"},
	{0, "0"},
	{123456789012345.6, "123456789012345.6"},
	{2.5e-5, "2.5e-05"},
	{1e100, "1e+100"},
	{math.MaxFloat64, "1.7976931348623157e+308"},
	{5e-324, "5e-324"},
}

func (s *fakeSession) Query(ctx context.Context, text string, w ResultWriter) error {
	if s.closed.Load() {
		return errors.New("fake: Query on a closed session")
	}
	// psql sends a script's statements with their semicolons.
	text = strings.TrimSuffix(strings.TrimSpace(text), ";")
	switch {
	case text == "select 1":
		return selectOne(w)
	case text == "types":
		if err := w.Columns(typesCols); err != nil {
			return err
		}
		if err := w.Row(typesRow); err != nil {
			return err
		}
		if err := w.Row(make([]any, len(typesCols))); err != nil {
			return err
		}
		return w.Complete("SELECT 2")
	case text == "floats":
		if err := w.Columns([]catalog.Column{{Name: "f", Type: catalog.Double}}); err != nil {
			return err
		}
		for _, c := range floatCases {
			if err := w.Row([]any{c.f}); err != nil {
				return err
			}
		}
		return w.Complete(fmt.Sprintf("SELECT %d", len(floatCases)))
	case text == "boom":
		return &pgerr.Error{
			Code:     pgerr.SyntaxError,
			Message:  `syntax error at or near "boom"`,
			Detail:   "boom is not a statement",
			Hint:     "Try SELECT.",
			Position: 1,
		}
	case text == "panic":
		panic("kaboom")
	case text == "bare error":
		return errors.New("disk on fire")
	case text == "disk full":
		return fmt.Errorf("materialize: commit: %w",
			&fs.PathError{Op: "write", Path: "/data/state/v/000001.log", Err: syscall.ENOSPC})
	case text == "bad value":
		if err := w.Columns([]catalog.Column{{Name: "n", Type: catalog.BigInt}}); err != nil {
			return err
		}
		return w.Row([]any{"not a number"})
	case text == "partial":
		if err := w.Columns([]catalog.Column{{Name: "n", Type: catalog.BigInt}}); err != nil {
			return err
		}
		if err := w.Row([]any{int64(1)}); err != nil {
			return err
		}
		return pgerr.New(pgerr.DivisionByZero, "division by zero")
	case text == "slow":
		s.b.slowCtx.Store(&ctx)
		s.b.started <- text
		if s.b.noBlock {
			return pgerr.New(pgerr.QueryCanceled, "not blocking in this test")
		}
		<-ctx.Done()
		return ctx.Err()
	case text == "gate":
		if err := w.Columns([]catalog.Column{{Name: "n", Type: catalog.BigInt}}); err != nil {
			return err
		}
		// More rows than one flush holds: the client must see rows while
		// the query still runs.
		const n = 20000
		for i := range n {
			if err := w.Row([]any{int64(i)}); err != nil {
				return err
			}
		}
		s.b.started <- text
		if !s.b.noBlock {
			select {
			case <-s.b.gate:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return w.Complete(fmt.Sprintf("SELECT %d", n))
	case strings.HasPrefix(text, "copy "):
		return fakeCopy(strings.TrimPrefix(text, "copy "), w)
	case text == "-- ping" || text == "":
		return w.Empty()
	case text == "begin" || text == "commit":
		s.inTxn = text == "begin"
		return w.Complete(strings.ToUpper(text))
	case text == "notice":
		if err := w.Notice(&pgerr.Error{Message: "served by node-a", Detail: "offset lag 0", Severity: "NOTICE"}); err != nil {
			return err
		}
		return selectOne(w)
	case text == "multi":
		if err := selectOne(w); err != nil {
			return err
		}
		return w.Complete("CREATE TABLE")
	case strings.HasPrefix(text, "listen "):
		ch := strings.TrimPrefix(text, "listen ")
		s.b.lmu.Lock()
		if s.b.listeners == nil {
			s.b.listeners = map[string][]*fakeSession{}
		}
		s.b.listeners[ch] = append(s.b.listeners[ch], s)
		s.b.lmu.Unlock()
		return w.Complete("LISTEN")
	case strings.HasPrefix(text, "notify "):
		// notify <channel> <payload> [<copies>]
		f := strings.Fields(text)
		copies := 1
		if len(f) > 3 {
			copies, _ = strconv.Atoi(f[3])
		}
		for range copies {
			s.b.notify(s.pid, f[1], f[2])
		}
		return w.Complete("NOTIFY")
	case strings.HasPrefix(text, "set app="):
		s.params["application_name"] = strings.TrimPrefix(text, "set app=")
		return w.Complete("SET")
	case strings.HasPrefix(text, "stream "):
		n, err := strconv.Atoi(strings.TrimPrefix(text, "stream "))
		if err != nil {
			return pgerr.New(pgerr.InvalidParameterValue, "bad count: %v", err)
		}
		if err := w.Columns([]catalog.Column{{Name: "n", Type: catalog.BigInt}, {Name: "s", Type: catalog.Varchar}}); err != nil {
			return err
		}
		row := make([]any, 2)
		for i := range n {
			row[0], row[1] = int64(i), "row-"+strconv.Itoa(i)
			if err := w.Row(row); err != nil {
				return err
			}
		}
		return w.Complete(fmt.Sprintf("SELECT %d", n))
	}
	return &pgerr.Error{Code: pgerr.SyntaxError, Message: fmt.Sprintf("fake backend does not know %q", text), Position: 1}
}

// fakeCopy answers "copy text", "copy csv" (with a header), "copy
// flush" (flushing after each row) and "copy fail" (an error after a
// row): two columns, rows with what each format must escape or quote.
func fakeCopy(how string, w ResultWriter) error {
	cols := []catalog.Column{{Name: "n", Type: catalog.BigInt}, {Name: "s", Type: catalog.Varchar}}
	f := pgcodec.DefaultCopyFormat(how == "csv")
	f.Header = how == "csv"
	if err := w.CopyOut(cols, &f); err != nil {
		return err
	}
	rows := [][]any{{int64(1), "a\tb\\c"}, {int64(2), nil}, {nil, "x,\"y\"\n"}, {int64(4), ""}}
	for i, r := range rows {
		if how == "fail" && i == 1 {
			return pgerr.New(pgerr.DivisionByZero, "division by zero")
		}
		if err := w.Row(r); err != nil {
			return err
		}
		if how == "flush" {
			if err := w.Flush(); err != nil {
				return err
			}
		}
	}
	return w.Complete(fmt.Sprintf("COPY %d", len(rows)))
}

func selectOne(w ResultWriter) error {
	if err := w.Columns([]catalog.Column{{Name: "one", Type: catalog.BigInt}}); err != nil {
		return err
	}
	if err := w.Row([]any{int64(1)}); err != nil {
		return err
	}
	return w.Complete("SELECT 1")
}

func (s *fakeSession) ParameterStatus() map[string]string { return maps.Clone(s.params) }

func (s *fakeSession) TxnStatus() byte {
	if s.inTxn {
		return 'T'
	}
	return 'I'
}

func (s *fakeSession) Close() {
	if s.closed.Swap(true) {
		panic("fake: session closed twice")
	}
	s.b.lmu.Lock()
	for ch, ls := range s.b.listeners {
		s.b.listeners[ch] = slices.DeleteFunc(ls, func(l *fakeSession) bool { return l == s })
	}
	s.b.lmu.Unlock()
	s.b.open.Add(-1)
	select {
	case s.b.closed <- struct{}{}:
	default:
	}
}

// logRecords is an slog.Handler that keeps records for tests to inspect.
type logRecords struct {
	mu      sync.Mutex
	records []slog.Record
}

func (l *logRecords) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecords) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.records = append(l.records, r.Clone())
	return nil
}
func (l *logRecords) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &withAttrs{l: l, attrs: attrs}
}
func (l *logRecords) WithGroup(string) slog.Handler { return l }

type withAttrs struct {
	l     *logRecords
	attrs []slog.Attr
}

func (w *withAttrs) Enabled(context.Context, slog.Level) bool { return true }
func (w *withAttrs) Handle(ctx context.Context, r slog.Record) error {
	r = r.Clone()
	r.AddAttrs(w.attrs...)
	return w.l.Handle(ctx, r)
}
func (w *withAttrs) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &withAttrs{l: w.l, attrs: append(append([]slog.Attr{}, w.attrs...), attrs...)}
}
func (w *withAttrs) WithGroup(string) slog.Handler { return w }

// find returns the attributes of the records at level whose message
// contains msg.
func (l *logRecords) find(level slog.Level, msg string) []map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]string
	for _, r := range l.records {
		if r.Level != level || !strings.Contains(r.Message, msg) {
			continue
		}
		attrs := map[string]string{}
		r.Attrs(func(a slog.Attr) bool {
			attrs[a.Key] = a.Value.String()
			return true
		})
		out = append(out, attrs)
	}
	return out
}

// testServer is a started Server over a fakeBackend.
type testServer struct {
	*Server
	b    *fakeBackend
	logs *logRecords
	host string
	port int
}

// startServer starts a server on a loopback port. Cleanup closes it and
// checks that Close ended every session.
func startServer(t testing.TB, opts Options) *testServer {
	t.Helper()
	b := newFakeBackend()
	logs := &logRecords{}
	if opts.Addr == "" {
		opts.Addr = "127.0.0.1:0"
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(logs)
	}
	s, err := NewServer(opts, b)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	addr := s.Addr().(*net.TCPAddr)
	ts := &testServer{Server: s, b: b, logs: logs, host: addr.IP.String(), port: addr.Port}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if n := b.open.Load(); n != 0 {
			t.Errorf("%d sessions still open after Close", n)
		}
		checkNoServerGoroutines(t)
	})
	return ts
}

// checkNoServerGoroutines fails if a goroutine stays in the server's or
// a connection's code: Close must have joined them all. A goroutine may
// still be seen for a moment after its wg.Done, so this waits for the
// condition rather than sampling once.
func checkNoServerGoroutines(t testing.TB) {
	t.Helper()
	var left []string
	deadline := time.Now().Add(testTimeout)
	for {
		left = serverGoroutines()
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			break
		}
		runtime.Gosched()
	}
	t.Errorf("goroutines left running after Close:\n%s", strings.Join(left, "\n\n"))
}

func serverGoroutines() []string {
	buf := stacks()
	var left []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "basin/pgwire.(*conn).") || strings.Contains(g, "basin/pgwire.(*Server).") ||
			strings.Contains(g, "basin/pgwire.(*notifier).") {
			left = append(left, g)
		}
	}
	return left
}

// connString is a libpq connection string for the server.
func (ts *testServer) connString(extra ...string) string {
	s := fmt.Sprintf("host=%s port=%d user=basin dbname=basin sslmode=disable", ts.host, ts.port)
	for _, e := range extra {
		s += " " + e
	}
	return s
}

// dial opens a raw TCP connection to the server.
func (ts *testServer) dial(t testing.TB) net.Conn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", net.JoinHostPort(ts.host, strconv.Itoa(ts.port)), testTimeout)
	if err != nil {
		t.Fatal(err)
	}
	_ = nc.SetDeadline(time.Now().Add(testTimeout))
	t.Cleanup(func() { nc.Close() })
	return nc
}

// waitStarted waits until the fake backend runs the blocking query text.
func (ts *testServer) waitStarted(t testing.TB, text string) {
	t.Helper()
	select {
	case got := <-ts.b.started:
		if got != text {
			t.Fatalf("started %q, want %q", got, text)
		}
	case <-time.After(testTimeout):
		t.Fatalf("query %q did not start within %v", text, testTimeout)
	}
}

// eventually polls cond until it holds or testTimeout passes. It is for
// conditions nothing signals (a slot freed on the server after a client
// hung up); the tick is a poll interval, not a guess at how long
// anything takes.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	if !pollCond(cond) {
		t.Fatalf("timed out after %v waiting for %s", testTimeout, what)
	}
}

// pollCond checks cond until it holds (true) or testTimeout passes
// (false) (internal/poll).
func pollCond(cond func() bool) bool { return poll.Cond(testTimeout, cond) }

// waitClosed waits until the fake backend closes a session.
func (ts *testServer) waitClosed(t testing.TB) {
	t.Helper()
	select {
	case <-ts.b.closed:
	case <-time.After(testTimeout):
		t.Fatalf("no session closed within %v", testTimeout)
	}
}

// sessionCount returns the number of sessions the server holds.
func (s *Server) sessionCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.mu.sessions)
}

// stacks returns the stacks of all goroutines.
func stacks() []byte {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return buf[:n]
		}
		buf = make([]byte, 2*len(buf))
	}
}
