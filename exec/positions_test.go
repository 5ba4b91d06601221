package exec

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/kafka"
	"github.com/basindb/basin/materialize"
	"github.com/basindb/basin/planner"
	"github.com/basindb/basin/sql"
)

// TestMinPosition checks what a session's reads must reflect: its writes
// with basin.read_your_writes, what it has read with
// basin.monotonic_reads, and basin.min_position, merged.
func TestMinPosition(t *testing.T) {
	tok := func(p materialize.Position) string { return p.String() }
	cases := []struct {
		name             string
		ryw, monotonic   string
		writes, seen     materialize.Position
		minPosition      string
		want             materialize.Position
		wantUnrestricted bool
	}{
		{name: "nothing", ryw: "on", monotonic: "on", wantUnrestricted: true},
		{name: "writes", ryw: "on", monotonic: "off",
			writes: materialize.Position{"t": {0: 3}}, seen: materialize.Position{"t": {0: 9}},
			want: materialize.Position{"t": {0: 3}}},
		{name: "seen", ryw: "off", monotonic: "on",
			writes: materialize.Position{"t": {0: 3}}, seen: materialize.Position{"t": {0: 9}},
			want: materialize.Position{"t": {0: 9}}},
		{name: "both off", ryw: "off", monotonic: "off",
			writes: materialize.Position{"t": {0: 3}}, seen: materialize.Position{"t": {0: 9}}, wantUnrestricted: true},
		{name: "merged", ryw: "on", monotonic: "on",
			writes:      materialize.Position{"t": {0: 3, 1: 8}},
			seen:        materialize.Position{"t": {0: 9}, "u": {2: 1}},
			minPosition: tok(materialize.Position{"t": {1: 5, 2: 4}, "v": {0: 7}}),
			want:        materialize.Position{"t": {0: 9, 1: 8, 2: 4}, "u": {2: 1}, "v": {0: 7}}},
		{name: "min_position alone", ryw: "on", monotonic: "off",
			minPosition: tok(materialize.Position{"t": {0: 2}}),
			want:        materialize.Position{"t": {0: 2}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := &Session{vars: map[string]string{"basin.read_your_writes": c.ryw, "basin.monotonic_reads": c.monotonic,
				"basin.min_position": c.minPosition}, writes: c.writes, seen: c.seen}
			got := s.minPosition()
			if c.wantUnrestricted {
				if got != nil {
					t.Fatalf("minPosition = %s, want none", got.Describe())
				}
				return
			}
			if !got.Equal(c.want) {
				t.Fatalf("minPosition = %s, want %s", got.Describe(), c.want.Describe())
			}
			// The session's own positions must not be aliased: a read
			// must not be able to change them.
			got.Advance("t", 0, 1000)
			if c.writes.Covers(materialize.Position{"t": {0: 1000}}) || c.seen.Covers(materialize.Position{"t": {0: 1000}}) {
				t.Fatal("minPosition aliases the session's positions")
			}
		})
	}
}

