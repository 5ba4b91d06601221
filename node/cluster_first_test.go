package node

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/testcluster"
	"github.com/basindb/basin/materialize"
)

// The cluster behaviour a user meets first: a node stopped with SIGTERM,
// a view read on another node right after CREATE TABLE AS, monotonic
// reads through a failover.

// TestClusterTerminate stops the group leader of three nodes with SIGTERM
// while one of its sessions runs a statement and the group is
// rebalancing (a view was just created): the session hears FATAL 57P01,
// as on a node alone, the process exits within terminateBound (in the
// middle of a rebalance, kgo's Close waits for the JoinGroup in flight,
// which the broker answers once the other members rejoin at their next
// heartbeat, 15s apart here), and the node leaves the group, so that
// every partition has its active and standby on the survivors well
// before the session timeout (90s) would have moved them.
func TestClusterTerminate(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{Nodes: 3, Args: []string{"--session-timeout", "90s", "--standby-replicas", "1"}})
	v := newClusterView(t, c)
	waitPlaced(t, c, c.Node(0), 1)
	v.produce(t, 100)
	v.checkReplicas(t, 2)
	var victim *testcluster.Node
	for _, r := range c.Node(0).Query(t, "SHOW CLUSTER") {
		if r[4] == "t" {
			victim = haNode(t, c, r[0])
		}
	}
	if victim == nil {
		t.Fatal("SHOW CLUSTER names no leader")
	}
	other := c.Node((victim.Index + 1) % 3)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn := victim.Conn(t)
	var pid int
	if err := conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	running := make(chan error, 1)
	go func() {
		_, err := conn.Exec(ctx, "SELECT pg_sleep(100)")
		running <- err
	}()
	c.Eventually(t, 10*time.Second, func() error {
		rows, err := victim.QueryErr(t, "SELECT state FROM pg_stat_activity WHERE pid = $1", pid)
		if err != nil {
			return err
		}
		if len(rows) != 1 || rows[0][0] != "active" {
			return fmt.Errorf("the session's pg_stat_activity: %v, want active", rows)
		}
		return nil
	})

	// A new view makes the leader ask for a rebalance; once the broker
	// says the group is preparing one, the leader's JoinGroup waits
	// there for the others.
	created := make(chan error, 1)
	go func() {
		created <- other.ExecCtx(ctx, "CREATE TABLE per_id AS SELECT id, COUNT(*) AS n FROM orders GROUP BY id")
	}()
	adm := kadm.NewClient(c.Client(t))
	group := catalog.NodesGroup(c.Name)
	c.Eventually(t, 20*time.Second, func() error {
		dctx, dcancel := context.WithTimeout(ctx, 5*time.Second)
		defer dcancel()
		gs, err := adm.DescribeGroups(dctx, group)
		if err != nil {
			return err
		}
		if st := gs[group].State; st != "PreparingRebalance" {
			return fmt.Errorf("group %s is %s", group, st)
		}
		return nil
	})

	exited := make(chan error, 1)
	start := time.Now()
	go func() { exited <- victim.Terminate() }()
	timer := time.NewTimer(terminateBound)
	defer timer.Stop()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("SIGTERM: %v", err)
		}
		t.Logf("%s exited %v after SIGTERM", victim.ID, time.Since(start).Round(time.Millisecond))
	case <-timer.C:
		t.Fatalf("%s had not exited %v after SIGTERM:\n%s", victim.ID, terminateBound, victim.Tail(20))
	}
	select {
	case err := <-running:
		if pe := haPgError(err); pe == nil || pe.Code != "57P01" || pe.Severity != "FATAL" {
			t.Fatalf("the running statement ended with %v, want FATAL 57P01", err)
		}
	case <-timer.C:
		t.Fatal("the running statement did not end when its node exited")
	}

	// The survivors hold every partition well before the session
	// timeout would have let the group notice the node's absence.
	c.Eventually(t, 60*time.Second, func() error {
		if err := haReplaced(t, c.Node(other.Index), victim.ID, "by_region", 4); err != nil {
			return err
		}
		return haReplaced(t, c.Node(other.Index), victim.ID, "per_id", 4)
	})
	if err := <-created; err != nil {
		t.Fatalf("CREATE TABLE per_id while the leader left: %v", err)
	}
}

// terminateBound is how long a cluster node may take to exit after
// SIGTERM: generous beside the well under a second it takes.
const terminateBound = 3 * time.Second

