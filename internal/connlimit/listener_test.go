package connlimit

import (
	"io"
	"log/slog"
	"net"
	"testing"
	"time"
)

// TestCloseReleasesOnce: a connection closed twice (the HTTP server and
// kfake both do) is released once, so the count stays exact and a slot
// is not handed out twice; a connection from the listener's own address
// counts towards the total only when SameHostExempt.
func TestCloseReleasesOnce(t *testing.T) {
	for _, exempt := range []bool{false, true} {
		inner, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		l := NewListener(inner, Options{Max: 3, MaxPerHost: 1, SameHostExempt: exempt, Name: "test",
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		defer l.Close()

		accepted := make(chan net.Conn, 3)
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				accepted <- c
			}
		}()
		dial := func() net.Conn {
			t.Helper()
			c, err := net.DialTimeout("tcp", l.Addr().String(), 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			return c
		}
		accept := func() net.Conn {
			t.Helper()
			select {
			case c := <-accepted:
				return c
			case <-time.After(30 * time.Second):
				t.Fatal("no connection accepted")
				return nil
			}
		}
		waitClosed := func(c net.Conn) {
			t.Helper()
			_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
			if _, err := c.Read(make([]byte, 1)); err != io.EOF {
				t.Fatalf("exempt=%v: a connection past the cap reads %v, want EOF", exempt, err)
			}
		}

		dial()
		c := accept()
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		_ = c.Close()
		if n, _ := l.Open(); n != 0 {
			t.Fatalf("exempt=%v: %d open after closing the only connection twice, want 0", exempt, n)
		}
		dial()
		accept()
		second := dial()
		if !exempt {
			waitClosed(second) // over MaxPerHost
			continue
		}
		accept()
		dial()
		accept()
		waitClosed(dial()) // over Max
		if n, _ := l.Open(); n != 3 {
			t.Fatalf("exempt=%v: %d open, want 3", exempt, n)
		}
	}
}
