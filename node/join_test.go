package node

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/basindb/basin/internal/poll"
	"github.com/basindb/basin/kafka"
	"github.com/basindb/basin/materialize"
)

// TestStreamTableJoinRecompute joins random orders with a table of
// customers that random upserts and deletes change between rounds, in
// three derived streams: an inner join whose orders must be routed to
// the table's partitions, a LEFT JOIN with a WHERE, and an inner join of
// a stream already keyed and partitioned as the table. The node is
// closed and started again halfway. Each round's orders are written
// once the join tasks have read the round's table changes, and the next
// round's changes once they have joined the orders, so each order must
// join the customer's row as its round left it: at the end
// every derived stream holds exactly the join of each order with the
// table as of its round, once.
func TestStreamTableJoinRecompute(t *testing.T) {
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
	c.exec("CREATE TABLE customers (id VARCHAR PRIMARY KEY, name VARCHAR, tier BIGINT) WITH (partitions = 3)")
	c.exec("CREATE STREAM orders (order_id BIGINT KEY, customer VARCHAR, amount BIGINT) WITH (partitions = 2)")
	c.exec("CREATE STREAM by_customer (customer VARCHAR KEY, order_id BIGINT, amount BIGINT) WITH (partitions = 3)")
	c.exec("CREATE STREAM enriched AS SELECT o.customer, o.order_id, o.amount, c.name, c.tier FROM orders o JOIN customers c ON o.customer = c.id")
	c.exec("CREATE STREAM all_big AS SELECT o.customer, o.order_id, c.tier FROM orders o LEFT JOIN customers c ON o.customer = c.id WHERE o.amount >= 50")
	c.exec("CREATE STREAM direct AS SELECT b.customer, b.order_id, c.name FROM by_customer b JOIN customers c ON b.customer = c.id")

	type customer struct {
		name string
		tier int64
	}
	table := map[string]customer{}
	var wantEnriched, wantAllBig, wantDirect []string
	rng := rand.New(rand.NewPCG(5, 8))
	id := int64(0)
	// caughtUp waits until every join task has read its table partition
	// to the end it has now.
	caughtUp := func(n *Node) {
		t.Helper()
		ends, err := kafka.EndOffsets(ctx, adm, "customers")
		if err != nil {
			t.Fatal(err)
		}
		if !poll.Cond(30*time.Second, func() bool {
			read := map[string]int{}
			for _, ts := range n.localTasks().Tasks {
				if isStage(ts.Task) {
					continue
				}
				pos, err := materialize.ParsePosition(ts.Position)
				if err != nil {
					return false
				}
				if next, _ := pos.Get("customers", ts.Partition); ts.Relation != "customers" && next >= ends[ts.Partition] {
					read[ts.Relation]++
				}
			}
			return read["enriched"] == 3 && read["all_big"] == 3 && read["direct"] == 3
		}) {
			t.Fatal("the join tasks did not read the table's changes")
		}
	}
	// drained waits until the derived streams hold a record for every
	// order written so far that has one: the orders are joined before
	// the next round changes the table.
	drained := func() {
		t.Helper()
		if !poll.Cond(30*time.Second, func() bool {
			return len(c.rows("SELECT order_id FROM enriched")) >= len(wantEnriched) &&
				len(c.rows("SELECT order_id FROM all_big")) >= len(wantAllBig) &&
				len(c.rows("SELECT order_id FROM direct")) >= len(wantDirect)
		}) {
			t.Fatal("the joins did not write the orders' records")
		}
	}
	for round := range 8 {
		drained()
		if round == 4 {
			if err := n.Close(); err != nil {
				t.Fatal(err)
			}
			n = start()
			c.conn = connect(t, n.PGAddr())
			// The table's 3 partitions; 3 join and 2 routing tasks for
			// each of enriched and all_big, 3 join tasks for direct.
			waitTasks(t, n, 16)
		}
		var ups []string
		for range 12 {
			k := fmt.Sprintf("c%d", rng.IntN(15))
			cu := customer{name: fmt.Sprintf("n%d", rng.IntN(1000)), tier: int64(rng.IntN(3))}
			table[k] = cu
			ups = append(ups, fmt.Sprintf("('%s', '%s', %d)", k, cu.name, cu.tier))
		}
		c.exec("INSERT INTO customers VALUES " + strings.Join(ups, ", "))
		for range 3 {
			k := fmt.Sprintf("c%d", rng.IntN(15))
			delete(table, k)
			c.exec(fmt.Sprintf("DELETE FROM customers WHERE id = '%s'", k))
		}
		caughtUp(n)
		var orders, direct []string
		for range 40 {
			id++
			k := fmt.Sprintf("c%d", rng.IntN(18)) // some never exist
			amount := int64(rng.IntN(100))
			orders = append(orders, fmt.Sprintf("(%d, '%s', %d)", id, k, amount))
			direct = append(direct, fmt.Sprintf("('%s', %d, %d)", k, id, amount))
			cu, ok := table[k]
			if ok {
				wantEnriched = append(wantEnriched, fmt.Sprint(k, " ", id, " ", amount, " ", cu.name, " ", cu.tier))
				wantDirect = append(wantDirect, fmt.Sprint(k, " ", id, " ", cu.name))
			}
			if amount >= 50 {
				tier := "<nil>"
				if ok {
					tier = fmt.Sprint(cu.tier)
				}
				wantAllBig = append(wantAllBig, fmt.Sprint(k, " ", id, " ", tier))
			}
		}
		c.exec("INSERT INTO orders VALUES " + strings.Join(orders, ", "))
		c.exec("INSERT INTO by_customer VALUES " + strings.Join(direct, ", "))
	}
	for q, want := range map[string][]string{
		"SELECT customer, order_id, amount, name, tier FROM enriched": wantEnriched,
		"SELECT customer, order_id, tier FROM all_big":                wantAllBig,
		"SELECT customer, order_id, name FROM direct":                 wantDirect,
	} {
		slices.Sort(want)
		var got []string
		poll.Cond(30*time.Second, func() bool { got = c.rows(q); return len(got) >= len(want) })
		if !slices.Equal(got, want) {
			t.Errorf("%s: %d records, want %d: %s", q, len(got), len(want), firstDiff(got, want))
		}
	}
}

