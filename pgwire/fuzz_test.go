package pgwire

import (
	"bytes"
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
)

// FuzzConn feeds arbitrary bytes to the server over net.Pipe and checks
// what the package promises about hostile input: the server never
// panics or hangs, every session a connection opened is closed, no
// goroutine outlives its connection, and no other session notices.
//
// Each input is served twice: after a valid StartupMessage (reaching the
// command loop), and as the whole byte stream of a connection (reaching
// startup: SSLRequest, CancelRequest, the StartupMessage itself). Meanwhile
// a bystander session, opened once, runs a statement that only its own
// release ends; a CancelRequest that reached it, a server the input shut
// down, or any damage to its connection state fails the input.
//
// The committed corpus is in testdata/fuzz/FuzzConn; TestFuzzConnCorpus
// keeps it equal to fuzzSeeds (regenerate with -rewrite). Run with
//
//	go test ./pgwire -run '^$' -fuzz FuzzConn
func FuzzConn(f *testing.F) {
	for _, seed := range fuzzSeeds(f) {
		f.Add(seed.data)
	}
	b := &fuzzBackend{
		fakeBackend: newFakeBackend(),
		holding:     make(chan struct{}, 1),
		release:     make(chan struct{}, 1),
	}
	b.noBlock = true // only the client's bytes may decide when a query ends
	b.started = make(chan string, 1<<16)
	s, err := NewServer(Options{
		Logger:         slog.New(slog.DiscardHandler),
		MaxMessageSize: 64 << 10,
		StartupTimeout: testTimeout,
	}, b)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() {
		if err := s.Close(); err != nil {
			f.Errorf("Close: %v", err)
		}
		checkNoServerGoroutines(f)
	})
	by := openBystander(f, s, b)
	if by.key.ProcessID != fuzzBystanderPID {
		f.Fatalf("the bystander got process ID %d; the cancel seeds aim at %d", by.key.ProcessID, fuzzBystanderPID)
	}
	startup := startupPacket(pgproto3.ProtocolVersion30, "user", "fuzz", "database", "basin")

	f.Fuzz(func(t *testing.T, data []byte) {
		for len(b.started) > 0 {
			<-b.started
		}
		by.hold(t)
		for _, in := range [][]byte{append(append([]byte{}, startup...), data...), data} {
			// The bystander's goroutines are parked in its held statement
			// and its read; nothing else of the server's is running.
			before := runtime.NumGoroutine()
			fuzzServe(t, s, in)
			// Errorf, not Fatalf: the bystander is still held, and its
			// check must run to leave it ready for the next input.
			if n := b.open.Load(); n != 1 {
				t.Errorf("%d sessions left open besides the bystander's", n-1)
			}
			checkGoroutinesBack(t, before)
			if t.Failed() {
				break
			}
		}
		by.check(t, s)
	})
}

// fuzzServe serves one connection whose client sends in, shuts down its
// sending side and reads until the server closes the connection. It
// returns once the connection has ended and its output was drained.
func fuzzServe(t *testing.T, s *Server, in []byte) {
	t.Helper()
	client, server := net.Pipe()
	defer client.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.serveConn(&halfClosedConn{Conn: server, left: len(in)})
	}()
	// Drain the server's answers until it closes its end.
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		_, _ = io.Copy(io.Discard, client)
	}()
	// The write ends early if the server closes first (a protocol
	// violation). The end of the input ends the connection: the server
	// reads it as the client gone, which ends whatever the input left
	// running.
	_ = client.SetWriteDeadline(time.Now().Add(testTimeout))
	_, _ = client.Write(in)
	// Stop the deadline's timer: when it fires, it starts a goroutine,
	// which a later input would count.
	_ = client.SetWriteDeadline(time.Time{})

	select {
	case <-done:
	case <-time.After(testTimeout):
		t.Fatalf("connection did not end within %v of the end of its input", testTimeout)
	}
	<-drained
}

// halfClosedConn is the server's end of a pipe whose client sends left
// bytes and then shuts down its sending side, as TCP's half-close does:
// reads return io.EOF after those bytes, and writes still reach the
// client. Unlike a client that hangs up once it has written, it lets the
// server process and answer every message but the last whatever the
// scheduling; the last one races with the end of the input, which the
// server takes for the client gone, as it would over TCP.
type halfClosedConn struct {
	net.Conn
	left int // the connection's goroutines read one at a time
}

