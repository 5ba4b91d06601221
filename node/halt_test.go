package node

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/basindb/basin/kafka"
)

// TestLostInputWaitsForOperator: a view or table whose source lost
// records it had applied stops, and stays stopped once producers have
// written past its offset again, across a restart, until the operator
// chooses. Before, its task tried again every few seconds and, once the
// partition's end passed its offset, resumed there by itself: the
// records written in the gap were never applied, and the view read as
// current. RESUME then continues each task where the topic ended when
// the loss was found, applying every record written since, once (a
// restart after it does not rewind again); a view that re-keys refuses
// RESUME, and DROP rebuilds it.
func TestLostInputWaitsForOperator(t *testing.T) {
	dir := t.TempDir()
	n := startNode(t, dir)
	conn := connect(t, n.PGAddr())
	mustExec(t, conn, `CREATE STREAM src (k VARCHAR KEY, v BIGINT) WITH (kafka_topic='src', value_format='json', partitions=1)`)
	mustExec(t, conn, `CREATE TABLE tsrc (k VARCHAR PRIMARY KEY, v BIGINT) WITH (kafka_topic='tsrc', value_format='json', partitions=1)`)
	mustExec(t, conn, `CREATE TABLE by_key AS SELECT k, COUNT(*) AS n, SUM(v) AS s FROM src GROUP BY k`)
	mustExec(t, conn, `CREATE TABLE by_v AS SELECT v, COUNT(*) AS n FROM src GROUP BY v`)
	var kvs, tkvs [][2]string
	for i := range 5 {
		kvs = append(kvs, [2]string{"a", fmt.Sprintf(`{"v":%d}`, i%2)})
		tkvs = append(tkvs, [2]string{fmt.Sprintf("k%d", i), fmt.Sprintf(`{"v":%d}`, i)})
	}
	produceRaw(t, n.Brokers(), "src", kvs...)
	produceRaw(t, n.Brokers(), "tsrc", tkvs...)
	waitQuery(t, conn, `SELECT k, n, s FROM by_key`, "a|5|2\n")
	waitQuery(t, conn, `SELECT v, n FROM by_v ORDER BY v`, "0|3\n1|2\n")
	waitQuery(t, conn, `SELECT count(*) FROM tsrc`, "5\n")

	// Each topic loses its records and gets 2 new ones: the end (2) is
	// below what every task has applied (5).
	recreate(t, n.Brokers(), "src", [2]string{"a", `{"v":10}`}, [2]string{"a", `{"v":10}`})
	recreate(t, n.Brokers(), "tsrc", [2]string{"k0", `{"v":100}`}, [2]string{"k1", `{"v":101}`})
	waitStopped(t, conn, map[string]string{"by_key": "src", "by_v": "src", "tsrc": "tsrc"}, 5, "2")

	// Producers write on, past every task's offset.
	var more, tmore [][2]string
	for i := range 5 {
		more = append(more, [2]string{"a", `{"v":100}`})
		tmore = append(tmore, [2]string{fmt.Sprintf("k%d", 5+i), fmt.Sprintf(`{"v":%d}`, 5+i)})
	}
	produceRaw(t, n.Brokers(), "src", more...)
	produceRaw(t, n.Brokers(), "tsrc", tmore...)

	// A restart runs every task afresh, with the topics' ends (7) past
	// the tasks' offsets: they stay stopped, the rows as they were and
	// not current.
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	n = startNode(t, dir)
	conn = connect(t, n.PGAddr())
	waitStopped(t, conn, map[string]string{"by_key": "src", "by_v": "src", "tsrc": "tsrc"}, 5, "2")
	waitQuery(t, conn, `SELECT k, n, s, _offset_lag > 0 FROM by_key`, "a|5|2|true\n")
	waitQuery(t, conn, `SELECT count(*), max(_offset_lag) > 0 FROM tsrc`, "5|true\n")

	// RESUME of a view that re-keys is refused, naming the remedy.
	byV := queryID(t, conn, "by_v")
	_, err := conn.Exec(context.Background(), "RESUME "+byV)
	if pe, ok := err.(*pgconn.PgError); !ok || pe.Code != "0A000" || !strings.Contains(pe.Hint, "DROP TABLE by_v") {
		t.Fatalf("RESUME %s: %v, want 0A000 with a hint to rebuild", byV, err)
	}
	// RESUME of a query that runs is refused.
	if _, err := conn.Exec(context.Background(), "RESUME no_such_query"); err == nil || !strings.Contains(err.Error(), "42704") {
		t.Fatalf("RESUME no_such_query: %v, want 42704", err)
	}

	// RESUME continues by_key at offset 2: the 5 records written since
	// are applied, the 2 below it are taken for those it had applied.
	byKey := queryID(t, conn, "by_key")
	notices := execNotices(t, conn, "RESUME "+byKey)
	if !strings.Contains(notices, "continues topic src partition 0 at offset 2") || !strings.Contains(notices, "the 3 records it had applied at offsets 2 to 4") {
		t.Fatalf("RESUME %s notices: %q", byKey, notices)
	}
	waitQuery(t, conn, `SELECT k, n, s, _offset_lag FROM by_key`, "a|10|502|0\n")
	tbl := queryID(t, conn, "tsrc")
	execNotices(t, conn, "RESUME "+tbl)
	waitQuery(t, conn, `SELECT k, v FROM tsrc ORDER BY k`, "k0|0\nk1|1\nk2|2\nk3|3\nk4|4\nk5|5\nk6|6\nk7|7\nk8|8\nk9|9\n")
	waitQuery(t, conn, `SELECT max(_offset_lag) FROM tsrc`, "0\n")
	if _, err := conn.Exec(context.Background(), "RESUME "+byKey); err == nil || !strings.Contains(err.Error(), "55000") {
		t.Fatalf("RESUME of a resumed query: %v, want 55000", err)
	}

	// Once resumed, a restart reads on from the checkpoint: nothing is
	// applied twice.
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	n = startNode(t, dir)
	conn = connect(t, n.PGAddr())
	produceRaw(t, n.Brokers(), "src", [2]string{"a", `{"v":1000}`})
	produceRaw(t, n.Brokers(), "tsrc", [2]string{"k0", `{"v":1000}`})
	waitQuery(t, conn, `SELECT k, n, s, _offset_lag FROM by_key`, "a|11|1502|0\n")
	waitQuery(t, conn, `SELECT k, v FROM tsrc WHERE k = 'k0'`, "k0|1000\n")

	// by_v, still stopped, is rebuilt.
	mustExec(t, conn, `DROP TABLE by_v`)
	mustExec(t, conn, `CREATE TABLE by_v AS SELECT v, COUNT(*) AS n FROM src GROUP BY v`)
	waitQuery(t, conn, `SELECT v, n FROM by_v ORDER BY v`, "10|2\n100|5\n1000|1\n")
}

