package ha

import (
	"cmp"
	"slices"

	"github.com/basindb/basin/materialize"
)

// AssignInput is everything the leader's assignment depends on.
type AssignInput struct {
	// Generation and Leader are copied into the result.
	Generation int32
	Leader     string
	// Members are the group's members. Order does not matter; a
	// duplicated or empty id is ignored after its first occurrence.
	Members []Member
	// Tasks are the tasks to assign. Order does not matter; duplicates
	// merge (largest standby count and end offset win).
	Tasks []Task
	// Previous is the assignment of the previous generation, known to
	// every node. Nil for a leader that has none (a fresh process): the
	// members' Offsets stand in for it (see doc.go).
	Previous *Assignment
	// Config holds the settings; zero fields take their defaults.
	Config Config
}

// Assign computes the assignment of in.Tasks to in.Members. It is a pure,
// deterministic function of its input: map iteration order and the order
// of Members and Tasks do not affect the result.
//
// The rules, in order of precedence:
//
//   - Every task has exactly one active (when there is any member) and
//     min(Standbys, members-1) standbys, all on distinct nodes; missing
//     standbys are reported in Shortfall.
//   - A role moves to a node only once that node's replica is caught up
//     (lag ≤ AcceptableRecoveryLag). Until then the role stays on a
//     caught-up node (for an active: the previous active, else a
//     caught-up standby, which is promoted) and the new node gets a
//     warm-up, at most MaxWarmups in the cluster.
//   - When no member is caught up for a task, its active goes to the
//     member with the least lag; ties prefer the balanced target, then
//     the previous active, then the node with fewer actives, then the
//     smaller node id.
//   - Within those limits the assignment is sticky (a task stays where
//     it was) and balanced: active counts per node differ by at most one,
//     and so do active+standby counts, once every replica is caught up.
//
// See doc.go for how the balanced target is computed and why it
// converges.
func Assign(in AssignInput) Assignment {
	cfg := in.Config
	if cfg.AcceptableRecoveryLag <= 0 {
		cfg.AcceptableRecoveryLag = DefaultAcceptableRecoveryLag
	}
	if cfg.MaxWarmups <= 0 {
		cfg.MaxWarmups = DefaultMaxWarmups
	}
	a := newAssigner(in, cfg)
	out := Assignment{
		Generation: in.Generation,
		Leader:     in.Leader,
		Nodes:      make(map[string]NodeTasks, len(a.members)),
		Shortfall:  make(map[materialize.StoreID]int),
	}
	for _, m := range a.members {
		out.Nodes[m.ID] = NodeTasks{PGAddr: m.PGAddr, HTTPAddr: m.HTTPAddr}
	}
	if a.n == 0 {
		for _, t := range a.tasks {
			if t.Standbys > 0 {
				out.Shortfall[t.ID] = t.Standbys
			}
		}
		return out
	}
	a.activeTargets()
	a.standbyTargets()
	a.rebalance()
	a.actives()
	a.standbysAndWarmups()

	nodes := make([]NodeTasks, a.n)
	for i, m := range a.members {
		nodes[i] = out.Nodes[m.ID]
	}
	for j, t := range a.tasks {
		nodes[a.active[j]].Active = append(nodes[a.active[j]].Active, t.ID)
		for _, i := range a.standby[j] {
			nodes[i].Standby = append(nodes[i].Standby, t.ID)
		}
		for _, i := range a.warmup[j] {
			nodes[i].Warmup = append(nodes[i].Warmup, t.ID)
		}
		if short := t.Standbys - len(a.standby[j]); short > 0 {
			out.Shortfall[t.ID] = short
		}
	}
	// Tasks are visited in sorted order, so the lists are sorted.
	for i, m := range a.members {
		out.Nodes[m.ID] = nodes[i]
	}
	out.NeedsFollowUp = a.followUp
	return out
}

