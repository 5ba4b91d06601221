package pgwire

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/basindb/basin/internal/pgerr"
)

// ErrServerClosed is returned by Start after Close, and is the cause of
// every connection context cancelled by Close.
var ErrServerClosed = errors.New("pgwire: server closed")

// Server accepts Postgres wire protocol connections and serves each with a
// Session from its Backend. See the package documentation for the
// lifecycle.
type Server struct {
	opts    Options
	backend Backend
	log     *slog.Logger

	// ctx is the parent of every connection's context; Close cancels it
	// with ErrServerClosed.
	ctx    context.Context
	cancel context.CancelCauseFunc
	// wg counts the accept loop and every connection goroutine.
	wg sync.WaitGroup

	mu struct {
		sync.Mutex
		ln      net.Listener
		started bool
		closed  bool
		// sessions holds the connections past their startup message, by
		// BackendKeyData process ID. Its size is what MaxConnections
		// bounds and it is where CancelRequest looks.
		sessions map[uint32]*conn
		// nextPID is the next process ID to try; IDs are reused only
		// after 2^31 connections and never while still in sessions.
		nextPID uint32
		// startups counts the connections accepted and not yet past
		// startup, startupsByHost the same by remote IP address; they
		// are what MaxStartupConnections and
		// MaxStartupConnectionsPerHost bound (goServe, endStartup).
		startups       int
		startupsByHost map[string]int
		// startupsChanged, when not nil, is closed (and cleared) at the
		// next change of startups: what waits for a count (tests)
		// selects on it.
		startupsChanged chan struct{}
		// acceptErr is the error of the latest Accept while it keeps
		// failing (out of file descriptors), nil once one succeeds, and
		// acceptErrAt when it failed; acceptStopped is set when the
		// accept loop ended before Close. Health reports both.
		acceptErr     error
		acceptErrAt   time.Time
		acceptStopped error
	}

	// refused counts connections closed at accept for being over a
	// startup limit since the last warning about it; lastRefusedLog is
	// when that warning was (unix nanoseconds). A flood is logged once a
	// second, not once a connection.
	refused        atomic.Int64
	lastRefusedLog atomic.Int64
}

// NewServer returns a server for b. It does not listen until Start.
func NewServer(opts Options, b Backend) (*Server, error) {
	if b == nil {
		return nil, errors.New("pgwire: NewServer: nil Backend")
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	s := &Server{opts: opts, backend: b, log: opts.Logger}
	s.ctx, s.cancel = context.WithCancelCause(context.Background())
	s.mu.sessions = make(map[uint32]*conn)
	s.mu.startupsByHost = make(map[string]int)
	s.mu.nextPID = 1
	return s, nil
}

// Start listens on Options.Addr and accepts connections in a goroutine
// until Close. It returns once the listener is open, so Addr is valid.
func (s *Server) Start() error {
	s.mu.Lock()
	switch {
	case s.mu.closed:
		s.mu.Unlock()
		return ErrServerClosed
	case s.mu.started:
		s.mu.Unlock()
		return errors.New("pgwire: Start called twice")
	}
	s.mu.started = true
	s.mu.Unlock()

	// Listen outside mu: it is I/O.
	ln, err := net.Listen("tcp", s.opts.Addr)
	if err != nil {
		s.mu.Lock()
		s.mu.started = false // the caller may retry once the address is free
		s.mu.Unlock()
		return fmt.Errorf("pgwire: listen on %s: %w", s.opts.Addr, err)
	}
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		_ = ln.Close()
		return ErrServerClosed
	}
	s.mu.ln = ln
	s.wg.Add(1)
	s.mu.Unlock()

	s.log.Info("pgwire: listening", "addr", ln.Addr().String())
	go func() {
		defer s.wg.Done()
		s.acceptLoop(ln)
	}()
	return nil
}

// Addr returns the address the server listens on, or nil before Start.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.ln == nil {
		return nil
	}
	return s.mu.ln.Addr()
}

