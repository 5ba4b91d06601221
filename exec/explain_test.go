package exec

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/basindb/basin/internal/pgerr"
)

// TestExplainAnalyze runs EXPLAIN ANALYZE: every operator's line of a
// relational plan carries its actual rows and time, the execution time
// closes the text, TIMING OFF leaves the times out; a prepared EXPLAIN
// ANALYZE runs its query when executed, not when described; a query past
// basin.query_memory fails with 53200 and the session, and another,
// go on.
func TestExplainAnalyze(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	e := startTableEngine(ctx, t, "CREATE TABLE t (id BIGINT PRIMARY KEY, v VARCHAR) WITH (kafka_topic = 't', value_format = 'json', partitions = 2)")
	s := e.NewSession(map[string]string{"user": "u"}, Client{})
	defer s.Close()
	explain := func(q string) []string {
		t.Helper()
		w := &testWriter{}
		if err := s.Query(ctx, q, w); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		var lines []string
		for _, r := range w.rows {
			lines = append(lines, r[0].(string))
		}
		return lines
	}
	if err := s.Query(ctx, "INSERT INTO t (id, v) VALUES (1, 'a'), (2, 'b'), (3, 'c')", &testWriter{}); err != nil {
		t.Fatal(err)
	}

	const q = "SELECT a.id, b.x FROM t a JOIN (SELECT x FROM generate_series(1, 5) x) b ON a.id = b.x ORDER BY 1"
	timed := regexp.MustCompile(`^  .* \(actual rows=\d+ time=\d+\.\d{3}ms\)$`)
	lines := explain("EXPLAIN ANALYZE " + q)
	var ops int
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "  Partitions read of table t: 0, 1 from "):
		case strings.HasPrefix(l, "  Peak memory: "):
		case strings.HasPrefix(l, "      needs columns "): // what the read needs, not an operator
		case regexp.MustCompile(`^  Execution Time: \d+\.\d{3} ms$`).MatchString(l):
		case strings.HasPrefix(l, "  Sort") || strings.Contains(l, "Hash join") || strings.Contains(l, "Read table t"):
			if !timed.MatchString(l) {
				t.Errorf("line %q: want (actual rows=N time=X.XXXms)", l)
			}
			ops++
		default:
			if !timed.MatchString(l) {
				t.Errorf("line %q: want (actual rows=N time=X.XXXms)", l)
			}
		}
	}
	if ops != 3 || !strings.HasPrefix(lines[len(lines)-1], "  Execution Time: ") || !strings.Contains(lines[0], "actual rows=3 ") {
		t.Errorf("EXPLAIN ANALYZE:\n%s", strings.Join(lines, "\n"))
	}
	lines = explain("EXPLAIN (ANALYZE, TIMING OFF) " + q)
	if strings.Contains(strings.Join(lines, "\n"), "time=") || strings.Contains(strings.Join(lines, "\n"), "Execution Time") ||
		!strings.HasSuffix(lines[0], "(actual rows=3)") {
		t.Errorf("EXPLAIN (ANALYZE, TIMING OFF):\n%s", strings.Join(lines, "\n"))
	}

	// Described without running; executed, the query's error is its.
	p, err := s.Prepare(ctx, "EXPLAIN ANALYZE SELECT 1 / (x - 3) FROM generate_series(1, 5) x", nil)
	if err != nil {
		t.Fatalf("prepare: %v", err)
	}
	if cols := p.Columns(); len(cols) != 1 || cols[0].Name != "QUERY PLAN" {
		t.Fatalf("described columns %v", cols)
	}
	pt, err := p.Bind(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pt.Execute(ctx, &testWriter{}, 0); !isCode(err, pgerr.DivisionByZero) {
		t.Fatalf("executing the prepared EXPLAIN ANALYZE: %v, want 22012", err)
	}

	// 53200 under a small limit; the session and another go on.
	other := e.NewSession(map[string]string{"user": "u"}, Client{})
	defer other.Close()
	if err := s.Query(ctx, "SET basin.query_memory = '64kB'", &testWriter{}); err != nil {
		t.Fatal(err)
	}
	const big = "SELECT a FROM generate_series(1, 300) a JOIN generate_series(1, 300) b ON a % 2 = b % 2"
	err = s.Query(ctx, big, &testWriter{})
	if pe, ok := pgerr.As(err); !ok || pe.Code != pgerr.OutOfMemory || !strings.Contains(pe.Message, "basin.query_memory (64kB) for its join") {
		t.Fatalf("join of 45,000 rows under 64kB: %v, want 53200", err)
	}
	if lines := explain("EXPLAIN ANALYZE SELECT 1"); !strings.Contains(lines[0], "actual rows=1") {
		t.Fatalf("after the failure: %v", lines)
	}
	w := &testWriter{}
	if err := other.Query(ctx, "SELECT count(*) FROM ("+big+") j", w); err != nil || w.rows[0][0] != int64(45000) {
		t.Fatalf("the other session under the default limit: %v %v", w.rows, err)
	}
}
