package ha

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/basindb/basin/internal/poll"
	"github.com/basindb/basin/materialize"
)

const (
	testGroup = "basin-test"
	testTopic = "_basin-members"
)

// groupEnv is an in-process kfake broker and the basin nodes joined to
// its group, each a kgo client with a Balancer.
type groupEnv struct {
	t     *testing.T
	addrs []string
	tasks func() []Task
	log   *slog.Logger
	nodes map[string]*groupNode
}

type groupNode struct {
	id     string
	b      *Balancer
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}

	mu struct {
		sync.Mutex
		offsets     map[materialize.StoreID]int64
		assignments []Assignment
		lastJoin    []byte
	}
}

func newGroupEnv(t *testing.T, tasks []Task) *groupEnv {
	t.Helper()
	c, err := kfake.NewCluster(
		kfake.NumBrokers(1),
		kfake.SeedTopics(1, testTopic),
		kfake.GroupMinSessionTimeout(100*time.Millisecond),
	)
	if err != nil {
		t.Fatal(err)
	}
	env := &groupEnv{t: t, addrs: c.ListenAddrs(), nodes: map[string]*groupNode{}}
	env.tasks = func() []Task { return slices.Clone(tasks) }
	env.log = slog.New(slog.DiscardHandler)
	if testing.Verbose() {
		env.log = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		for _, n := range env.nodes {
			n.stop(t, false)
		}
		c.Close()
		// Nothing the nodes or the broker started outlives them.
		waitFor(t, 5*time.Second, func() (bool, string) {
			if g := runtime.NumGoroutine(); g > before {
				buf := make([]byte, 1<<20)
				return false, fmt.Sprintf("%d goroutines, %d before:\n%s", g, before, buf[:runtime.Stack(buf, true)])
			}
			return true, ""
		})
	})
	return env
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

type nodeOpts struct {
	session  time.Duration
	probing  time.Duration
	offsets  map[materialize.StoreID]int64
	lastJoin []byte
	cfg      Config
}

// start starts node id (replacing a stopped one of the same id).
func (env *groupEnv) start(id string, o nodeOpts) *groupNode {
	env.t.Helper()
	if o.session == 0 {
		o.session = 30 * time.Second
	}
	n := &groupNode{id: id, done: make(chan struct{})}
	n.mu.offsets = maps.Clone(o.offsets)
	b, err := NewBalancer(BalancerConfig{
		NodeID:          id,
		Group:           testGroup,
		Topic:           testTopic,
		Assign:          o.cfg,
		ProbingInterval: o.probing,
		Local: func() LocalState {
			n.mu.Lock()
			defer n.mu.Unlock()
			return LocalState{PGAddr: id + ":5433", HTTPAddr: id + ":8433", Offsets: maps.Clone(n.mu.offsets)}
		},
		Tasks: func() ([]Task, error) { return env.tasks(), nil },
		OnAssignment: func(a Assignment) {
			n.mu.Lock()
			n.mu.assignments = append(n.mu.assignments, a)
			n.mu.Unlock()
		},
		LastJoin: o.lastJoin,
		OnJoin: func(meta []byte) {
			n.mu.Lock()
			n.mu.lastJoin = meta
			n.mu.Unlock()
		},
		Logger: env.log,
	})
	if err != nil {
		env.t.Fatal(err)
	}
	n.b = b
	opts := append(b.ClientOpts(),
		kgo.SeedBrokers(env.addrs...),
		kgo.SessionTimeout(o.session),
		kgo.HeartbeatInterval(50*time.Millisecond),
		kgo.RebalanceTimeout(5*time.Second),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }),
	)
	n.cl, err = kgo.NewClient(opts...)
	if err != nil {
		env.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	go func() {
		defer close(n.done)
		b.Run(ctx, n.cl)
	}()
	env.nodes[id] = n
	return n
}

// stop closes the node's client: a crash as far as the group can tell,
// since a static member's Close does not leave. With leave, it leaves
// the group first.
func (n *groupNode) stop(t *testing.T, leave bool) {
	t.Helper()
	if n.cl == nil {
		return
	}
	if leave {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := n.b.Leave(ctx, n.cl); err != nil {
			t.Errorf("leaving: %v", err)
		}
	}
	n.cancel()
	n.cl.Close()
	<-n.done
	n.cl = nil
}

func (n *groupNode) assignments() []Assignment {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.mu.assignments)
}

