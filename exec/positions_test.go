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
	"github.com/basindb/basin/pgcodec"
	"github.com/basindb/basin/planner"
	"github.com/basindb/basin/pull"
	"github.com/basindb/basin/sql"
	"github.com/basindb/basin/stream"
)

// TestReadBound checks what a session's read of one partition must
// reflect: the part of its writes (basin.read_your_writes) and of
// basin.min_position that the partition can show, and what its earlier
// reads of that same partition returned (basin.monotonic_reads), not
// what they returned of other partitions or of other relations; and
// where each offset came from.
func TestReadBound(t *testing.T) {
	orders := &catalog.Relation{Name: "orders", Kind: catalog.KindStream, Topic: "orders", Partitions: 4}
	kv := &catalog.Relation{Name: "kv", Kind: catalog.KindTable, Topic: "kv", Partitions: 4, Version: 3}
	byRegion := &stream.PersistentQuery{Rel: &catalog.Relation{Name: "by_region", Kind: catalog.KindView, Partitions: 4, Version: 5},
		Plan: &planner.ViewPlan{Source: orders, Repartition: true, Positions: []planner.PositionSource{{Topic: "orders", All: true}}}}
	perID := &stream.PersistentQuery{Rel: &catalog.Relation{Name: "per_id", Kind: catalog.KindView, Partitions: 4, Version: 6},
		Plan: &planner.ViewPlan{Source: orders, Positions: []planner.PositionSource{{Topic: "orders"}}}}
	table := &stream.PersistentQuery{Rel: kv}
	reads := func(q *stream.PersistentQuery, p int32, pos materialize.Position) []pull.PartitionRead {
		return []pull.PartitionRead{{Partition: p, Position: pos.String()}}
	}
	ts := func(p int32) *stream.TaskState { return &stream.TaskState{Partition: p} }

	s := &Session{vars: map[string]string{"basin.read_your_writes": "on", "basin.monotonic_reads": "on"}}
	// by_region's partitions each reflect every source partition, at
	// their own pace; per_id's partition 1 only source partition 1.
	s.noteReads(byRegion.Rel, reads(byRegion, 0, materialize.Position{"orders": {0: 50, 1: 90, 2: 70, 3: 10}}))
	s.noteReads(byRegion.Rel, reads(byRegion, 2, materialize.Position{"orders": {0: 40, 1: 99, 2: 60, 3: 12}}))
	s.noteReads(byRegion.Rel, reads(byRegion, 0, materialize.Position{"orders": {0: 55, 1: 91, 2: 72, 3: 11}}))
	s.noteReads(perID.Rel, reads(perID, 1, materialize.Position{"orders": {1: 80}}))
	s.noteReads(table.Rel, []pull.PartitionRead{{Partition: 2, Position: materialize.Position{"kv": {2: 7}}.String()}, {Partition: 3}})

	bound := func() *pull.ReadOptions {
		opts := &pull.ReadOptions{}
		s.fillBound(opts, s.derivedSettings())
		return opts
	}
	type want struct {
		topic string
		want  map[int32]int64
		from  pull.BoundSource
	}
	check := func(name string, env *pull.ReadOptions, q *stream.PersistentQuery, p int32, w want) {
		t.Helper()
		b := env.Bound(q, ts(p))
		wantPos := materialize.Position{}
		for sp, off := range w.want {
			wantPos.Advance(w.topic, sp, off)
		}
		if !b.Want.Equal(wantPos) || b.Sources() != w.from {
			t.Fatalf("%s: bound of %s partition %d: %v from %q; want %s %v from %q",
				name, q.Rel.Name, p, b.Want, b.Sources(), w.topic, w.want, w.from)
		}
	}
	env := bound()
	if !env.Bounded() || env.Writes != nil || env.MinPosition != nil {
		t.Fatalf("reads alone: bounded %v, writes %v, min_position %v", env.Bounded(), env.Writes, env.MinPosition)
	}
	// Partition 0 of by_region is held to what was read of it (the
	// merge of both reads), not to partition 2's 99 of orders/1.
	check("reads", env, byRegion, 0, want{"orders", map[int32]int64{0: 55, 1: 91, 2: 72, 3: 11}, pull.FromReads})
	check("reads", env, byRegion, 2, want{"orders", map[int32]int64{0: 40, 1: 99, 2: 60, 3: 12}, pull.FromReads})
	// Partitions never read, and other relations over the same source,
	// are not held to it.
	check("reads", env, byRegion, 1, want{"orders", map[int32]int64{}, 0})
	check("reads", env, perID, 0, want{"orders", map[int32]int64{}, 0})
	check("reads", env, perID, 1, want{"orders", map[int32]int64{1: 80}, pull.FromReads})
	check("reads", env, table, 2, want{"kv", map[int32]int64{2: 7}, pull.FromReads})
	check("reads", env, table, 3, want{"kv", map[int32]int64{}, 0})

	// Writes and basin.min_position bound every relation over their
	// topics, to the part a partition can show.
	s.noteWrites(materialize.Position{"orders": {1: 95, 3: 20}})
	s.setVar("basin.min_position", materialize.Position{"orders": {0: 60}, "kv": {2: 9}}.String())
	env = bound()
	check("all", env, byRegion, 0, want{"orders", map[int32]int64{0: 60, 1: 95, 2: 72, 3: 20}, pull.FromWrites | pull.FromReads | pull.FromSetting})
	check("all", env, perID, 1, want{"orders", map[int32]int64{1: 95}, pull.FromWrites | pull.FromReads})
	check("all", env, perID, 2, want{"orders", map[int32]int64{}, 0})
	check("all", env, perID, 3, want{"orders", map[int32]int64{3: 20}, pull.FromWrites})
	check("all", env, table, 2, want{"kv", map[int32]int64{2: 9}, pull.FromReads | pull.FromSetting})
	b := env.Bound(byRegion, ts(0))
	for _, c := range []struct {
		sp   int32
		off  int64
		from pull.BoundSource
	}{{0, 60, pull.FromSetting}, {0, 55, pull.FromReads | pull.FromSetting}, {1, 95, pull.FromWrites}, {2, 72, pull.FromReads}, {3, 20, pull.FromWrites}} {
		if got := b.From("orders", c.sp, c.off); got != c.from {
			t.Errorf("offset %d of orders/%d comes from %q, want %q", c.off, c.sp, got, c.from)
		}
	}
	if got, want := (pull.FromWrites | pull.FromReads).String(), "the session's writes, with basin.read_your_writes on and what the session's earlier reads of the partition returned, with basin.monotonic_reads on"; got != want {
		t.Errorf("names %q, want %q", got, want)
	}
	if got := pull.FromReads.Hint(); got != "SET basin.position_wait to wait longer, or SET basin.monotonic_reads = off to read what is there." {
		t.Errorf("hint %q", got)
	}

	// The settings turn each part off; the bound is a copy a read may
	// not change the session through.
	s.setVar("basin.monotonic_reads", "off")
	s.setVar("basin.min_position", "")
	env = bound()
	check("writes only", env, byRegion, 0, want{"orders", map[int32]int64{1: 95, 3: 20}, pull.FromWrites})
	env.Writes.Advance("orders", 1, 1000)
	if w, _ := s.writes.Get("orders", 1); w != 95 {
		t.Fatalf("a read's bound changed the session's writes: orders/1 at %d", w)
	}
	s.setVar("basin.read_your_writes", "off")
	if env := bound(); env.Bounded() {
		t.Fatalf("everything off: bound %v %v %v", env.Writes, env.Seen, env.MinPosition)
	}
	// What was read is kept apart from what served it: a later read
	// merging into it leaves the published position alone.
	published := materialize.Position{"kv": {2: 8}}
	s.noteReads(table.Rel, []pull.PartitionRead{{Partition: 2, Position: published.String(), Parsed: published}})
	s.noteReads(table.Rel, []pull.PartitionRead{{Partition: 2, Position: materialize.Position{"kv": {2: 11}}.String()}})
	if got, _ := published.Get("kv", 2); got != 8 {
		t.Fatalf("noting a read changed the position it was served at: %d", got)
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
	rel, _ := e.Catalog.Lookup("t")
	if seen := reader.seen[pull.SeenKey{Store: rel.StoreName(), Partition: 0}]; !seen.Equal(materialize.Position{"t": {0: 4}}) {
		t.Fatalf("seen = %s, want t/0:4", seen.Describe())
	}

	// Another replica (a read forwarded to a fresher node) served the
	// session a later state than this node's replica has: with
	// monotonic reads, this node's replica may not serve it until it
	// catches up.
	reader.afterRead(rel, []pull.PartitionRead{{Partition: 0, ServedBy: "b", Role: "standby", Position: tok(5)}}, &testWriter{})
	_, err = run(reader, "SELECT count(*) FROM t")
	if pe, ok := pgerr.As(err); !ok || pe.Code != pgerr.ObjectNotInPrerequisiteState || !strings.Contains(pe.Message, "has not reached the position") {
		t.Fatalf("read behind what the session saw: %v, want 55000 for the position", err)
	} else if want := "It reflects t partition 0 up to offset 4; the read needs offset 5 (what the session's earlier reads of the partition returned, with basin.monotonic_reads on)."; pe.Detail != want {
		t.Fatalf("read behind what the session saw: detail %q, want %q", pe.Detail, want)
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
func (w *testWriter) Complete(tag string) error                           { w.tag = tag; return nil }
func (w *testWriter) Empty() error                                        { return errors.New("empty query") }
func (w *testWriter) Notice(n *pgerr.Error) error                         { w.notices = append(w.notices, n); return nil }
func (w *testWriter) Flush() error                                        { return nil }
func (w *testWriter) CopyOut([]catalog.Column, *pgcodec.CopyFormat) error { return nil }

// startTableEngine starts a broker, a runtime over a Pebble database in a
// temporary directory and an engine whose catalog holds the one table
// create declares (the topic made, its tasks running), all closed when
// tb ends: the engine of a single node below the wire protocol. mod, if
// given, adjusts the runtime's options first.
func startTableEngine(ctx context.Context, tb testing.TB, create string, mod ...func(*stream.RuntimeOptions)) *Engine {
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
	ropts := stream.RuntimeOptions{Brokers: broker.Addrs(), Cluster: "t", Node: "a", DB: db}
	for _, m := range mod {
		m(&ropts)
	}
	rt, err := stream.NewRuntime(ropts)
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
	return &Engine{Catalog: cat, Runtime: rt, Reads: pull.New(rt), Producer: prod, Cluster: "t", Node: "a"}
}

// TestReadPositionIsTheData checks that a read reports the position of
// the data it read, not the one its task last published: between a
// commit to the store and its publication a read sees rows past the
// published position, and a monotonic session that kept that position
// could then be served less by a replica between the two. The test
// commits a row to the table's store without its task, as a commit not
// yet published.
func TestReadPositionIsTheData(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	e := startTableEngine(ctx, t, "CREATE TABLE t (id BIGINT PRIMARY KEY, v VARCHAR) WITH (kafka_topic = 't', value_format = 'json', partitions = 1)")
	s := e.NewSession(map[string]string{"user": "r"}, Client{})
	defer s.Close()
	run := func(q string) *testWriter {
		t.Helper()
		w := &testWriter{}
		if err := s.Query(ctx, q, w); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return w
	}
	run("INSERT INTO t VALUES (1, 'a'), (2, 'b')")
	run("SET basin.monotonic_reads = on")
	if !waitUntil(15*time.Second, func() bool {
		w := &testWriter{}
		return s.Query(ctx, "SELECT count(*) FROM t", w) == nil && w.rows[0][0] == int64(2)
	}) {
		t.Fatal("the table never showed its 2 rows")
	}
	rel, _ := e.Catalog.Lookup("t")
	store := e.Runtime.DB().Store(materialize.StoreID{View: rel.StoreName(), Partition: 0})
	cp, err := store.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	key1, _ := materialize.EncodeKey(nil, []any{int64(1)})
	val, ok, err := store.Get(key1)
	if err != nil || !ok {
		t.Fatalf("row 1 in the store: %v %v", ok, err)
	}
	key9, _ := materialize.EncodeKey(nil, []any{int64(9)})
	cp = cp.Clone()
	cp.ChangelogOffset++
	cp.Input["t"][0]++
	cp.Position["t"][0]++
	b := store.NewBatch()
	b.Set(key9, val)
	if err := b.Commit(cp); err != nil {
		t.Fatal(err)
	}
	seen := pull.SeenKey{Store: rel.StoreName(), Partition: 0}
	for _, q := range []string{"SELECT count(*) FROM t", "SELECT v FROM t WHERE id = 1"} {
		delete(s.seen, seen)
		w := run(q)
		if q == "SELECT count(*) FROM t" && w.rows[0][0] != int64(3) {
			t.Fatalf("%s = %v, want the 3 rows of the store", q, w.rows)
		}
		if got := s.seen[seen]; !got.Equal(cp.Position) {
			t.Fatalf("%s: read at %s, want %s, the position of the data it read", q, got.Describe(), cp.Position.Describe())
		}
	}
}
