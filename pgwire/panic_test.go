package pgwire

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/basindb/basin/internal/safe"
)

// TestConnLoopPanic makes the connection's own command loop panic (not
// a Backend call, which callSafely already covers): the client gets
// FATAL XX000, the log has the panic with the connection goroutine's
// stack, the session is closed, and the server goes on serving other
// connections.
func TestConnLoopPanic(t *testing.T) {
	ts := startServer(t, Options{})
	conn := ts.connect(t)
	safe.SetFault(t, safe.FaultConn, 1)
	_, err := conn.Exec(testCtx(t), "SELECT 1")
	pe := pgError(t, err)
	if pe.Code != "XX000" || pe.Severity != "FATAL" || !strings.Contains(pe.Message, "panic: safe: fault injected") {
		t.Fatalf("got %s %s %q, want FATAL XX000 naming the panic", pe.Severity, pe.Code, pe.Message)
	}
	logged := false
	for _, rec := range ts.logs.find(slog.LevelError, "panic serving the connection") {
		if strings.Contains(rec["stack"], "pgwire.(*conn).dispatch") && rec["remote"] != "" {
			logged = true
		}
	}
	if !logged {
		t.Error("no error logged with the connection goroutine's stack")
	}
	if !conn.IsClosed() {
		t.Error("the connection survived its panic")
	}
	eventually(t, "the panicked connection's session is closed", func() bool { return ts.b.open.Load() == 0 })
	checkSelectOne(t, ts.connect(t))
}