// TestStreamTableJoinRebuild loses a join task's store while a stream
// record waits to be joined: the task reads the table again from the
// start, and must bring it back to where its last commit had it before
// joining the record, whatever the times of the table's records (here
// the customer row is younger than the order). Otherwise the order would
// join nothing, where a task that kept its store joins it.
func TestStreamTableJoinRebuild(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start, broker, dir := restartableIn(t)
	n := start()
	c := sqlConn{t, ctx, connect(t, n.PGAddr())}
	c.exec("CREATE TABLE customers (id VARCHAR PRIMARY KEY, region VARCHAR) WITH (partitions = 1)")
	c.exec("CREATE STREAM orders (id BIGINT KEY, customer VARCHAR, ts BIGINT) WITH (kafka_topic = 'orders', partitions = 1, timestamp = 'ts')")
	c.exec("CREATE STREAM enriched AS SELECT o.customer, o.id, c.region FROM orders o JOIN customers c ON o.customer = c.id")
	c.exec("INSERT INTO customers VALUES ('c1', 'eu')")
	c.exec("INSERT INTO orders VALUES (1, 'c1', 1700000000000)")
	if !poll.Cond(30*time.Second, func() bool {
		return slices.Equal(c.rows("SELECT customer, id, region FROM enriched"), []string{"c1 1 eu"})
	}) {
		t.Fatalf("enriched holds %v, want c1 1 eu", c.rows("SELECT customer, id, region FROM enriched"))
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	// An order written while the node is down, and the node's state
	// lost (as operations.md says an operator may move it aside).
	cl, err := kafka.NewClient(kafka.ClientOptions{Brokers: []string{broker}, Logger: testLogger()}, kafka.ProducerOpts()...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	key := binary.BigEndian.AppendUint64(nil, 2)
	rec := &kgo.Record{Topic: "orders", Partition: 0, Key: key, Value: []byte(`{"customer":"c1","ts":1700000000000}`)}
	if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "state"), filepath.Join(dir, "state.old")); err != nil {
		t.Fatal(err)
	}
	n = start()
	c.conn = connect(t, n.PGAddr())
	want := []string{"c1 1 eu", "c1 2 eu"}
	if !poll.Cond(30*time.Second, func() bool { return slices.Equal(c.rows("SELECT customer, id, region FROM enriched"), want) }) {
		t.Fatalf("enriched holds %v, want %v", c.rows("SELECT customer, id, region FROM enriched"), want)
	}
}
