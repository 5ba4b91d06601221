package ha

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/basindb/basin/internal/pgerr"
)

// describeAttempt renders an attempt for comparison: the node, then
// "local", "restoring" (ServeRestoring, with Role RoleRestoring) and
// "unwatched" (no heartbeat watch) as they apply.
func describeAttempt(at Attempt) string {
	s := at.Replica.Node
	if at.Local {
		s += " local"
	}
	if at.ServeRestoring {
		if at.Replica.Role != RoleRestoring {
			s += " (role " + string(at.Replica.Role) + ")"
		}
		s += " restoring"
	}
	if !at.Watch {
		s += " unwatched"
	}
	return s
}

// TestAttempts drives Attempts through every branch of a read's
// attempts: the answers are given in the order the attempts are made,
// and the test checks which attempts were made, what Report made of
// each, and the read's outcome: the error of the last attempt when
// Report said Finish, else Err's message (which node's tests match too:
// its text is what users see).
func TestAttempts(t *testing.T) {
	none := ReadBounds{MaxOffsetLag: NoOffsetLagBound}
	lag1000 := ReadBounds{MaxOffsetLag: 1000}
	timeLag := ReadBounds{MaxOffsetLag: NoOffsetLagBound, MaxTimeLag: time.Second}
	freshest := ReadBounds{MaxOffsetLag: NoOffsetLagBound, ReadFrom: ReadFromFreshest}
	posBound := ReadBounds{MaxOffsetLag: NoOffsetLagBound, MinPosition: pos(3, 120)}
	downAt := rnow.Add(-2100 * time.Millisecond)

	refused := pgerr.New(pgerr.ObjectNotInPrerequisiteState, "partition 3 of v is restoring on node n1 (offset lag 50000)")
	refusedLocal := pgerr.New(pgerr.ObjectNotInPrerequisiteState, "partition 3 of v on node n1 is behind the read's bound: offset lag 5 > 0")
	notReached := pgerr.New(pgerr.ObjectNotInPrerequisiteState, "partition 3 of v on node n1 "+positionWaitText+" within basin.position_wait (1s)")
	noTable := pgerr.New(pgerr.UndefinedTable, "relation v does not exist")
	connRefused := errors.New("dial tcp 10.0.0.2:5432: connect: connection refused")
	timeout := errors.New("no answer within basin.forward_timeout (2s)")
	staleN2, _ := CheckAnswer(rep("n2", RoleStandby, 0, 0), 5000, 0, nil, false, &lag1000)
	staleN1, _ := CheckAnswer(down(rep("n1", RoleActive, 0, 0), downAt), 2000, 0, nil, false, &lag1000)

	const head = "no replica of v partition 3 can serve this read: "
	for _, tc := range []struct {
		name     string
		self     string // this node; "n0" (holding no replica) when empty
		bounds   ReadBounds
		replicas []ReplicaInfo
		answers  []Answer
		attempts []string
		verdicts []Verdict
		// err is the last attempt's error when Report said Finish (nil
		// when it served), message Err's message when nothing was left.
		err     error
		message string
	}{
		{name: "this node's active serves",
			self: "n1", bounds: none,
			replicas: []ReplicaInfo{rep("n2", RoleStandby, 0, 0), rep("n1", RoleActive, 0, 0)},
			answers:  []Answer{{}},
			attempts: []string{"n1 local"}, verdicts: []Verdict{Finish}},
		{name: "this node's replica refuses with 55000: the next replica is tried",
			self: "n1", bounds: none,
			replicas: []ReplicaInfo{rep("n1", RoleActive, 0, 0), rep("n2", RoleStandby, 0, 0)},
			answers:  []Answer{{Err: refusedLocal}, {}},
			attempts: []string{"n1 local", "n2"}, verdicts: []Verdict{FailedOver, Finish}},
		{name: "this node's replica fails otherwise: the read fails with it",
			self: "n1", bounds: none,
			replicas: []ReplicaInfo{rep("n1", RoleActive, 0, 0), rep("n2", RoleStandby, 0, 0)},
			answers:  []Answer{{Err: connRefused}},
			attempts: []string{"n1 local"}, verdicts: []Verdict{Finish}, err: connRefused},
		{name: "this node's read cancelled: the read ends, even on 55000",
			self: "n1", bounds: none,
			replicas: []ReplicaInfo{rep("n1", RoleActive, 0, 0), rep("n2", RoleStandby, 0, 0)},
			answers:  []Answer{{Err: refusedLocal, Canceled: true}},
			attempts: []string{"n1 local"}, verdicts: []Verdict{Finish}, err: refusedLocal},
		{name: "this node's replica refuses after rows went out: still the next is tried",
			self: "n2", bounds: none,
			replicas: []ReplicaInfo{rep("n1", RoleActive, 0, 0), rep("n2", RoleStandby, 0, 0)},
			answers:  []Answer{{Err: connRefused}, {Err: refusedLocal, Sent: true}},
			attempts: []string{"n1", "n2 local"}, verdicts: []Verdict{FailedOver, FailedOver},
			message: head + "n1 (active) read failed: " + connRefused.Error() + "; n2 (standby) read failed: " + refusedLocal.Error()},
		{name: "peers in Route's order, every one failing: the error names each and why",
			bounds:   lag1000,
			replicas: []ReplicaInfo{rep("n3", RoleWarmup, 10, 0), rep("n2", RoleStandby, 5, 0), rep("n1", RoleActive, 0, 0), down(rep("n4", RoleStandby, 0, 0), downAt), rep("n5", RoleStandby, 5000, 0)},
			answers:  []Answer{{Err: connRefused}, {Err: timeout}, {Err: connRefused}},
			attempts: []string{"n1", "n2", "n3"}, verdicts: []Verdict{FailedOver, FailedOver, FailedOver},
			message: head + "n1 (active) read failed: " + connRefused.Error() + "; n2 (standby) read failed: " + timeout.Error() +
				"; n4 (standby) down since 12:04:05.123 UTC (2.1s ago); n5 (standby) offset lag 5000 > 1000 (basin.acceptable_offset_lag); n3 (warmup) read failed: " + connRefused.Error()},
		{name: "freshest order",
			bounds:   freshest,
			replicas: []ReplicaInfo{rep("n1", RoleActive, 30, 0), rep("n2", RoleStandby, 20, 0), rep("n3", RoleWarmup, 10, 0)},
			answers:  []Answer{{Err: timeout}, {Err: timeout}, {}},
			attempts: []string{"n3", "n2", "n1"}, verdicts: []Verdict{FailedOver, FailedOver, Finish}},
		{name: "a peer's query error is final: another replica would fail too",
			bounds:   none,
			replicas: []ReplicaInfo{rep("n1", RoleActive, 0, 0), rep("n2", RoleStandby, 0, 0)},
			answers:  []Answer{{Err: noTable}},
			attempts: []string{"n1"}, verdicts: []Verdict{Finish}, err: noTable},
		{name: "rows went out before the peer failed: the read fails with it",
			bounds:   none,
			replicas: []ReplicaInfo{rep("n1", RoleActive, 0, 0), rep("n2", RoleStandby, 0, 0)},
			answers:  []Answer{{Err: timeout, Sent: true}},
			attempts: []string{"n1"}, verdicts: []Verdict{Finish}, err: timeout},
		{name: "the read cancelled while a peer was tried",
			bounds:   none,
			replicas: []ReplicaInfo{rep("n1", RoleActive, 0, 0), rep("n2", RoleStandby, 0, 0)},
			answers:  []Answer{{Err: context.Canceled, Canceled: true}},
			attempts: []string{"n1"}, verdicts: []Verdict{Finish}, err: context.Canceled},
		{name: "a stale answer fails over, and the error says what it answered",
			bounds:   lag1000,
			replicas: []ReplicaInfo{rep("n2", RoleStandby, 0, 0), down(rep("n1", RoleActive, 0, 0), downAt)},
			answers:  []Answer{{Err: errors.New("n2 answered with offset lag 5000 > 1000"), Stale: &staleN2}},
			attempts: []string{"n2"}, verdicts: []Verdict{FailedOver},
			message: head + "n1 (active) down since 12:04:05.123 UTC (2.1s ago); n2 (standby) answered with offset lag 5000 > 1000 (basin.acceptable_offset_lag)"},
		{name: "a node without an address is passed over and named nowhere",
			bounds:   none,
			replicas: []ReplicaInfo{rep("n1", RoleActive, 0, 0), rep("n2", RoleStandby, 0, 0)},
			answers:  []Answer{{Unreachable: true}, {Err: timeout}},
			attempts: []string{"n1", "n2"}, verdicts: []Verdict{TryNext, FailedOver},
			message: head + "n2 (standby) read failed: " + timeout.Error()},
		{name: "peers that refused with 55000 are asked again for a restoring replica",
			bounds:   none,
			replicas: []ReplicaInfo{rep("n1", RoleActive, 0, 0), rep("n2", RoleStandby, 0, 0), rep("n3", RoleStandby, 0, 0)},
			answers:  []Answer{{Err: refused}, {Err: timeout}, {Err: refused}, {Err: refused}, {}},
			attempts: []string{"n1", "n2", "n3", "n1 restoring", "n3 restoring"},
			verdicts: []Verdict{FailedOver, FailedOver, FailedOver, TryNext, Finish}},
		{name: "a restoring replica's rows are the read's, even when it then fails",
			bounds:   none,
			replicas: []ReplicaInfo{rep("n1", RoleActive, 0, 0)},
			answers:  []Answer{{Err: refused}, {Err: timeout, Sent: true}},
			attempts: []string{"n1", "n1 restoring"}, verdicts: []Verdict{FailedOver, Finish}, err: timeout},
		{name: "restoring replicas failing too: the error gives the first refusals",
			bounds:   none,
			replicas: []ReplicaInfo{rep("n1", RoleActive, 0, 0), rep("n2", RoleStandby, 0, 0)},
			answers:  []Answer{{Err: refused}, {Err: connRefused}, {Err: timeout, Stale: &staleN2}},
			attempts: []string{"n1", "n2", "n1 restoring"}, verdicts: []Verdict{FailedOver, FailedOver, TryNext},
			message: head + "n1 (active) read failed: " + refused.Error() + "; n2 (standby) read failed: " + connRefused.Error()},
		{name: "no restoring fallback under an offset lag bound",
			bounds:   lag1000,
			replicas: []ReplicaInfo{rep("n1", RoleActive, 0, 0)},
			answers:  []Answer{{Err: refused}},
			attempts: []string{"n1"}, verdicts: []Verdict{FailedOver},
			message: head + "n1 (active) read failed: " + refused.Error()},
		{name: "no restoring fallback under a time lag bound",
			bounds:   timeLag,
			replicas: []ReplicaInfo{rep("n1", RoleActive, 0, 0)},
			answers:  []Answer{{Err: refused}},
			attempts: []string{"n1"}, verdicts: []Verdict{FailedOver},
			message: head + "n1 (active) read failed: " + refused.Error()},
		{name: "this node's refusal is not asked again",
			self: "n1", bounds: none,
			replicas: []ReplicaInfo{rep("n1", RoleActive, 0, 0)},
			answers:  []Answer{{Err: refusedLocal}},
			attempts: []string{"n1 local"}, verdicts: []Verdict{FailedOver},
			message: head + "n1 (active) read failed: " + refusedLocal.Error()},
		{name: "replicas behind the position come last, closest first, their position rejection replaced",
			bounds: posBound,
			replicas: []ReplicaInfo{at(rep("n1", RoleActive, 0, 0), pos(3, 100)), at(rep("n2", RoleStandby, 0, 0), pos(3, 120)),
				at(rep("n3", RoleStandby, 0, 0), pos(3, 110)), at(down(rep("n4", RoleStandby, 0, 0), downAt), pos(3, 119))},
			answers:  []Answer{{Err: timeout}, {Err: notReached}, {Err: notReached}, {Err: notReached}, {Err: notReached}},
			attempts: []string{"n2", "n3", "n1", "n3 restoring", "n1 restoring"},
			verdicts: []Verdict{FailedOver, FailedOver, FailedOver, TryNext, TryNext},
			message: head + "n1 (active) read failed: " + notReached.Error() + "; n2 (standby) read failed: " + timeout.Error() +
				"; n3 (standby) read failed: " + notReached.Error() + "; n4 (standby) down since 12:04:05.123 UTC (2.1s ago), position behind the bound: orders/3 at 119 < 120"},
		{name: "a replica behind the position without an address is dropped from the error",
			bounds:   posBound,
			replicas: []ReplicaInfo{at(rep("n1", RoleActive, 0, 0), pos(3, 100)), at(rep("n2", RoleStandby, 0, 0), pos(3, 120))},
			answers:  []Answer{{Err: timeout}, {Unreachable: true}},
			attempts: []string{"n2", "n1"}, verdicts: []Verdict{FailedOver, TryNext},
			message: head + "n2 (standby) read failed: " + timeout.Error()},
		{name: "every replica ruled out: those down for no other reason are tried after all, unwatched",
			self: "n3", bounds: lag1000,
			replicas: []ReplicaInfo{down(rep("n1", RoleActive, 0, 0), downAt), down(rep("n2", RoleStandby, 5000, 0), downAt),
				down(rep("n3", RoleStandby, 0, 0), downAt), down(rep("n4", RoleWarmup, 0, 0), downAt), rep("n5", RoleWarmup, 5000, 0)},
			answers:  []Answer{{Err: timeout}, {Unreachable: true}},
			attempts: []string{"n1 unwatched", "n4 unwatched"}, verdicts: []Verdict{TryNext, TryNext},
			message: head + "n1 (active) down since 12:04:05.123 UTC (2.1s ago); n2 (standby) down since 12:04:05.123 UTC (2.1s ago), offset lag 5000 > 1000 (basin.acceptable_offset_lag); " +
				"n3 (standby) down since 12:04:05.123 UTC (2.1s ago); n4 (warmup) down since 12:04:05.123 UTC (2.1s ago); n5 (warmup) offset lag 5000 > 1000 (basin.acceptable_offset_lag)"},
		{name: "a node marked down answers",
			bounds:   none,
			replicas: []ReplicaInfo{down(rep("n1", RoleActive, 0, 0), downAt), down(rep("n2", RoleStandby, 0, 0), downAt)},
			answers:  []Answer{{Err: timeout}, {}},
			attempts: []string{"n1 unwatched", "n2 unwatched"}, verdicts: []Verdict{TryNext, Finish}},
		{name: "a node marked down answers after sending rows: the read fails with it",
			bounds:   none,
			replicas: []ReplicaInfo{down(rep("n1", RoleActive, 0, 0), downAt), down(rep("n2", RoleStandby, 0, 0), downAt)},
			answers:  []Answer{{Err: timeout, Sent: true}},
			attempts: []string{"n1 unwatched"}, verdicts: []Verdict{Finish}, err: timeout},
		{name: "a node marked down answers stale: what it answered replaces 'down'",
			bounds:   lag1000,
			replicas: []ReplicaInfo{down(rep("n1", RoleActive, 0, 0), downAt), down(rep("n2", RoleStandby, 0, 0), downAt)},
			answers:  []Answer{{Err: errors.New("stale"), Stale: &staleN1}, {Err: refused}},
			attempts: []string{"n1 unwatched", "n2 unwatched"}, verdicts: []Verdict{TryNext, TryNext},
			message: head + "n1 (active) answered with offset lag 2000 > 1000 (basin.acceptable_offset_lag); n2 (standby) down since 12:04:05.123 UTC (2.1s ago)"},
		{name: "no node marked down is retried once another replica was tried",
			bounds:   none,
			replicas: []ReplicaInfo{down(rep("n1", RoleActive, 0, 0), downAt), rep("n2", RoleStandby, 0, 0)},
			answers:  []Answer{{Err: timeout}},
			attempts: []string{"n2"}, verdicts: []Verdict{FailedOver},
			message: head + "n1 (active) down since 12:04:05.123 UTC (2.1s ago); n2 (standby) read failed: " + timeout.Error()},
		{name: "no replica at all",
			bounds:  none,
			message: head[:len(head)-2] + ": the partition has no replica in the current assignment"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			self := tc.self
			if self == "" {
				self = "n0"
			}
			a := NewAttempts(Route(tc.replicas, tc.bounds, rnow), tc.bounds, self)
			var attempts []string
			var verdicts []Verdict
			var final error
			finished := false
			for !finished {
				at, ok := a.Next()
				if !ok {
					break
				}
				attempts = append(attempts, describeAttempt(at))
				if len(attempts) > len(tc.answers) {
					t.Fatalf("attempt %q has no answer; attempts %q", attempts[len(attempts)-1], attempts)
				}
				ans := tc.answers[len(attempts)-1]
				v := a.Report(ans)
				verdicts = append(verdicts, v)
				if v == Finish {
					finished, final = true, ans.Err
				}
			}
			if !slices.Equal(attempts, tc.attempts) {
				t.Errorf("attempts %q, want %q", attempts, tc.attempts)
			}
			if !slices.Equal(verdicts, tc.verdicts) {
				t.Errorf("verdicts %v, want %v", verdicts, tc.verdicts)
			}
			switch {
			case finished && tc.message != "":
				t.Errorf("finished with %v, want the read to fail with %q", final, tc.message)
			case finished && final != tc.err:
				t.Errorf("finished with %v, want %v", final, tc.err)
			case !finished && tc.message == "":
				t.Errorf("nothing left after %q, want it to finish", attempts)
			case !finished:
				if _, ok := a.Next(); ok {
					t.Errorf("Next after the end returned an attempt")
				}
				err := a.Err("v", 3)
				if err.Code != pgerr.ObjectNotInPrerequisiteState || err.Message != tc.message {
					t.Errorf("error %s %q,\nwant 55000 %q", err.Code, err.Message, tc.message)
				}
				if want := NoReplicaError("v", 3, tc.bounds, nil).Detail; err.Detail != want {
					t.Errorf("detail %q, want %q", err.Detail, want)
				}
			}
		})
	}
}

