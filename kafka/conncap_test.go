package kafka

import (
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestBrokerConnectionCaps floods the broker's port with connections
// that never send a request, from other loopback addresses standing for
// other hosts. The broker keeps MaxConnectionsPerHost of one host's and
// closes the rest at once, keeps MaxConnections in total, and meanwhile
// serves a client from its own address (exempt from the per-host cap,
// as the node's own clients are). Once the flood closes, the count is
// back to 0 and new connections are accepted. Before, every connection
// was kept until the process ran out of descriptors.
func TestBrokerConnectionCaps(t *testing.T) {
	const total, perHost = 16, 4
	b, err := StartBroker(BrokerOptions{MaxConnections: total, MaxConnectionsPerHost: perHost, Logger: testLogger(t)})
	if err != nil {
		t.Fatalf("StartBroker: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	addr := b.Addrs()[0]

	var flood []net.Conn
	t.Cleanup(func() {
		for _, c := range flood {
			c.Close()
		}
	})
	// dialFrom opens n connections from the loopback address ip and
	// checks that the broker closes wantClosed of them at once and
	// holds the others.
	dialFrom := func(ip string, n, wantClosed int) {
		t.Helper()
		before, _ := b.openConns()
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: testTimeout}
		closed := make(chan error, n)
		for range n {
			c, err := d.Dial("tcp", addr)
			if err != nil {
				t.Fatalf("dial %s from %s: %v", addr, ip, err)
			}
			flood = append(flood, c)
			go func() {
				// A connection the broker holds sees no byte until the
				// test closes it; one it refused reads EOF (or a reset)
				// at once.
				_ = c.SetReadDeadline(time.Now().Add(testTimeout))
				_, err := c.Read(make([]byte, 1))
				closed <- err
			}()
		}
		for range wantClosed {
			if err := <-closed; isTimeout(err) {
				t.Fatalf("%d connections from %s: fewer than %d closed within %v", n, ip, wantClosed, testTimeout)
			}
		}
		waitOpen(t, b, before+n-wantClosed)
	}

	dialFrom("127.0.0.2", 10, 10-perHost)

	// A client from the broker's own address works meanwhile.
	produceAndFetch(t, addr, "caps-1")
	waitOpen(t, b, perHost) // the client's connections are closed

	// The broker's own address is not held to the per-host cap; more
	// hosts fill the total, and past it even the broker's own address is
	// refused.
	dialFrom("127.0.0.1", perHost+2, 0)
	dialFrom("127.0.0.3", perHost, 0)
	dialFrom("127.0.0.4", perHost, 2)
	dialFrom("127.0.0.6", 1, 1)
	dialFrom("127.0.0.1", 1, 1)

	for _, c := range flood {
		c.Close()
	}
	flood = nil
	waitOpen(t, b, 0)
	dialFrom("127.0.0.2", perHost, 0)
	produceAndFetch(t, addr, "caps-2")
}

// waitOpen waits until b holds want connections open.
func waitOpen(t *testing.T, b *Broker, want int) {
	t.Helper()
	timeout := time.After(testTimeout)
	for {
		n, changed := b.openConns()
		if n == want {
			return
		}
		select {
		case <-changed:
		case <-timeout:
			t.Fatalf("the broker holds %d connections open, want %d", n, want)
		}
	}
}

// produceAndFetch produces a record to a new topic through the broker at
// addr and fetches it back, then closes its client.
func produceAndFetch(t *testing.T, addr, topic string) {
	t.Helper()
	ctx := testCtx(t)
	cl := newTestClient(t, []string{addr}, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("produce to %s: %v", topic, err)
	}
	fs := cl.PollFetches(ctx)
	if err := fs.Err0(); err != nil {
		t.Fatalf("fetch %s: %v", topic, err)
	}
	if n := fs.NumRecords(); n != 1 {
		t.Fatalf("fetched %d records from %s, want 1", n, topic)
	}
	cl.Close()
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}