// TestClusterCreateThenRead creates a view and a table over records
// already in their topics on one node of three, and reads them on the
// other two right after: CREATE returns once every partition has a
// replica serving reads that holds what the topic held, so the reads
// give the whole answer, with no "no replica" error and no partial sums.
func TestClusterCreateThenRead(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{Nodes: 3, Args: []string{"--standby-replicas", "1"}})
	n0 := c.Node(0)
	n0.Exec(t, "CREATE STREAM orders (id BIGINT KEY, region VARCHAR, amount BIGINT) WITH (kafka_topic = 'orders', value_format = 'json', partitions = 4)")
	v := &clusterView{c: c, want: map[string][2]int64{}}
	v.produce(t, 2000)
	n0.Exec(t, "CREATE STREAM kv_log (k VARCHAR KEY, v BIGINT) WITH (kafka_topic = 'kv', value_format = 'json', partitions = 4)")
	var recs []*kgo.Record
	for i := range 500 {
		val, _ := json.Marshal(map[string]any{"v": i})
		recs = append(recs, &kgo.Record{Key: []byte(fmt.Sprintf("k%03d", i%200)), Value: val})
	}
	c.Produce(t, "kv", recs...)

	var want []string
	for region, w := range v.want {
		want = append(want, fmt.Sprintf("%s|%d|%d", region, w[0], w[1]))
	}
	sort.Strings(want)
	n0.Exec(t, "CREATE TABLE by_region AS SELECT region, COUNT(*) AS n, SUM(amount) AS total FROM orders GROUP BY region")
	for _, n := range []*testcluster.Node{c.Node(1), c.Node(2)} {
		rows, err := n.QueryErr(t, "SELECT region, n, total FROM by_region ORDER BY region")
		if err != nil {
			t.Fatalf("SELECT on %s right after CREATE TABLE AS on %s: %v", n.ID, n0.ID, err)
		}
		var got []string
		for _, r := range rows {
			got = append(got, strings.Join(r, "|"))
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("SELECT on %s right after CREATE TABLE AS on %s:\n%s\nwant\n%s", n.ID, n0.ID, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}

	n0.Exec(t, "CREATE TABLE kv (k VARCHAR PRIMARY KEY, v BIGINT) WITH (kafka_topic = 'kv', value_format = 'json')")
	for _, n := range []*testcluster.Node{c.Node(2), c.Node(1)} {
		rows, err := n.QueryErr(t, "SELECT count(*), sum(v) FROM kv")
		if err != nil {
			t.Fatalf("SELECT on %s right after CREATE TABLE on %s: %v", n.ID, n0.ID, err)
		}
		// The last value of each of the 200 keys: 300..499.
		if len(rows) != 1 || strings.Join(rows[0], "|") != "200|79900" {
			t.Fatalf("SELECT count(*), sum(v) FROM kv on %s right after CREATE TABLE on %s: %v, want 200|79900", n.ID, n0.ID, rows)
		}
		rows, err = n.QueryErr(t, "SELECT v FROM kv WHERE k = 'k007'")
		if err != nil || len(rows) != 1 || rows[0][0] != "407" {
			t.Fatalf("key lookup on %s right after CREATE TABLE on %s: %v %v, want 407", n.ID, n0.ID, rows, err)
		}
	}
}

// TestCreateThenReadAlone is TestClusterCreateThenRead on a node alone:
// CREATE TABLE AS over records already in the stream returns once the
// view holds them all, so another session's read right after sees every
// one.
func TestCreateThenReadAlone(t *testing.T) {
	n := startNode(t, t.TempDir())
	writer, creator, reader := connect(t, n.PGAddr()), connect(t, n.PGAddr()), connect(t, n.PGAddr())
	mustExec(t, writer, "CREATE STREAM s (k BIGINT KEY, g VARCHAR, v BIGINT) WITH (kafka_topic = 's', value_format = 'json', partitions = 4)")
	var b strings.Builder
	b.WriteString("INSERT INTO s (k, g, v) VALUES ")
	const rows = 5000
	for i := range rows {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "(%d, 'g%d', 1)", i, i%10)
	}
	mustExec(t, writer, b.String())
	mustExec(t, creator, "CREATE TABLE by_g AS SELECT g, SUM(v) AS total FROM s GROUP BY g")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got, err := queryText(ctx, reader, "SELECT count(*), sum(total) FROM by_g", false)
	if err != nil || got != fmt.Sprintf("10|%d\n", rows) {
		t.Fatalf("a read right after CREATE TABLE AS: %q %v, want 10|%d", got, err, rows)
	}
}

