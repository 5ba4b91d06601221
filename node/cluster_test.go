package node

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/basindb/basin/internal/testcluster"
)

// clusterView is the view the cluster tests run: counts and sums per
// region over a 4-partition stream, re-keyed by region.
type clusterView struct {
	c    *testcluster.Cluster
	want map[string][2]int64
	next int64
}

var clusterRegions = []string{"eu", "us", "apac", "latam", "mea", "na", "sa"}

func newClusterView(t *testing.T, c *testcluster.Cluster) *clusterView {
	t.Helper()
	n := c.Node(0)
	n.Exec(t, "CREATE STREAM orders (id BIGINT KEY, region VARCHAR, amount BIGINT) WITH (kafka_topic = 'orders', value_format = 'json', partitions = 4)")
	n.Exec(t, "CREATE TABLE by_region AS SELECT region, COUNT(*) AS n, SUM(amount) AS total FROM orders GROUP BY region")
	return &clusterView{c: c, want: map[string][2]int64{}}
}

// startClusterView starts that many real nodes with one standby per task and
// the given session timeout, creates the view, waits until every
// partition has its active and standby, produces records orders and
// waits until both replicas of every partition hold them. placed is
// task → "active standby".
func startClusterView(t *testing.T, nodes int, sessionTimeout string, records int) (*testcluster.Cluster, *clusterView, map[string]string) {
	t.Helper()
	c := testcluster.Start(t, testcluster.Options{Nodes: nodes, Args: []string{"--session-timeout", sessionTimeout, "--standby-replicas", "1"}})
	v := newClusterView(t, c)
	placed := waitPlaced(t, c, c.Node(0), 1)
	v.produce(t, records)
	v.checkReplicas(t, 2)
	return c, v, placed
}

// produce writes n orders and records what the view must then hold.
func (v *clusterView) produce(t *testing.T, n int) {
	t.Helper()
	var recs []*kgo.Record
	for range n {
		region := clusterRegions[v.next%int64(len(clusterRegions))]
		val, _ := json.Marshal(map[string]any{"region": region, "amount": v.next})
		key := binary.BigEndian.AppendUint64(nil, uint64(v.next))
		recs = append(recs, &kgo.Record{Topic: "orders", Key: key, Value: val})
		w := v.want[region]
		v.want[region] = [2]int64{w[0] + 1, w[1] + v.next}
		v.next++
	}
	v.c.Produce(t, "orders", recs...)
}

// checkReplicas waits until, for every region, every node holding its
// partition (active or standby) answers the key lookup with exactly the
// counts produced, and at least replicas nodes do.
func (v *clusterView) checkReplicas(t *testing.T, replicas int) {
	t.Helper()
	v.c.Eventually(t, 60*time.Second, func() error {
		for region, w := range v.want {
			want := fmt.Sprintf("%d|%d", w[0], w[1])
			answered := 0
			for _, n := range v.c.Nodes() {
				if !n.Running() || n.Stopped() {
					continue
				}
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				rows, err := localQuery(ctx, n, "SELECT n, total FROM by_region WHERE region = $1", region)
				cancel()
				if err != nil {
					if strings.Contains(err.Error(), "has no replica on node") {
						continue
					}
					return fmt.Errorf("%s on %s: %v", region, n.ID, err)
				}
				if len(rows) != 1 || strings.Join(rows[0], "|") != want {
					return fmt.Errorf("%s on %s: %v, want %s", region, n.ID, rows, want)
				}
				answered++
			}
			if answered < replicas {
				return fmt.Errorf("%s: %d nodes answered, want %d", region, answered, replicas)
			}
		}
		return nil
	})
}

// localQuery runs a query on n that reads only n's own replicas
// (basin.forwarded = on, as a read forwarded by another node does).
func localQuery(ctx context.Context, n *testcluster.Node, query string, args ...any) ([][]string, error) {
	conn, err := n.Connect(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "SET basin.forwarded = on"); err != nil {
		return nil, err
	}
	rows, err := conn.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return testcluster.Text(rows)
}

// taskRow is a row of SHOW TASKS.
type taskRow struct{ task, node, role, state, end string }

func showTasks(t *testing.T, n *testcluster.Node) ([]taskRow, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rows, err := n.QueryCtx(ctx, "SHOW TASKS")
	if err != nil {
		return nil, err
	}
	var out []taskRow
	for _, r := range rows {
		out = append(out, taskRow{task: r[0], node: r[3], role: r[4], state: r[5], end: r[7]})
	}
	return out, nil
}

