package node

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/basindb/basin/materialize"
)

// TestStreamJoinPositions keeps views aggregating joins of streams: a
// stream–table join whose stream is routed to the table's partitions
// (grouped by another column, so re-keyed), the same grouped by the join
// key (read where the join wrote it), a chain of two stream–table joins,
// and a stream–stream join. Their positions are in the topics beneath
// the joins, so after each round of writes a read in another session
// bounded by the round's position (basin.min_position) sees every
// record of the round: each view then equals what the same SQL gives
// over the records written. A write to the table side is reflected too:
// the position of the rows read covers it.
func TestStreamJoinPositions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	n := startNode(t, t.TempDir())
	c := sqlConn{t, ctx, connect(t, n.PGAddr())}
	c.exec("CREATE TABLE customers (id VARCHAR PRIMARY KEY, region VARCHAR) WITH (partitions = 2)")
	c.exec("CREATE TABLE products (sku VARCHAR PRIMARY KEY, price BIGINT) WITH (partitions = 3)")
	c.exec("CREATE STREAM orders (id BIGINT KEY, customer VARCHAR, sku VARCHAR, qty BIGINT, ts BIGINT) WITH (partitions = 3, timestamp = 'ts')")
	c.exec("CREATE STREAM payments (pid BIGINT KEY, order_id BIGINT, paid BIGINT, ts BIGINT) WITH (partitions = 2, timestamp = 'ts')")
	c.exec("INSERT INTO customers VALUES ('c0', 'eu'), ('c1', 'us'), ('c2', 'eu'), ('c3', 'apac'), ('c4', 'us')")
	c.exec("INSERT INTO products VALUES ('p0', 3), ('p1', 5), ('p2', 7)")
	views := map[string]string{
		"by_region":   "CREATE TABLE by_region AS SELECT c.region, COUNT(*) AS n, SUM(o.qty) AS qty FROM orders o JOIN customers c ON o.customer = c.id GROUP BY c.region",
		"by_customer": "CREATE TABLE by_customer AS SELECT c.id, COUNT(*) AS n, SUM(o.qty) AS qty FROM orders o JOIN customers c ON o.customer = c.id GROUP BY c.id",
		"spend": "CREATE TABLE spend AS SELECT c.region, SUM(o.qty * p.price) AS spent FROM orders o JOIN customers c ON o.customer = c.id " +
			"JOIN products p ON o.sku = p.sku GROUP BY c.region",
		"paid": "CREATE TABLE paid AS SELECT o.customer, COUNT(*) AS n, SUM(p.paid) AS paid FROM orders o " +
			"JOIN payments p WITHIN 1 HOUR GRACE PERIOD 1 HOUR ON o.id = p.order_id GROUP BY o.customer",
	}
	for _, name := range []string{"by_region", "by_customer", "spend", "paid"} {
		c.exec(views[name])
	}
	region := map[string]string{"c0": "eu", "c1": "us", "c2": "eu", "c3": "apac", "c4": "us"}
	price := map[string]int64{"p0": 3, "p1": 5, "p2": 7}
	type order struct {
		id       int64
		customer string
		sku      string
		qty      int64
	}
	var orders []order
	paidBy := map[string][2]int64{} // customer → payments, their sum
	base := time.Now().UnixMilli()
	rng := rand.New(rand.NewPCG(7, 35))
	read := sqlConn{t, ctx, connect(t, n.PGAddr())}
	for round := range 8 {
		var ov, pv []string
		for range 12 {
			o := order{id: int64(len(orders)), customer: fmt.Sprintf("c%d", rng.IntN(5)), sku: fmt.Sprintf("p%d", rng.IntN(3)), qty: int64(1 + rng.IntN(9))}
			orders = append(orders, o)
			ov = append(ov, fmt.Sprintf("(%d, '%s', '%s', %d, %d)", o.id, o.customer, o.sku, o.qty, base))
			if rng.IntN(2) == 0 {
				paid := int64(rng.IntN(50))
				pv = append(pv, fmt.Sprintf("(%d, %d, %d, %d)", 1000*round+len(pv), o.id, paid, base+1000))
				s := paidBy[o.customer]
				paidBy[o.customer] = [2]int64{s[0] + 1, s[1] + paid}
			}
		}
		c.exec("INSERT INTO orders VALUES " + strings.Join(ov, ", "))
		c.exec("INSERT INTO payments VALUES " + strings.Join(pv, ", "))
		var pos string
		if err := c.conn.QueryRow(ctx, "SHOW basin.last_write_position").Scan(&pos); err != nil {
			t.Fatal(err)
		}
		// Another session, bounded by the writes' position only.
		read.exec(fmt.Sprintf("SET basin.min_position = '%s'", pos))

		want := map[string][]string{}
		row := func(view, k string, vals ...int64) {
			r := k
			for _, v := range vals {
				r += fmt.Sprintf(" %d", v)
			}
			want[view] = append(want[view], r)
		}
		agg := map[string]map[string][2]int64{"by_region": {}, "by_customer": {}, "spend": {}}
		for _, o := range orders {
			add := func(view, k string, v int64) {
				s := agg[view][k]
				agg[view][k] = [2]int64{s[0] + 1, s[1] + v}
			}
			add("by_region", region[o.customer], o.qty)
			add("by_customer", o.customer, o.qty)
			add("spend", region[o.customer], o.qty*price[o.sku])
		}
		for view, groups := range agg {
			for k, s := range groups {
				if view == "spend" {
					row(view, k, s[1])
				} else {
					row(view, k, s[0], s[1])
				}
			}
		}
		for k, s := range paidBy {
			row("paid", k, s[0], s[1])
		}
		queries := map[string]string{
			"by_region":   "SELECT region, n, qty FROM by_region",
			"by_customer": "SELECT id, n, qty FROM by_customer",
			"spend":       "SELECT region, spent FROM spend",
			"paid":        "SELECT customer, n, paid FROM paid",
		}
		for view, q := range queries {
			got, w := read.rows(q), want[view]
			slices.Sort(w)
			if !slices.Equal(got, w) {
				t.Fatalf("round %d: %s read at the writes' position has %d rows, the SQL over the records %d: %s",
					round, view, len(got), len(w), firstDiff(got, w))
			}
		}
	}

	// A customer's new row: the views' positions reflect it once the
	// join has read it, so a read bounded by it waits for that.
	var tok string
	if err := c.conn.QueryRow(ctx, "INSERT INTO customers VALUES ('c1', 'latam') RETURNING _position").Scan(&tok); err != nil {
		t.Fatal(err)
	}
	wrote, err := materialize.ParsePosition(tok)
	if err != nil {
		t.Fatal(err)
	}
	read.exec(fmt.Sprintf("SET basin.min_position = '%s'", tok))
	for _, view := range []string{"by_region", "by_customer", "spend"} {
		for _, r := range read.rows("SELECT _position FROM " + view) {
			seen, err := materialize.ParsePosition(r)
			if err != nil {
				t.Fatal(err)
			}
			if !seen.Covers(wrote) {
				t.Fatalf("%s: a row read at a customer's write has position %s, which does not cover the write's %s", view, seen.Describe(), wrote.Describe())
			}
		}
	}
}
