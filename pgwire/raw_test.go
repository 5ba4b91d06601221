package pgwire

import (
	"bytes"
	"encoding/binary"
	"io"
	"log/slog"
	"math"
	"net"
	"testing"
	"time"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/pgcodec"
	"github.com/jackc/pgx/v5/pgproto3"
)

// rawStartup sends a StartupMessage on nc and reads up to ReadyForQuery.
// It returns the cancel key.
func rawStartup(t *testing.T, nc net.Conn) (fe *pgproto3.Frontend, key *pgproto3.BackendKeyData) {
	t.Helper()
	fe = pgproto3.NewFrontend(nc, nc)
	fe.Send(&pgproto3.StartupMessage{
		ProtocolVersion: pgproto3.ProtocolVersion30,
		Parameters:      map[string]string{"user": "basin", "database": "basin"},
	})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	for {
		msg, err := fe.Receive()
		if err != nil {
			t.Fatalf("startup: %v", err)
		}
		switch m := msg.(type) {
		case *pgproto3.BackendKeyData:
			key = &pgproto3.BackendKeyData{ProcessID: m.ProcessID, SecretKey: append([]byte{}, m.SecretKey...)}
		case *pgproto3.ReadyForQuery:
			if key == nil {
				t.Fatal("no BackendKeyData before ReadyForQuery")
			}
			return fe, key
		case *pgproto3.ErrorResponse:
			t.Fatalf("startup: %s %s", m.Code, m.Message)
		}
	}
}

// readUntilClosed reads nc until the server closes it and returns what it
// read. The connection's deadline turns a server that never closes into a
// failure.
func readUntilClosed(t *testing.T, nc net.Conn) []byte {
	t.Helper()
	var buf bytes.Buffer
	_, err := io.Copy(&buf, nc)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("server did not close the connection within %v", testTimeout)
	}
	return buf.Bytes()
}

