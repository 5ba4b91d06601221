package ha

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/materialize"
)

// rnow is the time of the router tests' reads.
var rnow = time.Date(2025, 3, 14, 12, 4, 7, 223e6, time.UTC)

// rep is a live replica with a fresh lag report.
func rep(node string, role Role, offsetLag, timeLagMs int64) ReplicaInfo {
	return ReplicaInfo{Node: node, Role: role, Alive: true, OffsetLag: offsetLag, TimeLagMs: timeLagMs, LagKnown: true, LagAge: time.Second}
}

func down(ri ReplicaInfo, since time.Time) ReplicaInfo {
	ri.Alive, ri.DownSince = false, since
	return ri
}

func noLag(ri ReplicaInfo) ReplicaInfo {
	ri.LagKnown, ri.OffsetLag, ri.TimeLagMs, ri.LagAge = false, 0, 0, 0
	return ri
}

func lagAge(ri ReplicaInfo, age time.Duration) ReplicaInfo {
	ri.LagAge = age
	return ri
}

func at(ri ReplicaInfo, p materialize.Position) ReplicaInfo {
	ri.Position = p
	return ri
}

// pos builds a position of topic "orders" from partition, offset pairs.
func pos(pairs ...int64) materialize.Position {
	p := materialize.Position{}
	for i := 0; i < len(pairs); i += 2 {
		p.Advance("orders", int32(pairs[i]), pairs[i+1])
	}
	return p
}

// describeRouting renders a Routing for comparison: node ids, and for
// rejections node=code+code.
func describeRouting(r Routing) (ordered, waitable, rejected []string) {
	for _, ri := range r.Ordered {
		ordered = append(ordered, ri.Node)
	}
	for _, ri := range r.Waitable {
		waitable = append(waitable, ri.Node)
	}
	for _, rej := range r.Rejected {
		var codes []string
		for _, c := range rej.Codes {
			codes = append(codes, string(c))
		}
		rejected = append(rejected, rej.Node+"="+strings.Join(codes, "+"))
	}
	return ordered, waitable, rejected
}

