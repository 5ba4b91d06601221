package node

import (
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/basindb/basin/exec"
	"github.com/basindb/basin/internal/safe"
	"github.com/basindb/basin/kafka"
)

// Panics in the goroutines a statement starts fail the statement with
// XX000 and a logged stack, and the node goes on (internal/safe). The
// faults are process-wide: these tests do not run in parallel.

// startLoggedNode starts an in-process node whose log (info and up) goes
// to the returned buffer. With cluster, the node runs against a broker of
// its own started here, as a cluster of one: it joins the group and
// reads through the forwarder, which scatter-gathers multi-partition
// reads.
func startLoggedNode(t *testing.T, cluster bool) (*Node, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	if !cluster {
		return startNode(t, t.TempDir(), func(o *Options) { o.Logger = log }), logs
	}
	broker, err := kafka.StartBroker(kafka.BrokerOptions{Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = broker.Close() })
	return startNode(t, t.TempDir(), func(o *Options) {
		o.Logger = log
		o.Brokers = broker.Addrs()
		o.HTTPAddr = "127.0.0.1:0"
		o.NodeID = "solo"
	}), logs
}

// wantInternalError checks that err is XX000 and that the log has it
// with a stack holding frame (the goroutine that panicked).
func wantInternalError(t *testing.T, err error, logs *syncBuffer, frame string) {
	t.Helper()
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "XX000" || !strings.Contains(pe.Message, "panic: safe: fault injected") {
		t.Fatalf("got %v, want XX000 naming the panic", err)
	}
	out := logs.String()
	i := strings.Index(out, "pgwire: internal error")
	if i < 0 || !strings.Contains(out[i:], "stack=") || !strings.Contains(out[i:], frame) {
		t.Fatalf("the log lacks the internal error with a stack holding %s:\n%s", frame, out)
	}
}

// TestPortalPanicIsInternalError makes a row-limited portal's goroutine
// panic: Execute gets XX000, the log has the portal goroutine's stack, and
// the next statement on the same connection runs.
func TestPortalPanicIsInternalError(t *testing.T) {
	n, logs := startLoggedNode(t, false)
	admin := connect(t, n.PGAddr())
	mustExec(t, admin, `CREATE TABLE t (id BIGINT PRIMARY KEY, v VARCHAR) WITH (kafka_topic='t', value_format='json', partitions=2)`)
	mustExec(t, admin, `INSERT INTO t (id, v) VALUES (1, 'a'), (2, 'b'), (3, 'c')`)
	waitQuery(t, admin, `SELECT COUNT(*) FROM t`, "3\n")

	rc := dialRaw(t, n.PGAddr())
	execute := func() []string {
		rc.fe.SendParse(&pgproto3.Parse{Query: `SELECT id FROM t WHERE v <> $1 ORDER BY id`})
		rc.fe.SendBind(&pgproto3.Bind{Parameters: [][]byte{[]byte("x")}})
		rc.fe.SendExecute(&pgproto3.Execute{MaxRows: 2})
		rc.fe.SendSync(&pgproto3.Sync{})
		rc.flush()
		return rc.until("ReadyForQuery")
	}
	safe.SetFault(t, safe.FaultPortal, 1)
	got := execute()
	if fmt.Sprint(got) != "[ParseComplete BindComplete error XX000 ReadyForQuery]" {
		t.Fatalf("a portal whose goroutine panicked: %q", got)
	}
	out := logs.String()
	if !strings.Contains(out, "pgwire: internal error") || !strings.Contains(out, "exec.startPull") {
		t.Fatalf("the log lacks the panic with the portal goroutine's stack:\n%s", out)
	}
	want := "[ParseComplete BindComplete row 1 row 2 suspended ReadyForQuery]"
	if got := execute(); fmt.Sprint(got) != want {
		t.Fatalf("the next statement: %q, want %s", got, want)
	}
}

// TestGatherPanicIsInternalError makes a scatter-gather read-ahead
// goroutine panic on a cluster node: the SELECT gets XX000, the log has
// the read-ahead's stack, and the next SELECT on the same connection
// answers.
func TestGatherPanicIsInternalError(t *testing.T) {
	n, logs := startLoggedNode(t, true)
	conn := connect(t, n.PGAddr())
	mustExec(t, conn, `CREATE TABLE t (id BIGINT PRIMARY KEY, v VARCHAR) WITH (kafka_topic='t', value_format='json', partitions=4)`)
	mustExec(t, conn, `INSERT INTO t (id, v) VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd'), (5, 'e')`)
	waitQuery(t, conn, `SELECT COUNT(*) FROM t`, "5\n")
	safe.SetFault(t, safe.FaultGather, 1)
	_, err := queryText(extCtx(t), conn, `SELECT COUNT(*) FROM t`, false)
	wantInternalError(t, err, logs, "pull.(*Query).gather")
	if safe.FaultsLeft(safe.FaultGather) != 0 {
		t.Fatal("the fault did not fire")
	}
	if got, err := queryText(extCtx(t), conn, `SELECT COUNT(*) FROM t`, false); err != nil || got != "5\n" {
		t.Fatalf("the next SELECT: %q, %v", got, err)
	}
}

// TestEngineSetBeforeServing checks that Start writes no field of the
// engine once the Postgres server serves: sessions read them without a
// lock from then on (Start used to set Members after the server had
// started, a data race with every SHOW CLUSTER and SHOW TASKS of a
// session that connected meanwhile). On a cluster node SHOW CLUSTER
// then reports the cluster's view.
func TestEngineSetBeforeServing(t *testing.T) {
	var atServe []reflect.Value
	testServing = func(n *Node) { atServe = engineFields(n.engine) }
	t.Cleanup(func() { testServing = nil })
	n, _ := startLoggedNode(t, true)
	if atServe == nil {
		t.Fatal("Start did not call testServing")
	}
	et := reflect.TypeFor[exec.Engine]()
	for i, v := range engineFields(n.engine) {
		if !et.Field(i).IsExported() {
			continue
		}
		if was := atServe[i]; !sameValue(v, was) {
			t.Errorf("Engine.%s was written after the server started: %v, then %v", et.Field(i).Name, was, v)
		}
	}
	conn := connect(t, n.PGAddr())
	eventually(t, 30*time.Second, func() error {
		got, err := queryText(extCtx(t), conn, "SHOW CLUSTER", false)
		if f := strings.Split(strings.TrimSpace(got), "|"); err == nil && (len(f) < 5 || f[0] != "solo" || f[3] != "true" || f[4] != "true") {
			err = fmt.Errorf("SHOW CLUSTER: %q, want solo, alive and leader", got)
		}
		return err
	})
}

// sameValue reports whether a and b are the same value: equal, for a
// pointer the same pointer; nil interfaces are invalid Values.
func sameValue(a, b reflect.Value) bool {
	if !a.IsValid() || !b.IsValid() {
		return a.IsValid() == b.IsValid()
	}
	if a.Type() != b.Type() {
		return false
	}
	if a.Kind() == reflect.Func {
		// Funcs do not compare; the same code pointer (or both nil) is
		// the same value for this test.
		return a.Pointer() == b.Pointer()
	}
	return a.Comparable() && a.Equal(b)
}

// engineFields returns the exported fields of e, by index (unexported
// ones are zero Values: they are the engine's own, safe for concurrent
// use).
func engineFields(e *exec.Engine) []reflect.Value {
	v := reflect.ValueOf(e).Elem()
	out := make([]reflect.Value, v.NumField())
	for i := range out {
		if v.Type().Field(i).IsExported() {
			out[i] = reflect.ValueOf(v.Field(i).Interface())
		}
	}
	return out
}