func (c *halfClosedConn) Read(p []byte) (int, error) {
	if c.left == 0 {
		return 0, io.EOF
	}
	n, err := c.Conn.Read(p[:min(len(p), c.left)])
	c.left -= n
	return n, err
}

// checkGoroutinesBack waits until no more goroutines run than before, and
// reports every goroutine's stack if that does not happen within
// testTimeout. A goroutine may still be counted for a moment after it did
// its last work (a deferred close, an AfterFunc that set a deadline), so
// this polls. It reports with Errorf, not Fatalf, so that the bystander
// check still runs.
func checkGoroutinesBack(t *testing.T, before int) {
	t.Helper()
	if !pollCond(func() bool { return runtime.NumGoroutine() <= before }) {
		t.Errorf("%d goroutines running after the connection ended, %d before it started:\n%s",
			runtime.NumGoroutine(), before, allStacks(64<<10))
	}
}

// allStacks returns the stacks of all goroutines, cut to at most limit
// bytes.
func allStacks(limit int) string {
	buf := stacks()
	if len(buf) > limit {
		return fmt.Sprintf("%s\n... (%d more bytes of stacks)", buf[:limit], len(buf)-limit)
	}
	return string(buf)
}

// fuzzBystanderPID is the process ID the bystander gets: it is the first
// session of a new server. The CancelRequest seeds aim at it.
const fuzzBystanderPID = 1

// fuzzBackend is the fake backend, except that the session of the user
// "bystander" that FuzzConn opens first also knows "hold": it reports that
// it is running, then waits for release or its context and answers as
// "select 1" does.
type fuzzBackend struct {
	*fakeBackend
	holding, release chan struct{}
	bystanderOpened  bool
}

func (b *fuzzBackend) Open(ctx context.Context, params map[string]string, info ConnInfo) (Session, error) {
	sess, err := b.fakeBackend.Open(ctx, params, info)
	if err != nil || params["user"] != "bystander" || b.bystanderOpened {
		return sess, err
	}
	// Only FuzzConn's setup gets here: no fuzz input runs before it.
	b.bystanderOpened = true
	return &holdSession{Session: sess, b: b}, nil
}

// holdSession is the bystander's session. It embeds the fake session's
// Session so that it has every method a Session has.
type holdSession struct {
	Session
	b *fuzzBackend
}

