package ha

// Attempts is the rest of a read's routing once Route has decided: which
// replica to try next, given what the attempts so far answered, and when
// to give up. Like Route it is pure: the caller (node/forward.go) makes
// each attempt over the wire, or reads this node's own replica, and
// reports what came back; Attempts never does I/O, reads no clock and
// holds no lock, so every branch is tested in process (attempts_test.go).
//
// # The attempts, in order
//
//  1. Route's Ordered, then its Waitable (replicas behind the position
//     bound, which wait up to basin.position_wait to catch up): each in
//     turn, the next at once when one fails before sending a row. A
//     waitable replica's position rejection is dropped when it is tried:
//     if it fails, its attempt's reason replaces it. A failed attempt
//     adds AttemptFailed (or, for an answer behind the bounds, the
//     stale-answer rejection CheckAnswer made) to the rejections.
//  2. When the session accepts any lag (no offset or time bound), the
//     peers that answered 55000 in step 1 (typically a standby that has
//     just become the active and is replaying the changelog's tail) are
//     asked again to serve from a restoring replica (Attempt.ServeRestoring;
//     their rows then say _role = 'restoring').
//  3. When Route left nothing to try at all, the peers rejected for being
//     down and for no other reason are tried after all, without the
//     heartbeat watch (Attempt.Watch false): a node too busy to send
//     heartbeats in time may still answer within basin.forward_timeout.
//
// The read ends with the first attempt that serves it, that sent rows
// before failing (they cannot be taken back), that failed because the
// read itself was cancelled, or whose error says the query itself failed
// (an SQLSTATE other than 55000: another replica would fail too). When
// nothing is left, Err is the 55000 that names every replica and why.

import "github.com/basindb/basin/internal/pgerr"

// Attempts is the replica selection of one partition's read after Route:
// Next, Report, Next... until Report says Finish or Next says nothing is
// left (see the top of attempts.go). Not safe for concurrent use; one
// read drives it.
type Attempts struct {
	b       ReadBounds
	routing Routing
	self    string
	// tries are step 1's replicas, Ordered then Waitable; the first
	// waiting of them are Ordered.
	tries   []ReplicaInfo
	waiting int
	step    int // 1, 2, 3, or 4 once nothing is left
	next    int // the next index in the step's list
	cur     Attempt
	// rejected is what Err reports: Route's rejections as attempts
	// revised them, plus every failed attempt.
	rejected []Rejection
	refused  []ReplicaInfo // peers that answered 55000 in step 1
}

// Attempt is one replica to try.
type Attempt struct {
	Replica ReplicaInfo
	// Local is set when the replica is this node's own.
	Local bool
	// ServeRestoring asks the peer to serve from its replica even while
	// it restores (step 2); Replica.Role is then RoleRestoring.
	ServeRestoring bool
	// Watch is set when the attempt should end as soon as heartbeats say
	// the node is down; not for step 3, whose nodes already are.
	Watch bool
}

// Answer is what an attempt came back with.
type Answer struct {
	// Err is the attempt's error; nil when the replica served the read.
	Err error
	// Sent is set when rows went out before Err.
	Sent bool
	// Canceled is set when the read's own context ended.
	Canceled bool
	// Stale, when not nil, is the rejection of an answer that does not
	// meet the bounds by the lag or position it was read at
	// (CheckAnswer): none of its rows was passed on.
	Stale *Rejection
	// Unreachable is set when the node could not be tried at all (the
	// assignment gives no address for it); nothing is recorded for it.
	Unreachable bool
}

// Verdict is what Report makes of an answer.
type Verdict int

const (
	// TryNext: go on with Next.
	TryNext Verdict = iota
	// FailedOver: the replica failed and the read moves on to the next
	// (node counts these as failovers); go on with Next.
	FailedOver
	// Finish: the read ends with the attempt's answer, its Err (nil when
	// it served).
	Finish
)

