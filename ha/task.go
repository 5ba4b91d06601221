package ha

import (
	"errors"
	"fmt"
	"slices"

	"github.com/basindb/basin/materialize"
)

// Task is a task to assign, as the leader's catalog knows it.
type Task struct {
	ID materialize.StoreID
	// Standbys is the number of standby replicas wanted: the view's
	// num.standby.replicas, else the server default. Negative counts as
	// zero.
	Standbys int
	// EndOffset is the changelog partition's end offset (the offset the
	// next record will get). A replica's lag is EndOffset minus the
	// offset it has checkpointed; a replica with no state has lag
	// EndOffset, a full restore. A stale or unknown (negative) end offset
	// is raised to the highest offset any member reports.
	EndOffset int64
}

// Member is one group member as the leader sees it: a basin node and
// the state it has on disk, from its join metadata.
type Member struct {
	// ID is the node id (--node-id, also the group instance id).
	ID string
	// PGAddr and HTTPAddr are the node's advertised Postgres and HTTP
	// addresses, copied into the assignment so every node can reach
	// every other.
	PGAddr, HTTPAddr string
	// Offsets holds, for each task the node has state for on disk, the
	// changelog offset its checkpoint reflects, with "next offset to
	// read" semantics: a replica that applied records 0..99 reports 100.
	// A task absent from the map has no state on this node.
	Offsets map[materialize.StoreID]int64
}

// Config holds the assignment settings. The zero value is the defaults.
type Config struct {
	// AcceptableRecoveryLag is the largest lag, in changelog records, at
	// which a replica counts as caught up: a task only moves its active
	// (or a standby) to a node whose replica is caught up. Zero means
	// DefaultAcceptableRecoveryLag (10000, as Kafka Streams'
	// acceptable.recovery.lag).
	AcceptableRecoveryLag int64
	// MaxWarmups bounds the warm-up replicas in the whole cluster per
	// assignment. Zero means DefaultMaxWarmups (2, as Kafka Streams'
	// max.warmup.replicas).
	MaxWarmups int
}

const (
	// DefaultAcceptableRecoveryLag is Config.AcceptableRecoveryLag's
	// default.
	DefaultAcceptableRecoveryLag int64 = 10000
	// DefaultMaxWarmups is Config.MaxWarmups's default.
	DefaultMaxWarmups = 2
)

// ErrInvalidConfig is returned (wrapped) by Config.Validate and
// BalancerConfig.Validate.
var ErrInvalidConfig = errors.New("ha: invalid configuration")

// Validate checks c and fills in defaults.
func (c *Config) Validate() error {
	if c.AcceptableRecoveryLag < 0 {
		return fmt.Errorf("%w: acceptable recovery lag %d is negative", ErrInvalidConfig, c.AcceptableRecoveryLag)
	}
	if c.MaxWarmups < 0 {
		return fmt.Errorf("%w: max warm-up replicas %d is negative", ErrInvalidConfig, c.MaxWarmups)
	}
	if c.AcceptableRecoveryLag == 0 {
		c.AcceptableRecoveryLag = DefaultAcceptableRecoveryLag
	}
	if c.MaxWarmups == 0 {
		c.MaxWarmups = DefaultMaxWarmups
	}
	return nil
}

// NodeTasks is one node's part of an assignment, plus its addresses.
type NodeTasks struct {
	// PGAddr and HTTPAddr are the node's advertised addresses, from its
	// join metadata.
	PGAddr, HTTPAddr string
	// Active are the tasks this node runs: it consumes their inputs and
	// writes their changelogs. Sorted.
	Active []materialize.StoreID
	// Standby are the tasks this node replicates from their changelogs,
	// readable within their lag. Sorted.
	Standby []materialize.StoreID
	// Warmup are the tasks this node restores from their changelogs so
	// that a follow-up assignment can move an active or standby here
	// once it has caught up. A warm-up is neither an active nor a
	// standby: the router may read from it like any replica within its
	// lag, but it does not count toward num.standby.replicas. Sorted.
	Warmup []materialize.StoreID
	// JoinDigest is a digest of the join metadata the leader balanced
	// with for this node (see Balancer); zero when unknown. A node whose
	// own last join metadata has a different digest holds an assignment
	// computed from stale metadata, which happens after a static member
	// restarts without a rebalance.
	JoinDigest uint64
}

// Assignment is the whole cluster's task map: every node learns all of
// it, so each knows who holds what.
type Assignment struct {
	// Generation is the group generation the assignment was made for.
	Generation int32
	// Leader is the node id of the group leader that computed it. The
	// leader drives follow-up (probing) rebalances.
	Leader string
	// Nodes maps each member's node id to its tasks. Members without
	// tasks are present too, for their addresses.
	Nodes map[string]NodeTasks
	// Shortfall maps a task to the number of standbys it wants but did
	// not get (too few nodes). Tasks without shortfall are absent.
	Shortfall map[materialize.StoreID]int
	// NeedsFollowUp is set when the assignment differs from the balanced
	// target because some replica was not caught up yet: warm-ups are in
	// progress, and a follow-up (probing) rebalance should run once they
	// may have caught up.
	NeedsFollowUp bool
}

// Replicas lists where a task lives.
type Replicas struct {
	// Active is the node running the task; empty if none.
	Active string
	// Standbys and Warmups are node ids, sorted.
	Standbys, Warmups []string
}

