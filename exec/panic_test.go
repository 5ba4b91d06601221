package exec

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/internal/safe"
	"github.com/basindb/basin/stream"
)

// syncBuffer is a log destination safe for the goroutines of a runtime.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestTaskPanicRestarts makes a table's task panic on its first run: the
// supervisor logs the panic with the task's stack and restarts it like a
// failed task, the table then serves reads, and the process lives.
func TestTaskPanicRestarts(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	safe.SetFault(t, safe.FaultTask, 1)
	logs := &syncBuffer{}
	e := startTableEngine(ctx, t, "CREATE TABLE t (id BIGINT PRIMARY KEY, v VARCHAR) WITH (kafka_topic = 't', value_format = 'json', partitions = 1)",
		func(o *stream.RuntimeOptions) { o.Logger = slog.New(slog.NewTextHandler(logs, nil)) })
	q, ok := e.Runtime.Query("t")
	if !ok {
		t.Fatal("no query for t")
	}
	if err := q.WaitReady(ctx); err != nil {
		t.Fatalf("the task did not come back after its panic: %v\n%s", err, logs)
	}
	if left := safe.FaultsLeft(safe.FaultTask); left != 0 {
		t.Fatalf("the fault did not fire (%d left)", left)
	}
	out := logs.String()
	if !strings.Contains(out, "task panicked; restarting from its checkpoint") || !strings.Contains(out, "task=t/0") ||
		!strings.Contains(out, "stack=") || !strings.Contains(out, "stream.runTask") {
		t.Fatalf("the log lacks the panic with the task's stack:\n%s", out)
	}
	s := e.NewSession(map[string]string{"user": "u"}, Client{})
	defer s.Close()
	w := &testWriter{}
	if err := s.Query(ctx, "INSERT INTO t VALUES (1, 'a')", w); err != nil {
		t.Fatal(err)
	}
	if err := s.Query(ctx, "SELECT v FROM t WHERE id = 1", w); err != nil || len(w.rows) != 1 || w.rows[0][0] != "a" {
		t.Fatalf("read after the restart: %v, %v", w.rows, err)
	}
}

// TestPortalPanic makes the goroutine of a row-limited portal panic: the
// portal's Execute fails with the panic, an error without a SQLSTATE
// (XX000 at the wire, which logs it with the stack it carries: that of
// the portal's goroutine), and the session's next statement runs.
func TestPortalPanic(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	e := startTableEngine(ctx, t, "CREATE TABLE t (id BIGINT PRIMARY KEY, v VARCHAR) WITH (kafka_topic = 't', value_format = 'json', partitions = 2)")
	s := e.NewSession(map[string]string{"user": "u"}, Client{})
	defer s.Close()
	if err := s.Query(ctx, "INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c')", &testWriter{}); err != nil {
		t.Fatal(err)
	}
	p, err := s.Prepare(ctx, "SELECT id FROM t WHERE v <> $1", nil)
	if err != nil {
		t.Fatal(err)
	}
	execute := func() error {
		pt, err := p.Bind(ctx, []any{"x"})
		if err != nil {
			t.Fatal(err)
		}
		defer pt.Close()
		_, err = pt.Execute(ctx, &testWriter{}, 1)
		return err
	}
	safe.SetFault(t, safe.FaultPortal, 1)
	err = execute()
	if !safe.IsPanic(err) || pgerr.CodeOf(err) != pgerr.InternalError {
		t.Fatalf("Execute of a portal whose goroutine panicked: %v (%s)", err, pgerr.CodeOf(err))
	}
	if st := string(safe.StackOf(err)); !strings.Contains(st, "exec.startPull") {
		t.Fatalf("the panic's stack is not the portal goroutine's:\n%s", st)
	}
	if err := execute(); err != nil {
		t.Fatalf("the next Execute: %v", err)
	}
}
