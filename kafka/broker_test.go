package kafka

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The durable state the persistence tests write before a restart and
// check after it.
const (
	durTopic      = "orders"
	durPartitions = 3
	durTxnID      = "task-0"
	durGroup      = "g"
	durCommitted  = 10
	durOpen       = 5
)

// writeDurableState creates durTopic, commits durCommitted records in a
// transaction, commits a group offset and, if leaveOpen, produces durOpen
// records in a transaction that is left open.
func writeDurableState(ctx context.Context, t testing.TB, addrs []string, leaveOpen bool) {
	t.Helper()
	adm := newTestAdmin(t, addrs)
	defer adm.Close()
	if created, n, err := EnsureTopic(ctx, adm, durTopic, durPartitions, nil); err != nil || !created || n != durPartitions {
		t.Fatalf("EnsureTopic = %v, %d, %v; want true, %d, nil", created, n, err, durPartitions)
	}
	p := newTxnProducer(t, addrs, durTxnID)
	defer p.Close()
	var recs []*kgo.Record
	for i := range durCommitted {
		recs = append(recs, keyedRecord(durTopic, durPartitions, fmt.Sprintf("k%d", i), fmt.Sprintf("committed-%d", i)))
	}
	produceTxn(ctx, t, p, recs...)

	offs := kadm.Offsets{durTopic: {0: {Topic: durTopic, Partition: 0, At: 7, LeaderEpoch: -1}}}
	if err := adm.CommitAllOffsets(ctx, durGroup, offs); err != nil {
		t.Fatalf("CommitAllOffsets: %v", err)
	}

	if leaveOpen {
		if err := p.BeginTransaction(); err != nil {
			t.Fatalf("BeginTransaction: %v", err)
		}
		recs = recs[:0]
		for i := range durOpen {
			recs = append(recs, keyedRecord(durTopic, durPartitions, fmt.Sprintf("o%d", i), fmt.Sprintf("open-%d", i)))
		}
		if err := p.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("produce in open transaction: %v", err)
		}
	}
}

// verifyDurableState checks, against a restarted broker, what
// writeDurableState wrote: the topic, the committed records and no others
// for read_committed consumers, the group offset, a usable transactional
// id and end offsets not held back by the transaction left open.
//
// round numbers the calls on one data dir: each commits its own records,
// and expects those of the earlier rounds.
func verifyDurableState(ctx context.Context, t testing.TB, addrs []string, round int, leftOpen bool) {
	t.Helper()
	adm := newTestAdmin(t, addrs)
	if created, n, err := EnsureTopic(ctx, adm, durTopic, 99, nil); err != nil || created || n != durPartitions {
		t.Fatalf("EnsureTopic after restart = %v, %d, %v; want false, %d, nil", created, n, err, durPartitions)
	}

	fetched, err := adm.FetchOffsets(ctx, durGroup)
	if err != nil {
		t.Fatalf("FetchOffsets: %v", err)
	}
	if o, ok := fetched.Lookup(durTopic, 0); !ok || o.Err != nil || o.At != 7 {
		t.Fatalf("group offset of %s[0] after restart = %+v, %v; want 7", durTopic, o, ok)
	}

	// The same transactional id works again: initializing it fences
	// whatever the previous incarnation left behind.
	p := newTxnProducer(t, addrs, durTxnID)
	var after []*kgo.Record
	for part := range int32(durPartitions) {
		v := fmt.Sprintf("after-%d-%d", round, part)
		after = append(after, &kgo.Record{Topic: durTopic, Partition: part, Value: []byte(v)})
	}
	produceTxn(ctx, t, p, after...)
	var want []string
	for r := 1; r <= round; r++ {
		for part := range durPartitions {
			want = append(want, fmt.Sprintf("after-%d-%d", r, part))
		}
	}
	for i := range durCommitted {
		want = append(want, fmt.Sprintf("committed-%d", i))
	}

	// The after-records follow everything else on every partition, so once
	// a consumer has them all it has passed any record of the open
	// transaction.
	seen := consumeUntil(ctx, t, addrs, durTopic, hasAll(want...), ConsumerOpts()...)
	if len(seen) != len(want) {
		t.Errorf("read_committed consumer saw %d values, want exactly %d: %v", len(seen), len(want), seen)
	}
	if leftOpen {
		// The open transaction's records were persisted, and aborted:
		// read_uncommitted still sees them.
		all := append([]string(nil), want...)
		for i := range durOpen {
			all = append(all, fmt.Sprintf("open-%d", i))
		}
		consumeUntil(ctx, t, addrs, durTopic, hasAll(all...))
	}

	ends, err := EndOffsets(ctx, adm, durTopic)
	if err != nil {
		t.Fatalf("EndOffsets: %v", err)
	}
	hwms, err := adm.ListEndOffsets(ctx, durTopic)
	if err != nil {
		t.Fatalf("ListEndOffsets: %v", err)
	}
	for part := range int32(durPartitions) {
		hwm, _ := hwms.Lookup(durTopic, part)
		if ends[part] != hwm.Offset {
			t.Errorf("partition %d: last stable offset %d, high watermark %d: a transaction is still open", part, ends[part], hwm.Offset)
		}
	}
}