// mostActives returns the node holding the most actives in placed
// (task → "active standbys"), the lowest index on ties, and that count.
func mostActives(c *testcluster.Cluster, placed map[string]string) (*testcluster.Node, int) {
	count := map[string]int{}
	for _, p := range placed {
		count[strings.Fields(p)[0]]++
	}
	victim := c.Node(0)
	for _, n := range c.Nodes() {
		if count[n.ID] > count[victim.ID] {
			victim = n
		}
	}
	return victim, count[victim.ID]
}

// waitPlaced waits until SHOW TASKS on n shows each of the view's four
// partitions with one running active and standbys running standbys, all
// on distinct live nodes, and returns task → "active node, standby
// nodes".
func waitPlaced(t *testing.T, c *testcluster.Cluster, n *testcluster.Node, standbys int) map[string]string {
	t.Helper()
	return waitPlacedView(t, c, n, "by_region", 4, standbys)
}

// waitPlacedView is waitPlaced for any view with parts partitions.
func waitPlacedView(t *testing.T, c *testcluster.Cluster, n *testcluster.Node, view string, parts, standbys int) map[string]string {
	t.Helper()
	var placed map[string]string
	c.Eventually(t, 60*time.Second, func() error {
		rows, err := showTasks(t, n)
		if err != nil {
			return err
		}
		live := map[string]bool{}
		for _, nd := range c.Nodes() {
			live[nd.ID] = nd.Running() && !nd.Stopped()
		}
		byTask := map[string][]taskRow{}
		for _, r := range rows {
			if strings.HasPrefix(r.task, view+"@") && !isStage(r.task) {
				byTask[r.task] = append(byTask[r.task], r)
			}
		}
		if len(byTask) != parts {
			return fmt.Errorf("%d partitions of %s in SHOW TASKS, want %d: %v", len(byTask), view, parts, rows)
		}
		placed = map[string]string{}
		for task, rs := range byTask {
			var active string
			var stand []string
			nodes := map[string]bool{}
			for _, r := range rs {
				if !live[r.node] || r.state != "RUNNING" {
					return fmt.Errorf("%s: %s on %s is %s", task, r.role, r.node, r.state)
				}
				if nodes[r.node] {
					return fmt.Errorf("%s: two replicas on %s", task, r.node)
				}
				nodes[r.node] = true
				switch r.role {
				case "active":
					active = r.node
				case "standby":
					stand = append(stand, r.node)
				}
			}
			if active == "" || len(stand) != standbys {
				return fmt.Errorf("%s: active %q, standbys %v", task, active, stand)
			}
			sort.Strings(stand)
			placed[task] = active + " " + strings.Join(stand, ",")
		}
		return nil
	})
	return placed
}

// TestClusterStandbysAndFailover runs three real nodes: every view
// partition gets an active and a standby on different nodes, both hold
// the exact counts; a node killed with SIGKILL loses its actives to their
// standbys, and the counts stay exact (nothing lost or counted twice).
func TestClusterStandbysAndFailover(t *testing.T) {
	c, v, placed := startClusterView(t, 3, "2s", 700)
	t.Logf("placement: %v", placed)

	// Kill the node with the most actives.
	victim, actives := mostActives(c, placed)
	t.Logf("killing %s (%d actives)", victim.ID, actives)
	victim.Kill()
	v.produce(t, 700)
	var survivor *testcluster.Node
	for _, n := range c.Nodes() {
		if n != victim {
			survivor = n
			break
		}
	}
	after := waitPlaced(t, c, survivor, 1)
	t.Logf("after the kill: %v", after)
	promoted := 0
	for task, p := range after {
		if strings.Contains(p, victim.ID) {
			t.Fatalf("%s still placed on the killed node: %s", task, p)
		}
		// Tasks whose active died go to live nodes, their standbys first
		// (balance may send one elsewhere: any node within
		// acceptable.recovery.lag counts as caught up).
		if was := strings.Fields(placed[task]); was[0] == victim.ID && strings.Fields(p)[0] == was[1] {
			promoted++
		}
	}
	if actives > 0 && promoted == 0 {
		t.Errorf("no standby of %s's actives was promoted: before %v, after %v", victim.ID, placed, after)
	}
	v.checkReplicas(t, 2)
}