func (s *holdSession) Query(ctx context.Context, text string, w ResultWriter) error {
	if text != "hold" {
		return s.Session.Query(ctx, text, w)
	}
	s.b.holding <- struct{}{}
	select {
	case <-s.b.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	return selectOne(w)
}

// bystander is a session that shares the server with the fuzz inputs.
type bystander struct {
	b    *fuzzBackend
	nc   net.Conn // the client's end of the pipe
	fe   *pgproto3.Frontend
	key  pgproto3.BackendKeyData
	conn *conn         // the server's side, registered under key
	done chan struct{} // closed when the server is done with the connection
	// selectOne is the answer to "select 1", encoded: the answer every
	// check expects, byte for byte.
	selectOne [][]byte
	// broken is set when a check failed: the connection is then in an
	// unknown state, and every later input would fail for the same reason.
	broken bool
}

// openBystander opens the bystander session on s, prepares its named
// statement and records its answer to "select 1". Cleanup terminates it.
func openBystander(tb testing.TB, s *Server, b *fuzzBackend) *bystander {
	tb.Helper()
	client, server := net.Pipe()
	by := &bystander{b: b, nc: client, fe: pgproto3.NewFrontend(client, client), done: make(chan struct{})}
	go func() {
		defer close(by.done)
		s.serveConn(server)
	}()
	tb.Cleanup(func() {
		// End the held statement if a failed input left it running, then
		// terminate, and hang up in case the server is not reading.
		select {
		case b.release <- struct{}{}:
		default:
		}
		by.fe.Send(&pgproto3.Terminate{})
		_ = by.nc.SetDeadline(time.Now().Add(testTimeout))
		_ = by.fe.Flush()
		_ = by.nc.Close()
		select {
		case <-by.done:
		case <-time.After(testTimeout):
			tb.Errorf("the bystander's connection did not end within %v", testTimeout)
		}
	})
	_ = client.SetDeadline(time.Now().Add(testTimeout))

	by.send(tb, &pgproto3.StartupMessage{
		ProtocolVersion: pgproto3.ProtocolVersion30,
		Parameters:      map[string]string{"user": "bystander", "database": "basin", "application_name": "bystander"},
	})
	for ready := false; !ready; {
		switch m := by.receive(tb).(type) {
		case *pgproto3.BackendKeyData:
			by.key = pgproto3.BackendKeyData{ProcessID: m.ProcessID, SecretKey: append([]byte{}, m.SecretKey...)}
		case *pgproto3.ReadyForQuery:
			ready = true
		case *pgproto3.ErrorResponse:
			tb.Fatalf("bystander startup: %s %s", m.Code, m.Message)
		}
	}
	if by.key.SecretKey == nil {
		tb.Fatal("bystander: no BackendKeyData before ReadyForQuery")
	}
	s.mu.Lock()
	by.conn = s.mu.sessions[by.key.ProcessID]
	s.mu.Unlock()
	if by.conn == nil {
		tb.Fatalf("bystander: the server has no session with process ID %d", by.key.ProcessID)
	}

	by.send(tb, &pgproto3.Parse{Name: "bystander", Query: "select 1"}, &pgproto3.Sync{})
	by.expect(tb, "prepare", encodeAll(tb, &pgproto3.ParseComplete{}, &pgproto3.ReadyForQuery{TxStatus: 'I'}))

	by.send(tb, &pgproto3.Query{String: "select 1"})
	var got []string
	for {
		msg := by.receive(tb)
		by.selectOne = append(by.selectOne, encodeAll(tb, msg)...)
		got = append(got, describeMessage(msg))
		if _, ok := msg.(*pgproto3.ReadyForQuery); ok {
			break
		}
	}
	if want := []string{
		`*pgproto3.RowDescription ["one"]`, `*pgproto3.DataRow ["1"]`,
		`*pgproto3.CommandComplete "SELECT 1"`, `*pgproto3.ReadyForQuery 'I'`,
	}; strings.Join(got, "\n") != strings.Join(want, "\n") {
		tb.Fatalf("bystander: select 1 answered\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	by.clearDeadline()
	return by
}

// clearDeadline stops the timer of the client's deadline, which would
// start a goroutine when it fires.
func (by *bystander) clearDeadline() { _ = by.nc.SetDeadline(time.Time{}) }

// hold starts the bystander's "hold" statement and waits until it runs.
func (by *bystander) hold(t *testing.T) {
	t.Helper()
	if by.broken {
		t.Fatal("the bystander is unusable since an earlier input failed its check")
	}
	by.broken = true // until the check passes
	_ = by.nc.SetDeadline(time.Now().Add(testTimeout))
	by.send(t, &pgproto3.Query{String: "hold"})
	select {
	case <-by.b.holding:
	case <-time.After(testTimeout):
		t.Fatalf("the bystander's statement did not start within %v", testTimeout)
	}
}

// check releases the held statement and checks that the bystander's
// session is as the fuzz input found it: the statement completes
// uncancelled, a new query and its named prepared statement answer as
// before, and the server still has its session under its own key.
func (by *bystander) check(t *testing.T, s *Server) {
	t.Helper()
	_ = by.nc.SetDeadline(time.Now().Add(testTimeout))
	by.b.release <- struct{}{}
	by.expect(t, "the held statement", by.selectOne)

	by.send(t, &pgproto3.Query{String: "select 1"})
	by.expect(t, "select 1", by.selectOne)

	by.send(t, &pgproto3.Bind{PreparedStatement: "bystander"}, &pgproto3.Execute{}, &pgproto3.Sync{})
	by.expect(t, "its prepared statement", append(encodeAll(t, &pgproto3.BindComplete{}), by.selectOne[1:]...))

	s.mu.Lock()
	c := s.mu.sessions[by.key.ProcessID]
	s.mu.Unlock()
	if c != by.conn || !bytes.Equal(c.secret[:], by.key.SecretKey) {
		t.Fatalf("the server no longer has the bystander's connection under process ID %d and its secret", by.key.ProcessID)
	}
	by.clearDeadline()
	by.broken = false
}

func (by *bystander) send(tb testing.TB, msgs ...pgproto3.FrontendMessage) {
	tb.Helper()
	for _, m := range msgs {
		by.fe.Send(m)
	}
	if err := by.fe.Flush(); err != nil {
		tb.Fatalf("bystander: send: %v", err)
	}
}

func (by *bystander) receive(tb testing.TB) pgproto3.BackendMessage {
	tb.Helper()
	msg, err := by.fe.Receive()
	if err != nil {
		tb.Fatalf("bystander: receive: %v", err)
	}
	return msg
}

// expect reads one message per entry of want and fails unless each is
// byte for byte the one wanted.
func (by *bystander) expect(tb testing.TB, what string, want [][]byte) {
	tb.Helper()
	for i, w := range want {
		msg := by.receive(tb)
		if got := encodeAll(tb, msg)[0]; !bytes.Equal(got, w) {
			tb.Fatalf("bystander, %s: message %d is %s (%q), want %q", what, i+1, describeMessage(msg), got, w)
		}
	}
}

// encodeAll encodes each message on its own.
func encodeAll(tb testing.TB, msgs ...pgproto3.BackendMessage) [][]byte {
	tb.Helper()
	out := make([][]byte, len(msgs))
	for i, m := range msgs {
		b, err := m.Encode(nil)
		if err != nil {
			tb.Fatalf("encode %T: %v", m, err)
		}
		out[i] = b
	}
	return out
}

// describeMessage is a short form of a backend message for failure
// messages.
func describeMessage(msg pgproto3.BackendMessage) string {
	switch m := msg.(type) {
	case *pgproto3.RowDescription:
		var names []string
		for _, f := range m.Fields {
			names = append(names, fmt.Sprintf("%q", f.Name))
		}
		return fmt.Sprintf("%T [%s]", m, strings.Join(names, " "))
	case *pgproto3.DataRow:
		var vals []string
		for _, v := range m.Values {
			vals = append(vals, fmt.Sprintf("%q", v))
		}
		return fmt.Sprintf("%T [%s]", m, strings.Join(vals, " "))
	case *pgproto3.CommandComplete:
		return fmt.Sprintf("%T %q", m, m.CommandTag)
	case *pgproto3.ReadyForQuery:
		return fmt.Sprintf("%T %q", m, m.TxStatus)
	case *pgproto3.ErrorResponse:
		return fmt.Sprintf("%T %s %s: %s", m, m.Severity, m.Code, m.Message)
	}
	return fmt.Sprintf("%T", msg)
}

// startupPacket encodes a StartupMessage with the parameters in the order
// given (pgproto3 encodes them in map order, which varies).
func startupPacket(version uint32, kv ...string) []byte {
	b := binary.BigEndian.AppendUint32(make([]byte, 4), version)
	for _, s := range kv {
		b = append(append(b, s...), 0)
	}
	b = append(b, 0)
	binary.BigEndian.PutUint32(b, uint32(len(b)))
	return b
}

// fuzzSeed is one seed input of FuzzConn, committed as
// testdata/fuzz/FuzzConn/<name>.
type fuzzSeed struct {
	name string
	data []byte
}

// fuzzSeeds are byte streams that reach each part of the connection loop
// (as what follows a StartupMessage) and of startup (as a whole stream).
func fuzzSeeds(t testing.TB) []fuzzSeed {
	enc := func(msgs ...interface{ Encode([]byte) ([]byte, error) }) []byte {
		var b []byte
		for _, m := range msgs {
			var err error
			if b, err = m.Encode(b); err != nil {
				t.Fatal(err)
			}
		}
		return b
	}
	return []fuzzSeed{
		{"query-terminate", enc(&pgproto3.Query{String: "select 1"}, &pgproto3.Terminate{})},
		{"errors-panic", enc(&pgproto3.Query{String: "types"}, &pgproto3.Query{String: "boom"}, &pgproto3.Query{String: "panic"})},
		{"notice-empty-slow", enc(&pgproto3.Query{String: "notice"}, &pgproto3.Query{String: "-- ping"}, &pgproto3.Query{String: "slow"})},
		{"extended-pipeline", enc(&pgproto3.Parse{Query: "select 1"}, &pgproto3.Bind{Parameters: [][]byte{[]byte("1"), nil}},
			&pgproto3.Describe{ObjectType: 'P'}, &pgproto3.Execute{}, &pgproto3.Sync{}, &pgproto3.Query{String: "select 1"})},
		{"extended-named-portals", enc(&pgproto3.Parse{Name: "s", Query: "params int8 text timestamp", ParameterOIDs: []uint32{23}},
			&pgproto3.Describe{ObjectType: 'S', Name: "s"},
			&pgproto3.Bind{DestinationPortal: "p", PreparedStatement: "s", ParameterFormatCodes: []int16{1, 0, 0},
				Parameters: [][]byte{{0, 0, 0, 7}, []byte("x"), []byte("2024-02-29 13:04:05.5+01")}, ResultFormatCodes: []int16{1}},
			&pgproto3.Parse{Name: "n", Query: "stream 10"}, &pgproto3.Bind{DestinationPortal: "q", PreparedStatement: "n"},
			&pgproto3.Execute{Portal: "q", MaxRows: 3}, &pgproto3.Describe{ObjectType: 'P', Name: "p"},
			&pgproto3.Execute{Portal: "p"}, &pgproto3.Flush{}, &pgproto3.Close{ObjectType: 'S', Name: "n"},
			&pgproto3.Execute{Portal: "q"}, &pgproto3.Sync{}, &pgproto3.Close{ObjectType: 'P', Name: "p"}, &pgproto3.Sync{})},
		{"copy-flush-fastpath", enc(&pgproto3.CopyData{Data: []byte("a")}, &pgproto3.CopyDone{}, &pgproto3.Flush{}, &pgproto3.FunctionCall{Function: 1})},
		{"stream-then-oversized", append(enc(&pgproto3.Query{String: "stream 100"}), 'Q', 0x7f, 0xff, 0xff, 0xff)},
		{"garbage", []byte("\xff\x00\x00\x00\x08garbage!")},
		// Cancel requests aimed at the bystander with a wrong secret
		// (it is random: all zeros is wrong but once in 2^32 runs), a
		// short one, and at a process ID nobody has.
		{"cancel-wrong-key", enc(&pgproto3.CancelRequest{ProcessID: fuzzBystanderPID, SecretKey: []byte{0, 0, 0, 0}})},
		{"cancel-short-key", enc(&pgproto3.CancelRequest{ProcessID: fuzzBystanderPID, SecretKey: []byte{0}})},
		{"cancel-unknown-pid", enc(&pgproto3.CancelRequest{ProcessID: 0xdeadbeef, SecretKey: []byte{1, 2, 3, 4}})},
		// A whole session: GSS and SSL refused, protocol 3.1 with an
		// option negotiated down, a query, a statement name parsed twice
		// (42P05), then a startup packet where a message belongs.
		{"startup-negotiate", append(append(enc(&pgproto3.GSSEncRequest{}, &pgproto3.SSLRequest{}),
			startupPacket(pgproto3.ProtocolVersion30|1, "user", "fuzz", "_pq_.opt", "x")...),
			append(enc(&pgproto3.Query{String: "select 1"}, &pgproto3.Parse{Name: "s", Query: "select 1"},
				&pgproto3.Parse{Name: "s", Query: "types"}, &pgproto3.Sync{}),
				startupPacket(pgproto3.ProtocolVersion30, "user", "fuzz")...)...)},
		// No user, and protocol 2.
		{"startup-bad", append(startupPacket(pgproto3.ProtocolVersion30, "database", "basin"),
			startupPacket(2<<16, "user", "fuzz")...)},
	}
}

// TestFuzzConnCorpus checks that testdata/fuzz/FuzzConn holds fuzzSeeds,
// each in the file named for it; -rewrite rewrites them. Other files there
// are inputs the fuzzer found and are left alone.
func TestFuzzConnCorpus(t *testing.T) {
	rewrite := false
	if fl := flag.Lookup("rewrite"); fl != nil {
		rewrite = fl.Value.String() == "true"
	}
	for _, seed := range fuzzSeeds(t) {
		path := filepath.Join("testdata", "fuzz", "FuzzConn", seed.name)
		want := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", seed.data)
		if rewrite {
			if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%v (rewrite the corpus with -rewrite)", err)
			continue
		}
		if string(got) != want {
			t.Errorf("%s is out of date (rewrite the corpus with -rewrite):\n%s\nwant\n%s", path, got, want)
		}
	}
}
