package stream

import (
	"testing"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/materialize"
)

// TestJudgeServing checks when CREATE counts a partition as served: some
// replica is up and running, and one that is reflects the source as it
// was (its position covers the ends, or, reading its source partition
// directly, it has no lag left).
func TestJudgeServing(t *testing.T) {
	want := map[int32]int64{1: 10, 2: 5}
	pos := func(a, b int64) materialize.Position { return materialize.Position{"src": {1: a, 2: b}} }
	running := func(node string, lag int64, p materialize.Position) ReplicaState {
		return ReplicaState{Node: node, Role: "active", Alive: true, Reported: true, State: "RUNNING", OffsetLag: lag, Position: p}
	}
	cases := []struct {
		name             string
		replicas         []ReplicaState
		direct           bool
		serving, current bool
		lag              int64
	}{
		{name: "no replica"},
		{name: "down", replicas: []ReplicaState{func() ReplicaState { r := running("a", 0, pos(10, 5)); r.Alive = false; return r }()}},
		{name: "not reported", replicas: []ReplicaState{{Node: "a", Role: "active", Alive: true}}},
		{name: "restoring", replicas: []ReplicaState{func() ReplicaState { r := running("a", 0, pos(10, 5)); r.State = "RESTORING"; return r }()}},
		{name: "error", replicas: []ReplicaState{func() ReplicaState { r := running("a", 0, pos(10, 5)); r.State = "ERROR"; return r }()}},
		{name: "current", replicas: []ReplicaState{running("a", 3, pos(10, 5))}, serving: true, current: true, lag: 3},
		{name: "ahead", replicas: []ReplicaState{running("a", 0, pos(12, 9))}, serving: true, current: true},
		{name: "catching up", replicas: []ReplicaState{running("a", 7, pos(10, 4))}, serving: true, lag: 7},
		{name: "no position yet", replicas: []ReplicaState{running("a", 15, nil)}, serving: true, lag: 15},
		// Reading its source partition directly, no lag means it has
		// read past the end it started with (a source ending in a
		// transaction's markers never shows them in a position).
		{name: "direct without lag", replicas: []ReplicaState{running("a", 0, pos(10, 4))}, direct: true, serving: true, current: true},
		{name: "re-keyed without lag", replicas: []ReplicaState{running("a", 0, pos(10, 4))}, serving: true},
		{name: "one of two", replicas: []ReplicaState{running("a", 9, pos(1, 1)), running("b", 2, pos(10, 5))}, serving: true, current: true, lag: 2},
		{name: "standby", replicas: []ReplicaState{func() ReplicaState { r := running("b", 0, pos(10, 5)); r.Role = "standby"; return r }()},
			serving: true, current: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := judgeServing(3, c.replicas, materialize.Position{"src": want}, c.direct)
			if st.serving != c.serving || st.current != c.current || st.lag != c.lag {
				t.Fatalf("serving %v, current %v, lag %d; want %v, %v, %d", st.serving, st.current, st.lag, c.serving, c.current, c.lag)
			}
		})
	}
}

// TestNotServingError checks the error of a CREATE whose partitions have
// no serving replica in time: 55000, naming the partitions and what
// their replicas do.
func TestNotServingError(t *testing.T) {
	rel := &catalog.Relation{Name: "by_region", Kind: catalog.KindView}
	err := notServingError(rel, []servingStatus{
		{partition: 1, assigned: true, replicas: []ReplicaState{
			{Node: "node-2", Role: "standby", Alive: true},
			{Node: "node-1", Role: "active", Alive: true, Reported: true, State: "RESTORING"},
		}},
		{partition: 3},
		{partition: 4, assigned: true, replicas: []ReplicaState{{Node: "node-0", Role: "active", Reported: true, State: "RUNNING"}}},
	})
	if err.Code != pgerr.ObjectNotInPrerequisiteState {
		t.Fatalf("code %s, want 55000", err.Code)
	}
	if want := "view by_region is created, but its partitions 1, 3 and 4 have no replica serving reads after 30s"; err.Message != want {
		t.Fatalf("message %q\nwant    %q", err.Message, want)
	}
	if want := "partition 1: active on node-1 restoring, standby on node-2 not reported yet; partition 3: not in the cluster's assignment yet; partition 4: active on node-0 down."; err.Detail != want {
		t.Fatalf("detail %q\nwant   %q", err.Detail, want)
	}
	one := notServingError(&catalog.Relation{Name: "kv", Kind: catalog.KindTable}, []servingStatus{{partition: 0, assigned: true}})
	if want := "table kv is created, but its partition 0 has no replica serving reads after 30s"; one.Message != want {
		t.Fatalf("message %q\nwant    %q", one.Message, want)
	}
}
