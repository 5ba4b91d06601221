package node

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/basindb/basin/kafka"
)

// TestTruncatedSourceStopsView deletes a view's source topic and creates
// it again with fewer records than the views have applied, as a broker
// that truncated a corrupt segment or lost an unclean leader's tail
// leaves it. The views must not read the new records from offset 0 and
// count again (franz-go's default on OFFSET_OUT_OF_RANGE): each task
// stops with an error naming the topic, partition, the view's offset and
// the new end, shown by SHOW TASKS and SHOW QUERIES, and the rows stay
// what they were.
func TestTruncatedSourceStopsView(t *testing.T) {
	n := startNode(t, t.TempDir())
	conn := connect(t, n.PGAddr())
	mustExec(t, conn, `CREATE STREAM src (k VARCHAR KEY, v BIGINT) WITH (kafka_topic='src', value_format='json', partitions=1)`)
	// by_key groups by the source key (no re-keying); by_v re-keys.
	mustExec(t, conn, `CREATE TABLE by_key AS SELECT k, COUNT(*) AS n FROM src GROUP BY k`)
	mustExec(t, conn, `CREATE TABLE by_v AS SELECT v, COUNT(*) AS n FROM src GROUP BY v`)
	var kvs [][2]string
	for i := range 5 {
		kvs = append(kvs, [2]string{"a", fmt.Sprintf(`{"v":%d}`, i%2)})
	}
	produceRaw(t, n.Brokers(), "src", kvs...)
	waitQuery(t, conn, `SELECT k, n FROM by_key`, "a|5\n")
	waitQuery(t, conn, `SELECT v, n FROM by_v ORDER BY v`, "0|3\n1|2\n")

	recreate(t, n.Brokers(), "src", [2]string{"a", `{"v":0}`}, [2]string{"a", `{"v":1}`})

	// Each view's task stops, saying why. (by_v's re-keying task cannot
	// tell: a deleted topic's committed offsets go with it, and it reads
	// the new topic from 0; the view task drops what its position has
	// seen, and compares its position with the source's end.)
	waitStopped(t, conn, map[string]string{"by_key": "src", "by_v": "src"}, 5, "2")
	// Nothing was counted twice, and the rows do not pass for current.
	waitQuery(t, conn, `SELECT k, n, _offset_lag > 0 FROM by_key`, "a|5|true\n")
	waitQuery(t, conn, `SELECT v, n, _offset_lag > 0 FROM by_v ORDER BY v`, "0|3|true\n1|2|true\n")
}

// TestLargeRecordLogged produces a record that its source topic takes
// only compressed (a 1.5 MiB string, under the topic's max.message.bytes
// once gzipped): the changelog record of a view that copies it, and the
// repartition record of a view that re-keys by it, are larger than any
// internal topic takes. Each view logs the record to the processing log,
// naming why, and applies the records after it; its lag comes back to 0
// only once they are.
func TestLargeRecordLogged(t *testing.T) {
	n := startNode(t, t.TempDir())
	conn := connect(t, n.PGAddr())
	mustExec(t, conn, `CREATE STREAM src (k VARCHAR KEY, s VARCHAR) WITH (kafka_topic='src', value_format='json', partitions=1)`)
	mustExec(t, conn, `CREATE TABLE wide AS SELECT k, s FROM src`)
	mustExec(t, conn, `CREATE TABLE by_s AS SELECT s, COUNT(*) AS n FROM src GROUP BY s`)

	cl, err := kafka.NewClient(kafka.ClientOptions{Brokers: n.Brokers(), Logger: testLogger()}, append(kafka.ProducerOpts(),
		kgo.ProducerBatchCompression(kgo.GzipCompression()), kgo.ProducerBatchMaxBytes(16<<20))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	big := fmt.Sprintf(`{"s":"%s"}`, strings.Repeat("x", 3<<19))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i, v := range []string{`{"s":"a"}`, big, `{"s":"b"}`} {
		rec := &kgo.Record{Topic: "src", Partition: 0, Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(v)}
		if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
			t.Fatalf("producing record %d: %v", i, err)
		}
	}

	waitQuery(t, conn, `SELECT k, s FROM wide ORDER BY k`, "k0|a\nk2|b\n")
	waitQuery(t, conn, `SELECT s, n FROM by_s ORDER BY s`, "a|1\nb|1\n")
	waitQuery(t, conn, `SELECT query_id LIKE 'CTAS_WIDE_%' OR query_id LIKE 'CTAS_BY_S_%', source_offset, record_key,
		error LIKE '%max.message.bytes%' FROM basin_processing_log ORDER BY query_id`,
		"true|1|k1|true\ntrue|1|k1|true\n")
	waitQuery(t, conn, `SELECT _offset_lag FROM wide WHERE k = 'k2'`, "0\n")
	waitQuery(t, conn, `SELECT _offset_lag FROM by_s WHERE s = 'b'`, "0\n")
}

