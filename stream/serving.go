package stream

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/ha"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/kafka"
	"github.com/basindb/basin/materialize"
	"github.com/basindb/basin/planner"
)

// Serving: CREATE TABLE (a source table) and CREATE TABLE AS (a view)
// return once every partition of the new relation has a replica serving
// reads, somewhere in the cluster, that reflects its source as it was
// when the statement ran. The next SELECT, on any node, then neither
// fails for want of a replica nor reads a view still catching up with
// the records that were already there (partial sums).
//
// On a node alone the replicas are this node's tasks. In a cluster they
// are wherever the assignment puts them: this node's own as they are,
// the others' as their lag reports say (role, state, offset lag,
// position: what a node knows of its peers), from the Forwarder. A
// replica serves reads when its node is up and it runs: an active or
// standby that has restored (state RUNNING). It reflects the source as
// of the statement when its position covers the source's end offsets
// taken before the relation was created (the part the partition can
// show: needs), or, for a partition that reads its source partition
// directly, when it has no offset lag left: it started after the
// statement, so the end it measures its lag against is at least that
// one (a source whose last records are a transaction's markers never
// shows them in a position).
//
// The wait is bounded by servingWait, and by statement_timeout. Past it
// the statement fails with 55000 naming the partitions that have no
// serving replica yet and what their replicas are doing; the relation
// exists all the same. Partitions that serve but are still catching up
// (a long source) do not fail it: a NOTICE says how far behind they are,
// and reads report it in _offset_lag.

// servingWait bounds how long CREATE waits for its relation's replicas
// to serve reads: a cluster first rebalances (its members rejoin at their
// next heartbeat), then the tasks start, then the lag reports tell the
// node that they run.
const servingWait = 30 * time.Second

// ReplicaState is one replica of a partition on another node as this
// node knows it: from the assignment, the heartbeats and the node's last
// lag report.
type ReplicaState struct {
	Node string
	// Role is the assignment's: ha.RoleActive, ha.RoleStandby or
	// ha.RoleWarmup.
	Role ha.Role
	// Alive is false when heartbeats say the node is down.
	Alive bool
	// Reported is set when the node's last lag report lists the task;
	// State, OffsetLag and Position are that report's.
	Reported bool
	// State is "RUNNING" once the replica has restored, else
	// "RESTORING" or "ERROR" (TaskStatus.State).
	State     string
	OffsetLag int64
	Position  materialize.Position
}

// servingStatus is what a partition's replicas can do for reads.
type servingStatus struct {
	partition int32
	// serving is set when some replica serves reads; current when one
	// that does reflects the source as of the statement.
	serving, current bool
	// lag is the least offset lag of the serving replicas, for the
	// notice of a partition still catching up.
	lag int64
	// assigned is false while the cluster's assignment does not hold the
	// partition; replicas describes its replicas for the error.
	assigned bool
	replicas []ReplicaState
}

// judgeServing decides what partition p's replicas can do for reads:
// which serve (up and RUNNING) and whether one of those reflects want,
// the source offsets the partition can show (needs). direct is set for a
// partition that reads its source partition directly, whose offset lag
// then says as much (see the top of the file).
func judgeServing(p int32, replicas []ReplicaState, want materialize.Position, direct bool) servingStatus {
	st := servingStatus{partition: p, assigned: true, replicas: replicas}
	for _, r := range replicas {
		if !r.Alive || !r.Reported || r.State != "RUNNING" {
			continue
		}
		if !st.serving || r.OffsetLag < st.lag {
			st.lag = r.OffsetLag
		}
		st.serving = true
		if r.Position.Covers(want) || direct && r.OffsetLag == 0 {
			st.current = true
		}
	}
	return st
}

