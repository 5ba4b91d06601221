package ha

// Route decides where one partition's read goes: which replicas may
// serve it, in which order to try them, and, when none may, why each was
// turned down (docs/consistency.md, "Reads across replicas", is what
// users are told of it). Like Assign it is a
// pure, deterministic function, here of what this node knows of the
// replicas (from the assignment map, the heartbeats, the lag reports)
// and of the session's bounds, with the time passed in. The node's
// forwarder calls it per partition and hands the result to Attempts
// (attempts.go), which says which replica to try next, moving on at once
// when an attempt fails, and gives the NoReplicaError when nothing is
// left.
//
// # Candidates and checks
//
// The candidates are every replica of the partition: the active, running
// or restoring (KIP-535 serves restoring actives), the standbys, and the
// warm-ups. Warm-ups are candidates because they apply the same changelog
// as standbys and a replica's lag says exactly how stale it is; in the
// default order they come after every standby (they are usually still
// catching up, and a standby is the replica meant for reads), and lag
// bounds keep a cold one out like any other replica. ksqlDB reads only
// actives and standbys; when a view's standbys are being moved, the
// warm-up is often the freshest copy left.
//
// Each replica goes through these checks, in this order, and every check
// it fails is recorded (Rejection.Codes, Rejection.Reason):
//
//  1. read_from: with basin.read_from = 'active', anything but the
//     active (running or restoring) is out.
//  2. down: heartbeats say the node is down (ReplicaInfo.Alive).
//  3. lag: with an offset bound (basin.acceptable_offset_lag, else the
//     view's acceptable.offset.lag) or a time bound
//     (basin.acceptable_time_lag), a replica whose reported lag exceeds
//     either is out. A replica whose lag is unknown (no report yet, or a
//     report older than ReadBounds.MaxLagAge) is out with lag_unknown,
//     except a running active: it is the replica every other one trails,
//     and refusing it for want of a report would fail reads on a healthy
//     cluster each time a node starts. A restoring active gets no such
//     trust: it may be a full restore away from current (KIP-535's
//     caveat). Without any lag bound, unknown lag is no reason to reject.
//  4. position: with a position bound (basin.min_position, the session's
//     own writes, what its earlier reads of the partition returned), a
//     replica whose position does not cover it is out.
//
// # Order
//
// Among the replicas that pass, by basin.read_from:
//
//   - 'active': only the active; there is at most one.
//   - 'any' (the default): the running active first, as it is the
//     freshest by construction; then the standbys and a restoring active
//     by least offset lag, then least time lag (a restoring active is
//     lagging, so it earns its place by lag like a standby; it wins ties);
//     then the warm-ups in the same order.
//   - 'freshest': everyone by least offset lag, then least time lag; ties
//     go to the active, then a restoring active, then standbys, then
//     warm-ups.
//
// For ordering, a running active of unknown lag counts as lag 0 and any
// other replica of unknown lag as behind every replica with a report.
// Node ids break the remaining ties, so the order is total: the same
// replicas in any input order give the same result, on every node.
// ksqlDB sorts standbys by lag but treats the active apart, and fails
// with "Unable to execute pull query" without saying why; here every
// reason is kept.
//
// # Waiting for a position
//
// A replica turned down only because its position is behind the bound may
// catch up within basin.position_wait. Routing.Waitable lists those
// replicas, closest first (by Position.Behind, the sum of the offsets
// still missing, then the read_from order): when Ordered is empty, the
// caller waits for Waitable[0] (or for any of them) to reach the position
// and then reads from it, and calls NoReplicaError only when the wait
// runs out. A replica also lagging or down is not waitable: waiting would
// not make it acceptable.
//
// # The error
//
// NoReplicaError names the view, the partition and every replica with
// every reason it was rejected, states the bounds in DETAIL, and in HINT
// says which setting to relax and by how much, looking only at replicas
// that are up (raising a lag bound does not bring a node back). Its
// SQLSTATE is 55000 object_not_in_prerequisite_state: the view exists
// and the statement is valid, but no copy of this partition is in the
// state the read requires, which is that class's meaning; it is also
// what the pull executor already returns when a position wait runs out.
// The alternatives mislead clients: 08xxx (connection exception) makes
// pools such as HikariCP discard a healthy connection, 57P03
// (cannot_connect_now) is a startup-time refusal, 40001 invites
// transaction-retry loops that would hammer a cluster that is failing
// over, and 53xxx says the server is short of resources.

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/materialize"
)

