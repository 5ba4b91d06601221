package node

import (
	"context"
	"encoding/json"
	"errors"
	osexec "os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/basindb/basin/internal/poll"
	"github.com/basindb/basin/kafka"
)

// TestPublishedView publishes two views to topics of their own (WITH
// kafka_topic): a grouped view over a stream, re-keyed, with HAVING, and
// a view over a table, which a DELETE shrinks. A consumer of each topic,
// reading committed records and keeping the last per key (tombstones
// delete), must end with exactly the view's rows.
func TestPublishedView(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	n := startNode(t, t.TempDir())
	conn := connect(t, n.PGAddr())
	exec := func(q string) {
		t.Helper()
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec("CREATE STREAM orders (id BIGINT KEY, region VARCHAR, amount BIGINT) WITH (partitions = 2)")
	exec("CREATE TABLE customers (id VARCHAR PRIMARY KEY, tier BIGINT) WITH (partitions = 2)")
	exec("CREATE TABLE busy WITH (kafka_topic = 'busy_regions', partitions = 3) AS SELECT region, COUNT(*) AS n, SUM(amount) AS total FROM orders GROUP BY region HAVING COUNT(*) > 1")
	exec("CREATE TABLE gold WITH (kafka_topic = 'gold_customers') AS SELECT id, tier FROM customers WHERE tier >= 2")
	exec("INSERT INTO orders VALUES (1, 'eu', 10), (2, 'eu', 20), (3, 'us', 5), (4, 'apac', 1), (5, 'apac', 2), (6, 'us', 7)")
	exec("INSERT INTO customers VALUES ('a', 1), ('b', 2), ('c', 3), ('d', 2)")
	exec("INSERT INTO customers VALUES ('a', 3), ('c', 1)")
	exec("DELETE FROM customers WHERE id = 'd'")

	cl, err := kafka.NewClient(kafka.ClientOptions{Brokers: n.Brokers(), Logger: testLogger()},
		kgo.ConsumeTopics("busy_regions", "gold_customers"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	latest := map[string]map[string]string{"busy_regions": {}, "gold_customers": {}}
	consumed := func(topic string) string {
		var lines []string
		for k, v := range latest[topic] {
			lines = append(lines, k+" "+v)
		}
		sort.Strings(lines)
		return strings.Join(lines, "\n")
	}
	view := func(q string) string {
		rows, err := conn.Query(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var lines []string
		for rows.Next() {
			vals, err := rows.Values()
			if err != nil {
				t.Fatal(err)
			}
			key, _ := json.Marshal(vals[0])
			rest := map[string]any{}
			for i, f := range rows.FieldDescriptions()[1:] {
				rest[f.Name] = vals[i+1]
			}
			value, _ := json.Marshal(rest)
			lines = append(lines, strings.Trim(string(key), `"`)+" "+string(value))
		}
		sort.Strings(lines)
		return strings.Join(lines, "\n")
	}
	wantBusy := view("SELECT region, n, total FROM busy")
	wantGold := view("SELECT id, tier FROM gold")
	if wantBusy != "apac {\"n\":2,\"total\":3}\neu {\"n\":2,\"total\":30}\nus {\"n\":2,\"total\":12}" || wantGold != "a {\"tier\":3}\nb {\"tier\":2}" {
		t.Fatalf("the views themselves:\n%s\n%s", wantBusy, wantGold)
	}
	if !poll.Cond(30*time.Second, func() bool {
		fctx, fcancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer fcancel()
		fs := cl.PollFetches(fctx)
		fs.EachRecord(func(r *kgo.Record) {
			if r.Value == nil {
				delete(latest[r.Topic], string(r.Key))
				return
			}
			var v map[string]any
			if err := json.Unmarshal(r.Value, &v); err != nil {
				t.Errorf("%s: a value that is not a JSON object: %q", r.Topic, r.Value)
			}
			latest[r.Topic][string(r.Key)] = string(r.Value)
		})
		return consumed("busy_regions") == wantBusy && consumed("gold_customers") == wantGold
	}) {
		t.Fatalf("the published topics hold\n%s\nand\n%s\nwant\n%s\nand\n%s", consumed("busy_regions"), consumed("gold_customers"), wantBusy, wantGold)
	}

	// kcat (librdkafka), reading committed records, sees the same.
	if got := kcatLatest(t, n.Brokers()[0], "gold_customers"); got != wantGold {
		t.Errorf("kcat reads gold_customers as\n%s\nwant\n%s", got, wantGold)
	}

	// The topic must be a user's topic the view does not read, and have
	// the view's partitions.
	for q, want := range map[string]string{
		"CREATE TABLE bad1 WITH (kafka_topic = 'orders') AS SELECT region, COUNT(*) AS n FROM orders GROUP BY region":                   "42P17",
		"CREATE TABLE bad2 WITH (kafka_topic = '_basin-x') AS SELECT region, COUNT(*) AS n FROM orders GROUP BY region":                 "42501",
		"CREATE TABLE bad3 WITH (kafka_topic = 'busy_regions') AS SELECT region, COUNT(*) AS n FROM orders GROUP BY region":             "42P16",
		"CREATE TABLE bad4 WITH (kafka_topic = 'x', value_format = 'xml') AS SELECT region, COUNT(*) AS n FROM orders GROUP BY region":  "22023",
		"CREATE TABLE bad5 WITH (kafka_topic = 'x', value_format = 'avro') AS SELECT region, COUNT(*) AS n FROM orders GROUP BY region": "55000", // no registry
	} {
		_, err := conn.Exec(ctx, q)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != want {
			t.Errorf("%s: %v, want %s", q, err, want)
		}
	}
}

// kcatRun runs kcat with args and returns what it printed.
func kcatRun(t *testing.T, args ...string) string {
	t.Helper()
	kcat, err := osexec.LookPath("kcat")
	if err != nil {
		t.Fatal("kcat is not installed (Debian package kcat; .ci/run installs it)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := osexec.CommandContext(ctx, kcat, args...).Output()
	if err != nil {
		t.Fatalf("kcat %s: %v", strings.Join(args, " "), err)
	}
	return string(out)
}

// kcatLatest consumes topic to its end with kcat, reading committed
// records only, and returns the last value of each key ("key value"
// lines, sorted), a tombstone deleting the key.
func kcatLatest(t *testing.T, broker, topic string) string {
	t.Helper()
	latest := map[string]string{}
	for _, line := range kcatLines(t, broker, topic) {
		k, v, ok := strings.Cut(line, "\t")
		switch {
		case !ok:
			t.Fatalf("kcat printed %q", line)
		case v == "NULL":
			delete(latest, k)
		default:
			latest[k] = v
		}
	}
	var lines []string
	for k, v := range latest {
		lines = append(lines, k+" "+v)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}