func (n *groupNode) last() (Assignment, bool) {
	as := n.assignments()
	if len(as) == 0 {
		return Assignment{}, false
	}
	return as[len(as)-1], true
}

func (n *groupNode) lastJoin() []byte {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.mu.lastJoin
}

func (n *groupNode) setOffsets(m map[materialize.StoreID]int64) {
	n.mu.Lock()
	n.mu.offsets = maps.Clone(m)
	n.mu.Unlock()
}

// waitFor polls cond until it holds or the deadline passes
// (internal/poll).
func waitFor(t *testing.T, d time.Duration, cond func() (bool, string)) {
	t.Helper()
	poll.Until(t, d, func() error {
		if ok, why := cond(); !ok {
			return errors.New(why)
		}
		return nil
	})
}

// waitAgreed waits until the given nodes' last assignments are the same
// map, of exactly these nodes, and returns it.
func (env *groupEnv) waitAgreed(ids ...string) Assignment {
	env.t.Helper()
	var agreed Assignment
	waitFor(env.t, 10*time.Second, func() (bool, string) {
		var first *Assignment
		for _, id := range ids {
			a, ok := env.nodes[id].last()
			if !ok {
				return false, id + " has no assignment"
			}
			if got := a.NodeIDs(); !slices.Equal(got, ids) {
				return false, fmt.Sprintf("%s's map has nodes %v", id, got)
			}
			if first == nil {
				first = &a
			} else if !a.Equal(first) {
				return false, fmt.Sprintf("%s disagrees: generation %d vs %d", id, a.Generation, first.Generation)
			}
		}
		agreed = *first
		return true, ""
	})
	return agreed
}

func checkPlaced(t *testing.T, a Assignment, tasks []Task) {
	t.Helper()
	idx := a.ByTask()
	for _, task := range tasks {
		r := idx[task.ID]
		want := min(task.Standbys, len(a.Nodes)-1)
		if r.Active == "" || len(r.Standbys) != want || slices.Contains(r.Standbys, r.Active) {
			t.Fatalf("task %s: active %q standbys %v, want %d standbys on other nodes\n%s", task.ID, r.Active, r.Standbys, want, dump(a))
		}
	}
	if err := a.Check(); err != nil {
		t.Fatal(err)
	}
}

func viewTasks(view string, parts, standbys int, end int64) []Task {
	var ts []Task
	for p := range parts {
		ts = append(ts, Task{ID: materialize.StoreID{View: view, Partition: int32(p)}, Standbys: standbys, EndOffset: end})
	}
	return ts
}

func activesOf(a Assignment, id string) []materialize.StoreID { return a.Nodes[id].Active }

// TestGroupMembership runs three nodes in a kfake group: they agree on
// one map with an active and a standby per task on distinct nodes; a
// crash of the leader and a clean leave each redistribute the node's
// tasks to the survivors, keeping the survivors' actives.
func TestGroupMembership(t *testing.T) {
	tasks := viewTasks("revenue@42", 6, 1, 0)
	env := newGroupEnv(t, tasks)
	ids := []string{"a", "b", "c"}
	for _, id := range ids {
		// A short session timeout makes a crash visible quickly.
		env.start(id, nodeOpts{session: 500 * time.Millisecond})
	}
	a := env.waitAgreed(ids...)
	checkPlaced(t, a, tasks)
	for _, id := range ids {
		if nt := a.Nodes[id]; nt.PGAddr != id+":5433" || nt.HTTPAddr != id+":8433" || len(nt.Active) != 2 || len(nt.Standby) != 2 {
			t.Fatalf("node %s: %+v", id, nt)
		}
	}

	// Crash the leader: its client goes away without leaving; kfake
	// drops it after its session timeout, and the group rebalances under
	// a new leader, which has the previous map too.
	crashed := a.Leader
	env.nodes[crashed].stop(t, false)
	rest := slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return id == crashed })
	after := env.waitAgreed(rest...)
	checkPlaced(t, after, tasks)
	if after.Leader == crashed || !slices.Contains(rest, after.Leader) {
		t.Fatalf("leader %q after %q crashed", after.Leader, crashed)
	}
	for _, id := range rest {
		for _, task := range activesOf(a, id) {
			if !slices.Contains(activesOf(after, id), task) {
				t.Fatalf("%s lost active %s when %s crashed\n%s", id, task, crashed, dump(after))
			}
		}
	}
	// The crashed node's actives went to their standbys.
	before := a.ByTask()
	for _, task := range activesOf(a, crashed) {
		if r := after.Replicas(task); !slices.Contains(before[task].Standbys, r.Active) {
			t.Fatalf("%s's active %s went to %s, not its standby %v", crashed, task, r.Active, before[task].Standbys)
		}
	}

	// Clean leave: a node with a 30s session timeout joins and leaves;
	// the group drops it at once, well within waitAgreed's deadline,
	// which only the leave explains.
	env.start("d", nodeOpts{session: 30 * time.Second})
	env.waitAgreed(append(slices.Clone(rest), "d")...)
	env.nodes["d"].stop(t, true)
	final := env.waitAgreed(rest...)
	checkPlaced(t, final, tasks)
}