// ReadFrom is the basin.read_from setting: which replicas a read may use,
// and in which order.
type ReadFrom string

const (
	// ReadFromActive reads only from the active, running or restoring.
	ReadFromActive ReadFrom = "active"
	// ReadFromAny reads from the running active first, then the least
	// lagging other replica. The default.
	ReadFromAny ReadFrom = "any"
	// ReadFromFreshest reads from the least lagging replica first.
	ReadFromFreshest ReadFrom = "freshest"
)

// ReplicaInfo is one replica of a partition as this node knows it.
type ReplicaInfo struct {
	// Node is the node id holding the replica.
	Node string
	// Role is the replica's role; other values than the Role constants
	// sort after warm-ups and never count as the active.
	Role Role
	// Alive is false when heartbeats say the node is down (Liveness).
	Alive bool
	// DownSince is when the node went down, for messages; zero if alive
	// or unknown.
	DownSince time.Time
	// OffsetLag is the number of input records the replica does not yet
	// reflect, and TimeLagMs the age of the oldest of them (0 when caught
	// up; stream's TaskState.Lag), as its last lag report said. They mean
	// nothing unless LagKnown.
	OffsetLag int64
	TimeLagMs int64
	// LagKnown is set when a lag report for the replica has arrived.
	LagKnown bool
	// LagAge is how old that report is.
	LagAge time.Duration
	// Position is the replica's source position as last reported; nil
	// when unknown, which covers only an empty bound.
	Position materialize.Position
}

// timeLag returns the reported time lag as a duration.
func (ri *ReplicaInfo) timeLag() time.Duration { return time.Duration(ri.TimeLagMs) * time.Millisecond }

// NoOffsetLagBound is the ReadBounds.MaxOffsetLag of a read without an
// offset lag bound.
const NoOffsetLagBound int64 = -1

// DefaultOffsetLagSetting names the setting of an offset lag bound in
// messages when ReadBounds.OffsetLagSetting is empty.
const DefaultOffsetLagSetting = "basin.acceptable_offset_lag"

// ReadBounds is what a read accepts: the session's settings and the
// view's, resolved.
type ReadBounds struct {
	// MaxOffsetLag is the largest acceptable offset lag, in records;
	// negative (NoOffsetLagBound) for none. Beware that zero is a bound:
	// only replicas with nothing left to apply.
	MaxOffsetLag int64
	// OffsetLagSetting names where MaxOffsetLag came from, quoted in
	// messages: empty for DefaultOffsetLagSetting (the session's SET);
	// say "acceptable.offset.lag of revenue_by_region" when it is the
	// view's WITH option.
	OffsetLagSetting string
	// MaxTimeLag is the largest acceptable time lag
	// (basin.acceptable_time_lag); zero for none.
	MaxTimeLag time.Duration
	// MinPosition is the position a replica must cover (the session's
	// writes, what its earlier reads of the partition returned,
	// basin.min_position); empty for none. MinPositionFrom names where
	// it came from, quoted in messages: empty for "basin.min_position".
	MinPosition     materialize.Position
	MinPositionFrom string
	// ReadFrom is basin.read_from; empty means ReadFromAny.
	ReadFrom ReadFrom
	// MaxLagAge, when positive, makes a lag report older than it count as
	// unknown: a node whose reporter is stuck must not keep vouching for
	// a lag it reported long ago. Set it to a few lag-report intervals.
	MaxLagAge time.Duration
}

