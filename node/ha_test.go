package node

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/testcluster"
	"github.com/basindb/basin/materialize"
	"github.com/basindb/basin/stream"
)

// The HA tests: reads across replicas (docs/consistency.md, "Reads
// across replicas")
// while real nodes are frozen (SIGSTOP) or killed (SIGKILL), checked
// exactly against what was produced.

// haStatus is the part of GET /clusterStatus the HA tests read.
type haStatus struct {
	Nodes []struct {
		Node      string              `json:"node"`
		Alive     bool                `json:"alive"`
		DownSince *time.Time          `json:"down_since"`
		Tasks     []stream.TaskStatus `json:"tasks"`
	} `json:"nodes"`
}

// haClusterStatus is GET /clusterStatus on n.
func haClusterStatus(t *testing.T, n *testcluster.Node) (haStatus, error) {
	t.Helper()
	var st haStatus
	err := n.GetJSON(t, "/clusterStatus", &st)
	return st, err
}

// haWaitAlive waits until every node of observers says through its
// liveness (GET /clusterStatus) that node id is alive, or down.
func haWaitAlive(t *testing.T, c *testcluster.Cluster, observers []*testcluster.Node, id string, alive bool) {
	t.Helper()
	c.Eventually(t, 20*time.Second, func() error {
		for _, o := range observers {
			st, err := haClusterStatus(t, o)
			if err != nil {
				return err
			}
			found := false
			for _, ns := range st.Nodes {
				if ns.Node != id {
					continue
				}
				found = true
				if ns.Alive != alive {
					return fmt.Errorf("%s says %s alive=%v, want %v", o.ID, id, ns.Alive, alive)
				}
				if !alive && ns.DownSince == nil {
					return fmt.Errorf("%s says %s is down without down_since", o.ID, id)
				}
			}
			if !found {
				return fmt.Errorf("%s does not list %s in /clusterStatus", o.ID, id)
			}
		}
		return nil
	})
}

// haNode returns the node whose ID is id.
func haNode(t *testing.T, c *testcluster.Cluster, id string) *testcluster.Node {
	t.Helper()
	for _, n := range c.Nodes() {
		if n.ID == id {
			return n
		}
	}
	t.Fatalf("no node %s", id)
	return nil
}

// haPgError returns err's server error, or nil.
func haPgError(err error) *pgconn.PgError {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe
	}
	return nil
}

// haRows runs a query on conn and returns its rows as text.
func haRows(ctx context.Context, conn *pgx.Conn, sql string, args ...any) ([][]string, error) {
	rows, err := conn.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return testcluster.Text(rows)
}

// haExec runs statements on conn and fails the test on error.
func haExec(t *testing.T, ctx context.Context, conn *pgx.Conn, sql string) {
	t.Helper()
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// haErrors counts failed or wrong answers of concurrent clients and keeps
// the first few.
type haErrors struct {
	n     atomic.Int64
	mu    sync.Mutex
	first []string
}

func (e *haErrors) add(format string, args ...any) {
	e.n.Add(1)
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.first) < 10 {
		e.first = append(e.first, time.Now().Format("15:04:05.000 ")+fmt.Sprintf(format, args...))
	}
}

func (e *haErrors) String() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return strings.Join(e.first, "\n")
}