// TestClusterRestartSameID kills a node and restarts it with the same
// --node-id within the session timeout: it takes its tasks back from its
// checkpoints, the group does not rebalance, and no task moves.
func TestClusterRestartSameID(t *testing.T) {
	c, v, placed := startClusterView(t, 3, "20s", 500)
	generation := func() string {
		rows := c.Node(0).Query(t, "SHOW CLUSTER")
		gens := map[string]bool{}
		for _, r := range rows {
			gens[r[5]] = true
		}
		if len(gens) != 1 {
			t.Fatalf("SHOW CLUSTER: generations differ: %v", rows)
		}
		return rows[0][5]
	}
	before := generation()

	victim := c.Node(1)
	victim.Kill()
	victim.Restart(t)
	v.produce(t, 500)
	after := waitPlaced(t, c, c.Node(0), 1)
	if fmt.Sprint(after) != fmt.Sprint(placed) {
		t.Fatalf("tasks moved across the restart:\nbefore %v\nafter  %v", placed, after)
	}
	if g := generation(); g != before {
		t.Fatalf("the group rebalanced across the restart: generation %s, then %s", before, g)
	}
	v.checkReplicas(t, 2)
}

// TestClusterNodeAdded adds a third node to a two-node cluster whose
// changelogs are longer than acceptable.recovery.lag (1): an active moves
// to the new node only after the node has held that task as a caught-up
// replica (a standby or warm-up that restored the changelog); the counts
// stay exact.
func TestClusterNodeAdded(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{Nodes: 2, Args: []string{"--session-timeout", "3s",
		"--standby-replicas", "1", "--acceptable-recovery-lag", "1", "--probing-interval", "1s"}})
	v := newClusterView(t, c)
	waitPlaced(t, c, c.Node(0), 1)
	v.produce(t, 400)
	v.checkReplicas(t, 2)

	added := c.AddNode(t)
	caughtUp := map[string]bool{} // tasks the new node held as a running replica
	var history []string
	c.Eventually(t, 60*time.Second, func() error {
		rows, err := showTasks(t, c.Node(0))
		if err != nil {
			return err
		}
		var mine []string
		actives := 0
		for _, r := range rows {
			if r.node != added.ID || isStage(r.task) {
				continue
			}
			mine = append(mine, fmt.Sprint(r))
			switch r.role {
			case "standby", "warmup":
				if r.state == "RUNNING" {
					caughtUp[r.task] = true
				}
			case "active":
				// Partitions without data have changelogs within the
				// bound and may move at once.
				if !caughtUp[r.task] && r.end != "0" && r.end != "1" {
					t.Fatalf("%s got %s as active before it held a caught-up replica of it:\n%s",
						added.ID, r.task, strings.Join(append(history, strings.Join(mine, " ")), "\n"))
				}
				actives++
			}
		}
		history = append(history, time.Now().Format("15:04:05.000")+" "+strings.Join(mine, " "))
		if actives == 0 {
			return fmt.Errorf("%s holds no active yet", added.ID)
		}
		return nil
	})
	placed := waitPlaced(t, c, c.Node(0), 1)
	t.Logf("placement after the move: %v", placed)
	v.produce(t, 200)
	v.checkReplicas(t, 2)

	// The new node's metrics count the restores of what it took and the
	// rebalances it took part in.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, body, err := added.HTTPGet(ctx, "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"basin_restores_total", "basin_restore_changelog_offsets_total", "basin_restore_seconds_total", "basin_rebalances_total"} {
		m := regexp.MustCompile(`(?m)^` + name + ` (\S+)$`).FindStringSubmatch(string(body))
		if m == nil || m[1] == "0" {
			t.Errorf("%s's /metrics: %s is %v, want more than 0", added.ID, name, m)
		}
	}
}

// TestMain removes the basin binary the process tests built.
func TestMain(m *testing.M) { testcluster.Main(m) }

// heldPartitions counts the partitions of view n holds a replica of.
func heldPartitions(t *testing.T, n *testcluster.Node, view string) int {
	t.Helper()
	rows, err := showTasks(t, n)
	if err != nil {
		t.Fatal(err)
	}
	held := map[string]bool{}
	for _, r := range rows {
		if r.node == n.ID && strings.HasPrefix(r.task, view+"@") && !isStage(r.task) {
			held[r.task] = true
		}
	}
	return len(held)
}

