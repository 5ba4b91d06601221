package node

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestMetrics scrapes /metrics of a node alone after a key lookup, a scan
// and a failing query: the pull-query counters and histograms carry
// their plan, route and outcome, the row cache counts its hit and miss,
// and every task's lag is a gauge.
func TestMetrics(t *testing.T) {
	n := startNode(t, t.TempDir(), func(o *Options) { o.HTTPAddr = "127.0.0.1:0"; o.Pprof = true })
	conn := connect(t, n.PGAddr())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, q := range []string{
		"CREATE TABLE kv (k VARCHAR PRIMARY KEY, v BIGINT) WITH (partitions = 2)",
		"INSERT INTO kv VALUES ('a', 1), ('b', 2)",
		"SELECT v FROM kv WHERE k = 'a'",
		"SELECT * FROM kv",
		"CREATE STREAM ev (id BIGINT, x BIGINT) WITH (kafka_topic = 'ev', partitions = 1, value_format = 'json')",
		"CREATE TABLE ratio AS SELECT id, sum(100 / x) AS r FROM ev GROUP BY id",
		"INSERT INTO ev VALUES (1, 5), (1, 0), (2, 10)",
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if _, err := conn.Exec(ctx, "SELECT v FROM kv WHERE k = 'a' AND v / 0 = 1"); err == nil {
		t.Fatal("division by zero did not fail")
	}
	waitRows(t, conn, "ratio", "SELECT id, r FROM ratio", []string{"1|20", "2|10"})
	if resp, err := http.Get("http://" + n.HTTPAddr() + "/debug/pprof/goroutine?debug=1"); err != nil || resp.StatusCode != 200 {
		t.Errorf("/debug/pprof/goroutine: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	body := scrapeMetrics(t, n)
	for _, want := range []string{
		`basin_pull_queries_total{outcome="ok",plan="lookup",route="local"} 1`,
		`basin_pull_queries_total{outcome="error",plan="lookup",route="local"} 1`,
		`basin_pull_query_duration_seconds_count{plan="lookup",route="local"} 2`,
		// The first lookup of 'a' read storage and cached the row; the
		// failing one read it from the cache.
		`basin_row_cache_total{result="miss"} 1`,
		`basin_row_cache_total{result="hit"} 1`,
		`basin_row_cache_entries 1`,
		`basin_task_offset_lag{relation="kv",role="active",state="RUNNING",task="kv@1/0"} 0`,
		`basin_task_offset_lag{relation="kv",role="active",state="RUNNING",task="kv@1/1"} 0`,
		// ratio's division by zero went to the processing log.
		`basin_processing_log_records_total{relation="ratio",sqlstate="22012"} 1`,
		`basin_pebble_block_cache_total{result="hit"}`,
		`basin_pebble_write_stalls_total 0`,
		`basin_broker_disk_full 0`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	// The table's tasks took in the two records its INSERT wrote.
	in := 0
	for _, m := range regexp.MustCompile(`basin_task_records_in_total\{relation="kv",role="active",task="kv@1/\d"\} (\d+)`).FindAllStringSubmatch(body, -1) {
		v, _ := strconv.Atoi(m[1])
		in += v
	}
	if in != 2 {
		t.Errorf("basin_task_records_in_total of kv's tasks: %d in all, want 2", in)
	}
	// ratio's task wrote its two rows' changes and the processing-log
	// record, in committed transactions, and saw its batches' freshness.
	for _, want := range []struct {
		re  string
		min float64
	}{
		{`basin_task_records_out_total\{relation="ratio",role="active",task="ratio@\d+/0"\} (\S+)`, 3},
		{`basin_task_bytes_out_total\{relation="ratio",role="active",task="ratio@\d+/0"\} (\S+)`, 3},
		{`basin_task_transactions_total\{outcome="committed",relation="ratio",role="active",task="ratio@\d+/0"\} (\S+)`, 1},
		{`basin_task_transactions_total\{outcome="aborted",relation="ratio",role="active",task="ratio@\d+/0"\} (\S+)`, 0},
		// Scans: kv's, and waitRows' of ratio.
		{`basin_pull_queries_total\{outcome="ok",plan="scan",route="local"\} (\S+)`, 2},
		{`basin_freshness_seconds_count\{relation="ratio",role="active"\} (\S+)`, 1},
		{`basin_freshness_seconds_count\{relation="kv",role="active"\} (\S+)`, 1},
		{`basin_pebble_disk_bytes (\S+)`, 1},
		{`basin_pebble_l0_sublevels (\S+)`, 0},
		{`basin_pebble_compaction_debt_bytes (\S+)`, 0},
		{`basin_kafka_connections (\S+)`, 1},
		// The node runs its own broker.
		{`basin_broker_connections (\S+)`, 1},
		{`basin_broker_disk_bytes (\S+)`, 1},
		{`basin_broker_accepting (\S+)`, 1},
		{`basin_kafka_requests_total\{outcome="ok",request="Produce"\} (\S+)`, 1},
		{`basin_kafka_requests_total\{outcome="ok",request="EndTxn"\} (\S+)`, 1},
		{`basin_kafka_request_duration_seconds_count\{request="Fetch"\} (\S+)`, 1},
		{`basin_kafka_written_bytes_total (\S+)`, 1},
		{`basin_kafka_read_bytes_total (\S+)`, 1},
	} {
		m := regexp.MustCompile(`(?m)^` + want.re).FindStringSubmatch(body)
		if m == nil {
			t.Errorf("/metrics lacks %s", want.re)
			continue
		}
		if v, err := strconv.ParseFloat(m[1], 64); err != nil || v < want.min {
			t.Errorf("%s: %s, want at least %v", m[0], m[1], want.min)
		}
	}
	if t.Failed() {
		var lines []string
		for _, l := range strings.Split(body, "\n") {
			if strings.HasPrefix(l, "basin_") {
				lines = append(lines, l)
			}
		}
		t.Log(fmt.Sprint(strings.Join(lines, "\n")))
	}
}

// scrapeMetrics returns n's /metrics page.
func scrapeMetrics(t *testing.T, n *Node) string {
	t.Helper()
	_, body := getHTTP(t, n, "/metrics")
	return body
}

// TestPprofOnlyWithFlag: /debug/pprof is served only with Options.Pprof
// (--pprof); without it the profiles are 404 and /metrics still serves.
func TestPprofOnlyWithFlag(t *testing.T) {
	n := startNode(t, t.TempDir(), func(o *Options) { o.HTTPAddr = "127.0.0.1:0" })
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/goroutine?debug=1", "/debug/pprof/cmdline", "/debug/pprof/profile?seconds=1", "/debug/pprof/trace?seconds=1"} {
		resp, err := http.Get("http://" + n.HTTPAddr() + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s without --pprof: %d, want 404", path, resp.StatusCode)
		}
	}
	if body := scrapeMetrics(t, n); !strings.Contains(body, "go_goroutines") {
		t.Error("/metrics lacks go_goroutines")
	}
}