func TestRoute(t *testing.T) {
	none := ReadBounds{MaxOffsetLag: NoOffsetLagBound}
	lag1000 := ReadBounds{MaxOffsetLag: 1000}
	active := ReadBounds{MaxOffsetLag: NoOffsetLagBound, ReadFrom: ReadFromActive}
	freshest := ReadBounds{MaxOffsetLag: NoOffsetLagBound, ReadFrom: ReadFromFreshest}
	posBound := ReadBounds{MaxOffsetLag: NoOffsetLagBound, MinPosition: pos(3, 120)}
	for _, tc := range []struct {
		name     string
		bounds   ReadBounds
		replicas []ReplicaInfo
		ordered  []string
		waitable []string
		rejected []string
	}{
		// read_from = any
		{name: "any: active first, then standbys by offset lag", bounds: none,
			replicas: []ReplicaInfo{rep("s1", RoleStandby, 50, 900), rep("s2", RoleStandby, 10, 100), rep("a", RoleActive, 5, 10)},
			ordered:  []string{"a", "s2", "s1"}},
		{name: "any: active first even when a standby reports less lag", bounds: none,
			replicas: []ReplicaInfo{rep("s1", RoleStandby, 0, 0), rep("a", RoleActive, 40, 300)},
			ordered:  []string{"a", "s1"}},
		{name: "any: offset-lag ties broken by time lag, then node id", bounds: none,
			replicas: []ReplicaInfo{rep("s3", RoleStandby, 10, 200), rep("s1", RoleStandby, 10, 500), rep("s2", RoleStandby, 10, 200), rep("a", RoleActive, 0, 0)},
			ordered:  []string{"a", "s2", "s3", "s1"}},
		{name: "any: down active is rejected", bounds: none,
			replicas: []ReplicaInfo{down(rep("a", RoleActive, 0, 0), rnow.Add(-2*time.Second)), rep("s1", RoleStandby, 20, 0), rep("s2", RoleStandby, 10, 0)},
			ordered:  []string{"s2", "s1"}, rejected: []string{"a=down"}},
		{name: "any: offset lag bound", bounds: lag1000,
			replicas: []ReplicaInfo{rep("a", RoleActive, 0, 0), rep("s1", RoleStandby, 2000, 0), rep("s2", RoleStandby, 1000, 0)},
			ordered:  []string{"a", "s2"}, rejected: []string{"s1=offset_lag"}},
		{name: "any: offset lag bound of zero accepts only caught-up replicas", bounds: ReadBounds{MaxOffsetLag: 0},
			replicas: []ReplicaInfo{rep("a", RoleActive, 0, 0), rep("s1", RoleStandby, 1, 5), rep("s2", RoleStandby, 0, 0)},
			ordered:  []string{"a", "s2"}, rejected: []string{"s1=offset_lag"}},
		{name: "any: offset lag bound applies to the active too", bounds: lag1000,
			replicas: []ReplicaInfo{rep("a", RoleActive, 5000, 2000), rep("s1", RoleStandby, 5200, 2100)},
			rejected: []string{"a=offset_lag", "s1=offset_lag"}},
		{name: "any: time lag bound", bounds: ReadBounds{MaxOffsetLag: NoOffsetLagBound, MaxTimeLag: 2 * time.Second},
			replicas: []ReplicaInfo{rep("a", RoleActive, 0, 0), rep("s1", RoleStandby, 5, 3200), rep("s2", RoleStandby, 900, 2000)},
			ordered:  []string{"a", "s2"}, rejected: []string{"s1=time_lag"}},
		{name: "any: both lag bounds fail", bounds: ReadBounds{MaxOffsetLag: 1000, MaxTimeLag: 2 * time.Second},
			replicas: []ReplicaInfo{rep("a", RoleActive, 0, 0), rep("s1", RoleStandby, 1001, 2001)},
			ordered:  []string{"a"}, rejected: []string{"s1=offset_lag+time_lag"}},
		{name: "any: unknown lag without a bound sorts after known lag", bounds: none,
			replicas: []ReplicaInfo{noLag(rep("s1", RoleStandby, 0, 0)), rep("s2", RoleStandby, 100, 50), rep("a", RoleActive, 0, 0)},
			ordered:  []string{"a", "s2", "s1"}},
		{name: "any: unknown lag with a bound rejects standbys, not the running active", bounds: lag1000,
			replicas: []ReplicaInfo{noLag(rep("a", RoleActive, 0, 0)), noLag(rep("s1", RoleStandby, 0, 0)), rep("s2", RoleStandby, 10, 0)},
			ordered:  []string{"a", "s2"}, rejected: []string{"s1=lag_unknown"}},
		{name: "any: unknown lag with a time bound only", bounds: ReadBounds{MaxOffsetLag: NoOffsetLagBound, MaxTimeLag: time.Second},
			replicas: []ReplicaInfo{rep("a", RoleActive, 0, 0), noLag(rep("w", RoleWarmup, 0, 0))},
			ordered:  []string{"a"}, rejected: []string{"w=lag_unknown"}},
		{name: "any: a stale lag report counts as unknown", bounds: ReadBounds{MaxOffsetLag: 1000, MaxLagAge: 10 * time.Second},
			replicas: []ReplicaInfo{lagAge(rep("a", RoleActive, 0, 0), time.Minute), lagAge(rep("s1", RoleStandby, 0, 0), 30*time.Second), lagAge(rep("s2", RoleStandby, 999, 0), 10*time.Second)},
			ordered:  []string{"a", "s2"}, rejected: []string{"s1=lag_unknown"}},
		{name: "any: a stale lag report without a bound sorts last", bounds: ReadBounds{MaxOffsetLag: NoOffsetLagBound, MaxLagAge: 10 * time.Second},
			replicas: []ReplicaInfo{lagAge(rep("s1", RoleStandby, 0, 0), 30*time.Second), rep("s2", RoleStandby, 999, 0)},
			ordered:  []string{"s2", "s1"}},
		{name: "any: a restoring active earns its place by lag", bounds: none,
			replicas: []ReplicaInfo{rep("r", RoleRestoring, 500, 0), rep("s1", RoleStandby, 100, 0), rep("s2", RoleStandby, 900, 0)},
			ordered:  []string{"s1", "r", "s2"}},
		{name: "any: a restoring active wins lag ties with standbys", bounds: none,
			replicas: []ReplicaInfo{rep("s1", RoleStandby, 100, 10), rep("r", RoleRestoring, 100, 10)},
			ordered:  []string{"r", "s1"}},
		{name: "any: a restoring active of unknown lag is rejected under a bound", bounds: lag1000,
			replicas: []ReplicaInfo{noLag(rep("r", RoleRestoring, 0, 0)), rep("s1", RoleStandby, 10, 0)},
			ordered:  []string{"s1"}, rejected: []string{"r=lag_unknown"}},
		{name: "any: a restoring active over the bound is rejected", bounds: lag1000,
			replicas: []ReplicaInfo{rep("r", RoleRestoring, 50000, 0), rep("s1", RoleStandby, 10, 0)},
			ordered:  []string{"s1"}, rejected: []string{"r=offset_lag"}},
		{name: "any: warm-ups come after standbys whatever their lag", bounds: none,
			replicas: []ReplicaInfo{rep("w1", RoleWarmup, 0, 0), rep("s1", RoleStandby, 300, 0), rep("a", RoleActive, 0, 0), rep("w2", RoleWarmup, 9, 0)},
			ordered:  []string{"a", "s1", "w1", "w2"}},
		{name: "any: a warm-up beyond the bound is rejected", bounds: lag1000,
			replicas: []ReplicaInfo{down(rep("a", RoleActive, 0, 0), time.Time{}), rep("w", RoleWarmup, 80000, 0), rep("w2", RoleWarmup, 800, 0)},
			ordered:  []string{"w2"}, rejected: []string{"a=down", "w=offset_lag"}},
		{name: "any: a warm-up is the last resort", bounds: none,
			replicas: []ReplicaInfo{down(rep("a", RoleActive, 0, 0), time.Time{}), down(rep("s1", RoleStandby, 0, 0), time.Time{}), rep("w", RoleWarmup, 800, 0)},
			ordered:  []string{"w"}, rejected: []string{"a=down", "s1=down"}},
		{name: "any: an unknown role sorts last", bounds: none,
			replicas: []ReplicaInfo{rep("x", "learner", 0, 0), rep("w", RoleWarmup, 800, 0), rep("a", RoleActive, 0, 0)},
			ordered:  []string{"a", "w", "x"}},
		{name: "an unknown read_from routes like any", bounds: ReadBounds{MaxOffsetLag: NoOffsetLagBound, ReadFrom: "nearest"},
			replicas: []ReplicaInfo{rep("s1", RoleStandby, 0, 0), rep("a", RoleActive, 10, 0)},
			ordered:  []string{"a", "s1"}},
		{name: "empty read_from routes like any", bounds: ReadBounds{MaxOffsetLag: NoOffsetLagBound},
			replicas: []ReplicaInfo{rep("s1", RoleStandby, 0, 0), rep("a", RoleActive, 10, 0)},
			ordered:  []string{"a", "s1"}},
		{name: "no replicas", bounds: none},
		{name: "everything rejected, every reason recorded", bounds: ReadBounds{MaxOffsetLag: 1000, MaxTimeLag: time.Second, MinPosition: pos(3, 120)},
			replicas: []ReplicaInfo{
				at(down(rep("a", RoleActive, 0, 0), rnow.Add(-time.Second)), pos(3, 120)),
				at(rep("s1", RoleStandby, 2000, 5000), pos(3, 117)),
				at(noLag(rep("s2", RoleStandby, 0, 0)), pos(3, 121)),
				at(rep("w", RoleWarmup, 10, 10), pos(3, 119))},
			waitable: []string{"w"},
			rejected: []string{"a=down", "s1=offset_lag+time_lag+position", "s2=lag_unknown", "w=position"}},

		// positions
		{name: "position: a replica behind the bound is waitable", bounds: posBound,
			replicas: []ReplicaInfo{at(rep("a", RoleActive, 0, 0), pos(3, 125)), at(rep("s1", RoleStandby, 3, 0), pos(3, 117))},
			ordered:  []string{"a"}, waitable: []string{"s1"}, rejected: []string{"s1=position"}},
		{name: "position: waitable closest first", bounds: ReadBounds{MaxOffsetLag: NoOffsetLagBound, MinPosition: pos(0, 10, 3, 120)},
			replicas: []ReplicaInfo{
				at(rep("a", RoleActive, 0, 0), pos(0, 10, 3, 110)),
				at(rep("s1", RoleStandby, 0, 0), pos(0, 5, 3, 119)),
				at(rep("s2", RoleStandby, 0, 0), pos(0, 9, 3, 100))},
			waitable: []string{"s1", "a", "s2"}, rejected: []string{"a=position", "s1=position", "s2=position"}},
		{name: "position: equally close waitables in read_from order", bounds: posBound,
			replicas: []ReplicaInfo{at(rep("s1", RoleStandby, 0, 0), pos(3, 119)), at(rep("a", RoleActive, 0, 0), pos(3, 119)), at(rep("s0", RoleStandby, 7, 0), pos(3, 119))},
			waitable: []string{"a", "s1", "s0"}, rejected: []string{"a=position", "s0=position", "s1=position"}},
		{name: "position: down or lagging replicas are not waitable", bounds: ReadBounds{MaxOffsetLag: 100, MinPosition: pos(3, 120)},
			replicas: []ReplicaInfo{at(down(rep("a", RoleActive, 0, 0), time.Time{}), pos(3, 110)), at(rep("s1", RoleStandby, 500, 0), pos(3, 119))},
			rejected: []string{"a=down+position", "s1=offset_lag+position"}},
		{name: "position: an unknown position covers only an empty bound", bounds: posBound,
			replicas: []ReplicaInfo{rep("a", RoleActive, 0, 0)},
			waitable: []string{"a"}, rejected: []string{"a=position"}},
		{name: "position: an empty bound is no bound", bounds: ReadBounds{MaxOffsetLag: NoOffsetLagBound, MinPosition: materialize.Position{"orders": {}}},
			replicas: []ReplicaInfo{rep("a", RoleActive, 0, 0)},
			ordered:  []string{"a"}},
		{name: "position: a bound of offsets zero is covered by anything", bounds: ReadBounds{MaxOffsetLag: NoOffsetLagBound, MinPosition: pos(3, 0)},
			replicas: []ReplicaInfo{rep("a", RoleActive, 0, 0)},
			ordered:  []string{"a"}},

		// read_from = active
		{name: "active: only the active", bounds: active,
			replicas: []ReplicaInfo{rep("s1", RoleStandby, 0, 0), rep("a", RoleActive, 10, 0), rep("w", RoleWarmup, 0, 0)},
			ordered:  []string{"a"}, rejected: []string{"s1=read_from", "w=read_from"}},
		{name: "active: a down active leaves nothing", bounds: active,
			replicas: []ReplicaInfo{down(rep("a", RoleActive, 0, 0), time.Time{}), rep("s1", RoleStandby, 0, 0)},
			rejected: []string{"a=down", "s1=read_from"}},
		{name: "active: a restoring active within the bound serves", bounds: ReadBounds{MaxOffsetLag: 1000, ReadFrom: ReadFromActive},
			replicas: []ReplicaInfo{rep("r", RoleRestoring, 900, 0), rep("s1", RoleStandby, 0, 0)},
			ordered:  []string{"r"}, rejected: []string{"s1=read_from"}},
		{name: "active: a restoring active over the bound is rejected", bounds: ReadBounds{MaxOffsetLag: 1000, ReadFrom: ReadFromActive},
			replicas: []ReplicaInfo{rep("r", RoleRestoring, 9000, 0), rep("s1", RoleStandby, 0, 0)},
			rejected: []string{"r=offset_lag", "s1=read_from"}},
		{name: "active: every failed check of a standby is recorded", bounds: ReadBounds{MaxOffsetLag: 10, ReadFrom: ReadFromActive},
			replicas: []ReplicaInfo{rep("a", RoleActive, 0, 0), down(rep("s1", RoleStandby, 50, 0), time.Time{})},
			ordered:  []string{"a"}, rejected: []string{"s1=read_from+down+offset_lag"}},
		{name: "active: an unknown role is not the active", bounds: active,
			replicas: []ReplicaInfo{rep("x", "learner", 0, 0)},
			rejected: []string{"x=read_from"}},

		// read_from = freshest
		{name: "freshest: least lag first, even before the active", bounds: freshest,
			replicas: []ReplicaInfo{rep("a", RoleActive, 50, 0), rep("s1", RoleStandby, 10, 0), rep("s2", RoleStandby, 30, 0)},
			ordered:  []string{"s1", "s2", "a"}},
		{name: "freshest: the active wins ties", bounds: freshest,
			replicas: []ReplicaInfo{rep("s1", RoleStandby, 10, 40), rep("a", RoleActive, 10, 40), rep("r", RoleRestoring, 10, 40)},
			ordered:  []string{"a", "r", "s1"}},
		{name: "freshest: time lag breaks offset ties", bounds: freshest,
			replicas: []ReplicaInfo{rep("a", RoleActive, 10, 40), rep("s1", RoleStandby, 10, 20)},
			ordered:  []string{"s1", "a"}},
		{name: "freshest: warm-ups by lag, after standbys on ties", bounds: freshest,
			replicas: []ReplicaInfo{rep("s1", RoleStandby, 20, 0), rep("w1", RoleWarmup, 5, 0), rep("w2", RoleWarmup, 20, 0), rep("a", RoleActive, 0, 0)},
			ordered:  []string{"a", "w1", "s1", "w2"}},
		{name: "freshest: a running active of unknown lag counts as caught up", bounds: freshest,
			replicas: []ReplicaInfo{rep("s1", RoleStandby, 0, 0), noLag(rep("a", RoleActive, 0, 0)), noLag(rep("s2", RoleStandby, 0, 0))},
			ordered:  []string{"a", "s1", "s2"}},
		{name: "freshest: with bounds and a down node", bounds: ReadBounds{MaxOffsetLag: 100, ReadFrom: ReadFromFreshest},
			replicas: []ReplicaInfo{down(rep("s1", RoleStandby, 0, 0), time.Time{}), rep("a", RoleActive, 60, 0), rep("s2", RoleStandby, 40, 0), rep("s3", RoleStandby, 400, 0)},
			ordered:  []string{"s2", "a"}, rejected: []string{"s1=down", "s3=offset_lag"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Route(tc.replicas, tc.bounds, rnow)
			ordered, waitable, rejected := describeRouting(got)
			if !slices.Equal(ordered, tc.ordered) || !slices.Equal(waitable, tc.waitable) || !slices.Equal(rejected, tc.rejected) {
				t.Fatalf("Route:\n ordered  %q, want %q\n waitable %q, want %q\n rejected %q, want %q",
					ordered, tc.ordered, waitable, tc.waitable, rejected, tc.rejected)
			}
			checkRouting(t, tc.replicas, tc.bounds, got)
			// In memory that held another routing, the same routing.
			buf := slices.Repeat([]ReplicaInfo{rep("junk", RoleWarmup, 7, 7)}, 8)
			into := RouteInto(buf[:3], tc.replicas, tc.bounds, rnow)
			if !reflect.DeepEqual(slices.Clip(into.Ordered), slices.Clip(got.Ordered)) && len(got.Ordered) > 0 ||
				!reflect.DeepEqual(into.Waitable, got.Waitable) || !reflect.DeepEqual(into.Rejected, got.Rejected) {
				t.Fatalf("RouteInto:\n %+v\nRoute:\n %+v", into, got)
			}
			if len(into.Ordered) > 0 && &into.Ordered[0] != &buf[0] {
				t.Fatal("RouteInto did not route in the memory given")
			}
		})
	}
}

