package ha

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/basindb/basin/materialize"
)

// cluster is a simulated cluster for property tests: nodes with the state
// they have on disk, tasks with changelog end offsets, and the current
// assignment.
type cluster struct {
	cfg     Config
	tasks   []Task
	nodes   []string
	offsets map[string]map[materialize.StoreID]int64
	prev    *Assignment
	gen     int32
}

func (c *cluster) members() []Member {
	var ms []Member
	for _, id := range c.nodes {
		ms = append(ms, Member{ID: id, PGAddr: id + ":5433", HTTPAddr: id + ":8433", Offsets: c.offsets[id]})
	}
	return ms
}

func (c *cluster) input() AssignInput {
	c.gen++
	return AssignInput{Generation: c.gen, Leader: "lead", Members: c.members(), Tasks: c.tasks, Previous: c.prev, Config: c.cfg}
}

// assign runs Assign, checks the invariants and makes the result the
// previous assignment.
func (c *cluster) assign(t *testing.T) Assignment {
	t.Helper()
	in := c.input()
	out := Assign(in)
	checkInvariants(t, in, out)
	c.prev = &out
	return out
}

// catchUp brings every replica of the current assignment (active,
// standby, warm-up) to the changelog end, as if they had all caught up.
func (c *cluster) catchUp() {
	end := make(map[materialize.StoreID]int64)
	for _, t := range c.tasks {
		end[t.ID] = t.EndOffset
	}
	for id, nt := range c.prev.Nodes {
		if c.offsets[id] == nil {
			c.offsets[id] = make(map[materialize.StoreID]int64)
		}
		for _, l := range [][]materialize.StoreID{nt.Active, nt.Standby, nt.Warmup} {
			for _, t := range l {
				c.offsets[id][t] = end[t]
			}
		}
	}
}

// advance adds d records to every changelog; replicas that do not catch
// up fall behind.
func (c *cluster) advance(d int64) {
	for i := range c.tasks {
		c.tasks[i].EndOffset += d
	}
}

func (c *cluster) addNode(id string) {
	c.nodes = append(c.nodes, id)
	if c.offsets[id] == nil {
		c.offsets[id] = make(map[materialize.StoreID]int64)
	}
}

func (c *cluster) removeNode(id string) {
	c.nodes = slices.DeleteFunc(c.nodes, func(n string) bool { return n == id })
}

// converge iterates assign → catch up until an assignment needs no
// follow-up, and returns the number of rounds. Every replica of the final
// assignment is caught up.
func (c *cluster) converge(t *testing.T, maxRounds int) int {
	t.Helper()
	for round := 1; ; round++ {
		out := c.assign(t)
		c.catchUp()
		if !out.NeedsFollowUp {
			return round
		}
		if round >= maxRounds {
			t.Fatalf("no convergence after %d rounds:\n%s", round, dump(out))
		}
	}
}

func dump(a Assignment) string {
	var b strings.Builder
	for _, id := range a.NodeIDs() {
		nt := a.Nodes[id]
		fmt.Fprintf(&b, "%s: active=%v standby=%v warmup=%v\n", id, nt.Active, nt.Standby, nt.Warmup)
	}
	fmt.Fprintf(&b, "shortfall=%v follow-up=%v\n", a.Shortfall, a.NeedsFollowUp)
	return b.String()
}

type lagInfo struct {
	lag    map[materialize.StoreID]map[string]int64
	caught map[materialize.StoreID]map[string]bool
}

func lags(in AssignInput) lagInfo {
	cfg := in.Config
	_ = cfg.Validate()
	li := lagInfo{lag: map[materialize.StoreID]map[string]int64{}, caught: map[materialize.StoreID]map[string]bool{}}
	for _, t := range in.Tasks {
		end := max(t.EndOffset, 0)
		for _, m := range in.Members {
			if off, ok := m.Offsets[t.ID]; ok {
				end = max(end, off)
			}
		}
		li.lag[t.ID] = map[string]int64{}
		li.caught[t.ID] = map[string]bool{}
		for _, m := range in.Members {
			off := m.Offsets[t.ID]
			li.lag[t.ID][m.ID] = end - max(off, 0)
			li.caught[t.ID][m.ID] = end-max(off, 0) <= cfg.AcceptableRecoveryLag
		}
	}
	return li
}

