package pgwire

import (
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgproto3"
)

// rawQuery sends a simple Query and returns what came back up to and
// including ReadyForQuery, one line per message (see describeMsg).
func rawQuery(t *testing.T, fe *pgproto3.Frontend, text string) []string {
	t.Helper()
	fe.Send(&pgproto3.Query{String: text})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	return readUntilReady(t, fe)
}

// readUntilReady reads messages up to and including ReadyForQuery.
func readUntilReady(t *testing.T, fe *pgproto3.Frontend) []string {
	t.Helper()
	var got []string
	for {
		msg, err := fe.Receive()
		if err != nil {
			t.Fatalf("after %q: %v", got, err)
		}
		got = append(got, describeMsg(msg))
		if _, ok := msg.(*pgproto3.ReadyForQuery); ok {
			return got
		}
	}
}

// describeMsg is a backend message in a line, for comparing sequences:
// a notification's PID is left out (tests compare it themselves).
func describeMsg(msg pgproto3.BackendMessage) string {
	switch m := msg.(type) {
	case *pgproto3.NotificationResponse:
		return fmt.Sprintf("Notification %s %s", m.Channel, m.Payload)
	case *pgproto3.CommandComplete:
		return "CommandComplete " + string(m.CommandTag)
	case *pgproto3.ReadyForQuery:
		return "ReadyForQuery " + string(m.TxStatus)
	case *pgproto3.ErrorResponse:
		return "Error " + m.Code + " " + m.Message
	case *pgproto3.NoticeResponse:
		return "Notice " + m.Code + " " + m.Message
	}
	return strings.TrimPrefix(fmt.Sprintf("%T", msg), "*pgproto3.")
}

// listener opens a raw connection that listens on channel.
func (ts *testServer) listener(t *testing.T, channel string) (*pgproto3.Frontend, net.Conn) {
	t.Helper()
	nc := ts.dial(t)
	fe, _ := rawStartup(t, nc)
	want := []string{"CommandComplete LISTEN", "ReadyForQuery I"}
	if got := rawQuery(t, fe, "listen "+channel); strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Fatalf("listen: %q, want %q", got, want)
	}
	return fe, nc
}

// TestNotifyWhileIdle: a connection that waits for the client's next
// message gets a notification at once, without sending anything, and
// with the sender's PID.
func TestNotifyWhileIdle(t *testing.T) {
	ts := startServer(t, Options{})
	fe, _ := ts.listener(t, "ch")

	sender, key := rawStartup(t, ts.dial(t))
	rawQuery(t, sender, "notify ch hello")

	msg, err := fe.Receive() // the dial's deadline bounds the wait
	if err != nil {
		t.Fatal(err)
	}
	n, ok := msg.(*pgproto3.NotificationResponse)
	if !ok {
		t.Fatalf("got %s, want a NotificationResponse", describeMsg(msg))
	}
	if n.PID != key.ProcessID || n.Channel != "ch" || n.Payload != "hello" {
		t.Errorf("got pid %d %q %q, want pid %d \"ch\" \"hello\"", n.PID, n.Channel, n.Payload, key.ProcessID)
	}
	// The connection serves its next query as usual.
	if got := rawQuery(t, fe, "select 1"); got[len(got)-1] != "ReadyForQuery I" {
		t.Errorf("select 1 after the notification: %q", got)
	}
}

// TestNotifyAfterBusyCommand: notifications that arrive while a
// statement runs follow its CommandComplete and come before
// ReadyForQuery, as in Postgres.
func TestNotifyAfterBusyCommand(t *testing.T) {
	ts := startServer(t, Options{})
	fe, _ := ts.listener(t, "ch")
	fe.Send(&pgproto3.Query{String: "gate"})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	ts.waitStarted(t, "gate")
	sender, _ := rawStartup(t, ts.dial(t))
	rawQuery(t, sender, "notify ch one")
	rawQuery(t, sender, "notify ch two")
	close(ts.b.gate)

	got := readUntilReady(t, fe)
	tail := strings.Join(got[len(got)-4:], "; ")
	want := "CommandComplete SELECT 20000; Notification ch one; Notification ch two; ReadyForQuery I"
	if tail != want {
		t.Errorf("end of the gate query: %q, want %q", tail, want)
	}
	for _, m := range got[:len(got)-4] {
		if strings.HasPrefix(m, "Notification") {
			t.Errorf("notification before the statement completed: %q", got)
			break
		}
	}
}

