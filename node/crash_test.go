package node

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/basindb/basin/internal/testcluster"
	"github.com/basindb/basin/kafka"
)

// basinBinary is cmd/basin, built once per test run (shared with the
// cluster tests).
func basinBinary(t *testing.T) string { return testcluster.Binary(t) }

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// process is a basin node running as its own process.
type process struct {
	cmd *exec.Cmd
	out *bytes.Buffer
}

func startProcess(t *testing.T, args ...string) *process {
	t.Helper()
	p := &process{out: &bytes.Buffer{}}
	p.cmd = exec.Command(basinBinary(t), args...)
	p.cmd.Env = append(os.Environ(), testcluster.Env()...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
			_ = p.cmd.Wait()
		}
		if t.Failed() {
			t.Logf("node output:\n%s", p.out.String())
		}
	})
	return p
}

// connectRetry connects once the node accepts connections.
func connectRetry(t *testing.T, addr string) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(fmt.Sprintf("postgres://basin@%s/basin?sslmode=disable&connect_timeout=5", addr))
	if err != nil {
		t.Fatal(err)
	}
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	var conn *pgx.Conn
	eventually(t, 60*time.Second, func() error {
		conn, err = pgx.ConnectConfig(context.Background(), cfg)
		return err
	})
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

// TestCrashRecovery kills a node (and the broker embedded in it) with
// SIGKILL while records stream in, restarts it, and expects the views to
// equal a recomputation over the source topic: nothing lost, nothing
// counted twice.
func TestCrashRecovery(t *testing.T) {
	dir := t.TempDir()
	pgAddr, brokerAddr := freeAddr(t), freeAddr(t)
	args := []string{"serve", "--data-dir", dir, "--pg-addr", pgAddr, "--broker-addr", brokerAddr,
		"--http-addr", "off", "--cluster", "crash", "--log-level", "warn"}
	p1 := startProcess(t, args...)
	conn := connectRetry(t, pgAddr)
	mustExec(t, conn, `CREATE STREAM events (id BIGINT KEY, grp VARCHAR, v BIGINT) WITH (kafka_topic='events', value_format='json', partitions=4)`)
	// Re-keyed through the repartition topic:
	mustExec(t, conn, `CREATE TABLE by_grp AS SELECT grp, COUNT(*) AS n, SUM(v) AS total, MIN(v) AS lo, MAX(v) AS hi FROM events GROUP BY grp`)
	// Keyed as the source, no repartition:
	mustExec(t, conn, `CREATE TABLE by_id AS SELECT id, COUNT(*) AS n, SUM(v) AS total FROM events WHERE v % 3 <> 0 GROUP BY id`)

	cl, err := kafka.NewClient(kafka.ClientOptions{Brokers: []string{brokerAddr}, Logger: testLogger()},
		append(kafka.ProducerOpts(), kgo.RecordRetries(2), kgo.RecordDeliveryTimeout(5*time.Second))...)
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var produced sync.WaitGroup
	produced.Add(1)
	go func() {
		defer produced.Done()
		for i := int64(0); ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			recs := make([]*kgo.Record, 0, 200)
			for j := int64(0); j < 200; j++ {
				id := (i*200 + j) % 97
				key := binary.BigEndian.AppendUint64(nil, uint64(id))
				val := fmt.Sprintf(`{"grp":"g%d","v":%d}`, (i*200+j)%7, i*200+j)
				recs = append(recs, &kgo.Record{Topic: "events", Partition: kafka.Partition(key, 4), Key: key, Value: []byte(val)})
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			err := cl.ProduceSync(ctx, recs...).FirstErr()
			cancel()
			if err != nil {
				return // the broker died with the node
			}
		}
	}()
	// Kill once the views have processed part of the stream.
	eventually(t, 60*time.Second, func() error {
		got, err := queryText(context.Background(), conn, `SELECT coalesce(sum(n), 0) > 3000 FROM by_grp`, false)
		if err != nil {
			return err
		}
		if got != "true\n" {
			return fmt.Errorf("views have not processed enough yet: %q", got)
		}
		return nil
	})
	if err := p1.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = p1.cmd.Wait()
	close(stop)
	cl.Close() // fails whatever the dead broker never acknowledged
	produced.Wait()

	p2 := startProcess(t, args...)
	conn2 := connectRetry(t, pgAddr)
	mustExec(t, conn2, `INSERT INTO events (id, grp, v) VALUES (1000, 'g0', 1), (1001, 'new', 2)`)

	wantGrp, wantID := recompute(t, brokerAddr)
	waitQuery(t, conn2, `SELECT grp, n, total, lo, hi FROM by_grp ORDER BY grp`, wantGrp)
	waitQuery(t, conn2, `SELECT id, n, total FROM by_id ORDER BY id`, wantID)

	// SIGTERM shuts down cleanly.
	if err := p2.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := p2.cmd.Wait(); err != nil {
		t.Fatalf("node exited with %v after SIGTERM", err)
	}
}

// recompute reads the events topic from the start and computes what the
// two views must hold.
func recompute(t *testing.T, broker string) (byGrp, byID string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admCl, err := kafka.NewClient(kafka.ClientOptions{Brokers: []string{broker}, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	ends, err := kafka.EndOffsets(ctx, kadmClient(admCl), "events")
	if err != nil {
		t.Fatal(err)
	}
	parts := map[int32]kgo.Offset{}
	remaining := 0
	for p, e := range ends {
		if e > 0 {
			parts[p] = kgo.NewOffset().AtStart()
			remaining++
		}
	}
	cl, err := kafka.NewClient(kafka.ClientOptions{Brokers: []string{broker}, Logger: testLogger()},
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"events": parts}), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	type agg struct{ n, total, lo, hi int64 }
	grp := map[string]*agg{}
	ids := map[int64]*agg{}
	done := map[int32]bool{}
	for remaining > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatal("reading events timed out")
		}
		fs.EachRecord(func(r *kgo.Record) {
			if done[r.Partition] || r.Offset >= ends[r.Partition] {
				return
			}
			if r.Offset+1 >= ends[r.Partition] {
				done[r.Partition] = true
				remaining--
			}
			var rec struct {
				Grp string `json:"grp"`
				V   int64  `json:"v"`
			}
			if err := json.Unmarshal(r.Value, &rec); err != nil {
				t.Errorf("undecodable event %s: %v", r.Value, err)
				return
			}
			g, v := rec.Grp, rec.V
			a := grp[g]
			if a == nil {
				a = &agg{lo: v, hi: v}
				grp[g] = a
			}
			a.n++
			a.total += v
			a.lo, a.hi = min(a.lo, v), max(a.hi, v)
			if v%3 != 0 {
				id := int64(binary.BigEndian.Uint64(r.Key))
				b := ids[id]
				if b == nil {
					b = &agg{}
					ids[id] = b
				}
				b.n++
				b.total += v
			}
		})
	}
	var gs []string
	for g := range grp {
		gs = append(gs, g)
	}
	sort.Strings(gs)
	var sb strings.Builder
	for _, g := range gs {
		a := grp[g]
		fmt.Fprintf(&sb, "%s|%d|%d|%d|%d\n", g, a.n, a.total, a.lo, a.hi)
	}
	var is []int64
	for id := range ids {
		is = append(is, id)
	}
	sort.Slice(is, func(i, j int) bool { return is[i] < is[j] })
	var sb2 strings.Builder
	for _, id := range is {
		fmt.Fprintf(&sb2, "%d|%d|%d\n", id, ids[id].n, ids[id].total)
	}
	return sb.String(), sb2.String()
}