func TestRouteReasons(t *testing.T) {
	for _, tc := range []struct {
		name   string
		bounds ReadBounds
		ri     ReplicaInfo
		want   string
	}{
		{"down", ReadBounds{MaxOffsetLag: -1}, down(rep("n1", RoleActive, 0, 0), rnow.Add(-2100*time.Millisecond)),
			"down since 12:04:05.123 UTC (2.1s ago)"},
		{"down, milliseconds", ReadBounds{MaxOffsetLag: -1}, down(rep("n1", RoleActive, 0, 0), rnow.Add(-450400*time.Microsecond)),
			"down since 12:04:06.772 UTC (450ms ago)"},
		{"down, minutes", ReadBounds{MaxOffsetLag: -1}, down(rep("n1", RoleActive, 0, 0), rnow.Add(-(3*time.Minute + 12400*time.Millisecond))),
			"down since 12:00:54.823 UTC (3m12s ago)"},
		{"down, another day", ReadBounds{MaxOffsetLag: -1}, down(rep("n1", RoleActive, 0, 0), rnow.Add(-25*time.Hour)),
			"down since 2025-03-13 11:04:07.223 UTC (25h0m0s ago)"},
		{"down, clock skew", ReadBounds{MaxOffsetLag: -1}, down(rep("n1", RoleActive, 0, 0), rnow.Add(time.Second)),
			"down since 12:04:08.223 UTC (0s ago)"},
		{"down, time unknown", ReadBounds{MaxOffsetLag: -1}, down(rep("n1", RoleActive, 0, 0), time.Time{}),
			"down"},
		{"down, other time zone", ReadBounds{MaxOffsetLag: -1}, down(rep("n1", RoleActive, 0, 0), rnow.Add(-time.Second).In(time.FixedZone("CET", 3600))),
			"down since 12:04:06.223 UTC (1s ago)"},
		{"offset lag", ReadBounds{MaxOffsetLag: 1000}, rep("n2", RoleStandby, 12345, 0),
			"offset lag 12345 > 1000 (basin.acceptable_offset_lag)"},
		{"offset lag from the view", ReadBounds{MaxOffsetLag: 1000, OffsetLagSetting: "acceptable.offset.lag of revenue_by_region"}, rep("n2", RoleStandby, 12345, 0),
			"offset lag 12345 > 1000 (acceptable.offset.lag of revenue_by_region)"},
		{"time lag", ReadBounds{MaxOffsetLag: -1, MaxTimeLag: 2 * time.Second}, rep("n2", RoleStandby, 5, 3200),
			"time lag 3.2s > 2s (basin.acceptable_time_lag)"},
		{"lag unknown", ReadBounds{MaxOffsetLag: 10}, noLag(rep("n2", RoleStandby, 0, 0)),
			"lag unknown (no report yet)"},
		{"lag report too old", ReadBounds{MaxOffsetLag: 10, MaxLagAge: 10 * time.Second}, lagAge(rep("n2", RoleStandby, 0, 0), 12300*time.Millisecond),
			"lag unknown (last report 12.3s ago, older than 10s)"},
		{"position", ReadBounds{MaxOffsetLag: -1, MinPosition: pos(3, 120)}, at(rep("n2", RoleStandby, 0, 0), pos(3, 117)),
			"position behind the bound: orders/3 at 117 < 120"},
		{"position, missing partition", ReadBounds{MaxOffsetLag: -1, MinPosition: pos(3, 120)}, at(rep("n2", RoleStandby, 0, 0), pos(1, 500)),
			"position behind the bound: orders/3 at 0 < 120"},
		{"position, more partitions", ReadBounds{MaxOffsetLag: -1, MinPosition: materialize.Position{"orders": {0: 5, 1: 9, 2: 7}, "customers": {1: 4}}},
			at(rep("n2", RoleStandby, 0, 0), materialize.Position{"orders": {0: 5, 1: 3}, "customers": {1: 2}}),
			"position behind the bound: customers/1 at 2 < 4 (and 2 more partitions)"},
		{"position, one more partition", ReadBounds{MaxOffsetLag: -1, MinPosition: pos(0, 5, 1, 9)}, at(rep("n2", RoleStandby, 0, 0), pos(0, 1)),
			"position behind the bound: orders/0 at 1 < 5 (and 1 more partition)"},
		{"read_from", ReadBounds{MaxOffsetLag: -1, ReadFrom: ReadFromActive}, rep("n2", RoleWarmup, 0, 0),
			"not the active (basin.read_from = active)"},
		{"several", ReadBounds{MaxOffsetLag: 1000, MaxTimeLag: 2 * time.Second, ReadFrom: ReadFromActive},
			down(rep("n2", RoleStandby, 12345, 3200), rnow.Add(-2100*time.Millisecond)),
			"not the active (basin.read_from = active), down since 12:04:05.123 UTC (2.1s ago), offset lag 12345 > 1000 (basin.acceptable_offset_lag), time lag 3.2s > 2s (basin.acceptable_time_lag)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Route([]ReplicaInfo{tc.ri}, tc.bounds, rnow)
			if len(r.Rejected) != 1 {
				t.Fatalf("not rejected: %+v", r)
			}
			if got := r.Rejected[0].Reason; got != tc.want {
				t.Fatalf("reason\n got %q\nwant %q", got, tc.want)
			}
		})
	}
	// Without a time of read, no "ago".
	r := Route([]ReplicaInfo{down(rep("n1", RoleActive, 0, 0), rnow)}, ReadBounds{MaxOffsetLag: -1}, time.Time{})
	if got, want := r.Rejected[0].Reason, "down since 12:04:07.223 UTC"; got != want {
		t.Fatalf("reason without now: %q, want %q", got, want)
	}
}