// TestClusterForwardedReads reads whole views and single keys from every
// node of a three-node cluster: partitions held elsewhere are read from
// their nodes, so every node returns every row, once; after a node is
// killed and its tasks have moved, the survivors still do.
func TestClusterForwardedReads(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{Nodes: 3, Args: []string{"--session-timeout", "2s", "--standby-replicas", "1"}})
	v := newClusterView(t, c)
	// A view with a row per order, so that every partition has rows.
	c.Node(0).Exec(t, "CREATE TABLE per_id AS SELECT id, COUNT(*) AS n FROM orders GROUP BY id")
	waitPlaced(t, c, c.Node(0), 1)
	waitPlacedView(t, c, c.Node(0), "per_id", 4, 1)
	v.produce(t, 700)
	v.checkReplicas(t, 2)
	var want []string
	for region, w := range v.want {
		want = append(want, fmt.Sprintf("%s|%d|%d", region, w[0], w[1]))
	}
	sort.Strings(want)
	forwardedFrom := 0 // nodes that had to read from others
	check := func(nodes []*testcluster.Node) {
		t.Helper()
		for _, n := range nodes {
			rows := n.Query(t, "SELECT region, n, total FROM by_region ORDER BY region")
			var got []string
			for _, r := range rows {
				got = append(got, strings.Join(r, "|"))
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("SELECT * on %s:\n%s\nwant\n%s", n.ID, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			// Every node lacks a replica of some partition of per_id
			// (8 replicas of 4 partitions on 3 nodes), so its rows
			// come from more than one node.
			servers := map[string]bool{}
			c.Eventually(t, 30*time.Second, func() error {
				rows, err := n.QueryErr(t, "SELECT id, _served_by FROM per_id")
				if err != nil {
					return err
				}
				if len(rows) != 700 {
					return fmt.Errorf("per_id on %s: %d rows, want 700", n.ID, len(rows))
				}
				clear(servers)
				for _, r := range rows {
					servers[r[1]] = true
				}
				return nil
			})
			if held := heldPartitions(t, n, "per_id"); held < 4 {
				forwardedFrom++
				if len(servers) < 2 {
					t.Errorf("%s holds %d of per_id's 4 partitions but served every row itself (%v)", n.ID, held, servers)
				}
				// The relational engine reads each relation a query
				// names as a pull query, forwarded as that is.
				rows := n.Query(t, "SELECT (SELECT count(*) FROM per_id), (SELECT sum(n) FROM by_region), count(DISTINCT _served_by) FROM per_id p")
				if len(rows) != 1 || rows[0][0] != "700" || rows[0][1] != "700" || rows[0][2] == "1" {
					t.Errorf("subqueries over per_id and by_region on %s: %v, want 700 rows, 700 orders, from 2 or more nodes", n.ID, rows)
				}
				// A join's reads need only the columns it names: one side
				// of this one needs per_id's n, the other only its key,
				// which is all a forwarded read of it sends.
				rows = n.Query(t, "SELECT count(*), sum(q.n) FROM per_id p JOIN per_id q ON q.id = p.id")
				if len(rows) != 1 || strings.Join(rows[0], "|") != "700|700" {
					t.Errorf("a join of per_id to itself on %s: %v, want 700|700", n.ID, rows)
				}
			}
			for region, w := range v.want {
				rows := n.Query(t, "SELECT n, total FROM by_region WHERE region = $1", region)
				if len(rows) != 1 || strings.Join(rows[0], "|") != fmt.Sprintf("%d|%d", w[0], w[1]) {
					t.Fatalf("%s on %s: %v, want %v", region, n.ID, rows, w)
				}
			}
		}
	}
	check(c.Nodes())
	if forwardedFrom == 0 {
		t.Fatal("every node holds every partition of per_id: the test forwarded nothing")
	}

	victim := c.Node(1)
	victim.Kill()
	survivors := []*testcluster.Node{c.Node(0), c.Node(2)}
	waitPlaced(t, c, c.Node(0), 1)
	check(survivors)
}

// TestClusterStatus checks the control plane: every node learns from
// heartbeats that the others are alive and from lag reports what they
// hold; a frozen node (SIGSTOP) is reported down by the others' liveness
// well before the group's session timeout, and up again after SIGCONT.
func TestClusterStatus(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{Nodes: 3, Args: []string{"--session-timeout", "30s", "--standby-replicas", "1"}})
	newClusterView(t, c)
	waitPlaced(t, c, c.Node(0), 1)
	type status struct {
		Generation int32 `json:"generation"`
		Nodes      []struct {
			Node      string     `json:"node"`
			Alive     bool       `json:"alive"`
			DownSince *time.Time `json:"down_since"`
			Tasks     []struct {
				Task string `json:"task"`
				Role string `json:"role"`
			} `json:"tasks"`
		} `json:"nodes"`
	}
	get := func() (status, error) {
		var st status
		err := c.Node(0).GetJSON(t, "/clusterStatus", &st)
		return st, err
	}
	expect := func(frozen string) {
		t.Helper()
		c.Eventually(t, 20*time.Second, func() error {
			st, err := get()
			if err != nil {
				return err
			}
			if len(st.Nodes) != 3 {
				return fmt.Errorf("%d nodes in /clusterStatus", len(st.Nodes))
			}
			for _, n := range st.Nodes {
				if want := n.Node != frozen; n.Alive != want {
					return fmt.Errorf("%s alive=%v, want %v", n.Node, n.Alive, want)
				}
				if n.Node == frozen && n.DownSince == nil {
					return fmt.Errorf("%s is down without down_since", n.Node)
				}
				if n.Node != frozen && len(n.Tasks) == 0 {
					return fmt.Errorf("%s reports no tasks (no lag report yet?)", n.Node)
				}
			}
			return nil
		})
	}
	expect("")
	before, _ := get()
	frozen := c.Node(2)
	frozen.Stop()
	expect(frozen.ID)
	frozen.Cont()
	expect("")
	if after, _ := get(); after.Generation != before.Generation {
		t.Errorf("the group rebalanced (generation %d, then %d): liveness must see the freeze before the session timeout does",
			before.Generation, after.Generation)
	}
}