func TestBrokerRestartKeepsState(t *testing.T) {
	ctx := testCtx(t)
	dir := t.TempDir()
	b := startTestBroker(t, dir)
	writeDurableState(ctx, t, b.Addrs(), false)
	if err := b.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}

	b2 := startTestBroker(t, dir)
	verifyDurableState(ctx, t, b2.Addrs(), 1, false)

	// And once more, after a restart of a restarted broker.
	b2.Close()
	b3 := startTestBroker(t, dir)
	verifyDurableState(ctx, t, b3.Addrs(), 2, false)
}

const crashChildEnv = "BASIN_KAFKA_CRASH_CHILD_DIR"

// TestBrokerSurvivesSIGKILL runs a broker in a child process (this test
// binary, running TestCrashChild), writes to it, kills it with SIGKILL and
// starts a broker on its data dir, as `basin serve` is killed in crash
// tests.
func TestBrokerSurvivesSIGKILL(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no SIGKILL on windows")
	}
	if testing.Short() {
		t.Skip("starts a subprocess")
	}
	ctx := testCtx(t)
	dir := t.TempDir()

	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestCrashChild$", "-test.timeout=5m")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+dir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe() // the child exits when we go away
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	defer func() {
		if !killed {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()

	ready := false
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if sc.Text() == "crash-child: ready" {
			ready = true
			break
		}
	}
	if !ready {
		cmd.Wait()
		killed = true
		t.Fatalf("crash child exited before it was ready; its stderr:\n%s", stderr.String())
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	cmd.Wait()
	killed = true

	b := startTestBroker(t, dir)
	verifyDurableState(ctx, t, b.Addrs(), 1, true)
}

// TestCrashChild is the child process of TestBrokerSurvivesSIGKILL.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashChildEnv)
	if dir == "" {
		t.Skip("helper process of TestBrokerSurvivesSIGKILL")
	}
	ctx := testCtx(t)
	b, err := StartBroker(BrokerOptions{DataDir: dir, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	writeDurableState(ctx, t, b.Addrs(), true)
	fmt.Println("crash-child: ready")
	io.Copy(io.Discard, os.Stdin) // until killed, or the parent is gone
}

// TestBrokerRepeatedCrashes crashes a broker several times in a row, each
// time with a transaction of the same producer open, and checks that every
// committed transaction stays visible to read_committed consumers and no
// open one becomes visible. A crash is simulated in process by copying the
// data dir of a running broker: what a killed process leaves behind is
// what it had written.
func TestBrokerRepeatedCrashes(t *testing.T) {
	ctx := testCtx(t)
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "0")
	b := startTestBroker(t, dir)
	if _, _, err := EnsureTopic(ctx, newTestAdmin(t, b.Addrs()), "t", 2, nil); err != nil {
		t.Fatal(err)
	}
	var committed, open []string
	recs := func(prefix string, vals *[]string) []*kgo.Record {
		var rs []*kgo.Record
		for part := range int32(2) {
			v := fmt.Sprintf("%s-%d", prefix, part)
			*vals = append(*vals, v)
			rs = append(rs, &kgo.Record{Topic: "t", Partition: part, Value: []byte(v)})
		}
		return rs
	}
	for round := 1; round <= 3; round++ {
		p := newTxnProducer(t, b.Addrs(), "task")
		produceTxn(ctx, t, p, recs(fmt.Sprintf("committed-%d", round), &committed)...)
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := p.ProduceSync(ctx, recs(fmt.Sprintf("open-%d", round), &open)...).FirstErr(); err != nil {
			t.Fatal(err)
		}

		crashed := filepath.Join(tmp, fmt.Sprint(round))
		copyDir(t, dir, crashed)
		p.Close()
		b.Close()
		dir = crashed
		b = startTestBroker(t, dir)
	}
	p := newTxnProducer(t, b.Addrs(), "task")
	produceTxn(ctx, t, p, recs("final", &committed)...)

	seen := consumeUntil(ctx, t, b.Addrs(), "t", hasAll(committed...), ConsumerOpts()...)
	if len(seen) != len(committed) {
		t.Errorf("read_committed consumer saw %v, want exactly %v", seen, committed)
	}
	consumeUntil(ctx, t, b.Addrs(), "t", hasAll(append(committed, open...)...))
}

// TestBrokerCloseWithOpenTxn checks that a transaction open at a clean
// Close stays open, holding back the last stable offset, until its
// producer comes back and aborts it, as with Kafka.
func TestBrokerCloseWithOpenTxn(t *testing.T) {
	ctx := testCtx(t)
	dir := t.TempDir()
	b := startTestBroker(t, dir)
	if _, _, err := EnsureTopic(ctx, newTestAdmin(t, b.Addrs()), "t", 1, nil); err != nil {
		t.Fatal(err)
	}
	p := newTxnProducer(t, b.Addrs(), "task")
	produceTxn(ctx, t, p, &kgo.Record{Topic: "t", Value: []byte("c1")})
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("open")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	p.Close()
	b.Close()

	b = startTestBroker(t, dir)
	adm := newTestAdmin(t, b.Addrs())
	// c1 and its commit marker are stable; "open" at offset 2 is not.
	if ends, err := EndOffsets(ctx, adm, "t"); err != nil || ends[0] != 2 {
		t.Fatalf("EndOffsets after restart = %v, %v; want partition 0 at 2", ends, err)
	}
	p = newTxnProducer(t, b.Addrs(), "task")
	produceTxn(ctx, t, p, &kgo.Record{Topic: "t", Value: []byte("c2")})
	seen := consumeUntil(ctx, t, b.Addrs(), "t", hasAll("c1", "c2"), ConsumerOpts()...)
	if seen["open"] {
		t.Errorf("read_committed consumer saw the aborted record: %v", seen)
	}
	ends, err := EndOffsets(ctx, adm, "t")
	hwms, err2 := adm.ListEndOffsets(ctx, "t")
	if hwm, _ := hwms.Lookup("t", 0); err != nil || err2 != nil || ends[0] != hwm.Offset {
		t.Errorf("EndOffsets = %v, %v; high watermark %v, %v", ends, err, hwms, err2)
	}
}

func copyDir(t testing.TB, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o644)
	})
	if err != nil {
		t.Fatalf("copy %s to %s: %v", from, to, err)
	}
}