// assigner holds one run of Assign. Members and tasks are referred to by
// their index in the sorted members and tasks slices; -1 is "none".
type assigner struct {
	cfg     Config
	members []Member
	tasks   []Task
	n       int

	lag         [][]int64 // [task][member]
	prevActive  []int
	prevStandby [][]bool // [task][member]
	prevWarmup  [][]bool // [task][member]
	want        []int    // standbys to place: min(Standbys, n-1)

	tActive  []int   // balanced target active
	tStandby [][]int // balanced target standbys
	active   []int   // actual active
	standby  [][]int // actual standbys
	warmup   [][]int
	followUp bool
}

func newAssigner(in AssignInput, cfg Config) *assigner {
	a := &assigner{cfg: cfg}

	// Members, sorted and deduplicated.
	ms := slices.Clone(in.Members)
	slices.SortStableFunc(ms, func(x, y Member) int { return cmp.Compare(x.ID, y.ID) })
	byID := make(map[string]int, len(ms))
	for _, m := range ms {
		if _, dup := byID[m.ID]; dup || m.ID == "" {
			continue
		}
		byID[m.ID] = len(a.members)
		a.members = append(a.members, m)
	}
	a.n = len(a.members)

	// Tasks, sorted and merged.
	ts := slices.Clone(in.Tasks)
	slices.SortFunc(ts, func(x, y Task) int { return x.ID.Compare(y.ID) })
	for _, t := range ts {
		t.Standbys = max(t.Standbys, 0)
		if k := len(a.tasks) - 1; k >= 0 && a.tasks[k].ID == t.ID {
			a.tasks[k].Standbys = max(a.tasks[k].Standbys, t.Standbys)
			a.tasks[k].EndOffset = max(a.tasks[k].EndOffset, t.EndOffset)
			continue
		}
		a.tasks = append(a.tasks, t)
	}
	taskIdx := make(map[materialize.StoreID]int, len(a.tasks))
	for j, t := range a.tasks {
		taskIdx[t.ID] = j
	}

	T, n := len(a.tasks), a.n
	a.lag = make([][]int64, T)
	a.prevActive = make([]int, T)
	a.prevStandby = make([][]bool, T)
	a.prevWarmup = make([][]bool, T)
	a.want = make([]int, T)
	a.tActive = make([]int, T)
	a.tStandby = make([][]int, T)
	a.active = make([]int, T)
	a.standby = make([][]int, T)
	a.warmup = make([][]int, T)
	has := make([][]bool, T)
	for j, t := range a.tasks {
		a.prevActive[j], a.tActive[j], a.active[j] = -1, -1, -1
		a.prevStandby[j] = make([]bool, n)
		a.prevWarmup[j] = make([]bool, n)
		a.want[j] = min(t.Standbys, max(n-1, 0))
		has[j] = make([]bool, n)
		offs := make([]int64, n)
		end := t.EndOffset
		for i, m := range a.members {
			if off, ok := m.Offsets[t.ID]; ok {
				has[j][i], offs[i] = true, max(off, 0)
				end = max(end, offs[i])
			}
		}
		end = max(end, 0)
		a.lag[j] = make([]int64, n)
		for i := range a.members {
			// No state is a full restore: lag end - 0.
			a.lag[j][i] = end - offs[i]
		}
	}

	// The previous assignment, restricted to current members and tasks.
	// A node listing a task in two roles keeps the stronger one; a task
	// listed active on two nodes keeps the first in node order and the
	// other as a standby candidate.
	if p := in.Previous; p != nil {
		for _, id := range p.nodeIDs() {
			i, ok := byID[id]
			if !ok {
				continue
			}
			nt := p.Nodes[id]
			for _, t := range nt.Active {
				if j, ok := taskIdx[t]; ok {
					if a.prevActive[j] < 0 {
						a.prevActive[j] = i
					} else {
						a.prevStandby[j][i] = true
					}
				}
			}
			for _, t := range nt.Standby {
				if j, ok := taskIdx[t]; ok && a.prevActive[j] != i {
					a.prevStandby[j][i] = true
				}
			}
			for _, t := range nt.Warmup {
				if j, ok := taskIdx[t]; ok && a.prevActive[j] != i && !a.prevStandby[j][i] {
					a.prevWarmup[j][i] = true
				}
			}
		}
	}
	// A task no live member held (no previous map, a new task, or every
	// holder gone) takes its previous holders from the members' state:
	// the member with the least lag as active, the next ones as
	// standbys. This is what lets a fresh leader, which has no previous
	// map, keep tasks where their state is.
	for j := range a.tasks {
		if a.prevActive[j] >= 0 || slices.Contains(a.prevStandby[j], true) || slices.Contains(a.prevWarmup[j], true) {
			continue
		}
		var holders []int
		for i := range a.members {
			if has[j][i] {
				holders = append(holders, i)
			}
		}
		slices.SortFunc(holders, func(x, y int) int {
			return cmp.Or(cmp.Compare(a.lag[j][x], a.lag[j][y]), cmp.Compare(x, y))
		})
		for k, i := range holders {
			switch {
			case k == 0:
				a.prevActive[j] = i
			case k <= a.want[j]:
				a.prevStandby[j][i] = true
			}
		}
	}
	return a
}

