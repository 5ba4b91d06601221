package node

import (
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/basindb/basin/internal/srfake"
	"github.com/basindb/basin/internal/testcluster"
	"github.com/basindb/basin/kafka"
	"github.com/basindb/basin/materialize"
	"github.com/basindb/basin/stream"
)

// TestChaos produces 100,000 records (20,000 under the race detector)
// into a three-node cluster while a random node is SIGKILLed and
// restarted, again and again. At the end every view equals a
// recomputation of what was produced, exactly (one of them over a
// derived stream, whose every record must be written once, one over a
// view, one aggregating a table, one counting a stream–table join's
// records, a FULL JOIN of two tables, one of them with deletes, a LEFT
// JOIN on a foreign key, an aggregate of a join by another column, and
// two counting a stream–stream join's pairs, one over its derived
// stream and one of the join itself), every partition's standby holds
// what its active holds, and two subscribers that moved to another node
// AS OF their last position whenever theirs was killed hold what their
// views hold. A third of the keys are written as
// librdkafka's and Sarama's partitioners place them, so the records a
// view or table forwards to their key's partition (placement) go
// through the kills too. It is part of make test; `make chaos` runs it
// alone, and BASIN_CHAOS_SEED replays a run.
func TestChaos(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("BASIN_CHAOS_SEED"); s != "" {
		fmt.Sscan(s, &seed)
	}
	t.Logf("seed %d (BASIN_CHAOS_SEED=%d replays it)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed))

	// Under the race detector (make race), where every node runs several
	// times slower, the run is shorter and the session timeout longer: that
	// pass is for data races, and make test runs the whole of it.
	sessionTimeout, batches := "2s", 100
	if testcluster.Race() {
		sessionTimeout, batches = "4s", 20
	}
	// A schema registry for the Avro stream below, in this process.
	reg, err := srfake.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Close)
	c := testcluster.Start(t, testcluster.Options{Nodes: 3, Args: []string{"--session-timeout", sessionTimeout, "--standby-replicas", "1", "--schema-registry", reg.URL()}})
	// On failure, each node's membership events come first, before the
	// logs' tails (testcluster's cleanup, which runs after this one):
	// which generation each node holds, who led it, and what it asked for.
	t.Cleanup(func() {
		if t.Failed() {
			for _, n := range c.Nodes() {
				t.Log(n.Grep(12, "msg=assignment", "balanced group", "requesting a rebalance", "group membership error", "=== testcluster:"))
			}
		}
	})
	n0 := c.Node(0)
	n0.Exec(t, "CREATE STREAM orders (id BIGINT KEY, region VARCHAR, amount BIGINT) WITH (kafka_topic = 'orders', value_format = 'json', partitions = 4)")
	// Re-keyed through a repartition topic, and keyed like its source.
	// by_region also publishes its rows to a topic (checkPublished).
	n0.Exec(t, "CREATE TABLE by_region WITH (kafka_topic = 'by_region_out') AS SELECT region, COUNT(*) AS n, SUM(amount) AS total FROM orders GROUP BY region")
	n0.Exec(t, "CREATE TABLE by_id AS SELECT id, COUNT(*) AS n, SUM(amount) AS total FROM orders GROUP BY id")
	// A table, upserted: the last record of each key wins.
	n0.Exec(t, "CREATE TABLE accounts (id BIGINT PRIMARY KEY, region VARCHAR, amount BIGINT) WITH (kafka_topic = 'accounts', value_format = 'json', partitions = 4)")
	// A derived stream of the big orders, and a view over it: each
	// record derived once through the kills, or the view's counts are
	// off.
	n0.Exec(t, "CREATE STREAM big_orders AS SELECT id, region, amount FROM orders WHERE amount >= 500")
	n0.Exec(t, "CREATE TABLE big_by_region AS SELECT region, COUNT(*) AS n, SUM(amount) AS total FROM big_orders GROUP BY region")
	// EXPLODE into a derived stream written in Avro through the
	// registry, and a view over it, published with Avro keys: two records
	// per order, each once.
	n0.Exec(t, "CREATE STREAM order_parts WITH (value_format = 'avro') AS SELECT id, EXPLODE(ARRAY[amount, amount + 1]) AS part FROM orders")
	n0.Exec(t, "CREATE TABLE parts_by_id WITH (kafka_topic = 'parts_by_id', key_format = 'avro') AS SELECT id, COUNT(*) AS n, SUM(part) AS total FROM order_parts GROUP BY id")
	// A view over a view: by_region's rows, through its changelog.
	n0.Exec(t, "CREATE TABLE regions_seen AS SELECT region, n, total FROM by_region WHERE n > 0")
	waitPlacedView(t, c, n0, "regions_seen", 4, 1)
	waitPlacedView(t, c, n0, "big_orders", 4, 1)
	waitPlacedView(t, c, n0, "big_by_region", 4, 1)
	waitPlacedView(t, c, n0, "order_parts", 4, 1)
	waitPlacedView(t, c, n0, "parts_by_id", 4, 1)
	waitPlacedView(t, c, n0, "by_region", 4, 1)
	waitPlacedView(t, c, n0, "by_id", 4, 1)
	// A table aggregated by another column: rows move between regions
	// through the change stage (and a third of them are misplaced).
	n0.Exec(t, "CREATE TABLE accounts_by_region AS SELECT region, COUNT(*) AS n, SUM(amount) AS total FROM accounts GROUP BY region")
	// A LEFT JOIN of every order with its account, and a view counting
	// its records: each order joined once through the kills.
	n0.Exec(t, "CREATE STREAM orders_enriched AS SELECT o.id, o.amount, a.region AS account_region FROM orders o LEFT JOIN accounts a ON o.id = a.id")
	n0.Exec(t, "CREATE TABLE enriched_by_id AS SELECT id, COUNT(*) AS n, SUM(amount) AS total FROM orders_enriched GROUP BY id")
	// A table joined with accounts on the key, a FULL JOIN: updates
	// and deletes on both sides replace and retract joined rows.
	n0.Exec(t, "CREATE TABLE balances (id BIGINT PRIMARY KEY, amount BIGINT) WITH (kafka_topic = 'balances', value_format = 'json', partitions = 4)")
	n0.Exec(t, "CREATE TABLE account_balances AS SELECT COALESCE(a.id, b.id) AS id, a.region, b.amount AS balance FROM accounts a FULL JOIN balances b ON a.id = b.id")
	waitPlacedView(t, c, n0, "accounts", 4, 1)
	waitPlacedView(t, c, n0, "accounts_by_region", 4, 1)
	waitPlacedView(t, c, n0, "enriched_by_id", 4, 1)
	// A foreign-key join: each balance joins the account its amount
	// names (all of accounts read by each partition of the stage).
	n0.Exec(t, "CREATE TABLE balance_refs AS SELECT b.id, b.amount, a.region FROM balances b LEFT JOIN accounts a ON b.amount = a.id")
	waitPlacedView(t, c, n0, "account_balances", 4, 1)
	// And an aggregate of it by another column, through a change stage
	// that reads the join stage's changelog.
	n0.Exec(t, "CREATE TABLE refs_by_region AS SELECT a.region, COUNT(*) AS n, SUM(b.amount) AS total FROM balances b JOIN accounts a ON b.amount = a.id GROUP BY a.region")
	waitPlacedView(t, c, n0, "balance_refs", 4, 1)
	waitPlacedView(t, c, n0, "refs_by_region", 4, 1)
	// A chain of three, the last a view: each balance, its account, and
	// the count of its account's region (a foreign key into a view), in
	// two join stages, the first's changelog read by the second.
	n0.Exec(t, "CREATE TABLE balance_regions AS SELECT b.id, b.amount, a.region, r.n FROM balances b JOIN accounts a ON b.id = a.id JOIN accounts_by_region r ON a.region = r.region")
	waitPlacedView(t, c, n0, "balance_regions", 4, 1)
	waitStagePlaced(t, c, n0, "balance_regions", "stage1-join", 4)
	// A stream–stream join: each refund matches its payment within a
	// minute (refunds routed from their 3 partitions to the payments'
	// 4), and a view counts the matches: each pair joined once through
	// the kills, with the windows' stores restored and promoted.
	n0.Exec(t, "CREATE STREAM payments (pid BIGINT KEY, region VARCHAR, amount BIGINT) WITH (kafka_topic = 'payments', value_format = 'json', partitions = 4)")
	n0.Exec(t, "CREATE STREAM refunds (rid BIGINT KEY, pid BIGINT, amount BIGINT) WITH (kafka_topic = 'refunds', value_format = 'json', partitions = 3)")
	n0.Exec(t, "CREATE STREAM refunded AS SELECT p.pid, p.region, r.amount AS refund FROM payments p JOIN refunds r WITHIN 1 MINUTE GRACE PERIOD 1 DAY ON p.pid = r.pid")
	n0.Exec(t, "CREATE TABLE refunded_by_region AS SELECT region, COUNT(*) AS n, SUM(refund) AS total FROM refunded GROUP BY region")
	// The same count straight from the join: a view of a stream's join,
	// whose join stage (routing tasks active only, join tasks with
	// standbys, with the view's tasks) writes the matched pairs to an
	// internal stream.
	n0.Exec(t, "CREATE TABLE refunds_by_region AS SELECT p.region, COUNT(*) AS n, SUM(r.amount) AS total FROM payments p JOIN refunds r WITHIN 1 MINUTE GRACE PERIOD 1 DAY ON p.pid = r.pid GROUP BY p.region")
	// Windowed views of the payments, by region (re-keyed, so each
	// view partition reads all four payment partitions, out of time
	// order): one-second tumbling windows, and sessions of payments
	// at most 40 ms apart. The grace periods are a day: no payment is
	// late, so the windows are exact whatever order they come in.
	n0.Exec(t, "CREATE TABLE pay_seconds AS SELECT region, COUNT(*) AS n, SUM(amount) AS total FROM payments WINDOW TUMBLING (SIZE 1 SECOND, GRACE PERIOD 1 DAY) GROUP BY region")
	n0.Exec(t, "CREATE TABLE pay_sessions AS SELECT region, COUNT(*) AS n, SUM(amount) AS total, TOPK(amount, 2) AS top2 FROM payments WINDOW SESSION (40 MILLISECONDS, GRACE PERIOD 1 DAY) GROUP BY region")
	waitPlacedView(t, c, n0, "pay_seconds", 4, 1)
	waitPlacedView(t, c, n0, "pay_sessions", 4, 1)
	waitPlacedView(t, c, n0, "refunded", 4, 1)
	waitPlacedView(t, c, n0, "refunded_by_region", 4, 1)
	waitPlacedView(t, c, n0, "refunds_by_region", 4, 1)
	waitStagePlaced(t, c, n0, "refunds_by_region", "stage1-join", 4)
	// Each key has one producer, so its records keep their order on
	// one partition; a third of them are misplaced for murmur2.
	placeOf := func(id int64) kafka.Partitioner {
		return []kafka.Partitioner{kafka.PartitionerMurmur2, kafka.PartitionerCRC32, kafka.PartitionerFNV1a, kafka.PartitionerMurmur2}[id%4]
	}

	const perBatch, ids = 1000, 997
	byRegion, byID, bigByRegion := map[string][2]int64{}, map[string][2]int64{}, map[string][2]int64{}
	accounts := map[int64]string{}
	balances := map[int64]int64{}
	refunded := map[string][2]int64{}
	type payment struct{ at, amount int64 }
	payTimes := map[string][]payment{} // by region
	next := int64(0)
	base := time.Now().Add(-time.Hour)
	produce := func() {
		recs := make([]*kgo.Record, 0, perBatch)
		var accs, bals, pays, refs []*kgo.Record
		for range perBatch {
			id := next % ids
			region := clusterRegions[rng.IntN(len(clusterRegions))]
			amount := rng.Int64N(1000)
			val, _ := json.Marshal(map[string]any{"region": region, "amount": amount})
			key := binary.BigEndian.AppendUint64(nil, uint64(id))
			p := placeOf(id).Partition(key, 4)
			recs = append(recs, &kgo.Record{Key: key, Value: val, Partition: p})
			if rng.IntN(4) == 0 {
				accs = append(accs, &kgo.Record{Key: key, Value: val, Partition: p})
				accounts[id] = fmt.Sprintf("%d|%s|%d", id, region, amount)
			}
			switch rng.IntN(8) {
			case 0:
				bal := rng.Int64N(100)
				v, _ := json.Marshal(map[string]any{"amount": bal})
				bals = append(bals, &kgo.Record{Key: key, Value: v, Partition: p})
				balances[id] = bal
			case 1:
				bals = append(bals, &kgo.Record{Key: key, Partition: p}) // a tombstone
				delete(balances, id)
			}
			if rng.IntN(25) == 0 {
				// A payment, and for half of them a refund 5 ms later.
				at := base.Add(time.Duration(next) * time.Millisecond)
				pkey := binary.BigEndian.AppendUint64(nil, uint64(next))
				pv, _ := json.Marshal(map[string]any{"region": region, "amount": amount})
				pays = append(pays, &kgo.Record{Key: pkey, Value: pv, Timestamp: at, Partition: kafka.PartitionerMurmur2.Partition(pkey, 4)})
				payTimes[region] = append(payTimes[region], payment{at.UnixMilli(), amount})
				if rng.IntN(2) == 0 {
					refund := 1 + rng.Int64N(50)
					rv, _ := json.Marshal(map[string]any{"pid": next, "amount": refund})
					refs = append(refs, &kgo.Record{Key: pkey, Value: rv, Timestamp: at.Add(5 * time.Millisecond),
						Partition: kafka.PartitionerMurmur2.Partition(pkey, 3)})
					r := refunded[region]
					refunded[region] = [2]int64{r[0] + 1, r[1] + refund}
				}
			}
			r := byRegion[region]
			byRegion[region] = [2]int64{r[0] + 1, r[1] + amount}
			if amount >= 500 {
				r := bigByRegion[region]
				bigByRegion[region] = [2]int64{r[0] + 1, r[1] + amount}
			}
			k := fmt.Sprint(id)
			i := byID[k]
			byID[k] = [2]int64{i[0] + 1, i[1] + amount}
			next++
		}
		c.ProduceTo(t, "orders", recs...)
		c.ProduceTo(t, "accounts", accs...)
		c.ProduceTo(t, "balances", bals...)
		c.ProduceTo(t, "payments", pays...)
		c.ProduceTo(t, "refunds", refs...)
	}
	// Two subscribers follow views through the kills, moving to another
	// node AS OF their last row's position whenever theirs is killed:
	// one of a grouped view, one of the FULL JOIN (deletes, rows that
	// stop and start matching its WHERE).
	subRegions := startChaosSubscriber(t, c, 0, "by_region", "", 1)
	subBalances := startChaosSubscriber(t, c, 1, "account_balances", "balance > 50", 1)
	var down *testcluster.Node
	kills := 0
	for b := range batches {
		produce()
		switch {
		case down != nil && rng.IntN(3) == 0:
			t.Logf("batch %d: restarting %s", b, down.ID)
			down.Restart(t)
			down = nil
		case down == nil && b%10 == 5:
			down = c.Nodes()[rng.IntN(3)]
			t.Logf("batch %d: SIGKILL %s", b, down.ID)
			down.Kill()
			kills++
			if rng.IntN(2) == 0 {
				// Stay down past the session timeout: the group moves
				// its tasks, standbys are promoted, and its return is a
				// rebalance rather than a static rejoin.
				live := c.Nodes()[(down.Index+1)%3]
				for _, v := range []string{"by_region", "by_id", "big_orders", "big_by_region", "order_parts", "parts_by_id", "accounts_by_region", "account_balances", "balance_refs", "refs_by_region", "balance_regions", "refunded_by_region", "refunds_by_region", "pay_seconds", "pay_sessions"} {
					placed := waitPlacedView(t, c, live, v, 4, 1)
					for task, p := range placed {
						if strings.Contains(p, down.ID) {
							t.Fatalf("%s still placed on %s after failover: %s", task, down.ID, p)
						}
					}
				}
				t.Logf("batch %d: %s's tasks moved", b, down.ID)
			}
		}
	}
	if down != nil {
		down.Restart(t)
	}
	t.Logf("%d records produced, %d kills", next, kills)

	checkView(t, c, "by_region", "SELECT region, n, total FROM by_region WHERE _partition = %d", countSum(byRegion))
	checkPublished(t, c, "by_region_out", byRegion)
	subRegions.check(t, countSum(byRegion))
	checkView(t, c, "regions_seen", "SELECT region, n, total FROM regions_seen WHERE _partition = %d", countSum(byRegion))
	checkView(t, c, "by_id", "SELECT id, n, total FROM by_id WHERE _partition = %d", countSum(byID))
	checkView(t, c, "enriched_by_id", "SELECT id, n, total FROM enriched_by_id WHERE _partition = %d", countSum(byID))
	checkView(t, c, "big_by_region", "SELECT region, n, total FROM big_by_region WHERE _partition = %d", countSum(bigByRegion))
	// order_parts has amount and amount + 1 of each order.
	partsByID := map[string][2]int64{}
	for id, cs := range byID {
		partsByID[id] = [2]int64{2 * cs[0], 2*cs[1] + cs[0]}
	}
	checkView(t, c, "parts_by_id", "SELECT id, n, total FROM parts_by_id WHERE _partition = %d", countSum(partsByID))
	var accountRows []string
	for _, r := range accounts {
		accountRows = append(accountRows, r)
	}
	checkView(t, c, "accounts", "SELECT id, region, amount FROM accounts WHERE _partition = %d", accountRows)
	accountsByRegion := map[string][2]int64{}
	for _, r := range accounts {
		var id, amount int64
		var region string
		f := strings.Split(r, "|")
		fmt.Sscan(f[0], &id)
		region = f[1]
		fmt.Sscan(f[2], &amount)
		a := accountsByRegion[region]
		accountsByRegion[region] = [2]int64{a[0] + 1, a[1] + amount}
	}
	checkView(t, c, "accounts_by_region", "SELECT region, n, total FROM accounts_by_region WHERE _partition = %d", countSum(accountsByRegion))
	var balanceRows []string
	for id, b := range balances {
		balanceRows = append(balanceRows, fmt.Sprintf("%d|%d", id, b))
	}
	checkView(t, c, "balances", "SELECT id, amount FROM balances WHERE _partition = %d", balanceRows)
	var joined []string
	for id, r := range accounts {
		bal := "NULL"
		if b, ok := balances[id]; ok {
			bal = fmt.Sprint(b)
		}
		joined = append(joined, fmt.Sprintf("%d|%s|%s", id, strings.Split(r, "|")[1], bal))
	}
	for id, b := range balances {
		if _, ok := accounts[id]; !ok {
			joined = append(joined, fmt.Sprintf("%d|NULL|%d", id, b))
		}
	}
	checkView(t, c, "account_balances", "SELECT id, region, balance FROM account_balances WHERE _partition = %d", joined)
	var rich []string
	for id, b := range balances {
		if b > 50 {
			region := "NULL"
			if r, ok := accounts[id]; ok {
				region = strings.Split(r, "|")[1]
			}
			rich = append(rich, fmt.Sprintf("%d|%s|%d", id, region, b))
		}
	}
	subBalances.check(t, rich)
	var refs []string
	for id, b := range balances {
		region := "NULL"
		if r, ok := accounts[b]; ok {
			region = strings.Split(r, "|")[1]
		}
		refs = append(refs, fmt.Sprintf("%d|%d|%s", id, b, region))
	}
	checkView(t, c, "balance_refs", "SELECT id, amount, region FROM balance_refs WHERE _partition = %d", refs)
	refsByRegion := map[string][2]int64{}
	for _, b := range balances {
		if r, ok := accounts[b]; ok {
			region := strings.Split(r, "|")[1]
			a := refsByRegion[region]
			refsByRegion[region] = [2]int64{a[0] + 1, a[1] + b}
		}
	}
	checkView(t, c, "refs_by_region", "SELECT region, n, total FROM refs_by_region WHERE _partition = %d", countSum(refsByRegion))
	var chained []string
	for id, b := range balances {
		if r, ok := accounts[id]; ok {
			region := strings.Split(r, "|")[1]
			chained = append(chained, fmt.Sprintf("%d|%d|%s|%d", id, b, region, accountsByRegion[region][0]))
		}
	}
	checkView(t, c, "balance_regions", "SELECT id, amount, region, n FROM balance_regions WHERE _partition = %d", chained)
	checkView(t, c, "refunded_by_region", "SELECT region, n, total FROM refunded_by_region WHERE _partition = %d", countSum(refunded))
	checkView(t, c, "refunds_by_region", "SELECT region, n, total FROM refunds_by_region WHERE _partition = %d", countSum(refunded))
	// The windows, computed from every payment: a second's, and the
	// sessions, each starting at a payment more than 40 ms after the
	// one before it in its region.
	var seconds, sessions []string
	for region, ps := range payTimes {
		slices.SortFunc(ps, func(a, b payment) int { return cmp.Compare(a.at, b.at) })
		bySecond := map[int64][2]int64{}
		for _, p := range ps {
			w := bySecond[p.at/1000*1000]
			bySecond[p.at/1000*1000] = [2]int64{w[0] + 1, w[1] + p.amount}
		}
		for start, w := range bySecond {
			seconds = append(seconds, fmt.Sprintf("%s|%d|%d|%d|%d", region, start, start+1000, w[0], w[1]))
		}
		for i := 0; i < len(ps); {
			j, total := i, int64(0)
			var amounts []int64
			for ; j < len(ps) && (j == i || ps[j].at-ps[j-1].at <= 40); j++ {
				total += ps[j].amount
				amounts = append(amounts, ps[j].amount)
			}
			// TOPK(amount, 2): the two greatest, greatest first.
			slices.SortFunc(amounts, func(a, b int64) int { return cmp.Compare(b, a) })
			var top []string
			for _, a := range amounts[:min(2, len(amounts))] {
				top = append(top, strconv.FormatInt(a, 10))
			}
			sessions = append(sessions, fmt.Sprintf("%s|%d|%d|%d|%d|{%s}", region, ps[i].at, ps[j-1].at, j-i, total, strings.Join(top, ",")))
			i = j
		}
	}
	checkView(t, c, "pay_seconds", "SELECT region, windowstart, windowend, n, total FROM pay_seconds WHERE _partition = %d", seconds)
	checkView(t, c, "pay_sessions", "SELECT region, windowstart, windowend, n, total, top2 FROM pay_sessions WHERE _partition = %d", sessions)
}