func TestNoReplicaError(t *testing.T) {
	n1down := down(rep("n1", RoleActive, 0, 0), rnow.Add(-2100*time.Millisecond))
	for _, tc := range []struct {
		name                  string
		bounds                ReadBounds
		replicas              []ReplicaInfo
		failed                map[string]error // nodes Route ordered that then failed
		message, detail, hint string
	}{
		{name: "active down, standby too far behind",
			bounds:   ReadBounds{MaxOffsetLag: 1000},
			replicas: []ReplicaInfo{rep("n2", RoleStandby, 12345, 0), n1down},
			message:  "no replica of revenue_by_region partition 3 can serve this read: n1 (active) down since 12:04:05.123 UTC (2.1s ago); n2 (standby) offset lag 12345 > 1000 (basin.acceptable_offset_lag)",
			detail:   "The read accepts any live replica, the active first (basin.read_from = any), with offset lag at most 1000 (basin.acceptable_offset_lag).",
			hint:     "To accept more lag, SET basin.acceptable_offset_lag (n2 is 12345 records behind)."},
		{name: "read from the active only",
			bounds:   ReadBounds{MaxOffsetLag: NoOffsetLagBound, ReadFrom: ReadFromActive},
			replicas: []ReplicaInfo{n1down, rep("n2", RoleStandby, 0, 0), rep("n3", RoleWarmup, 0, 0)},
			message:  "no replica of revenue_by_region partition 3 can serve this read: n1 (active) down since 12:04:05.123 UTC (2.1s ago); n2 (standby) not the active (basin.read_from = active); n3 (warmup) not the active (basin.read_from = active)",
			detail:   "The read accepts only the active replica (basin.read_from = active).",
			hint:     "To read from standbys too, SET basin.read_from = 'any'."},
		{name: "every node down",
			bounds:   ReadBounds{MaxOffsetLag: 1000, ReadFrom: ReadFromFreshest},
			replicas: []ReplicaInfo{n1down, down(rep("n2", RoleStandby, 99999, 0), time.Time{})},
			message:  "no replica of revenue_by_region partition 3 can serve this read: n1 (active) down since 12:04:05.123 UTC (2.1s ago); n2 (standby) down, offset lag 99999 > 1000 (basin.acceptable_offset_lag)",
			detail:   "The read accepts any live replica, least lagging first (basin.read_from = freshest), with offset lag at most 1000 (basin.acceptable_offset_lag).",
			hint:     "Retry once a node holding the partition is back, or once the partition has moved to a live node."},
		{name: "no replica assigned",
			bounds:  ReadBounds{MaxOffsetLag: NoOffsetLagBound},
			message: "no replica of revenue_by_region partition 3 can serve this read: the partition has no replica in the current assignment",
			detail:  "The read accepts any live replica, the active first (basin.read_from = any).",
			hint:    "Retry shortly: the cluster is assigning the partition."},
		{name: "position wait ran out",
			bounds: ReadBounds{MaxOffsetLag: NoOffsetLagBound, MinPosition: pos(2, 40, 3, 120),
				MinPositionFrom: "what the session's earlier reads of the partition returned, with basin.monotonic_reads on"},
			replicas: []ReplicaInfo{at(rep("n1", RoleActive, 0, 0), pos(2, 40, 3, 110)), at(rep("n2", RoleStandby, 0, 0), pos(2, 39, 3, 118)),
				at(down(rep("n3", RoleStandby, 0, 0), time.Time{}), pos(2, 40, 3, 120))},
			message: "no replica of revenue_by_region partition 3 can serve this read: n1 (active) position behind the bound: orders/3 at 110 < 120; n2 (standby) position behind the bound: orders/2 at 39 < 40 (and 1 more partition); n3 (standby) down",
			detail:  "The read accepts any live replica, the active first (basin.read_from = any), with position at least orders/2:40 orders/3:120 (what the session's earlier reads of the partition returned, with basin.monotonic_reads on).",
			hint:    "To wait longer for a replica to reach the position, SET basin.position_wait (n2 is 3 offsets behind it)."},
		{name: "every bound, every hint",
			bounds: ReadBounds{MaxOffsetLag: 1000, OffsetLagSetting: "acceptable.offset.lag of revenue_by_region", MaxTimeLag: 2 * time.Second,
				MinPosition: pos(3, 120), ReadFrom: ReadFromActive, MaxLagAge: 10 * time.Second},
			replicas: []ReplicaInfo{
				at(rep("n1", RoleRestoring, 5000, 2500), pos(3, 100)),
				at(rep("n2", RoleStandby, 1500, 3000), pos(3, 119)),
				at(lagAge(rep("n3", RoleStandby, 0, 0), time.Minute), pos(3, 120)),
				at(noLag(rep("n4", RoleWarmup, 0, 0)), pos(3, 120))},
			message: "no replica of revenue_by_region partition 3 can serve this read: " +
				"n1 (restoring) offset lag 5000 > 1000 (acceptable.offset.lag of revenue_by_region), time lag 2.5s > 2s (basin.acceptable_time_lag), position behind the bound: orders/3 at 100 < 120; " +
				"n2 (standby) not the active (basin.read_from = active), offset lag 1500 > 1000 (acceptable.offset.lag of revenue_by_region), time lag 3s > 2s (basin.acceptable_time_lag), position behind the bound: orders/3 at 119 < 120; " +
				"n3 (standby) not the active (basin.read_from = active), lag unknown (last report 1m0s ago, older than 10s); " +
				"n4 (warmup) not the active (basin.read_from = active), lag unknown (no report yet)",
			detail: "The read accepts only the active replica (basin.read_from = active), with offset lag at most 1000 (acceptable.offset.lag of revenue_by_region), " +
				"time lag at most 2s (basin.acceptable_time_lag) and position at least orders/3:120 (basin.min_position). " +
				"Lag reports older than 10s count as unknown.",
			hint: "To read from standbys too, SET basin.read_from = 'any'. " +
				"To accept more lag, SET basin.acceptable_offset_lag (n2 is 1500 records behind). " +
				"To accept older data, SET basin.acceptable_time_lag (n1 is 2.5s behind). " +
				"Retry shortly: there is no current lag report from n3, n4. " +
				"To wait longer for a replica to reach the position, SET basin.position_wait (n2 is 1 offset behind it)."},
		{name: "every candidate failed when tried",
			bounds:   ReadBounds{MaxOffsetLag: 1000},
			replicas: []ReplicaInfo{rep("n1", RoleActive, 0, 0), rep("n2", RoleStandby, 10, 0), rep("n3", RoleStandby, 5000, 0)},
			failed:   map[string]error{"n1": errors.New("dial tcp 10.0.0.1:5433: connect: connection refused"), "n2": errors.New("timeout: no answer within 2s")},
			message:  "no replica of revenue_by_region partition 3 can serve this read: n1 (active) read failed: dial tcp 10.0.0.1:5433: connect: connection refused; n2 (standby) read failed: timeout: no answer within 2s; n3 (standby) offset lag 5000 > 1000 (basin.acceptable_offset_lag)",
			detail:   "The read accepts any live replica, the active first (basin.read_from = any), with offset lag at most 1000 (basin.acceptable_offset_lag).",
			hint:     "To accept more lag, SET basin.acceptable_offset_lag (n3 is 5000 records behind)."},
		{name: "the wait for the position ran out on every replica",
			bounds: ReadBounds{MaxOffsetLag: NoOffsetLagBound, MinPosition: pos(3, 120)},
			// Reported at the bound, yet the stores did not reach it.
			replicas: []ReplicaInfo{at(rep("n1", RoleActive, 0, 0), pos(3, 120)), at(rep("n2", RoleStandby, 0, 0), pos(3, 120))},
			failed: map[string]error{
				"n1": errors.New("partition 3 of kv has not reached the position this read needs within 300ms"),
				"n2": errors.New("partition 3 of kv has not reached the position this read needs within 300ms")},
			message: "no replica of revenue_by_region partition 3 can serve this read: n1 (active) read failed: partition 3 of kv has not reached the position this read needs within 300ms; " +
				"n2 (standby) read failed: partition 3 of kv has not reached the position this read needs within 300ms",
			detail: "The read accepts any live replica, the active first (basin.read_from = any), with position at least orders/3:120 (basin.min_position).",
			hint:   "To wait longer for a replica to reach the position, SET basin.position_wait."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Route(tc.replicas, tc.bounds, rnow)
			rejected := r.Rejected
			for _, ri := range r.Ordered {
				err, ok := tc.failed[ri.Node]
				if !ok {
					t.Fatalf("%s was ordered and did not fail: the read would succeed", ri.Node)
				}
				rejected = append(rejected, AttemptFailed(ri, err))
			}
			e := NoReplicaError("revenue_by_region", 3, tc.bounds, rejected)
			if e.Code != pgerr.ObjectNotInPrerequisiteState || pgerr.CodeOf(e) != "55000" {
				t.Errorf("code %s, want 55000", e.Code)
			}
			if e.Message != tc.message {
				t.Errorf("message\n got %q\nwant %q", e.Message, tc.message)
			}
			if e.Detail != tc.detail {
				t.Errorf("detail\n got %q\nwant %q", e.Detail, tc.detail)
			}
			if e.Hint != tc.hint {
				t.Errorf("hint\n got %q\nwant %q", e.Hint, tc.hint)
			}
			// The order of the rejections does not matter.
			slices.Reverse(rejected)
			if e2 := NoReplicaError("revenue_by_region", 3, tc.bounds, rejected); !reflect.DeepEqual(e, e2) {
				t.Errorf("message depends on the order of the rejections:\n%q\n%q", e.Message, e2.Message)
			}
		})
	}
}