// Validate checks b. Route treats an unknown ReadFrom as ReadFromAny and
// negative durations as no bound; Validate is for the code that builds
// bounds from settings.
func (b *ReadBounds) Validate() error {
	switch b.ReadFrom {
	case "", ReadFromActive, ReadFromAny, ReadFromFreshest:
	default:
		return fmt.Errorf("ha: read_from %q is not active, any or freshest", string(b.ReadFrom))
	}
	if b.MaxTimeLag < 0 {
		return fmt.Errorf("ha: acceptable time lag %v is negative", b.MaxTimeLag)
	}
	if b.MaxLagAge < 0 {
		return fmt.Errorf("ha: maximum lag report age %v is negative", b.MaxLagAge)
	}
	return nil
}

func (b *ReadBounds) readFrom() ReadFrom {
	switch b.ReadFrom {
	case ReadFromActive, ReadFromFreshest:
		return b.ReadFrom
	}
	return ReadFromAny
}

func (b *ReadBounds) offsetLagSetting() string {
	if b.OffsetLagSetting != "" {
		return b.OffsetLagSetting
	}
	return DefaultOffsetLagSetting
}

func (b *ReadBounds) minPositionFrom() string {
	if b.MinPositionFrom != "" {
		return b.MinPositionFrom
	}
	return "basin.min_position"
}

func (b *ReadBounds) lagBounded() bool { return b.MaxOffsetLag >= 0 || b.MaxTimeLag > 0 }

func (b *ReadBounds) positionBounded() bool {
	for _, parts := range b.MinPosition {
		if len(parts) > 0 {
			return true
		}
	}
	return false
}

// lagKnown reports whether ri's lag report is usable under b.
func (b *ReadBounds) lagKnown(ri *ReplicaInfo) bool {
	return ri.LagKnown && (b.MaxLagAge <= 0 || ri.LagAge <= b.MaxLagAge)
}

// RejectCode is the machine-readable reason a replica was not used.
type RejectCode string

const (
	// RejectReadFrom: basin.read_from = 'active' and the replica is not
	// the active.
	RejectReadFrom RejectCode = "read_from"
	// RejectDown: heartbeats say the node is down.
	RejectDown RejectCode = "down"
	// RejectLagUnknown: a lag bound is set and the replica's lag is not
	// known (no report, or too old).
	RejectLagUnknown RejectCode = "lag_unknown"
	// RejectOffsetLag: the offset lag exceeds the bound.
	RejectOffsetLag RejectCode = "offset_lag"
	// RejectTimeLag: the time lag exceeds the bound.
	RejectTimeLag RejectCode = "time_lag"
	// RejectPosition: the replica's position does not cover the bound.
	RejectPosition RejectCode = "position"
	// RejectAttemptFailed: the replica was tried and the read failed
	// (AttemptFailed); Route never returns it.
	RejectAttemptFailed RejectCode = "attempt_failed"
)

// Rejection is a replica that will not serve the read, and why.
type Rejection struct {
	ReplicaInfo
	// Code is the first check the replica failed; Codes all of them, in
	// check order (Code == Codes[0]).
	Code  RejectCode
	Codes []RejectCode
	// Reason describes every failed check for a person, e.g. "down since
	// 12:04:05.123 UTC (2.1s ago), offset lag 12345 > 1000
	// (basin.acceptable_offset_lag)".
	Reason string
}

// Has reports whether the replica failed the check code.
func (r *Rejection) Has(code RejectCode) bool { return slices.Contains(r.Codes, code) }

// Routing is Route's decision for one partition.
type Routing struct {
	// Ordered are the replicas that may serve the read, best first.
	Ordered []ReplicaInfo
	// Waitable are the replicas rejected only for their position, closest
	// to the bound first: candidates once they catch up. Each is also in
	// Rejected.
	Waitable []ReplicaInfo
	// Rejected are the replicas that may not serve the read, by role
	// (active, restoring, standby, warm-up) and node id.
	Rejected []Rejection
}

// Route decides which of a partition's replicas may serve a read under b,
// and in which order to try them. now is the time of the read; it only
// appears in messages ("2.1s ago"). Every replica ends up in exactly one
// of Ordered and Rejected. See the comment at the top of router.go.
func Route(replicas []ReplicaInfo, b ReadBounds, now time.Time) Routing {
	return RouteInto(make([]ReplicaInfo, 0, len(replicas)), replicas, b, now)
}

