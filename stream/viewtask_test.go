package stream

import (
	"fmt"
	"math"
	"math/rand"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/materialize"
	"github.com/basindb/basin/planner"
	"github.com/basindb/basin/serde"
	"github.com/basindb/basin/sql"
)

// planDDL applies CREATE STREAM/TABLE statements and plans CREATE TABLE
// AS ones, returning the view plans by name.
func planDDL(t testing.TB, stmts ...string) map[string]*planner.ViewPlan {
	t.Helper()
	_, plans := planSources(t, stmts...)
	return plans
}

// planSources is planDDL that also returns the streams and tables the
// statements created, in order.
func planSources(t testing.TB, stmts ...string) ([]*catalog.Relation, map[string]*planner.ViewPlan) {
	t.Helper()
	sources, plans, err := planStatements(stmts...)
	if err != nil {
		t.Fatal(err)
	}
	return sources, plans
}

// planStatements is planSources for callers without a testing.TB.
func planStatements(stmts ...string) ([]*catalog.Relation, map[string]*planner.ViewPlan, error) {
	cat := catalog.New()
	var sources []*catalog.Relation
	plans := map[string]*planner.ViewPlan{}
	for i, text := range stmts {
		st, err := sql.Parse(text)
		if err != nil {
			return nil, nil, err
		}
		var rel *catalog.Relation
		var plan *planner.ViewPlan
		switch st := st[0].(type) {
		case *sql.CreateSource:
			rel, err = planner.PlanCreateSource(cat, st, text)
		case *sql.CreateTableAs:
			if plan, err = planner.PlanView(cat, st, text); err == nil {
				rel = plan.View
			}
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", text, err)
		}
		cat.Apply(int64(i+1), &catalog.Command{Op: catalog.OpCreate, Relation: rel})
		if plan != nil {
			plan.View, _ = cat.Lookup(plan.View.Name) // as the node does: the applied relation
			plans[plan.View.Name] = plan
		} else {
			rel, _ = cat.Lookup(rel.Name)
			sources = append(sources, rel)
		}
	}
	return sources, plans, nil
}

