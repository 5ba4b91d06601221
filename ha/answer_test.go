package ha

import (
	"testing"
	"time"

	"github.com/basindb/basin/materialize"
)

// TestCheckAnswer: an answer is judged by the lag and position it was
// read at, not by the replica's lag report (ri's, here claiming lag 0).
func TestCheckAnswer(t *testing.T) {
	ri := ReplicaInfo{Node: "n2", Role: RoleStandby, Alive: true, LagKnown: true}
	want := materialize.Position{"orders": {0: 5}}
	for _, tc := range []struct {
		name      string
		b         ReadBounds
		lag, tlag int64
		pos       materialize.Position
		havePos   bool
		reason    string // empty: accepted
	}{
		{name: "no bound", b: ReadBounds{MaxOffsetLag: NoOffsetLagBound}, lag: 1000, tlag: 60000},
		{name: "offset lag within", b: ReadBounds{MaxOffsetLag: 10}, lag: 10},
		{name: "offset lag over", b: ReadBounds{MaxOffsetLag: 0}, lag: 50, reason: "answered with offset lag 50 > 0 (basin.acceptable_offset_lag)"},
		{name: "view's bound", b: ReadBounds{MaxOffsetLag: 5, OffsetLagSetting: "acceptable.offset.lag of v"}, lag: 6,
			reason: "answered with offset lag 6 > 5 (acceptable.offset.lag of v)"},
		{name: "time lag over", b: ReadBounds{MaxOffsetLag: NoOffsetLagBound, MaxTimeLag: time.Second}, tlag: 1500,
			reason: "answered with time lag 1.5s > 1s (basin.acceptable_time_lag)"},
		{name: "both over", b: ReadBounds{MaxOffsetLag: 1, MaxTimeLag: time.Second}, lag: 2, tlag: 2000,
			reason: "answered with offset lag 2 > 1 (basin.acceptable_offset_lag), answered with time lag 2s > 1s (basin.acceptable_time_lag)"},
		{name: "position covered", b: ReadBounds{MaxOffsetLag: NoOffsetLagBound, MinPosition: want}, pos: materialize.Position{"orders": {0: 7}}, havePos: true},
		{name: "position behind", b: ReadBounds{MaxOffsetLag: NoOffsetLagBound, MinPosition: want}, pos: materialize.Position{"orders": {0: 3}}, havePos: true,
			reason: "answered at a position behind the bound: orders/0 at 3 < 5"},
		{name: "position not sent", b: ReadBounds{MaxOffsetLag: NoOffsetLagBound, MinPosition: want}},
	} {
		rej, ok := CheckAnswer(ri, tc.lag, tc.tlag, tc.pos, tc.havePos, &tc.b)
		switch {
		case tc.reason == "" && !ok:
			t.Errorf("%s: rejected: %s", tc.name, rej.Reason)
		case tc.reason != "" && ok:
			t.Errorf("%s: accepted, want %q", tc.name, tc.reason)
		case tc.reason != "" && (rej.Reason != tc.reason || rej.Code != RejectStaleAnswer || rej.Node != "n2" || rej.OffsetLag != tc.lag):
			t.Errorf("%s: %+v, want reason %q", tc.name, rej, tc.reason)
		}
	}
}
