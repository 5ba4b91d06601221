package stream

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/ha"
	"github.com/basindb/basin/kafka"
	"github.com/basindb/basin/materialize"
	"github.com/basindb/basin/planner"
	"github.com/basindb/basin/sql"
)

// TestTableJoinStandbyAhead runs a view joining two tables on two
// runtimes: a holds its tasks active, b as standbys. a stops, more rows
// come, and b's standby of the join stage reads them into its store
// before b takes over: its store is then ahead of the last marker a
// committed, and the promoted stage must write the joined rows of the
// keys those rows changed, though its store already has them.
func TestTableJoinStandbyAhead(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	broker, err := kafka.StartBroker(kafka.BrokerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer broker.Close()
	cat := catalog.New()
	var tables []*catalog.Relation
	var plan *planner.ViewPlan
	for i, text := range []string{
		"CREATE TABLE l (id BIGINT PRIMARY KEY, v BIGINT) WITH (kafka_topic = 'l', value_format = 'json', partitions = 2)",
		"CREATE TABLE r (id BIGINT PRIMARY KEY, w BIGINT) WITH (kafka_topic = 'r', value_format = 'json', partitions = 2)",
		"CREATE TABLE j AS SELECT COALESCE(l.id, r.id) AS id, l.v, r.w FROM l FULL JOIN r ON l.id = r.id",
	} {
		st, err := sql.Parse(text)
		if err != nil {
			t.Fatal(err)
		}
		var rel *catalog.Relation
		switch st := st[0].(type) {
		case *sql.CreateSource:
			rel, err = planner.PlanCreateSource(cat, st, text)
		case *sql.CreateTableAs:
			if plan, err = planner.PlanView(cat, st, text); err == nil {
				rel = plan.View
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		cat.Apply(int64(i+1), &catalog.Command{Op: catalog.OpCreate, Relation: rel})
		rel, _ = cat.Lookup(rel.Name)
		if plan != nil {
			plan.View = rel
		} else {
			tables = append(tables, rel)
		}
	}
	newRuntime := func(node string) *Runtime {
		db, err := materialize.Open(materialize.Options{Dir: t.TempDir(), NoSync: true, CacheSize: 8 << 20})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		rt, err := NewRuntime(RuntimeOptions{Brokers: broker.Addrs(), Cluster: "t", Node: node, DB: db, TransactionTimeout: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return rt
	}
	roles := func(r ha.Role) Roles {
		out := Roles{}
		for _, name := range []string{tables[0].StoreName(), tables[1].StoreName(), plan.View.StoreName()} {
			for p := int32(0); p < 2; p++ {
				out[materialize.StoreID{View: name, Partition: p}] = r
			}
		}
		return out
	}
	a, b := newRuntime("a"), newRuntime("b")
	defer b.Close()
	for _, topic := range []string{"l", "r"} {
		if _, _, err := kafka.EnsureTopic(ctx, a.Admin(), topic, 2, nil); err != nil {
			t.Fatal(err)
		}
	}
	a.SetRoles(roles(ha.RoleActive))
	b.SetRoles(roles(ha.RoleStandby))
	for _, rt := range []*Runtime{a, b} {
		for _, tbl := range tables {
			if err := rt.StartTable(tbl); err != nil {
				t.Fatal(err)
			}
		}
		if err := rt.StartView(plan); err != nil {
			t.Fatal(err)
		}
	}
	prod, err := kafka.NewClient(kafka.ClientOptions{Brokers: broker.Addrs(), ClientID: "test"}, kafka.ProducerOpts()...)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	ls, rs := map[int64]int64{}, map[int64]int64{}
	produce := func(topic string, id, val int64, del bool) {
		t.Helper()
		key := bigintKey(t, id)
		rec := &kgo.Record{Topic: topic, Key: key, Partition: kafka.Partition(key, 2)}
		m := map[string]map[int64]int64{"l": ls, "r": rs}[topic]
		if del {
			delete(m, id)
		} else {
			col := map[string]string{"l": "v", "r": "w"}[topic]
			rec.Value, _ = json.Marshal(map[string]any{col: val})
			m[id] = val
		}
		if err := prod.ProduceSync(ctx, rec).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	want := func() string {
		var lines []string
		for id := range int64(40) {
			v, lok := ls[id]
			w, rok := rs[id]
			if !lok && !rok {
				continue
			}
			vs, ws := "<nil>", "<nil>"
			if lok {
				vs = fmt.Sprint(v)
			}
			if rok {
				ws = fmt.Sprint(w)
			}
			lines = append(lines, fmt.Sprintf("%d %s %s", id, vs, ws))
		}
		sort.Strings(lines)
		return strings.Join(lines, "\n")
	}
	read := func(rt *Runtime) string {
		q, ok := rt.Query("j")
		if !ok {
			return ""
		}
		_, stores := q.Handles(rt.DB())
		var lines []string
		for _, s := range stores {
			it, err := s.NewIter(nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			for ok := it.First(); ok; ok = it.Next() {
				if present, row, _, err := DecodeStored(it.Value(), 3); err == nil && present {
					lines = append(lines, fmt.Sprintf("%v %v %v", row[0], row[1], row[2]))
				}
			}
			it.Close()
		}
		sort.Strings(lines)
		return strings.Join(lines, "\n")
	}
	waitFor := func(rt *Runtime, what string) {
		t.Helper()
		if !waitUntil(30*time.Second, func() bool { return read(rt) == want() }) {
			t.Fatalf("%s: got\n%s\nwant\n%s", what, read(rt), want())
		}
	}
	for id := range int64(20) {
		produce("l", id, id*10, false)
		if id%2 == 0 {
			produce("r", id, id*100, false)
		}
	}
	waitFor(a, "active")
	waitFor(b, "standby")
	a.Close()
	// While no join stage is active, the standby's store reads on.
	for id := int64(10); id < 30; id++ {
		switch id % 3 {
		case 0:
			produce("r", id, id*1000, false)
		case 1:
			produce("l", id, id*7, false)
		default:
			produce("l", id, 0, true)
		}
	}
	q, _ := b.Query("j")
	var stage []*TaskState
	stage = append(stage, q.Rekey...)
	ends := map[string]int64{}
	for _, topic := range []string{"l", "r"} {
		e, err := kafka.EndOffsets(ctx, b.Admin(), topic)
		if err != nil {
			t.Fatal(err)
		}
		for _, off := range e {
			ends[topic] += off
		}
	}
	if !waitUntil(30*time.Second, func() bool {
		read := map[string]int64{}
		for _, ts := range stage {
			cp, err := b.DB().Store(materialize.StoreID{View: plan.View.ChangesStore(), Partition: ts.Partition}).Checkpoint()
			if err != nil {
				return false
			}
			for _, topic := range []string{"l", "r"} {
				read[topic] += cp.Input[topic][ts.Partition]
			}
		}
		return read["l"] == ends["l"] && read["r"] == ends["r"]
	}) {
		t.Fatal("b's standby join stage did not read the tables to their ends")
	}
	b.SetRoles(roles(ha.RoleActive))
	waitFor(b, "promoted standby")
	produce("r", 1, 5, false)
	produce("l", 2, 0, true)
	waitFor(b, "promoted standby, later rows")
}