// storeContents lists a store's keys and values.
func storeContents(t *testing.T, s *materialize.Store) []string {
	t.Helper()
	it, err := s.NewIter(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var out []string
	for ok := it.First(); ok; ok = it.Next() {
		out = append(out, fmt.Sprintf("%x=%x", it.Key(), it.Value()))
	}
	if err := it.Error(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestViewTaskGroupCache runs each view twice over the same random input
// in random batches: one task keeps its group cache across batches, and
// sometimes loses a batch before it commits and restarts (as run does
// after a failed transaction); the other reads every group from its store
// in every batch, as a task did before the cache. Their stores and
// skipped records must be the same after every batch. The views cover
// HAVING, a select list and aggregates that fail on some records, the
// re-keyed and the source-keyed paths, and deletes through a table.
func TestViewTaskGroupCache(t *testing.T) {
	plans := planDDL(t,
		`CREATE STREAM ev (id BIGINT KEY, grp VARCHAR, v BIGINT) WITH (kafka_topic = 'ev', value_format = 'json', partitions = 1)`,
		`CREATE TABLE tb (k VARCHAR PRIMARY KEY, grp VARCHAR, v BIGINT) WITH (kafka_topic = 'tb', value_format = 'json', partitions = 1)`,
		`CREATE TABLE plain AS SELECT grp, COUNT(*) AS n, SUM(v) AS total FROM ev GROUP BY grp`,
		`CREATE TABLE hidden AS SELECT grp, COUNT(*) AS n, MIN(v) AS lo, SUM(v) AS total FROM ev GROUP BY grp HAVING COUNT(*) % 3 <> 1`,
		`CREATE TABLE failing AS SELECT grp, COUNT(v) AS n, SUM(v) / COUNT(v) AS mean, AVG(v) AS a FROM ev GROUP BY grp`,
		`CREATE TABLE by_id AS SELECT id, COUNT(*) AS n, SUM(v) AS total FROM ev WHERE v IS NULL OR v < 1000 GROUP BY id`,
		`CREATE TABLE positive AS SELECT k, grp, v FROM tb WHERE v > 0`,
	)
	rng := rand.New(rand.NewSource(1))
	ts := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	var ev, tb []*kgo.Record
	for i := range 3000 {
		v := strconv.Itoa(rng.Intn(2000) - 500)
		switch rng.Intn(20) {
		case 0:
			v = "null"
		case 1:
			v = strconv.FormatInt(math.MaxInt64-int64(rng.Intn(10)), 10) // SUM overflows
		case 2:
			v = `"not a number"`
		}
		grp := fmt.Sprintf(`"g%d"`, rng.Intn(40))
		if rng.Intn(50) == 0 {
			grp = "null"
		}
		id := int64(rng.Intn(60))
		ev = append(ev, &kgo.Record{Topic: "ev", Offset: int64(i), Timestamp: ts,
			Key: bigintKey(t, id), Value: fmt.Appendf(nil, `{"grp":%s,"v":%s}`, grp, v)})
		rec := &kgo.Record{Topic: "tb", Offset: int64(i), Timestamp: ts,
			Key: fmt.Appendf(nil, "k%d", rng.Intn(80)), Value: fmt.Appendf(nil, `{"grp":%s,"v":%s}`, grp, v)}
		if rng.Intn(6) == 0 {
			rec.Value = nil // a tombstone
		}
		tb = append(tb, rec)
	}

	db, err := materialize.Open(materialize.Options{Dir: t.TempDir(), NoSync: true, CacheSize: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for n := range plans {
			if !yield(n) {
				return
			}
		}
	}) {
		plan := plans[name]
		t.Run(name, func(t *testing.T) {
			input := ev
			if plan.Source.Name == "tb" {
				input = tb
			}
			if plan.Repartition {
				rk := newRekeyTask(benchRuntime(), plan, newTaskState(0), nil)
				b := &rekeyBatch{next: -1}
				for _, r := range input {
					rk.add(b, r)
				}
				input = b.recs
				for i, r := range input {
					r.Offset = int64(i)
				}
			}
			cached := newViewTask(benchRuntime(), plan, newTaskState(0))
			cached.cache.size = 16 // fewer than the groups: generations turn over
			cached.reset(materialize.Checkpoint{})
			fresh := newViewTask(benchRuntime(), plan, newTaskState(0))
			type side struct {
				t     *viewTask
				store *materialize.Store
				cp    materialize.Checkpoint
				bad   int
			}
			sides := []*side{
				{t: cached, store: db.Store(materialize.StoreID{View: name + "_cached"})},
				{t: fresh, store: db.Store(materialize.StoreID{View: name + "_fresh"})},
			}
			runBatch := func(s *side, recs []*kgo.Record, commit bool) {
				b := s.t.newBatch(s.cp)
				if b.next.Position == nil {
					b.next.Position = materialize.Position{}
				}
				for _, r := range recs {
					if err := s.t.process(s.store, b, r); err != nil {
						t.Fatal(err)
					}
				}
				vals, err := s.t.values(b)
				if err != nil {
					t.Fatal(err)
				}
				if !commit {
					return
				}
				if err := s.t.applyCommitted(s.store, b, vals, b.next.ChangelogOffset+int64(len(vals))+1); err != nil {
					t.Fatal(err)
				}
				s.cp = b.next
				s.bad += len(b.bad)
			}
			for start, n := 0, 0; start < len(input); start += n {
				n = min(1+rng.Intn(120), len(input)-start)
				recs := input[start : start+n]
				if rng.Intn(8) == 0 {
					// The transaction fails; the task restarts from its
					// checkpoint.
					runBatch(sides[0], recs, false)
					sides[0].t.reset(sides[0].cp)
				}
				runBatch(sides[0], recs, true)
				fresh.reset(materialize.Checkpoint{ChangelogOffset: 1}) // as if the store had groups
				runBatch(sides[1], recs, true)
				got, want := storeContents(t, sides[0].store), storeContents(t, sides[1].store)
				if !slices.Equal(got, want) {
					t.Fatalf("after records %d..%d: with the cache the store has\n%v\nwithout\n%v", start, start+n-1, got, want)
				}
				if sides[0].bad != sides[1].bad {
					t.Fatalf("after records %d..%d: %d records skipped with the cache, %d without", start, start+n-1, sides[0].bad, sides[1].bad)
				}
			}
			rows := storeContents(t, sides[0].store)
			t.Logf("%d rows, %d records skipped", len(rows), sides[0].bad)
			if len(rows) == 0 || (plan.Grouped && sides[0].bad == 0) {
				t.Fatal("the input should make rows, and skip records of every grouped view")
			}
		})
	}
}

// bigintKey is the kafka-format key of a BIGINT.
func bigintKey(t *testing.T, id int64) []byte {
	t.Helper()
	k, err := serde.EncodeKey("kafka", []catalog.Type{catalog.BigInt}, []string{"id"}, []any{id})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// The cache drops the older generation when the current one fills, keeps
// what is used, and holds the state put last.
func TestGroupCacheGenerations(t *testing.T) {
	c := groupCache{size: 2}
	put := func(k string, v int64) { c.put(k, c.get(k), []any{v}, true) }
	get := func(k string) any {
		if g := c.get(k); g != nil {
			return g.state[0]
		}
		return nil
	}
	put("a", 1)
	put("b", 2)
	put("a", 3) // an update stays in its generation
	put("c", 4) // a new generation; a and b in the previous one
	if len(c.cur) != 1 || len(c.prev) != 2 {
		t.Fatalf("generations of %d and %d groups, want 1 and 2", len(c.cur), len(c.prev))
	}
	if get("b") != int64(2) { // back to the current generation
		t.Fatalf("b=%v", get("b"))
	}
	put("d", 6) // a new generation: a, the only one left behind, is dropped
	if get("a") != nil || get("c") != int64(4) || get("d") != int64(6) {
		t.Fatalf("a=%v c=%v d=%v", get("a"), get("c"), get("d"))
	}
	// An update of a group dropped since it was got is not cached.
	g := c.get("d")
	put("e", 7)
	put("f", 8)
	put("g", 9) // d dropped
	c.put("d", g, []any{int64(10)}, true)
	if get("d") != nil {
		t.Fatalf("d=%v, want dropped", get("d"))
	}
	c.remove("g")
	if get("g") != nil || len(c.cur)+len(c.prev) > 2*c.size {
		t.Fatalf("g=%v, %d+%d groups", get("g"), len(c.cur), len(c.prev))
	}
}