// TestHASteadyLoadThroughAFreeze proves that a frozen node (SIGSTOP) costs
// the clients of the other nodes nothing but time: four clients on their
// own connections to the two other nodes run key lookups and full scans
// of by_region in a loop while the node holding the most actives is
// frozen, for at least 200 queries after the readers' liveness has
// declared it down (the session timeout is 30s, so the group never
// rebalances: only the routing around a down node is at work), and then
// continued. Every answer is checked exactly; there must be no error and
// no wrong answer.
func TestHASteadyLoadThroughAFreeze(t *testing.T) {
	c, v, placed := startClusterView(t, 3, "30s", 700)
	victim, actives := mostActives(c, placed)
	var readers []*testcluster.Node
	for _, n := range c.Nodes() {
		if n != victim {
			readers = append(readers, n)
		}
	}
	type lookup struct {
		region string
		want   string
	}
	var lookups []lookup
	var scan []string
	for region, w := range v.want {
		lookups = append(lookups, lookup{region, fmt.Sprintf("%d|%d", w[0], w[1])})
		scan = append(scan, fmt.Sprintf("%s|%d|%d", region, w[0], w[1]))
	}
	sort.Strings(scan)
	wantScan := strings.Join(scan, "\n")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var queries atomic.Int64
	var bad haErrors
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 4 {
		reader := readers[i%len(readers)]
		conn := reader.Conn(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				for _, l := range lookups {
					rows, err := haRows(ctx, conn, "SELECT n, total FROM by_region WHERE region = $1", l.region)
					queries.Add(1)
					switch {
					case err != nil:
						bad.add("client %d on %s: lookup %s: %v", i, reader.ID, l.region, err)
					case len(rows) != 1 || strings.Join(rows[0], "|") != l.want:
						bad.add("client %d on %s: lookup %s: %v, want %s", i, reader.ID, l.region, rows, l.want)
					}
				}
				rows, err := haRows(ctx, conn, "SELECT region, n, total FROM by_region")
				queries.Add(1)
				if err != nil {
					bad.add("client %d on %s: scan: %v", i, reader.ID, err)
					continue
				}
				var got []string
				for _, r := range rows {
					got = append(got, strings.Join(r, "|"))
				}
				sort.Strings(got)
				if g := strings.Join(got, "\n"); g != wantScan {
					bad.add("client %d on %s: scan:\n%s\nwant\n%s", i, reader.ID, g, wantScan)
				}
			}
		}()
	}
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		wg.Wait()
	}()
	atLeast := func(n int64) {
		t.Helper()
		c.Eventually(t, time.Minute, func() error {
			if q := queries.Load(); q < n {
				return fmt.Errorf("%d queries, waiting for %d", q, n)
			}
			return nil
		})
	}
	atLeast(100)
	haWaitGroupStable(t, c)
	before := queries.Load()
	t.Logf("SIGSTOP %s (%d actives of %d); reading on %s and %s", victim.ID, actives, len(placed), readers[0].ID, readers[1].ID)
	victim.Stop()
	frozen := true
	defer func() {
		if frozen {
			victim.Cont()
		}
	}()
	haWaitAlive(t, c, readers, victim.ID, false)
	down := queries.Load()
	atLeast(down + 200)
	during := queries.Load()
	victim.Cont()
	frozen = false
	haWaitAlive(t, c, readers, victim.ID, true)
	atLeast(queries.Load() + 100)
	close(stop)
	wg.Wait()
	total := queries.Load()
	t.Logf("%d queries: %d before the freeze, %d until liveness declared %s down, %d while it was down, %d after SIGCONT; %d failed or wrong",
		total, before, down-before, victim.ID, during-down, total-during, bad.n.Load())
	if n := bad.n.Load(); n > 0 {
		t.Fatalf("%d of %d queries failed or were wrong; the first:\n%s", n, total, bad.String())
	}
}

// haPartition picks a partition of by_region that has rows, from placed
// (task → "active standby"): its task, number, active, standby, and the
// node holding no replica of it.
func haPartition(t *testing.T, c *testcluster.Cluster, placed map[string]string) (task, part string, active, standby, reader *testcluster.Node) {
	t.Helper()
	tasks := make([]string, 0, len(placed))
	for task := range placed {
		tasks = append(tasks, task)
	}
	sort.Strings(tasks)
	for _, task := range tasks {
		f := strings.Fields(placed[task])
		part := task[strings.LastIndexByte(task, '/')+1:]
		var other *testcluster.Node
		for _, n := range c.Nodes() {
			if n.ID != f[0] && n.ID != f[1] {
				other = n
			}
		}
		rows := other.Query(t, "SELECT count(*) FROM by_region WHERE _partition = "+part)
		if rows[0][0] != "0" {
			return task, part, haNode(t, c, f[0]), haNode(t, c, f[1]), other
		}
	}
	t.Fatalf("no partition of by_region has rows: %v", placed)
	return
}

// haTaskLag returns the role, state and offset lag of task on node as
// observer's /clusterStatus reports them (node's last lag report, or
// observer's own tasks).
func haTaskLag(t *testing.T, observer *testcluster.Node, node, task string) (role, state string, lag int64, err error) {
	t.Helper()
	st, err := haClusterStatus(t, observer)
	if err != nil {
		return "", "", 0, err
	}
	for _, ns := range st.Nodes {
		if ns.Node != node {
			continue
		}
		for _, ts := range ns.Tasks {
			if ts.Task == task {
				return ts.Role, ts.State, ts.OffsetLag, nil
			}
		}
	}
	return "", "", 0, fmt.Errorf("%s does not report %s on %s", observer.ID, task, node)
}