func TestBrokerDataDirLocked(t *testing.T) {
	dir := t.TempDir()
	b := startTestBroker(t, dir)
	_, err := StartBroker(BrokerOptions{DataDir: dir, Logger: testLogger(t)})
	if !errors.Is(err, ErrDataDirLocked) {
		t.Fatalf("second StartBroker on %s: %v, want ErrDataDirLocked", dir, err)
	}
	if !strings.Contains(err.Error(), filepath.Join(dir, lockFileName)) {
		t.Errorf("error %q does not name the lock file", err)
	}
	b.Close()
	b2 := startTestBroker(t, dir) // the lock was released
	b2.Close()
}

func TestBrokerCorruptDataDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "meta.json"), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	for range 2 { // a failed start releases the lock
		_, err := StartBroker(BrokerOptions{DataDir: dir, Logger: testLogger(t)})
		if err == nil || errors.Is(err, ErrDataDirLocked) || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "meta.json") {
			t.Fatalf("StartBroker on a corrupt data dir: %v; want an error naming the dir and meta.json", err)
		}
	}
}

func TestBrokerAddrs(t *testing.T) {
	for _, tc := range []struct {
		opts     BrokerOptions
		wantHost string
	}{
		{BrokerOptions{}, "127.0.0.1"},
		{BrokerOptions{Addr: "0.0.0.0:0"}, "127.0.0.1"},
		{BrokerOptions{Addr: ":0"}, "127.0.0.1"},
		{BrokerOptions{Addr: "127.0.0.1:0", AdvertisedHost: "localhost"}, "localhost"},
	} {
		t.Run(tc.opts.Addr+"/"+tc.opts.AdvertisedHost, func(t *testing.T) {
			tc.opts.Logger = testLogger(t)
			b, err := StartBroker(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			addrs := b.Addrs()
			if len(addrs) != 1 {
				t.Fatalf("Addrs() = %v, want one address", addrs)
			}
			host, port, err := net.SplitHostPort(addrs[0])
			if err != nil || host != tc.wantHost || port == "0" {
				t.Fatalf("Addrs() = %v, want %s:<port>", addrs, tc.wantHost)
			}
			// Clients bootstrap and then follow the advertised address.
			adm := newTestAdmin(t, addrs)
			if _, _, err := EnsureTopic(testCtx(t), adm, "t", 1, nil); err != nil {
				t.Fatalf("EnsureTopic through advertised address: %v", err)
			}
		})
	}
}

func TestBrokerOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		opts    BrokerOptions
		wantErr string
	}{
		{BrokerOptions{Addr: "localhost"}, `broker address "localhost": want host:port`},
		{BrokerOptions{Addr: "localhost:http"}, `port "http" is not a number`},
		{BrokerOptions{Addr: "localhost:70000"}, `port "70000" is not a number in 0..65535`},
		{BrokerOptions{GroupMinSessionTimeout: 10e9, GroupMaxSessionTimeout: 1e9}, "minimum 10s exceeds maximum 1s"},
	} {
		err := tc.opts.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("Validate(%+v) = %v, want error containing %q", tc.opts, err, tc.wantErr)
		}
	}

	var o BrokerOptions
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if o.Addr != "127.0.0.1:0" || o.AdvertisedHost != "127.0.0.1" || o.ClusterID != "basin" || o.Logger == nil ||
		o.GroupMinSessionTimeout <= 0 || o.GroupMaxSessionTimeout < o.GroupMinSessionTimeout {
		t.Errorf("defaults: %+v", o)
	}
}

func TestBrokerAddrInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, err = StartBroker(BrokerOptions{Addr: ln.Addr().String(), DataDir: t.TempDir(), Logger: testLogger(t)})
	if err == nil || !strings.Contains(err.Error(), "listen on "+ln.Addr().String()) {
		t.Fatalf("StartBroker on a busy address: %v", err)
	}
}

// basin creates every topic explicitly; a client asking for automatic
// creation must not get it.
func TestBrokerNoAutoTopicCreation(t *testing.T) {
	ctx := testCtx(t)
	b := startTestBroker(t, "")
	cl := newTestClient(t, b.Addrs())
	req := kmsg.NewPtrMetadataRequest()
	req.AllowAutoTopicCreation = true
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr("auto")
	req.Topics = append(req.Topics, rt)
	if _, err := req.RequestWith(ctx, cl); err != nil {
		t.Fatal(err)
	}
	if _, err := TopicPartitions(ctx, kadm.NewClient(cl), "auto"); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("TopicPartitions(auto) = %v, want ErrUnknownTopic", err)
	}
}
