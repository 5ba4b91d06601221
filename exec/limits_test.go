package exec

import (
	"context"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/internal/poll"
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
	must("SET basin.max_statement_bytes = '8MB'")
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

// TestStatementLimits sends statements that once took gigabytes to
// parse: a 2 MB SELECT 1+1+... reached 3.4 GB. basin.max_statement_bytes
// refuses a statement too long before it is lexed (54000), an expression
// nested too deep is refused while it is lexed (54001), so what parses
// fits in bounded memory, and statement_timeout covers the parse.
func TestStatementLimits(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	e := startTableEngine(ctx, t, "CREATE TABLE t (id BIGINT PRIMARY KEY, v VARCHAR) WITH (kafka_topic = 't', value_format = 'json', partitions = 1)")
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
	plus := func(n int) string { return "SELECT 1" + strings.Repeat("+1", (n-len("SELECT 1"))/2) }

	// Too long: refused by its size, naming the size and the setting,
	// on both protocols.
	big := plus(2 << 20)
	_, err := run(big)
	if pe, ok := pgerr.As(err); !ok || pe.Code != pgerr.ProgramLimitExceeded ||
		!strings.Contains(pe.Message, strconv.Itoa(len(big))+" bytes") || !strings.Contains(pe.Message, "basin.max_statement_bytes (1MB)") {
		t.Fatalf("2 MB statement: %v, want 54000 naming its size and basin.max_statement_bytes", err)
	}
	if _, err := s.Prepare(ctx, big, nil); !isCode(err, pgerr.ProgramLimitExceeded) {
		t.Fatalf("2 MB statement prepared: %v, want 54000", err)
	}

	// Just under the bound and as deep as it can be: refused for its
	// depth, in bounded memory.
	deep := plus(1<<20 - 16)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = run(deep)
	runtime.ReadMemStats(&after)
	if !isCode(err, pgerr.StatementTooComplex) {
		t.Fatalf("1 MB SELECT 1+1+...: %v, want 54001", err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 200<<20 {
		t.Fatalf("1 MB SELECT 1+1+... allocated %d MiB, want under 200", alloc>>20)
	}
	// Deep but within the bound runs.
	if w := must(plus(8000)); w.rows[0][0] != int64(3997) {
		t.Fatalf("SELECT 1+1+... (3996 pluses) = %v", w.rows[0][0])
	}

	// The setting: shown in its unit, validated, raised for a session.
	must("SET basin.max_statement_bytes = 4194304")
	if w := must("SHOW basin.max_statement_bytes"); w.rows[0][0] != "4MB" {
		t.Fatalf("SHOW basin.max_statement_bytes = %v, want 4MB", w.rows[0][0])
	}
	if _, err := run("SET basin.max_statement_bytes = 'lots'"); !isCode(err, pgerr.InvalidParameterValue) {
		t.Fatalf("SET basin.max_statement_bytes = 'lots': %v, want 22023", err)
	}
	if _, err := run(big); !isCode(err, pgerr.StatementTooComplex) {
		t.Fatalf("2 MB statement under a 4MB limit: %v, want 54001 (too deep)", err)
	}

	// statement_timeout covers parsing: a 3 MB IN list takes longer than
	// 1 ms to parse.
	must("SET statement_timeout = 1")
	if _, err := run("SELECT 1 WHERE 1 IN (" + inList(400000, 1) + ")"); !isCode(err, pgerr.QueryCanceled) {
		t.Fatalf("3 MB IN list under statement_timeout 1ms: %v, want 57014", err)
	}
	if _, err := s.Prepare(ctx, "SELECT id FROM t WHERE id IN ("+inList(400000, 1)+")", nil); !isCode(err, pgerr.QueryCanceled) {
		t.Fatalf("3 MB IN list prepared under statement_timeout 1ms: %v, want 57014", err)
	}
	if s.prepared.Load() != 0 {
		t.Fatalf("a Parse that timed out counts as a prepared statement")
	}
	must("RESET statement_timeout")
	must("RESET basin.max_statement_bytes")
	if _, err := run(big); !isCode(err, pgerr.ProgramLimitExceeded) {
		t.Fatalf("2 MB statement after RESET: %v, want 54000", err)
	}
}

// TestQueryMemoryAndPreparedLimits bounds what one query and one session
// may hold: a query whose ORDER BY, GROUP BY or DISTINCT state passes
// basin.query_memory fails with 53200 naming the setting (basin does not
// spill to disk), and a session holds at most
// basin.max_prepared_statements prepared statements (53000), closing
// one making room for another.
func TestQueryMemoryAndPreparedLimits(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	e := startTableEngine(ctx, t, "CREATE TABLE t (id BIGINT PRIMARY KEY, v VARCHAR) WITH (kafka_topic = 't', value_format = 'json', partitions = 2)")
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
	const rows = 3000 // of about 1 KB each: 3 MB to sort
	pad := strings.Repeat("x", 1000)
	for start := 0; start < rows; start += 500 {
		var b strings.Builder
		b.WriteString("INSERT INTO t (id, v) VALUES ")
		for i := start; i < start+500; i++ {
			if i > start {
				b.WriteString(", ")
			}
			b.WriteString("(" + strconv.Itoa(i) + ", '" + strconv.Itoa(i) + pad + "')")
		}
		must(b.String())
	}
	if !waitUntil(30*time.Second, func() bool {
		w, err := run("SELECT count(*) FROM t")
		return err == nil && w.rows[0][0] == int64(rows)
	}) {
		t.Fatalf("the table never showed its %d rows", rows)
	}

	if w := must("SHOW basin.query_memory"); w.rows[0][0] != "256MB" {
		t.Fatalf("SHOW basin.query_memory = %v, want 256MB", w.rows[0][0])
	}
	if w := must("SELECT id, v FROM t ORDER BY v DESC"); len(w.rows) != rows {
		t.Fatalf("ORDER BY under the default: %d rows, want %d", len(w.rows), rows)
	}
	must("SET basin.query_memory = '1MB'")
	for _, c := range []struct{ q, what string }{
		{"SELECT id, v FROM t ORDER BY v DESC", "ORDER BY"},
		{"SELECT v, count(*) FROM t GROUP BY v", "GROUP BY"},
		{"SELECT DISTINCT v FROM t", "DISTINCT"},
	} {
		_, err := run(c.q)
		if pe, ok := pgerr.As(err); !ok || pe.Code != pgerr.OutOfMemory ||
			!strings.Contains(pe.Message, "basin.query_memory (1MB) for its "+c.what) || !strings.Contains(pe.Hint, "spill") {
			t.Fatalf("%s over 3 MB under basin.query_memory 1MB: %v, want 53200 naming the setting", c.q, err)
		}
	}
	// Catalog queries (the general query engine) too: a join of
	// catalogs without conditions.
	_, err := run("SELECT a.attname, b.attname FROM pg_attribute a, pg_attribute b")
	if pe, ok := pgerr.As(err); !ok || pe.Code != pgerr.OutOfMemory || !strings.Contains(pe.Message, "basin.query_memory (1MB) for its join") {
		t.Fatalf("catalog cross join under basin.query_memory 1MB: %v, want 53200", err)
	}
	// What fits still runs, and the session goes on. ORDER BY ... LIMIT
	// keeps only the rows that can still be among the first: the whole
	// 3 MB sorts within 1MB.
	if w := must("SELECT id FROM t ORDER BY id LIMIT 3"); len(w.rows) != 3 || w.rows[2][0] != int64(2) {
		t.Fatalf("ORDER BY id LIMIT 3 under 1MB: %v", w.rows)
	}
	w := must("SELECT id, v FROM t ORDER BY v DESC LIMIT 4 OFFSET 2")
	// v is id then x's; in text order, descending: 9x..., 99x..., 999x...,
	// 998x..., 997x..., 996x..., ...
	var got []int64
	for _, r := range w.rows {
		got = append(got, r[0].(int64))
	}
	if want := []int64{999, 998, 997, 996}; !slices.Equal(got, want) {
		t.Fatalf("ORDER BY v DESC LIMIT 4 OFFSET 2 under 1MB: ids %v, want %v", got, want)
	}
	// Ties keep their arrival order, as a stable sort would, and a
	// LIMIT past the rows returns them all.
	if w := must("SELECT id FROM t ORDER BY id % 2 LIMIT 5000"); len(w.rows) != rows || w.rows[0][0].(int64)%2 != 0 || w.rows[rows-1][0].(int64)%2 != 1 {
		t.Fatalf("ORDER BY id %% 2 LIMIT 5000: %d rows", len(w.rows))
	}
	if w := must("SELECT id FROM t ORDER BY id LIMIT 0"); len(w.rows) != 0 {
		t.Fatalf("LIMIT 0: %d rows", len(w.rows))
	}
	if _, err := run("SET basin.query_memory = '1kB'"); !isCode(err, pgerr.InvalidParameterValue) {
		t.Fatalf("SET basin.query_memory = '1kB': %v, want 22023", err)
	}
	must("RESET basin.query_memory")
	if w := must("SELECT v, count(*) FROM t GROUP BY v"); len(w.rows) != rows {
		t.Fatalf("GROUP BY after RESET: %d rows, want %d", len(w.rows), rows)
	}

	// Prepared statements.
	if w := must("SHOW basin.max_prepared_statements"); w.rows[0][0] != "1000" {
		t.Fatalf("SHOW basin.max_prepared_statements = %v, want 1000", w.rows[0][0])
	}
	must("SET basin.max_prepared_statements = 20")
	var held []*Prepared
	for i := 0; i < 20; i++ {
		p, err := s.Prepare(ctx, "SELECT v FROM t WHERE id = "+strconv.Itoa(i), nil)
		if err != nil {
			t.Fatalf("prepared statement %d of 20: %v", i+1, err)
		}
		held = append(held, p)
	}
	_, err = s.Prepare(ctx, "SELECT 1", nil)
	if pe, ok := pgerr.As(err); !ok || pe.Code != pgerr.InsufficientResources || !strings.Contains(pe.Message, "basin.max_prepared_statements (20)") {
		t.Fatalf("21st prepared statement: %v, want 53000 naming basin.max_prepared_statements (20)", err)
	}
	// A failed Parse does not count; a closed statement gives its place
	// back (twice closed, once).
	if _, err := s.Prepare(ctx, "SELEC 1", nil); !isCode(err, pgerr.SyntaxError) {
		t.Fatalf("bad Parse: %v", err)
	}
	held[0].Close()
	held[0].Close()
	p, err := s.Prepare(ctx, "SELECT 1", nil)
	if err != nil {
		t.Fatalf("after closing one: %v", err)
	}
	if _, err := s.Prepare(ctx, "SELECT 2", nil); !isCode(err, pgerr.InsufficientResources) {
		t.Fatalf("past the limit again: %v, want 53000", err)
	}
	p.Close()
	for _, p := range held[1:] {
		p.Close()
	}
	if s.prepared.Load() != 0 {
		t.Fatalf("%d prepared statements counted after closing all", s.prepared.Load())
	}
	// The plan cache's statements are not the client's.
	for i := 0; i < 30; i++ {
		must("SELECT v FROM t WHERE id = " + strconv.Itoa(i))
	}
	if s.prepared.Load() != 0 {
		t.Fatalf("plan cache counted as prepared statements: %d", s.prepared.Load())
	}
}

// waitUntil reports whether cond held within d (internal/poll).
func waitUntil(d time.Duration, cond func() bool) bool { return poll.Cond(d, cond) }
