package testcluster

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/basindb/basin/kafka"
)

func TestMain(m *testing.M) { Main(m) }

// orderRecords returns n order records with ids from first on, keyed as
// a BIGINT KEY column (big-endian, key_format 'kafka'), and adds their
// regions to counts.
func orderRecords(first, n int, counts map[string]int) []*kgo.Record {
	regions := []string{"eu", "us", "apac"}
	var recs []*kgo.Record
	for id := first; id < first+n; id++ {
		region := regions[id%len(regions)]
		counts[region]++
		recs = append(recs, &kgo.Record{
			Key:   binary.BigEndian.AppendUint64(nil, uint64(id)),
			Value: fmt.Appendf(nil, `{"region":%q,"amount":%d.5}`, region, id),
		})
	}
	return recs
}

func countRows(counts map[string]int) [][]string {
	var rows [][]string
	for _, r := range []string{"apac", "eu", "us"} { // ORDER BY region
		if counts[r] > 0 {
			rows = append(rows, []string{r, fmt.Sprint(counts[r])})
		}
	}
	return rows
}

// waitCounts waits until by_region on n holds counts.
func waitCounts(t *testing.T, c *Cluster, n *Node, counts map[string]int) {
	t.Helper()
	want := countRows(counts)
	c.Eventually(t, 20*time.Second, func() error {
		got, err := n.QueryErr(t, `SELECT region, n FROM by_region ORDER BY region`)
		if err != nil {
			return err
		}
		if !reflect.DeepEqual(got, want) {
			return fmt.Errorf("by_region holds %v, want %v", got, want)
		}
		return nil
	})
}

// TestSingleNode runs one node through a view, SIGKILL and restart,
// SIGSTOP and SIGCONT, and SIGTERM.
func TestSingleNode(t *testing.T) {
	c := Start(t, Options{})
	n := c.Node(0)
	if n.ID != "node-0" || !n.Running() || n.Stopped() {
		t.Fatalf("node %s: running %v, stopped %v", n.ID, n.Running(), n.Stopped())
	}
	n.Exec(t, `CREATE STREAM orders (id BIGINT KEY, region VARCHAR, amount DOUBLE)
		WITH (kafka_topic='orders', value_format='json', partitions=4)`)
	n.Exec(t, `CREATE TABLE by_region AS SELECT region, COUNT(*) AS n FROM orders GROUP BY region`)

	counts := map[string]int{}
	recs := orderRecords(0, 300, counts)
	c.Produce(t, "orders", recs...)
	for _, r := range recs {
		if want := kafka.Partition(r.Key, 4); r.Partition != want {
			t.Fatalf("key %x went to partition %d; basin looks for it in %d", r.Key, r.Partition, want)
		}
	}
	waitCounts(t, c, n, counts)

	// The HTTP side.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if status, body, err := n.HTTPGet(ctx, "/healthz"); err != nil || status != 200 || strings.TrimSpace(string(body)) != "ok" {
		t.Fatalf("GET /healthz: %d %q %v", status, body, err)
	}
	var v any
	if err := n.GetJSON(t, "/no-such-endpoint", &v); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("GetJSON of a missing endpoint: %v, want a 404 error", err)
	}

	// SIGKILL, restart with the same id, data dir and ports: the counts
	// are the same, and records produced while it was down are counted
	// once.
	pid := n.PID()
	n.Kill()
	if n.Running() {
		t.Fatal("running after Kill")
	}
	if _, err := n.QueryErr(t, "SELECT 1"); err == nil {
		t.Fatal("SELECT 1 answered by a killed node")
	}
	c.Produce(t, "orders", orderRecords(300, 90, counts)...)
	n.Restart(t)
	if n.PID() == pid || !n.Running() {
		t.Fatalf("after Restart: pid %d (was %d), running %v", n.PID(), pid, n.Running())
	}
	waitCounts(t, c, n, counts)

	// SIGSTOP: the node accepts connections (the kernel does) but never
	// answers; after SIGCONT it does.
	n.Stop()
	if !n.Stopped() || !n.Running() {
		t.Fatalf("after Stop: stopped %v, running %v", n.Stopped(), n.Running())
	}
	sctx, scancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	_, err := n.QueryCtx(sctx, "SELECT 1")
	scancel()
	if err == nil {
		t.Fatal("a stopped node answered SELECT 1")
	}
	n.Cont()
	if got := n.Query(t, "SELECT 1"); !reflect.DeepEqual(got, [][]string{{"1"}}) {
		t.Fatalf("SELECT 1 after SIGCONT: %v", got)
	}
	c.Produce(t, "orders", orderRecords(390, 30, counts)...)
	waitCounts(t, c, n, counts)

	// Errors come back as the server's.
	_, err = n.QueryErr(t, "SELECT * FROM no_such_view")
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "42P01" {
		t.Fatalf("SELECT from a missing relation: %v, want SQLSTATE 42P01", err)
	}
	// NULL is "NULL".
	if got := n.Query(t, "SELECT NULL, 'x'"); !reflect.DeepEqual(got, [][]string{{"NULL", "x"}}) {
		t.Fatalf("SELECT NULL, 'x': %v", got)
	}

	if err := n.Terminate(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(n.Log(), "exited: exit status 0") {
		t.Fatalf("no clean exit in the log:\n%s", n.Tail(20))
	}
	// Grep keeps the harness's start and exit lines, the last ones last.
	g := n.Grep(2, "=== testcluster:")
	if !strings.HasPrefix(g, "--- node-0: last 2 of ") || !strings.HasSuffix(g, "exited: exit status 0") {
		t.Fatalf("Grep of the harness lines:\n%s", g)
	}
}

