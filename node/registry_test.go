package node

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bufbuild/protocompile"
	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/basindb/basin/internal/poll"
	"github.com/basindb/basin/internal/srfake"
	"github.com/basindb/basin/kafka"
)

// TestAvroWithSchemaRegistry declares a stream over an Avro topic with no
// columns: they come from the latest schema registered for the topic's
// values. Records written by another producer under two versions of the
// schema (the second adds an optional field) both read; a view over the
// stream and a derived Avro stream run, and the derived topic is read
// back by a registry-aware consumer. While the registry is down, records
// of a schema basin has not seen wait (the query shows the error in SHOW
// QUERIES) and none is lost; a record naming a schema id the registry
// does not have goes to the processing log.
func TestAvroWithSchemaRegistry(t *testing.T) {
	reg, n, c, cl := startRegistryNode(t)
	ctx := c.ctx
	v1 := `{"type":"record","name":"Order","namespace":"shop","fields":[
		{"name":"qty","type":"int"},
		{"name":"customer","type":"string"},
		{"name":"note","type":["null","string"],"default":null},
		{"name":"placed","type":{"type":"long","logicalType":"timestamp-millis"}}]}`
	v2 := `{"type":"record","name":"Order","namespace":"shop","fields":[
		{"name":"qty","type":"int"},
		{"name":"customer","type":"string"},
		{"name":"note","type":["null","string"],"default":null},
		{"name":"placed","type":{"type":"long","logicalType":"timestamp-millis"}},
		{"name":"coupon","type":["null","string"],"default":null}]}`
	register := func(text string) int {
		t.Helper()
		ss, err := cl.CreateSchema(ctx, "orders-value", sr.Schema{Schema: text})
		if err != nil {
			t.Fatal(err)
		}
		return ss.ID
	}
	frame := func(id int, text string, rec map[string]any) string {
		t.Helper()
		body, err := avro.Marshal(avro.MustParse(text), rec)
		if err != nil {
			t.Fatal(err)
		}
		return string(append(binary.BigEndian.AppendUint32([]byte{0}, uint32(id)), body...))
	}
	id1 := register(v1)
	c.exec(`CREATE STREAM orders (id VARCHAR KEY) WITH (kafka_topic = 'orders', value_format = 'avro', partitions = 1)`)
	waitQuery(t, c.conn, `SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'orders' ORDER BY ordinal_position`,
		"id|text\nqty|integer\ncustomer|text\nnote|text\nplaced|timestamp without time zone\n")
	c.exec(`CREATE TABLE by_customer AS SELECT customer, sum(qty) AS qty, count(*) AS n FROM orders GROUP BY customer`)
	c.exec(`CREATE STREAM big WITH (kafka_topic = 'big_orders', value_format = 'avro') AS SELECT id, customer, qty, placed FROM orders WHERE qty > 2`)
	c.exec(`CREATE STREAM big_pb WITH (kafka_topic = 'big_pb', value_format = 'protobuf') AS SELECT id, customer, qty, placed FROM orders WHERE qty > 2`)
	c.exec(`CREATE STREAM big_js WITH (kafka_topic = 'big_js', value_format = 'json_sr') AS SELECT id, customer, qty, placed FROM orders WHERE qty > 2`)

	placed := time.UnixMilli(1700000000000).UTC()
	id2 := register(v2)
	produceRaw(t, n.Brokers(), "orders",
		[2]string{"o1", frame(id1, v1, map[string]any{"qty": 3, "customer": "ann", "note": "gift", "placed": placed})},
		[2]string{"o2", frame(id2, v2, map[string]any{"qty": 1, "customer": "bob", "note": nil, "placed": placed, "coupon": "X1"})},
		[2]string{"o3", frame(9999, v1, map[string]any{"qty": 5, "customer": "ann", "note": nil, "placed": placed})})
	waitQuery(t, c.conn, `SELECT customer, qty, n FROM by_customer ORDER BY customer`, "ann|3|1\nbob|1|1\n")
	waitQuery(t, c.conn, `SELECT id, customer, note, placed FROM orders ORDER BY id`, "o1|ann|gift|2023-11-14 22:13:20\no2|bob|NULL|2023-11-14 22:13:20\n")
	waitQuery(t, c.conn, `SELECT DISTINCT source_offset, error FROM basin_processing_log ORDER BY source_offset`,
		"2|schema registry: schema id 9999: Schema 9999 not found (error 40403)\n")

	// A third version, whose records come later.
	v3 := strings.Replace(v2, `{"name":"coupon"`, `{"name":"channel","type":["null","string"],"default":null},{"name":"coupon"`, 1)
	id3 := register(v3)

	// INSERT writes basin's schema of the columns, registered under the
	// same subject (compatible with the producer's).
	c.exec(`INSERT INTO orders (id, qty, customer, placed) VALUES ('o4', 4, 'cy', TIMESTAMP '2024-01-02 03:04:05')`)
	waitQuery(t, c.conn, `SELECT customer, qty, n FROM by_customer ORDER BY customer`, "ann|3|1\nbob|1|1\ncy|4|1\n")

	// The derived stream's topic, as a registry-aware consumer reads it.
	waitQuery(t, c.conn, `SELECT id, qty FROM big ORDER BY id`, "o1|3\no4|4\n")
	got := consumeAvro(t, ctx, n.Brokers(), cl, "big_orders", 2, "customer", "qty", "placed")
	if want := "o1 ann 3 2023-11-14T22:13:20Z; o4 cy 4 2024-01-02T03:04:05Z"; got != want {
		t.Errorf("big_orders reads as %q, want %q", got, want)
	}
	if vs, err := cl.SubjectVersions(ctx, "big_orders-value"); err != nil || len(vs) != 1 {
		t.Errorf("big_orders-value has versions %v (%v)", vs, err)
	}
	// The derived Protobuf stream, as a consumer with a registry client
	// and the reference Protobuf libraries reads it.
	got = consumeProtobuf(t, ctx, n.Brokers(), cl, "big_pb", 2)
	if want := `o1 customer:"ann" qty:3 placed:{seconds:1700000000}; o4 customer:"cy" qty:4 placed:{seconds:1704164645}`; got != want {
		t.Errorf("big_pb reads as %q, want %q", got, want)
	}
	// A stream declared over it takes its columns from the registry too.
	c.exec(`CREATE STREAM big_pb_in (id VARCHAR KEY) WITH (kafka_topic = 'big_pb', value_format = 'protobuf')`)
	waitQuery(t, c.conn, `SELECT id, customer, qty, placed FROM big_pb_in ORDER BY id`, "o1|ann|3|2023-11-14 22:13:20\no4|cy|4|2024-01-02 03:04:05\n")
	c.exec(`CREATE STREAM big_js_in WITH (kafka_topic = 'big_js', value_format = 'json_sr')`)
	waitQuery(t, c.conn, `SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'big_js_in' ORDER BY ordinal_position`,
		"customer|text\nqty|integer\nplaced|timestamp without time zone\n")
	waitQuery(t, c.conn, `SELECT customer, qty, placed FROM big_js_in ORDER BY 1`, "ann|3|2023-11-14 22:13:20\ncy|4|2024-01-02 03:04:05\n")

	// A view publishes its rows in Avro too.
	c.exec(`CREATE TABLE by_customer_pub WITH (kafka_topic = 'by_customer_pub', value_format = 'avro') AS SELECT customer, sum(qty) AS qty, count(*) AS n FROM orders GROUP BY customer`)
	waitQuery(t, c.conn, `SELECT customer, qty, n FROM by_customer_pub ORDER BY customer`, "ann|3|1\nbob|1|1\ncy|4|1\n")
	if got, want := consumeAvro(t, ctx, n.Brokers(), cl, "by_customer_pub", 3, "qty", "n"), "ann 3 1; bob 1 1; cy 4 1"; got != want {
		t.Errorf("by_customer_pub reads as %q, want %q", got, want)
	}

	// The registry goes down while records of a schema basin has not
	// seen arrive: the queries wait, with the error in SHOW QUERIES.
	reg.SetDown(true)
	produceRaw(t, n.Brokers(), "orders",
		[2]string{"o5", frame(id3, v3, map[string]any{"qty": 7, "customer": "bob", "note": nil, "placed": placed, "channel": "web", "coupon": nil})})
	if !poll.Cond(30*time.Second, func() bool {
		for _, r := range c.rows(`SHOW QUERIES`) {
			if strings.Contains(r, " by_customer ") && strings.Contains(r, " ERROR ") && strings.Contains(r, "schema registry unavailable: schema id") {
				return true
			}
		}
		return false
	}) {
		t.Fatalf("SHOW QUERIES while the registry is down: %q", c.rows(`SHOW QUERIES`))
	}
	reg.SetDown(false)
	waitQuery(t, c.conn, `SELECT customer, qty, n FROM by_customer ORDER BY customer`, "ann|3|1\nbob|8|2\ncy|4|1\n")
	waitQuery(t, c.conn, `SELECT DISTINCT source_offset FROM basin_processing_log`, "2\n")
}

