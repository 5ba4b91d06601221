package kafka

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// sessionKeeper ends the group sessions of members that died waiting in
// a JoinGroup, which kfake keeps forever.
//
// In Kafka, when a rebalance's join phase completes, every member's
// session timer starts again, whether or not its answer reached it: a
// member that sent its JoinGroup and died is in the new generation, is
// given an assignment, and is removed when it sends no heartbeat within
// its session timeout. kfake starts a member's session timer only when
// an answer to it is written, so a member that joined for the first time
// (a node started, or restarted after its old session ended) and died
// before the answer has none. kfake's other guard, the rebalance timeout
// for members that do not send their SyncGroup, stops when the leader's
// SyncGroup arrives. The group then stays stable with the dead member in
// it: the others hold an assignment that gives it tasks, no rebalance
// moves them, and they stay unserved until some other member joins or
// leaves.
//
// The keeper watches the group requests (a kfake control function that
// only observes) and does what Kafka's coordinator would: a member whose
// last request was a JoinGroup, in a group that has since begun a newer
// generation (some member sent a SyncGroup for it), and that has sent
// nothing for twice its session timeout since, is removed with a
// LeaveGroup naming its member id, which starts a rebalance without it.
// Twice, so that kfake's own timer goes first wherever it runs; the
// member id, so that a node restarted meanwhile under the same instance
// id is not the one removed.
type sessionKeeper struct {
	log *slog.Logger
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
}

// joinWatch is a member that sent a JoinGroup and nothing since.
type joinWatch struct {
	memberID, instanceID string // either may be empty
	session              time.Duration
	at                   time.Time
	gen                  int32 // the group's gen when it joined
}

func newSessionKeeper(c *kfake.Cluster, addrs []string, log *slog.Logger) (*sessionKeeper, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ClientID("basin-broker-sessions"),
		kgo.WithLogger(kgoLogger{log.With("component", "broker-sessions")}))
	if err != nil {
		return nil, err
	}
	k := &sessionKeeper{log: log, cl: cl, groups: map[string]*groupWatch{}}
	observe := func(req kmsg.Request) (kmsg.Response, error, bool) {
		k.observe(req, time.Now())
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

// observe records one group request. It runs on kfake's request loop
// and must be quick.
func (k *sessionKeeper) observe(req kmsg.Request, now time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	group := func(name string) *groupWatch {
		g := k.groups[name]
		if g == nil {
			g = &groupWatch{joining: map[string]*joinWatch{}}
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
		w := &joinWatch{memberID: r.MemberID, session: time.Duration(r.SessionTimeoutMillis) * time.Millisecond, at: now, gen: g.gen}
		if r.InstanceID != nil {
			w.instanceID = *r.InstanceID
		}
		g.joining[memberKey(r.MemberID, r.InstanceID)] = w
	case *kmsg.SyncGroupRequest:
		g := group(r.Group)
		delete(g.joining, memberKey(r.MemberID, r.InstanceID))
		if r.Generation > g.gen {
			g.gen, g.genAt = r.Generation, now
		}
	case *kmsg.HeartbeatRequest:
		if g := k.groups[r.Group]; g != nil {
			delete(g.joining, memberKey(r.MemberID, r.InstanceID))
		}
	case *kmsg.LeaveGroupRequest:
		if g := k.groups[r.Group]; g != nil {
			delete(g.joining, memberKey(r.MemberID, nil))
			for _, m := range r.Members {
				delete(g.joining, memberKey(m.MemberID, m.InstanceID))
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
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			for group, ws := range k.overdue(now) {
				k.expire(ctx, group, ws)
			}
		}
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

func (k *sessionKeeper) close() { k.cl.Close() }
