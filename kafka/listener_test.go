package kafka

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"
)

// scriptedListener returns the errors and connections sent on results,
// one per Accept, and signals each call on calls.
type scriptedListener struct {
	net.Listener // nil: only Accept and Close are used
	results      chan acceptResult
	calls        chan struct{}
}

type acceptResult struct {
	c   net.Conn
	err error
}

func (l *scriptedListener) Accept() (net.Conn, error) {
	l.calls <- struct{}{}
	r := <-l.results
	return r.c, r.err
}

func (l *scriptedListener) Close() error { return nil }

// TestRetryListenerOutOfDescriptors: an Accept that fails with EMFILE
// is retried rather than returned to kfake (whose accept loop would stop
// for good), Health names the error while it lasts and is clear once a
// connection is accepted, and Close ends Accept with net.ErrClosed.
func TestRetryListenerOutOfDescriptors(t *testing.T) {
	sl := &scriptedListener{results: make(chan acceptResult), calls: make(chan struct{})}
	rl := &retryListener{Listener: sl, addr: advertisedAddr("127.0.0.1:9092"),
		log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	type accepted struct {
		c   net.Conn
		err error
	}
	done := make(chan accepted, 1)
	go func() {
		c, err := rl.Accept()
		done <- accepted{c, err}
	}()
	emfile := &net.OpError{Op: "accept", Net: "tcp", Err: syscall.EMFILE}
	<-sl.calls
	sl.results <- acceptResult{err: emfile}
	<-sl.calls // retried: the error did not reach the caller
	if err := rl.health(); err == nil || !strings.Contains(err.Error(), "too many open files") ||
		!strings.Contains(err.Error(), "127.0.0.1:9092") {
		t.Errorf("health while accept fails: %v, want the address and the error", err)
	}
	server, client := net.Pipe()
	defer client.Close()
	sl.results <- acceptResult{c: server}
	if got := <-done; got.err != nil || got.c != server {
		t.Fatalf("Accept: %v %v, want the connection after the retry", got.c, got.err)
	}
	if err := rl.health(); err != nil {
		t.Errorf("health after a connection was accepted: %v", err)
	}

	go func() {
		c, err := rl.Accept()
		done <- accepted{c, err}
	}()
	<-sl.calls
	_ = rl.Close()
	sl.results <- acceptResult{err: net.ErrClosed}
	if got := <-done; !errors.Is(got.err, net.ErrClosed) {
		t.Fatalf("Accept after Close: %v, want net.ErrClosed", got.err)
	}
	if err := rl.health(); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("health after Close: %v", err)
	}
}

// TestRetryListenerStaleFailure: a failed Accept after which no
// connection came (so none succeeded to clear it) stops failing health
// once it is older than acceptFailureFresh; a lasting failure is retried
// more often than that and stays reported.
func TestRetryListenerStaleFailure(t *testing.T) {
	rl := &retryListener{addr: advertisedAddr("127.0.0.1:9092")}
	emfile := &net.OpError{Op: "accept", Net: "tcp", Err: syscall.EMFILE}
	rl.failing.Store(&acceptFailure{err: emfile, at: time.Now()})
	if rl.health() == nil {
		t.Error("health with a fresh accept failure: nil")
	}
	rl.failing.Store(&acceptFailure{err: emfile, at: time.Now().Add(-2 * acceptFailureFresh)})
	if err := rl.health(); err != nil {
		t.Errorf("health with a stale accept failure: %v", err)
	}
}