// TestInternalTopicsTakeSourceLimit creates a view over a topic that
// takes records of up to 4 MiB: the view's changelog and repartition
// topics take as much, and a 1.5 MiB record, too large for Kafka's
// default, reaches the view.
func TestInternalTopicsTakeSourceLimit(t *testing.T) {
	n := startNode(t, t.TempDir())
	conn := connect(t, n.PGAddr())
	cl, err := kafka.NewClient(kafka.ClientOptions{Brokers: n.Brokers(), Logger: testLogger()}, append(kafka.ProducerOpts(),
		kgo.ProducerBatchMaxBytes(16<<20))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadmClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	limit := "4194304"
	if _, _, err := kafka.EnsureTopic(ctx, adm, "roomy", 1, map[string]*string{"max.message.bytes": &limit}); err != nil {
		t.Fatal(err)
	}
	mustExec(t, conn, `CREATE STREAM roomy (k VARCHAR KEY, s VARCHAR) WITH (kafka_topic='roomy', value_format='json')`)
	mustExec(t, conn, `CREATE TABLE wide AS SELECT k, s FROM roomy`)
	topics, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	internal := 0
	for _, topic := range topics.Names() {
		if !strings.Contains(topic, "-wide-") {
			continue
		}
		internal++
		if got, err := kafka.MaxMessageBytes(ctx, adm, topic); err != nil || got != 4194304 {
			t.Errorf("max.message.bytes of %s = %d, %v; want 4194304, the source's", topic, got, err)
		}
	}
	if internal != 2 {
		t.Errorf("found %d internal topics of wide in %v, want 2 (changelog and repartition)", internal, topics.Names())
	}
	rec := &kgo.Record{Topic: "roomy", Partition: 0, Key: []byte("k"), Value: []byte(fmt.Sprintf(`{"s":"%s"}`, strings.Repeat("x", 3<<19)))}
	if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
		t.Fatal(err)
	}
	waitQuery(t, conn, `SELECT k, length(s) FROM wide`, fmt.Sprintf("k|%d\n", 3<<19))
}

// TestBadTextAndNullKeyLogged writes a table's topic records that
// today's basin would change or keep silently: a null key (a row no key
// finds), a string that is not valid UTF-8 and one with a lone UTF-16
// surrogate (both would read back with U+FFFD in place of what was
// sent). Each is skipped into the processing log, saying why; a NUL
// character is kept, as the documented rule says.
func TestBadTextAndNullKeyLogged(t *testing.T) {
	n := startNode(t, t.TempDir())
	conn := connect(t, n.PGAddr())
	mustExec(t, conn, `CREATE TABLE users (id VARCHAR PRIMARY KEY, name VARCHAR) WITH (kafka_topic='users', value_format='json', partitions=1)`)
	mustExec(t, conn, `CREATE TABLE names AS SELECT id, name FROM users`)
	cl, err := kafka.NewClient(kafka.ClientOptions{Brokers: n.Brokers(), Logger: testLogger()}, kafka.ProducerOpts()...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	recs := []*kgo.Record{
		{Key: nil, Value: []byte(`{"name":"ghost"}`)},
		{Key: []byte("u1"), Value: []byte(`{"name":"ok"}`)},
		{Key: []byte("u2"), Value: []byte("{\"name\":\"bad\xff\"}")},
		{Key: []byte("u3"), Value: []byte(`{"name":"half \ud800 a pair"}`)},
		{Key: []byte("u4"), Value: []byte(`{"name":"nul\u0000here"}`)},
	}
	for _, r := range recs {
		r.Topic, r.Partition = "users", 0
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	waitQuery(t, conn, `SELECT id, length(name) FROM users ORDER BY id`, "u1|2\nu4|8\n")
	waitQuery(t, conn, `SELECT id, length(name) FROM names ORDER BY id`, "u1|2\nu4|8\n")
	// Each record is logged twice: by the table and by the view.
	waitQuery(t, conn, `SELECT DISTINCT source_offset, error FROM basin_processing_log ORDER BY source_offset`,
		"0|record has a NULL key, and table users keeps a row per key\n"+
			"2|field \"name\": string \"bad\\xff\" is not valid UTF-8\n"+
			"3|field \"name\": string \"half \\\\ud800 a pair\" has a \\u escape that is not a character (a lone UTF-16 surrogate)\n")
	waitQuery(t, conn, `SELECT count(*) FROM basin_processing_log`, "6\n")
}

// TestLargeMisplacedRecordLogged writes a table's topic a record in the
// wrong partition (its producer hashes keys another way) that its topic
// takes only compressed: forwarded uncompressed to its key's partition it
// is larger than the forwarding topic takes. It is logged to the
// processing log, and the records after it are applied.
func TestLargeMisplacedRecordLogged(t *testing.T) {
	n := startNode(t, t.TempDir())
	conn := connect(t, n.PGAddr())
	mustExec(t, conn, `CREATE TABLE items (id VARCHAR PRIMARY KEY, s VARCHAR) WITH (kafka_topic='items', value_format='json', partitions=2)`)
	cl, err := kafka.NewClient(kafka.ClientOptions{Brokers: n.Brokers(), Logger: testLogger()}, append(kafka.ProducerOpts(),
		kgo.ProducerBatchCompression(kgo.GzipCompression()), kgo.ProducerBatchMaxBytes(16<<20))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// keys of partition 1 (murmur2), written to partition 0
	var keys []string
	for i := 0; len(keys) < 2; i++ {
		if k := fmt.Sprintf("i%d", i); kafka.Partition([]byte(k), 2) == 1 {
			keys = append(keys, k)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	big := fmt.Sprintf(`{"s":"%s"}`, strings.Repeat("x", 3<<19))
	for i, v := range []string{big, `{"s":"small"}`} {
		rec := &kgo.Record{Topic: "items", Partition: 0, Key: []byte(keys[i]), Value: []byte(v)}
		if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	waitQuery(t, conn, `SELECT id, s FROM items`, keys[1]+"|small\n")
	waitQuery(t, conn, `SELECT source_partition, source_offset, record_key, error LIKE '%max.message.bytes%' FROM basin_processing_log`,
		"0|0|"+keys[0]+"|true\n")
}

// lineWith returns the first line of text that holds sub, "" if none
// does.
func lineWith(text, sub string) string {
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}

// lineMatching returns the first line of text that matches the regular
// expression re, "" if none does.
func lineMatching(text, re string) string {
	r := regexp.MustCompile(re)
	for _, l := range strings.Split(text, "\n") {
		if r.MatchString(l) {
			return l
		}
	}
	return ""
}