// TestGarbageKeepsServerAlive throws malformed input at fresh
// connections, after startup and instead of it: each connection closes,
// the violation is logged, and the server keeps serving.
func TestGarbageKeepsServerAlive(t *testing.T) {
	ts := startServer(t, Options{MaxMessageSize: 1 << 20})
	garbage := [][]byte{
		[]byte("GET / HTTP/1.1\r\nHost: basin\r\n\r\n"),
		{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
		{'Q', 0x7f, 0xff, 0xff, 0xff},
		{'P', 0, 0, 0, 5, 0},
		{'B', 0, 0, 0, 6, 0, 0},
		bytes.Repeat([]byte{0}, 100),
	}
	for i, g := range garbage {
		for _, afterStartup := range []bool{true, false} {
			nc := ts.dial(t)
			if afterStartup {
				rawStartup(t, nc)
			}
			if _, err := nc.Write(g); err != nil {
				t.Fatal(err)
			}
			readUntilClosed(t, nc)
			nc.Close()
			checkSelectOne(t, ts.connect(t))
			if afterStartup {
				if len(ts.logs.find(slog.LevelWarn, "protocol violation")) == 0 {
					t.Errorf("garbage %d: no protocol violation logged", i)
				}
			}
		}
	}
}

// TestCancelKeyMustMatch sends CancelRequests with a wrong secret and a
// wrong process ID: the statement keeps running until the right key comes.
func TestCancelKeyMustMatch(t *testing.T) {
	ts := startServer(t, Options{})
	nc := ts.dial(t)
	fe, key := rawStartup(t, nc)
	fe.Send(&pgproto3.Query{String: "slow"})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	ts.waitStarted(t, "slow")

	cancel := func(pid uint32, secret []byte) {
		c := ts.dial(t)
		b, err := (&pgproto3.CancelRequest{ProcessID: pid, SecretKey: secret}).Encode(nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write(b); err != nil {
			t.Fatal(err)
		}
		// The server closes a cancel connection once it has acted on it.
		if got := readUntilClosed(t, c); len(got) != 0 {
			t.Fatalf("the server answered a cancel request: %q", got)
		}
	}
	wrong := append([]byte{}, key.SecretKey...)
	wrong[0] ^= 1
	cancel(key.ProcessID, wrong)
	cancel(key.ProcessID+1, key.SecretKey)
	cancel(key.ProcessID, key.SecretKey[:3])

	// The server acts on a cancel request before it closes that
	// connection, so the statement's context would be done by now.
	if err := (*ts.b.slowCtx.Load()).Err(); err != nil {
		t.Fatalf("a wrong cancel key cancelled the statement: %v", err)
	}
	cancel(key.ProcessID, key.SecretKey)
	msg, err := fe.Receive()
	if err != nil {
		t.Fatal(err)
	}
	if e, ok := msg.(*pgproto3.ErrorResponse); !ok || e.Code != "57014" {
		t.Fatalf("got %#v, want 57014", msg)
	}
}

// TestClientDisconnectCancelsStatement hangs up while a statement runs:
// the statement's context ends and the session closes, without waiting
// for the statement to write.
func TestClientDisconnectCancelsStatement(t *testing.T) {
	ts := startServer(t, Options{})
	nc := ts.dial(t)
	fe, _ := rawStartup(t, nc)
	fe.Send(&pgproto3.Query{String: "slow"})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	ts.waitStarted(t, "slow")
	nc.Close()
	ts.waitClosed(t)
	eventually(t, "the session to be unregistered", func() bool { return ts.sessionCount() == 0 })
}

// TestClientDisconnectAfterShortStatements runs short statements for a
// few times watchAfter, then a slow one, and hangs up during it: the
// watch's timer, set by an earlier statement and not for each, must
// still watch the slow one.
func TestClientDisconnectAfterShortStatements(t *testing.T) {
	ts := startServer(t, Options{})
	nc := ts.dial(t)
	fe, _ := rawStartup(t, nc)
	query := func(q string) {
		t.Helper()
		fe.Send(&pgproto3.Query{String: q})
		if err := fe.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	for start := time.Now(); time.Since(start) < 3*watchAfter; {
		query("select 1")
		for {
			msg, err := fe.Receive()
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := msg.(*pgproto3.ReadyForQuery); ok {
				break
			}
		}
	}
	query("slow")
	ts.waitStarted(t, "slow")
	nc.Close()
	ts.waitClosed(t)
}

// TestStartupTimeout connects and says nothing: the server hangs up after
// StartupTimeout.
func TestStartupTimeout(t *testing.T) {
	ts := startServer(t, Options{StartupTimeout: 50 * time.Millisecond})
	nc := ts.dial(t)
	if got := readUntilClosed(t, nc); len(got) != 0 {
		t.Fatalf("server sent %q", got)
	}
	checkSelectOne(t, ts.connect(t))
}

// TestWriterFlushPolicy streams rows through the writer and checks the
// flush policy: nothing is written below the threshold, writes are about
// threshold-sized, and the buffer stays small however many rows pass.
func TestWriterFlushPolicy(t *testing.T) {
	var out countingWriter
	w := &writer{w: &out}
	rw := &resultWriter{w: w}
	if err := rw.Columns([]catalog.Column{{Name: "n", Type: catalog.BigInt}, {Name: "s", Type: catalog.Varchar}}); err != nil {
		t.Fatal(err)
	}
	if out.writes != 0 {
		t.Fatal("RowDescription was written before a flush point")
	}
	maxBuf := 0
	const rows = 100_000
	for i := range rows {
		if err := rw.Row([]any{int64(i), "some text of a typical length"}); err != nil {
			t.Fatal(err)
		}
		maxBuf = max(maxBuf, cap(w.buf))
	}
	if err := w.flush(); err != nil {
		t.Fatal(err)
	}
	if maxBuf > 2*flushThreshold {
		t.Errorf("buffer grew to %d bytes for %d rows", maxBuf, rows)
	}
	if minWrites := out.bytes / (2 * flushThreshold); out.writes < minWrites || out.writes > out.bytes/flushThreshold+1 {
		t.Errorf("%d writes for %d bytes: want about one per %d bytes", out.writes, out.bytes, flushThreshold)
	}

	// A huge row is written and its buffer not kept.
	big := string(bytes.Repeat([]byte{'x'}, 10*flushThreshold))
	if err := rw.Row([]any{int64(1), big}); err != nil {
		t.Fatal(err)
	}
	if w.buffered() != 0 || cap(w.buf) > 4*flushThreshold {
		t.Errorf("after a huge row: %d buffered, cap %d", w.buffered(), cap(w.buf))
	}
}

type countingWriter struct{ writes, bytes int }

func (c *countingWriter) Write(p []byte) (int, error) {
	c.writes++
	c.bytes += len(p)
	return len(p), nil
}

func TestAppendText(t *testing.T) {
	for _, c := range floatCases {
		if got := string(pgcodec.AppendFloat8(nil, c.f)); got != c.text {
			t.Errorf("float8 %v: %q, want %q", c.f, got, c.text)
		}
	}
	for _, c := range []struct {
		t    time.Time
		text string
	}{
		{time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC), "2024-01-02 03:04:05"},
		{time.Date(2024, 1, 2, 3, 4, 5, 120000000, time.UTC), "2024-01-02 03:04:05.12"},
		{time.Date(2024, 1, 2, 3, 4, 5, 999999999, time.UTC), "2024-01-02 03:04:05.999999"},
		{time.Date(2024, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600)), "2024-01-02 02:04:05"},
		{time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), "0001-01-01 00:00:00"},
		{time.Date(0, 12, 31, 23, 0, 0, 0, time.UTC), "0001-12-31 23:00:00 BC"},
		{time.Date(-43, 3, 15, 0, 0, 0, 0, time.UTC), "0044-03-15 00:00:00 BC"},
	} {
		if got := string(pgcodec.AppendTimestamp(nil, c.t)); got != c.text {
			t.Errorf("timestamp %v: %q, want %q", c.t, got, c.text)
		}
	}
	for _, c := range []struct {
		typ  catalog.Type
		v    any
		text string
	}{
		{catalog.Boolean, true, "t"},
		{catalog.Boolean, false, "f"},
		{catalog.Int, int64(math.MinInt32), "-2147483648"},
		{catalog.BigInt, int64(math.MinInt64), "-9223372036854775808"},
		{catalog.Varchar, "a\tb", "a\tb"},
		{catalog.Unknown, "x", "x"},
	} {
		got, err := pgcodec.AppendText(nil, c.typ, c.v)
		if err != nil || string(got) != c.text {
			t.Errorf("%s %v: %q %v, want %q", c.typ, c.v, got, err, c.text)
		}
	}
	for _, c := range []struct {
		typ catalog.Type
		v   any
	}{
		{catalog.Boolean, "t"},
		{catalog.Int, 1},
		{catalog.BigInt, int32(1)},
		{catalog.Double, float32(1)},
		{catalog.Varchar, []byte("x")},
		{catalog.Timestamp, "2024-01-01"},
	} {
		if _, err := pgcodec.AppendText(nil, c.typ, c.v); err == nil {
			t.Errorf("%s accepted a Go %T", c.typ, c.v)
		}
	}
}