// checkInvariants checks what every assignment must satisfy, whatever the
// input.
func checkInvariants(t *testing.T, in AssignInput, out Assignment) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%s\n%s", fmt.Sprintf(format, args...), dump(out))
	}
	if err := out.Check(); err != nil {
		fail("check: %v", err)
	}
	cfg := in.Config
	_ = cfg.Validate()
	n := len(in.Members)
	if len(out.Nodes) != n {
		fail("%d nodes in output, %d members", len(out.Nodes), n)
	}
	idx := out.ByTask()
	li := lags(in)
	warmups := 0
	var prevIdx map[materialize.StoreID]Replicas
	if in.Previous != nil {
		prevIdx = in.Previous.ByTask()
	}
	for _, task := range in.Tasks {
		r := idx[task.ID]
		if r.Active == "" {
			fail("task %s has no active", task.ID)
		}
		want := min(task.Standbys, n-1)
		if len(r.Standbys) != want {
			fail("task %s: %d standbys, want %d", task.ID, len(r.Standbys), want)
		}
		if short := task.Standbys - want; out.Shortfall[task.ID] != short {
			fail("task %s: shortfall %d, want %d", task.ID, out.Shortfall[task.ID], short)
		}
		warmups += len(r.Warmups)
		// Caught-up replicas: as many as possible.
		caughtMembers, caughtReplicas := 0, 0
		for _, m := range in.Members {
			if li.caught[task.ID][m.ID] {
				caughtMembers++
			}
		}
		if li.caught[task.ID][r.Active] {
			caughtReplicas++
		}
		for _, s := range r.Standbys {
			if li.caught[task.ID][s] {
				caughtReplicas++
			}
		}
		if wantC := min(caughtMembers, 1+want); caughtReplicas != wantC {
			fail("task %s: %d caught-up replicas, want %d (of %d caught-up members)", task.ID, caughtReplicas, wantC, caughtMembers)
		}
		// The active moves only to a caught-up node, unless none is.
		if in.Previous != nil {
			prev := prevIdx[task.ID]
			if _, alive := out.Nodes[prev.Active]; alive && prev.Active != r.Active && !li.caught[task.ID][r.Active] && caughtMembers > 0 {
				fail("task %s moved from %s to %s, not caught up", task.ID, prev.Active, r.Active)
			}
		}
	}
	if n > 0 && len(uniqueTasks(in.Tasks)) != len(idx) {
		fail("%d tasks in output, %d in input", len(idx), len(uniqueTasks(in.Tasks)))
	}
	if warmups > cfg.MaxWarmups {
		fail("%d warm-ups, max %d", warmups, cfg.MaxWarmups)
	}
	if warmups > 0 && !out.NeedsFollowUp {
		fail("warm-ups without follow-up")
	}

	// Determinism: shuffled input, same output.
	sh := in
	sh.Members = slices.Clone(in.Members)
	sh.Tasks = slices.Clone(in.Tasks)
	rand.Shuffle(len(sh.Members), func(i, j int) { sh.Members[i], sh.Members[j] = sh.Members[j], sh.Members[i] })
	rand.Shuffle(len(sh.Tasks), func(i, j int) { sh.Tasks[i], sh.Tasks[j] = sh.Tasks[j], sh.Tasks[i] })
	if again := Assign(sh); !again.Equal(&out) {
		fail("not deterministic under shuffled input:\n%s", dump(again))
	}
}

func uniqueTasks(ts []Task) map[materialize.StoreID]bool {
	m := map[materialize.StoreID]bool{}
	for _, t := range ts {
		m[t.ID] = true
	}
	return m
}