// TestGroupStaticRestart restarts a node within the session timeout: it
// gets its tasks back without a rebalance, with the same metadata or
// with LastJoin; with new metadata kfake rebalances, and stickiness still
// gives every node its tasks back.
func TestGroupStaticRestart(t *testing.T) {
	tasks := viewTasks("revenue@42", 6, 1, 1000)
	env := newGroupEnv(t, tasks)
	full := map[materialize.StoreID]int64{}
	for _, task := range tasks {
		full[task.ID] = 1000
	}
	for _, id := range []string{"a", "b", "c"} {
		env.start(id, nodeOpts{offsets: full})
	}
	a := env.waitAgreed("a", "b", "c")
	checkPlaced(t, a, tasks)
	// f is a follower; the others keep running.
	f := "c"
	if a.Leader == f {
		f = "b"
	}
	seen := map[string]int{}
	for _, id := range []string{"a", "b", "c"} {
		if id != f {
			seen[id] = len(env.nodes[id].assignments())
		}
	}

	// Same metadata: kfake and Kafka alike keep the group stable.
	env.nodes[f].stop(t, false)
	env.start(f, nodeOpts{offsets: full})
	got := env.waitAgreed("a", "b", "c")
	if got.Generation != a.Generation || !got.SameTasks(&a) {
		t.Fatalf("restart with the same metadata rebalanced: generation %d → %d\n%s", a.Generation, got.Generation, dump(got))
	}
	for id, n := range seen {
		if len(env.nodes[id].assignments()) != n {
			t.Fatalf("%s got a new assignment", id)
		}
	}

	// The leader restarts with the same metadata: the broker tells it to
	// skip balancing (KIP-814) and hands back the current map.
	leader := a.Leader
	env.nodes[leader].stop(t, false)
	env.start(leader, nodeOpts{offsets: full})
	got = env.waitAgreed("a", "b", "c")
	if got.Generation != a.Generation || !got.SameTasks(&a) {
		t.Fatalf("leader restart rebalanced: generation %d → %d\n%s", a.Generation, got.Generation, dump(got))
	}
	if !env.nodes[leader].b.IsLeader() {
		t.Fatalf("restarted leader %s does not know it leads", leader)
	}

	// Offsets moved on while f was down, but f sends the join metadata
	// of its previous run: still no rebalance.
	last := env.nodes[f].lastJoin()
	env.nodes[f].stop(t, false)
	more := map[materialize.StoreID]int64{}
	for k := range full {
		more[k] = 1000 + 7
	}
	env.start(f, nodeOpts{offsets: more, lastJoin: last})
	got = env.waitAgreed("a", "b", "c")
	if got.Generation != a.Generation || !got.SameTasks(&a) {
		t.Fatalf("restart with LastJoin rebalanced: generation %d → %d\n%s", a.Generation, got.Generation, dump(got))
	}

	// Without LastJoin the metadata differs and kfake rebalances (Kafka
	// would not); the assignment is sticky, so nothing moves.
	env.nodes[f].stop(t, false)
	env.start(f, nodeOpts{offsets: more})
	waitFor(t, 10*time.Second, func() (bool, string) {
		l, ok := env.nodes["a"].last()
		return ok && l.Generation > a.Generation, "waiting for a rebalance"
	})
	got = env.waitAgreed("a", "b", "c")
	if !got.SameTasks(&a) {
		t.Fatalf("restart moved tasks:\nbefore\n%s\nafter\n%s", dump(a), dump(got))
	}
}

