package kafka

import (
	"cmp"
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// sessionKeeper makes kfake end group sessions where Kafka's coordinator
// would, in the two places kfake's differ.
//
// # Members waiting for an answer
//
// Kafka never times out a member while it holds the member's JoinGroup
// (until the join phase completes) or SyncGroup (until the leader's
// arrives): a member waiting for an answer cannot heartbeat, and counts
// as alive. kfake keeps the session timer it started at the member's last
// heartbeat or answer running, and when it fires removes the member
// without ever answering the request it holds. The client then waits out
// its request timeout (the rebalance timeout for a SyncGroup, that plus
// kgo's 10 s for a JoinGroup) before it joins again, as a new member,
// which starts another rebalance. This happens whenever a join phase, or
// the wait for the leader's SyncGroup, lasts longer than a session
// timeout: a member slow to rejoin (its process starved of CPU), a leader
// that dies or balances slowly. Every member's timer starts with the
// JoinGroup answers, so when the leader dies kfake times its followers
// out at the same moment as the leader, whichever comes first; with the
// short session timeouts of tests, a chaos run lost nodes from the group
// for 30 to 40 s at a time ("unable to join group session: ... i/o
// timeout" in their logs), and while they were out the others rebalanced
// again and again.
//
// The keeper therefore heartbeats on behalf of every member waiting for
// an answer, as often as a client would (a third of the session timeout),
// which is what kfake's timer counts: a JoinGroup waits while the group
// is preparing a rebalance at the generation it arrived in, a SyncGroup
// while the group completes the rebalance of its generation. It stops
// when the request is answered, when the member sends another, leaves or
// is removed, and at the member's rebalance timeout, when its client
// gives up on the request. A member that dies while it waits is kept
// until its answer is written, as Kafka keeps it, and kfake's timer
// removes it a session timeout later.
//
// # Members that died before their first answer
//
// In Kafka, when a rebalance's join phase completes, every member's
// session timer starts again, whether or not its answer reached it: a
// member that sent its JoinGroup and died is in the new generation, is
// given an assignment, and is removed when it sends no heartbeat within
// its session timeout. kfake starts a member's session timer only when
// an answer to it is written, so a member that joined for the first time
// (a node started, or restarted after its old session ended) and died
// before the answer has none (unless the keeper heartbeated for it while
// it waited). kfake's other guard, the rebalance timeout for members that
// do not send their SyncGroup, stops when the leader's SyncGroup arrives.
// The group then stays stable with the dead member in it: the others hold
// an assignment that gives it tasks, no rebalance moves them, and they
// stay unserved until some other member joins or leaves.
//
// The keeper does what Kafka's coordinator would: a member whose last
// request was a JoinGroup (the keeper's own heartbeats for it while it
// waited do not count), in a group that has since begun a newer
// generation (some member sent a SyncGroup for it), and that has sent
// nothing for twice its session timeout since, is removed with a
// LeaveGroup naming its member id, which starts a rebalance without it.
// Twice, so that kfake's own timer goes first wherever it runs; the
// member id, so that a node restarted meanwhile under the same instance
// id is not the one removed.
//
// The keeper learns of members from the group requests (a kfake control
// function that only observes) and asks kfake for the group's state and
// generation (Cluster.GroupInfo); its heartbeats and LeaveGroups go over
// the wire like any client's.
type sessionKeeper struct {
	log *slog.Logger
	c   *kfake.Cluster
	cl  *kgo.Client

	mu     sync.Mutex
	groups map[string]*groupWatch
}

// groupWatch is what the keeper knows of one group.
type groupWatch struct {
	// gen is the highest generation a SyncGroup named, and genAt when
	// the first SyncGroup for it arrived: the join phase that made it
	// was complete by then.
	gen   int32
	genAt time.Time
	// joining are the members whose last request was a JoinGroup, by
	// instance id if they have one, else by member id.
	joining map[string]*joinWatch
	// awaiting are the members whose last JoinGroup or SyncGroup the
	// broker may still be holding, keyed as joining.
	awaiting map[string]*awaitWatch
	// timeouts are each member's session and rebalance timeouts, from its
	// last JoinGroup (a SyncGroup carries neither), keyed as joining.
	timeouts map[string]memberTimeouts
}

// awaitWatch is a member whose JoinGroup or SyncGroup the broker may be
// holding for the end of the join phase or for the leader's SyncGroup.
type awaitWatch struct {
	sync                 bool // a SyncGroup, else a JoinGroup
	memberID, instanceID string
	// gen is the generation the request waits in: the group's when the
	// JoinGroup arrived (the join phase it is in ends by starting the
	// next), or the SyncGroup's own.
	gen     int32
	session time.Duration // zero when unknown
	// until is when the member's client gives up on the request.
	until  time.Time
	beatAt time.Time
}

type memberTimeouts struct{ session, rebalance time.Duration }

// defaultAwait bounds the keeper's heartbeats for a SyncGroup of a member
// whose rebalance timeout it does not know (the broker restarted since the
// member's JoinGroup): kgo's default rebalance timeout.
const defaultAwait = time.Minute

// joinWatch is a member that sent a JoinGroup and nothing since.
type joinWatch struct {
	memberID, instanceID string // either may be empty
	session              time.Duration
	at                   time.Time
	gen                  int32 // the highest generation synced when it joined
	// epoch is the group's generation when the JoinGroup arrived. Only a
	// heartbeat for a later one shows the member alive: the keeper's own
	// heartbeats for the member while it waits name this one.
	epoch int32
}

func newSessionKeeper(c *kfake.Cluster, addrs []string, log *slog.Logger) (*sessionKeeper, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ClientID("basin-broker-sessions"),
		kgo.WithLogger(kgoLogger{log.With("component", "broker-sessions")}))
	if err != nil {
		return nil, err
	}
	k := &sessionKeeper{log: log, c: c, cl: cl, groups: map[string]*groupWatch{}}
	observe := func(req kmsg.Request) (kmsg.Response, error, bool) {
		gen := int32(-1)
		if r, ok := req.(*kmsg.JoinGroupRequest); ok {
			// The generation the JoinGroup arrives in. kfake answers
			// GroupInfo from its request loop, which serves it while a
			// control function runs; the request is handled right after.
			gen = 0 // a group that does not exist yet starts at 0
			if info := c.GroupInfo(r.Group); info != nil {
				gen = info.Epoch
			}
		}
		k.observe(req, gen, time.Now())
		return nil, nil, false
	}
	for _, key := range []int16{kmsg.JoinGroup.Int16(), kmsg.SyncGroup.Int16(), kmsg.Heartbeat.Int16(), kmsg.LeaveGroup.Int16()} {
		c.ControlKey(key, observe)
	}
	return k, nil
}