// TestHALagBoundRejection proves that lag bounds turn down a lagging
// replica and that when no replica qualifies, the error names every
// replica with its reason.
//
// A standby that lags by a known amount while it is alive is made
// deterministically by freezing (SIGSTOP) its partition's active: the
// standby follows the changelog only the active writes, so once K more
// orders are produced it stays exactly K source records behind (its lag
// is measured against the source's end offsets, which its node keeps
// reading) for as long as the active is frozen; it is alive, and its lag
// reports keep coming. (Freezing the standby instead would make it
// "down" and its lag "unknown", not over the bound.) Then, reading the
// partition from the node holding no replica of it:
//   - with no bound, the standby serves the old counts with _offset_lag
//     K;
//   - with basin.acceptable_offset_lag = 0 the read fails with 55000
//     naming the active ("down since ...") and the standby ("offset lag
//     K > 0"), and the hint says how far behind the standby is;
//   - with the bound at K the standby serves again, at K-1 it does not;
//   - with basin.read_from = 'active' it fails naming both, the standby
//     as "not the active";
//   - after SIGCONT, with the bound at 0 and read_from = 'freshest', the
//     read is served by the active with the new counts.
func TestHALagBoundRejection(t *testing.T) {
	c, v, placed := startClusterView(t, 3, "30s", 700)
	task, part, active, standby, reader := haPartition(t, c, placed)
	t.Logf("partition %s (%s): active %s (to freeze), standby %s, read from %s", part, task, active.ID, standby.ID, reader.ID)

	// The partition's regions and their counts, now and after produce.
	regionsOf := func() []string {
		rows := reader.Query(t, "SELECT region FROM by_region WHERE _partition = "+part+" ORDER BY region")
		var out []string
		for _, r := range rows {
			out = append(out, r[0])
		}
		return out
	}
	regions := regionsOf()
	want := func() string {
		var out []string
		for _, region := range regions {
			w := v.want[region]
			out = append(out, fmt.Sprintf("%s|%d|%d", region, w[0], w[1]))
		}
		return strings.Join(out, "\n")
	}
	wantOld := want()

	// Both replicas report lag 0 to the reader before the freeze, so the
	// standby's lag afterwards is exactly what is produced meanwhile.
	c.Eventually(t, 30*time.Second, func() error {
		for _, n := range []*testcluster.Node{active, standby} {
			role, state, lag, err := haTaskLag(t, reader, n.ID, task)
			if err != nil {
				return err
			}
			if state != "RUNNING" || lag != 0 {
				return fmt.Errorf("%s on %s: %s %s, offset lag %d", task, n.ID, role, state, lag)
			}
		}
		return nil
	})

	haWaitGroupStable(t, c)
	active.Stop()
	frozen := true
	defer func() {
		if frozen {
			active.Cont()
		}
	}()
	const k = 100
	v.produce(t, k)
	if got := regionsOf(); strings.Join(got, ",") != strings.Join(regions, ",") {
		t.Fatalf("partition %s has regions %v, then %v", part, regions, got)
	}
	wantNew := want()
	// The reader knows the active is down and has the standby's report of
	// its lag.
	haWaitAlive(t, c, []*testcluster.Node{reader}, active.ID, false)
	c.Eventually(t, 30*time.Second, func() error {
		_, _, lag, err := haTaskLag(t, reader, standby.ID, task)
		if err != nil {
			return err
		}
		if lag != k {
			return fmt.Errorf("%s on %s: offset lag %d, want %d", task, standby.ID, lag, k)
		}
		return nil
	})

	conn := reader.Conn(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	query := "SELECT region, n, total, _served_by, _role, _offset_lag FROM by_region WHERE _partition = " + part + " ORDER BY region"
	// read returns the rows without the pseudo-columns and where they were
	// served from ("node role lag", the same for every row).
	read := func() (rows string, from string, err error) {
		got, err := haRows(ctx, conn, query)
		if err != nil {
			return "", "", err
		}
		var out []string
		froms := map[string]bool{}
		for _, r := range got {
			out = append(out, strings.Join(r[:3], "|"))
			from = strings.Join(r[3:], " ")
			froms[from] = true
		}
		if len(froms) != 1 {
			return "", "", fmt.Errorf("rows of one partition served from %v", froms)
		}
		return strings.Join(out, "\n"), from, nil
	}
	expectServed := func(setting, wantRows, wantFrom string) {
		t.Helper()
		rows, from, err := read()
		if err != nil {
			t.Fatalf("%s: %v", setting, err)
		}
		if rows != wantRows || from != wantFrom {
			t.Fatalf("%s: served by %q:\n%s\nwant by %q:\n%s", setting, from, rows, wantFrom, wantRows)
		}
	}
	downRE := active.ID + ` \(active\) down since \d\d:\d\d:\d\d\.\d{3} UTC \(\d[^)]* ago\)`
	prefix := "no replica of by_region partition " + part + " can serve this read: "
	expectRejected := func(setting, standbyReason, hint string) {
		t.Helper()
		_, _, err := read()
		pe := haPgError(err)
		if pe == nil || pe.Code != "55000" {
			t.Fatalf("%s: %v, want SQLSTATE 55000", setting, err)
		}
		re := "^" + regexp.QuoteMeta(prefix) + downRE + "; " + regexp.QuoteMeta(standby.ID+" (standby) "+standbyReason) + "$"
		if !regexp.MustCompile(re).MatchString(pe.Message) {
			t.Fatalf("%s: message\n%s\ndoes not match\n%s", setting, pe.Message, re)
		}
		if pe.Hint != hint {
			t.Fatalf("%s: hint %q, want %q", setting, pe.Hint, hint)
		}
		t.Logf("%s: %s (HINT: %s; DETAIL: %s)", setting, pe.Message, pe.Hint, pe.Detail)
	}

	expectServed("no bound", wantOld, fmt.Sprintf("%s standby %d", standby.ID, k))

	haExec(t, ctx, conn, "SET basin.acceptable_offset_lag = 0")
	expectRejected("acceptable_offset_lag = 0", fmt.Sprintf("offset lag %d > 0 (basin.acceptable_offset_lag)", k),
		fmt.Sprintf("To accept more lag, SET basin.acceptable_offset_lag (%s is %d records behind).", standby.ID, k))

	haExec(t, ctx, conn, fmt.Sprintf("SET basin.acceptable_offset_lag = %d", k))
	expectServed(fmt.Sprintf("acceptable_offset_lag = %d", k), wantOld, fmt.Sprintf("%s standby %d", standby.ID, k))

	haExec(t, ctx, conn, fmt.Sprintf("SET basin.acceptable_offset_lag = %d", k-1))
	expectRejected(fmt.Sprintf("acceptable_offset_lag = %d", k-1), fmt.Sprintf("offset lag %d > %d (basin.acceptable_offset_lag)", k, k-1),
		fmt.Sprintf("To accept more lag, SET basin.acceptable_offset_lag (%s is %d records behind).", standby.ID, k))

	haExec(t, ctx, conn, "RESET basin.acceptable_offset_lag")
	haExec(t, ctx, conn, "SET basin.read_from = 'active'")
	expectRejected("read_from = 'active'", "not the active (basin.read_from = active)",
		"To read from standbys too, SET basin.read_from = 'any'.")

	// With the active back, a read that accepts no lag is served by it,
	// with the new counts.
	haExec(t, ctx, conn, "SET basin.read_from = 'freshest'")
	haExec(t, ctx, conn, "SET basin.acceptable_offset_lag = 0")
	active.Cont()
	frozen = false
	c.Eventually(t, 30*time.Second, func() error {
		rows, from, err := read()
		if err != nil {
			return err
		}
		if wantFrom := active.ID + " active 0"; rows != wantNew || from != wantFrom {
			return fmt.Errorf("served by %q:\n%s\nwant by %q:\n%s", from, rows, wantFrom, wantNew)
		}
		return nil
	})
	v.checkReplicas(t, 2)
}

// TestHAReadYourWritesAcrossNodes proves that the position token of a
// write makes a read on another node reflect it: 50 times, a session on
// one node upserts a new value of a key of a table (INSERT ... RETURNING
// _position) and a session on another node, with basin.min_position set
// to the token, reads the key back: it must be the new value every time,
// never an older one, and the partition's _position must cover the
// token. A token ahead of everything written makes a read fail with 55000
// about the position once basin.position_wait has passed, and the
// session reads again once the bound is lifted.
func TestHAReadYourWritesAcrossNodes(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{Nodes: 3, Args: []string{"--session-timeout", "30s", "--standby-replicas", "1"}})
	c.Node(0).Exec(t, "CREATE TABLE kv (k VARCHAR PRIMARY KEY, v BIGINT) WITH (partitions = 4)")
	placed := waitPlacedView(t, c, c.Node(0), "kv", 4, 1)
	t.Logf("placement: %v", placed)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var writers, readers []*pgx.Conn
	for _, n := range c.Nodes() {
		writers = append(writers, n.Conn(t))
		readers = append(readers, n.Conn(t))
	}
	keys := []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"}
	parts := map[string]bool{}
	var last materialize.Position
	for i := range 50 {
		w := i % 3
		r := (w + 1 + (i/3)%2) % 3 // every ordered pair of distinct nodes
		key := keys[i%len(keys)]
		var token string
		if err := writers[w].QueryRow(ctx, "INSERT INTO kv (k, v) VALUES ($1, $2) RETURNING _position", key, i).Scan(&token); err != nil {
			t.Fatalf("write %d on node-%d: %v", i, w, err)
		}
		pos, err := materialize.ParsePosition(token)
		if err != nil || len(pos["kv"]) != 1 {
			t.Fatalf("write %d on node-%d: token %q is %v (%v), want one partition of kv", i, w, token, pos.Describe(), err)
		}
		last = pos
		haExec(t, ctx, readers[r], "SET basin.min_position = '"+token+"'")
		rows, err := haRows(ctx, readers[r], "SELECT v, _position, _served_by FROM kv WHERE k = $1", key)
		if err != nil {
			t.Fatalf("read %d of %s on node-%d after the write on node-%d: %v", i, key, r, w, err)
		}
		if len(rows) != 1 || rows[0][0] != strconv.Itoa(i) {
			t.Fatalf("read %d of %s on node-%d after the write on node-%d (%s): %v, want v = %d", i, key, r, w, pos.Describe(), rows, i)
		}
		got, err := materialize.ParsePosition(rows[0][1])
		if err != nil || !got.Covers(pos) {
			t.Fatalf("read %d of %s on node-%d served by %s at _position %s (%v), which does not cover the write's %s",
				i, key, r, rows[0][2], got.Describe(), err, pos.Describe())
		}
		for p := range pos["kv"] {
			parts[fmt.Sprint(p)] = true
		}
	}
	if len(parts) < 2 {
		t.Fatalf("the writes went to partitions %v only", parts)
	}

	// A position 1000 offsets past the last write: no replica reaches it.
	ahead := last.Clone()
	var aheadPart int32
	var aheadOff int64
	for p, off := range ahead["kv"] {
		aheadPart, aheadOff = p, off+1000
		ahead["kv"][p] = aheadOff
	}
	// Read it on the node holding no replica of the partition: the read
	// is forwarded to both replicas, and both fail.
	key := keys[49%len(keys)]
	var holders []string
	for task, p := range placed {
		if strings.HasSuffix(task, fmt.Sprintf("/%d", aheadPart)) {
			holders = strings.Fields(p)
		}
	}
	if len(holders) != 2 {
		t.Fatalf("partition %d of kv is not in the placement %v", aheadPart, placed)
	}
	var reader *pgx.Conn
	for i, n := range c.Nodes() {
		if n.ID != holders[0] && n.ID != holders[1] {
			reader = readers[i]
		}
	}
	haExec(t, ctx, reader, "SET basin.position_wait = '300ms'")
	haExec(t, ctx, reader, "SET basin.min_position = '"+ahead.String()+"'")
	_, err := haRows(ctx, reader, "SELECT v FROM kv WHERE k = $1", key)
	pe := haPgError(err)
	if pe == nil || pe.Code != "55000" {
		t.Fatalf("read at a position never written (%s): %v, want SQLSTATE 55000", ahead.Describe(), err)
	}
	t.Logf("read at %s: %s (DETAIL: %s; HINT: %s)", ahead.Describe(), pe.Message, pe.Detail, pe.Hint)
	failed := regexp.QuoteMeta(fmt.Sprintf("read failed: partition %d of kv has not reached the position this read needs within 300ms", aheadPart)) +
		`( \(SQLSTATE 55000\))?`
	// The active may be restoring at that moment (its task restarted):
	// the message names it with the role it has then.
	re := "^" + regexp.QuoteMeta(fmt.Sprintf("no replica of kv partition %d can serve this read: %s ", aheadPart, holders[0])) + `\((active|restoring)\) ` + failed +
		regexp.QuoteMeta(fmt.Sprintf("; %s (standby) ", holders[1])) + failed + "$"
	if !regexp.MustCompile(re).MatchString(pe.Message) {
		t.Fatalf("read at a position never written: message\n%s\ndoes not match\n%s", pe.Message, re)
	}
	if want := fmt.Sprintf("with position at least kv/%d:%d ", aheadPart, aheadOff); !strings.Contains(pe.Detail, want) {
		t.Fatalf("read at a position never written: detail %q does not say %q", pe.Detail, want)
	}
	haExec(t, ctx, reader, "SET basin.min_position = ''")
	rows, err := haRows(ctx, reader, "SELECT v FROM kv WHERE k = $1", key)
	if err != nil || len(rows) != 1 || rows[0][0] != "49" {
		t.Fatalf("read of %s once the bound is lifted: %v %v, want 49", key, rows, err)
	}
}

