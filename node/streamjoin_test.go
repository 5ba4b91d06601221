package node

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/basindb/basin/internal/poll"
	"github.com/basindb/basin/kafka"
	"github.com/basindb/basin/materialize"
)

// TestStreamStreamJoinRecompute writes random records to two streams
// (lefts keyed by the join key; rights keyed by their own id and
// partitioned differently, so routed to the join's partitions) and keeps
// three derived streams joining them: an inner join with a window
// reaching further after than before and a WHERE, a LEFT JOIN and a FULL
// JOIN. Join keys collide, some are on one side only and some are NULL;
// every record's time is within half an hour and the grace periods are
// an hour, so no record is late and the joins do not depend on the order
// records arrive in. The node is closed and started again twice, with a
// round's records perhaps not joined yet, the second time without its
// state/: the join tasks restore their stores from their changelogs.
// After every round, each derived stream holds exactly the pairs of the
// records so far within its window (and the outer joins' NULL-keyed
// records with NULLs), each once, at the later of the pair's times.
// Records a day later then move stream time past every window in each
// join partition: every derived stream then also holds the unmatched
// records of its outer sides with NULLs, once, and not the records that
// moved stream time, which no record can match any more but which are
// too recent to be emitted.
func TestStreamStreamJoinRecompute(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// As restartable, with the data dir at hand: its state/ is moved
	// aside once.
	b, err := kafka.StartBroker(kafka.BrokerOptions{Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	dir := t.TempDir()
	start := func() *Node {
		return startNode(t, dir, func(o *Options) { o.Brokers = b.Addrs(); o.ClusterSecret = "s" })
	}
	n := start()
	c := sqlConn{t, ctx, connect(t, n.PGAddr())}
	cl, err := kafka.NewClient(kafka.ClientOptions{Brokers: b.Addrs(), Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	c.exec("CREATE STREAM lefts (k VARCHAR KEY, id BIGINT, v BIGINT, ts BIGINT) WITH (partitions = 2, timestamp = 'ts')")
	c.exec("CREATE STREAM rights (id BIGINT KEY, k VARCHAR, w BIGINT, ts BIGINT) WITH (partitions = 3, timestamp = 'ts')")
	c.exec("CREATE STREAM inner_j AS SELECT l.k, l.id AS lid, r.id AS rid, l.v, r.w FROM lefts l JOIN rights r WITHIN (5 MINUTES, 10 MINUTES) GRACE PERIOD 1 HOUR ON l.k = r.k WHERE r.w >= 25")
	c.exec("CREATE STREAM left_j AS SELECT l.k, l.id AS lid, r.id AS rid, r.w FROM lefts l LEFT JOIN rights r WITHIN 3 MINUTES GRACE PERIOD 1 HOUR ON l.k = r.k")
	c.exec("CREATE STREAM full_j AS SELECT COALESCE(l.k, r.k) AS k, l.id AS lid, r.id AS rid, l.v, r.w FROM lefts l FULL OUTER JOIN rights r WITHIN (2 MINUTES, 4 MINUTES) GRACE PERIOD 1 HOUR ON l.k = r.k")
	queries := map[string]string{
		"inner_j": "SELECT k, lid, rid, v, w, rowtime FROM inner_j",
		"left_j":  "SELECT k, lid, rid, w, rowtime FROM left_j",
		"full_j":  "SELECT k, lid, rid, v, w, rowtime FROM full_j",
	}
	// Each derived stream runs 2 join tasks and 3 routing tasks for
	// rights; lefts are in the join's partitions already.
	const tasks = 15

	// A record of either stream; k "" is a NULL join key, val is v or w.
	type record struct {
		id  int64
		k   string
		val int64
		ts  int64
	}
	var ls, rs []record
	const (
		base   = int64(1_700_000_000_000)
		minute = int64(60_000)
	)
	key := func(k string) any {
		if k == "" {
			return nil
		}
		return k
	}
	sqlKey := func(k string) string {
		if k == "" {
			return "NULL"
		}
		return "'" + k + "'"
	}
	row := func(vals ...any) string {
		s := make([]string, len(vals))
		for i, v := range vals {
			s[i] = fmt.Sprint(v)
		}
		return strings.Join(s, " ")
	}
	// within reports whether right record r is in the window of left
	// record l, [l.ts-before, l.ts+after], with an equal key that is not
	// NULL.
	within := func(l, r record, before, after int64) bool {
		return l.k != "" && l.k == r.k && r.ts >= l.ts-before && r.ts <= l.ts+after
	}
	// want computes each derived stream's records from all records
	// written so far: the pairs within its window, NULL-keyed records of
	// outer sides with NULLs, and, once stream time has passed every
	// window (expired), the unmatched records of outer sides with NULLs.
	// Each record's ROWTIME is the later of its records' times.
	want := func(expired bool) map[string][]string {
		out := map[string][]string{}
		add := func(view string, vals ...any) { out[view] = append(out[view], row(vals...)) }
		for _, l := range ls {
			inLeft, inFull := false, false
			for _, r := range rs {
				at := max(l.ts, r.ts)
				if within(l, r, 5*minute, 10*minute) && r.val >= 25 {
					add("inner_j", l.k, l.id, r.id, l.val, r.val, at)
				}
				if within(l, r, 3*minute, 3*minute) {
					add("left_j", l.k, l.id, r.id, r.val, at)
					inLeft = true
				}
				if within(l, r, 2*minute, 4*minute) {
					add("full_j", l.k, l.id, r.id, l.val, r.val, at)
					inFull = true
				}
			}
			if !inLeft && (expired || l.k == "") {
				add("left_j", key(l.k), l.id, nil, nil, l.ts)
			}
			if !inFull && (expired || l.k == "") {
				add("full_j", key(l.k), l.id, nil, l.val, nil, l.ts)
			}
		}
		for _, r := range rs {
			if !slices.ContainsFunc(ls, func(l record) bool { return within(l, r, 2*minute, 4*minute) }) && (expired || r.k == "") {
				add("full_j", key(r.k), nil, r.id, nil, r.val, r.ts)
			}
		}
		for _, w := range out {
			slices.Sort(w)
		}
		return out
	}
	// holds waits until every derived stream holds exactly what want
	// gives.
	holds := func(when string, expired bool) {
		t.Helper()
		for view, w := range want(expired) {
			var got []string
			if !poll.Cond(30*time.Second, func() bool { got = c.rows(queries[view]); return slices.Equal(got, w) }) {
				t.Fatalf("%s: %s has %d records, the join of the records written %d: %s", when, view, len(got), len(w), firstDiff(got, w))
			}
		}
	}
	// drained waits until the join tasks have read every record written
	// so far: each routing task has sent its partition of rights on to
	// the repartition topic, and each join task has read its partitions
	// of lefts and of the repartition topic to their ends.
	drained := func() {
		t.Helper()
		ends := map[string]map[int32]int64{}
		for _, topic := range []string{"lefts", "rights"} {
			end, err := kafka.EndOffsets(ctx, adm, topic)
			if err != nil {
				t.Fatal(err)
			}
			ends[topic] = end
		}
		read := func(store materialize.StoreID, topic string, p int32) int64 {
			cp, err := n.db.Store(store).Checkpoint()
			if err != nil {
				return -1
			}
			return cp.Input[topic][p] // how far it has read the topic
		}
		for view := range queries {
			rel, ok := n.cat.Lookup(view)
			if !ok {
				t.Fatalf("no stream %s", view)
			}
			repartition := rel.RepartitionTopic(n.Options().Cluster)
			if !poll.Cond(30*time.Second, func() bool {
				for p := range int32(3) {
					if read(materialize.StoreID{View: rel.RegroupStore(), Partition: p}, "rights", p) < ends["rights"][p] {
						return false
					}
				}
				routed, err := kafka.EndOffsets(ctx, adm, repartition)
				if err != nil {
					return false
				}
				for p := range int32(2) {
					id := materialize.StoreID{View: rel.StoreName(), Partition: p}
					if read(id, "lefts", p) < ends["lefts"][p] || read(id, repartition, p) < routed[p] {
						return false
					}
				}
				return true
			}) {
				t.Fatalf("the tasks of %s did not read every record written", view)
			}
		}
	}

	rng := rand.New(rand.NewPCG(13, 21))
	var lid, rid int64
	// randomKey is one of 8 keys, or NULL: lefts use k0 to k7 and rights
	// k2 to k9, so k0, k1, k8 and k9 are on one side only.
	randomKey := func(from int) string {
		if rng.IntN(12) == 0 {
			return ""
		}
		return fmt.Sprintf("k%d", from+rng.IntN(8))
	}
	// Times are on a 30-second grid over half an hour, so that records
	// often fall on a window's edges, which it includes.
	randomTime := func() int64 { return base + int64(rng.IntN(61))*30_000 }
	for round := range 8 {
		for range 2 {
			var lv, rv []string
			for range 12 {
				lid++
				l := record{id: lid, k: randomKey(0), val: int64(rng.IntN(100)), ts: randomTime()}
				ls = append(ls, l)
				lv = append(lv, fmt.Sprintf("(%s, %d, %d, %d)", sqlKey(l.k), l.id, l.val, l.ts))
				rid++
				r := record{id: rid, k: randomKey(2), val: int64(rng.IntN(100)), ts: randomTime()}
				rs = append(rs, r)
				rv = append(rv, fmt.Sprintf("(%d, %s, %d, %d)", r.id, sqlKey(r.k), r.val, r.ts))
			}
			c.exec("INSERT INTO lefts VALUES " + strings.Join(lv, ", "))
			c.exec("INSERT INTO rights VALUES " + strings.Join(rv, ", "))
		}
		if round == 3 || round == 6 {
			// Closed with the round's records perhaps not joined yet,
			// the node restores the join tasks' stores and reads on:
			// after round 3 from the stores' checkpoints and the
			// changelogs' tails, after round 6 from the changelogs
			// alone, its state/ moved aside (as operations.md says an
			// operator may).
			if err := n.Close(); err != nil {
				t.Fatal(err)
			}
			if round == 6 {
				if err := os.Rename(filepath.Join(dir, "state"), filepath.Join(dir, "state.old")); err != nil {
					t.Fatal(err)
				}
			}
			n = start()
			c.conn = connect(t, n.PGAddr())
			waitTasks(t, n, tasks)
		}
		holds(fmt.Sprintf("round %d", round), false)
	}
	// No record can be late for the records a day later while a record
	// of the rounds is on its way to the join tasks.
	drained()
	// Sixteen keys of each stream that no other record has: a day later
	// than the rounds, they move stream time past every window. The
	// lefts' are in both of its partitions, which are the join's.
	before, err := kafka.EndOffsets(ctx, adm, "lefts")
	if err != nil {
		t.Fatal(err)
	}
	var lv, rv []string
	for i := range 16 {
		lid++
		lv = append(lv, fmt.Sprintf("('al%d', %d, 0, %d)", i, lid, base+24*60*minute))
		rid++
		rv = append(rv, fmt.Sprintf("(%d, 'ar%d', 0, %d)", rid, i, base+24*60*minute))
	}
	c.exec("INSERT INTO lefts VALUES " + strings.Join(lv, ", "))
	c.exec("INSERT INTO rights VALUES " + strings.Join(rv, ", "))
	after, err := kafka.EndOffsets(ctx, adm, "lefts")
	if err != nil {
		t.Fatal(err)
	}
	for p := range int32(2) {
		if after[p] == before[p] {
			t.Fatalf("no record a day later is in partition %d of lefts", p)
		}
	}
	holds("stream time a day later", true)
	// Once the join tasks have read the records a day later, the derived
	// streams still hold the same records: those records are not emitted.
	drained()
	holds("the records a day later read", true)

	// Records with a NULL join key are logged where their side is not
	// outer: both sides' in the inner join, the rights' in the LEFT
	// JOIN. No record is late.
	nullLefts := len(slices.DeleteFunc(slices.Clone(ls), func(l record) bool { return l.k != "" }))
	nullRights := len(slices.DeleteFunc(slices.Clone(rs), func(r record) bool { return r.k != "" }))
	logged := map[string]int{"CSAS_INNER_J_": nullLefts + nullRights, "CSAS_LEFT_J_": nullRights, "CSAS_FULL_J_": 0}
	counts := func() map[string]int {
		got := map[string]int{}
		for _, id := range c.rows("SELECT query_id FROM basin_processing_log") {
			for prefix := range logged {
				if strings.HasPrefix(id, prefix) {
					got[prefix]++
				}
			}
		}
		return got
	}
	var got map[string]int
	if !poll.Cond(30*time.Second, func() bool {
		got = counts()
		for prefix, want := range logged {
			if got[prefix] != want {
				return false
			}
		}
		return true
	}) {
		t.Errorf("the processing log holds %v records of the joins' queries, want %v", got, logged)
	}
	if late := c.rows("SELECT query_id, error FROM basin_processing_log WHERE error LIKE '%is late%'"); len(late) > 0 {
		t.Errorf("records were late: %s", strings.Join(late, "; "))
	}
}