// TestGroupWarmup adds a cold node: it gets warm-ups, no actives; once its
// offsets catch up, the leader's probing rebalance moves tasks to it and
// the group ends balanced.
func TestGroupWarmup(t *testing.T) {
	tasks := viewTasks("revenue@42", 6, 1, 50000)
	env := newGroupEnv(t, tasks)
	full := map[materialize.StoreID]int64{}
	for _, task := range tasks {
		full[task.ID] = 50000
	}
	cfg := Config{AcceptableRecoveryLag: 100}
	probing := 100 * time.Millisecond
	env.start("a", nodeOpts{offsets: full, cfg: cfg, probing: probing})
	env.start("b", nodeOpts{offsets: full, cfg: cfg, probing: probing})
	env.waitAgreed("a", "b")

	c := env.start("c", nodeOpts{cfg: cfg, probing: probing})
	a := env.waitAgreed("a", "b", "c")
	if nt := a.Nodes["c"]; len(nt.Active) != 0 || len(nt.Standby) != 0 || len(nt.Warmup) == 0 || len(nt.Warmup) > DefaultMaxWarmups || !a.NeedsFollowUp {
		t.Fatalf("cold node: %+v, follow-up %v\n%s", nt, a.NeedsFollowUp, dump(a))
	}
	checkPlaced(t, a, tasks)

	// Probing rebalances keep coming while c is still cold, and keep
	// the same warm-ups.
	waitFor(t, 10*time.Second, func() (bool, string) {
		l, _ := c.last()
		return l.Generation > a.Generation, "waiting for a probing rebalance"
	})
	l, _ := c.last()
	if !slices.Equal(l.Nodes["c"].Warmup, a.Nodes["c"].Warmup) || len(l.Nodes["c"].Active) != 0 {
		t.Fatalf("warm-ups changed while cold:\n%s", dump(l))
	}

	// c catches up on everything: the next probing rebalance moves its
	// share to it, and the group settles.
	c.setOffsets(full)
	final := Assignment{}
	waitFor(t, 10*time.Second, func() (bool, string) {
		l, _ := c.last()
		final = l
		return !l.NeedsFollowUp && len(l.Nodes["c"].Active) == 2, "waiting for c to take its share:\n" + dump(l)
	})
	final = env.waitAgreed("a", "b", "c")
	checkPlaced(t, final, tasks)
	checkBalanced(t, final)
}

// TestGroupRequestRebalance: any node, leader or not, can make the group
// rebalance.
func TestGroupRequestRebalance(t *testing.T) {
	tasks := viewTasks("v@1", 3, 1, 0)
	env := newGroupEnv(t, tasks)
	env.start("a", nodeOpts{})
	env.start("b", nodeOpts{})
	a := env.waitAgreed("a", "b")
	for _, id := range []string{"a", "b"} {
		env.nodes[id].b.RequestRebalance("test")
		waitFor(t, 10*time.Second, func() (bool, string) {
			l, _ := env.nodes[id].last()
			return l.Generation > a.Generation, "waiting for the rebalance " + id + " asked for"
		})
		a = env.waitAgreed("a", "b")
	}
	if !env.nodes["a"].b.IsLeader() && !env.nodes["b"].b.IsLeader() {
		t.Fatal("no node is the leader")
	}
}