func (a *assigner) caught(j, i int) bool { return a.lag[j][i] <= a.cfg.AcceptableRecoveryLag }

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// activeTargets computes the balanced target active of every task: each
// node gets a quota of floor(T/n) or ceil(T/n) tasks; a task stays with
// its previous active while that node is within its quota; the rest go to
// nodes below their quota, preferring caught-up replicas. The target
// ignores catch-up for the final say: actives() decides whether a move
// can happen now.
func (a *assigner) activeTargets() {
	T, n := len(a.tasks), a.n
	base, extra := T/n, T%n
	owned := make([][]int, n)
	for j := range a.tasks {
		if p := a.prevActive[j]; p >= 0 {
			owned[p] = append(owned[p], j)
		}
	}
	// The extra (ceil) quotas go to the nodes that already hold the most,
	// so a balanced previous assignment is a fixed point.
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(x, y int) int {
		return cmp.Or(cmp.Compare(len(owned[y]), len(owned[x])), cmp.Compare(x, y))
	})
	quota := make([]int, n)
	for k, i := range order {
		quota[i] = base + b2i(k < extra)
	}

	// Over-quota nodes release tasks. Released first: tasks with a
	// warm-up in progress elsewhere (the move the last assignment
	// started), then tasks some node with room is caught up on (a cheap
	// move), then in task order. This keeps the target stable from one
	// rebalance to the next, so warm-ups complete instead of chasing a
	// moving target.
	assigned := make([]int, n)
	var free []int
	for i := range n {
		keep := owned[i]
		if over := len(keep) - quota[i]; over > 0 {
			key := func(j int) (int, int) {
				warm, cheap := 1, 1
				for k := range n {
					if k == i {
						continue
					}
					if a.prevWarmup[j][k] {
						warm = 0
					}
					if a.caught(j, k) && len(owned[k]) < quota[k] {
						cheap = 0
					}
				}
				return warm, cheap
			}
			slices.SortStableFunc(keep, func(x, y int) int {
				wx, cx := key(x)
				wy, cy := key(y)
				return cmp.Or(cmp.Compare(wx, wy), cmp.Compare(cx, cy), cmp.Compare(x, y))
			})
			free = append(free, keep[:over]...)
			keep = keep[over:]
		}
		for _, j := range keep {
			a.tActive[j] = i
		}
		assigned[i] = len(keep)
	}
	for j := range a.tasks {
		if a.prevActive[j] < 0 {
			free = append(free, j)
		}
	}

	// Place the free tasks on nodes with room. Tasks with few caught-up
	// candidates go first so they get them; tasks with none go last.
	cands := make(map[int]int, len(free))
	for _, j := range free {
		for i := range n {
			if assigned[i] < quota[i] && a.caught(j, i) {
				cands[j]++
			}
		}
	}
	slices.SortFunc(free, func(x, y int) int {
		return cmp.Or(cmp.Compare(b2i(cands[x] == 0), b2i(cands[y] == 0)), cmp.Compare(cands[x], cands[y]), cmp.Compare(x, y))
	})
	for _, j := range free {
		best := -1
		for i := range n {
			if assigned[i] >= quota[i] {
				continue
			}
			if best < 0 || a.fillLess(j, i, best, assigned) {
				best = i
			}
		}
		a.tActive[j] = best
		assigned[best]++
	}
}

