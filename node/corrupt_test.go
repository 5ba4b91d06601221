package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/kafka"
	"github.com/basindb/basin/materialize"
)

// flipMiddle flips n bytes in the middle of the file at path.
func flipMiddle(t *testing.T, path string, n int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 2*n {
		t.Fatalf("%s has %d bytes, too few to corrupt", path, len(b))
	}
	mid := len(b)/2 - n/2
	for i := mid; i < mid+n; i++ {
		b[i] ^= 0xff
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// commandSegments returns the log segment files of the command topic of
// cluster in the embedded broker's data dir under dir.
func commandSegments(t *testing.T, dir, cluster string) []string {
	t.Helper()
	topic := catalog.CommandTopic(cluster)
	var segs []string
	err := filepath.WalkDir(filepath.Join(dir, "kafka"), func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".dat") && strings.Contains(path, topic) {
			segs = append(segs, path)
		}
		return nil
	})
	if err != nil || len(segs) == 0 {
		t.Fatalf("no segment of %s under %s (%v)", topic, dir, err)
	}
	return segs
}

// storesOnDisk lists the view names of the stores in dir's state.
func storesOnDisk(t *testing.T, dir string) map[string]bool {
	t.Helper()
	db, err := materialize.Open(materialize.Options{Dir: filepath.Join(dir, "state"), Logger: testLogger()})
	if err != nil {
		t.Fatalf("opening the state of %s: %v", dir, err)
	}
	defer db.Close()
	ids, err := db.Stores()
	if err != nil {
		t.Fatal(err)
	}
	views := map[string]bool{}
	for _, id := range ids {
		views[id.View] = true
	}
	return views
}