// RouteInto is Route with the routing's Ordered made in ordered's
// memory (from its start), which must not overlap replicas.
func RouteInto(ordered, replicas []ReplicaInfo, b ReadBounds, now time.Time) Routing {
	mode := b.readFrom()
	r := Routing{Ordered: ordered[:0]}
	for _, ri := range replicas {
		rej, ok := check(&ri, &b, mode, now)
		if ok {
			r.Ordered = append(r.Ordered, ri)
			continue
		}
		r.Rejected = append(r.Rejected, rej)
		if len(rej.Codes) == 1 && rej.Code == RejectPosition {
			r.Waitable = append(r.Waitable, ri)
		}
	}
	order := func(x, y ReplicaInfo) int { return compareReplicas(mode, &b, &x, &y) }
	slices.SortStableFunc(r.Ordered, order)
	slices.SortStableFunc(r.Waitable, func(x, y ReplicaInfo) int {
		return cmp.Or(cmp.Compare(x.Position.Behind(b.MinPosition), y.Position.Behind(b.MinPosition)), order(x, y))
	})
	slices.SortStableFunc(r.Rejected, compareRejections)
	return r
}

// check runs every check on ri. It returns ok when ri passes them all,
// else the rejection.
func check(ri *ReplicaInfo, b *ReadBounds, mode ReadFrom, now time.Time) (Rejection, bool) {
	rej := Rejection{ReplicaInfo: *ri}
	var reasons []string
	fail := func(code RejectCode, reason string) {
		rej.Codes = append(rej.Codes, code)
		reasons = append(reasons, reason)
	}
	if mode == ReadFromActive && !ri.Role.isActive() {
		fail(RejectReadFrom, "not the active (basin.read_from = active)")
	}
	if !ri.Alive {
		fail(RejectDown, downReason(ri.DownSince, now))
	}
	if b.lagBounded() {
		switch {
		case b.lagKnown(ri):
			if b.MaxOffsetLag >= 0 && ri.OffsetLag > b.MaxOffsetLag {
				fail(RejectOffsetLag, fmt.Sprintf("offset lag %d > %d (%s)", ri.OffsetLag, b.MaxOffsetLag, b.offsetLagSetting()))
			}
			if b.MaxTimeLag > 0 && ri.timeLag() > b.MaxTimeLag {
				fail(RejectTimeLag, fmt.Sprintf("time lag %v > %v (basin.acceptable_time_lag)", ri.timeLag(), b.MaxTimeLag))
			}
		case ri.Role == RoleActive:
			// A running active is trusted without a report.
		case ri.LagKnown:
			fail(RejectLagUnknown, fmt.Sprintf("lag unknown (last report %s ago, older than %v)", formatAge(ri.LagAge), b.MaxLagAge))
		default:
			fail(RejectLagUnknown, "lag unknown (no report yet)")
		}
	}
	if b.positionBounded() && !ri.Position.Covers(b.MinPosition) {
		fail(RejectPosition, positionReason(ri.Position, b.MinPosition))
	}
	if len(rej.Codes) == 0 {
		return Rejection{}, true
	}
	rej.Code = rej.Codes[0]
	rej.Reason = strings.Join(reasons, ", ")
	return rej, false
}

// AttemptFailed is the rejection of a replica that Route ordered but that
// failed when tried (connection refused, timeout, node gone), for the
// caller to pass to NoReplicaError with Route's rejections once every
// candidate has failed.
func AttemptFailed(ri ReplicaInfo, err error) Rejection {
	return Rejection{ReplicaInfo: ri, Code: RejectAttemptFailed, Codes: []RejectCode{RejectAttemptFailed},
		Reason: "read failed: " + err.Error()}
}