// recreate deletes topic and creates it again with one partition
// holding kvs.
func recreate(t *testing.T, brokers []string, topic string, kvs ...[2]string) {
	t.Helper()
	cl, err := kafka.NewClient(kafka.ClientOptions{Brokers: brokers, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadmClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := kafka.DeleteTopic(ctx, adm, topic); err != nil {
		t.Fatal(err)
	}
	if _, _, err := kafka.EnsureTopic(ctx, adm, topic, 1, nil); err != nil {
		t.Fatal(err)
	}
	produceRaw(t, brokers, topic, kvs...)
}

// waitStopped waits until the task of partition 0 of each relation
// (name -> source topic) reports, in SHOW TASKS, that its source ended
// below what it had applied (offset applied), and SHOW QUERIES says
// ERROR; when end is not "", both name it as the partition's end.
func waitStopped(t *testing.T, conn *pgx.Conn, rels map[string]string, applied int, end string) {
	t.Helper()
	eventually(t, 30*time.Second, func() error {
		qctx, qcancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer qcancel()
		got, err := queryText(qctx, conn, `SHOW TASKS`, false)
		if err != nil {
			return err
		}
		for rel, topic := range rels {
			line := lineMatching(got, `^`+regexp.QuoteMeta(rel)+`@\d+/0\|`)
			if !strings.Contains(line, "|ERROR|") || !strings.Contains(line, "topic "+topic+" partition 0") ||
				!strings.Contains(line, fmt.Sprintf("%s has applied it up to offset %d", rel, applied)) ||
				end != "" && !strings.Contains(line, "ends at offset "+end) {
				return fmt.Errorf("the task of %s does not report its lost input:\n%s", rel, got)
			}
		}
		queries, err := queryText(qctx, conn, `SHOW QUERIES`, false)
		if err != nil {
			return err
		}
		for rel := range rels {
			if line := lineWith(queries, "|"+rel+"|"); !strings.Contains(line, "|ERROR|") || end != "" && !strings.Contains(line, "ends at offset "+end) {
				return fmt.Errorf("SHOW QUERIES does not report %s stopped:\n%s", rel, queries)
			}
		}
		return nil
	})
}

// queryID returns the id SHOW QUERIES gives the query of sink.
func queryID(t *testing.T, conn *pgx.Conn, sink string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	got, err := queryText(ctx, conn, `SHOW QUERIES`, false)
	if err != nil {
		t.Fatal(err)
	}
	line := lineWith(got, "|"+sink+"|")
	if line == "" {
		t.Fatalf("SHOW QUERIES has no query of %s:\n%s", sink, got)
	}
	return strings.Split(line, "|")[0]
}

// execNotices runs q on a connection of its own to conn's server and
// returns the NOTICEs it got, one per line.
func execNotices(t *testing.T, conn *pgx.Conn, q string) string {
	t.Helper()
	var notices []string
	c := connect(t, fmt.Sprintf("%s:%d", conn.Config().Host, conn.Config().Port), func(cfg *pgx.ConnConfig) {
		cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) { notices = append(notices, n.Message) }
	})
	defer c.Close(context.Background())
	if _, err := c.Exec(context.Background(), q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return strings.Join(notices, "\n")
}

// TestCorruptSourceSegmentWaitsForOperator is the attack as the review
// ran it: bytes flipped in the middle of a source topic's segment while
// the node is down. The embedded broker truncates the partition at the
// damaged batch as it starts, so the view has applied records the
// topic no longer holds. It must stop rather than read from offset 0
// and count again, stay stopped once producers have written past its
// offset, and, resumed, apply every record written since the loss.
func TestCorruptSourceSegmentWaitsForOperator(t *testing.T) {
	dir := t.TempDir()
	n := startNode(t, dir)
	conn := connect(t, n.PGAddr())
	mustExec(t, conn, `CREATE STREAM src (k VARCHAR KEY, v BIGINT) WITH (kafka_topic='src', value_format='json', partitions=1)`)
	mustExec(t, conn, `CREATE TABLE by_key AS SELECT k, COUNT(*) AS n FROM src GROUP BY k`)
	const before = 40
	for range before { // a batch each, so the damage cuts the log in its middle
		produceRaw(t, n.Brokers(), "src", [2]string{"a", `{"v":1}`})
	}
	waitQuery(t, conn, `SELECT k, n FROM by_key`, fmt.Sprintf("a|%d\n", before))
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	segs, err := filepath.Glob(filepath.Join(dir, "kafka", "partitions", "src-0", "*.dat"))
	if err != nil || len(segs) == 0 {
		t.Fatalf("no segment of src under %s: %v", dir, err)
	}
	for _, seg := range segs {
		flipMiddle(t, seg, 16)
	}

	n = startNode(t, dir)
	conn = connect(t, n.PGAddr())
	waitStopped(t, conn, map[string]string{"by_key": "src"}, before, "")
	const after = 60 // more than the broker cut: the end passes the view's offset
	for range after / 10 {
		var kvs [][2]string
		for range 10 {
			kvs = append(kvs, [2]string{"a", `{"v":1}`})
		}
		produceRaw(t, n.Brokers(), "src", kvs...)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	n = startNode(t, dir)
	conn = connect(t, n.PGAddr())
	waitStopped(t, conn, map[string]string{"by_key": "src"}, before, "")
	waitQuery(t, conn, `SELECT k, n, _offset_lag > 0 FROM by_key`, fmt.Sprintf("a|%d|true\n", before))

	execNotices(t, conn, "RESUME "+queryID(t, conn, "by_key"))
	waitQuery(t, conn, `SELECT k, n, _offset_lag FROM by_key`, fmt.Sprintf("a|%d|0\n", before+after))
}