// haProduceIDs writes orders id from..from+n-1 to topic, one per id, keyed
// by id (8-byte big-endian, as the orders stream's BIGINT KEY).
func haProduceIDs(t *testing.T, c *testcluster.Cluster, topic string, from, n int) {
	t.Helper()
	recs := make([]*kgo.Record, 0, n)
	for id := from; id < from+n; id++ {
		val, _ := json.Marshal(map[string]any{"region": clusterRegions[id%len(clusterRegions)], "amount": id})
		recs = append(recs, &kgo.Record{Key: binary.BigEndian.AppendUint64(nil, uint64(id)), Value: val})
	}
	c.Produce(t, topic, recs...)
}

// haCheckPerID checks rows of "SELECT id, n ... FROM per_id": every id
// in [0, ids) exactly once, with n = 1.
func haCheckPerID(rows [][]string, ids int) error {
	if len(rows) != ids {
		return fmt.Errorf("%d rows, want %d", len(rows), ids)
	}
	seen := make([]bool, ids)
	for _, r := range rows {
		id, err := strconv.Atoi(r[0])
		if err != nil || id < 0 || id >= ids {
			return fmt.Errorf("row %v: id out of range", r)
		}
		if seen[id] {
			return fmt.Errorf("id %d twice", id)
		}
		seen[id] = true
		if r[1] != "1" {
			return fmt.Errorf("id %d: n = %s, want 1", id, r[1])
		}
	}
	return nil
}