// sortLag returns the lag ri sorts by: its report, 0 for a running active
// without one, and after everything for anyone else without one.
func sortLag(b *ReadBounds, ri *ReplicaInfo) (offset, timeMs int64) {
	switch {
	case b.lagKnown(ri):
		return ri.OffsetLag, ri.TimeLagMs
	case ri.Role == RoleActive:
		return 0, 0
	}
	return math.MaxInt64, math.MaxInt64
}

// anyGroup is a replica's tier under ReadFromAny: the running active,
// then standbys and a restoring active, then warm-ups, then the rest.
func anyGroup(r Role) int {
	switch r {
	case RoleActive:
		return 0
	case RoleRestoring, RoleStandby:
		return 1
	case RoleWarmup:
		return 2
	}
	return 3
}

// compareReplicas is the read_from order; it is total on distinct nodes.
func compareReplicas(mode ReadFrom, b *ReadBounds, x, y *ReplicaInfo) int {
	xo, xt := sortLag(b, x)
	yo, yt := sortLag(b, y)
	byLag := cmp.Or(cmp.Compare(xo, yo), cmp.Compare(xt, yt))
	tail := cmp.Or(cmp.Compare(x.Role.rank(), y.Role.rank()), strings.Compare(x.Node, y.Node))
	switch mode {
	case ReadFromActive:
		return tail
	case ReadFromFreshest:
		return cmp.Or(byLag, tail)
	}
	return cmp.Or(cmp.Compare(anyGroup(x.Role), anyGroup(y.Role)), byLag, tail)
}

// compareRejections orders rejections for lists and messages: by role,
// then node.
func compareRejections(x, y Rejection) int {
	return cmp.Or(cmp.Compare(x.Role.rank(), y.Role.rank()), strings.Compare(x.Node, y.Node))
}

// downReason describes a node down since since, at now.
func downReason(since, now time.Time) string {
	if since.IsZero() {
		return "down"
	}
	s := since.UTC()
	layout := "15:04:05.000"
	if n := now.UTC(); !now.IsZero() && (n.Year() != s.Year() || n.YearDay() != s.YearDay()) {
		layout = "2006-01-02 15:04:05.000"
	}
	text := "down since " + s.Format(layout) + " UTC"
	if !now.IsZero() {
		text += " (" + formatAge(now.Sub(since)) + " ago)"
	}
	return text
}

// formatAge formats an elapsed time to a precision that suits its size:
// milliseconds under a second, tenths of seconds under a minute, seconds
// beyond.
func formatAge(d time.Duration) string {
	switch {
	case d < 0:
		d = 0
	case d < time.Second:
		d = d.Round(time.Millisecond)
	case d < time.Minute:
		d = d.Round(100 * time.Millisecond)
	default:
		d = d.Round(time.Second)
	}
	return d.String()
}

// positionReason describes how have falls short of want: the first
// source partition (in topic, partition order) it is behind on, and how
// many more there are.
func positionReason(have, want materialize.Position) string {
	var first string
	more := 0
	for _, topic := range slices.Sorted(maps.Keys(want)) {
		parts := want[topic]
		for _, part := range slices.Sorted(maps.Keys(parts)) {
			got, _ := have.Get(topic, part)
			if got >= parts[part] {
				continue
			}
			if first == "" {
				first = fmt.Sprintf("%s/%d at %d < %d", topic, part, got, parts[part])
			} else {
				more++
			}
		}
	}
	text := "position behind the bound: " + first
	switch more {
	case 0:
	case 1:
		text += " (and 1 more partition)"
	default:
		text += " (and " + strconv.Itoa(more) + " more partitions)"
	}
	return text
}

