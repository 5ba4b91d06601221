package exec

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/basindb/basin/internal/pgerr"
)

// inList is "0, 1, ..., n-1" times step: the values of an IN list.
func inList(n, step int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(i * step))
	}
	return b.String()
}

// TestLongInListLookups reads 60k keys with key IN (...) from a table
// holding a third of them. Each found row was once tested against the
// whole list again (the filter), so the read cost the square of the
// list's length (60k keys took 11 s) and ignored statement_timeout and
// cancel: the list is now a set, and the lookups watch the statement's
// context.
func TestLongInListLookups(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	e := startTableEngine(ctx, t, "CREATE TABLE t (id BIGINT PRIMARY KEY, v VARCHAR) WITH (kafka_topic = 't', value_format = 'json', partitions = 4)")
	s := e.NewSession(map[string]string{"user": "u"}, Client{})
	defer s.Close()
	run := func(q string) (*testWriter, error) {
		w := &testWriter{}
		return w, s.Query(ctx, q, w)
	}
	must := func(q string) *testWriter {
		t.Helper()
		w, err := run(q)
		if err != nil {
			t.Fatalf("%.80s: %v", q, err)
		}
		return w
	}
	const keys, rows = 60000, 20000 // rows: every third key
	for start := 0; start < rows; start += 5000 {
		var b strings.Builder
		b.WriteString("INSERT INTO t (id, v) VALUES ")
		for i := start; i < start+5000; i++ {
			if i > start {
				b.WriteString(", ")
			}
			b.WriteString("(" + strconv.Itoa(3*i) + ", 'v" + strconv.Itoa(i) + "')")
		}
		must(b.String())
	}
	if !waitUntil(60*time.Second, func() bool {
		w, err := run("SELECT count(*) FROM t")
		return err == nil && w.rows[0][0] == int64(rows)
	}) {
		t.Fatalf("the table never showed its %d rows", rows)
	}

	// Every key of the list, and a second condition on the row.
	list := inList(keys, 1)
	w := must("SELECT id, v FROM t WHERE id IN (" + list + ") AND v <> 'v7'")
	if len(w.rows) != rows-1 {
		t.Fatalf("IN list of %d keys: %d rows, want %d", keys, len(w.rows), rows-1)
	}
	seen := make(map[int64]bool, len(w.rows))
	for _, r := range w.rows {
		id := r[0].(int64)
		if id%3 != 0 || r[1] != "v"+strconv.FormatInt(id/3, 10) || id == 21 || seen[id] {
			t.Fatalf("IN list: unexpected row %v", r)
		}
		seen[id] = true
	}
	// NOT IN and NULL in the list keep SQL's meaning.
	if w := must("SELECT count(*) FROM t WHERE id NOT IN (" + list + ")"); w.rows[0][0] != int64(0) {
		t.Fatalf("NOT IN every key: count %v, want 0", w.rows[0][0])
	}
	if w := must("SELECT count(*) FROM t WHERE id + 0 IN (0, 3, NULL, 4)"); w.rows[0][0] != int64(2) {
		t.Fatalf("IN with NULL: count %v, want 2", w.rows[0][0])
	}
	if w := must("SELECT count(*) FROM t WHERE id + 0 NOT IN (0, 3, NULL)"); w.rows[0][0] != int64(0) {
		t.Fatalf("NOT IN with NULL: count %v, want 0", w.rows[0][0])
	}

	// A statement_timeout stops a huge list's lookups.
	must("SET statement_timeout = 50")
	huge := "SELECT id FROM t WHERE id IN (" + inList(400000, 1) + ")"
	if _, err := run(huge); !isCode(err, pgerr.QueryCanceled) {
		t.Fatalf("IN list of 400k keys under statement_timeout 50: %v, want 57014", err)
	}
	must("SET statement_timeout = 0")
	if w := must("SELECT count(*) FROM t WHERE id IN (3, 6, 7)"); w.rows[0][0] != int64(2) {
		t.Fatalf("after the timeout: count %v, want 2", w.rows[0][0])
	}
}
