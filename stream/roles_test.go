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

	"github.com/basindb/basin/ha"
	"github.com/basindb/basin/internal/poll"
	"github.com/basindb/basin/kafka"
	"github.com/basindb/basin/materialize"
)

// TestStandbyFailover runs one view on two runtimes over one broker: a
// holds every task active, b every task as standby. b's replica must
// equal a's; then a stops, b's tasks become active and carry on from its
// replica's checkpoint: no input record is lost or counted twice.
func TestStandbyFailover(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	broker, err := kafka.StartBroker(kafka.BrokerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer broker.Close()

	_, plans := planSources(t,
		"CREATE STREAM orders (id BIGINT KEY, region VARCHAR, amount BIGINT) WITH (kafka_topic = 'orders', value_format = 'json', partitions = 3)",
		"CREATE TABLE by_region AS SELECT region, COUNT(*) AS n, SUM(amount) AS total FROM orders GROUP BY region")
	plan := plans["by_region"]
	if !plan.Repartition {
		t.Fatal("the view should re-key")
	}
	view := plan.View

	// Re-keying stages follow the actives of the view's partitions.
	roles := func(r ha.Role) Roles { return allRoles(r, 3, view.StoreName()) }
	a, b := testRuntime(t, broker, "a", RuntimeOptions{}), testRuntime(t, broker, "b", RuntimeOptions{})
	defer b.Close()
	if _, _, err := kafka.EnsureTopic(ctx, a.Admin(), "orders", 3, nil); err != nil {
		t.Fatal(err)
	}
	a.SetRoles(roles(ha.RoleActive))
	b.SetRoles(roles(ha.RoleStandby))
	for _, rt := range []*Runtime{a, b} {
		if err := rt.StartView(plan); err != nil {
			t.Fatal(err)
		}
	}

	prod, err := kafka.NewClient(kafka.ClientOptions{Brokers: broker.Addrs(), ClientID: "test"}, kafka.ProducerOpts()...)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	regions := []string{"eu", "us", "apac", "latam", "mea"}
	want := map[string][2]int64{}
	next := int64(0)
	produce := func(n int) {
		t.Helper()
		var recs []*kgo.Record
		for range n {
			region := regions[next%int64(len(regions))]
			v, _ := json.Marshal(map[string]any{"region": region, "amount": next})
			key := []byte{0, 0, 0, 0, 0, 0, 0, 0}
			for i := range 8 {
				key[7-i] = byte(next >> (8 * i))
			}
			recs = append(recs, &kgo.Record{Topic: "orders", Key: key, Value: v, Partition: kafka.Partition(key, 3)})
			w := want[region]
			want[region] = [2]int64{w[0] + 1, w[1] + next}
			next++
		}
		if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	wantText := func() string {
		var lines []string
		for r, w := range want {
			lines = append(lines, fmt.Sprintf("%s %d %d", r, w[0], w[1]))
		}
		sort.Strings(lines)
		return strings.Join(lines, "\n")
	}
	// read lists the rows (region, n, total) of rt's stores of by_region.
	read := func(rt *Runtime) (string, error) {
		q, ok := rt.Query("by_region")
		if !ok {
			return "", fmt.Errorf("by_region is not running")
		}
		_, stores := q.Handles(rt.DB())
		var lines []string
		for _, s := range stores {
			it, err := s.NewIter(nil, nil)
			if err != nil {
				return "", err
			}
			for ok := it.First(); ok; ok = it.Next() {
				present, r, _, err := DecodeStored(it.Value(), 3)
				if err != nil {
					it.Close()
					return "", err
				}
				if present {
					lines = append(lines, fmt.Sprintf("%v %v %v", r[0], r[1], r[2]))
				}
			}
			if err := it.Close(); err != nil {
				return "", err
			}
		}
		sort.Strings(lines)
		return strings.Join(lines, "\n"), nil
	}
	waitFor := func(rt *Runtime, what string) {
		t.Helper()
		var got string
		var err error
		if !waitUntil(30*time.Second, func() bool {
			got, err = read(rt)
			return err == nil && got == wantText()
		}) {
			if q, ok := rt.Query("by_region"); ok {
				for _, ts := range append(q.Tasks, q.Rekey...) {
					lag, _ := ts.Lag(time.Now())
					t.Logf("task %d: role %s lag %d skipped %d err %q", ts.Partition, ts.Role(), lag, ts.errors.Load(), ts.LastError())
				}
			}
			t.Fatalf("%s: got\n%s\n(err %v)\nwant\n%s", what, got, err, wantText())
		}
	}

	produce(300)
	waitFor(a, "active")
	waitFor(b, "standby")
	q, _ := b.Query("by_region")
	for _, ts := range q.Tasks {
		if r := ts.Role(); r != "standby" {
			t.Fatalf("b's partition %d is %q, want standby", ts.Partition, r)
		}
	}
	for _, ts := range q.Rekey {
		if ts.Held() {
			t.Fatalf("b runs the re-keying stage of source partition %d without an active", ts.Partition)
		}
	}
	// Without re-keying stages of its own, b still learns the source's
	// ends, against which its standbys' lag is measured, and the
	// changelog's.
	var srcEnd, clEnd int64
	if !waitUntil(10*time.Second, func() bool {
		srcEnd, clEnd = 0, 0
		for sp := range q.Tasks[0].sources.ends {
			srcEnd += q.Tasks[0].sources.ends[sp].Load()
		}
		for _, st := range b.Tasks(time.Now()) {
			clEnd += st.ChangelogEnd
			if st.ChangelogEnd < st.ChangelogOffset {
				t.Fatalf("%s: changelog end %d before the offset %d", st.Task, st.ChangelogEnd, st.ChangelogOffset)
			}
		}
		return srcEnd == 300 && clEnd > 0
	}) {
		t.Fatalf("b's view of the ends: source %d (want 300), changelog %d", srcEnd, clEnd)
	}

	// a goes away; b takes over from its replica.
	a.Close()
	b.SetRoles(roles(ha.RoleActive))
	produce(300)
	waitFor(b, "promoted standby")
	for _, ts := range q.Tasks {
		if r := ts.Role(); r != "active" {
			t.Fatalf("b's partition %d is %q after promotion, want active", ts.Partition, r)
		}
	}
}

// waitUntil checks cond until it holds (true) or d passes (false): for
// states nothing signals, such as a task's progress (internal/poll).
func waitUntil(d time.Duration, cond func() bool) bool { return poll.Cond(d, cond) }

// testRuntime starts a runtime of cluster "t" over broker with a store of
// its own, with opts' other settings and 2-second transactions.
func testRuntime(t testing.TB, broker *kafka.Broker, node string, opts RuntimeOptions) *Runtime {
	t.Helper()
	db, err := materialize.Open(materialize.Options{Dir: t.TempDir(), NoSync: true, CacheSize: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	opts.Brokers, opts.Cluster, opts.Node, opts.DB = broker.Addrs(), "t", node, db
	if opts.TransactionTimeout == 0 {
		opts.TransactionTimeout = 2 * time.Second
	}
	rt, err := NewRuntime(opts)
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

// allRoles gives role r to partitions 0 to parts-1 of every store named.
func allRoles(r ha.Role, parts int32, stores ...string) Roles {
	out := Roles{}
	for _, name := range stores {
		for p := int32(0); p < parts; p++ {
			out[materialize.StoreID{View: name, Partition: p}] = r
		}
	}
	return out
}
