package ha

import (
	"fmt"
	"testing"
	"time"

	"github.com/basindb/basin/materialize"
)

// Benchmarks of the read routing decision, taken for every read of a
// partition, and of one assignment of a small cluster.
// Run with: go test -run '^$' -bench . -benchmem ./ha/

// benchReplicas are the three replicas of a partition: the active, a
// standby 40 records behind and a warm-up 5000 behind; each at a
// position of topic "orders" over 8 partitions.
func benchReplicas() []ReplicaInfo {
	mk := func(node string, role Role, lag int64) ReplicaInfo {
		ri := rep(node, role, lag, lag/10)
		ri.Position = pos(0, 1000-lag, 1, 1000-lag, 2, 1000-lag, 3, 1000-lag, 4, 1000-lag, 5, 1000-lag, 6, 1000-lag, 7, 1000-lag)
		return ri
	}
	return []ReplicaInfo{
		mk("n1", RoleActive, 0),
		mk("n2", RoleStandby, 40),
		mk("n3", RoleWarmup, 5000),
	}
}

// BenchmarkRoute decides the routing of one read over three replicas
// under bounds that accept some, all or none of them.
func BenchmarkRoute(b *testing.B) {
	for _, bc := range []struct {
		name     string
		bounds   ReadBounds
		accepted int
	}{
		{"unbounded", ReadBounds{MaxOffsetLag: NoOffsetLagBound}, 3},
		{"lag=1000", ReadBounds{MaxOffsetLag: 1000}, 2},
		{"freshest", ReadBounds{MaxOffsetLag: NoOffsetLagBound, ReadFrom: ReadFromFreshest}, 3},
		{"position", ReadBounds{MaxOffsetLag: NoOffsetLagBound, MinPosition: pos(3, 950)}, 2},
		{"lag=10,timelag=1ms", ReadBounds{MaxOffsetLag: 10, MaxTimeLag: time.Millisecond}, 1},
	} {
		b.Run(bc.name, func(b *testing.B) {
			replicas := benchReplicas()
			if got := len(Route(replicas, bc.bounds, rnow).Ordered); got != bc.accepted {
				b.Fatalf("%d replicas accepted, want %d", got, bc.accepted)
			}
			b.ReportAllocs()
			for b.Loop() {
				Route(replicas, bc.bounds, rnow)
			}
		})
	}
}

// BenchmarkRouteRejectAll routes a read that no replica can serve (one
// down, two over the lag bound) and builds its NoReplicaError, the path
// of a read that fails with 55000.
func BenchmarkRouteRejectAll(b *testing.B) {
	replicas := benchReplicas()
	replicas[0] = down(replicas[0], rnow.Add(-2100*time.Millisecond))
	bounds := ReadBounds{MaxOffsetLag: 10}
	if r := Route(replicas, bounds, rnow); len(r.Ordered) != 0 || len(r.Rejected) != 3 {
		b.Fatalf("routing %+v, want all 3 rejected", r)
	}
	b.ReportAllocs()
	for b.Loop() {
		r := Route(replicas, bounds, rnow)
		if e := NoReplicaError("revenue_by_region", 3, bounds, r.Rejected); e == nil {
			b.Fatal("no error")
		}
	}
}

// BenchmarkAssignSmall assigns 64 tasks with one standby each to three
// nodes: from scratch, and again from the previous assignment with
// every replica caught up (the steady-state rebalance).
func BenchmarkAssignSmall(b *testing.B) {
	c := &cluster{offsets: map[string]map[materialize.StoreID]int64{}}
	for i := range 3 {
		c.addNode(fmt.Sprintf("n%d", i))
	}
	for v := range 4 {
		for p := range 16 {
			c.tasks = append(c.tasks, Task{ID: materialize.StoreID{View: fmt.Sprintf("view%d@%d", v, v), Partition: int32(p)}, Standbys: 1, EndOffset: 100000})
		}
	}
	for _, withPrev := range []bool{false, true} {
		in := c.input()
		if withPrev {
			prev := Assign(in)
			c.prev = &prev
			c.catchUp()
			in = c.input()
		}
		b.Run(fmt.Sprintf("nodes=3/tasks=64/previous=%v", withPrev), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Assign(in)
			}
		})
	}
}