func TestReadBoundsValidate(t *testing.T) {
	for _, tc := range []struct {
		b   ReadBounds
		err string
	}{
		{ReadBounds{}, ""},
		{ReadBounds{MaxOffsetLag: -1, ReadFrom: ReadFromFreshest, MaxTimeLag: time.Second, MaxLagAge: time.Minute}, ""},
		{ReadBounds{ReadFrom: "nearest"}, `ha: read_from "nearest" is not active, any or freshest`},
		{ReadBounds{MaxTimeLag: -time.Second}, "ha: acceptable time lag -1s is negative"},
		{ReadBounds{MaxLagAge: -time.Second}, "ha: maximum lag report age -1s is negative"},
	} {
		err := tc.b.Validate()
		if got := fmt.Sprint(err); tc.err == "" && err != nil || tc.err != "" && got != tc.err {
			t.Errorf("Validate(%+v) = %v, want %q", tc.b, err, tc.err)
		}
	}
}

func TestReplicasInfos(t *testing.T) {
	a := Assignment{Nodes: map[string]NodeTasks{
		"n1": {Active: []materialize.StoreID{{View: "v@1", Partition: 0}}, Standby: []materialize.StoreID{{View: "v@1", Partition: 1}}},
		"n2": {Active: []materialize.StoreID{{View: "v@1", Partition: 1}}, Warmup: []materialize.StoreID{{View: "v@1", Partition: 0}}},
		"n3": {Standby: []materialize.StoreID{{View: "v@1", Partition: 0}, {View: "v@1", Partition: 1}}},
		"n4": {Standby: []materialize.StoreID{{View: "v@1", Partition: 0}}},
	}}
	got := a.Replicas(materialize.StoreID{View: "v@1", Partition: 0}).Infos()
	want := []ReplicaInfo{{Node: "n1", Role: RoleActive, Alive: true}, {Node: "n3", Role: RoleStandby, Alive: true},
		{Node: "n4", Role: RoleStandby, Alive: true}, {Node: "n2", Role: RoleWarmup, Alive: true}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Infos() = %+v, want %+v", got, want)
	}
	if got := (Replicas{}).Infos(); len(got) != 0 {
		t.Fatalf("no replicas: %+v", got)
	}
	prefix := []ReplicaInfo{{Node: "here"}}
	if got := a.Replicas(materialize.StoreID{View: "v@1", Partition: 0}).AppendInfos(prefix); !reflect.DeepEqual(got, append(prefix, want...)) {
		t.Fatalf("AppendInfos = %+v", got)
	}
}