// consumeAvro reads the first n records of topic as a consumer with a
// registry client does: the writer schema by the id in each record.
func consumeAvro(t *testing.T, ctx context.Context, brokers []string, cl *sr.Client, topic string, n int, fields ...string) string {
	t.Helper()
	return consumeRecords(t, ctx, brokers, topic, n, func(r *kgo.Record) string {
		var h sr.ConfluentHeader
		id, body, err := h.DecodeID(r.Value)
		if err != nil {
			t.Fatal(err)
		}
		s, err := cl.SchemaByID(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		var rec map[string]any
		if err := avro.Unmarshal(avro.MustParse(s.Schema), body, &rec); err != nil {
			t.Fatal(err)
		}
		var f []string
		for _, k := range fields {
			v := rec[k]
			if m, ok := v.(map[string]any); ok {
				for _, x := range m {
					v = x
				}
			}
			if tm, ok := v.(time.Time); ok {
				v = tm.UTC().Format(time.RFC3339)
			}
			f = append(f, fmt.Sprint(v))
		}
		return string(r.Key) + " " + strings.Join(f, " ")
	})
}

// consumeProtobuf reads the first n records of topic as a consumer with
// a registry client does: the writer schema by the id in each record,
// compiled by protocompile, the message by the indexes after the id, and
// the record read with dynamicpb; each record as its key and the
// message's text.
func consumeProtobuf(t *testing.T, ctx context.Context, brokers []string, cl *sr.Client, topic string, n int) string {
	t.Helper()
	return consumeRecords(t, ctx, brokers, topic, n, func(r *kgo.Record) string {
		return string(r.Key) + " " + protobufText(t, ctx, cl, r.Value)
	})
}

// protobufText decodes b, a Protobuf message in the registry's framing,
// as a consumer with a registry client does, and returns its text.
func protobufText(t *testing.T, ctx context.Context, cl *sr.Client, b []byte) string {
	t.Helper()
	var h sr.ConfluentHeader
	id, rest, err := h.DecodeID(b)
	if err != nil {
		t.Fatal(err)
	}
	idx, body, err := h.DecodeIndex(rest, 8)
	if err != nil {
		t.Fatal(err)
	}
	s, err := cl.SchemaByID(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	comp := protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
		Accessor: protocompile.SourceAccessorFromMap(map[string]string{"record.proto": s.Schema})})}
	files, err := comp.Compile(ctx, "record.proto")
	if err != nil {
		t.Fatal(err)
	}
	m := dynamicpb.NewMessage(files[0].Messages().Get(idx[0]))
	if err := proto.Unmarshal(body, m); err != nil {
		t.Fatal(err)
	}
	text, err := prototext.MarshalOptions{}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(strings.Fields(string(text)), " ")
}