// TestClusterMonotonicReads reads two views in one session with
// basin.monotonic_reads on, over and over, while records keep arriving
// and the node holding the most actives is killed (SIGKILL) and its
// tasks move: by_region, re-keyed (each partition's position covers
// every source partition, each at its own pace), and per_id, which reads
// its source partitions directly. Every read must succeed, no partition's
// position may go back (SHOW basin.last_read), and the totals (records
// counted, ids seen) may only grow: a standby that takes over serves
// the session only once it has what the session read of its partition,
// which the dead active had committed to the changelog. Before the
// bound was kept per partition, a read of one partition waited for the
// most any partition had seen of each source partition, which a
// partition whose active just died cannot show for seconds: the read
// stalled for basin.position_wait and failed.
func TestClusterMonotonicReads(t *testing.T) {
	c, v, placed := startClusterView(t, 3, "10s", 700)
	c.Node(0).Exec(t, "CREATE TABLE per_id AS SELECT id, COUNT(*) AS n FROM orders GROUP BY id")
	waitPlacedView(t, c, c.Node(0), "per_id", 4, 1)
	haWaitGroupStable(t, c)
	victim, actives := mostActives(c, placed)
	reader := c.Node((victim.Index + 1) % 3)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	conn := reader.Conn(t)
	haExec(t, ctx, conn, "SET basin.monotonic_reads = on")
	// Each read's total: records counted, or ids seen. SELECT * sends
	// its rows as stored (raw, without _position when forwarded), the
	// aggregates rows it computes over.
	reads := []struct{ view, sql string }{
		{"by_region", "SELECT sum(n) FROM by_region"},
		{"by_region", "SELECT * FROM by_region"},
		{"per_id", "SELECT count(*) FROM per_id"},
	}
	total := func(rows [][]string, sql string) int64 {
		var sum int64
		for _, r := range rows {
			col := r[0]
			if strings.HasPrefix(sql, "SELECT *") {
				col = r[1] // region, n, total
			}
			n, _ := strconv.ParseInt(col, 10, 64)
			sum += n
		}
		return sum
	}
	last := map[string]map[string]materialize.Position{} // view → partition → position
	totals := map[string]int64{}
	n := 0
	read := func(phase string) {
		t.Helper()
		v.produce(t, 7)
		for _, r := range reads {
			rows, err := haRows(ctx, conn, r.sql)
			if err != nil {
				t.Fatalf("read %d (%s) %q on %s: %v", n, phase, r.sql, reader.ID, err)
			}
			got := total(rows, r.sql)
			if got < totals[r.view] {
				t.Fatalf("read %d (%s) %q on %s: %d, less than the %d read before", n, phase, r.sql, reader.ID, got, totals[r.view])
			}
			totals[r.view] = got
			parts, err := haRows(ctx, conn, "SHOW basin.last_read")
			if err != nil {
				t.Fatal(err)
			}
			if last[r.view] == nil {
				last[r.view] = map[string]materialize.Position{}
			}
			for _, p := range parts {
				pos, err := materialize.ParsePosition(p[5])
				if err != nil || len(pos) == 0 {
					t.Fatalf("read %d (%s) %q: partition %s served by %s at position %q (%v)", n, phase, r.sql, p[0], p[1], p[5], err)
				}
				if prev := last[r.view][p[0]]; !pos.Covers(prev) {
					t.Fatalf("read %d (%s) %q on %s: partition %s served by %s (%s) at %s, behind the %s read before",
						n, phase, r.sql, reader.ID, p[0], p[1], p[2], pos.Describe(), prev.Describe())
				}
				last[r.view][p[0]] = pos
			}
		}
		n++
	}
	for range 20 {
		read("before the kill")
	}
	t.Logf("SIGKILL %s (%d of %d actives of by_region); reading on %s", victim.ID, actives, len(placed), reader.ID)
	victim.Kill()
	moved := func() error {
		if err := haReplaced(t, reader, victim.ID, "by_region", 4); err != nil {
			return err
		}
		return haReplaced(t, reader, victim.ID, "per_id", 4)
	}
	deadline := time.Now().Add(time.Minute)
	for moved() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("the tasks of %s had not moved a minute after it was killed: %v", victim.ID, moved())
		}
		read("during the failover")
	}
	for range 20 {
		read("after the failover")
	}
	t.Logf("%d rounds of reads; totals %v", n, totals)
}

// TestCloseWithIdleHTTPConnection closes a node while a connection to its
// HTTP server has sent nothing yet (a peer's client may dial and keep a
// connection it does not use): http.Server.Shutdown would wait 5s for
// it; Close gives requests in flight a moment, then closes it, and
// returns without an error well within closeBound.
func TestCloseWithIdleHTTPConnection(t *testing.T) {
	n := startNode(t, t.TempDir(), func(o *Options) { o.HTTPAddr = "127.0.0.1:0" })
	idle, err := net.Dial("tcp", n.HTTPAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	// The server has accepted it once it answers a request on another.
	resp, err := http.Get("http://" + n.HTTPAddr() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	closed := make(chan error, 1)
	go func() { closed <- n.Close() }()
	const closeBound = 2 * time.Second
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(closeBound):
		t.Fatalf("Close had not returned %v after it was called, with an idle HTTP connection open", closeBound)
	}
}
