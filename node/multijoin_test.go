package node

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/poll"
	"github.com/basindb/basin/kafka"
	"github.com/basindb/basin/materialize"
)

// TestMultiJoinRecompute keeps two derived streams and two views over
// joins of three relations or of a stream's join, while random upserts
// and deletes change two tables between rounds of random orders and
// payments: ord_full joins orders with customers and LEFT JOINs products
// (two stream–table joins, with a WHERE over both tables), paid_by
// joins orders with payments within a window and then with customers (a
// stream–stream join, then a stream–table one), by_region counts the
// orders joined with their customers by region, and per_customer
// aggregates the orders' payments by customer. The tables, the streams
// and the joins' stages all have other partition counts, so every join
// routes one of its sides or both. Each round's orders and payments are
// written once every join task that reads a table has read the round's
// changes, and the next round's changes once every record is joined, so
// each order and each pair of an order and a payment joins the tables
// as the round of its later record left them. Every record's time is
// within half an hour and the grace periods are an hour, so no record
// is late. The node is closed halfway, with a round's records perhaps
// not joined yet, and started again: the join tasks and stages resume
// from their stores and markers. After every round each derived stream
// holds exactly the joins of the records written so far, each once, at
// its time, and each view their aggregates.
func TestMultiJoinRecompute(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start, broker := restartable(t)
	n := start()
	c := sqlConn{t, ctx, connect(t, n.PGAddr())}
	cl, err := kafka.NewClient(kafka.ClientOptions{Brokers: []string{broker}, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	c.exec("CREATE TABLE customers (id VARCHAR PRIMARY KEY, region VARCHAR, tier BIGINT) WITH (partitions = 3)")
	c.exec("CREATE TABLE products (sku VARCHAR PRIMARY KEY, price BIGINT) WITH (partitions = 2)")
	c.exec("CREATE STREAM orders (id BIGINT KEY, customer VARCHAR, sku VARCHAR, qty BIGINT, ts BIGINT) WITH (partitions = 2, timestamp = 'ts')")
	c.exec("CREATE STREAM payments (pid BIGINT KEY, order_id BIGINT, paid BIGINT, ts BIGINT) WITH (partitions = 3, timestamp = 'ts')")
	c.exec(`CREATE STREAM ord_full AS SELECT o.sku, o.id, o.customer, o.qty, c.region, c.tier, p.price, o.qty * p.price AS total
		FROM orders o JOIN customers c ON o.customer = c.id LEFT JOIN products p ON o.sku = p.sku
		WHERE c.tier >= 1 OR p.price IS NULL`)
	c.exec(`CREATE STREAM paid_by AS SELECT o.customer, o.id, p.pid, p.paid, c.region, c.tier
		FROM orders o JOIN payments p WITHIN (5 MINUTES, 10 MINUTES) GRACE PERIOD 1 HOUR ON o.id = p.order_id
		JOIN customers c ON o.customer = c.id`)
	c.exec(`CREATE TABLE by_region AS SELECT c.region, COUNT(*) AS n, SUM(o.qty) AS qty
		FROM orders o JOIN customers c ON o.customer = c.id GROUP BY c.region`)
	c.exec(`CREATE TABLE per_customer AS SELECT o.customer, COUNT(*) AS n, SUM(p.paid) AS paid
		FROM orders o JOIN payments p WITHIN 10 MINUTES GRACE PERIOD 1 HOUR ON o.id = p.order_id GROUP BY o.customer`)
	// A stream joined with a view: each order looks up the customer's row
	// in a view of the tiered customers, read from its changelog.
	c.exec("CREATE TABLE tiered AS SELECT id, region, tier FROM customers WHERE tier >= 1")
	c.exec("CREATE STREAM ord_tiered AS SELECT o.customer, o.id, t.region, t.tier FROM orders o LEFT JOIN tiered t ON o.customer = t.id")
	queries := map[string]string{
		"ord_tiered":   "SELECT customer, id, region, tier FROM ord_tiered",
		"ord_full":     "SELECT sku, id, customer, qty, region, tier, price, total, rowtime FROM ord_full",
		"paid_by":      "SELECT customer, id, pid, paid, region, tier, rowtime FROM paid_by",
		"by_region":    "SELECT region, n, qty FROM by_region",
		"per_customer": "SELECT customer, n, paid FROM per_customer",
	}
	// The tables' 5 partitions. ord_full: its stage's 3 join tasks (in
	// customers' partitions) and 2 routing tasks for orders, its last
	// join's 2 join tasks (in products' partitions) and 3 routing tasks
	// for the stage's stream. paid_by: its stage's 2 join tasks (in
	// orders' partitions, which are keyed by the join key) and 3 routing
	// tasks for payments, its last join's 3 join tasks and 2 routing
	// tasks for the stage's stream. by_region: its stage's 5 tasks, as
	// ord_full's, 3 re-keying tasks and 3 partitions. per_customer: its
	// stage's 5 tasks, as paid_by's, 2 re-keying tasks and 2 partitions.
	// tiered: 3 partitions; ord_tiered: 3 join tasks and 2 routing tasks.
	const tasks = 5 + 10 + 10 + 11 + 9 + 3 + 5

	// storeOf names the store of a derived stream's or view's join
	// stage (from 1), or of its own join (0): a stage's is named after
	// the internal stream it writes. readers are the stores of the join
	// tasks that read each table, each partition's holding how far it
	// has: ord_full's stage, paid_by's last join and by_region's stage
	// read customers, ord_full's last join reads products.
	storeOf := func(name string, stage int) string {
		t.Helper()
		rel, ok := n.cat.Lookup(name)
		if !ok {
			t.Fatalf("no relation %s", name)
		}
		if stage == 0 {
			return rel.StoreName()
		}
		return (&catalog.Relation{Name: rel.StageName(stage), Version: rel.Version}).StoreName()
	}
	tiered, _ := n.cat.Lookup("tiered")
	readers := map[string][]string{
		"customers": {storeOf("ord_full", 1), storeOf("paid_by", 0), storeOf("by_region", 1)},
		"products":  {storeOf("ord_full", 0)},
		// ord_tiered's join reads the view's changelog.
		tiered.ChangelogTopic(n.opts.Cluster): {storeOf("ord_tiered", 0)},
	}
	// caughtUp waits until every join task that reads a table has read
	// its partition of it to the end it has now.
	caughtUp := func() {
		t.Helper()
		// The view first: its changelog has the customers' changes.
		ends, err := kafka.EndOffsets(ctx, adm, "customers")
		if err != nil {
			t.Fatal(err)
		}
		if !poll.Cond(30*time.Second, func() bool {
			for p, end := range ends {
				cp, err := n.db.Store(materialize.StoreID{View: tiered.StoreName(), Partition: p}).Checkpoint()
				if next, _ := cp.Position.Get("customers", p); err != nil || next < end {
					return false
				}
			}
			return true
		}) {
			t.Fatal("view tiered did not reflect the changes of customers")
		}
		for table, stores := range readers {
			ends, err := kafka.EndOffsets(ctx, adm, table)
			if err != nil {
				t.Fatal(err)
			}
			for _, store := range stores {
				if !poll.Cond(30*time.Second, func() bool {
					for p, end := range ends {
						cp, err := n.db.Store(materialize.StoreID{View: store, Partition: p}).Checkpoint()
						if err != nil {
							return false
						}
						if cp.Input[table][p] < end { // read to the end
							return false
						}
					}
					return true
				}) {
					t.Fatalf("the join tasks of %s did not read the changes of %s", store, table)
				}
			}
		}
	}

	type customer struct {
		region string
		tier   int64
	}
	type order struct {
		id, qty, ts   int64
		customer, sku string
		round         int
	}
	type payment struct {
		pid, orderID, paid, ts int64
		round                  int
	}
	customers := map[string]customer{}
	products := map[string]int64{}
	var orders []order
	var payments []payment
	// want holds each derived stream's records and each view's groups
	// (count and sum) so far.
	want := map[string][]string{}
	byRegion := map[string][2]int64{}
	perCustomer := map[string][2]int64{}
	row := func(vals ...any) string {
		s := make([]string, len(vals))
		for i, v := range vals {
			s[i] = fmt.Sprint(v)
		}
		return strings.Join(s, " ")
	}
	groups := func(g map[string][2]int64) []string {
		var out []string
		for k, v := range g {
			out = append(out, row(k, v[0], v[1]))
		}
		slices.Sort(out)
		return out
	}
	// holds waits until every derived stream and view holds exactly what
	// want gives.
	holds := func(when string) {
		t.Helper()
		want["by_region"], want["per_customer"] = groups(byRegion), groups(perCustomer)
		for name, q := range queries {
			w := slices.Sorted(slices.Values(want[name]))
			var got []string
			if !poll.Cond(30*time.Second, func() bool { got = c.rows(q); return slices.Equal(got, w) }) {
				t.Fatalf("%s: %s has %d rows, want %d: %s", when, name, len(got), len(w), firstDiff(got, w))
			}
		}
	}

	const (
		base   = int64(1_700_000_000_000)
		minute = int64(60_000)
	)
	rng := rand.New(rand.NewPCG(34, 55))
	regions := []string{"north", "south", "east", "west"}
	// Times are on a 30-second grid over half an hour, so that pairs
	// often fall on a window's edges, which it includes, and no record is
	// late within the joins' grace period of an hour.
	randomTime := func() int64 { return base + int64(rng.IntN(61))*30_000 }
	var oid, pid int64
	for round := range 8 {
		var ups []string
		for range 8 {
			k := fmt.Sprintf("c%d", rng.IntN(12))
			cu := customer{region: regions[rng.IntN(len(regions))], tier: int64(rng.IntN(3))}
			customers[k] = cu
			ups = append(ups, fmt.Sprintf("('%s', '%s', %d)", k, cu.region, cu.tier))
		}
		c.exec("INSERT INTO customers VALUES " + strings.Join(ups, ", "))
		for range 2 {
			k := fmt.Sprintf("c%d", rng.IntN(12))
			delete(customers, k)
			c.exec(fmt.Sprintf("DELETE FROM customers WHERE id = '%s'", k))
		}
		ups = ups[:0]
		for range 3 {
			k := fmt.Sprintf("p%d", rng.IntN(8))
			products[k] = int64(1 + rng.IntN(100))
			ups = append(ups, fmt.Sprintf("('%s', %d)", k, products[k]))
		}
		c.exec("INSERT INTO products VALUES " + strings.Join(ups, ", "))
		k := fmt.Sprintf("p%d", rng.IntN(8))
		delete(products, k)
		c.exec(fmt.Sprintf("DELETE FROM products WHERE sku = '%s'", k))
		caughtUp()

		// Customers c12 and c13 and products p8 and p9 never exist.
		var ov, pv []string
		for range 40 {
			oid++
			o := order{id: oid, qty: int64(1 + rng.IntN(9)), ts: randomTime(),
				customer: fmt.Sprintf("c%d", rng.IntN(14)), sku: fmt.Sprintf("p%d", rng.IntN(10)), round: round}
			orders = append(orders, o)
			ov = append(ov, fmt.Sprintf("(%d, '%s', '%s', %d, %d)", o.id, o.customer, o.sku, o.qty, o.ts))
			cu, ok := customers[o.customer]
			if ok && cu.tier >= 1 {
				want["ord_tiered"] = append(want["ord_tiered"], row(o.customer, o.id, cu.region, cu.tier))
			} else {
				want["ord_tiered"] = append(want["ord_tiered"], row(o.customer, o.id, nil, nil))
			}
			if !ok {
				continue
			}
			g := byRegion[cu.region]
			byRegion[cu.region] = [2]int64{g[0] + 1, g[1] + o.qty}
			price, ok := products[o.sku]
			switch {
			case !ok:
				want["ord_full"] = append(want["ord_full"], row(o.sku, o.id, o.customer, o.qty, cu.region, cu.tier, nil, nil, o.ts))
			case cu.tier >= 1:
				want["ord_full"] = append(want["ord_full"], row(o.sku, o.id, o.customer, o.qty, cu.region, cu.tier, price, o.qty*price, o.ts))
			}
		}
		// Payments name orders of this round and the ones before, and
		// some of the next round, which they join once it writes them.
		for range 40 {
			pid++
			p := payment{pid: pid, orderID: max(1, oid+10-int64(rng.IntN(60))), paid: int64(1 + rng.IntN(100)), ts: randomTime(), round: round}
			payments = append(payments, p)
			pv = append(pv, fmt.Sprintf("(%d, %d, %d, %d)", p.pid, p.orderID, p.paid, p.ts))
		}
		c.exec("INSERT INTO orders VALUES " + strings.Join(ov, ", "))
		c.exec("INSERT INTO payments VALUES " + strings.Join(pv, ", "))
		// The pairs whose later record is of this round join the
		// customers as this round left them.
		for _, o := range orders {
			for _, p := range payments {
				if o.id != p.orderID || max(o.round, p.round) != round {
					continue
				}
				if p.ts >= o.ts-10*minute && p.ts <= o.ts+10*minute {
					g := perCustomer[o.customer]
					perCustomer[o.customer] = [2]int64{g[0] + 1, g[1] + p.paid}
				}
				cu, ok := customers[o.customer]
				if ok && p.ts >= o.ts-5*minute && p.ts <= o.ts+10*minute {
					want["paid_by"] = append(want["paid_by"], row(o.customer, o.id, p.pid, p.paid, cu.region, cu.tier, max(o.ts, p.ts)))
				}
			}
		}
		if round == 4 {
			// Closed with the round's records perhaps not joined yet,
			// the node restores the join stages' stores and reads on.
			if err := n.Close(); err != nil {
				t.Fatal(err)
			}
			n = start()
			c.conn = connect(t, n.PGAddr())
			waitTasks(t, n, tasks)
		}
		holds(fmt.Sprintf("round %d", round))
	}
	// Once the tasks report no lag, the derived streams and views still
	// hold the same: nothing came twice.
	waitTasks(t, n, tasks)
	holds("the end")
	t.Logf("%d records of ord_full, %d of paid_by, %d groups of by_region, %d of per_customer",
		len(want["ord_full"]), len(want["paid_by"]), len(want["by_region"]), len(want["per_customer"]))
	// No record was late, undecodable or without a join key.
	if logged := c.rows("SELECT query_id, error FROM basin_processing_log"); len(logged) > 0 {
		t.Errorf("the processing log holds records: %s", strings.Join(logged, "; "))
	}
}