// TestRegistryKeys writes and reads record keys in the registry's
// formats: a key of one column in Avro is the bare value (schema
// "long"), a key of several columns a record; Protobuf keys are
// messages; a stream declared with no columns takes its key column
// (ROWKEY, for a key schema that is not a record) from the key subject.
func TestRegistryKeys(t *testing.T) {
	_, n, c, cl := startRegistryNode(t)
	ctx := c.ctx
	c.exec(`CREATE TABLE users (id BIGINT PRIMARY KEY, name VARCHAR) WITH (kafka_topic = 'users', key_format = 'avro', value_format = 'avro', partitions = 1)`)
	c.exec(`CREATE STREAM visits (region VARCHAR KEY, day DATE KEY, n INTEGER) WITH (kafka_topic = 'visits', key_format = 'avro', value_format = 'json_sr', partitions = 1)`)
	c.exec(`CREATE STREAM pb (a VARCHAR KEY, b INTEGER KEY, v VARCHAR) WITH (kafka_topic = 'pb', key_format = 'protobuf', value_format = 'protobuf', partitions = 1)`)
	c.exec(`INSERT INTO users VALUES (7, 'ann'), (8, 'bob')`)
	c.exec(`INSERT INTO users VALUES (7, 'ann b')`)
	c.exec(`INSERT INTO visits VALUES ('eu', DATE '2024-05-01', 3)`)
	c.exec(`INSERT INTO pb VALUES ('x', 1, 'one'), ('y', NULL, NULL)`)
	waitQuery(t, c.conn, `SELECT * FROM users ORDER BY id`, "7|ann b\n8|bob\n")
	waitQuery(t, c.conn, `SELECT * FROM visits`, "eu|2024-05-01|3\n")
	waitQuery(t, c.conn, `SELECT * FROM pb ORDER BY a`, "x|1|one\ny|NULL|NULL\n")

	subject := func(name string) string { return latestSchema(t, ctx, cl, name) }
	if got := subject("users-key"); got != `"long"` {
		t.Errorf("users-key is %s", got)
	}
	if got := subject("visits-key"); !strings.Contains(got, `"name":"region"`) || !strings.Contains(got, `"logicalType":"date"`) {
		t.Errorf("visits-key is %s", got)
	}
	if got := subject("pb-key"); !strings.Contains(got, "optional string a = 1;") {
		t.Errorf("pb-key is %s", got)
	}

	// Another producer's topic, key and value schemas registered: the
	// stream takes both.
	keyID, err := cl.CreateSchema(ctx, "ext-key", sr.Schema{Schema: `"string"`})
	if err != nil {
		t.Fatal(err)
	}
	valText := `{"type":"record","name":"Ext","fields":[{"name":"score","type":"double"}]}`
	valID, err := cl.CreateSchema(ctx, "ext-value", sr.Schema{Schema: valText})
	if err != nil {
		t.Fatal(err)
	}
	var h sr.ConfluentHeader
	k, _ := h.AppendEncode(nil, keyID.ID, nil)
	kb, _ := avro.Marshal(avro.MustParse(`"string"`), "k1")
	v, _ := h.AppendEncode(nil, valID.ID, nil)
	vb, _ := avro.Marshal(avro.MustParse(valText), map[string]any{"score": 2.5})
	c.exec(`CREATE STREAM ext WITH (kafka_topic = 'ext', key_format = 'avro', value_format = 'avro', partitions = 1)`)
	produceRaw(t, n.Brokers(), "ext", [2]string{string(append(k, kb...)), string(append(v, vb...))})
	waitQuery(t, c.conn, `SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'ext' ORDER BY ordinal_position`,
		"ROWKEY|text\nscore|double precision\n")
	waitQuery(t, c.conn, `SELECT "ROWKEY", score FROM ext`, "k1|2.5\n")
}

