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
// so that a few hundred connections exhaust it: silent connections to
// the Postgres port (the startup limits close all but 64 at once) and to
// the broker's port, until the process is out of descriptors and the
// broker's accept fails. Meanwhile /healthz, asked over a connection
// opened before, answers 503 naming the broker. Once the flood's
// connections close, the node takes a new Postgres client, /healthz is
// 200 again, and both an INSERT and a record from a new Kafka client
// reach a view: the broker kept accepting. Before, kfake's accept loop
// returned on the first EMFILE and the broker never accepted again.
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

	// One HTTP connection, kept alive, to ask /healthz while the node
	// cannot accept a new one.
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}, Timeout: 10 * time.Second}
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
	// dial opens one connection of the flood. A refused one is not the
	// test's failure: the outcomes checked below are.
	dial := func(addr string) bool {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Logf("flood dial %s: %v", addr, err)
			return false
		}
		flood = append(flood, c)
		return true
	}
	for range 200 {
		dial(pgAddr) // over the per-host startup limit: most are closed at once
	}
	pid := cmd.Process.Pid
	openFDs := func() int {
		ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		return len(ents)
	}
	// The broker's accepted connections use up the rest; the last few
	// wait in its backlog, where accept fails with EMFILE.
	for i := 0; i < 2*limit && openFDs() < limit; i++ {
		if !dial(brokerAddr) {
			break
		}
	}
	for range 20 {
		if !dial(brokerAddr) {
			break
		}
	}
	eventually(t, 30*time.Second, func() error {
		code, body, err := healthz()
		if err != nil {
			return err
		}
		if code != http.StatusServiceUnavailable || !strings.Contains(body, "embedded broker") ||
			!strings.Contains(body, "too many open files") {
			return fmt.Errorf("/healthz out of descriptors (%d open of %d): %d %q, want 503 naming the broker and the error",
				openFDs(), limit, code, body)
		}
		return nil
	})

	for _, c := range flood {
		c.Close()
	}
	flood = nil
	eventually(t, 30*time.Second, func() error {
		code, body, err := healthz()
		if err != nil || code != http.StatusOK {
			return fmt.Errorf("/healthz after the flood: %d %q %v", code, body, err)
		}
		return nil
	})
	conn2 := connectRetry(t, pgAddr)
	mustExec(t, conn2, `INSERT INTO fd_events (id, v) VALUES (1, 10)`)

	// A new Kafka client: the broker accepts connections again.
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
		t.Fatalf("produce through the broker after the flood: %v", err)
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
