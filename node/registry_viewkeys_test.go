package node

import (
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/basindb/basin/internal/poll"
	"github.com/basindb/basin/internal/srfake"
	"github.com/basindb/basin/kafka"
)

// TestRegistryViewKeys publishes views whose keys are in each key format
// besides 'kafka' and 'json', over four partitions: Avro (a bare string),
// Protobuf (a message of two columns), JSON_SR under a tumbling window,
// DELIMITED and PROTOBUF_NOSR; and a view keyed as an Avro-keyed table,
// which writes its keys in the table's key schema, as does a view of
// its full join with another. A registry-aware
// consumer reads each published topic: every record's key decodes to
// the row's key, and is in the partition its bytes hash to, which is the
// one key lookups read; the registry has each key schema under the
// topic's key subject. After a restart with the registry down, key
// lookups still answer.
func TestRegistryViewKeys(t *testing.T) {
	reg, err := srfake.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Close)
	start, broker, _ := restartableIn(t, func(o *Options) { o.SchemaRegistry = reg.URL() })
	n := start()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cl, err := sr.NewClient(sr.URLs(reg.URL()))
	if err != nil {
		t.Fatal(err)
	}
	c := sqlConn{t, ctx, connect(t, n.PGAddr())}

	c.exec(`CREATE STREAM orders (id VARCHAR KEY, customer VARCHAR, region VARCHAR, qty INTEGER) WITH (kafka_topic = 'vk_orders', value_format = 'avro', partitions = 4)`)
	c.exec(`CREATE TABLE users (id BIGINT PRIMARY KEY, name VARCHAR) WITH (kafka_topic = 'vk_users', key_format = 'avro', value_format = 'avro', partitions = 4)`)
	c.exec(`CREATE TABLE by_cust WITH (kafka_topic = 'by_cust', key_format = 'avro', value_format = 'avro') AS
		SELECT customer, sum(qty) AS qty FROM orders GROUP BY customer`)
	c.exec(`CREATE TABLE by_cr WITH (kafka_topic = 'by_cr', key_format = 'protobuf', value_format = 'protobuf') AS
		SELECT customer, region, count(*) AS n FROM orders GROUP BY customer, region`)
	c.exec(`CREATE TABLE by_region WITH (kafka_topic = 'by_region', key_format = 'json_sr', value_format = 'json_sr') AS
		SELECT region, count(*) AS n FROM orders WINDOW TUMBLING (SIZE 1 HOUR) GROUP BY region`)
	c.exec(`CREATE TABLE by_cr_d WITH (kafka_topic = 'by_cr_d', key_format = 'delimited', key_delimiter = '|', value_format = 'delimited') AS
		SELECT customer, region, sum(qty) AS qty FROM orders GROUP BY customer, region`)
	c.exec(`CREATE TABLE by_cust_nosr WITH (kafka_topic = 'by_cust_nosr', key_format = 'protobuf_nosr', value_format = 'json') AS
		SELECT customer, count(*) AS n FROM orders GROUP BY customer`)
	c.exec(`CREATE TABLE users_pub WITH (kafka_topic = 'users_pub') AS SELECT id, upper(name) AS name FROM users`)
	c.exec(`CREATE TABLE emails (id BIGINT PRIMARY KEY, email VARCHAR) WITH (kafka_topic = 'vk_emails', key_format = 'avro', value_format = 'avro', partitions = 4)`)
	c.exec(`CREATE TABLE user_emails WITH (kafka_topic = 'user_emails') AS SELECT COALESCE(u.id, e.id) AS id, u.name, e.email FROM users u FULL JOIN emails e ON u.id = e.id`)

	customers := []string{"ann", "bob", "cy", "dee", "eve", "fay", "gus", "hal"}
	regions := []string{"eu", "us"}
	var ins []string
	qty := map[string]int{}   // customer: sum(qty)
	count := map[string]int{} // customer|region: count(*)
	for i := range 40 {
		cu, rg := customers[i%len(customers)], regions[i%3%2]
		ins = append(ins, fmt.Sprintf("('o%d', '%s', '%s', %d)", i, cu, rg, i))
		qty[cu] += i
		count[cu+"|"+rg]++
	}
	c.exec(`INSERT INTO orders VALUES ` + strings.Join(ins, ", "))
	var users []string
	for i := range 20 {
		users = append(users, fmt.Sprintf("(%d, 'user%d')", i, i))
	}
	c.exec(`INSERT INTO users VALUES ` + strings.Join(users, ", "))
	c.exec(`INSERT INTO emails VALUES (3, 'u3@x'), (7, 'u7@x'), (30, 'u30@x')`)
	waitQuery(t, c.conn, `SELECT count(*) FROM users_pub`, "20\n")

	// Key lookups find every key: each is in the partition of its bytes.
	lookups := func() {
		t.Helper()
		for _, cu := range customers {
			waitQuery(t, c.conn, fmt.Sprintf(`SELECT qty FROM by_cust WHERE customer = '%s'`, cu), fmt.Sprintf("%d\n", qty[cu]))
			for _, rg := range regions {
				want := ""
				if k := count[cu+"|"+rg]; k > 0 {
					want = fmt.Sprintf("%d\n", k)
				}
				waitQuery(t, c.conn, fmt.Sprintf(`SELECT n FROM by_cr WHERE customer = '%s' AND region = '%s'`, cu, rg), want)
			}
		}
		for i := range 20 {
			waitQuery(t, c.conn, fmt.Sprintf(`SELECT name FROM users_pub WHERE id = %d`, i), fmt.Sprintf("USER%d\n", i))
		}
		waitQuery(t, c.conn, `SELECT id, name, email FROM user_emails WHERE id IN (3, 4, 30) ORDER BY id`, "3|user3|u3@x\n4|user4|NULL\n30|NULL|u30@x\n")
	}
	lookups()
	// (The rows' hour may have turned while they were written.)
	waitQuery(t, c.conn, `SELECT region, sum(n) FROM by_region GROUP BY region ORDER BY region`, "eu|27\nus|13\n")
	waitQuery(t, c.conn, `SELECT sum(n) FROM by_region WHERE region = 'us'`, "13\n")

	subject := func(name string) string { return latestSchema(t, ctx, cl, name) }
	if got := subject("by_cust-key"); got != `"string"` {
		t.Errorf("by_cust-key is %s", got)
	}
	if got := subject("by_cr-key"); !strings.Contains(got, "optional string customer = 1;") || !strings.Contains(got, "optional string region = 2;") {
		t.Errorf("by_cr-key is %s", got)
	}
	if got := subject("by_region-key"); !strings.Contains(got, `"string"`) {
		t.Errorf("by_region-key is %s", got)
	}
	if got, want := subject("users_pub-key"), subject("vk_users-key"); got != want {
		t.Errorf("users_pub-key is %s, and vk_users-key %s", got, want)
	}

	// What a consumer with a registry client reads of each topic: the
	// last record of each key, which must be in its key's partition.
	// A windowed key is the key, then the window's start (8 bytes).
	schemaOf := func(r *kgo.Record, b []byte) (sr.Schema, []byte) {
		t.Helper()
		var h sr.ConfluentHeader
		id, rest, err := h.DecodeID(b)
		if err != nil {
			t.Fatalf("%s: key %q: %v", r.Topic, b, err)
		}
		s, err := cl.SchemaByID(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return s, rest
	}
	avroKey := func(r *kgo.Record) string {
		s, body := schemaOf(r, r.Key)
		var v any
		if err := avro.Unmarshal(avro.MustParse(s.Schema), body, &v); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(v)
	}
	protoKey := func(r *kgo.Record) string { return protobufText(t, ctx, cl, r.Key) }
	windowed := func(r *kgo.Record) string {
		k := r.Key[:len(r.Key)-8]
		s, body := schemaOf(r, k)
		if s.Type != sr.TypeJSON {
			t.Fatalf("by_region's key schema is %s", s.Type)
		}
		if start := binary.BigEndian.Uint64(r.Key[len(r.Key)-8:]); start%uint64(time.Hour.Milliseconds()) != 0 {
			t.Errorf("by_region: a window starts at %d", start)
		}
		return string(body)
	}
	nosr := func(r *kgo.Record) string { return fmt.Sprintf("%x", r.Key) }
	plain := func(r *kgo.Record) string { return string(r.Key) }

	wantCust, wantCR, wantCRD, wantNoSR := map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, cu := range customers {
		wantCust[cu] = true
		// protobuf_nosr: field 1, a string, length-prefixed.
		wantNoSR[fmt.Sprintf("%x", append([]byte{0x0a, byte(len(cu))}, cu...))] = true
		for _, rg := range regions {
			if count[cu+"|"+rg] > 0 {
				wantCR[fmt.Sprintf("customer:%q region:%q", cu, rg)] = true
				wantCRD[cu+"|"+rg] = true
			}
		}
	}
	wantUsers := map[string]bool{}
	for i := range 20 {
		wantUsers[fmt.Sprint(i)] = true
	}
	wantJoined := maps.Clone(wantUsers)
	wantJoined["30"] = true
	for _, tc := range []struct {
		topic     string
		key       func(*kgo.Record) string
		want      map[string]bool
		windowLen int
	}{
		{"by_cust", avroKey, wantCust, 0},
		{"by_cr", protoKey, wantCR, 0},
		{"by_region", windowed, map[string]bool{`"eu"`: true, `"us"`: true}, 8},
		{"by_cr_d", plain, wantCRD, 0},
		{"by_cust_nosr", nosr, wantNoSR, 0},
		{"users_pub", avroKey, wantUsers, 0},
		{"user_emails", avroKey, wantJoined, 0},
	} {
		got := keysOf(t, ctx, []string{broker}, tc.topic, len(tc.want), func(r *kgo.Record) string {
			if r.Key == nil {
				t.Fatalf("%s: a record without a key at offset %d", tc.topic, r.Offset)
			}
			if p := kafka.Partition(r.Key[:len(r.Key)-tc.windowLen], 4); p != r.Partition {
				t.Errorf("%s: key %q is in partition %d, and its bytes hash to %d", tc.topic, r.Key, r.Partition, p)
			}
			return tc.key(r)
		})
		if !maps.Equal(got, tc.want) {
			t.Errorf("%s: keys %v, want %v", tc.topic, slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(tc.want)))
		}
	}

	// Restarted while the registry is down, the node still finds each
	// key: a lookup that cannot encode its key reads every partition.
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	reg.SetDown(true)
	n = start()
	c = sqlConn{t, ctx, connect(t, n.PGAddr())}
	lookups()
	reg.SetDown(false)
}

// keysOf reads topic from its start until it has seen n keys, as key
// renders them, and returns them.
func keysOf(t *testing.T, ctx context.Context, brokers []string, topic string, n int, key func(*kgo.Record) string) map[string]bool {
	t.Helper()
	cons := committedConsumer(t, brokers, topic)
	defer cons.Close()
	got := map[string]bool{}
	if !poll.Cond(time.Minute, func() bool {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		cons.PollFetches(pctx).EachRecord(func(r *kgo.Record) { got[key(r)] = true })
		return len(got) >= n
	}) {
		t.Fatalf("%s: %d keys, want %d: %v", topic, len(got), n, slices.Sorted(maps.Keys(got)))
	}
	return got
}