// TestClusterReadsAroundAFrozenNode freezes (SIGSTOP) the active of a
// partition and reads that partition from a node holding no replica of
// it: the default basin.read_from = 'any' serves it from the standby at
// once, with exact counts; read_from = 'active' fails with 55000 naming
// the frozen active and why it was passed over.
func TestClusterReadsAroundAFrozenNode(t *testing.T) {
	c, _, placed := startClusterView(t, 3, "30s", 700)

	// A partition with rows, its active, and the node without a replica.
	var task, active, other string
	for tk, p := range placed {
		f := strings.Fields(p)
		holders := map[string]bool{f[0]: true, f[1]: true}
		for _, n := range c.Nodes() {
			if !holders[n.ID] {
				task, active, other = tk, f[0], n.ID
			}
		}
		part := tk[strings.LastIndexByte(tk, '/')+1:]
		if rows, err := c.Node(0).QueryErr(t, "SELECT count(*) FROM by_region WHERE _partition = "+part); err == nil && rows[0][0] != "0" {
			break
		}
	}
	part := task[strings.LastIndexByte(task, '/')+1:]
	var frozen, reader *testcluster.Node
	for _, n := range c.Nodes() {
		switch n.ID {
		case active:
			frozen = n
		case other:
			reader = n
		}
	}
	want := reader.Query(t, "SELECT region, n, total FROM by_region WHERE _partition = "+part+" ORDER BY region")
	t.Logf("partition %s: active %s (to freeze), read from %s", part, active, other)
	frozen.Stop()
	defer frozen.Cont()

	conn := reader.Conn(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Once heartbeats say the active is down, reads go to the standby.
	c.Eventually(t, 10*time.Second, func() error {
		rows, err := conn.Query(ctx, "SELECT region, n, total, _role FROM by_region WHERE _partition = "+part+" ORDER BY region")
		if err != nil {
			return err
		}
		got, err := testcluster.Text(rows)
		if err != nil {
			return err
		}
		if len(got) != len(want) {
			return fmt.Errorf("%d rows, want %d", len(got), len(want))
		}
		for i := range got {
			if strings.Join(got[i][:3], "|") != strings.Join(want[i], "|") || got[i][3] != "standby" {
				return fmt.Errorf("row %d: %v, want %v from a standby", i, got[i], want[i])
			}
		}
		return nil
	})
	if _, err := conn.Exec(ctx, "SET basin.read_from = 'active'"); err != nil {
		t.Fatal(err)
	}
	_, err := conn.Exec(ctx, "SELECT count(*) FROM by_region WHERE _partition = "+part)
	// The active's role is as its last lag report said: "active", or
	// "restoring" if that report predates its restore's end. If the
	// reader's heartbeats had not yet timed the frozen node out when the
	// read was routed, it was tried and cut off once they did.
	down := regexp.MustCompile(regexp.QuoteMeta(active) + ` \((active|restoring)\) (down since|read failed: heartbeats said the node went down)`)
	if pgCode(err) != "55000" || !down.MatchString(err.Error()) {
		t.Fatalf("read_from = 'active' with the active frozen: %v", err)
	}
	t.Logf("the error: %v", err)
}

// TestClusterKeyLookupsThroughAKill runs key lookups in a loop on one node
// while the node holding the actives of the partitions it reads is
// SIGKILLed: with a standby per partition, no lookup fails and every
// answer is exact.
func TestClusterKeyLookupsThroughAKill(t *testing.T) {
	c, v, placed := startClusterView(t, 3, "2s", 700)
	// Kill the node with the most actives; read from another.
	victim, actives := mostActives(c, placed)
	reader := otherNode(c, victim)
	conn := reader.Conn(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	lookups, failures := 0, 0
	var firstErr error
	lookup := func() {
		for region, w := range v.want {
			var n, total int64
			err := conn.QueryRow(ctx, "SELECT n, total FROM by_region WHERE region = $1", region).Scan(&n, &total)
			lookups++
			if err != nil || n != w[0] || total != w[1] {
				failures++
				if firstErr == nil {
					firstErr = fmt.Errorf("%s: %d|%d, want %v: %v", region, n, total, w, err)
				}
			}
		}
	}
	for range 20 {
		lookup()
	}
	t.Logf("SIGKILL %s (%d actives); reading on %s", victim.ID, actives, reader.ID)
	readThroughKill(t, victim, reader, lookup)
	for range 20 {
		lookup()
	}
	t.Logf("%d lookups, %d failed", lookups, failures)
	if failures > 0 {
		t.Fatalf("%d of %d lookups failed or were wrong; first: %v", failures, lookups, firstErr)
	}
}

// otherNode is a node of c's first two that is not victim.
func otherNode(c *testcluster.Cluster, victim *testcluster.Node) *testcluster.Node {
	if c.Node(1) == victim {
		return c.Node(2)
	}
	return c.Node(1)
}

// readThroughKill kills victim with SIGKILL and calls read again and
// again, through the failure detection and the failover, until reader's
// SHOW TASKS places no task on the victim any more (at most 30 s).
func readThroughKill(t *testing.T, victim, reader *testcluster.Node, read func()) {
	t.Helper()
	victim.Kill()
	deadline := time.Now().Add(30 * time.Second)
	for moved := false; !moved; {
		read()
		rows, err := showTasks(t, reader)
		if err == nil {
			moved = true
			for _, r := range rows {
				if r.node == victim.ID {
					moved = false
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the victim's tasks did not move within 30s")
		}
	}
}

// waitStagePlaced waits until SHOW TASKS on n shows each of the parts
// tasks of a stage of view (its name in the task: "stage1-join") with
// one running active and a running standby on another live node.
func waitStagePlaced(t *testing.T, c *testcluster.Cluster, n *testcluster.Node, view, stage string, parts int) {
	t.Helper()
	c.Eventually(t, 60*time.Second, func() error {
		rows, err := showTasks(t, n)
		if err != nil {
			return err
		}
		byTask := map[string]map[string]string{} // task → role → node
		for _, r := range rows {
			if !strings.HasPrefix(r.task, view+"@") || !strings.Contains(r.task, "/"+stage+"/") {
				continue
			}
			if r.state != "RUNNING" {
				return fmt.Errorf("%s: %s on %s is %s", r.task, r.role, r.node, r.state)
			}
			if byTask[r.task] == nil {
				byTask[r.task] = map[string]string{}
			}
			byTask[r.task][r.role] = r.node
		}
		if len(byTask) != parts {
			return fmt.Errorf("%d tasks of %s's %s in SHOW TASKS, want %d: %v", len(byTask), view, stage, parts, rows)
		}
		for task, roles := range byTask {
			if roles["active"] == "" || roles["standby"] == "" || roles["active"] == roles["standby"] {
				return fmt.Errorf("%s: placed %v, want an active and a standby on two nodes", task, roles)
			}
		}
		return nil
	})
}

// isStage reports whether a SHOW TASKS task is a stage of a view's
// query that holds no partition of it (a re-keying, change or join
// stage) rather than a partition's task.
func isStage(task string) bool {
	return strings.Contains(task, "/rekey/") || strings.Contains(task, "/rekey-right/") || strings.Contains(task, "/join/") || strings.Contains(task, "/stage")
}