func newTestBalancer(t *testing.T, local *LocalState, tasks []Task, lastJoin []byte) *Balancer {
	t.Helper()
	b, err := NewBalancer(BalancerConfig{
		NodeID: "n1", Group: testGroup, Topic: testTopic,
		Local:    func() LocalState { return *local },
		Tasks:    func() ([]Task, error) { return tasks, nil },
		LastJoin: lastJoin,
		Logger:   slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestBalancerConfigValidate(t *testing.T) {
	ok := BalancerConfig{NodeID: "n", Group: "g", Topic: "t", Local: func() LocalState { return LocalState{} }, Tasks: func() ([]Task, error) { return nil, nil }}
	if err := ok.Validate(); err != nil || ok.ProbingInterval != DefaultProbingInterval || ok.Assign.AcceptableRecoveryLag != DefaultAcceptableRecoveryLag || ok.Assign.MaxWarmups != DefaultMaxWarmups {
		t.Fatalf("defaults: %+v %v", ok, err)
	}
	for name, mut := range map[string]func(*BalancerConfig){
		"node":    func(c *BalancerConfig) { c.NodeID = "" },
		"group":   func(c *BalancerConfig) { c.Group = "" },
		"topic":   func(c *BalancerConfig) { c.Topic = "" },
		"local":   func(c *BalancerConfig) { c.Local = nil },
		"tasks":   func(c *BalancerConfig) { c.Tasks = nil },
		"probing": func(c *BalancerConfig) { c.ProbingInterval = -1 },
		"lag":     func(c *BalancerConfig) { c.Assign.AcceptableRecoveryLag = -1 },
		"warmups": func(c *BalancerConfig) { c.Assign.MaxWarmups = -1 },
	} {
		c := ok
		mut(&c)
		if err := c.Validate(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestJoinMetadataReuse: the previous run's join metadata is sent again
// on the first join only while it under-states the node's state.
func TestJoinMetadataReuse(t *testing.T) {
	v0 := materialize.StoreID{View: "v@1", Partition: 0}
	local := &LocalState{PGAddr: "p", HTTPAddr: "h", Offsets: map[materialize.StoreID]int64{v0: 100}}
	old := newTestBalancer(t, local, nil, nil).JoinGroupMetadata(nil, nil, -1)

	local.Offsets = map[materialize.StoreID]int64{v0: 150, {View: "v@1", Partition: 1}: 5}
	b := newTestBalancer(t, local, nil, old)
	if got := b.JoinGroupMetadata(nil, nil, -1); !bytes.Equal(got, old) {
		t.Fatal("first join after restart did not reuse the previous metadata")
	}
	if got := b.JoinGroupMetadata(nil, nil, 3); bytes.Equal(got, old) {
		t.Fatal("a join with a generation reused the previous metadata")
	}

	for name, l := range map[string]LocalState{
		"state lost":      {PGAddr: "p", HTTPAddr: "h"},
		"state behind":    {PGAddr: "p", HTTPAddr: "h", Offsets: map[materialize.StoreID]int64{v0: 99}},
		"address changed": {PGAddr: "p2", HTTPAddr: "h", Offsets: map[materialize.StoreID]int64{v0: 100}},
	} {
		*local = l
		b := newTestBalancer(t, local, nil, old)
		got := b.JoinGroupMetadata(nil, nil, -1)
		m, err := DecodeGroupMetadata(got)
		if bytes.Equal(got, old) || err != nil || !maps.Equal(m.Offsets, l.Offsets) || m.PGAddr != l.PGAddr {
			t.Fatalf("%s: reused or wrong metadata: %+v %v", name, m, err)
		}
	}

	// RequestRebalance changes the metadata, so that a follower's rejoin
	// makes the broker rebalance.
	*local = LocalState{PGAddr: "p", HTTPAddr: "h"}
	b = newTestBalancer(t, local, nil, nil)
	before := b.JoinGroupMetadata(nil, nil, 1)
	b.RequestRebalance("test")
	if after := b.JoinGroupMetadata(nil, nil, 1); bytes.Equal(before, after) {
		t.Fatal("RequestRebalance did not change the join metadata")
	}
}

// TestBalancerStale covers what Kafka (not kfake) does after a static
// restart with changed metadata: it hands back the assignment computed
// from the old metadata without rebalancing. The node asks for a
// rebalance only if that gives it an active it cannot run.
func TestBalancerStale(t *testing.T) {
	v0, v1 := materialize.StoreID{View: "v@1", Partition: 0}, materialize.StoreID{View: "v@1", Partition: 1}
	tasks := []Task{{ID: v0, EndOffset: 50000}, {ID: v1, EndOffset: 50000}}
	local := &LocalState{Offsets: map[materialize.StoreID]int64{v0: 50000}}
	b := newTestBalancer(t, local, tasks, nil)
	meta := b.JoinGroupMetadata(nil, nil, -1)
	asg := func(dig uint64, active ...materialize.StoreID) Assignment {
		return Assignment{Nodes: map[string]NodeTasks{"n1": {Active: active, JoinDigest: dig}}}
	}
	for _, tc := range []struct {
		name  string
		a     Assignment
		stale bool
	}{
		{"computed from our metadata", asg(digest(meta), v0, v1), false},
		{"stale, state still fine", asg(12345, v0), false},
		{"stale, active without state", asg(12345, v0, v1), true},
		{"not in the map", Assignment{Nodes: map[string]NodeTasks{}}, true},
	} {
		if got := b.stale(tc.a); (got != "") != tc.stale {
			t.Errorf("%s: stale=%q", tc.name, got)
		}
	}
}