func memberKey(memberID string, instanceID *string) string {
	if instanceID != nil {
		return "i:" + *instanceID
	}
	return "m:" + memberID
}

// observe records one group request; joinGen is the group's generation
// when a JoinGroup arrived. It runs on kfake's request loop and must be
// quick.
func (k *sessionKeeper) observe(req kmsg.Request, joinGen int32, now time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	group := func(name string) *groupWatch {
		g := k.groups[name]
		if g == nil {
			g = &groupWatch{joining: map[string]*joinWatch{}, awaiting: map[string]*awaitWatch{}, timeouts: map[string]memberTimeouts{}}
			k.groups[name] = g
		}
		return g
	}
	switch r := req.(type) {
	case *kmsg.JoinGroupRequest:
		if r.MemberID == "" && r.InstanceID == nil {
			return // answered with its member id at once
		}
		g := group(r.Group)
		key := memberKey(r.MemberID, r.InstanceID)
		t := memberTimeouts{
			session:   time.Duration(r.SessionTimeoutMillis) * time.Millisecond,
			rebalance: time.Duration(r.RebalanceTimeoutMillis) * time.Millisecond,
		}
		g.timeouts[key] = t
		w := &joinWatch{memberID: r.MemberID, session: t.session, at: now, gen: g.gen, epoch: joinGen}
		a := &awaitWatch{memberID: r.MemberID, gen: joinGen, session: t.session, until: now.Add(t.rebalance)}
		if r.InstanceID != nil {
			w.instanceID = *r.InstanceID
			a.instanceID = *r.InstanceID
		}
		g.joining[key] = w
		g.awaiting[key] = a
	case *kmsg.SyncGroupRequest:
		g := group(r.Group)
		key := memberKey(r.MemberID, r.InstanceID)
		delete(g.joining, key)
		if r.Generation > g.gen {
			g.gen, g.genAt = r.Generation, now
		}
		t := g.timeouts[key]
		a := &awaitWatch{sync: true, memberID: r.MemberID, gen: r.Generation, session: t.session, until: now.Add(cmp.Or(t.rebalance, defaultAwait))}
		if r.InstanceID != nil {
			a.instanceID = *r.InstanceID
		}
		g.awaiting[key] = a
	case *kmsg.HeartbeatRequest:
		// A heartbeat in the generation the member joined in is the
		// keeper's own (keepAlive), which may reach the broker after the
		// join phase has ended and be refused: it proves nothing, and
		// forgetting the member on it would leave a member that died
		// before its answer in the group for good.
		if g := k.groups[r.Group]; g != nil {
			key := memberKey(r.MemberID, r.InstanceID)
			if w := g.joining[key]; w != nil && r.Generation > w.epoch {
				delete(g.joining, key)
			}
		}
	case *kmsg.LeaveGroupRequest:
		if g := k.groups[r.Group]; g != nil {
			delete(g.joining, memberKey(r.MemberID, nil))
			delete(g.awaiting, memberKey(r.MemberID, nil))
			for _, m := range r.Members {
				delete(g.joining, memberKey(m.MemberID, m.InstanceID))
				delete(g.awaiting, memberKey(m.MemberID, m.InstanceID))
			}
		}
	}
}

