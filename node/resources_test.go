package node

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/basindb/basin/internal/poll"
	"github.com/basindb/basin/internal/testcluster"
	"github.com/basindb/basin/kafka"
	"github.com/basindb/basin/materialize"
)

// liveHeap is the heap that survives a full collection, in bytes: what
// the process (node and test alike, both in-process) actually holds.
// Two collections: objects in a sync.Pool survive the first one (in the
// pool's victim cache).
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

const mib = 1 << 20

// TestLargeScanMemoryFlat reads a table of a million rows with SELECT *
// and checks that the live heap stays flat while the rows stream: the
// scan goes from the Pebble iterator through the pgwire writer (written to
// the socket every 64 KiB) to the client, and nothing holds the result.
// Every 50,000 rows the client stops reading until the scan is blocked
// writing to it: a slow client must hold the scan back, not make the
// server buffer.
//
// The rows get into Pebble the way a producer's records do: a million
// JSON records produced straight to the table's topic, which the table's
// tasks materialize.
//
// The bound: each row is 116 to 121 bytes on the wire and more than 200
// as a decoded row in Go, so a server holding the result holds about
// 115 MiB of encoded rows or 210 MiB of Go rows (both measured, by making
// the writer flush only at the end and by collecting the rows before
// sending them). A streaming scan stays within a MiB or two of where it
// started. 16 MiB leaves room for background work and catches any buffer
// of a sizeable part of the result.
//
// Built without cgo, Pebble allocates its block cache on the Go heap,
// where it fills during the scan; the bound then grows by the cache's
// size (materialize.DefaultCacheSize, 64 MiB), which still leaves both
// ways of holding the result above it.
func TestLargeScanMemoryFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("-short leaves out the million-row scan; make test and CI run it")
	}
	if testcluster.Race() {
		// The bound is on memory, which the race detector's shadow
		// memory distorts; make test checks it, and the scan's code runs
		// under the race detector in the other scan tests.
		t.Skip("the memory bound is checked by make test, not under the race detector")
	}
	const (
		total      = 1_000_000
		partitions = 4
		slack      = 16 * mib
		sampleEach = 50_000
	)
	bound := uint64(slack)
	if !cgoEnabled() {
		bound += materialize.DefaultCacheSize
	}
	start := time.Now()
	n := startNode(t, t.TempDir())
	conn := connect(t, n.PGAddr())
	mustExec(t, conn, fmt.Sprintf(`CREATE TABLE big (id BIGINT PRIMARY KEY, v VARCHAR) WITH (kafka_topic='big', value_format='json', partitions=%d)`, partitions))

	lastKey := produceBig(t, n.Brokers(), "big", total, partitions)
	t.Logf("produced %d records in %s", total, time.Since(start).Round(time.Millisecond))

	// A partition's records are applied in offset order, so once the last
	// key produced to each partition can be read, all of them can.
	for _, id := range lastKey {
		waitQueryFor(t, conn, 60*time.Second, fmt.Sprintf(`SELECT id FROM big WHERE id = %d`, id), fmt.Sprintf("%d\n", id))
	}
	t.Logf("materialized in %s", time.Since(start).Round(time.Millisecond))
	// The count is a scan of its own: it checks the table before the
	// measured scan.
	waitQueryFor(t, conn, 60*time.Second, `SELECT count(*) FROM big`, fmt.Sprintf("%d\n", total))

	seen := make([]bool, total)
	base := liveHeap()
	peak := base
	var samples []string // live heap over base, MiB, every sampleEach rows
	scanStart := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rows, err := conn.Query(ctx, `SELECT * FROM big`)
	if err != nil {
		t.Fatal(err)
	}
	got, sawBlocked := 0, 0
	for rows.Next() {
		raw := rows.RawValues()
		id, err := strconv.ParseInt(string(raw[0]), 10, 64)
		if err != nil || id < 0 || id >= total || seen[id] {
			t.Fatalf("row %d: id %q unexpected or repeated (%v)", got, raw[0], err)
		}
		seen[id] = true
		if want := bigValue(id); string(raw[1]) != want {
			t.Fatalf("row %d: v = %q, want %q", got, raw[1], want)
		}
		got++
		if got%sampleEach == 0 {
			// A slow client: stop reading until the scan is blocked
			// writing to the socket (or done), then measure. A server
			// that ran ahead of its client would go on filling memory
			// instead. Measuring only then also keeps the scan from
			// allocating during the collection, which would count its
			// garbage (rows already sent) as live.
			if waitScanQuiet(t) {
				sawBlocked++
			}
			h := liveHeap()
			peak = max(peak, h)
			samples = append(samples, fmt.Sprintf("%+.1f", (float64(h)-float64(base))/mib))
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	// Most samples come while the scan is still running; none means the
	// stack match above no longer finds it.
	if sawBlocked == 0 {
		t.Fatal("never saw the scan blocked writing to its client: does waitScanQuiet still match pull.(*Query)?")
	}
	if got != total {
		t.Fatalf("scan returned %d rows, want %d", got, total)
	}
	if tag := rows.CommandTag().String(); tag != fmt.Sprintf("SELECT %d", total) {
		t.Fatalf("command tag %q, want SELECT %d", tag, total)
	}
	t.Logf("scan of %d rows in %s; live heap %.1f MiB before, peak %.1f MiB during (%+.1f MiB, bound +%d MiB); test total %s",
		total, time.Since(scanStart).Round(time.Millisecond), float64(base)/mib, float64(peak)/mib,
		(float64(peak)-float64(base))/mib, bound/mib, time.Since(start).Round(time.Millisecond))
	t.Logf("live heap over the base every %d rows (MiB): %s", sampleEach, strings.Join(samples, " "))
	if peak > base+bound {
		t.Fatalf("live heap grew by %.1f MiB during the scan, more than %d MiB: the result is being held in memory",
			float64(peak-base)/mib, bound/mib)
	}
}

// bigValue is the value of column v for id: 100 bytes.
func bigValue(id int64) string { return fmt.Sprintf("value-%094d", id) }

// cgoEnabled reports whether the test binary was built with cgo, which
// decides where Pebble allocates its block cache: C memory with cgo, the
// Go heap without.
func cgoEnabled() bool {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "CGO_ENABLED" {
				return s.Value == "1"
			}
		}
	}
	return false // unknown: assume the larger heap
}