// countSum renders key → (count, sum) as the rows of a view.
func countSum(m map[string][2]int64) []string {
	var rows []string
	for k, v := range m {
		rows = append(rows, fmt.Sprintf("%s|%d|%d", k, v[0], v[1]))
	}
	return rows
}

// checkView waits until, for every partition of view, every node that
// holds it answers query (its %d the partition), at least two do (active
// and standby), and they agree; and until the partitions together hold
// exactly wantRows.
func checkView(t *testing.T, c *testcluster.Cluster, view, query string, wantRows []string) {
	t.Helper()
	sort.Strings(wantRows)
	start, explained := time.Now(), ""
	c.Eventually(t, 3*time.Minute, func() error {
		var all []string
		partOf := map[string][]int{} // the partitions a row was read from
		for p := 0; p < 4; p++ {
			var answers []string
			for _, n := range c.Nodes() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				rows, err := localQuery(ctx, n, fmt.Sprintf(query, p))
				cancel()
				if err != nil {
					if strings.Contains(err.Error(), "has no replica on node") {
						continue
					}
					return fmt.Errorf("%s partition %d on %s: %v", view, p, n.ID, err)
				}
				var lines []string
				for _, r := range rows {
					lines = append(lines, strings.Join(r, "|"))
				}
				sort.Strings(lines)
				answers = append(answers, strings.Join(lines, "\n"))
			}
			if len(answers) < 2 {
				return fmt.Errorf("%s partition %d: %d replicas answered, want 2", view, p, len(answers))
			}
			for _, a := range answers[1:] {
				if a != answers[0] {
					return fmt.Errorf("%s partition %d: replicas differ", view, p)
				}
			}
			if answers[0] != "" {
				for _, l := range strings.Split(answers[0], "\n") {
					all = append(all, l)
					partOf[l] = append(partOf[l], p)
				}
			}
		}
		sort.Strings(all)
		if got := strings.Join(all, "\n"); got != strings.Join(wantRows, "\n") {
			diff, keys := rowsDiff(all, wantRows, partOf)
			if explained == "" && time.Since(start) > testcluster.Timeout(3*time.Minute)-30*time.Second {
				// About to fail: say where the wrong rows' keys stand in
				// the topics the view is made from.
				explained = topicsOfKeys(c, view, keys)
			}
			if explained != "" {
				diff += "; " + explained
			}
			return fmt.Errorf("%s: %d rows, want %d: %s", view, len(all), len(wantRows), diff)
		}
		return nil
	})
}