// Close stops accepting, ends every connection (a session past startup
// gets FATAL 57P01 and its running statement's context is cancelled) and
// waits for every connection goroutine to return. It waits for
// Session.Query to honour its context. Close is idempotent.
func (s *Server) Close() error {
	s.mu.Lock()
	alreadyClosed := s.mu.closed
	s.mu.closed = true
	ln := s.mu.ln
	s.mu.Unlock()

	var err error
	if !alreadyClosed {
		// Cancelling s.ctx reaches every connection: their contexts are
		// children of it, and each sets its socket deadlines when its
		// context ends, which unblocks its reads and bounds its writes.
		s.cancel(ErrServerClosed)
		if ln != nil {
			if cerr := ln.Close(); cerr != nil && !errors.Is(cerr, net.ErrClosed) {
				err = fmt.Errorf("pgwire: close listener: %w", cerr)
			}
		}
	}
	s.wg.Wait()
	return err
}

// acceptLoop runs until ln is closed. Temporary accept errors (out of file
// descriptors) are retried with backoff, as net/http does, and reported
// by Health meanwhile.
func (s *Server) acceptLoop(ln net.Listener) {
	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.ctx.Err() != nil {
				return
			}
			if errors.Is(err, net.ErrClosed) {
				s.setAcceptState(nil, fmt.Errorf("the Postgres listener on %s was closed: %w", ln.Addr(), err))
				s.log.Error("pgwire: listener closed before the server; no new connections are accepted", "err", err)
				return
			}
			s.setAcceptState(err, nil)
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.log.Warn("pgwire: accept failed; retrying", "err", err, "backoff", backoff)
			t := time.NewTimer(backoff)
			select {
			case <-t.C:
			case <-s.ctx.Done():
				t.Stop()
				return
			}
			continue
		}
		if backoff != 0 {
			backoff = 0
			s.setAcceptState(nil, nil)
			s.log.Info("pgwire: accepting connections again")
		}
		switch s.goServe(nc) {
		case served:
		case refused:
			_ = nc.Close()
			s.logRefused(nc.RemoteAddr())
		case closing:
			_ = nc.Close()
			return
		}
	}
}

func (s *Server) setAcceptState(acceptErr, stopped error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.acceptErr, s.mu.acceptErrAt, s.mu.acceptStopped = acceptErr, time.Now(), stopped
}

// acceptFailureFresh is how long Health reports a failed Accept. A
// failure that lasts (EMFILE, with the connection left in the backlog)
// is retried at least once a second and stays fresh; one after which no
// connection came to succeed (a one-off error) stops counting.
const acceptFailureFresh = 5 * time.Second

// Health reports why the server cannot take new connections: its
// listener was closed from under it, or accepting fails (most often the
// process is out of file descriptors). It is nil while the server
// accepts, and before Start.
func (s *Server) Health() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.mu.closed:
		return ErrServerClosed
	case s.mu.acceptStopped != nil:
		return s.mu.acceptStopped
	case s.mu.acceptErr != nil && time.Since(s.mu.acceptErrAt) < acceptFailureFresh:
		return fmt.Errorf("the Postgres listener on %s cannot accept connections: %w", s.mu.ln.Addr(), s.mu.acceptErr)
	}
	return nil
}

// logRefused warns about connections refused over a startup limit, at
// most once a second with the count since the last warning.
func (s *Server) logRefused(remote net.Addr) {
	s.refused.Add(1)
	now := time.Now().UnixNano()
	last := s.lastRefusedLog.Load()
	if now-last < int64(time.Second) || !s.lastRefusedLog.CompareAndSwap(last, now) {
		return
	}
	n := s.refused.Swap(0)
	s.log.Warn("pgwire: too many connections in startup; closing new ones at once",
		"refused", n, "last_remote", remote.String(),
		"max_startup_connections", s.opts.MaxStartupConnections,
		"max_startup_connections_per_host", s.opts.MaxStartupConnectionsPerHost)
}

type serveOutcome int

const (
	served  serveOutcome = iota
	refused              // over a startup limit: the caller closes nc
	closing              // the server is closed: the caller closes nc and stops
)