// acceptable is the read contract restated independently of Route: may
// ri serve a read under b?
func acceptable(ri ReplicaInfo, b ReadBounds) bool {
	if b.ReadFrom == ReadFromActive && ri.Role != RoleActive && ri.Role != RoleRestoring {
		return false
	}
	if !ri.Alive {
		return false
	}
	if b.MaxOffsetLag >= 0 || b.MaxTimeLag > 0 {
		known := ri.LagKnown && (b.MaxLagAge == 0 || ri.LagAge <= b.MaxLagAge)
		if !known && ri.Role != RoleActive {
			return false
		}
		if known && b.MaxOffsetLag >= 0 && ri.OffsetLag > b.MaxOffsetLag {
			return false
		}
		if known && b.MaxTimeLag > 0 && time.Duration(ri.TimeLagMs)*time.Millisecond > b.MaxTimeLag {
			return false
		}
	}
	for topic, parts := range b.MinPosition {
		for p, off := range parts {
			if have, _ := ri.Position.Get(topic, p); have < off {
				return false
			}
		}
	}
	return true
}

// checkRouting checks the properties every Routing has.
func checkRouting(t *testing.T, replicas []ReplicaInfo, b ReadBounds, r Routing) {
	t.Helper()
	// Ordered and Rejected partition the replicas.
	var seen []string
	for _, ri := range r.Ordered {
		seen = append(seen, ri.Node)
		if !acceptable(ri, b) {
			t.Fatalf("ordered %+v does not satisfy %+v", ri, b)
		}
	}
	rejected := make(map[string]Rejection)
	for _, rej := range r.Rejected {
		seen = append(seen, rej.Node)
		rejected[rej.Node] = rej
		if acceptable(rej.ReplicaInfo, b) {
			t.Fatalf("rejected %+v satisfies %+v", rej, b)
		}
		if len(rej.Codes) == 0 || rej.Code != rej.Codes[0] || rej.Reason == "" || strings.Count(rej.Reason, ", ")+1 < len(rej.Codes) {
			t.Fatalf("malformed rejection %+v", rej)
		}
		if rej.Has(RejectAttemptFailed) {
			t.Fatalf("Route returned an attempt failure: %+v", rej)
		}
	}
	var want []string
	for _, ri := range replicas {
		want = append(want, ri.Node)
	}
	slices.Sort(seen)
	slices.Sort(want)
	if !slices.Equal(seen, want) {
		t.Fatalf("ordered and rejected hold %v, want each of %v once", seen, want)
	}
	// Waitable: rejected for their position only, closest first.
	var prevBehind int64 = -1
	for _, ri := range r.Waitable {
		rej, ok := rejected[ri.Node]
		if !ok || !slices.Equal(rej.Codes, []RejectCode{RejectPosition}) {
			t.Fatalf("waitable %s was rejected with %v", ri.Node, rej.Codes)
		}
		behind := ri.Position.Behind(b.MinPosition)
		if behind < prevBehind {
			t.Fatalf("waitable not closest first: %+v", r.Waitable)
		}
		prevBehind = behind
	}
	nwait := 0
	for _, rej := range r.Rejected {
		if slices.Equal(rej.Codes, []RejectCode{RejectPosition}) {
			nwait++
		}
	}
	if nwait != len(r.Waitable) {
		t.Fatalf("%d replicas rejected only for position, %d waitable", nwait, len(r.Waitable))
	}
	// The order follows read_from.
	for i, ri := range r.Ordered {
		switch b.ReadFrom {
		case ReadFromActive:
			if !ri.Role.isActive() {
				t.Fatalf("read_from active ordered %+v", ri)
			}
		case ReadFromFreshest:
			if i > 0 {
				po, pt := sortLag(&b, &r.Ordered[i-1])
				o, tm := sortLag(&b, &ri)
				if o < po || o == po && tm < pt {
					t.Fatalf("freshest: %s before %s", r.Ordered[i-1].Node, ri.Node)
				}
			}
		default:
			// Running actives (one, from a real assignment) come first.
			if i > 0 && ri.Role == RoleActive && r.Ordered[i-1].Role != RoleActive {
				t.Fatalf("any: running active %s after %s", ri.Node, r.Ordered[i-1].Node)
			}
			if i > 0 && r.Ordered[i-1].Role == RoleWarmup && ri.Role != RoleWarmup && anyGroup(ri.Role) < anyGroup(RoleWarmup) {
				t.Fatalf("any: warm-up %s before %s", r.Ordered[i-1].Node, ri.Node)
			}
		}
	}
}