// TestRegistryNested declares a stream over Avro records with a nested
// record, a map and an array of records: the columns are STRUCT, MAP and
// ARRAY<STRUCT>, a view groups by a nested field, and a derived Protobuf
// stream writes them as messages a registry-aware consumer reads.
func TestRegistryNested(t *testing.T) {
	_, n, c, cl := startRegistryNode(t)
	ctx := c.ctx
	text := `{"type":"record","name":"Order","fields":[
		{"name":"customer","type":{"type":"record","name":"Customer","fields":[
			{"name":"name","type":"string"},{"name":"city","type":["null","string"],"default":null}]}},
		{"name":"lines","type":{"type":"array","items":{"type":"record","name":"Line","fields":[{"name":"sku","type":"string"},{"name":"qty","type":"int"}]}}},
		{"name":"attrs","type":{"type":"map","values":"long"}}]}`
	ss, err := cl.CreateSchema(ctx, "nested-value", sr.Schema{Schema: text})
	if err != nil {
		t.Fatal(err)
	}
	c.exec(`CREATE STREAM nested (id VARCHAR KEY) WITH (kafka_topic = 'nested', value_format = 'avro', partitions = 1)`)
	waitQuery(t, c.conn, `SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'nested' ORDER BY ordinal_position`,
		"id|text\ncustomer|jsonb\nlines|ARRAY\nattrs|jsonb\n")
	c.exec(`CREATE TABLE by_city AS SELECT customer->city AS city, count(*) AS n, sum(lines[1]->qty) AS first_qty FROM nested GROUP BY customer->city`)
	c.exec(`CREATE STREAM nested_pb WITH (kafka_topic = 'nested_pb', value_format = 'protobuf') AS SELECT id, customer, lines, attrs FROM nested`)
	var h sr.ConfluentHeader
	frame := func(rec map[string]any) string {
		b, _ := h.AppendEncode(nil, ss.ID, nil)
		body, err := avro.Marshal(avro.MustParse(text), rec)
		if err != nil {
			t.Fatal(err)
		}
		return string(append(b, body...))
	}
	produceRaw(t, n.Brokers(), "nested",
		[2]string{"o1", frame(map[string]any{"customer": map[string]any{"name": "ann", "city": map[string]any{"string": "Oslo"}},
			"lines": []any{map[string]any{"sku": "a", "qty": 2}, map[string]any{"sku": "b", "qty": 1}}, "attrs": map[string]any{"x": int64(5)}})},
		[2]string{"o2", frame(map[string]any{"customer": map[string]any{"name": "bob", "city": nil},
			"lines": []any{map[string]any{"sku": "c", "qty": 7}}, "attrs": map[string]any{}})})
	waitQuery(t, c.conn, `SELECT id, customer->name, customer->city, cardinality(lines), lines[2]->sku, attrs['x'] FROM nested ORDER BY id`,
		"o1|ann|Oslo|2|b|5\no2|bob|NULL|1|NULL|NULL\n")
	waitQuery(t, c.conn, `SELECT city, n, first_qty FROM by_city ORDER BY city`, "Oslo|1|2\nNULL|1|7\n")
	got := consumeProtobuf(t, ctx, n.Brokers(), cl, "nested_pb", 2)
	if want := `o1 customer:{name:"ann" city:"Oslo"} lines:{sku:"a" qty:2} lines:{sku:"b" qty:1} attrs:{key:"x" value:5}; o2 customer:{name:"bob"} lines:{sku:"c" qty:7}`; got != want {
		t.Errorf("nested_pb reads as %q, want %q", got, want)
	}
}

