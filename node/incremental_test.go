package node

import (
	"context"
	"flag"
	"fmt"
	"math/rand"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/kafka"
	"github.com/basindb/basin/serde"
)

var seedFlag = flag.Int64("seed", 0, "seed of the tests on random data (TestIncrementalMatchesRecompute, TestNestedViewsRecompute, TestDifferentialPostgres, TestJSONModifyMatchesPostgres; 0: each test's fixed default)")

// testSeed returns the -seed flag's seed, else def, and logs it so that a
// failure can be replayed.
func testSeed(t *testing.T, def int64) int64 {
	t.Helper()
	seed := *seedFlag
	if seed == 0 {
		seed = def
	}
	t.Logf("seed %d (rerun with -seed %d)", seed, seed)
	return seed
}

// TestIncrementalMatchesRecompute feeds random records, some with NULLs and
// some undecodable, to a stream and a table straight through Kafka, as
// producers with different partitioners would (mixedPlacement), and checks that every view basin maintains
// incrementally has the content the view's query computes from scratch
// over the same records (recomputed here, in Go). Views cover grouping by
// the source key and by other columns (re-keyed), several group columns,
// expressions, WHERE, HAVING, records an aggregate or the select list
// fails on, and views without GROUP BY over a stream and a table.
//
// Rerun a failure with go test ./node -run TestIncrementalMatchesRecompute -seed N.
func TestIncrementalMatchesRecompute(t *testing.T) {
	rng := rand.New(rand.NewSource(testSeed(t, 20261129)))

	n := startNode(t, t.TempDir())
	conn := connect(t, n.PGAddr())
	for _, q := range []string{
		`CREATE STREAM ev (id BIGINT KEY, grp VARCHAR, cat VARCHAR, v BIGINT, x DOUBLE) WITH (partitions = 3)`,
		`CREATE TABLE tb (k VARCHAR PRIMARY KEY, grp VARCHAR, v BIGINT) WITH (partitions = 2)`,
	} {
		mustExec(t, conn, q)
	}
	for _, v := range incViews {
		mustExec(t, conn, v.sql)
	}
	queryIDs := map[string]string{} // relation → persistent query id
	{
		rows, err := conn.Query(context.Background(), "SHOW QUERIES")
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			vals, err := rows.Values()
			if err != nil {
				t.Fatal(err)
			}
			queryIDs[vals[1].(string)] = vals[0].(string)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
	}

	prod, err := kafka.NewClient(kafka.ClientOptions{Brokers: n.Brokers(), Logger: testLogger()}, kafka.ProducerOpts()...)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()

	var evs []evRec
	tb := map[string]*tbRec{}
	badEv, badTb := 0, 0
	for round := 0; round < 3; round++ {
		var recs []*kgo.Record
		place := newMixedPlacement(rng)
		for i := 0; i < 150; i++ {
			rec, ev := randomEv(rng, place)
			if ev != nil {
				evs = append(evs, *ev)
			} else {
				badEv++
			}
			recs = append(recs, rec)
		}
		for i := 0; i < 40; i++ {
			rec, k, row, ok := randomTb(rng, place)
			if ok {
				tb[k] = row // nil: deleted
			} else {
				badTb++
			}
			recs = append(recs, rec)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err := prod.ProduceSync(ctx, recs...).FirstErr()
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		// Every skipped record is in the processing log, once per query.
		var logged []string
		logCount := func(rel string, n int) {
			if n > 0 {
				logged = append(logged, fmt.Sprintf("%s|%d", queryIDs[rel], n))
			}
		}
		logCount("tb", badTb)
		for _, v := range incViews {
			want, skipped := v.recompute(evs, tb)
			waitRows(t, conn, fmt.Sprintf("round %d: %s", round, v.name), "SELECT * FROM "+v.name, want)
			bad := badEv
			if v.name == "tview" {
				bad = badTb
			}
			logCount(v.name, bad+skipped)
		}
		waitRows(t, conn, fmt.Sprintf("round %d: tb", round), "SELECT * FROM tb", recomputeTable(tb))
		// A key lookup reads the one partition murmur2 gives the key,
		// wherever the key's producer put it.
		for i := range 10 {
			k := fmt.Sprintf("k%d", i)
			var want []string
			if r := tb[k]; r != nil {
				want = []string{rowText(k, deref(r.grp), deref(r.v))}
			}
			waitRows(t, conn, fmt.Sprintf("round %d: tb lookup", round), fmt.Sprintf("SELECT * FROM tb WHERE k = '%s'", k), want)
		}
		waitRows(t, conn, fmt.Sprintf("round %d: processing log", round),
			`SELECT query_id, count(*) FROM basin_processing_log GROUP BY query_id`, logged)
	}
}

// evRec is a decodable record of ev; nil pointers are NULLs.
type evRec struct {
	id       *int64
	grp, cat *string
	v        *int64
	x        *float64
}

type tbRec struct {
	grp *string
	v   *int64
}

func pick[T any](rng *rand.Rand, nullOneIn int, vals ...T) *T {
	if nullOneIn > 0 && rng.Intn(nullOneIn) == 0 {
		return nil
	}
	v := vals[rng.Intn(len(vals))]
	return &v
}

func jsonField(b *strings.Builder, rng *rand.Rand, name string, v any, isNil bool) {
	if isNil {
		switch rng.Intn(2) {
		case 0:
			return // a missing field is NULL
		default:
			v = nil
		}
	}
	if b.Len() > 1 {
		b.WriteByte(',')
	}
	switch v := v.(type) {
	case nil:
		fmt.Fprintf(b, "%q:null", name)
	case string:
		fmt.Fprintf(b, "%q:%q", name, v)
	case int64:
		fmt.Fprintf(b, "%q:%d", name, v)
	case float64:
		fmt.Fprintf(b, "%q:%s", name, strconv.FormatFloat(v, 'g', -1, 64))
	}
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// mixedPlacement places keyed records as producers with different
// partitioners writing the same topic would: within a round each key is
// written by one producer, murmur2's (where basin looks for it),
// librdkafka's CRC32 or Sarama's FNV-1a, chosen at random, so that a
// key's records of one round are on one partition, in order, and most
// keys of the others are misplaced. A round's records are all reflected
// before the next is written, so a key moving to another partition
// between rounds keeps its order too.
type mixedPlacement struct {
	rng   *rand.Rand
	rules map[string]kafka.Partitioner
}

func newMixedPlacement(rng *rand.Rand) *mixedPlacement {
	return &mixedPlacement{rng: rng, rules: map[string]kafka.Partitioner{}}
}

func (m *mixedPlacement) partition(key []byte, n int32) int32 {
	p, ok := m.rules[string(key)]
	if !ok {
		p = []kafka.Partitioner{kafka.PartitionerMurmur2, kafka.PartitionerCRC32, kafka.PartitionerFNV1a}[m.rng.Intn(3)]
		m.rules[string(key)] = p
	}
	return p.Partition(key, n)
}

// randomEv returns a record of ev and, when it is decodable, what it
// holds. Keys are Kafka-format BIGINTs written to the partition place
// picks; a NULL key goes to any partition, as a producer's sticky
// partitioner would send it.
func randomEv(rng *rand.Rand, place *mixedPlacement) (*kgo.Record, *evRec) {
	ev := &evRec{
		id:  pick(rng, 15, int64(1), 2, 3, 4, 5, 6, 7, 8),
		grp: pick(rng, 6, "a", "b", "c"),
		cat: pick(rng, 5, "x", "y"),
		v:   pick(rng, 6, int64(-3), -2, -1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10),
	}
	if rng.Intn(6) != 0 {
		x := float64(rng.Intn(41)-20) * 0.25 // exact in binary: sums do not depend on order
		ev.x = &x
	}
	var key []byte
	partition := int32(rng.Intn(3))
	if ev.id != nil {
		var err error
		key, err = serde.EncodeKey("kafka", []catalog.Type{catalog.BigInt}, []string{"id"}, []any{*ev.id})
		if err != nil {
			panic(err)
		}
		partition = place.partition(key, 3)
	}
	var b strings.Builder
	b.WriteByte('{')
	jsonField(&b, rng, "grp", deref(ev.grp), ev.grp == nil)
	jsonField(&b, rng, "cat", deref(ev.cat), ev.cat == nil)
	jsonField(&b, rng, "v", deref(ev.v), ev.v == nil)
	jsonField(&b, rng, "x", deref(ev.x), ev.x == nil)
	b.WriteByte('}')
	value := []byte(b.String())
	switch rng.Intn(20) {
	case 0:
		value = []byte("not json")
		ev = nil
	case 1:
		value = []byte(`{"v":"abc"}`)
		ev = nil
	case 2:
		value = []byte(`[1,2]`)
		ev = nil
	case 3:
		key = []byte{1, 2, 3} // not an 8-byte BIGINT
		ev = nil
	}
	return &kgo.Record{Topic: "ev", Partition: partition, Key: key, Value: value}, ev
}

// randomTb returns a record of tb: an upsert, a tombstone or an
// undecodable value. ok is false for the latter, which leaves the row as
// it was.
func randomTb(rng *rand.Rand, place *mixedPlacement) (rec *kgo.Record, k string, row *tbRec, ok bool) {
	k = fmt.Sprintf("k%d", rng.Intn(10))
	rec = &kgo.Record{Topic: "tb", Partition: place.partition([]byte(k), 2), Key: []byte(k)}
	switch rng.Intn(10) {
	case 0:
		return rec, k, nil, true // tombstone
	case 1:
		rec.Value = []byte(`{"v": [1]}`)
		return rec, k, nil, false
	}
	row = &tbRec{grp: pick(rng, 5, "a", "b"), v: pick(rng, 5, int64(-2), -1, 0, 1, 2, 3)}
	var b strings.Builder
	b.WriteByte('{')
	jsonField(&b, rng, "grp", deref(row.grp), row.grp == nil)
	jsonField(&b, rng, "v", deref(row.v), row.v == nil)
	b.WriteByte('}')
	rec.Value = []byte(b.String())
	return rec, k, row, true
}

// incView is a view and its recomputation from all records so far.
type incView struct {
	name, sql string
	// recompute returns the rows and how many decodable records the
	// view skips (and logs) for a data error.
	recompute func(evs []evRec, tb map[string]*tbRec) (rows []string, skipped int)
}

// group is one group of a recomputed aggregate.
type group struct {
	key               []any
	n, nv, sv, svDiv  int64
	hasSum, hasSumDiv bool
	mn, mx            *float64
	sumX              float64
	nx                int64
	maxV              *int64
}

type groups struct {
	m     map[string]*group
	order []*group
}

func (g *groups) get(key ...any) *group {
	if g.m == nil {
		g.m = map[string]*group{}
	}
	k := fmt.Sprintf("%#v", key)
	if x, ok := g.m[k]; ok {
		return x
	}
	x := &group{key: key}
	g.m[k] = x
	g.order = append(g.order, x)
	return x
}

func (x *group) addV(v *int64) {
	if v == nil {
		return
	}
	x.nv++
	x.sv += *v
	x.hasSum = true
	if x.maxV == nil || *v > *x.maxV {
		m := *v
		x.maxV = &m
	}
}

func (x *group) addX(v *float64) {
	if v == nil {
		return
	}
	x.nx++
	x.sumX += *v
	if x.mn == nil || *v < *x.mn {
		m := *v
		x.mn = &m
	}
	if x.mx == nil || *v > *x.mx {
		m := *v
		x.mx = &m
	}
}

func sumOrNull(has bool, s int64) any {
	if !has {
		return nil
	}
	return s
}

func floatOrNull(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

func avgOrNull(n int64, s float64) any {
	if n == 0 {
		return nil
	}
	return s / float64(n)
}

func sumXOrNull(n int64, s float64) any {
	if n == 0 {
		return nil
	}
	return s
}

var incViews = []incView{
	{
		// Grouped by the source key: no repartition. A record without a
		// key has no partition to be grouped in: it is skipped and logged.
		name: "g_id",
		sql:  `CREATE TABLE g_id AS SELECT id, COUNT(*) AS n, SUM(v) AS sv, MIN(x) AS mnx, MAX(x) AS mxx FROM ev GROUP BY id`,
		recompute: func(evs []evRec, _ map[string]*tbRec) ([]string, int) {
			var g groups
			skipped := 0
			for _, e := range evs {
				if e.id == nil {
					skipped++
					continue
				}
				x := g.get(*e.id)
				x.n++
				x.addV(e.v)
				x.addX(e.x)
			}
			var rows []string
			for _, x := range g.order {
				rows = append(rows, rowText(x.key[0], x.n, sumOrNull(x.hasSum, x.sv), floatOrNull(x.mn), floatOrNull(x.mx)))
			}
			return rows, skipped
		},
	},
	{
		// Re-keyed by another column, with a WHERE.
		name: "g_grp",
		sql:  `CREATE TABLE g_grp AS SELECT grp, COUNT(*) AS n, COUNT(v) AS nv, SUM(v) AS sv, AVG(x) AS ax FROM ev WHERE v IS NULL OR v > 2 GROUP BY grp`,
		recompute: func(evs []evRec, _ map[string]*tbRec) ([]string, int) {
			var g groups
			for _, e := range evs {
				if e.v != nil && *e.v <= 2 {
					continue
				}
				x := g.get(deref(e.grp))
				x.n++
				x.addV(e.v)
				x.addX(e.x)
			}
			var rows []string
			for _, x := range g.order {
				rows = append(rows, rowText(x.key[0], x.n, x.nv, sumOrNull(x.hasSum, x.sv), avgOrNull(x.nx, x.sumX)))
			}
			return rows, 0
		},
	},
	{
		// Two group columns (a JSON key) and a HAVING that hides groups
		// until they have enough rows.
		name: "g_multi",
		sql: `CREATE TABLE g_multi AS SELECT grp, cat, COUNT(*) AS n, SUM(v) AS sv, MAX(v) AS mv FROM ev
		      WHERE x IS NOT NULL GROUP BY grp, cat HAVING COUNT(*) > 4 AND (MAX(v) IS NULL OR MAX(v) > 3)`,
		recompute: func(evs []evRec, _ map[string]*tbRec) ([]string, int) {
			var g groups
			for _, e := range evs {
				if e.x == nil {
					continue
				}
				x := g.get(deref(e.grp), deref(e.cat))
				x.n++
				x.addV(e.v)
			}
			var rows []string
			for _, x := range g.order {
				if x.n > 4 && (x.maxV == nil || *x.maxV > 3) {
					var mv any
					if x.maxV != nil {
						mv = *x.maxV
					}
					rows = append(rows, rowText(x.key[0], x.key[1], x.n, sumOrNull(x.hasSum, x.sv), mv))
				}
			}
			return rows, 0
		},
	},
	{
		// An expression as the group, NULL included.
		name: "g_mod",
		sql:  `CREATE TABLE g_mod AS SELECT v % 4 AS m, COUNT(*) AS n, SUM(x) AS sx FROM ev GROUP BY v % 4`,
		recompute: func(evs []evRec, _ map[string]*tbRec) ([]string, int) {
			var g groups
			for _, e := range evs {
				var m any
				if e.v != nil {
					m = *e.v % 4
				}
				x := g.get(m)
				x.n++
				x.addX(e.x)
			}
			var rows []string
			for _, x := range g.order {
				rows = append(rows, rowText(x.key[0], x.n, sumXOrNull(x.nx, x.sumX)))
			}
			return rows, 0
		},
	},
	{
		// An aggregate argument that fails (100 / 0): the record is
		// skipped as a whole, COUNT(*) included.
		name: "g_div",
		sql:  `CREATE TABLE g_div AS SELECT grp, COUNT(*) AS n, SUM(100 / v) AS s FROM ev GROUP BY grp`,
		recompute: func(evs []evRec, _ map[string]*tbRec) ([]string, int) {
			var g groups
			skipped := 0
			for _, e := range evs {
				if e.v != nil && *e.v == 0 {
					skipped++
					continue
				}
				x := g.get(deref(e.grp))
				x.n++
				if e.v != nil {
					x.svDiv += 100 / *e.v
					x.hasSumDiv = true
				}
			}
			var rows []string
			for _, x := range g.order {
				rows = append(rows, rowText(x.key[0], x.n, sumOrNull(x.hasSumDiv, x.svDiv)))
			}
			return rows, skipped
		},
	},
	{
		// A select list that fails for some states (MIN(v) = 0): the
		// record that would bring the group there is skipped. Grouped by
		// the source key, so each group sees its records in offset order.
		name: "g_ratio",
		sql: `CREATE TABLE g_ratio AS SELECT id, COUNT(*) AS n, MAX(v) / MIN(v) AS ratio FROM ev
		      WHERE id IS NOT NULL GROUP BY id HAVING SUM(v) > 0`,
		recompute: func(evs []evRec, _ map[string]*tbRec) ([]string, int) {
			type st struct {
				n, sum   int64
				mn, mx   *int64
				id       int64
				hasValue bool
			}
			byID := map[int64]*st{}
			skipped := 0
			for _, e := range evs {
				if e.id == nil {
					continue
				}
				x := byID[*e.id]
				if x == nil {
					x = &st{id: *e.id}
				}
				next := *x
				next.n++
				if e.v != nil {
					v := *e.v
					next.sum += v
					next.hasValue = true
					if next.mn == nil || v < *next.mn {
						next.mn = &v
					}
					if next.mx == nil || v > *next.mx {
						next.mx = &v
					}
				}
				if next.mn != nil && *next.mn == 0 {
					skipped++ // MAX(v) / MIN(v) divides by zero
					continue
				}
				byID[*e.id] = &next
			}
			var rows []string
			for id, x := range byID {
				if !x.hasValue || x.sum <= 0 {
					continue
				}
				rows = append(rows, rowText(id, x.n, *x.mx / *x.mn))
			}
			return rows, skipped
		},
	},
	{
		// COUNT(DISTINCT) and ksqlDB's COUNT_DISTINCT over a stream,
		// re-keyed by another column (NULL a group of its own): NULL
		// values are not counted.
		name: "g_distinct",
		sql:  `CREATE TABLE g_distinct AS SELECT grp, COUNT(DISTINCT cat) AS dc, COUNT_DISTINCT(v) AS dv, COUNT(*) AS n FROM ev GROUP BY grp`,
		recompute: func(evs []evRec, _ map[string]*tbRec) ([]string, int) {
			type sets struct {
				cats map[string]bool
				vs   map[int64]bool
				n    int64
			}
			g := map[any]*sets{}
			for _, e := range evs {
				k := deref(e.grp)
				s := g[k]
				if s == nil {
					s = &sets{cats: map[string]bool{}, vs: map[int64]bool{}}
					g[k] = s
				}
				s.n++
				if e.cat != nil {
					s.cats[*e.cat] = true
				}
				if e.v != nil {
					s.vs[*e.v] = true
				}
			}
			var rows []string
			for k, s := range g {
				rows = append(rows, rowText(k, int64(len(s.cats)), int64(len(s.vs)), s.n))
			}
			return rows, 0
		},
	},
	{
		// No GROUP BY over a stream: the latest row per key that passes
		// the filter.
		name: "latest",
		sql:  `CREATE TABLE latest AS SELECT id, grp, v FROM ev WHERE id IS NOT NULL AND x IS NOT NULL`,
		recompute: func(evs []evRec, _ map[string]*tbRec) ([]string, int) {
			last := map[int64]evRec{}
			for _, e := range evs {
				if e.id != nil && e.x != nil {
					last[*e.id] = e
				}
			}
			var rows []string
			for id, e := range last {
				rows = append(rows, rowText(id, deref(e.grp), deref(e.v)))
			}
			return rows, 0
		},
	},
	{
		// No GROUP BY over a table: upserts replace, tombstones and rows
		// that stop passing the filter delete.
		name: "tview",
		sql:  `CREATE TABLE tview AS SELECT k, grp, v * 2 AS v2 FROM tb WHERE v > 0`,
		recompute: func(_ []evRec, tb map[string]*tbRec) ([]string, int) {
			var rows []string
			for k, r := range tb {
				if r != nil && r.v != nil && *r.v > 0 {
					rows = append(rows, rowText(k, deref(r.grp), *r.v*2))
				}
			}
			return rows, 0
		},
	},
}

func recomputeTable(tb map[string]*tbRec) []string {
	var rows []string
	for k, r := range tb {
		if r != nil {
			rows = append(rows, rowText(k, deref(r.grp), deref(r.v)))
		}
	}
	return rows
}

// rowText renders a row as waitRows compares it.
func rowText(vals ...any) string {
	parts := make([]string, len(vals))
	for i, v := range vals {
		parts[i] = formatTestValue(v)
	}
	return strings.Join(parts, "|")
}

// waitRows waits until q returns want, in any order.
func waitRows(t *testing.T, conn *pgx.Conn, what, q string, want []string) {
	t.Helper()
	sort.Strings(want)
	wantText := strings.Join(want, "\n")
	eventually(t, 30*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		out, err := queryText(ctx, conn, q, false)
		cancel()
		var got string
		if err != nil {
			got = "error: " + err.Error()
		} else {
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if out == "" {
				lines = nil
			}
			sort.Strings(lines)
			got = strings.Join(lines, "\n")
		}
		if got != wantText {
			return fmt.Errorf("%s: %s\n got:\n%s\nwant:\n%s", what, q, got, wantText)
		}
		return nil
	})
}