// overdue lists, per group, the members that joined before the group's
// current generation began and have been silent for twice their session
// timeout since it did.
func (k *sessionKeeper) overdue(now time.Time) map[string][]joinWatch {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out map[string][]joinWatch
	for name, g := range k.groups {
		for _, w := range g.joining {
			if g.gen > w.gen && now.Sub(g.genAt) > 2*w.session {
				if out == nil {
					out = map[string][]joinWatch{}
				}
				out[name] = append(out[name], *w)
			}
		}
	}
	return out
}

// forget drops w from the joining members of group, if it is still the
// entry there.
func (k *sessionKeeper) forget(group string, w joinWatch) {
	k.mu.Lock()
	defer k.mu.Unlock()
	g := k.groups[group]
	if g == nil {
		return
	}
	key := w.key()
	if cur := g.joining[key]; cur != nil && cur.at.Equal(w.at) {
		delete(g.joining, key)
	}
}

// still reports whether w is still group's entry for its member.
func (k *sessionKeeper) still(group string, w joinWatch) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	g := k.groups[group]
	if g == nil {
		return false
	}
	cur := g.joining[w.key()]
	return cur != nil && cur.at.Equal(w.at)
}

func (w *joinWatch) key() string {
	if w.instanceID != "" {
		return "i:" + w.instanceID
	}
	return "m:" + w.memberID
}

// run checks for overdue members every interval until ctx is done.
func (k *sessionKeeper) run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	lastSweep := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			k.keepAlive(ctx, now)
			for group, ws := range k.overdue(now) {
				k.expire(ctx, group, ws)
			}
			if now.Sub(lastSweep) >= sweepInterval {
				lastSweep = now
				k.sweep()
			}
		}
	}
}

// sweepInterval is how often the keeper forgets the groups and members
// the broker no longer has.
const sweepInterval = 10 * time.Second

// sweep forgets the groups that no longer exist and the timeouts of
// members no longer in their group, so that what the keeper holds is
// bounded by what the broker holds (dynamic members get a new member id
// at every join).
func (k *sessionKeeper) sweep() {
	k.mu.Lock()
	names := make([]string, 0, len(k.groups))
	for name := range k.groups {
		names = append(names, name)
	}
	k.mu.Unlock()
	for _, name := range names {
		info := k.c.GroupInfo(name)
		k.mu.Lock()
		g := k.groups[name]
		switch {
		case g == nil:
		case info == nil:
			delete(k.groups, name)
		default:
			in := map[string]bool{}
			for _, m := range info.Members {
				in[memberKey(m.MemberID, m.InstanceID)] = true
			}
			for key := range g.timeouts {
				if !in[key] && g.joining[key] == nil && g.awaiting[key] == nil {
					delete(g.timeouts, key)
				}
			}
		}
		k.mu.Unlock()
	}
}