// NoReplicaError is the error of a read of view's partition that no
// replica can serve, SQLSTATE 55000 (see the top of router.go for why):
// the message names every replica and why it was rejected, DETAIL states
// what the read accepts, and HINT what to relax. rejected is Route's
// Rejected, plus an AttemptFailed for each candidate that failed when
// tried; the order does not matter.
func NoReplicaError(view string, partition int32, b ReadBounds, rejected []Rejection) *pgerr.Error {
	rs := slices.Clone(rejected)
	slices.SortStableFunc(rs, compareRejections)
	var msg string
	if len(rs) == 0 {
		msg = fmt.Sprintf("no replica of %s partition %d can serve this read: the partition has no replica in the current assignment", view, partition)
	} else {
		parts := make([]string, len(rs))
		for i, r := range rs {
			parts[i] = fmt.Sprintf("%s (%s) %s", r.Node, r.Role, r.Reason)
		}
		msg = fmt.Sprintf("no replica of %s partition %d can serve this read: %s", view, partition, strings.Join(parts, "; "))
	}
	return &pgerr.Error{Code: pgerr.ObjectNotInPrerequisiteState, Message: msg, Detail: boundsDetail(&b), Hint: relaxHint(&b, rs)}
}

// boundsDetail states what a read under b accepts.
func boundsDetail(b *ReadBounds) string {
	var sb strings.Builder
	switch b.readFrom() {
	case ReadFromActive:
		sb.WriteString("The read accepts only the active replica (basin.read_from = active)")
	case ReadFromFreshest:
		sb.WriteString("The read accepts any live replica, least lagging first (basin.read_from = freshest)")
	default:
		sb.WriteString("The read accepts any live replica, the active first (basin.read_from = any)")
	}
	var with []string
	if b.MaxOffsetLag >= 0 {
		with = append(with, fmt.Sprintf("offset lag at most %d (%s)", b.MaxOffsetLag, b.offsetLagSetting()))
	}
	if b.MaxTimeLag > 0 {
		with = append(with, fmt.Sprintf("time lag at most %v (basin.acceptable_time_lag)", b.MaxTimeLag))
	}
	if b.positionBounded() {
		with = append(with, fmt.Sprintf("position at least %s (%s)", b.MinPosition.Describe(), b.minPositionFrom()))
	}
	if len(with) > 0 {
		sb.WriteString(", with ")
		sb.WriteString(joinAnd(with))
	}
	sb.WriteString(".")
	if b.MaxLagAge > 0 && b.lagBounded() {
		fmt.Fprintf(&sb, " Lag reports older than %v count as unknown.", b.MaxLagAge)
	}
	return sb.String()
}

// relaxHint says which settings would let more replicas qualify. It only
// looks at replicas that are up and were not tried: for the others no
// setting helps.
func relaxHint(b *ReadBounds, rs []Rejection) string {
	var readFrom bool
	var offset, timeLag, pos *Rejection
	var posBehind int64
	var unknown []string
	posWait := false
	for i := range rs {
		r := &rs[i]
		if r.Has(RejectAttemptFailed) && strings.Contains(r.Reason, positionWaitText) {
			posWait = true
		}
		if r.Has(RejectDown) || r.Has(RejectAttemptFailed) {
			continue
		}
		if r.Has(RejectReadFrom) {
			readFrom = true
		}
		if r.Has(RejectOffsetLag) && (offset == nil || r.OffsetLag < offset.OffsetLag) {
			offset = r
		}
		if r.Has(RejectTimeLag) && (timeLag == nil || r.TimeLagMs < timeLag.TimeLagMs) {
			timeLag = r
		}
		if r.Has(RejectLagUnknown) {
			unknown = append(unknown, r.Node)
		}
		if r.Has(RejectPosition) {
			if d := r.Position.Behind(b.MinPosition); pos == nil || d < posBehind {
				pos, posBehind = r, d
			}
		}
	}
	var hints []string
	if readFrom {
		hints = append(hints, "To read from standbys too, SET basin.read_from = 'any'.")
	}
	if offset != nil {
		hints = append(hints, fmt.Sprintf("To accept more lag, SET basin.acceptable_offset_lag (%s is %s behind).", offset.Node, plural(offset.OffsetLag, "record")))
	}
	if timeLag != nil {
		hints = append(hints, fmt.Sprintf("To accept older data, SET basin.acceptable_time_lag (%s is %v behind).", timeLag.Node, timeLag.timeLag()))
	}
	if len(unknown) > 0 {
		hints = append(hints, fmt.Sprintf("Retry shortly: there is no current lag report from %s.", strings.Join(unknown, ", ")))
	}
	if pos != nil {
		hints = append(hints, fmt.Sprintf("To wait longer for a replica to reach the position, SET basin.position_wait (%s is %s behind it).", pos.Node, plural(posBehind, "offset")))
	} else if posWait {
		hints = append(hints, "To wait longer for a replica to reach the position, SET basin.position_wait.")
	}
	switch {
	case len(hints) > 0:
		return strings.Join(hints, " ")
	case len(rs) == 0:
		return "Retry shortly: the cluster is assigning the partition."
	}
	return "Retry once a node holding the partition is back, or once the partition has moved to a live node."
}