// goServe serves nc in a goroutine counted by wg, counting it as in
// startup until the connection's endStartup. It starts nothing once the
// server is closed (wg.Add must not race with the Wait in Close) or when
// nc would exceed MaxStartupConnections or MaxStartupConnectionsPerHost.
func (s *Server) goServe(nc net.Conn) serveOutcome {
	host := remoteHost(nc.RemoteAddr())
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closed {
		return closing
	}
	if s.mu.startups >= s.opts.MaxStartupConnections ||
		s.mu.startupsByHost[host] >= s.opts.MaxStartupConnectionsPerHost {
		return refused
	}
	s.mu.startups++
	s.mu.startupsByHost[host]++
	s.startupsChangedLocked()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		c := newConn(s, nc)
		c.startupHost, c.inStartup = host, true
		c.serve()
	}()
	return served
}

// endStartup stops counting a connection from host as in startup.
func (s *Server) endStartup(host string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.startups--
	if s.mu.startupsByHost[host]--; s.mu.startupsByHost[host] <= 0 {
		delete(s.mu.startupsByHost, host)
	}
	s.startupsChangedLocked()
}

// startupsChangedLocked wakes what waits for the startup count to change.
// s.mu must be held.
func (s *Server) startupsChangedLocked() {
	if s.mu.startupsChanged != nil {
		close(s.mu.startupsChanged)
		s.mu.startupsChanged = nil
	}
}

// startupsAndChange returns the connections in startup and a channel
// closed when that count next changes.
func (s *Server) startupsAndChange() (int, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.startupsChanged == nil {
		s.mu.startupsChanged = make(chan struct{})
	}
	return s.mu.startups, s.mu.startupsChanged
}

// remoteHost is the IP address of a remote address, what the per-host
// startup limit counts by; the whole address when it has no port.
func remoteHost(a net.Addr) string {
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.IP.String()
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}

// serveConn runs one connection to its end and closes nc, outside the
// startup limits (goServe counts the connections it serves; tests call
// serveConn directly).
func (s *Server) serveConn(nc net.Conn) {
	c := newConn(s, nc)
	c.serve()
}

// register admits c as a session: it assigns c's BackendKeyData process
// ID and counts c against MaxConnections. It returns the FATAL error to
// refuse c with when the server is full or closing.
func (s *Server) register(c *conn) *pgerr.Error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closed {
		return errShuttingDown
	}
	if len(s.mu.sessions) >= s.opts.MaxConnections {
		return errTooManyClients
	}
	for {
		pid := s.mu.nextPID
		s.mu.nextPID++
		if s.mu.nextPID > math.MaxInt32 { // Postgres PIDs are int4
			s.mu.nextPID = 1
		}
		if _, taken := s.mu.sessions[pid]; !taken {
			c.pid = pid
			break
		}
	}
	s.mu.sessions[c.pid] = c
	return nil
}

// unregister removes c from the sessions; its process ID may be reused.
func (s *Server) unregister(c *conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.sessions[c.pid] == c {
		delete(s.mu.sessions, c.pid)
	}
}

// CancelBackend cancels the statement running on the session with
// process ID pid, as pg_cancel_backend does; the statement fails with
// 57014. It reports whether that session exists.
func (s *Server) CancelBackend(pid uint32) bool {
	s.mu.Lock()
	c := s.mu.sessions[pid]
	s.mu.Unlock()
	if c == nil {
		return false
	}
	c.log.Info("pgwire: statement cancelled by pg_cancel_backend")
	c.cancelQuery()
	return true
}

// TerminateBackend ends the connection of the session with process ID
// pid, as pg_terminate_backend does: its running statement is cancelled
// and the client gets FATAL 57P01. It reports whether that session
// exists.
func (s *Server) TerminateBackend(pid uint32) bool {
	s.mu.Lock()
	c := s.mu.sessions[pid]
	s.mu.Unlock()
	if c == nil {
		return false
	}
	c.log.Info("pgwire: connection terminated by pg_terminate_backend")
	c.cancel(errTerminated)
	return true
}

// cancelRequest handles a CancelRequest: it cancels the statement running
// on the session with that key, if any. Like Postgres it says nothing
// back either way, so a wrong key reveals nothing.
func (s *Server) cancelRequest(pid uint32, secret []byte) {
	s.mu.Lock()
	c := s.mu.sessions[pid]
	s.mu.Unlock()
	if c == nil || subtle.ConstantTimeCompare(c.secret[:], secret) != 1 {
		s.log.Debug("pgwire: cancel request matches no session", "pid", pid)
		return
	}
	c.cancelQuery()
}
