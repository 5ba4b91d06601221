package pgwire

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// dialFrom opens a TCP connection to the server from the loopback
// address local (Linux routes all of 127/8 to lo), so that a test can
// play several remote hosts.
func (ts *testServer) dialFrom(t *testing.T, local string) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: testTimeout, LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	nc, err := d.Dial("tcp", net.JoinHostPort(ts.host, strconv.Itoa(ts.port)))
	if err != nil {
		t.Fatal(err)
	}
	_ = nc.SetDeadline(time.Now().Add(testTimeout))
	t.Cleanup(func() { nc.Close() })
	return nc
}

// closedAtOnce reports whether the server closed nc without a word: a
// read ends in EOF (or a reset) before the deadline, with no byte.
func closedAtOnce(nc net.Conn) error {
	var b [1]byte
	n, err := nc.Read(b[:])
	switch {
	case n > 0:
		return errors.New("the server answered")
	case err == nil:
		return errors.New("no error")
	case errors.Is(err, io.EOF), errors.Is(err, syscall.ECONNRESET):
		return nil
	}
	return err
}

// waitStartups waits until the server counts n connections in startup.
func (ts *testServer) waitStartups(t *testing.T, n int) {
	t.Helper()
	timer := time.NewTimer(testTimeout)
	defer timer.Stop()
	for {
		got, changed := ts.startupsAndChange()
		if got == n {
			return
		}
		select {
		case <-changed:
		case <-timer.C:
			t.Fatalf("%d connections in startup, want %d", got, n)
		}
	}
}

// connectFrom starts a real pgx session (to its ReadyForQuery) from the
// loopback address local, and ends it.
func (ts *testServer) connectFrom(t *testing.T, local string) error {
	t.Helper()
	cfg, err := pgx.ParseConfig(ts.connString("connect_timeout=5"))
	if err != nil {
		t.Fatal(err)
	}
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	cfg.DialFunc = d.DialContext
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	return conn.Close(ctx)
}

// TestStartupLimits floods the server with connections that never send
// a startup packet: past MaxStartupConnectionsPerHost from one address,
// and past MaxStartupConnections in total, a new connection is closed at
// once, unanswered, while other hosts (under the total) still start
// sessions; once the silent connections go, the flooding host connects
// again. Without the limits every silent connection held a descriptor
// and a goroutine for the whole StartupTimeout.
func TestStartupLimits(t *testing.T) {
	// StartupTimeout is long, so that only a limit closes a silent connection.
	ts := startServer(t, Options{MaxStartupConnections: 4, MaxStartupConnectionsPerHost: 2, StartupTimeout: time.Hour})

	var silent []net.Conn
	for range 2 {
		silent = append(silent, ts.dialFrom(t, "127.0.0.1"))
	}
	ts.waitStartups(t, 2)
	if err := closedAtOnce(ts.dialFrom(t, "127.0.0.1")); err != nil {
		t.Fatalf("a third silent connection from 127.0.0.1 (per-host limit 2): want it closed at once, got %v", err)
	}
	// Another host is under its own limit and the total.
	if err := ts.connectFrom(t, "127.0.0.2"); err != nil {
		t.Fatalf("a session from 127.0.0.2 while 127.0.0.1 is at its limit: %v", err)
	}
	for range 2 {
		silent = append(silent, ts.dialFrom(t, "127.0.0.3"))
	}
	ts.waitStartups(t, 4)
	if err := closedAtOnce(ts.dialFrom(t, "127.0.0.4")); err != nil {
		t.Fatalf("a connection from a fresh host with 4 in startup (limit 4): want it closed at once, got %v", err)
	}
	if len(ts.logs.find(slog.LevelWarn, "pgwire: too many connections in startup; closing new ones at once")) == 0 {
		t.Error("the refusals were not logged")
	}

	for _, nc := range silent {
		nc.Close()
	}
	ts.waitStartups(t, 0)
	if err := ts.connectFrom(t, "127.0.0.1"); err != nil {
		t.Fatalf("a session from 127.0.0.1 after the silent connections closed: %v", err)
	}
	if err := ts.Health(); err != nil {
		t.Errorf("Health after the flood: %v", err)
	}
}

// TestStartupLimitsBelowDescriptorLimit: the default total startup limit
// stays at a quarter of the descriptor limit when that is below 256, so
// a flood of silent connections cannot use up the descriptors even
// where the limit is low; the per-host default is never above it.
func TestStartupLimitsBelowDescriptorLimit(t *testing.T) {
	var orig syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &orig); err != nil {
		t.Fatal(err)
	}
	low := orig
	low.Cur = min(orig.Max, 200)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	o := Options{}.withDefaults()
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &orig); err != nil {
		t.Fatal(err)
	}
	if want := int(low.Cur) / 4; o.MaxStartupConnections != want || o.MaxStartupConnectionsPerHost != want {
		t.Errorf("under a descriptor limit of %d: MaxStartupConnections %d, per host %d; want %d and %d",
			low.Cur, o.MaxStartupConnections, o.MaxStartupConnectionsPerHost, want, want)
	}
	if o := (Options{}).withDefaults(); o.MaxStartupConnections != min(DefaultMaxStartupConnections, int(orig.Cur)/4) {
		t.Errorf("under a descriptor limit of %d: MaxStartupConnections %d", orig.Cur, o.MaxStartupConnections)
	}
}