// Replicas returns where t lives. It scans the map; use ByTask for many
// lookups.
func (a *Assignment) Replicas(t materialize.StoreID) Replicas {
	var r Replicas
	for _, id := range a.nodeIDs() {
		nt := a.Nodes[id]
		if containsTask(nt.Active, t) {
			r.Active = id
		}
		if containsTask(nt.Standby, t) {
			r.Standbys = append(r.Standbys, id)
		}
		if containsTask(nt.Warmup, t) {
			r.Warmups = append(r.Warmups, id)
		}
	}
	return r
}

// ByTask indexes the assignment by task.
func (a *Assignment) ByTask() map[materialize.StoreID]Replicas {
	m := make(map[materialize.StoreID]Replicas)
	for _, id := range a.nodeIDs() {
		nt := a.Nodes[id]
		for _, t := range nt.Active {
			r := m[t]
			r.Active = id
			m[t] = r
		}
		for _, t := range nt.Standby {
			r := m[t]
			r.Standbys = append(r.Standbys, id)
			m[t] = r
		}
		for _, t := range nt.Warmup {
			r := m[t]
			r.Warmups = append(r.Warmups, id)
			m[t] = r
		}
	}
	return m
}

// Tasks returns every task that has an active, sorted.
func (a *Assignment) Tasks() []materialize.StoreID {
	var ts []materialize.StoreID
	for _, nt := range a.Nodes {
		ts = append(ts, nt.Active...)
	}
	materialize.SortStoreIDs(ts)
	return ts
}

// NodeIDs returns the node ids of the assignment, sorted.
func (a *Assignment) NodeIDs() []string { return a.nodeIDs() }

func (a *Assignment) nodeIDs() []string {
	ids := make([]string, 0, len(a.Nodes))
	for id := range a.Nodes {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Equal reports whether a and b are the same assignment.
func (a *Assignment) Equal(b *Assignment) bool {
	if a.Generation != b.Generation || a.Leader != b.Leader || a.NeedsFollowUp != b.NeedsFollowUp ||
		len(a.Nodes) != len(b.Nodes) || len(a.Shortfall) != len(b.Shortfall) {
		return false
	}
	for id, x := range a.Nodes {
		y, ok := b.Nodes[id]
		if !ok || !x.equal(y) {
			return false
		}
	}
	for t, n := range a.Shortfall {
		if m, ok := b.Shortfall[t]; !ok || m != n {
			return false
		}
	}
	return true
}

func (n NodeTasks) equal(o NodeTasks) bool {
	return n.PGAddr == o.PGAddr && n.HTTPAddr == o.HTTPAddr && n.JoinDigest == o.JoinDigest &&
		slices.Equal(n.Active, o.Active) && slices.Equal(n.Standby, o.Standby) && slices.Equal(n.Warmup, o.Warmup)
}

// SameTasks reports whether a and b place every task identically
// (roles per node), ignoring generation, leader, addresses and digests.
func (a *Assignment) SameTasks(b *Assignment) bool {
	same := func(x, y map[string]NodeTasks) bool {
		for id, n := range x {
			o := y[id]
			if !slices.Equal(n.Active, o.Active) || !slices.Equal(n.Standby, o.Standby) || !slices.Equal(n.Warmup, o.Warmup) {
				return false
			}
		}
		return true
	}
	return same(a.Nodes, b.Nodes) && same(b.Nodes, a.Nodes)
}

// ErrInvalidAssignment is returned (wrapped) by Assignment.Check.
var ErrInvalidAssignment = errors.New("ha: invalid assignment")

// Check verifies the structural invariants every assignment holds: task
// lists are sorted without duplicates, no node holds a task in two
// roles, and no task has two actives.
func (a *Assignment) Check() error {
	active := make(map[materialize.StoreID]string)
	for _, id := range a.nodeIDs() {
		nt := a.Nodes[id]
		roles := make(map[materialize.StoreID]string)
		for _, l := range []struct {
			name string
			ts   []materialize.StoreID
		}{{"active", nt.Active}, {"standby", nt.Standby}, {"warm-up", nt.Warmup}} {
			for i, t := range l.ts {
				if i > 0 && l.ts[i-1].Compare(t) >= 0 {
					return fmt.Errorf("%w: node %q: %s tasks not sorted or duplicated at %s", ErrInvalidAssignment, id, l.name, t)
				}
				if r, ok := roles[t]; ok {
					return fmt.Errorf("%w: node %q holds %s as %s and %s", ErrInvalidAssignment, id, t, r, l.name)
				}
				roles[t] = l.name
			}
		}
		for _, t := range nt.Active {
			if other, ok := active[t]; ok {
				return fmt.Errorf("%w: task %s is active on %q and %q", ErrInvalidAssignment, t, other, id)
			}
			active[t] = id
		}
	}
	for t, n := range a.Shortfall {
		if n <= 0 {
			return fmt.Errorf("%w: task %s has shortfall %d", ErrInvalidAssignment, t, n)
		}
	}
	return nil
}

func containsTask(ts []materialize.StoreID, t materialize.StoreID) bool {
	_, ok := slices.BinarySearchFunc(ts, t, materialize.StoreID.Compare)
	return ok
}
