package node

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/basindb/basin/kafka"
)

func mustExec(t *testing.T, conn *pgx.Conn, q string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := conn.Exec(ctx, q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// TestRestart writes, stops the node, starts it again on the same data
// dir and expects the same answers, with new inserts still flowing.
func TestRestart(t *testing.T) {
	dir := t.TempDir()
	n := startNode(t, dir)
	conn := connect(t, n.PGAddr())
	mustExec(t, conn, `CREATE STREAM orders (order_id BIGINT KEY, region VARCHAR, amount DOUBLE) WITH (kafka_topic='orders', value_format='json', partitions=2)`)
	mustExec(t, conn, `CREATE TABLE customers (id VARCHAR PRIMARY KEY, name VARCHAR) WITH (kafka_topic='customers', value_format='json')`)
	mustExec(t, conn, `CREATE TABLE rev AS SELECT region, COUNT(*) AS n, SUM(amount) AS total FROM orders GROUP BY region`)
	mustExec(t, conn, `INSERT INTO orders (order_id, region, amount) VALUES (1, 'eu', 1.5), (2, 'us', 2), (3, 'eu', 3)`)
	mustExec(t, conn, `INSERT INTO customers (id, name) VALUES ('c1', 'Ada'), ('c2', 'Grace')`)
	const q = `SELECT region, n, total FROM rev ORDER BY region`
	want := "eu|2|4.5\nus|1|2\n"
	waitQuery(t, conn, q, want)
	waitQuery(t, conn, `SELECT id, name FROM customers ORDER BY id`, "c1|Ada\nc2|Grace\n")
	if err := n.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}

	n2 := startNode(t, dir)
	conn2 := connect(t, n2.PGAddr())
	waitQuery(t, conn2, q, want)
	waitQuery(t, conn2, `SELECT id, name FROM customers ORDER BY id`, "c1|Ada\nc2|Grace\n")
	mustExec(t, conn2, `INSERT INTO orders (order_id, region, amount) VALUES (4, 'us', 10)`)
	mustExec(t, conn2, `INSERT INTO customers (id, name) VALUES ('c1', 'Ada L.')`)
	waitQuery(t, conn2, q, "eu|2|4.5\nus|2|12\n")
	waitQuery(t, conn2, `SELECT name FROM customers WHERE id = 'c1'`, "Ada L.\n")
	got, err := queryText(context.Background(), conn2, `SHOW TABLES`, false)
	if err != nil || !strings.Contains(got, "rev|VIEW") || !strings.Contains(got, "customers|TABLE") {
		t.Fatalf("SHOW TABLES after restart = %q, %v", got, err)
	}
}

// TestDataDirInUse starts a second node on a data dir already in use.
func TestDataDirInUse(t *testing.T) {
	dir := t.TempDir()
	startNode(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n, err := Start(ctx, Options{DataDir: dir, PGAddr: "127.0.0.1:0", HTTPAddr: "off", Logger: testLogger()})
	if err == nil {
		n.Close()
		t.Fatal("second node on the same data dir started")
	}
	if !strings.Contains(err.Error(), "in use by another basin process") {
		t.Fatalf("error = %v", err)
	}
}

// TestBadRecords sends records that are not JSON or do not fit the schema
// straight to the topic: they are skipped, counted and logged, and the
// query goes on.
func TestBadRecords(t *testing.T) {
	n := startNode(t, t.TempDir())
	conn := connect(t, n.PGAddr())
	mustExec(t, conn, `CREATE STREAM clicks (user_id VARCHAR KEY, page VARCHAR, ms BIGINT) WITH (kafka_topic='clicks', value_format='json', partitions=1)`)
	mustExec(t, conn, `CREATE TABLE by_page AS SELECT page, COUNT(*) AS n, SUM(ms) AS ms FROM clicks GROUP BY page`)
	produceRaw(t, n.Brokers(), "clicks",
		[2]string{"u1", `{"page":"home","ms":10}`},
		[2]string{"u2", `not json at all`},
		[2]string{"u3", `{"page":"home","ms":"eleven"}`},
		[2]string{"u4", `[1,2,3]`},
		[2]string{"u5", `{"page":"home","ms":5}`},
	)
	waitQuery(t, conn, `SELECT page, n, ms FROM by_page`, "home|2|15\n")
	waitQuery(t, conn, `SELECT query_id LIKE 'CTAS_BY_PAGE_%', source_offset FROM basin_processing_log ORDER BY source_offset`,
		"true|1\ntrue|2\ntrue|3\n")
	got, err := queryText(context.Background(), conn, `SHOW QUERIES`, true)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got, "|by_page|clicks|RUNNING|1|3|") {
		t.Fatalf("SHOW QUERIES does not count 3 errors for by_page:\n%s", got)
	}
	// The node is still healthy: new records still flow.
	mustExec(t, conn, `INSERT INTO clicks (user_id, page, ms) VALUES ('u6', 'home', 1)`)
	waitQuery(t, conn, `SELECT n, ms FROM by_page WHERE page = 'home'`, "3|16\n")
}

// TestSQLErrors checks SQLSTATEs and positions, and that the session stays
// usable after each error.
func TestSQLErrors(t *testing.T) {
	n := startNode(t, t.TempDir())
	conn := connect(t, n.PGAddr())
	mustExec(t, conn, `CREATE STREAM s (k BIGINT KEY, v VARCHAR) WITH (kafka_topic='s', value_format='json')`)
	mustExec(t, conn, `CREATE TABLE v AS SELECT v, COUNT(*) AS n FROM s GROUP BY v`)
	for _, c := range []struct {
		q    string
		code string
		pos  int32
	}{
		{"SELEC 1", "42601", 1},
		{"SELECT * FROM nope", "42P01", 15},
		{"SELECT nope FROM v", "42703", 8},
		{"DROP STREAM s", "2BP01", 0},
		{"SELECT 1/0", "22012", 0},
	} {
		_, err := conn.Exec(context.Background(), c.q)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) {
			t.Fatalf("%s: error %v is not a Postgres error", c.q, err)
		}
		if pe.Code != c.code || pe.Position != c.pos {
			t.Errorf("%s: got %s at %d (%s), want %s at %d", c.q, pe.Code, pe.Position, pe.Message, c.code, c.pos)
		}
		if c.code == "2BP01" && !strings.Contains(pe.Detail+pe.Message+pe.Hint, "v") {
			t.Errorf("DROP error does not name the view: %+v", pe)
		}
		got, err := queryText(context.Background(), conn, "SELECT 1", false)
		if err != nil || got != "1\n" {
			t.Fatalf("session unusable after %q: %q %v", c.q, got, err)
		}
	}
}