// fillLess orders candidate nodes for a free active: caught up first,
// then a warm-up of the last assignment, then a previous standby, then
// least lag, then least loaded, then node order.
func (a *assigner) fillLess(j, x, y int, load []int) bool {
	return cmp.Or(
		cmp.Compare(b2i(!a.caught(j, x)), b2i(!a.caught(j, y))),
		cmp.Compare(b2i(!a.prevWarmup[j][x]), b2i(!a.prevWarmup[j][y])),
		cmp.Compare(b2i(!a.prevStandby[j][x]), b2i(!a.prevStandby[j][y])),
		cmp.Compare(a.lag[j][x], a.lag[j][y]),
		cmp.Compare(load[x], load[y]),
		cmp.Compare(x, y),
	) < 0
}

// actives decides each task's actual active. The target gets it if it is
// caught up. Otherwise a caught-up member keeps or takes it: the previous
// active, else a previous standby (a promotion: this is failover), else
// any caught-up member. When no member is caught up, the one with the
// least lag gets it.
func (a *assigner) actives() {
	count := make([]int, a.n)
	for j := range a.tasks {
		x := a.tActive[j]
		pick := x
		if !a.caught(j, x) {
			pick = -1
			for i := range a.n {
				if !a.caught(j, i) {
					continue
				}
				if pick < 0 || cmp.Or(
					cmp.Compare(b2i(a.prevActive[j] != i), b2i(a.prevActive[j] != pick)),
					cmp.Compare(b2i(!a.prevStandby[j][i]), b2i(!a.prevStandby[j][pick])),
					cmp.Compare(a.lag[j][i], a.lag[j][pick]),
					cmp.Compare(count[i], count[pick]),
					cmp.Compare(i, pick),
				) < 0 {
					pick = i
				}
			}
			if pick < 0 {
				for i := range a.n {
					if pick < 0 || cmp.Or(
						cmp.Compare(a.lag[j][i], a.lag[j][pick]),
						cmp.Compare(b2i(i != x), b2i(pick != x)),
						cmp.Compare(b2i(a.prevActive[j] != i), b2i(a.prevActive[j] != pick)),
						cmp.Compare(count[i], count[pick]),
						cmp.Compare(i, pick),
					) < 0 {
						pick = i
					}
				}
			}
		}
		a.active[j] = pick
		count[pick]++
	}
}

