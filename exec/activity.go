package exec

import (
	"net"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/basindb/basin/catalog"
)

// Client describes the connection a session serves.
type Client struct {
	// PID is the process ID the client was given (BackendKeyData), what
	// pg_backend_pid() returns and pg_stat_activity shows; 0 lets the
	// engine pick one.
	PID int32
	// Addr is the client's address; nil when unknown.
	Addr net.Addr
}

// activity is what pg_stat_activity shows of a session. The session's
// goroutine writes it; any session's catalog query reads it.
type activity struct {
	mu          sync.Mutex
	state       string // active, idle, idle in transaction, ...
	query       string // the running or last statement
	queryStart  time.Time
	stateChange time.Time
	xactStart   time.Time
	appName     string // application_name, which SET changes
}

// startStatement records that the session runs text.
func (s *Session) startStatement(text string) {
	now := time.Now().UTC()
	a := &s.act
	a.mu.Lock()
	defer a.mu.Unlock()
	a.state, a.query, a.queryStart, a.stateChange = "active", text, now, now
	a.appName = s.vars["application_name"]
	if !s.inTxn {
		a.xactStart = now
	}
}

// endStatement records that the session waits for the client.
func (s *Session) endStatement() {
	now := time.Now().UTC()
	a := &s.act
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case s.txnFailed:
		a.state = "idle in transaction (aborted)"
	case s.inTxn:
		a.state = "idle in transaction"
	default:
		a.state = "idle"
		a.xactStart = time.Time{}
	}
	a.stateChange = now
	a.appName = s.vars["application_name"]
}

// activityRow returns the session's pg_stat_activity row.
func (s *Session) activityRow() catalog.Activity {
	a := &s.act
	a.mu.Lock()
	defer a.mu.Unlock()
	out := catalog.Activity{PID: s.pid, User: s.user, Database: s.db, ApplicationName: a.appName,
		BackendStart: s.started, State: a.state, Query: a.query,
		QueryStart: timeOrNil(a.queryStart), StateChange: timeOrNil(a.stateChange), XactStart: timeOrNil(a.xactStart)}
	if s.client.Addr != nil {
		if host, port, err := net.SplitHostPort(s.client.Addr.String()); err == nil {
			out.ClientAddr = host
			if p, err := strconv.Atoi(port); err == nil {
				out.ClientPort = int64(p)
			}
		}
	}
	return out
}

func timeOrNil(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

// Activity returns the pg_stat_activity rows of the engine's sessions,
// by PID.
func (e *Engine) Activity() []catalog.Activity {
	var out []catalog.Activity
	e.sessions.Range(func(_, v any) bool {
		out = append(out, v.(*Session).activityRow())
		return true
	})
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	return out
}
