package exec

import (
	"context"
	"testing"
	"time"
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