// NewAttempts starts the attempts of a read that Route routed as r under
// b; self is this node's id.
func NewAttempts(r Routing, b ReadBounds, self string) Attempts {
	tries := append(r.Ordered, r.Waitable...)
	return Attempts{b: b, routing: r, self: self, tries: tries, waiting: len(r.Ordered), step: 1, rejected: r.Rejected}
}

// Next returns the attempt to make next; ok is false when none is left,
// and then Err is the read's error. Each attempt Next returns must be
// answered with Report before Next is called again.
func (a *Attempts) Next() (at Attempt, ok bool) {
	for {
		switch a.step {
		case 1:
			if a.next < len(a.tries) {
				ri := a.tries[a.next]
				if a.next >= a.waiting {
					a.rejected = dropRejection(a.rejected, ri.Node)
				}
				a.next++
				a.cur = Attempt{Replica: ri, Local: ri.Node == a.self, Watch: true}
				return a.cur, true
			}
			a.step, a.next = 2, 0
			if a.b.lagBounded() {
				a.step = 3
			}
		case 2:
			if a.next < len(a.refused) {
				ri := a.refused[a.next]
				a.next++
				ri.Role = RoleRestoring
				a.cur = Attempt{Replica: ri, ServeRestoring: true, Watch: true}
				return a.cur, true
			}
			a.step, a.next = 3, 0
		case 3:
			for len(a.tries) == 0 && a.next < len(a.routing.Rejected) {
				rj := a.routing.Rejected[a.next]
				a.next++
				if rj.Node == a.self || len(rj.Codes) != 1 || rj.Code != RejectDown {
					continue
				}
				a.cur = Attempt{Replica: rj.ReplicaInfo}
				return a.cur, true
			}
			a.step = 4
		default:
			return Attempt{}, false
		}
	}
}

// Report takes the answer to the attempt Next last returned and says
// whether the read ends with it.
func (a *Attempts) Report(ans Answer) Verdict {
	ri := a.cur.Replica
	switch {
	case a.step == 1 && a.cur.Local:
		// This node's replica refuses with 55000 when it cannot serve
		// (restoring, behind the position past basin.position_wait);
		// anything else is the read's answer.
		if ans.Err == nil || ans.Canceled || pgerr.CodeOf(ans.Err) != pgerr.ObjectNotInPrerequisiteState {
			return Finish
		}
		a.rejected = append(a.rejected, AttemptFailed(ri, ans.Err))
		return FailedOver
	case ans.Unreachable:
		return TryNext
	case ans.Err == nil || ans.Sent || ans.Canceled:
		return Finish
	case a.step == 2:
		return TryNext // step 1 has said why
	case a.step == 3:
		if ans.Stale != nil {
			a.rejected = append(dropRejection(a.rejected, ri.Node), *ans.Stale)
		}
		return TryNext
	case ans.Stale != nil:
		// The replica answered, but behind the bound: its lag report
		// (forged, or just old) said otherwise.
		a.rejected = append(a.rejected, *ans.Stale)
		return FailedOver
	}
	if pe, ok := pgerr.As(ans.Err); ok && pe.Code != pgerr.ObjectNotInPrerequisiteState {
		return Finish // the query itself failed: another replica would fail too
	} else if ok {
		a.refused = append(a.refused, ri)
	}
	a.rejected = append(a.rejected, AttemptFailed(ri, ans.Err))
	return FailedOver
}

// Err is the error of a read of view's partition that no attempt served:
// NoReplicaError over every rejection and failed attempt.
func (a *Attempts) Err(view string, partition int32) *pgerr.Error {
	return NoReplicaError(view, partition, a.b, a.rejected)
}

// dropRejection removes node's rejection from rejected: a replica that
// was behind the position bound is being tried after all, and if it
// fails its attempt's reason replaces it.
func dropRejection(rejected []Rejection, node string) []Rejection {
	out := rejected[:0:0]
	for _, r := range rejected {
		if r.Node != node {
			out = append(out, r)
		}
	}
	return out
}
