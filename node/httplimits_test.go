package node

import (
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/basindb/basin/internal/connlimit"
)

// TestHTTPConnectionCaps floods the HTTP address with connections that
// never send a request, from other loopback addresses standing for other
// hosts. The node keeps the per-host cap of one host's and closes the
// rest at once, keeps the total cap in all, and meanwhile answers GET
// /healthz from another address. Once the flood closes, the count is
// back to 0 and new connections are accepted. Before, every connection
// was kept (until its ReadHeaderTimeout) and a flood faster than that
// took every descriptor.
func TestHTTPConnectionCaps(t *testing.T) {
	const total, perHost = 8, 4
	testHTTPConnLimits = &[2]int{total, perHost}
	t.Cleanup(func() { testHTTPConnLimits = nil })
	n := startNode(t, t.TempDir(), func(o *Options) { o.HTTPAddr = "127.0.0.1:0" })
	ln := n.httpLn.(*connlimit.Listener)
	addr := n.HTTPAddr()
	const timeout = 30 * time.Second

	waitOpen := func(want int) {
		t.Helper()
		deadline := time.After(timeout)
		for {
			got, changed := ln.Open()
			if got == want {
				return
			}
			select {
			case <-changed:
			case <-deadline:
				t.Fatalf("the HTTP server holds %d connections open, want %d", got, want)
			}
		}
	}
	var flood []net.Conn
	t.Cleanup(func() {
		for _, c := range flood {
			c.Close()
		}
	})
	// dialFrom opens n connections from the loopback address ip and
	// checks that the server closes wantClosed of them at once and holds
	// the others.
	dialFrom := func(ip string, n, wantClosed int) {
		t.Helper()
		before, _ := ln.Open()
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: timeout}
		closed := make(chan error, n)
		for range n {
			c, err := d.Dial("tcp", addr)
			if err != nil {
				t.Fatalf("dial %s from %s: %v", addr, ip, err)
			}
			flood = append(flood, c)
			go func() {
				_ = c.SetReadDeadline(time.Now().Add(timeout))
				_, err := c.Read(make([]byte, 1))
				closed <- err
			}()
		}
		for range wantClosed {
			if err := <-closed; errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("%d connections from %s: fewer than %d closed within %v", n, ip, wantClosed, timeout)
			}
		}
		waitOpen(before + n - wantClosed)
	}
	// healthz asks GET /healthz over a new connection, closed after it.
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: timeout}
	healthz := func() error {
		resp, err := hc.Get("http://" + addr + "/healthz")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return errors.New(resp.Status + ": " + string(body))
		}
		return nil
	}

	dialFrom("127.0.0.2", 10, 10-perHost)
	if err := healthz(); err != nil {
		t.Fatalf("GET /healthz during a flood from another host: %v", err)
	}
	waitOpen(perHost) // healthz's connection is closed
	dialFrom("127.0.0.3", perHost, 0)
	dialFrom("127.0.0.4", 1, 1) // past the total

	for _, c := range flood {
		c.Close()
	}
	flood = nil
	waitOpen(0)
	dialFrom("127.0.0.2", perHost, 0)
	if err := healthz(); err != nil {
		t.Fatalf("GET /healthz after the flood: %v", err)
	}
}