// localState describes this node's replica of a partition as a
// ReplicaState; false when the node holds none.
func localState(node string, ts *TaskState, now time.Time) (ReplicaState, bool) {
	if !ts.Held() {
		return ReplicaState{}, false
	}
	lag, _ := ts.Lag(now)
	r := ReplicaState{Node: node, Role: ts.heldRole(), Alive: true, Reported: true,
		State: "RESTORING", OffsetLag: lag, Position: ts.Position()}
	if ts.Restored() {
		r.State = "RUNNING"
	}
	if ts.LastError() != "" {
		r.State = "ERROR"
	}
	return r, true
}

// SourceEnds returns the position a new relation's replicas must reach to
// reflect its sources as they are now: the end offset of every partition
// of each topic.
func (rt *Runtime) SourceEnds(ctx context.Context, topics ...string) (materialize.Position, error) {
	pos := materialize.Position{}
	for _, topic := range topics {
		ends, err := kafka.EndOffsets(ctx, rt.adm, topic)
		if err != nil {
			return nil, err
		}
		pos[topic] = ends
	}
	return pos, nil
}

// WaitServing waits until every partition of relation name has a replica
// serving reads that reflects target (SourceEnds before the relation was
// created), up to servingWait or ctx (see the top of the file). It
// returns nil when every partition does; a NOTICE-worthy message when
// every partition serves but some are still catching up; an error with
// SQLSTATE 55000 when some partition has no serving replica in time, or
// ctx's error.
func (rt *Runtime) WaitServing(ctx context.Context, name string, target materialize.Position) (notice string, err error) {
	query, ok := rt.Query(name)
	if !ok {
		return "", nil // not materialized: nothing to wait for
	}
	deadline := time.NewTimer(servingWait)
	defer deadline.Stop()
	tick := time.NewTicker(servingPoll)
	defer tick.Stop()
	for {
		sts := rt.servingStatuses(query, target, time.Now())
		var waiting, behind []servingStatus
		for _, st := range sts {
			switch {
			case !st.serving:
				waiting = append(waiting, st)
			case !st.current:
				behind = append(behind, st)
			}
		}
		if len(waiting) == 0 && len(behind) == 0 {
			return "", nil
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-deadline.C:
			if len(waiting) > 0 {
				return "", notServingError(query.Rel, waiting)
			}
			return catchingUpNotice(query.Rel, behind), nil
		case <-tick.C:
		}
	}
}

// servingPoll is how often WaitServing looks again. What it waits for
// arrives with commits here and with lag reports from other nodes (once
// a second by default), neither of which it can wait on as one event.
const servingPoll = 20 * time.Millisecond

// servingStatuses judges every partition of query.
func (rt *Runtime) servingStatuses(query *PersistentQuery, target materialize.Position, now time.Time) []servingStatus {
	peers := rt.peers()
	direct := query.Plan == nil || query.Plan.Source.Kind != catalog.KindView && !slices.ContainsFunc(query.Plan.Positions,
		func(s planner.PositionSource) bool { return s.All })
	out := make([]servingStatus, 0, len(query.Tasks))
	for _, ts := range query.Tasks {
		p := ts.Partition
		var replicas []ReplicaState
		assigned := true
		if peers != nil {
			replicas, assigned = peers.Replicas(query.Rel, p)
		}
		if r, ok := localState(rt.opts.Node, ts, now); ok {
			replicas = append(replicas, r)
			assigned = true
		}
		st := judgeServing(p, replicas, query.Needs(ts, target), direct)
		st.assigned = assigned
		out = append(out, st)
	}
	return out
}

