package node

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/basindb/basin/internal/poll"
	"github.com/basindb/basin/kafka"
)

// TestPublishedWindowedView publishes windowed views with ksqlDB's
// windowed keys: the key, then the window's start (a session: its end,
// then its start), 8 bytes big-endian each. A consumer keeping the last
// record per key ends with the views' rows: a session that merges into
// another leaves a tombstone. An EMIT FINAL view publishes each window
// once, when it closes, with its final count.
func TestPublishedWindowedView(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	n := startNode(t, t.TempDir())
	c := sqlConn{t, ctx, connect(t, n.PGAddr())}
	c.exec("CREATE STREAM clicks (user_id VARCHAR KEY, page VARCHAR, ts BIGINT) WITH (partitions = 2, timestamp = 'ts')")
	c.exec("CREATE TABLE per_min WITH (kafka_topic = 'per_min_out') AS SELECT user_id, COUNT(*) AS n FROM clicks WINDOW TUMBLING (SIZE 1 MINUTE, GRACE PERIOD 1 DAY) GROUP BY user_id")
	c.exec("CREATE TABLE visits WITH (kafka_topic = 'visits_out') AS SELECT user_id, COUNT(*) AS n FROM clicks WINDOW SESSION (10 SECONDS, GRACE PERIOD 1 DAY) GROUP BY user_id")
	c.exec("CREATE TABLE final_min WITH (kafka_topic = 'final_min_out') AS SELECT user_id, COUNT(*) AS n FROM clicks WINDOW TUMBLING (SIZE 1 MINUTE, GRACE PERIOD 0 SECONDS) GROUP BY user_id EMIT FINAL")
	// The sessions of u1 at 0 and 15000 merge when 8000 comes.
	c.exec("INSERT INTO clicks VALUES ('u1', 'a', 0), ('u1', 'b', 15000), ('u2', 'a', 61000), ('u1', 'c', 70000)")
	c.exec("INSERT INTO clicks VALUES ('u1', 'd', 8000), ('u2', 'b', 65000)")
	// Moves every partition's stream time two minutes on, closing the
	// first minutes of the final view.
	c.exec("INSERT INTO clicks VALUES ('u1', 'e', 190000), ('u2', 'e', 190000)")

	cl, err := kafka.NewClient(kafka.ClientOptions{Brokers: n.Brokers(), Logger: testLogger()},
		kgo.ConsumeTopics("per_min_out", "visits_out", "final_min_out"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	latest := map[string]map[string]int64{"per_min_out": {}, "visits_out": {}, "final_min_out": {}}
	finals := map[string]int{} // records per window of final_min_out
	decode := func(topic string, key []byte) string {
		if topic == "visits_out" {
			n := len(key) - 16
			return fmt.Sprintf("%s %d %d", key[:n], int64(binary.BigEndian.Uint64(key[n+8:])), int64(binary.BigEndian.Uint64(key[n:n+8])))
		}
		n := len(key) - 8
		return fmt.Sprintf("%s %d", key[:n], int64(binary.BigEndian.Uint64(key[n:])))
	}
	published := func(topic string) []string {
		var out []string
		for k, v := range latest[topic] {
			out = append(out, fmt.Sprintf("%s %d", k, v))
		}
		slices.Sort(out)
		return out
	}
	want := map[string][]string{
		"per_min_out":   c.rows("SELECT user_id, windowstart, n FROM per_min"),
		"visits_out":    c.rows("SELECT user_id, windowstart, windowend, n FROM visits"),
		"final_min_out": c.rows("SELECT user_id, windowstart, n FROM final_min"),
	}
	// u1's click at 8000 is too late for the final view, whose grace
	// period is 0: its stream time had reached 70000.
	if !slices.Equal(want["visits_out"], []string{"u1 0 15000 3", "u1 190000 190000 1", "u1 70000 70000 1", "u2 190000 190000 1", "u2 61000 65000 2"}) ||
		!slices.Equal(want["final_min_out"], []string{"u1 0 2", "u1 60000 1", "u2 60000 2"}) {
		t.Fatalf("the views themselves: %v, %v", want["visits_out"], want["final_min_out"])
	}
	if !poll.Cond(30*time.Second, func() bool {
		fctx, fcancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer fcancel()
		cl.PollFetches(fctx).EachRecord(func(r *kgo.Record) {
			k := decode(r.Topic, r.Key)
			if r.Value == nil {
				delete(latest[r.Topic], k)
				return
			}
			var v struct{ N int64 }
			if err := json.Unmarshal(r.Value, &v); err != nil {
				t.Errorf("%s: %q: %v", r.Topic, r.Value, err)
			}
			latest[r.Topic][k] = v.N
			if r.Topic == "final_min_out" {
				finals[k]++
			}
		})
		for topic, w := range want {
			if !slices.Equal(published(topic), w) {
				return false
			}
		}
		return true
	}) {
		t.Fatalf("published: %v, %v, %v; want %v", published("per_min_out"), published("visits_out"), published("final_min_out"), want)
	}
	for k, times := range finals {
		if times != 1 {
			t.Errorf("final_min_out: window %s published %d times, want once", k, times)
		}
	}
}