// haReplaced returns nil once SHOW TASKS on n lists no task on the node
// gone and each of view's parts partitions with one running active and
// one running standby.
func haReplaced(t *testing.T, n *testcluster.Node, gone, view string, parts int) error {
	t.Helper()
	rows, err := showTasks(t, n)
	if err != nil {
		return err
	}
	roles := map[string][]string{}
	for _, r := range rows {
		if r.node == gone {
			return fmt.Errorf("%s still on %s", r.task, gone)
		}
		if !strings.HasPrefix(r.task, view+"@") || isStage(r.task) {
			continue
		}
		if r.state != "RUNNING" {
			return fmt.Errorf("%s: %s on %s is %s", r.task, r.role, r.node, r.state)
		}
		roles[r.task] = append(roles[r.task], r.role)
	}
	if len(roles) != parts {
		return fmt.Errorf("%d partitions of %s listed, want %d", len(roles), view, parts)
	}
	for task, rs := range roles {
		sort.Strings(rs)
		if strings.Join(rs, ",") != "active,standby" {
			return fmt.Errorf("%s: roles %v", task, rs)
		}
	}
	return nil
}

// haWaitGroupStable waits until the broker says the group of the nodes is
// Stable with every node a member, and every node's assignment (SHOW
// CLUSTER) is of the same generation: no rebalance is in flight. A node
// killed while a rebalance is joining (the catalog's follow-up rebalance
// right after CREATE, say) has been seen to leave a survivor out of the
// group until its JoinGroup timed out 40s later, a failure of its own
// that the tests using this are not about.
func haWaitGroupStable(t *testing.T, c *testcluster.Cluster) {
	t.Helper()
	adm := kadm.NewClient(c.Client(t))
	group := catalog.NodesGroup(c.Name)
	c.Eventually(t, 30*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		gs, err := adm.DescribeGroups(ctx, group)
		if err != nil {
			return err
		}
		g, ok := gs[group]
		switch {
		case !ok:
			return fmt.Errorf("group %s not described", group)
		case g.Err != nil:
			return g.Err
		case g.State != "Stable" || len(g.Members) != len(c.Nodes()):
			return fmt.Errorf("group %s is %s with %d members", group, g.State, len(g.Members))
		}
		gens := map[string]bool{}
		for _, n := range c.Nodes() {
			rows, err := n.QueryCtx(ctx, "SHOW CLUSTER")
			if err != nil {
				return err
			}
			for _, r := range rows {
				gens[r[5]] = true
			}
		}
		if len(gens) != 1 {
			return fmt.Errorf("the nodes' assignments are of generations %v", gens)
		}
		return nil
	})
}