// rowsDiff describes how got differs from want (both sorted): the rows
// only one has (at most ten of each shown), with the partitions each
// extra row was read from; keys are the first columns of all of them.
func rowsDiff(got, want []string, partOf map[string][]int) (diff string, keys map[string]bool) {
	var extra, missing []string
	keys = map[string]bool{}
	i, j := 0, 0
	for i < len(got) || j < len(want) {
		switch {
		case j == len(want) || i < len(got) && got[i] < want[j]:
			if len(extra) < 10 {
				extra = append(extra, fmt.Sprintf("%q (partitions %v)", got[i], partOf[got[i]]))
			}
			keys[strings.Split(got[i], "|")[0]] = true
			i++
		case i == len(got) || want[j] < got[i]:
			if len(missing) < 10 {
				missing = append(missing, fmt.Sprintf("%q", want[j]))
			}
			keys[strings.Split(want[j], "|")[0]] = true
			j++
		default:
			i, j = i+1, j+1
		}
	}
	return fmt.Sprintf("extra %s; missing %s", strings.Join(extra, ", "), strings.Join(missing, ", ")), keys
}

// topicsOfKeys says, for each of keys (at most ten), what the last
// committed record of the key is in each internal topic of view that
// holds rows by key (its changelog, and a join's changes): present or
// removed, at which partition and offset. It tells a wrong view row
// written wrong from one applied wrong.
func topicsOfKeys(c *testcluster.Cluster, view string, keys map[string]bool) string {
	var out []string
	for _, suffix := range []string{"changes", "changelog"} {
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.Broker()), kgo.ConsumeRegex(), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
			kgo.ConsumeTopics(`.*-`+regexp.QuoteMeta(view)+`-\d+-`+suffix+`$`))
		if err != nil {
			return err.Error()
		}
		last := map[string]string{}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		for ctx.Err() == nil {
			cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
				kv, err := materialize.DecodeKey(r.Key)
				if err != nil || len(kv) == 0 || len(r.Headers) > 0 { // markers and fences have headers
					return
				}
				k := fmt.Sprint(kv[0])
				if !keys[k] {
					return
				}
				state := "present"
				if present, _, _, err := stream.DecodeStored(r.Value, 0); r.Value == nil || err == nil && !present {
					state = "removed"
				}
				last[k] = fmt.Sprintf("%s@%d/%d", state, r.Partition, r.Offset)
			})
		}
		cancel()
		cl.Close()
		var ks []string
		for k := range keys {
			if len(ks) < 10 {
				ks = append(ks, k+": "+cmp.Or(last[k], "none"))
			}
		}
		sort.Strings(ks)
		out = append(out, fmt.Sprintf("%s: %s", suffix, strings.Join(ks, ", ")))
	}
	return strings.Join(out, "; ")
}