// produceBig produces total records (id, bigValue(id)) to topic, keyed as
// a BIGINT key is (8 bytes big-endian) and partitioned as basin
// partitions keys, and returns the last id produced to each partition.
func produceBig(t *testing.T, brokers []string, topic string, total int, partitions int32) map[int32]int64 {
	t.Helper()
	cl, err := kafka.NewClient(kafka.ClientOptions{Brokers: brokers, Logger: testLogger()},
		append(kafka.ProducerOpts(), kgo.MaxBufferedRecords(100_000), kgo.ProducerLinger(5*time.Millisecond))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	last := map[int32]int64{}
	var (
		mu       sync.Mutex
		firstErr error
	)
	done := func(_ *kgo.Record, err error) {
		if err != nil {
			mu.Lock()
			if firstErr == nil {
				firstErr = err
			}
			mu.Unlock()
		}
	}
	for id := int64(0); id < int64(total); id++ {
		key := binary.BigEndian.AppendUint64(nil, uint64(id))
		p := kafka.Partition(key, partitions)
		last[p] = id
		cl.Produce(ctx, &kgo.Record{Topic: topic, Partition: p, Key: key, Value: []byte(`{"v":"` + bigValue(id) + `"}`)}, done)
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if firstErr != nil {
		t.Fatal(firstErr)
	}
	return last
}

// waitScanQuiet waits until no pull query is running on the CPU: every
// goroutine inside basin's pull.(*Query) is blocked on the network (in IO
// wait, which for a scan means writing to its client: it reads nothing
// from the network), or there is none because the scan has ended. It
// reads the goroutines' stacks.
//
// It reports whether it saw a blocked scan, so that the caller can check
// that the stacks still name what this looks for.
func waitScanQuiet(t *testing.T) (blocked bool) {
	t.Helper()
	buf := make([]byte, 4<<20)
	eventually(t, 30*time.Second, func() error {
		blocked = false
		stacks := string(buf[:runtime.Stack(buf, true)])
		for _, g := range strings.Split(stacks, "\n\n") {
			if strings.Contains(g, "basindb/basin/pull.(*Query).") {
				if !strings.Contains(g, "[IO wait") {
					return fmt.Errorf("a pull query is running and not blocked writing to its client:\n%s", g)
				}
				blocked = true
			}
		}
		return nil
	})
	return blocked
}

func waitQueryFor(t *testing.T, c *pgx.Conn, d time.Duration, q, want string) {
	t.Helper()
	var got string
	eventually(t, d, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		var err error
		got, err = queryText(ctx, c, q, false)
		if err != nil {
			return err
		}
		if got != want {
			return fmt.Errorf("%s\n got: %q\nwant: %q", q, got, want)
		}
		return nil
	})
}

// TestIdleConnectionCost opens idle sessions on a node and measures what
// each costs the server: goroutines and live memory (heap plus goroutine
// stacks). The client side is a bare socket per session, which costs no
// goroutine and about 0.3 KiB of heap, so the deltas are the server's.
// Every session has run one query, so its per-session buffers exist; then
// it sits idle, as a pooled connection does.
//
// Measured: 1 goroutine (the connection's), about 18.5 KiB of heap (8
// KiB of it pgproto3's read buffer, 2.5 KiB the session's settings) and
// about 4 KiB of stack per session. The bounds leave about 3x headroom on
// memory; a second goroutine per idle session fails the test.
func TestIdleConnectionCost(t *testing.T) {
	const sessions = 200
	n := startNode(t, t.TempDir(), func(o *Options) { o.MaxConnections = sessions + 10 })
	// The node's own background work settles before the baseline: one
	// query through a session that is then closed.
	c0 := connect(t, n.PGAddr())
	waitQuery(t, c0, `SELECT 1`, "1\n")
	if err := c0.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	baseG, baseHeap, baseStack := runtime.NumGoroutine(), liveHeap(), stackInuse()
	conns := make([]net.Conn, 0, sessions)
	defer func() {
		for _, nc := range conns {
			_ = nc.Close()
		}
	}()
	for range sessions {
		conns = append(conns, openIdleSession(t, n.PGAddr()))
	}
	// A session's start leaves short-lived goroutines behind it (the
	// node's and the runtime's); the count is taken once they are gone,
	// or after 5 s: a second goroutine per idle session stays.
	g := runtime.NumGoroutine()
	poll.Cond(5*time.Second, func() bool {
		g = runtime.NumGoroutine()
		return g-baseG <= sessions+10
	})
	heap, stack := liveHeap(), stackInuse()
	perG := float64(g-baseG) / sessions
	perHeap := (float64(heap) - float64(baseHeap)) / sessions
	perStack := (float64(stack) - float64(baseStack)) / sessions
	t.Logf("%d idle sessions: %.2f goroutines, %.1f KiB heap and %.1f KiB stack per session (goroutines %d -> %d, heap %.1f -> %.1f MiB, stacks %.1f -> %.1f MiB)",
		sessions, perG, perHeap/1024, perStack/1024, baseG, g,
		float64(baseHeap)/mib, float64(heap)/mib, float64(baseStack)/mib, float64(stack)/mib)

	const (
		maxGoroutines = 1
		maxHeap       = 64 << 10
		maxStack      = 32 << 10
		// The node's own background goroutines (Kafka clients, tasks)
		// come and go; a few of them must not count as a session's.
		slack = 10
	)
	if g-baseG > maxGoroutines*sessions+slack {
		t.Errorf("%.2f goroutines per idle session, want at most %d", perG, maxGoroutines)
	}
	if perHeap > maxHeap {
		t.Errorf("%.1f KiB of heap per idle session, want at most %d KiB", perHeap/1024, maxHeap>>10)
	}
	if perStack > maxStack {
		t.Errorf("%.1f KiB of goroutine stack per idle session, want at most %d KiB", perStack/1024, maxStack>>10)
	}

	for _, nc := range conns {
		_ = nc.Close()
	}
	conns = nil
	// Every session's goroutine ends: what stays above the baseline is
	// the node's own background work coming and going (Kafka clients'
	// requests; several at a time under the race detector), a few
	// goroutines, where a leak would be one per session.
	eventually(t, 10*time.Second, func() error {
		if g := runtime.NumGoroutine(); g > baseG+slack/2 {
			return fmt.Errorf("%d goroutines after closing every session, %d before opening them", g, baseG)
		}
		return nil
	})
}

// stackInuse is the memory of goroutine stacks, in bytes.
func stackInuse() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.StackInuse
}

// openIdleSession connects to addr, completes startup, runs SELECT 1 and
// returns the bare socket: no goroutine and no protocol state stays on
// the client side.
func openIdleSession(t *testing.T, addr string) net.Conn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	fe := pgproto3.NewFrontend(nc, nc)
	fe.Send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber,
		Parameters: map[string]string{"user": "basin", "database": "basin"}})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	readyFor := func(what string) {
		for {
			msg, err := fe.Receive()
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			switch m := msg.(type) {
			case *pgproto3.ErrorResponse:
				t.Fatalf("%s: %s %s", what, m.Code, m.Message)
			case *pgproto3.ReadyForQuery:
				return
			}
		}
	}
	readyFor("startup")
	fe.Send(&pgproto3.Query{String: "SELECT 1"})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	readyFor("SELECT 1")
	_ = nc.SetDeadline(time.Time{})
	return nc
}