// positionWaitText is in the error of a replica that did not reach a
// read's position within basin.position_wait (pull's waitPosition): an
// attempt that failed so is one a longer wait could fix.
const positionWaitText = "has not reached the position this read needs"

// plural formats n things: "1 record", "12345 records".
func plural(n int64, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return strconv.FormatInt(n, 10) + " " + thing + "s"
}

// joinAnd joins "a", "a and b", "a, b and c".
func joinAnd(items []string) string {
	if len(items) <= 1 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}

// Infos lists r's replicas for Route: the active, then the standbys,
// then the warm-ups, with Node and Role set and Alive true (not known to
// be down, as an untracked node is for Liveness). The caller fills in
// liveness and lag, and sets RoleRestoring on an active that has not
// restored yet.
func (r Replicas) Infos() []ReplicaInfo { return r.AppendInfos(nil) }

// AppendInfos appends Infos to out.
func (r Replicas) AppendInfos(out []ReplicaInfo) []ReplicaInfo {
	if r.Active != "" {
		out = append(out, ReplicaInfo{Node: r.Active, Role: RoleActive, Alive: true})
	}
	for _, n := range r.Standbys {
		out = append(out, ReplicaInfo{Node: n, Role: RoleStandby, Alive: true})
	}
	for _, n := range r.Warmups {
		out = append(out, ReplicaInfo{Node: n, Role: RoleWarmup, Alive: true})
	}
	return out
}

// RejectStaleAnswer: the replica was tried and its answer, by the lag
// and position it was read at (which the serving node sends with the
// rows), does not meet the bounds, whatever its last lag report said;
// Route never returns it.
const RejectStaleAnswer RejectCode = "stale_answer"

// CheckAnswer checks an answer ri served against b's lag and position
// bounds: offsetLag and timeLagMs are the lag the serving replica read
// at, pos (when havePos) its position. Liveness, read_from and the age
// of lag reports are routing's business (Route); this is the check that
// does not trust a lag report, forged or stale: the router applies it to
// what came back before passing any row on. ok when the answer
// qualifies, else the rejection.
func CheckAnswer(ri ReplicaInfo, offsetLag, timeLagMs int64, pos materialize.Position, havePos bool, b *ReadBounds) (Rejection, bool) {
	var reasons []string
	if b.MaxOffsetLag >= 0 && offsetLag > b.MaxOffsetLag {
		reasons = append(reasons, fmt.Sprintf("answered with offset lag %d > %d (%s)", offsetLag, b.MaxOffsetLag, b.offsetLagSetting()))
	}
	if tl := time.Duration(timeLagMs) * time.Millisecond; b.MaxTimeLag > 0 && tl > b.MaxTimeLag {
		reasons = append(reasons, fmt.Sprintf("answered with time lag %v > %v (basin.acceptable_time_lag)", tl, b.MaxTimeLag))
	}
	if havePos && b.positionBounded() && !pos.Covers(b.MinPosition) {
		reasons = append(reasons, "answered at a "+positionReason(pos, b.MinPosition))
	}
	if len(reasons) == 0 {
		return Rejection{}, true
	}
	ri.OffsetLag, ri.TimeLagMs, ri.LagKnown = offsetLag, timeLagMs, true
	if havePos {
		ri.Position = pos
	}
	return Rejection{ReplicaInfo: ri, Code: RejectStaleAnswer, Codes: []RejectCode{RejectStaleAnswer}, Reason: strings.Join(reasons, ", ")}, false
}