// TestStartupPacketIsReadExactly checks that nothing after an SSLRequest
// is read before the answer: the bytes a client sends early must not be
// taken as the startup message (they would have bypassed TLS).
func TestStartupPacketIsReadExactly(t *testing.T) {
	ts := startServer(t, Options{TLSConfig: selfSignedTLS(t)})
	nc := ts.dial(t)
	sslReq := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, 8), sslRequestCode)
	startup, err := (&pgproto3.StartupMessage{
		ProtocolVersion: pgproto3.ProtocolVersion30,
		Parameters:      map[string]string{"user": "basin"},
	}).Encode(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nc.Write(append(sslReq, startup...)); err != nil {
		t.Fatal(err)
	}
	// 'S', then the plaintext startup message is fed to the TLS handshake,
	// which fails: the connection closes without a session.
	got := readUntilClosed(t, nc)
	if len(got) == 0 || got[0] != 'S' || bytes.Contains(got, []byte{'R', 0, 0, 0, 8}) {
		t.Fatalf("server answered %q", got)
	}
	if ts.b.open.Load() != 0 {
		t.Fatal("a session was opened from plaintext sent before TLS")
	}
}

// TestResultWriterMisuse checks that engine bugs in driving the
// ResultWriter are errors, not malformed streams.
func TestResultWriterMisuse(t *testing.T) {
	var out countingWriter
	rw := &resultWriter{w: &writer{w: &out}}
	cols := []catalog.Column{{Name: "n", Type: catalog.BigInt}}
	if err := rw.Row([]any{int64(1)}); err == nil {
		t.Error("Row before Columns accepted")
	}
	if err := rw.Row(nil); err == nil {
		t.Error("empty Row before Columns accepted")
	}
	if err := rw.Columns(cols); err != nil {
		t.Fatal(err)
	}
	if err := rw.Columns(cols); err == nil {
		t.Error("Columns twice accepted")
	}
	if err := rw.Row([]any{int64(1), int64(2)}); err == nil {
		t.Error("Row with too many values accepted")
	}
	if err := rw.Empty(); err == nil {
		t.Error("Empty inside a result accepted")
	}
	if err := rw.Notice(nil); err == nil {
		t.Error("nil Notice accepted")
	}
	if err := rw.Complete("SELECT 0"); err != nil {
		t.Fatal(err)
	}
	// A zero-column result ("SELECT;" in Postgres) is fine.
	if err := rw.Columns(nil); err != nil {
		t.Fatal(err)
	}
	if err := rw.Row(nil); err != nil {
		t.Errorf("zero-column row: %v", err)
	}
	if err := rw.Complete("SELECT 1"); err != nil {
		t.Fatal(err)
	}
	if err := rw.Row(nil); err == nil {
		t.Error("Row after Complete accepted")
	}
}
