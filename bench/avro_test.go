//go:build bench

package bench

import (
	"context"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/basindb/basin/internal/srfake"
	"github.com/basindb/basin/internal/testcluster"
)

// avroOrders is the schema of B2's records in Avro, as a producer with
// a registry client registers it.
const avroOrders = `{"type":"record","name":"Order","namespace":"bench","fields":[
	{"name":"grp","type":"long"},
	{"name":"amount","type":"long"}]}`

const avroTopic = "orders_avro"

// TestB2IngestAvro is B2 with Avro values in the schema registry's wire
// format: the same 1M records, keys and view, but the stream is declared
// with no columns (they come from the registry) and every record is
// read by its writer schema. The references are a raw franz-go consumer
// of the topic, and the same consumer decoding each record's Avro by the
// schema its id names (the floor of reading Avro, without SQL, storage
// or the re-keying).
func TestB2IngestAvro(t *testing.T) {
	reg, err := srfake.New()
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	c := testcluster.Start(t, testcluster.Options{Nodes: 1, Args: []string{"--standby-replicas", "0", "--schema-registry", reg.URL()}})
	n := c.Node(0)
	ctx, cancel := context.WithTimeout(context.Background(), ingestTimeout)
	defer cancel()
	cl, err := sr.NewClient(sr.URLs(reg.URL()))
	if err != nil {
		t.Fatal(err)
	}
	ss, err := cl.CreateSchema(ctx, avroTopic+"-value", sr.Schema{Schema: avroOrders})
	if err != nil {
		t.Fatal(err)
	}
	produceAvroOrders(ctx, t, c, ss.ID)

	rawEl := rawConsume(t, c, avroTopic, ingestRecords)
	rawRate := float64(ingestRecords) / rawEl.Seconds()
	t.Logf("raw franz-go consumer: %d records in %v: %.0f records/s", ingestRecords, rawEl.Round(time.Millisecond), rawRate)
	decEl := decodeAvroConsume(ctx, t, c, cl)
	decRate := float64(ingestRecords) / decEl.Seconds()
	t.Logf("franz-go consumer decoding Avro: %d records in %v: %.0f records/s", ingestRecords, decEl.Round(time.Millisecond), decRate)

	conn := n.Conn(t)
	n.Exec(t, `CREATE STREAM orders_avro (id BIGINT KEY) WITH (kafka_topic = 'orders_avro', value_format = 'avro')`)
	start := time.Now()
	n.Exec(t, `CREATE TABLE per_grp_avro AS SELECT grp, COUNT(*) AS n, SUM(amount) AS total FROM orders_avro GROUP BY grp`)
	done := waitView(t, conn, "per_grp_avro", "n", ingestGroups, ingestRecords)
	basinEl := done.Sub(start)
	basinRate := float64(ingestRecords) / basinEl.Seconds()
	t.Logf("basin: per_grp_avro reflects %d records in %v: %.0f records/s", ingestRecords, basinEl.Round(time.Millisecond), basinRate)
	var wantTotal int64
	for id := range int64(ingestRecords) {
		wantTotal += id % 1000
	}
	if _, total, err := countAndSum(conn, "per_grp_avro", "total"); err != nil || total != wantTotal {
		t.Fatalf("per_grp_avro: sum(total) = %d, want %d (%v)", total, wantTotal, err)
	}
	theReport.add(t, result{Bench: "B2", What: "ingest 1M Avro records into a 100k-group view",
		Basin: basinRate, Ref: rawRate, Unit: "records/s", RefName: "raw franz-go consumer", HigherBetter: true,
		Target: "≥ 0.5×", Met: basinRate >= 0.5*rawRate,
		Note: fmt.Sprintf("basin %.1fs; schema registry in process (%d requests in all)", basinEl.Seconds(), reg.Requests())})
	theReport.add(t, result{Bench: "B2", What: "ingest 1M Avro records into a 100k-group view",
		Basin: basinRate, Ref: decRate, Unit: "records/s", RefName: "franz-go consumer decoding each record's Avro", HigherBetter: true,
		Note: fmt.Sprintf("the reading and decoding alone: %.1fs", decEl.Seconds())})
}

// produceAvroOrders writes B2's records to avroTopic with Avro values
// framed with schema id id.
func produceAvroOrders(ctx context.Context, t *testing.T, c *testcluster.Cluster, id int) {
	t.Helper()
	createTopics(ctx, t, kadm.NewClient(c.Client(t)), avroTopic)
	cl := c.Client(t, kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedRecords(200_000),
		kgo.ProducerBatchMaxBytes(4<<20), kgo.DefaultProduceTopic(avroTopic))
	schema := avro.MustParse(avroOrders)
	var h sr.ConfluentHeader
	const slice = 50_000
	for first := 0; first < ingestRecords; first += slice {
		recs := make([]*kgo.Record, 0, slice)
		for i := first; i < min(first+slice, ingestRecords); i++ {
			body, err := avro.Marshal(schema, map[string]any{"grp": int64(i % ingestGroups), "amount": int64(i % 1000)})
			if err != nil {
				t.Fatal(err)
			}
			v, err := h.AppendEncode(nil, id, nil)
			if err != nil {
				t.Fatal(err)
			}
			recs = append(recs, &kgo.Record{Key: binary.BigEndian.AppendUint64(nil, uint64(i)), Value: append(v, body...)})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("producing records %d..: %v", first, err)
		}
	}
}

// decodeAvroConsume reads avroTopic as rawConsume does and decodes every
// record by the schema its id names (fetched once).
func decodeAvroConsume(ctx context.Context, t *testing.T, c *testcluster.Cluster, reg *sr.Client) time.Duration {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Broker()), kgo.ConsumeTopics(avroTopic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	schemas := map[int]avro.Schema{}
	var h sr.ConfluentHeader
	start := time.Now()
	got := 0
	var sum int64
	for got < ingestRecords {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consuming %s: %d records: %v", avroTopic, got, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			id, body, err := h.DecodeID(r.Value)
			if err != nil {
				t.Fatal(err)
			}
			s, ok := schemas[id]
			if !ok {
				ss, err := reg.SchemaByID(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				s = avro.MustParse(ss.Schema)
				schemas[id] = s
			}
			var rec struct {
				Grp    int64 `avro:"grp"`
				Amount int64 `avro:"amount"`
			}
			if err := avro.Unmarshal(s, body, &rec); err != nil {
				t.Fatal(err)
			}
			sum += rec.Amount
			got++
		})
	}
	el := time.Since(start)
	if sum == 0 {
		t.Fatal("decoded nothing")
	}
	return el
}