// checkPublished reads topic, where a view published its (count, sum)
// rows through the kills, as a read_committed consumer does: each key's
// records must count up strictly (a change published twice, by a task
// that crashed after producing or by a zombie, would repeat or go back),
// and the last of each must be want's.
func checkPublished(t *testing.T, c *testcluster.Cluster, topic string, want map[string][2]int64) {
	t.Helper()
	cl := c.Client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	last := map[string][2]int64{}
	c.Eventually(t, 2*time.Minute, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		fs := cl.PollFetches(ctx)
		var bad error
		fs.EachRecord(func(r *kgo.Record) {
			var v struct{ N, Total int64 }
			if err := json.Unmarshal(r.Value, &v); err != nil || r.Value == nil {
				bad = fmt.Errorf("%s: record %q=%q at %d/%d is not a row", topic, r.Key, r.Value, r.Partition, r.Offset)
				return
			}
			k := string(r.Key)
			if had, ok := last[k]; ok && v.N <= had[0] {
				bad = fmt.Errorf("%s: key %s counted %d after %d at %d/%d: a change published twice", topic, k, v.N, had[0], r.Partition, r.Offset)
			}
			last[k] = [2]int64{v.N, v.Total}
		})
		if bad != nil {
			t.Fatal(bad)
		}
		if len(last) != len(want) {
			return fmt.Errorf("%s: %d keys, want %d", topic, len(last), len(want))
		}
		for k, w := range want {
			if last[k] != w {
				return fmt.Errorf("%s: key %s at %v, want %v", topic, k, last[k], w)
			}
		}
		return nil
	})
}