// TestAttemptsHint: an attempt that did not reach the position within
// basin.position_wait makes the hint say so, as its rejection replaces
// the replica's position rejection.
func TestAttemptsHint(t *testing.T) {
	b := ReadBounds{MaxOffsetLag: NoOffsetLagBound, MinPosition: pos(3, 120)}
	a := NewAttempts(Route([]ReplicaInfo{at(rep("n1", RoleActive, 0, 0), pos(3, 100))}, b, rnow), b, "n0")
	at, ok := a.Next()
	if !ok || at.Replica.Node != "n1" {
		t.Fatalf("first attempt %+v, %v; want n1", at, ok)
	}
	notReached := pgerr.New(pgerr.ObjectNotInPrerequisiteState, "partition 3 of v on node n1 %s within basin.position_wait (1s)", positionWaitText)
	a.Report(Answer{Err: notReached})
	// Then n1 again, asked for a restoring replica (the read accepts
	// any lag), which does not reach the position either.
	if at, ok = a.Next(); !ok || !at.ServeRestoring || at.Replica.Node != "n1" {
		t.Fatalf("second attempt %+v, %v; want n1 restoring", at, ok)
	}
	a.Report(Answer{Err: notReached})
	if _, ok := a.Next(); ok {
		t.Fatal("a third attempt")
	}
	if hint := a.Err("v", 3).Hint; !strings.Contains(hint, "SET basin.position_wait.") {
		t.Errorf("hint %q, want it to name basin.position_wait", hint)
	}
}