// TestHAScatterGatherWithANodeDown proves that scatter-gather reads need
// no pause while a node dies: with the group settled and both replicas of
// every partition holding their rows, one of three nodes is killed
// (SIGKILL); right after, and on through the failure detection and the
// rebalance that moves its tasks (session timeout 2s) until every
// partition again has a running active and standby, a survivor answers
// SELECT id, n FROM per_id with every one of the 700 ids exactly once
// with n = 1, count(*) with 700, and a LIMIT 10 with 10 distinct ids,
// every time: no error is allowed. A wrong answer is reported with the
// rows per partition and where each partition was read (SHOW
// basin.last_read).
func TestHAScatterGatherWithANodeDown(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{Nodes: 3, Args: []string{"--session-timeout", "2s", "--standby-replicas", "1"}})
	newClusterView(t, c)
	c.Node(0).Exec(t, "CREATE TABLE per_id AS SELECT id, COUNT(*) AS n FROM orders GROUP BY id")
	waitPlaced(t, c, c.Node(0), 1)
	placed := waitPlacedView(t, c, c.Node(0), "per_id", 4, 1)
	haProduceIDs(t, c, "orders", 0, 700)
	// Both replicas of every partition hold all its rows before the kill.
	c.Eventually(t, 60*time.Second, func() error {
		total := 0
		for p := range 4 {
			counts := map[string]string{}
			for _, n := range c.Nodes() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				rows, err := localQuery(ctx, n, "SELECT count(*) FROM per_id WHERE _partition = $1", p)
				cancel()
				if err != nil {
					if strings.Contains(err.Error(), "has no replica on node") {
						continue
					}
					return fmt.Errorf("partition %d on %s: %v", p, n.ID, err)
				}
				counts[n.ID] = rows[0][0]
			}
			var distinct []string
			for _, cnt := range counts {
				if !slices.Contains(distinct, cnt) {
					distinct = append(distinct, cnt)
				}
			}
			if len(counts) != 2 || len(distinct) != 1 {
				return fmt.Errorf("partition %d: counts by node %v, want 2 replicas that agree", p, counts)
			}
			n, _ := strconv.Atoi(distinct[0])
			total += n
		}
		if total != 700 {
			return fmt.Errorf("%d rows in per_id's partitions, want 700", total)
		}
		return nil
	})
	haWaitGroupStable(t, c)
	victim, actives := mostActives(c, placed)
	var survivors []*testcluster.Node
	var conns []*pgx.Conn
	for _, n := range c.Nodes() {
		if n != victim {
			survivors = append(survivors, n)
			conns = append(conns, n.Conn(t))
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var bad haErrors
	rounds := 0
	// lastRead is where the session's last successful SELECT read each
	// partition, for the reports of wrong answers.
	lastRead := func(conn *pgx.Conn) string {
		rows, err := haRows(ctx, conn, "SHOW basin.last_read")
		if err != nil {
			return err.Error()
		}
		var out []string
		for _, r := range rows {
			out = append(out, fmt.Sprintf("%s: %s %s lag %s", r[0], r[1], r[2], r[3]))
		}
		return strings.Join(out, "; ")
	}
	round := func() {
		i := rounds % len(survivors)
		rounds++
		n, conn := survivors[i], conns[i]
		rows, err := haRows(ctx, conn, "SELECT id, n, _partition FROM per_id")
		if err == nil {
			if err = haCheckPerID(rows, 700); err != nil {
				perPart := map[string]int{}
				for _, r := range rows {
					perPart[r[2]]++
				}
				err = fmt.Errorf("%v: rows by partition %v (read %s)", err, perPart, lastRead(conn))
			}
		}
		if err != nil {
			bad.add("round %d on %s: SELECT id, n: %v", rounds, n.ID, err)
		}
		rows, err = haRows(ctx, conn, "SELECT count(*) FROM per_id")
		if err == nil && (len(rows) != 1 || rows[0][0] != "700") {
			err = fmt.Errorf("%v, want 700 (read %s)", rows, lastRead(conn))
		}
		if err != nil {
			bad.add("round %d on %s: count(*): %v", rounds, n.ID, err)
		}
		rows, err = haRows(ctx, conn, "SELECT id FROM per_id LIMIT 10")
		if err == nil {
			ids := map[string]bool{}
			for _, r := range rows {
				if id, perr := strconv.Atoi(r[0]); perr != nil || id < 0 || id >= 700 {
					err = fmt.Errorf("id %q out of range", r[0])
				}
				ids[r[0]] = true
			}
			if err == nil && (len(rows) != 10 || len(ids) != 10) {
				err = fmt.Errorf("%d rows, %d distinct ids, want 10: %v", len(rows), len(ids), rows)
			}
		}
		if err != nil {
			bad.add("round %d on %s: LIMIT 10: %v", rounds, n.ID, err)
		}
	}
	t.Logf("per_id placed %v; SIGKILL %s (%d actives); reading on %s and %s", placed, victim.ID, actives, survivors[0].ID, survivors[1].ID)
	victim.Kill()
	killed := time.Now()
	// Through the failover: at least 30 rounds, and until the group has
	// moved the victim's tasks and every partition of per_id again has a
	// running active and a running standby on the survivors; then 10 more.
	replaced := false
	for !replaced || rounds < 30 {
		round()
		if !replaced {
			if err := haReplaced(t, survivors[0], victim.ID, "per_id", 4); err == nil {
				replaced = true
				t.Logf("per_id was placed again on the survivors after %d rounds (%v)", rounds, time.Since(killed).Round(time.Millisecond))
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("per_id was not placed again within the deadline (%d rounds)", rounds)
		}
	}
	for range 10 {
		round()
	}
	t.Logf("%d rounds of 3 queries over %v; %d failed or wrong", rounds, time.Since(killed).Round(time.Millisecond), bad.n.Load())
	if n := bad.n.Load(); n > 0 {
		t.Fatalf("%d queries failed or were wrong; the first:\n%s", n, bad.String())
	}
}

// TestHAForwardingBothWaysAtHighConcurrency proves that forwarding does
// not deadlock or fail under load in both directions at once: two nodes
// without standbys each hold part of per_id's 8 partitions and must read
// the rest from the other, and 64 clients (32 on each node, each on its
// own connection) each run 5 full scans of its 5000 rows and 5 key
// lookups at the same time. Every query must complete with the exact
// answer before a 2-minute deadline (hitting it would mean the nodes wait
// on each other's connections); no error is allowed.
func TestHAForwardingBothWaysAtHighConcurrency(t *testing.T) {
	args := []string{"--session-timeout", "30s", "--standby-replicas", "0"}
	if testcluster.Race() {
		// 64 clients on two race-built nodes sharing the CPU can hold a
		// heartbeat past the 5 missed intervals that declare a node down,
		// failing forwarded reads to a node that is up. What this test
		// checks is the forwarding, not how fast a dead node is noticed.
		args = append(args, "--heartbeat-interval", testcluster.Timeout(DefaultHeartbeatInterval).String())
	}
	c := testcluster.Start(t, testcluster.Options{Nodes: 2, Args: args})
	n0 := c.Node(0)
	n0.Exec(t, "CREATE STREAM orders (id BIGINT KEY, region VARCHAR, amount BIGINT) WITH (kafka_topic = 'orders', value_format = 'json', partitions = 8)")
	n0.Exec(t, "CREATE TABLE per_id AS SELECT id, COUNT(*) AS n FROM orders GROUP BY id")
	waitPlacedView(t, c, n0, "per_id", 8, 0)
	const ids = 5000
	haProduceIDs(t, c, "orders", 0, ids)
	c.Eventually(t, 60*time.Second, func() error {
		for _, n := range c.Nodes() {
			rows, err := n.QueryErr(t, "SELECT count(*) FROM per_id")
			if err != nil {
				return err
			}
			if rows[0][0] != strconv.Itoa(ids) {
				return fmt.Errorf("%s: count(*) = %s, want %d", n.ID, rows[0][0], ids)
			}
		}
		return nil
	})
	// Each node holds some partitions and serves the others' scans of
	// them: the forwarding goes both ways.
	for _, n := range c.Nodes() {
		if held := heldPartitions(t, n, "per_id"); held == 0 || held == 8 {
			t.Fatalf("%s holds %d of per_id's 8 partitions: reads would not be forwarded both ways", n.ID, held)
		}
		rows := n.Query(t, "SELECT _served_by, count(*) FROM per_id GROUP BY _served_by ORDER BY _served_by")
		if len(rows) != 2 || rows[0][0] != "node-0" || rows[1][0] != "node-1" {
			t.Fatalf("per_id read on %s was served by %v, want node-0 and node-1", n.ID, rows)
		}
	}

	const clients, scans = 64, 5
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conns := make([]*pgx.Conn, clients)
	for i := range conns {
		conns[i] = c.Node(i % 2).Conn(t)
	}
	var bad haErrors
	var queries atomic.Int64
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, conn := range conns {
		node := c.Node(i % 2).ID
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for s := range scans {
				rows, err := haRows(ctx, conn, "SELECT id, n FROM per_id")
				queries.Add(1)
				if err == nil {
					err = haCheckPerID(rows, ids)
				}
				if err != nil {
					bad.add("client %d on %s: scan %d: %v", i, node, s, err)
				}
				id := (i*scans + s) * 7 % ids
				rows, err = haRows(ctx, conn, "SELECT id, n FROM per_id WHERE id = $1", id)
				queries.Add(1)
				if err == nil && (len(rows) != 1 || strings.Join(rows[0], "|") != fmt.Sprintf("%d|1", id)) {
					err = fmt.Errorf("%v, want %d|1", rows, id)
				}
				if err != nil {
					bad.add("client %d on %s: lookup %d: %v", i, node, id, err)
				}
			}
		}()
	}
	began := time.Now()
	close(start)
	wg.Wait()
	t.Logf("%d clients: %d queries in %v; %d failed or wrong", clients, queries.Load(), time.Since(began).Round(time.Millisecond), bad.n.Load())
	if ctx.Err() != nil {
		t.Fatalf("the 2-minute deadline was hit (the nodes' forwarded reads wait on each other?); %d of %d queries failed; the first:\n%s",
			bad.n.Load(), clients*scans*2, bad.String())
	}
	if n := bad.n.Load(); n > 0 {
		t.Fatalf("%d of %d queries failed or were wrong; the first:\n%s", n, queries.Load(), bad.String())
	}
}