// TestPositions runs sessions over a runtime and a broker: INSERT ...
// RETURNING _position and SHOW basin.last_write_position give the token
// of the writes, and with basin.monotonic_reads on a read waits for a
// replica that reflects what the session has read before, or fails.
func TestPositions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	e := startTableEngine(ctx, t, "CREATE TABLE t (id BIGINT PRIMARY KEY, v VARCHAR) WITH (kafka_topic = 't', value_format = 'json', partitions = 1)")
	writer := e.NewSession(map[string]string{"user": "w"}, Client{})
	defer writer.Close()
	reader := e.NewSession(map[string]string{"user": "r"}, Client{})
	defer reader.Close()

	run := func(s *Session, q string) (*testWriter, error) {
		t.Helper()
		w := &testWriter{}
		return w, s.Query(ctx, q, w)
	}
	must := func(s *Session, q string) *testWriter {
		t.Helper()
		w, err := run(s, q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return w
	}
	one := func(s *Session, q string) any {
		t.Helper()
		w := must(s, q)
		if len(w.rows) != 1 || len(w.rows[0]) != 1 {
			t.Fatalf("%s: rows %v, want one value", q, w.rows)
		}
		return w.rows[0][0]
	}
	tok := func(next int64) string { return materialize.Position{"t": {0: next}}.String() }

	// Writes: the statement's own records, and the session's all.
	if got := one(writer, "SHOW basin.last_write_position"); got != "" {
		t.Fatalf("last_write_position before any write = %q, want empty", got)
	}
	w := must(writer, "INSERT INTO t VALUES (1, 'a'), (2, 'b') RETURNING _position")
	if len(w.cols) != 1 || w.cols[0].Name != "_position" || w.cols[0].Type != catalog.Varchar {
		t.Fatalf("RETURNING columns %v", w.cols)
	}
	if len(w.rows) != 1 || w.rows[0][0] != tok(2) || w.tag != "INSERT 0 2" {
		t.Fatalf("RETURNING _position: rows %v tag %q, want %q, INSERT 0 2", w.rows, w.tag, tok(2))
	}
	if w := must(writer, "INSERT INTO t VALUES (3, 'c')"); len(w.cols) != 0 || len(w.rows) != 0 {
		t.Fatalf("INSERT without RETURNING returned %v %v", w.cols, w.rows)
	}
	if got := one(writer, "SHOW basin.last_write_position"); got != tok(3) {
		t.Fatalf("last_write_position = %q, want %q", got, tok(3))
	}
	if got := one(writer, "SELECT current_setting('basin.last_write_position')"); got != tok(3) {
		t.Fatalf("current_setting(basin.last_write_position) = %q, want %q", got, tok(3))
	}
	if got := one(reader, "SHOW basin.last_write_position"); got != "" {
		t.Fatalf("another session's last_write_position = %q, want empty", got)
	}

	// The extended protocol describes the result before running it.
	p, err := writer.Prepare(ctx, "INSERT INTO t VALUES ($1, $2) RETURNING _position", nil)
	if err != nil {
		t.Fatal(err)
	}
	if cols := p.Columns(); len(cols) != 1 || cols[0].Name != "_position" {
		t.Fatalf("prepared INSERT ... RETURNING describes %v", cols)
	}
	pt, err := p.Bind(ctx, []any{int64(4), "d"})
	if err != nil {
		t.Fatal(err)
	}
	w = &testWriter{}
	if _, err := pt.Execute(ctx, w, 0); err != nil {
		t.Fatal(err)
	}
	if len(w.rows) != 1 || w.rows[0][0] != tok(4) || w.tag != "INSERT 0 1" {
		t.Fatalf("portal INSERT ... RETURNING _position: rows %v tag %q, want %q", w.rows, w.tag, tok(4))
	}

	// A read records where it was served.
	must(reader, "SET basin.monotonic_reads = on")
	must(reader, "SET basin.position_wait = '50ms'")
	if !waitUntil(15*time.Second, func() bool {
		n, err := run(reader, "SELECT count(*) FROM t")
		return err == nil && n.rows[0][0] == int64(4)
	}) {
		t.Fatal("the table never showed the 4 rows")
	}
	if !reader.seen.Equal(materialize.Position{"t": {0: 4}}) {
		t.Fatalf("seen = %s, want t/0:4", reader.seen.Describe())
	}

	// Another replica (a read forwarded to a fresher node) served the
	// session a later state than this node's replica has: with
	// monotonic reads, this node's replica may not serve it until it
	// catches up.
	reader.afterRead([]PartitionRead{{Partition: 0, ServedBy: "b", Role: "standby", Position: tok(5)}}, &testWriter{})
	_, err = run(reader, "SELECT count(*) FROM t")
	if pe, ok := pgerr.As(err); !ok || pe.Code != pgerr.ObjectNotInPrerequisiteState || !strings.Contains(pe.Message, "has not reached the position") {
		t.Fatalf("read behind what the session saw: %v, want 55000 for the position", err)
	}
	must(reader, "SET basin.monotonic_reads = off")
	if got := one(reader, "SELECT count(*) FROM t"); got != int64(4) {
		t.Fatalf("without monotonic reads: count %v, want 4", got)
	}

	// Once the replica reaches it, the read waits for it rather than
	// showing less: count is 5 without polling.
	must(reader, "SET basin.monotonic_reads = on")
	must(reader, "SET basin.position_wait = '30s'")
	must(writer, "INSERT INTO t VALUES (5, 'e')")
	if got := one(reader, "SELECT count(*) FROM t"); got != int64(5) {
		t.Fatalf("monotonic read: count %v, want 5", got)
	}

	// The setting is a Boolean; the write position is read-only.
	if _, err := run(reader, "SET basin.monotonic_reads = sometimes"); !isCode(err, pgerr.InvalidParameterValue) {
		t.Fatalf("SET basin.monotonic_reads = sometimes: %v", err)
	}
	if _, err := run(writer, "SET basin.last_write_position = ''"); !isCode(err, pgerr.CantChangeRuntimeParam) {
		t.Fatalf("SET basin.last_write_position: %v", err)
	}
	must(writer, "RESET ALL")
	must(writer, "DISCARD ALL")
	if got := one(writer, "SHOW basin.last_write_position"); got != tok(5) {
		t.Fatalf("last_write_position after RESET ALL and DISCARD ALL = %q, want %q", got, tok(5))
	}
}