// standbyTargets computes each task's balanced target standbys: distinct
// nodes other than the target active, with active+standby counts per
// node within one of each other. Previous standbys (and a previous active
// that lost its active role) are kept while their node is within quota;
// the remaining slots go to nodes with room, preferring caught-up ones.
// rebalance then fixes what distinctness kept the greedy fill from
// balancing.
func (a *assigner) standbyTargets() {
	n := a.n
	R := 0
	for j := range a.tasks {
		R += 1 + a.want[j]
	}
	base, extra := R/n, R%n
	load := make([]int, n)
	for j := range a.tasks {
		load[a.tActive[j]]++
	}
	atCeil := 0
	for i := range n {
		if extra > 0 && load[i] == base+1 {
			atCeil++
		}
	}
	room := func(i int) bool { return load[i] < base || (load[i] == base && atCeil < extra) }
	add := func(j, i int) {
		a.tStandby[j] = append(a.tStandby[j], i)
		load[i]++
		if extra > 0 && load[i] == base+1 {
			atCeil++
		}
	}
	holds := func(j, i int) bool { return a.tActive[j] == i || slices.Contains(a.tStandby[j], i) }

	// Keep sticky standbys.
	for j := range a.tasks {
		var cands []int
		for i := range n {
			if i != a.tActive[j] && (a.prevStandby[j][i] || a.prevActive[j] == i) {
				cands = append(cands, i)
			}
		}
		slices.SortFunc(cands, func(x, y int) int {
			return cmp.Or(
				cmp.Compare(b2i(!a.caught(j, x)), b2i(!a.caught(j, y))),
				cmp.Compare(b2i(!a.prevStandby[j][x]), b2i(!a.prevStandby[j][y])),
				cmp.Compare(a.lag[j][x], a.lag[j][y]),
				cmp.Compare(x, y),
			)
		})
		for _, i := range cands {
			if len(a.tStandby[j]) < a.want[j] && room(i) {
				add(j, i)
			}
		}
	}

	// Fill the remaining slots, tasks missing the most first.
	var need []int
	for j := range a.tasks {
		if len(a.tStandby[j]) < a.want[j] {
			need = append(need, j)
		}
	}
	slices.SortStableFunc(need, func(x, y int) int {
		return cmp.Compare(a.want[y]-len(a.tStandby[y]), a.want[x]-len(a.tStandby[x]))
	})
	for _, j := range need {
		for len(a.tStandby[j]) < a.want[j] {
			best := -1
			for i := range n {
				if holds(j, i) {
					continue
				}
				if best < 0 || cmp.Or(
					cmp.Compare(b2i(!room(i)), b2i(!room(best))),
					cmp.Compare(b2i(!a.caught(j, i)), b2i(!a.caught(j, best))),
					cmp.Compare(b2i(!a.prevWarmup[j][i]), b2i(!a.prevWarmup[j][best])),
					cmp.Compare(a.lag[j][i], a.lag[j][best]),
					cmp.Compare(load[i], load[best]),
					cmp.Compare(i, best),
				) < 0 {
					best = i
				}
			}
			add(j, best)
		}
	}

}

