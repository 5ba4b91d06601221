package stream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/basindb/basin/ha"
	"github.com/basindb/basin/kafka"
	"github.com/basindb/basin/materialize"
)

// TestTableJoinStandbyAhead runs a view joining two tables on two
// runtimes: a holds its tasks active, b as standbys. a stops, more rows
// come, and b's standby of the join stage reads them into its store
// before b takes over: its store is then ahead of the last marker a
// committed, and the promoted stage must write the joined rows of the
// keys those rows changed, though its store already has them. Then b
// stands by again, with no active, reads more, and is active again: no
// marker follows its own last one, and the same holds. One view joins on
// the keys, one on a foreign key (whose stage reads all of r).
func TestTableJoinStandbyAhead(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	broker, err := kafka.StartBroker(kafka.BrokerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer broker.Close()
	tables, plans := planSources(t,
		"CREATE TABLE l (id BIGINT PRIMARY KEY, v BIGINT) WITH (kafka_topic = 'l', value_format = 'json', partitions = 2)",
		"CREATE TABLE r (id BIGINT PRIMARY KEY, w BIGINT) WITH (kafka_topic = 'r', value_format = 'json', partitions = 2)",
		"CREATE TABLE j AS SELECT COALESCE(l.id, r.id) AS id, l.v, r.w FROM l FULL JOIN r ON l.id = r.id",
		"CREATE TABLE fk AS SELECT l.id, l.v, r.w FROM l LEFT JOIN r ON r.id = l.v % 40")
	roles := func(r ha.Role) Roles {
		return allRoles(r, 2, tables[0].StoreName(), tables[1].StoreName(), plans["j"].View.StoreName(), plans["fk"].View.StoreName())
	}
	// b takes a record per transaction, so that taking over is many.
	a, b := testRuntime(t, broker, "a", RuntimeOptions{}), testRuntime(t, broker, "b", RuntimeOptions{MaxBatch: 1})
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
		for _, plan := range plans {
			if err := rt.StartView(plan); err != nil {
				t.Fatal(err)
			}
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
		if id%4 == 1 {
			// Misplaced (as another partitioner would put it): the
			// table forwards it to its key's partition.
			rec.Partition = 1 - rec.Partition
		}
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
	want := func(view string) string {
		var lines []string
		if view == "fk" {
			for id, v := range ls {
				ws := "<nil>"
				if w, ok := rs[v%40]; ok {
					ws = fmt.Sprint(w)
				}
				lines = append(lines, fmt.Sprintf("%d %d %s", id, v, ws))
			}
		}
		for id := range int64(40) {
			if view == "fk" {
				break
			}
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
	read := func(rt *Runtime, view string) string {
		q, ok := rt.Query(view)
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
		// The view's partitions first reflect the tables' ends: a
		// replica that has not caught up yet may hold what is wanted for
		// a while.
		ends := materialize.Position{}
		for _, topic := range []string{"l", "r"} {
			e, err := kafka.EndOffsets(ctx, rt.Admin(), topic)
			if err != nil {
				t.Fatal(err)
			}
			ends[topic] = e
		}
		for _, view := range []string{"j", "fk"} {
			q, _ := rt.Query(view)
			if !waitUntil(30*time.Second, func() bool {
				for _, ts := range q.Tasks {
					if !ts.Position().Covers(q.Needs(ts, ends)) {
						return false
					}
				}
				return true
			}) {
				t.Fatalf("%s: view %s does not reflect the tables' ends %v", what, view, ends)
			}
			if !waitUntil(30*time.Second, func() bool { return read(rt, view) == want(view) }) {
				t.Fatalf("%s, view %s: got\n%s\nwant\n%s", what, view, read(rt, view), want(view))
			}
		}
	}
	// waitRead waits until rt's join stages have read the tables to
	// their ends into their stores: each partition of j's its partition
	// of both, of fk's its partition of l and all of r.
	waitRead := func(rt *Runtime) {
		t.Helper()
		ends := map[string]map[int32]int64{}
		for _, topic := range []string{"l", "r"} {
			e, err := kafka.EndOffsets(ctx, rt.Admin(), topic)
			if err != nil {
				t.Fatal(err)
			}
			ends[topic] = e
		}
		for view, plan := range plans {
			if !waitUntil(30*time.Second, func() bool {
				for p := int32(0); p < 2; p++ {
					cp, err := rt.DB().Store(materialize.StoreID{View: plan.View.ChangesStore(), Partition: p}).Checkpoint()
					if err != nil {
						return false
					}
					for topic, parts := range ends {
						for q, end := range parts {
							if (q == p || view == "fk" && topic == "r") && cp.Input[topic][q] != end {
								return false
							}
						}
					}
				}
				return true
			}) {
				t.Fatalf("the join stage of %s did not read the tables to their ends", view)
			}
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
	waitRead(b)
	// The promoted stages crash once, right after their first commit
	// while they still read what the standby's store had: their next
	// start must still write the joined rows of the rest.
	var mu sync.Mutex
	crashed := map[string]bool{}
	hook := func(view string, p int32, recovering bool) error {
		mu.Lock()
		defer mu.Unlock()
		k := fmt.Sprintf("%s/%d", view, p)
		if !recovering || crashed[k] {
			return nil
		}
		crashed[k] = true
		return errors.New("crash after a commit")
	}
	joinCommitted.Store(&hook)
	defer joinCommitted.Store(nil)
	b.SetRoles(roles(ha.RoleActive))
	waitFor(b, "promoted standby")
	mu.Lock()
	if len(crashed) == 0 {
		t.Error("no join stage took over while its store was ahead")
	}
	mu.Unlock()
	produce("r", 1, 5, false)
	produce("l", 2, 0, true)
	waitFor(b, "promoted standby, later rows")

	b.SetRoles(roles(ha.RoleStandby))
	for id := int64(30); id < 36; id++ {
		produce("l", id, id, false)
	}
	produce("r", 4, 44, false)
	produce("l", 5, 0, true)
	waitRead(b)
	b.SetRoles(roles(ha.RoleActive))
	waitFor(b, "active again after standing by")

	// b's replicas stop; a, active again, joins new rows and stops; b
	// takes over with its store behind a's last marker. Rows a joined
	// and b's store lacks are then deleted: b brings its store up to
	// the marker without writing joined rows, and the deletes must take
	// back the rows a wrote.
	a = testRuntime(t, broker, "a2", RuntimeOptions{})
	for _, tbl := range tables {
		if err := a.StartTable(tbl); err != nil {
			t.Fatal(err)
		}
	}
	for _, plan := range plans {
		if err := a.StartView(plan); err != nil {
			t.Fatal(err)
		}
	}
	b.SetRoles(Roles{})
	a.SetRoles(roles(ha.RoleActive))
	for id := int64(36); id < 40; id++ {
		produce("l", id, id+1, false)
		produce("r", id, id, false)
	}
	waitFor(a, "a active again")
	a.Close()
	for id := int64(36); id < 40; id++ {
		produce("l", id, 0, true)
		produce("r", id, 0, true)
	}
	b.SetRoles(roles(ha.RoleActive))
	waitFor(b, "taking over behind the marker")
}

// TestTableJoinRoleChurn moves a table join's tasks between two runtimes
// again and again while rows come, with crashes right after commits and
// rounds where both think they are active: the view must end as the
// join of the tables, on the keys and on a foreign key.
func TestTableJoinRoleChurn(t *testing.T) {
	// Under the race detector, beside the other packages' tests, the
	// rounds take several times as long.
	deadline := 3 * time.Minute
	if raceEnabled {
		deadline *= 4
	}
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	broker, err := kafka.StartBroker(kafka.BrokerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer broker.Close()
	tables, plans := planSources(t,
		"CREATE TABLE l (id BIGINT PRIMARY KEY, v BIGINT) WITH (kafka_topic = 'l', value_format = 'json', partitions = 2)",
		"CREATE TABLE r (id BIGINT PRIMARY KEY, w BIGINT) WITH (kafka_topic = 'r', value_format = 'json', partitions = 2)",
		"CREATE TABLE j AS SELECT COALESCE(l.id, r.id) AS id, l.v, r.w FROM l FULL JOIN r ON l.id = r.id",
		"CREATE TABLE fk AS SELECT l.id, l.v, r.w FROM l LEFT JOIN r ON r.id = l.v % 30")
	roles := func(r ha.Role) Roles {
		return allRoles(r, 2, tables[0].StoreName(), tables[1].StoreName(), plans["j"].View.StoreName(), plans["fk"].View.StoreName())
	}
	rts := []*Runtime{testRuntime(t, broker, "a", RuntimeOptions{MaxBatch: 3}), testRuntime(t, broker, "b", RuntimeOptions{MaxBatch: 3})}
	defer rts[0].Close()
	defer rts[1].Close()
	for _, topic := range []string{"l", "r"} {
		if _, _, err := kafka.EnsureTopic(ctx, rts[0].Admin(), topic, 2, nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, rt := range rts {
		for _, tbl := range tables {
			if err := rt.StartTable(tbl); err != nil {
				t.Fatal(err)
			}
		}
		for _, plan := range plans {
			if err := rt.StartView(plan); err != nil {
				t.Fatal(err)
			}
		}
	}
	seed := time.Now().UnixNano()
	if s := os.Getenv("BASIN_CHURN_SEED"); s != "" {
		fmt.Sscan(s, &seed)
	}
	t.Logf("seed %d (BASIN_CHURN_SEED replays it)", seed)
	rng := rand.New(rand.NewSource(seed))
	var mu sync.Mutex
	var commits atomic.Int64
	hook := func(view string, p int32, recovering bool) error {
		commits.Add(1)
		mu.Lock()
		defer mu.Unlock()
		if rng.Intn(5) == 0 {
			return errors.New("crash after a commit")
		}
		return nil
	}
	joinCommitted.Store(&hook)
	defer joinCommitted.Store(nil)
	prod, err := kafka.NewClient(kafka.ClientOptions{Brokers: broker.Addrs(), ClientID: "test"}, kafka.ProducerOpts()...)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	ls, rs := map[int64]int64{}, map[int64]int64{}
	for round := range 40 {
		mu.Lock()
		var recs []*kgo.Record
		for range 15 {
			topic := []string{"l", "r"}[rng.Intn(2)]
			id := int64(rng.Intn(30))
			key := bigintKey(t, id)
			rec := &kgo.Record{Topic: topic, Key: key, Partition: kafka.Partition(key, 2)}
			if id%4 == 1 {
				// Misplaced: the table forwards it, and with both
				// runtimes' table tasks active, more than once.
				rec.Partition = 1 - rec.Partition
			}
			m := map[string]map[int64]int64{"l": ls, "r": rs}[topic]
			if rng.Intn(4) == 0 {
				delete(m, id)
			} else {
				val := int64(rng.Intn(100))
				rec.Value, _ = json.Marshal(map[string]any{map[string]string{"l": "v", "r": "w"}[topic]: val})
				m[id] = val
			}
			recs = append(recs, rec)
		}
		choice := rng.Intn(4)
		mu.Unlock()
		if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		switch choice {
		case 0:
			rts[0].SetRoles(roles(ha.RoleActive))
			rts[1].SetRoles(roles(ha.RoleStandby))
		case 1:
			rts[1].SetRoles(roles(ha.RoleActive))
			rts[0].SetRoles(roles(ha.RoleStandby))
		case 2:
			rts[0].SetRoles(roles(ha.RoleActive))
			rts[1].SetRoles(roles(ha.RoleActive))
		default:
			rts[0].SetRoles(roles(ha.RoleStandby))
			rts[1].SetRoles(roles(ha.RoleStandby))
		}
		if choice != 3 {
			// Some work in the new roles before the next change.
			before := commits.Load()
			n := int64(1 + round%3)
			waitUntil(5*time.Second, func() bool { return commits.Load() >= before+n })
		}
	}
	joinCommitted.Store(nil)
	rts[0].SetRoles(roles(ha.RoleActive))
	rts[1].SetRoles(roles(ha.RoleStandby))
	want := func(view string) string {
		var lines []string
		if view == "fk" {
			for id, v := range ls {
				ws := "<nil>"
				if w, ok := rs[v%30]; ok {
					ws = fmt.Sprint(w)
				}
				lines = append(lines, fmt.Sprintf("%d %d %s", id, v, ws))
			}
		}
		for id := range int64(30) {
			if view == "fk" {
				break
			}
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
	read := func(rt *Runtime, view string) string {
		q, _ := rt.Query(view)
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
	for _, view := range []string{"j", "fk"} {
		if !waitUntil(60*time.Second, func() bool { return read(rts[0], view) == want(view) }) {
			t.Fatalf("view %s: got\n%s\nwant\n%s", view, read(rts[0], view), want(view))
		}
	}
}