// TestNotifyHeldInTransactionBlock: inside a transaction block nothing
// is delivered, whether the connection is idle or runs a statement;
// what arrived comes after the block ends, before its ReadyForQuery 'I'.
func TestNotifyHeldInTransactionBlock(t *testing.T) {
	ts := startServer(t, Options{})
	fe, _ := ts.listener(t, "ch")
	if got := rawQuery(t, fe, "begin"); got[len(got)-1] != "ReadyForQuery T" {
		t.Fatalf("begin: %q", got)
	}
	sender, _ := rawStartup(t, ts.dial(t))
	rawQuery(t, sender, "notify ch held")
	// The notification was queued before this statement ran; inside the
	// block it is not sent with it.
	want := "RowDescription; DataRow; CommandComplete SELECT 1; ReadyForQuery T"
	if got := strings.Join(rawQuery(t, fe, "select 1"), "; "); got != want {
		t.Errorf("select 1 in the block: %q, want %q", got, want)
	}
	want = "CommandComplete COMMIT; Notification ch held; ReadyForQuery I"
	if got := strings.Join(rawQuery(t, fe, "commit"), "; "); got != want {
		t.Errorf("commit: %q, want %q", got, want)
	}
}

// TestNotifyHeldInPipeline: between the messages of an extended-protocol
// pipeline, before its Sync, the connection is not idle; the
// notification comes before the Sync's ReadyForQuery.
func TestNotifyHeldInPipeline(t *testing.T) {
	ts := startServer(t, Options{})
	fe, _ := ts.listener(t, "ch")
	fe.Send(&pgproto3.Parse{Query: "select 1"})
	fe.Send(&pgproto3.Bind{})
	fe.Send(&pgproto3.Execute{})
	fe.Send(&pgproto3.Flush{})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for len(got) < 4 {
		msg, err := fe.Receive()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, describeMsg(msg))
	}
	sender, _ := rawStartup(t, ts.dial(t))
	rawQuery(t, sender, "notify ch piped")
	fe.Send(&pgproto3.Sync{})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	got = append(got, readUntilReady(t, fe)...)
	want := "ParseComplete; BindComplete; DataRow; CommandComplete SELECT 1; Notification ch piped; ReadyForQuery I"
	if s := strings.Join(got, "; "); s != want {
		t.Errorf("pipeline: %q, want %q", s, want)
	}
}

// TestNotifyManyWhileIdle: more notifications than the write buffer
// holds all arrive, in order, to an idle connection.
func TestNotifyManyWhileIdle(t *testing.T) {
	ts := startServer(t, Options{})
	fe, _ := ts.listener(t, "ch")
	sender, _ := rawStartup(t, ts.dial(t))
	const n = 5000 // about 20 bytes each: past flushThreshold
	rawQuery(t, sender, fmt.Sprintf("notify ch payload %d", n))
	for i := range n {
		msg, err := fe.Receive()
		if err != nil {
			t.Fatalf("after %d notifications: %v", i, err)
		}
		if d := describeMsg(msg); d != "Notification ch payload" {
			t.Fatalf("message %d: %s", i, d)
		}
	}
	if got := rawQuery(t, fe, "select 1"); got[len(got)-1] != "ReadyForQuery I" {
		t.Errorf("select 1 after the notifications: %q", got)
	}
}

// TestNotifyToClientThatDoesNotRead: a client that never reads while it
// is sent notifications leaves deliver blocked in its write; closing
// the server still ends the connection and every goroutine of it
// (startServer's cleanup checks).
func TestNotifyToClientThatDoesNotRead(t *testing.T) {
	ts := startServer(t, Options{})
	ts.listener(t, "ch")
	sender, _ := rawStartup(t, ts.dial(t))
	// 20000 notifications of about 1 KB: far more than the socket
	// buffers take.
	payload := strings.Repeat("x", 1000)
	rawQuery(t, sender, fmt.Sprintf("notify ch %s 20000", payload))
	if err := ts.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestNotifyClientGoneWhileIdle: a listening client that hangs up ends
// its connection and session, also with notifications on the way.
func TestNotifyClientGoneWhileIdle(t *testing.T) {
	ts := startServer(t, Options{})
	_, nc := ts.listener(t, "ch")
	sender, _ := rawStartup(t, ts.dial(t))
	rawQuery(t, sender, "notify ch before")
	nc.Close()
	ts.waitClosed(t)
	rawQuery(t, sender, "notify ch after")
}