func waitQuery(t *testing.T, c *pgx.Conn, q, want string) {
	t.Helper()
	waitQueryFor(t, c, 20*time.Second, q, want)
}

// produceRaw writes records (key, value) to partition 0 of topic, as any
// Kafka producer would.
func produceRaw(t *testing.T, brokers []string, topic string, kvs ...[2]string) {
	t.Helper()
	cl, err := kafka.NewClient(kafka.ClientOptions{Brokers: brokers, Logger: testLogger()}, kafka.ProducerOpts()...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for _, kv := range kvs {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: 0, Key: []byte(kv[0]), Value: []byte(kv[1])})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// TestStreamScanAfterRetention reads a stream whose records retention has
// deleted: the scan ends at once instead of waiting for records that are
// gone.
func TestStreamScanAfterRetention(t *testing.T) {
	n := startNode(t, t.TempDir())
	conn := connect(t, n.PGAddr())
	mustExec(t, conn, `CREATE STREAM s (k BIGINT KEY, v VARCHAR) WITH (partitions = 2)`)
	mustExec(t, conn, `INSERT INTO s VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd')`)
	waitQuery(t, conn, `SELECT count(*) FROM s`, "4\n")

	cl, err := kafka.NewClient(kafka.ClientOptions{Brokers: n.Brokers(), Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadmClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ends, err := adm.ListEndOffsets(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	// Delete the records of partition 0 only: partition 1 still has its own.
	var del kadm.Offsets
	ends.Each(func(o kadm.ListedOffset) {
		if o.Partition == 0 {
			del.Add(kadm.Offset{Topic: o.Topic, Partition: o.Partition, At: o.Offset})
		}
	})
	resp, err := adm.DeleteRecords(ctx, del)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	qctx, qcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer qcancel()
	got, err := queryText(qctx, conn, `SELECT count(*) > 0, count(*) < 4 FROM s`, false)
	if err != nil || got != "true|true\n" {
		t.Fatalf("scan after retention: %q, %v", got, err)
	}
}
