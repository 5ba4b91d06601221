package node

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/basindb/basin/kafka"
)

// nestedWho is a STRUCT<region VARCHAR, tier INT> value of a record.
type nestedWho struct {
	region *string
	tier   *int64
}

// nestedEv is a record of the stream nev, as decoded.
type nestedEv struct {
	who   *nestedWho
	tags  map[string]*int64 // nil: NULL
	items []*int64          // the qty of each item (nil item: a NULL one); nil: NULL
	hasIt bool              // items is not NULL
}

// TestNestedViewsRecompute feeds random records with STRUCT, MAP and
// ARRAY<STRUCT> values (NULL at every level, some not decodable) to a
// stream and a table through Kafka, and checks that views grouping by,
// filtering on and selecting nested fields hold what their queries
// compute from scratch over the same records (recomputed here): a view
// re-keyed by a struct field, one filtered on a map entry, and, over
// the table, whose rows are replaced and deleted, a grouped view (which
// retracts) and a view that keeps a STRUCT column in its store.
//
// Rerun a failure with go test ./node -run TestNestedViewsRecompute -seed N.
func TestNestedViewsRecompute(t *testing.T) {
	rng := rand.New(rand.NewSource(testSeed(t, 20261204)))

	n := startNode(t, t.TempDir())
	conn := connect(t, n.PGAddr())
	for _, q := range []string{
		`CREATE STREAM nev (id BIGINT KEY, who STRUCT<region VARCHAR, tier INT>, tags MAP<STRING, BIGINT>,
			items ARRAY<STRUCT<sku VARCHAR, qty BIGINT>>) WITH (kafka_topic = 'nev', value_format = 'json', partitions = 3)`,
		`CREATE TABLE ntb (k VARCHAR PRIMARY KEY, who STRUCT<region VARCHAR, tier INT>) WITH (kafka_topic = 'ntb', value_format = 'json', partitions = 2)`,
		`CREATE TABLE nv_region AS SELECT who->region AS region, count(*) AS n, sum(tags['a']) AS a, sum(items[1]->qty) AS q FROM nev GROUP BY who->region`,
		`CREATE TABLE nv_tier AS SELECT who->tier AS tier, count(*) AS n FROM nev WHERE tags['b'] > 0 GROUP BY who->tier`,
		`CREATE TABLE nv_tb AS SELECT who->region AS region, count(*) AS n, max(who->tier) AS top FROM ntb GROUP BY who->region`,
		`CREATE TABLE nv_sel AS SELECT k, who->tier AS tier, who FROM ntb WHERE who->tier > 1`,
	} {
		mustExec(t, conn, q)
	}
	prod, err := kafka.NewClient(kafka.ClientOptions{Brokers: n.Brokers(), Logger: testLogger()}, kafka.ProducerOpts()...)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()

	num := func(i int64) *int64 { return &i }
	randWho := func() (*nestedWho, any) {
		if rng.Intn(6) == 0 {
			return nil, nil
		}
		w := &nestedWho{region: pick(rng, 5, "eu", "us", "ap"), tier: pick(rng, 5, int64(1), 2, 3)}
		return w, map[string]any{"region": ptrAny(w.region), "tier": ptrAny(w.tier)}
	}
	var evs []nestedEv
	tb := map[string]*nestedWho{}
	tbSet := map[string]bool{}
	for round := 0; round < 3; round++ {
		var recs []*kgo.Record
		place := newMixedPlacement(rng) // a key's records of a round on one partition
		for i := 0; i < 120; i++ {
			var ev nestedEv
			doc := map[string]any{}
			ev.who, doc["who"] = randWho()
			if rng.Intn(5) != 0 {
				ev.tags = map[string]*int64{}
				tags := map[string]any{}
				for _, k := range []string{"a", "b", "c"} {
					if rng.Intn(3) != 0 {
						v := pick(rng, 6, int64(-2), -1, 0, 1, 2, 3)
						ev.tags[k], tags[k] = v, ptrAny(v)
					}
				}
				doc["tags"] = tags
			}
			if rng.Intn(5) != 0 {
				ev.hasIt = true
				var items []any
				for range rng.Intn(3) {
					if rng.Intn(5) == 0 {
						ev.items = append(ev.items, nil)
						items = append(items, nil)
						continue
					}
					q := pick(rng, 5, int64(1), 2, 5)
					ev.items = append(ev.items, q)
					items = append(items, map[string]any{"SKU": "s", "qty": ptrAny(q)})
				}
				doc["items"] = items
			}
			body, _ := json.Marshal(doc)
			if rng.Intn(12) == 0 {
				body = []byte(`{"who": [1]}`) // not a struct: skipped
			} else {
				evs = append(evs, ev)
			}
			recs = append(recs, &kgo.Record{Topic: "nev", Partition: int32(rng.Intn(3)), Value: body})
		}
		for i := 0; i < 30; i++ {
			k := fmt.Sprintf("k%d", rng.Intn(8))
			rec := &kgo.Record{Topic: "ntb", Key: []byte(k), Partition: place.partition([]byte(k), 2)}
			switch rng.Intn(8) {
			case 0: // a tombstone
				delete(tb, k)
				delete(tbSet, k)
			case 1:
				rec.Value = []byte(`{"who": {"tier": "x"}}`) // skipped
			default:
				w, doc := randWho()
				tb[k], tbSet[k] = w, true
				rec.Value, _ = json.Marshal(map[string]any{"who": doc})
			}
			recs = append(recs, rec)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err := prod.ProduceSync(ctx, recs...).FirstErr()
		cancel()
		if err != nil {
			t.Fatal(err)
		}

		// The views recomputed from the records.
		type agg struct {
			n    int64
			a, q *int64
		}
		add := func(sum **int64, v *int64) {
			if v != nil {
				if *sum == nil {
					*sum = num(0)
				}
				**sum += *v
			}
		}
		key := func(p any) string { return formatTestValue(p) }
		region := map[string]*agg{}
		tier := map[string]int64{}
		for _, ev := range evs {
			var r, tr any
			if ev.who != nil {
				r, tr = ptrAny(ev.who.region), ptrAny(ev.who.tier)
			}
			g := region[key(r)]
			if g == nil {
				g = &agg{}
				region[key(r)] = g
			}
			g.n++
			if ev.tags != nil {
				add(&g.a, ev.tags["a"])
			}
			if len(ev.items) > 0 {
				add(&g.q, ev.items[0])
			}
			if ev.tags != nil && ev.tags["b"] != nil && *ev.tags["b"] > 0 {
				tier[key(tr)]++
			}
		}
		var wantRegion, wantTier, wantTb, wantSel []string
		for r, g := range region {
			wantRegion = append(wantRegion, rowText(r, g.n, ptrAny(g.a), ptrAny(g.q)))
		}
		for tr, c := range tier {
			wantTier = append(wantTier, rowText(tr, c))
		}
		type tbAgg struct {
			n   int64
			top *int64
		}
		byRegion := map[string]*tbAgg{}
		for k := range tbSet {
			w := tb[k]
			var r any
			var tr *int64
			if w != nil {
				r, tr = ptrAny(w.region), w.tier
			}
			g := byRegion[key(r)]
			if g == nil {
				g = &tbAgg{}
				byRegion[key(r)] = g
			}
			g.n++
			if tr != nil && (g.top == nil || *tr > *g.top) {
				g.top = num(*tr)
			}
			if tr != nil && *tr > 1 {
				wantSel = append(wantSel, rowText(k, *tr, whoJSON(w)))
			}
		}
		for r, g := range byRegion {
			wantTb = append(wantTb, rowText(r, g.n, ptrAny(g.top)))
		}
		waitRows(t, conn, fmt.Sprintf("round %d: nv_region", round), "SELECT region, n, a, q FROM nv_region", wantRegion)
		waitRows(t, conn, fmt.Sprintf("round %d: nv_tier", round), "SELECT tier, n FROM nv_tier", wantTier)
		waitRows(t, conn, fmt.Sprintf("round %d: nv_tb", round), "SELECT region, n, top FROM nv_tb", wantTb)
		waitRows(t, conn, fmt.Sprintf("round %d: nv_sel", round), "SELECT k, tier, who::text FROM nv_sel", wantSel)
	}
}

// ptrAny is *p, or nil.
func ptrAny[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// whoJSON is a STRUCT<region VARCHAR, tier INT> as the wire writes it:
// jsonb, keys by length.
func whoJSON(w *nestedWho) string {
	r := "null"
	if w.region != nil {
		r = `"` + *w.region + `"`
	}
	tr := "null"
	if w.tier != nil {
		tr = fmt.Sprint(*w.tier)
	}
	return fmt.Sprintf(`{"tier": %s, "region": %s}`, tr, r)
}