// notServingError is the error of a CREATE whose relation has partitions
// without a serving replica when the wait ends.
func notServingError(rel *catalog.Relation, waiting []servingStatus) *pgerr.Error {
	parts := make([]string, len(waiting))
	details := make([]string, len(waiting))
	for i, st := range waiting {
		parts[i] = fmt.Sprint(st.partition)
		details[i] = fmt.Sprintf("partition %d: %s", st.partition, describeReplicas(st))
	}
	what := "partition " + parts[0] + " has"
	if len(parts) > 1 {
		what = "partitions " + pgerr.JoinAnd(parts) + " have"
	}
	return pgerr.New(pgerr.ObjectNotInPrerequisiteState, "%s %s is created, but its %s no replica serving reads after %s",
		kindName(rel), rel.Name, what, servingWait).
		WithDetail("%s.", strings.Join(details, "; ")).
		WithHint("Reads of those partitions fail until a replica serves them; SHOW TASKS shows where each partition is and its state.")
}

// describeReplicas says what a partition's replicas are doing.
func describeReplicas(st servingStatus) string {
	if !st.assigned {
		return "not in the cluster's assignment yet"
	}
	if len(st.replicas) == 0 {
		return "no replica"
	}
	rs := slices.Clone(st.replicas)
	slices.SortFunc(rs, func(a, b ReplicaState) int { return strings.Compare(a.Role.String()+a.Node, b.Role.String()+b.Node) })
	var out []string
	for _, r := range rs {
		state := strings.ToLower(r.State)
		switch {
		case !r.Alive:
			state = "down"
		case !r.Reported:
			state = "not reported yet"
		}
		out = append(out, fmt.Sprintf("%s on %s %s", r.Role, r.Node, state))
	}
	return strings.Join(out, ", ")
}

// catchingUpNotice says which partitions serve reads but are still
// catching up with the source as of the statement.
func catchingUpNotice(rel *catalog.Relation, behind []servingStatus) string {
	parts := make([]string, len(behind))
	var lag int64
	for i, st := range behind {
		parts[i] = fmt.Sprint(st.partition)
		lag += st.lag
	}
	return fmt.Sprintf("%s %s is created and serves reads, but partitions %s are still catching up with what the source held (offset lag %d in all); reads show it in _offset_lag",
		kindName(rel), rel.Name, pgerr.JoinAnd(parts), lag)
}

// kindName is "view" or "table", as messages name a relation.
func kindName(rel *catalog.Relation) string {
	if rel.Kind == catalog.KindView {
		return "view"
	}
	return "table"
}

// Peers describes the replicas of a partition that other nodes hold; the
// node provides it in a cluster.
type Peers interface {
	// Replicas describes partition p of rel's replicas on the other
	// nodes as this node knows them, for CREATE's wait for serving
	// replicas (WaitServing); assigned is false while the cluster's
	// assignment does not hold the partition.
	Replicas(rel *catalog.Relation, p int32) (replicas []ReplicaState, assigned bool)
}

// SetPeers makes WaitServing count the replicas p describes.
func (rt *Runtime) SetPeers(p Peers) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.mu.peers = p
}

func (rt *Runtime) peers() Peers {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.mu.peers
}

// Positions returns the topics the positions of query's partitions
// are in (planner.ViewPlan.Positions).
func (query *PersistentQuery) Positions() []planner.PositionSource {
	switch {
	case query.Stream != nil:
		return []planner.PositionSource{{Topic: query.Stream.Source.Topic}}
	case query.Plan == nil:
		return []planner.PositionSource{{Topic: query.Rel.Topic}}
	}
	return query.Plan.Positions
}

// Needs returns, of the position a read must reflect, the part that
// task ts's partition can show: a table partition and a view partition
// that reads its source partition directly reflect only that partition
// of the source; a view partition behind a repartition topic reflects
// every source partition (through the re-keying markers). A view over a
// view reflects what the partition of that view it reads does, in the
// same topics' offsets; a join view reflects both tables' topics.
func (query *PersistentQuery) Needs(ts *TaskState, min materialize.Position) materialize.Position {
	want := materialize.Position{}
	for _, src := range query.Positions() {
		for sp, off := range min[src.Topic] {
			if src.All || sp == ts.Partition {
				want.Advance(src.Topic, sp, off)
			}
		}
	}
	return want
}