// TestTwoNodes only checks that two nodes of one cluster start and
// answer: sharing tasks between them is the cluster runtime's job.
func TestTwoNodes(t *testing.T) {
	c := Start(t, Options{Nodes: 2})
	nodes := c.Nodes()
	if len(nodes) != 2 {
		t.Fatalf("%d nodes", len(nodes))
	}
	seen := map[string]bool{}
	for _, n := range nodes {
		seen[n.PGAddr], seen[n.HTTPAddr], seen[n.DataDir] = true, true, true
		if got := n.Query(t, "SELECT 1"); !reflect.DeepEqual(got, [][]string{{"1"}}) {
			t.Fatalf("%s: SELECT 1: %v", n.ID, got)
		}
	}
	if len(seen) != 6 {
		t.Fatalf("nodes share addresses or data dirs: %+v %+v", nodes[0], nodes[1])
	}
	if nodes[0].ID != "node-0" || nodes[1].ID != "node-1" {
		t.Fatalf("ids %s, %s", nodes[0].ID, nodes[1].ID)
	}

	// The broker restarts where it was, and the nodes outlive its
	// absence.
	addr := c.Broker()
	c.BrokerProcess().Kill()
	c.BrokerProcess().Restart(t)
	if c.Broker() != addr || !strings.Contains(c.BrokerProcess().Log(), "listening on "+addr) {
		t.Fatalf("broker restarted on %s, was %s:\n%s", c.Broker(), addr, c.BrokerProcess().Tail(10))
	}
	for _, n := range nodes {
		if got := n.Query(t, "SELECT 1"); !reflect.DeepEqual(got, [][]string{{"1"}}) {
			t.Fatalf("%s: SELECT 1 after the broker restarted: %v", n.ID, got)
		}
	}
}

// fakeTB records failures instead of failing the test, so that the
// harness's own failure reports can be tested. Fatal ends the calling
// goroutine, as testing's does.
type fakeTB struct {
	testing.TB
	mu     sync.Mutex
	errors []string
	fatal  string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Errorf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errors = append(f.errors, fmt.Sprintf(format, args...))
}
func (f *fakeTB) Fatal(args ...any) { f.Fatalf("%s", fmt.Sprint(args...)) }
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.mu.Lock()
	f.fatal = fmt.Sprintf(format, args...)
	f.mu.Unlock()
	runtime.Goexit()
}
func (f *fakeTB) Failed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fatal != "" || len(f.errors) > 0
}
func (f *fakeTB) Log(args ...any) {} // the tails; the real test stays quiet

// runFake runs fn with a fakeTB in a subtest of t, so that the harness's
// cleanups (also reported to the fake) run when it returns.
func runFake(t *testing.T, fn func(f *fakeTB)) *fakeTB {
	t.Helper()
	var f *fakeTB
	t.Run("fake", func(st *testing.T) {
		f = &fakeTB{TB: st}
		done := make(chan struct{})
		go func() {
			defer close(done)
			fn(f)
		}()
		<-done
	})
	return f
}

// TestFailuresAreReported: a node that cannot start fails Start with its
// log; a node that dies on its own fails Eventually at once and the test
// at cleanup.
func TestFailuresAreReported(t *testing.T) {
	f := runFake(t, func(f *fakeTB) {
		Start(f, Options{Args: []string{"--default-partitions", "-1"}})
	})
	if !strings.Contains(f.fatal, "node-0 exited before it was ready: exit status 1") ||
		!strings.Contains(f.fatal, "default partitions must be between 1 and 10000") {
		t.Errorf("Start of a node that cannot start: %q", f.fatal)
	}
	if len(f.errors) != 0 {
		t.Errorf("a start failure reported again at cleanup: %q", f.errors)
	}

	f = runFake(t, func(f *fakeTB) {
		c := Start(f, Options{})
		n := c.Node(0)
		if err := syscall.Kill(n.PID(), syscall.SIGKILL); err != nil { // behind the harness's back
			t.Error(err)
			return
		}
		start := time.Now()
		c.Eventually(f, time.Minute, func() error { return errors.New("never") })
		t.Errorf("Eventually returned after %v", time.Since(start))
	})
	if !strings.Contains(f.fatal, "node-0 exited without being asked to: signal: killed (waiting for: never)") {
		t.Errorf("Eventually with a crashed node: %q", f.fatal)
	}
	if len(f.errors) != 1 || !strings.Contains(f.errors[0], "node-0 exited without being asked to: signal: killed") {
		t.Errorf("crash report at cleanup: %q", f.errors)
	}
}