// TestRouteProperties routes random replicas under random bounds: the
// invariants of checkRouting hold, the result does not depend on the
// order of the input, and the error names every rejected replica.
func TestRouteProperties(t *testing.T) {
	roles := []Role{RoleActive, RoleRestoring, RoleStandby, RoleStandby, RoleWarmup, "learner"}
	modes := []ReadFrom{"", ReadFromAny, ReadFromActive, ReadFromFreshest}
	var orderedN, rejectedN, waitableN int
	for seed := range uint64(5000) {
		r := rand.New(rand.NewPCG(seed, 11))
		var replicas []ReplicaInfo
		for i := range r.IntN(6) {
			ri := ReplicaInfo{
				Node:      fmt.Sprintf("n%d", r.IntN(100)*10+i), // distinct, in random order
				Role:      roles[r.IntN(len(roles))],
				Alive:     r.IntN(5) > 0,
				OffsetLag: []int64{0, 0, 5, 100, 1000, 1001, 50000}[r.IntN(7)],
				TimeLagMs: []int64{0, 0, 200, 1999, 2000, 2001, 60000}[r.IntN(7)],
				LagKnown:  r.IntN(4) > 0,
				LagAge:    time.Duration(r.IntN(20)) * time.Second,
			}
			if !ri.Alive && r.IntN(2) == 0 {
				ri.DownSince = rnow.Add(-time.Duration(r.IntN(5000)) * time.Millisecond)
			}
			if r.IntN(4) > 0 {
				ri.Position = pos(0, int64(r.IntN(5)), 1, int64(95+r.IntN(10)))
			}
			replicas = append(replicas, ri)
		}
		b := ReadBounds{
			MaxOffsetLag: []int64{NoOffsetLagBound, NoOffsetLagBound, 0, 5, 1000}[r.IntN(5)],
			MaxTimeLag:   []time.Duration{0, 0, time.Second, 2 * time.Second}[r.IntN(4)],
			ReadFrom:     modes[r.IntN(len(modes))],
			MaxLagAge:    []time.Duration{0, 0, 10 * time.Second}[r.IntN(3)],
		}
		if r.IntN(2) == 0 {
			b.MinPosition = pos(0, int64(r.IntN(4)), 1, int64(95+r.IntN(8)))
		}
		got := Route(replicas, b, rnow)
		checkRouting(t, replicas, b, got)
		orderedN += len(got.Ordered)
		rejectedN += len(got.Rejected)
		waitableN += len(got.Waitable)

		// Deterministic, whatever the input order.
		shuffled := slices.Clone(replicas)
		r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		if again := Route(shuffled, b, rnow); !reflect.DeepEqual(got, again) {
			t.Fatalf("seed %d: Route depends on input order:\n%+v\n%+v", seed, got, again)
		}

		if len(got.Ordered) == 0 {
			e := NoReplicaError("v", 0, b, got.Rejected)
			for _, rej := range got.Rejected {
				if !strings.Contains(e.Message, rej.Node+" ("+string(rej.Role)+") "+rej.Reason) {
					t.Fatalf("seed %d: message %q does not name %s with its reason %q", seed, e.Message, rej.Node, rej.Reason)
				}
			}
			if e.Hint == "" || e.Detail == "" {
				t.Fatalf("seed %d: error without hint or detail: %+v", seed, e)
			}
		}
	}
	if orderedN < 2000 || rejectedN < 2000 || waitableN < 300 {
		t.Fatalf("weak coverage: %d ordered, %d rejected, %d waitable", orderedN, rejectedN, waitableN)
	}
	t.Logf("%d ordered, %d rejected, %d waitable", orderedN, rejectedN, waitableN)
}