func isCode(err error, code pgerr.Code) bool {
	pe, ok := pgerr.As(err)
	return ok && pe.Code == code
}

// testWriter records a statement's result.
type testWriter struct {
	cols    []catalog.Column
	rows    [][]any
	tag     string
	notices []*pgerr.Error
}

func (w *testWriter) Columns(cols []catalog.Column) error {
	w.cols = append([]catalog.Column{}, cols...)
	return nil
}
func (w *testWriter) Row(r []any) error {
	w.rows = append(w.rows, append([]any{}, r...))
	return nil
}
func (w *testWriter) Complete(tag string) error   { w.tag = tag; return nil }
func (w *testWriter) Empty() error                { return errors.New("empty query") }
func (w *testWriter) Notice(n *pgerr.Error) error { w.notices = append(w.notices, n); return nil }

// startTableEngine starts a broker, a runtime over a Pebble database in a
// temporary directory and an engine whose catalog holds the one table
// create declares (the topic made, its tasks running), all closed when
// tb ends: the engine of a single node below the wire protocol. mod, if
// given, adjusts the runtime's options first.
func startTableEngine(ctx context.Context, tb testing.TB, create string, mod ...func(*RuntimeOptions)) *Engine {
	tb.Helper()
	broker, err := kafka.StartBroker(kafka.BrokerOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = broker.Close() })
	db, err := materialize.Open(materialize.Options{Dir: tb.TempDir(), NoSync: true, CacheSize: 32 << 20})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = db.Close() })
	ropts := RuntimeOptions{Brokers: broker.Addrs(), Cluster: "t", Node: "a", DB: db}
	for _, m := range mod {
		m(&ropts)
	}
	rt, err := NewRuntime(ropts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(rt.Close)
	prod, err := kafka.NewClient(kafka.ClientOptions{Brokers: broker.Addrs(), ClientID: "test"}, kafka.ProducerOpts()...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(prod.Close)
	cat := catalog.New()
	st, err := sql.Parse(create)
	if err != nil {
		tb.Fatal(err)
	}
	rel, err := planner.PlanCreateSource(cat, st[0].(*sql.CreateSource), create)
	if err != nil {
		tb.Fatal(err)
	}
	cat.Apply(1, &catalog.Command{Op: catalog.OpCreate, Relation: rel})
	rel, _ = cat.Lookup(rel.Name)
	if _, _, err := kafka.EnsureTopic(ctx, rt.Admin(), rel.Topic, rel.Partitions, nil); err != nil {
		tb.Fatal(err)
	}
	if err := rt.StartTable(rel); err != nil {
		tb.Fatal(err)
	}
	return &Engine{Catalog: cat, Runtime: rt, Producer: prod, Cluster: "t", Node: "a"}
}
