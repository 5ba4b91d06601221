package node

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/basindb/basin/internal/testcluster"
	"github.com/basindb/basin/kafka"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestDescriptorExhaustion replays the descriptor attack on a real
// `basin serve` with its embedded broker, run under `prlimit --nofile`
// so that a few hundred connections would exhaust it: silent
// connections to the Postgres, broker and HTTP ports, from another
// address (127.0.0.2, standing for another host), each flood as large as
// the limit. Each port closes those past its caps as they are accepted
// (the startup limits on the Postgres port, the connection caps on the
// broker's and the HTTP port), and says so in the log, so the process
// keeps descriptors for its own work: meanwhile /healthz over a new
// connection is 200, a new Postgres client connects and INSERTs, and a
// new Kafka client produces; both records reach the view. Before the
// caps, the broker's port took connections until the process was out of
// descriptors and its accept failed (EMFILE: retryListener survives it,
// TestRetryListenerOutOfDescriptors); the Postgres port and the node's
// own clients starved.
func TestDescriptorExhaustion(t *testing.T) {
	if _, err := exec.LookPath("prlimit"); err != nil {
		t.Fatalf("this test needs prlimit (util-linux): %v", err)
	}
	const limit = 400
	dir := t.TempDir()
	pgAddr, brokerAddr, httpAddr := freeAddr(t), freeAddr(t), freeAddr(t)
	out := &lockedBuffer{}
	cmd := exec.Command("prlimit", fmt.Sprintf("--nofile=%d:%d", limit, limit), "--", basinBinary(t),
		"serve", "--data-dir", dir, "--pg-addr", pgAddr, "--broker-addr", brokerAddr,
		"--http-addr", httpAddr, "--log-level", "info")
	cmd.Env = append(os.Environ(), testcluster.Env()...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("node output:\n%s", out.String())
		}
	})
	conn := connectRetry(t, pgAddr)
	mustExec(t, conn, `CREATE STREAM fd_events (id BIGINT KEY, v BIGINT) WITH (kafka_topic='fd_events', value_format='json', partitions=2)`)
	mustExec(t, conn, `CREATE TABLE fd_totals AS SELECT id, SUM(v) AS total FROM fd_events GROUP BY id`)
	if !strings.Contains(out.String(), fmt.Sprintf("limit=%d", limit)) {
		t.Errorf("the node did not log its descriptor limit %d", limit)
	}

	// /healthz over a new connection each time: the node must still
	// accept one.
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
	healthz := func() (int, string, error) {
		resp, err := hc.Get("http://" + httpAddr + "/healthz")
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), err
	}
	if code, body, err := healthz(); err != nil || code != http.StatusOK {
		t.Fatalf("/healthz before the flood: %d %q %v", code, body, err)
	}

	var flood []net.Conn
	defer func() {
		for _, c := range flood {
			c.Close()
		}
	}()
	pid := cmd.Process.Pid
	openFDs := func() int {
		ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		return len(ents)
	}
	// A refused dial is not the test's failure: the outcomes checked
	// below are.
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}, Timeout: 5 * time.Second}
	for _, addr := range []string{pgAddr, brokerAddr, httpAddr} {
		for range limit {
			c, err := d.Dial("tcp", addr)
			if err != nil {
				t.Logf("flood dial %s: %v", addr, err)
				break
			}
			flood = append(flood, c)
		}
	}
	for _, want := range []string{"pgwire: too many connections in startup", "broker: too many open connections",
		"http: too many open connections"} {
		eventually(t, 30*time.Second, func() error {
			if !strings.Contains(out.String(), want) {
				return fmt.Errorf("the node did not log %q", want)
			}
			return nil
		})
	}
	t.Logf("%d connections dialled; the node holds %d descriptors of %d", len(flood), openFDs(), limit)

	if code, body, err := healthz(); err != nil || code != http.StatusOK {
		t.Fatalf("/healthz during the flood: %d %q %v", code, body, err)
	}
	conn2 := connectRetry(t, pgAddr)
	mustExec(t, conn2, `INSERT INTO fd_events (id, v) VALUES (1, 10)`)
	// A new Kafka client: the broker accepts connections from its own
	// address while another host's flood holds its per-host cap.
	cl, err := kafka.NewClient(kafka.ClientOptions{Brokers: []string{brokerAddr}, Logger: testLogger()},
		append(kafka.ProducerOpts(), kgo.RecordDeliveryTimeout(20*time.Second))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	key := binary.BigEndian.AppendUint64(nil, 2)
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "fd_events", Key: key, Value: []byte(`{"v":5}`),
		Partition: kafka.Partition(key, 2)}).FirstErr(); err != nil {
		t.Fatalf("produce through the broker during the flood: %v", err)
	}
	eventually(t, 30*time.Second, func() error {
		got, err := queryText(ctx, conn2, `SELECT id, total FROM fd_totals ORDER BY id`, false)
		if err != nil {
			return err
		}
		if want := "1|10\n2|5\n"; got != want {
			return fmt.Errorf("fd_totals: %q, want %q", got, want)
		}
		return nil
	})
	if code, body, err := healthz(); err != nil || code != http.StatusOK {
		t.Fatalf("/healthz at the end of the flood: %d %q %v", code, body, err)
	}
}

// lockedBuffer is a bytes.Buffer a child process writes while the test
// reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