// expire removes the overdue members ws of group that the group still
// holds, in a stable or completing generation (a member waiting in a
// join phase is never removed).
func (k *sessionKeeper) expire(ctx context.Context, group string, ws []joinWatch) {
	dreq := kmsg.NewPtrDescribeGroupsRequest()
	dreq.Groups = []string{group}
	dresp, err := dreq.RequestWith(ctx, k.cl)
	if err != nil || len(dresp.Groups) != 1 || dresp.Groups[0].ErrorCode != 0 {
		return // tried again at the next tick
	}
	dg := dresp.Groups[0]
	if dg.State != "Stable" && dg.State != "CompletingRebalance" {
		return
	}
	lreq := kmsg.NewPtrLeaveGroupRequest()
	lreq.Group = group
	for _, w := range ws {
		memberID := ""
		for _, m := range dg.Members {
			if (w.instanceID != "" && m.InstanceID != nil && *m.InstanceID == w.instanceID) ||
				(w.instanceID == "" && m.MemberID == w.memberID) {
				memberID = m.MemberID
			}
		}
		if memberID == "" {
			k.forget(group, w) // no longer a member
			continue
		}
		if !k.still(group, w) {
			continue // it, or a new member with its instance id, joined again
		}
		m := kmsg.NewLeaveGroupRequestMember()
		m.MemberID = memberID // not the instance id: see sessionKeeper
		m.Reason = kmsg.StringPtr("basin broker: no request since its JoinGroup for twice its session timeout after the join completed")
		lreq.Members = append(lreq.Members, m)
		k.log.Warn("removing a group member that sent nothing since its JoinGroup; its session has timed out",
			"group", group, "member", memberID, "instance", w.instanceID, "session_timeout", w.session)
	}
	if len(lreq.Members) == 0 {
		return
	}
	lresp, err := lreq.RequestWith(ctx, k.cl)
	if err != nil {
		return
	}
	for _, w := range ws {
		k.forget(group, w)
	}
	if err := kerr.ErrorForCode(lresp.ErrorCode); err != nil {
		k.log.Warn("removing a timed-out group member failed", "group", group, "err", err)
	}
}

// keepAlive heartbeats for the members of every group that wait for the
// answer to a JoinGroup or SyncGroup and are due one.
func (k *sessionKeeper) keepAlive(ctx context.Context, now time.Time) {
	k.mu.Lock()
	var groups []string
	for name, g := range k.groups {
		for key, w := range g.awaiting {
			if now.After(w.until) {
				delete(g.awaiting, key)
			}
		}
		if len(g.awaiting) > 0 {
			groups = append(groups, name)
		}
	}
	k.mu.Unlock()
	for _, group := range groups {
		info := k.c.GroupInfo(group) // nil while the group does not exist
		for _, hb := range k.due(group, info, now) {
			hctx, cancel := context.WithTimeout(ctx, time.Second)
			_, _ = hb.RequestWith(hctx, k.cl) // an error is the member's business
			cancel()
		}
	}
}

// due returns the heartbeats to send now for the members of group that
// are waiting for an answer, given the group's state info, and forgets
// the members that no longer wait.
func (k *sessionKeeper) due(group string, info *kfake.GroupInfo, now time.Time) []*kmsg.HeartbeatRequest {
	k.mu.Lock()
	defer k.mu.Unlock()
	g := k.groups[group]
	if g == nil || info == nil {
		return nil
	}
	var out []*kmsg.HeartbeatRequest
	for key, w := range g.awaiting {
		if info.Epoch != w.gen {
			delete(g.awaiting, key) // answered: a join phase ended, or a new one began
			continue
		}
		if w.sync && info.State != "CompletingRebalance" {
			delete(g.awaiting, key) // answered: the leader's SyncGroup came, or a new rebalance began
			continue
		}
		if !w.sync && info.State != "PreparingRebalance" {
			// Answered at once, or not handled yet: the request loop
			// answers GroupInfo between a request's control functions
			// and its handling.
			continue
		}
		if w.session > 0 && now.Sub(w.beatAt) < w.session/3 {
			continue
		}
		memberID := ""
		for _, m := range info.Members {
			if (w.instanceID != "" && m.InstanceID != nil && *m.InstanceID == w.instanceID) ||
				(w.instanceID == "" && m.MemberID == w.memberID) {
				memberID = m.MemberID
			}
		}
		if memberID == "" || (w.sync && memberID != w.memberID) {
			continue // removed, replaced, or not handled yet
		}
		w.beatAt = now
		hb := kmsg.NewPtrHeartbeatRequest()
		hb.Group, hb.Generation, hb.MemberID = group, info.Epoch, memberID
		if w.instanceID != "" {
			hb.InstanceID = kmsg.StringPtr(w.instanceID)
		}
		out = append(out, hb)
	}
	return out
}

func (k *sessionKeeper) close() { k.cl.Close() }