// rebalance evens out active+standby counts where the greedy standby fill
// could not, because a task's replicas must be on distinct nodes. For a
// pair of nodes whose totals differ by two or more it applies the first
// of these moves that exists:
//
//	(a) a standby of the loaded node moves to the light node;
//	(b) an active moves from the loaded node to the light node, if the
//	    loaded node has more actives (so active counts stay within one);
//	(c) an active moves from the loaded node to the light node and, on a
//	    task the light node is active for and the loaded node a standby
//	    of, the two swap roles: totals change, active counts do not.
//
// Each move lowers the sum of squared totals and keeps active counts
// within one, so this terminates.
func (a *assigner) rebalance() {
	n := a.n
	act, tot := make([]int, n), make([]int, n)
	for j := range a.tasks {
		act[a.tActive[j]]++
		tot[a.tActive[j]]++
		for _, i := range a.tStandby[j] {
			tot[i]++
		}
	}
	holds := func(j, i int) bool { return a.tActive[j] == i || slices.Contains(a.tStandby[j], i) }
	// better orders candidate tasks for a move to lo: caught up first,
	// then least lag, then task order.
	better := func(j, best, lo int) bool {
		return best < 0 || cmp.Or(
			cmp.Compare(b2i(!a.caught(j, lo)), b2i(!a.caught(best, lo))),
			cmp.Compare(a.lag[j][lo], a.lag[best][lo]),
		) < 0
	}
	try := func(hi, lo int) bool {
		// (a)
		best := -1
		for j := range a.tasks {
			if slices.Contains(a.tStandby[j], hi) && !holds(j, lo) && better(j, best, lo) {
				best = j
			}
		}
		if best >= 0 {
			a.tStandby[best][slices.Index(a.tStandby[best], hi)] = lo
			tot[hi]--
			tot[lo]++
			return true
		}
		// (b) and (c) both move an active hi → lo.
		for j := range a.tasks {
			if a.tActive[j] == hi && !holds(j, lo) && better(j, best, lo) {
				best = j
			}
		}
		if best < 0 {
			return false
		}
		if act[hi] > act[lo] {
			a.tActive[best] = lo
			act[hi]--
			act[lo]++
			tot[hi]--
			tot[lo]++
			return true
		}
		for j := range a.tasks {
			if a.tActive[j] != lo {
				continue
			}
			if k := slices.Index(a.tStandby[j], hi); k >= 0 {
				a.tActive[best] = lo
				a.tActive[j] = hi
				a.tStandby[j][k] = lo
				tot[hi]--
				tot[lo]++
				return true
			}
		}
		return false
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	for {
		slices.SortFunc(order, func(x, y int) int { return cmp.Or(cmp.Compare(tot[y], tot[x]), cmp.Compare(x, y)) })
		moved := false
	search:
		for _, hi := range order {
			for k := n - 1; k >= 0 && tot[hi]-tot[order[k]] >= 2; k-- {
				if try(hi, order[k]) {
					moved = true
					break search
				}
			}
		}
		if !moved {
			return
		}
	}
}

// standbysAndWarmups turns the targets into actual standbys and picks the
// warm-ups. A target standby that is not caught up yields its slot to a
// caught-up member that holds nothing of the task (a previous holder
// first), and gets a warm-up instead; so does a target active that is not
// the actual active. When the actual active is itself one of the target
// standbys (the previous active keeps running while its successor warms
// up), the target active takes its standby slot.
func (a *assigner) standbysAndWarmups() {
	type want struct {
		j, i     int
		cont     bool // the previous assignment had this warm-up
		isActive bool // for an active move
	}
	var wants []want
	pending := false
	for j := range a.tasks {
		act, x := a.active[j], a.tActive[j]
		pending = pending || act != x
		list := slices.Clone(a.tStandby[j])
		if act != x {
			if k := slices.Index(list, act); k >= 0 {
				list[k] = x
			}
		}
		taken := make([]bool, a.n)
		taken[act] = true
		for _, y := range list {
			taken[y] = true
		}
		var wantActive bool
		for _, y := range list {
			if a.caught(j, y) {
				a.standby[j] = append(a.standby[j], y)
				continue
			}
			h := -1
			for i := range a.n {
				if taken[i] || !a.caught(j, i) {
					continue
				}
				if h < 0 || cmp.Or(
					cmp.Compare(b2i(!a.prevStandby[j][i] && a.prevActive[j] != i), b2i(!a.prevStandby[j][h] && a.prevActive[j] != h)),
					cmp.Compare(a.lag[j][i], a.lag[j][h]),
					cmp.Compare(i, h),
				) < 0 {
					h = i
				}
			}
			if h < 0 {
				a.standby[j] = append(a.standby[j], y)
				continue
			}
			taken[h] = true
			a.standby[j] = append(a.standby[j], h)
			taken[y] = false
			if y == x {
				wantActive = true
			} else {
				wants = append(wants, want{j: j, i: y, cont: a.prevWarmup[j][y]})
			}
		}
		if act != x && !slices.Contains(a.standby[j], x) {
			wantActive = true
		}
		if wantActive {
			wants = append(wants, want{j: j, i: x, cont: a.prevWarmup[j][x], isActive: true})
		}
		slices.Sort(a.standby[j])
	}
	// A move is pending while the active is not its target (even when
	// the target is already a standby and needs no warm-up) or a
	// standby slot was held back for a warm-up.
	a.followUp = pending || len(wants) > 0
	// Warm-ups already in progress first, so they finish; then active
	// moves, then standby moves.
	slices.SortFunc(wants, func(x, y want) int {
		return cmp.Or(
			cmp.Compare(b2i(!x.cont), b2i(!y.cont)),
			cmp.Compare(b2i(!x.isActive), b2i(!y.isActive)),
			cmp.Compare(x.j, y.j),
			cmp.Compare(x.i, y.i),
		)
	})
	for _, w := range wants[:min(len(wants), a.cfg.MaxWarmups)] {
		a.warmup[w.j] = append(a.warmup[w.j], w.i)
	}
	for j := range a.warmup {
		slices.Sort(a.warmup[j])
	}
}