// consumeRecords reads the first n committed records of topic and
// returns what show makes of each, joined by "; ".
func consumeRecords(t *testing.T, ctx context.Context, brokers []string, topic string, n int, show func(*kgo.Record) string) string {
	t.Helper()
	cons := committedConsumer(t, brokers, topic)
	defer cons.Close()
	var out []string
	for len(out) < n {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, show(r)) })
	}
	return strings.Join(out, "; ")
}

// startRegistryNode starts a schema registry and a node pointed at it,
// and returns them, a connection to the node and a client of the
// registry.
func startRegistryNode(t *testing.T) (*srfake.Registry, *Node, sqlConn, *sr.Client) {
	t.Helper()
	reg, err := srfake.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Close)
	n := startNode(t, t.TempDir(), func(o *Options) { o.SchemaRegistry = reg.URL() })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	cl, err := sr.NewClient(sr.URLs(reg.URL()))
	if err != nil {
		t.Fatal(err)
	}
	return reg, n, sqlConn{t, ctx, connect(t, n.PGAddr())}, cl
}

// latestSchema returns the text of the latest schema of subject.
func latestSchema(t *testing.T, ctx context.Context, cl *sr.Client, subject string) string {
	t.Helper()
	s, err := cl.SchemaByVersion(ctx, subject, -1)
	if err != nil {
		t.Fatalf("subject %s: %v", subject, err)
	}
	return s.Schema.Schema
}

// committedConsumer returns a client that reads topic's committed
// records from its start.
func committedConsumer(t *testing.T, brokers []string, topic string) *kgo.Client {
	t.Helper()
	cons, err := kafka.NewClient(kafka.ClientOptions{Brokers: brokers, Logger: testLogger()},
		kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	return cons
}