// checkBalanced checks the counts of a converged assignment.
func checkBalanced(t *testing.T, out Assignment) {
	t.Helper()
	minA, maxA, minT, maxT := 1<<30, -1, 1<<30, -1
	for _, nt := range out.Nodes {
		a, tot := len(nt.Active), len(nt.Active)+len(nt.Standby)
		minA, maxA = min(minA, a), max(maxA, a)
		minT, maxT = min(minT, tot), max(maxT, tot)
		if len(nt.Warmup) > 0 {
			t.Fatalf("converged assignment has warm-ups:\n%s", dump(out))
		}
	}
	if maxA-minA > 1 || maxT-minT > 1 {
		t.Fatalf("not balanced: actives %d..%d, totals %d..%d\n%s", minA, maxA, minT, maxT, dump(out))
	}
}

func randomCluster(r *rand.Rand) *cluster {
	c := &cluster{offsets: map[string]map[materialize.StoreID]int64{}}
	if r.IntN(3) == 0 {
		c.cfg = Config{AcceptableRecoveryLag: int64(1 + r.IntN(20000)), MaxWarmups: 1 + r.IntN(4)}
	}
	nNodes := 1 + r.IntN(7)
	for i := range nNodes {
		c.addNode(fmt.Sprintf("n%d", i))
	}
	nViews := 1 + r.IntN(20)
	for v := range nViews {
		parts := 1 + r.IntN(16)
		sb := r.IntN(4)
		for p := range parts {
			c.tasks = append(c.tasks, Task{ID: materialize.StoreID{View: fmt.Sprintf("v%d@%d", v, v+1), Partition: int32(p)}, Standbys: sb, EndOffset: r.Int64N(100000)})
		}
	}
	return c
}

// randomState gives nodes random state and, sometimes, a random previous
// assignment (which need not be valid).
func randomState(r *rand.Rand, c *cluster) {
	for _, id := range c.nodes {
		for _, t := range c.tasks {
			if r.IntN(3) == 0 {
				c.offsets[id][t.ID] = r.Int64N(t.EndOffset + 1)
			}
		}
	}
	if r.IntN(2) == 0 {
		prev := &Assignment{Nodes: map[string]NodeTasks{}}
		ids := append(slices.Clone(c.nodes), "gone1", "gone2")
		for _, t := range c.tasks {
			if r.IntN(10) == 0 {
				continue
			}
			for k, id := range ids {
				if r.IntN(len(ids)) == 0 || k == 0 && r.IntN(2) == 0 {
					nt := prev.Nodes[id]
					switch r.IntN(3) {
					case 0:
						nt.Active = append(nt.Active, t.ID)
					case 1:
						nt.Standby = append(nt.Standby, t.ID)
					default:
						nt.Warmup = append(nt.Warmup, t.ID)
					}
					prev.Nodes[id] = nt
				}
			}
		}
		c.prev = prev
	}
}

func TestAssignRandomInvariants(t *testing.T) {
	for seed := range uint64(400) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			r := rand.New(rand.NewPCG(seed, 1))
			c := randomCluster(r)
			randomState(r, c)
			c.assign(t)
		})
	}
}

// TestAssignConvergence starts from random state and checks that
// "assign → warm-ups catch up → assign" reaches a stable balanced state,
// then that membership changes keep the guarantees and converge again.
func TestAssignConvergence(t *testing.T) {
	seeds := uint64(60)
	if testing.Short() {
		seeds = 15
	}
	for seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			r := rand.New(rand.NewPCG(seed, 2))
			c := randomCluster(r)
			randomState(r, c)
			bound := convergenceBound(c)
			c.converge(t, bound)
			checkBalanced(t, *c.prev)
			checkFixedPoint(t, c)

			for step := range 5 {
				bound := convergenceBound(c)
				switch {
				case len(c.nodes) > 1 && r.IntN(2) == 0:
					checkRemove(t, c, c.nodes[r.IntN(len(c.nodes))])
				case len(c.nodes) < 7:
					checkAddCold(t, c, fmt.Sprintf("x%d", step))
					// The new node takes its share of replicas,
					// MaxWarmups at a time.
					bound = 4 + ceilDiv(ceilDiv(c.replicas(), len(c.nodes)), c.maxWarmups())
				}
				if r.IntN(3) == 0 {
					c.advance(r.Int64N(3 * c.lagBound()))
				}
				c.converge(t, bound)
				checkBalanced(t, *c.prev)
				checkFixedPoint(t, c)
			}
		})
	}
}