// TestCorruptCommandTopic corrupts the command topic's segment of a
// stopped node: the broker truncates the segment at the damaged batch,
// so the topic has lost the commands after it. The node must refuse to
// start, naming the topic and the remedy, and must not delete the state
// of the relations it can no longer see.
func TestCorruptCommandTopic(t *testing.T) {
	dir := t.TempDir()
	n := startNode(t, dir)
	conn := connect(t, n.PGAddr())
	mustExec(t, conn, `CREATE STREAM orders (order_id BIGINT KEY, region VARCHAR, amount DOUBLE) WITH (kafka_topic='orders', value_format='json', partitions=1)`)
	mustExec(t, conn, `CREATE TABLE customers (id VARCHAR PRIMARY KEY, name VARCHAR) WITH (kafka_topic='customers', value_format='json', partitions=1)`)
	mustExec(t, conn, `CREATE TABLE rev AS SELECT region, COUNT(*) AS n FROM orders GROUP BY region`)
	mustExec(t, conn, `CREATE TABLE big AS SELECT region, SUM(amount) AS total FROM orders GROUP BY region`)
	mustExec(t, conn, `INSERT INTO orders (order_id, region, amount) VALUES (1, 'eu', 1.5), (2, 'us', 2)`)
	mustExec(t, conn, `INSERT INTO customers (id, name) VALUES ('c1', 'Ada')`)
	waitQuery(t, conn, `SELECT region, n FROM rev ORDER BY region`, "eu|1\nus|1\n")
	waitQuery(t, conn, `SELECT region, total FROM big ORDER BY region`, "eu|1.5\nus|2\n")
	waitQuery(t, conn, `SELECT id, name FROM customers`, "c1|Ada\n")
	if err := n.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	before := storesOnDisk(t, dir)
	if len(before) < 3 {
		t.Fatalf("stores before the corruption: %v, want customers, rev and big", before)
	}

	for _, seg := range commandSegments(t, dir, "test") {
		flipMiddle(t, seg, 16)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	n2, err := Start(ctx, Options{DataDir: dir, PGAddr: "127.0.0.1:0", HTTPAddr: "off", Cluster: "test", Logger: testLogger()})
	if err == nil {
		_ = n2.Close()
		t.Fatalf("the node started on a command topic that lost commands")
	}
	topic := catalog.CommandTopic("test")
	if msg := strings.ToLower(err.Error()); !strings.Contains(msg, topic) || !strings.Contains(msg, "lost commands") || !strings.Contains(msg, "restore the topic") {
		t.Fatalf("start error %q: want the topic %s, what happened and the remedy", msg, topic)
	}
	after := storesOnDisk(t, dir)
	for v := range before {
		if !after[v] {
			t.Errorf("store %s was deleted by a start on a damaged command topic (before %v, after %v)", v, before, after)
		}
	}
	// A second attempt fails the same way: nothing was "repaired" by
	// the first.
	n3, err := Start(ctx, Options{DataDir: dir, PGAddr: "127.0.0.1:0", HTTPAddr: "off", Cluster: "test", Logger: testLogger()})
	if err == nil {
		_ = n3.Close()
		t.Fatalf("the second start on a damaged command topic succeeded")
	}

	// The documented way to accept the loss: move the mark aside. The
	// node starts on what the topic has left; the relations it lost are
	// gone from the catalog but their state is kept, and DDL works.
	if err := os.Rename(filepath.Join(dir, catalogMarkFile), filepath.Join(dir, catalogMarkFile+".lost")); err != nil {
		t.Fatal(err)
	}
	n4 := startNode(t, dir)
	conn4 := connect(t, n4.PGAddr())
	mustExec(t, conn4, `CREATE STREAM again (id BIGINT KEY, v VARCHAR) WITH (kafka_topic='again', value_format='json', partitions=1)`)
	if _, err := queryText(ctx, conn4, `SELECT * FROM again`, false); err != nil {
		t.Fatalf("the stream created after accepting the loss: %v", err)
	}
	if err := n4.Close(); err != nil {
		t.Fatal(err)
	}
	after = storesOnDisk(t, dir)
	for v := range before {
		if !after[v] {
			t.Errorf("store %s was deleted by a start that accepted the loss of its command (before %v, after %v)", v, before, after)
		}
	}
}

// TestDroppedWhileDown appends a DROP to the command topic of a stopped
// node: the next start replays it to the end and deletes the state of
// the dropped relation, and only that.
func TestDroppedWhileDown(t *testing.T) {
	dir := t.TempDir()
	n := startNode(t, dir)
	conn := connect(t, n.PGAddr())
	mustExec(t, conn, `CREATE TABLE keep (id VARCHAR PRIMARY KEY, v VARCHAR) WITH (kafka_topic='keep', value_format='json', partitions=1)`)
	mustExec(t, conn, `CREATE TABLE gone (id VARCHAR PRIMARY KEY, v VARCHAR) WITH (kafka_topic='gone', value_format='json', partitions=1)`)
	mustExec(t, conn, `INSERT INTO keep (id, v) VALUES ('a', 'x')`)
	mustExec(t, conn, `INSERT INTO gone (id, v) VALUES ('a', 'y')`)
	waitQuery(t, conn, `SELECT v FROM keep`, "x\n")
	waitQuery(t, conn, `SELECT v FROM gone`, "y\n")
	rels := map[string]string{}
	for _, name := range []string{"keep", "gone"} {
		r, ok := n.cat.Lookup(name)
		if !ok {
			t.Fatalf("no relation %s", name)
		}
		rels[name] = r.StoreName()
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}

	// Another node's DROP, as it lands in the topic while this one is
	// down.
	b, err := kafka.StartBroker(kafka.BrokerOptions{DataDir: filepath.Join(dir, "kafka"), Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kafka.NewClient(kafka.ClientOptions{Brokers: b.Addrs(), ClientID: "test-other-node", Logger: testLogger()}, kafka.ProducerOpts()...)
	if err != nil {
		t.Fatal(err)
	}
	val, err := catalog.EncodeCommand(&catalog.Command{Op: catalog.OpDrop, Name: "gone", Node: "other"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: catalog.CommandTopic("test"), Value: val}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	n2 := startNode(t, dir)
	if err := n2.Close(); err != nil {
		t.Fatal(err)
	}
	after := storesOnDisk(t, dir)
	if !after[rels["keep"]] || after[rels["gone"]] {
		t.Fatalf("stores after a start that replayed DROP gone: %v; want %s kept and %s deleted", after, rels["keep"], rels["gone"])
	}
}

// TestCommandTopicRecreatedUnderNode deletes and recreates the command
// topic under a running node, as an operator's mistake or a lost broker
// would: the broker then gives a CREATE's command an offset the node's
// replay is already past. That CREATE must fail (it was not applied),
// not answer success and create nothing, and the relations the node has
// stay.
func TestCommandTopicRecreatedUnderNode(t *testing.T) {
	dir := t.TempDir()
	n := startNode(t, dir)
	conn := connect(t, n.PGAddr())
	mustExec(t, conn, `CREATE STREAM orders (order_id BIGINT KEY, region VARCHAR) WITH (kafka_topic='orders', value_format='json', partitions=1)`)
	mustExec(t, conn, `CREATE TABLE rev AS SELECT region, COUNT(*) AS n FROM orders GROUP BY region`)
	mustExec(t, conn, `INSERT INTO orders (order_id, region) VALUES (1, 'eu')`)
	waitQuery(t, conn, `SELECT region, n FROM rev`, "eu|1\n")

	cl, err := kafka.NewClient(kafka.ClientOptions{Brokers: n.Brokers(), ClientID: "test-admin", Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	topic := catalog.CommandTopic("test")
	if err := kafka.DeleteTopic(ctx, kadmClient(cl), topic); err != nil {
		t.Fatal(err)
	}
	if _, _, err := kafka.EnsureTopic(ctx, kadmClient(cl), topic, 1, nil); err != nil {
		t.Fatal(err)
	}

	// The first attempts may meet the producer's stale metadata of the
	// deleted topic (UNKNOWN_TOPIC_ID), a retryable error; what matters
	// is the outcome once the broker accepts the command.
	var createErr error
	eventually(t, 30*time.Second, func() error {
		_, createErr = conn.Exec(ctx, `CREATE STREAM more (id BIGINT KEY, v VARCHAR) WITH (kafka_topic='more', value_format='json', partitions=1)`)
		if createErr == nil {
			t.Fatal("CREATE STREAM on a recreated command topic answered success")
		}
		if strings.Contains(createErr.Error(), "UNKNOWN_TOPIC") {
			return createErr
		}
		return nil
	})
	var pe *pgconn.PgError
	if !errors.As(createErr, &pe) || pe.Code != "XX001" || !strings.Contains(pe.Message, topic) || !strings.Contains(pe.Hint, "Restore the topic") {
		t.Fatalf("CREATE error %#v: want XX001 naming %s, with the remedy as hint", createErr, topic)
	}
	t.Logf("CREATE: %s (hint: %s)", pe.Message, pe.Hint)
	// The node keeps serving what it has.
	waitQuery(t, conn, `SELECT region, n FROM rev`, "eu|1\n")
	if _, err := queryText(ctx, conn, `SELECT * FROM more`, false); err == nil {
		t.Fatal("the CREATE that failed created the stream")
	}
}

// TestCorruptStateFile damages an sstable of a stopped node's state:
// the node starts (Pebble reads a table only when needed), a read of the
// damaged store is XX001 with a short message, not a crash or a stack
// trace, and the process lives on; the next start refuses the state with
// the remedy, and moving state/ aside rebuilds it from Kafka.
func TestCorruptStateFile(t *testing.T) {
	dir := t.TempDir()
	n := startNode(t, dir)
	conn := connect(t, n.PGAddr())
	mustExec(t, conn, `CREATE TABLE items (id BIGINT PRIMARY KEY, v VARCHAR) WITH (kafka_topic='items', value_format='json', partitions=1)`)
	var b strings.Builder
	b.WriteString(`INSERT INTO items (id, v) VALUES `)
	const rows = 5000
	for i := 0; i < rows; i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "(%d, 'value %d, long enough to fill a few blocks of the table')", i, i)
	}
	mustExec(t, conn, b.String())
	waitQuery(t, conn, `SELECT count(*) FROM items`, fmt.Sprintf("%d\n", rows))
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	// What a node wrote is in Pebble's log until a memtable fills; flush
	// it to an sstable, as a longer-running node would have.
	pdb, err := pebble.Open(filepath.Join(dir, "state"), &pebble.Options{Logger: quietPebble{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := pdb.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := pdb.Close(); err != nil {
		t.Fatal(err)
	}
	ssts, _ := filepath.Glob(filepath.Join(dir, "state", "*.sst"))
	if len(ssts) == 0 {
		t.Fatal("no sstable in state/")
	}
	for _, f := range ssts {
		flipMiddle(t, f, 16)
	}

	n2 := startNode(t, dir)
	conn2 := connect(t, n2.PGAddr())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var pe *pgconn.PgError
	eventually(t, 30*time.Second, func() error {
		_, err := queryText(ctx, conn2, `SELECT count(*), max(v) FROM items`, false)
		if err == nil {
			return errors.New("the read of a damaged store succeeded")
		}
		if !errors.As(err, &pe) || pe.Code != "XX001" {
			return fmt.Errorf("read: %v, want XX001", err)
		}
		return nil
	})
	if len(pe.Message) > 200 || strings.Contains(pe.Message, "goroutine") || strings.Contains(pe.Message, dir) {
		t.Fatalf("client message %q: want a short one, without paths or stacks", pe.Message)
	}
	t.Logf("read: %s (hint: %s)", pe.Message, pe.Hint)
	// The process lives: the session still answers.
	if got, err := queryText(ctx, conn2, `SELECT 1`, false); err != nil || got != "1\n" {
		t.Fatalf("SELECT 1 after the damage: %q, %v", got, err)
	}
	if err := n2.Close(); err != nil {
		t.Logf("close: %v", err)
	}

	_, err = Start(ctx, Options{DataDir: dir, PGAddr: "127.0.0.1:0", HTTPAddr: "off", Cluster: "test", Logger: testLogger()})
	if err == nil || !strings.Contains(err.Error(), "damaged") || !strings.Contains(err.Error(), "aside") {
		t.Fatalf("start on damaged state: %v, want the damage and the remedy", err)
	}
	t.Logf("start: %v", err)

	// The remedy: move state/ aside; the table is re-read from its topic.
	if err := os.Rename(filepath.Join(dir, "state"), filepath.Join(dir, "state.bad")); err != nil {
		t.Fatal(err)
	}
	n3 := startNode(t, dir)
	conn3 := connect(t, n3.PGAddr())
	waitQuery(t, conn3, `SELECT count(*) FROM items`, fmt.Sprintf("%d\n", rows))
}

// quietPebble discards the log of the test's own Pebble.
type quietPebble struct{}

func (quietPebble) Infof(string, ...any)      {}
func (quietPebble) Errorf(string, ...any)     {}
func (quietPebble) Fatalf(f string, a ...any) { panic(fmt.Sprintf(f, a...)) }

// TestCorruptCommandTopicWithoutMark is the same damage on a data dir
// without the mark (written by a basin before it kept one): the node
// cannot tell the topic lost commands and starts on what is left, but
// it deletes no state, and a CREATE the broker takes but the replay
// cannot apply (the broker fails fetches of the truncated partition)
// fails instead of answering success and creating nothing.
func TestCorruptCommandTopicWithoutMark(t *testing.T) {
	dir := t.TempDir()
	n := startNode(t, dir)
	conn := connect(t, n.PGAddr())
	mustExec(t, conn, `CREATE STREAM orders (order_id BIGINT KEY, region VARCHAR, amount DOUBLE) WITH (kafka_topic='orders', value_format='json', partitions=1)`)
	mustExec(t, conn, `CREATE TABLE customers (id VARCHAR PRIMARY KEY, name VARCHAR) WITH (kafka_topic='customers', value_format='json', partitions=1)`)
	mustExec(t, conn, `CREATE TABLE rev AS SELECT region, COUNT(*) AS n FROM orders GROUP BY region`)
	mustExec(t, conn, `INSERT INTO orders (order_id, region, amount) VALUES (1, 'eu', 1.5)`)
	waitQuery(t, conn, `SELECT region, n FROM rev`, "eu|1\n")
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	before := storesOnDisk(t, dir)
	for _, seg := range commandSegments(t, dir, "test") {
		flipMiddle(t, seg, 16)
	}
	if err := os.Remove(filepath.Join(dir, catalogMarkFile)); err != nil {
		t.Fatal(err)
	}

	n2 := startNode(t, dir)
	conn2 := connect(t, n2.PGAddr())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, err := conn2.Exec(ctx, `CREATE STREAM more (id BIGINT KEY, v VARCHAR) WITH (kafka_topic='more', value_format='json', partitions=1)`)
	if err == nil {
		if _, qerr := queryText(ctx, conn2, `SELECT * FROM more`, false); qerr != nil {
			t.Fatalf("CREATE STREAM answered success but created nothing: %v", qerr)
		}
	} else {
		t.Logf("create: %v", err)
	}
	if err := n2.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	after := storesOnDisk(t, dir)
	for v := range before {
		if !after[v] {
			t.Errorf("store %s was deleted by a start on a damaged command topic (before %v, after %v)", v, before, after)
		}
	}
}
