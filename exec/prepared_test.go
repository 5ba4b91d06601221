package exec

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/basindb/basin/pull"
	"github.com/basindb/basin/sql"
)

// TestPortalReuse checks the memory a closed portal leaves to its
// statement's next Bind: a portal closed after running is made again,
// with the new parameters; an open one, and one whose execution failed
// but that the client did not close, are not.
func TestPortalReuse(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	e := startTableEngine(ctx, t, "CREATE TABLE t (id BIGINT PRIMARY KEY, v VARCHAR) WITH (kafka_topic = 't', value_format = 'json', partitions = 1)")
	s := e.NewSession(map[string]string{"user": "u"}, Client{})
	defer s.Close()
	if err := s.Query(ctx, "SET basin.read_your_writes = off", &testWriter{}); err != nil {
		t.Fatal(err)
	}
	p, err := s.Prepare(ctx, "SELECT 10 / $1", nil)
	if err != nil {
		t.Fatal(err)
	}
	run := func(pt *Portal) (any, error) {
		t.Helper()
		w := &testWriter{}
		if _, err := pt.Execute(ctx, w, 0); err != nil {
			return nil, err
		}
		if len(w.rows) != 1 {
			t.Fatalf("%d rows", len(w.rows))
		}
		return w.rows[0][0], nil
	}
	bind := func(v int64) *Portal {
		t.Helper()
		pt, err := p.Bind(ctx, []any{v})
		if err != nil {
			t.Fatal(err)
		}
		return pt
	}
	a := bind(2)
	if got, err := run(a); err != nil || got != int64(5) {
		t.Fatalf("10 / 2 = %v, %v", got, err)
	}
	a.Close()
	a.Close() // a second Close changes nothing
	b := bind(5)
	if b != a {
		t.Error("a portal closed after its run was not made again")
	}
	if got, err := run(b); err != nil || got != int64(2) {
		t.Fatalf("10 / 5 = %v, %v", got, err)
	}
	c := bind(1)
	if c == b {
		t.Fatal("an open portal was made again")
	}
	failed := bind(0)
	if _, err := run(failed); err == nil {
		t.Fatal("10 / 0 did not fail")
	}
	d := bind(10)
	if d == failed || d == b || d == c {
		t.Fatal("a portal still open was made again")
	}
	if got, err := run(d); err != nil || got != int64(1) {
		t.Fatalf("10 / 10 = %v, %v", got, err)
	}
}

// TestPortalQueryStateReuse runs prepared and plan-cached statements again
// and again: a portal made again keeps its query state's memory, which
// holds nothing of a finished run, and every run answers as if it were
// the first.
func TestPortalQueryStateReuse(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	e := startTableEngine(ctx, t, "CREATE TABLE t (id BIGINT PRIMARY KEY, v VARCHAR) WITH (kafka_topic = 't', value_format = 'json', partitions = 2)")
	s := e.NewSession(map[string]string{"user": "u"}, Client{})
	defer s.Close()
	var values []string
	for id := 1; id <= 20; id++ {
		values = append(values, fmt.Sprintf("(%d, 'v%d')", id, id))
	}
	if err := s.Query(ctx, "INSERT INTO t VALUES "+strings.Join(values, ", "), &testWriter{}); err != nil {
		t.Fatal(err)
	}
	query := func(text string) [][]any {
		t.Helper()
		w := &testWriter{}
		if err := s.Query(ctx, text, w); err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		return w.rows
	}
	run := func(p *Prepared, params ...any) (*Portal, [][]any) {
		t.Helper()
		pt, err := p.Bind(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		w := &testWriter{}
		if _, err := pt.Execute(ctx, w, 0); err != nil {
			t.Fatal(err)
		}
		pt.Close()
		return pt, w.rows
	}

	lookup, err := s.Prepare(ctx, "SELECT v FROM t WHERE id = $1", nil)
	if err != nil {
		t.Fatal(err)
	}
	var q *pull.Query
	for i, id := range []int64{3, 7, 99, 3, 20} {
		pt, rows := run(lookup, id)
		want := fmt.Sprintf("[[v%d]]", id)
		if id == 99 {
			want = "[]"
		}
		if got := fmt.Sprint(rows); got != want {
			t.Fatalf("id = %d: %s, want %s", id, got, want)
		}
		if last := query("SHOW basin.last_read"); len(last) != 1 {
			t.Fatalf("id = %d: last read %v, want one partition", id, last)
		}
		if i > 0 && pt.q != q {
			t.Fatalf("run %d: the portal's query state was made again", i)
		}
		q = pt.q
	}

	sorted, err := s.Prepare(ctx, "SELECT id FROM t WHERE id > $1 ORDER BY id DESC", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, above := range []int64{15, 0, 18} {
		pt, rows := run(sorted, above)
		if len(rows) != int(20-above) || rows[0][0] != int64(20) || rows[len(rows)-1][0] != above+1 {
			t.Fatalf("id > %d: %v", above, rows)
		}
		if pt.q.Holds() {
			t.Fatalf("id > %d: a finished run's rows are still held", above)
		}
	}

	// The simple protocol's plan cache binds its statement the same way.
	for _, id := range []int{4, 5, 4, 6} {
		if got, want := fmt.Sprint(query(fmt.Sprintf("SELECT v FROM t WHERE id = %d", id))), fmt.Sprintf("[[v%d]]", id); got != want {
			t.Fatalf("id = %d: %s, want %s", id, got, want)
		}
	}
	sh, _ := sql.ShapeOf("SELECT v FROM t WHERE id = 4")
	if e := s.plans[sh.Key]; e == nil || e.p == nil || e.p.spare == nil {
		t.Fatal("a plan-cached statement's portal was not handed back after its run")
	}
}