func (c *cluster) lagBound() int64 {
	cfg := c.cfg
	_ = cfg.Validate()
	return cfg.AcceptableRecoveryLag
}

// convergenceBound is the number of rounds convergence may take from any
// state: every replica may need to move once, MaxWarmups at a time, plus
// slack.
func convergenceBound(c *cluster) int {
	return 3 + ceilDiv(c.replicas(), c.maxWarmups())
}

func (c *cluster) replicas() int {
	n := 0
	for _, t := range c.tasks {
		n += 1 + min(t.Standbys, len(c.nodes)-1)
	}
	return n
}

func (c *cluster) maxWarmups() int {
	cfg := c.cfg
	_ = cfg.Validate()
	return cfg.MaxWarmups
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// checkFixedPoint: with the same members and everyone caught up,
// re-running on the previous output changes nothing.
func checkFixedPoint(t *testing.T, c *cluster) {
	t.Helper()
	before := *c.prev
	after := c.assign(t)
	if !after.SameTasks(&before) || after.NeedsFollowUp {
		t.Fatalf("not a fixed point:\nbefore\n%s\nafter\n%s", dump(before), dump(after))
	}
}

// checkRemove kills a node: its actives go to caught-up standbys (or
// another caught-up node), never to a cold node.
func checkRemove(t *testing.T, c *cluster, id string) {
	t.Helper()
	c.catchUp()
	before := c.prev.ByTask()
	c.removeNode(id)
	out := c.assign(t)
	li := lags(AssignInput{Members: c.members(), Tasks: c.tasks, Config: c.cfg})
	for task, r := range out.ByTask() {
		prev := before[task]
		if prev.Active != id {
			continue
		}
		var caughtStandbys []string
		for _, s := range prev.Standbys {
			if s != id && li.caught[task][s] {
				caughtStandbys = append(caughtStandbys, s)
			}
		}
		if len(caughtStandbys) > 0 && !li.caught[task][r.Active] {
			t.Fatalf("task %s of dead %s went to %s, not to a caught-up standby %v\n%s", task, id, r.Active, caughtStandbys, dump(out))
		}
	}
	c.catchUp()
}

// checkAddCold adds a node without state: nothing active moves to it
// before it has caught up, it gets at most MaxWarmups warm-ups, and every
// task keeps a caught-up active.
func checkAddCold(t *testing.T, c *cluster, id string) {
	t.Helper()
	c.catchUp()
	cfg := c.cfg
	_ = cfg.Validate()
	// Make sure the new node is cold: every changelog is longer than the
	// acceptable lag.
	for i := range c.tasks {
		if c.tasks[i].EndOffset <= cfg.AcceptableRecoveryLag {
			c.advance(cfg.AcceptableRecoveryLag + 1)
			c.catchUp()
			break
		}
	}
	c.addNode(id)
	out := c.assign(t)
	nt := out.Nodes[id]
	if len(nt.Active) > 0 {
		t.Fatalf("cold node %s got actives %v\n%s", id, nt.Active, dump(out))
	}
	li := lags(AssignInput{Members: c.members(), Tasks: c.tasks, Config: c.cfg})
	for _, task := range nt.Standby {
		// The cold node may get a standby directly only when every
		// caught-up node already holds the task.
		caught := 0
		for _, m := range c.nodes {
			if li.caught[task][m] {
				caught++
			}
		}
		if caught >= 1+min(c.standbysOf(task), len(c.nodes)-1) {
			t.Fatalf("cold node %s got standby %s although %d nodes are caught up\n%s", id, task, caught, dump(out))
		}
	}
	if len(nt.Warmup) > cfg.MaxWarmups {
		t.Fatalf("cold node %s has %d warm-ups", id, len(nt.Warmup))
	}
	for task, r := range out.ByTask() {
		if !li.caught[task][r.Active] {
			t.Fatalf("task %s: active %s not caught up\n%s", task, r.Active, dump(out))
		}
	}
	c.catchUp()
}

func (c *cluster) standbysOf(id materialize.StoreID) int {
	for _, t := range c.tasks {
		if t.ID == id {
			return t.Standbys
		}
	}
	return 0
}

func TestAssignEdgeCases(t *testing.T) {
	v := func(p int32) materialize.StoreID { return materialize.StoreID{View: "v@1", Partition: p} }
	for _, tc := range []struct {
		name  string
		in    AssignInput
		check func(t *testing.T, out Assignment)
	}{
		{
			name: "no members",
			in:   AssignInput{Tasks: []Task{{ID: v(0), Standbys: 2}, {ID: v(1)}}},
			check: func(t *testing.T, out Assignment) {
				if len(out.Nodes) != 0 || out.Shortfall[v(0)] != 2 || len(out.Shortfall) != 1 {
					t.Fatalf("%+v", out)
				}
			},
		},
		{
			name: "no tasks",
			in:   AssignInput{Members: []Member{{ID: "a", PGAddr: "pa"}, {ID: "b"}}},
			check: func(t *testing.T, out Assignment) {
				if len(out.Nodes) != 2 || out.Nodes["a"].PGAddr != "pa" || out.NeedsFollowUp || len(out.Tasks()) != 0 {
					t.Fatalf("%+v", out)
				}
			},
		},
		{
			name: "duplicates merge",
			in: AssignInput{
				Members: []Member{{ID: "a"}, {ID: "b"}, {ID: "a", PGAddr: "ignored"}, {ID: ""}},
				Tasks:   []Task{{ID: v(0)}, {ID: v(0), Standbys: 1}, {ID: v(1), Standbys: -3}},
			},
			check: func(t *testing.T, out Assignment) {
				r := out.Replicas(v(0))
				if len(out.Nodes) != 2 || len(r.Standbys) != 1 || len(out.Replicas(v(1)).Standbys) != 0 || out.Nodes["a"].PGAddr != "" {
					t.Fatalf("%s", dump(out))
				}
			},
		},
		{
			name: "previous with a task active twice and roles doubled",
			in: AssignInput{
				Members: []Member{{ID: "a"}, {ID: "b"}, {ID: "c"}},
				Tasks:   []Task{{ID: v(0), Standbys: 1}},
				Previous: &Assignment{Nodes: map[string]NodeTasks{
					"a": {Active: []materialize.StoreID{v(0)}, Standby: []materialize.StoreID{v(0)}},
					"b": {Active: []materialize.StoreID{v(0)}, Warmup: []materialize.StoreID{v(0)}},
				}},
			},
			check: func(t *testing.T, out Assignment) {
				if r := out.Replicas(v(0)); r.Active != "a" || !slices.Equal(r.Standbys, []string{"b"}) {
					t.Fatalf("%s", dump(out))
				}
			},
		},
		{
			name: "offsets beyond a stale end offset",
			in: AssignInput{
				Members: []Member{{ID: "a", Offsets: map[materialize.StoreID]int64{v(0): 900000}}, {ID: "b", Offsets: map[materialize.StoreID]int64{v(0): 100}}},
				Tasks:   []Task{{ID: v(0), EndOffset: -1}},
			},
			check: func(t *testing.T, out Assignment) {
				if r := out.Replicas(v(0)); r.Active != "a" {
					t.Fatalf("the member with the most state should be active:\n%s", dump(out))
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := Assign(tc.in)
			if err := out.Check(); err != nil {
				t.Fatal(err)
			}
			ids := map[string]bool{}
			for _, m := range tc.in.Members {
				ids[m.ID] = m.ID != ""
			}
			if len(ids) > 0 && len(ids) == len(tc.in.Members) && !slices.Contains(slices.Collect(maps.Values(ids)), false) {
				checkInvariants(t, tc.in, out)
			}
			tc.check(t, out)
		})
	}
}
