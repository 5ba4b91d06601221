package kafka

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/basindb/basin/internal/poll"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestGroupMemberDiesInJoin: a member that dies while its JoinGroup
// waits for the rebalance never reads the answer, and never sends a
// heartbeat or a SyncGroup. The group still completes the rebalance with
// it (its join is in), so the others are given an assignment that
// includes it; then, as in Kafka, it must leave the group after its
// session timeout, and the others rebalance without it.
func TestGroupMemberDiesInJoin(t *testing.T) {
	b := startTestBroker(t, "")
	ctx := testCtx(t)
	adm := newTestAdmin(t, b.Addrs())
	if _, _, err := EnsureTopic(ctx, adm, "t", 2, nil); err != nil {
		t.Fatal(err)
	}
	const group = "g"
	// a's assignments, in order: both partitions alone, one while b is
	// in the group.
	var mu sync.Mutex
	var owned []int
	a := newTestClient(t, b.Addrs(), kgo.ConsumerGroup(group), kgo.ConsumeTopics("t"), kgo.InstanceID("a"),
		kgo.Balancers(kgo.RangeBalancer()), kgo.SessionTimeout(500*time.Millisecond), kgo.HeartbeatInterval(100*time.Millisecond),
		kgo.RebalanceTimeout(5*time.Second),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			mu.Lock()
			defer mu.Unlock()
			owned = append(owned, len(m["t"]))
		}))
	ownedNow := func(want int) func() error {
		return func() error {
			mu.Lock()
			defer mu.Unlock()
			if len(owned) == 0 || owned[len(owned)-1] != want {
				return fmt.Errorf("a's assignments %v, want the last of %d partitions", owned, want)
			}
			return nil
		}
	}
	pctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for pctx.Err() == nil {
			a.PollFetches(pctx)
		}
	}()
	t.Cleanup(func() { stop(); <-done })
	waitMembers(t, adm, group, "a")
	poll.Until(t, testTimeout, ownedNow(2))

	// b joins and dies at once: the request is sent whole, then the
	// connection is closed before the answer, which comes only when a
	// has rejoined. kfake writes that answer, or finds the connection
	// gone, at random; only then is b left without a session timer, so
	// this is done a dozen times (without the broker's guard, about one
	// join in four leaves b in the group for good).
	for round := range 12 {
		mu.Lock()
		before := len(owned)
		mu.Unlock()
		dieInJoin(t, b.Addrs()[0], group, fmt.Sprintf("b%d", round))
		// The rebalance completes with b in it (a is given one
		// partition), then b is gone and a has both again. (When a is
		// slower to send its SyncGroup than b's session timeout, which
		// kfake may start with b's answer, b is gone before a is given
		// its one partition: a is given both at once.)
		poll.Until(t, testTimeout, func() error {
			mu.Lock()
			n := len(owned)
			mu.Unlock()
			if n == before {
				return fmt.Errorf("round %d: a has not been given an assignment since b joined", round)
			}
			return ownedNow(2)()
		})
		waitMembers(t, adm, group, "a")
	}
}

// TestSessionKeeperIgnoresItsOwnLateHeartbeat: the keeper heartbeats
// for a member waiting in a join phase with the generation the phase
// began in. When that heartbeat reaches the broker after the phase has
// ended, the broker refuses it and starts no session timer; if the
// member died before its answer, the keeper's removal is all that ends
// its session, so seeing its own heartbeat must not make the keeper
// forget the member. A heartbeat in a later generation, which only the
// member itself can send, does.
func TestSessionKeeperIgnoresItsOwnLateHeartbeat(t *testing.T) {
	k := &sessionKeeper{groups: map[string]*groupWatch{}}
	at := time.Unix(1000, 0)
	sync := func(gen int32, instance string, now time.Time) {
		r := kmsg.NewPtrSyncGroupRequest()
		r.Group, r.Generation, r.MemberID, r.InstanceID = "g", gen, "m-"+instance, kmsg.StringPtr(instance)
		k.observe(r, -1, now)
	}
	beat := func(gen int32, instance, memberID string, now time.Time) {
		r := kmsg.NewPtrHeartbeatRequest()
		r.Group, r.Generation, r.MemberID, r.InstanceID = "g", gen, memberID, kmsg.StringPtr(instance)
		k.observe(r, -1, now)
	}
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.InstanceID, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = "g", kmsg.StringPtr("b"), 500, 5000

	sync(3, "a", at) // a synced generation 3: the group is stable
	k.observe(join, 3, at.Add(time.Millisecond))
	beat(3, "b", "m-b", at.Add(2*time.Millisecond)) // the keeper's own, late
	sync(4, "a", at.Add(3*time.Millisecond))        // the join phase ended
	if got := k.overdue(at.Add(2 * time.Second)); len(got["g"]) != 1 || got["g"][0].instanceID != "b" {
		t.Fatalf("overdue after the keeper's own heartbeat = %v, want member b", got)
	}
	beat(4, "b", "m-b", at.Add(4*time.Millisecond)) // b itself, alive
	if got := k.overdue(at.Add(2 * time.Second)); len(got) != 0 {
		t.Fatalf("overdue after b's own heartbeat = %v, want none", got)
	}
}

// dieInJoin joins group as a new member with instanceID and closes the
// connection before the answer.
func dieInJoin(t *testing.T, addr, group, instanceID string) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	join := kmsg.NewPtrJoinGroupRequest()
	join.Version = 9
	join.Group = group
	join.InstanceID = kmsg.StringPtr(instanceID)
	join.SessionTimeoutMillis = 500
	join.RebalanceTimeoutMillis = 5000
	join.ProtocolType = "consumer"
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Topics = []string{"t"}
	proto := kmsg.NewJoinGroupRequestProtocol()
	proto.Name = "range"
	proto.Metadata = meta.AppendTo(nil)
	join.Protocols = append(join.Protocols, proto)
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("dies-in-join")).AppendRequest(nil, join, 1)
	if _, err := conn.Write(frame); err != nil {
		t.Fatal(err)
	}
	conn.Close()
}

// waitMembers waits until the group is stable with exactly the members of
// the instance ids given.
func waitMembers(t *testing.T, adm *kadm.Client, group string, instances ...string) {
	t.Helper()
	poll.Until(t, testTimeout, func() error {
		gs, err := adm.DescribeGroups(t.Context(), group)
		if err != nil {
			return err
		}
		g := gs[group]
		if g.Err != nil {
			return g.Err
		}
		var got []string
		for _, m := range g.Members {
			if m.InstanceID != nil {
				got = append(got, *m.InstanceID)
			}
		}
		slices.Sort(got)
		if g.State != "Stable" || !slices.Equal(got, instances) {
			return fmt.Errorf("group %s is %s with members %v, want Stable with %v", group, g.State, got, instances)
		}
		return nil
	})
}

// TestGroupMemberKeptWhileAwaitingSync: a follower whose SyncGroup waits
// for a leader that never sends its own (the leader died, or balances
// for longer than its session timeout) stays in the group, as in Kafka,
// where a member waiting for an answer is not timed out: the leader's
// session ends, the group rebalances, and the follower's SyncGroup is
// answered with REBALANCE_IN_PROGRESS, so it rejoins under the same
// member id. kfake times the follower out too, at the same moment as the
// leader (both timers started with their JoinGroup answers), and never
// answers its SyncGroup: the client waits out its request timeout (the
// rebalance timeout) before it joins again, as a new member. Which of
// the two timers kfake runs first is random, so this takes a few rounds.
func TestGroupMemberKeptWhileAwaitingSync(t *testing.T) {
	b := startTestBroker(t, "")
	ctx := testCtx(t)
	adm := newTestAdmin(t, b.Addrs())
	if _, _, err := EnsureTopic(ctx, adm, "t", 2, nil); err != nil {
		t.Fatal(err)
	}
	for round := range 6 {
		group := fmt.Sprintf("g%d", round)
		opts := func(instance string, bal kgo.GroupBalancer) []kgo.Opt {
			return []kgo.Opt{kgo.ConsumerGroup(group), kgo.ConsumeTopics("t"), kgo.InstanceID(instance),
				kgo.Balancers(bal), kgo.SessionTimeout(500 * time.Millisecond), kgo.HeartbeatInterval(100 * time.Millisecond),
				kgo.RebalanceTimeout(20 * time.Second)}
		}
		// The leader joins first and leads every generation it is in;
		// its balancer stops at the second generation until the end of
		// the round.
		gate := &gatedBalancer{GroupBalancer: kgo.RangeBalancer(), release: make(chan struct{})}
		leader := newTestClient(t, b.Addrs(), opts("leader", gate)...)
		t.Cleanup(gate.open) // before the client's Close, which waits for the balancer
		stopLeader := pollGroup(leader)
		waitMembers(t, adm, group, "leader")
		gate.armed.Store(true)
		follower := newTestClient(t, b.Addrs(), opts("follower", kgo.RangeBalancer())...)
		stopFollower := pollGroup(follower)
		var joinedAs string
		poll.Until(t, testTimeout, func() error {
			if gate.blocked.Load() {
				if joinedAs, _ = follower.GroupMetadata(); joinedAs != "" {
					return nil
				}
			}
			return fmt.Errorf("round %d: the follower has not joined the leader's second generation", round)
		})
		// The leader's session ends while it balances; the follower's
		// must not.
		waitMembers(t, adm, group, "follower")
		gs, err := adm.DescribeGroups(ctx, group)
		if err != nil {
			t.Fatal(err)
		}
		if got := gs[group].Members[0].MemberID; got != joinedAs {
			t.Fatalf("round %d: the follower is in the group as %s, want %s: it was timed out while its SyncGroup waited for the leader", round, got, joinedAs)
		}
		gate.open()
		stopLeader()
		stopFollower()
		leader.Close()
		follower.Close()
	}
}

// gatedBalancer is a balancer that, once armed, blocks the next balance
// of two or more members until release is closed: a leader slower than
// its session timeout.
type gatedBalancer struct {
	kgo.GroupBalancer
	armed, blocked atomic.Bool
	release        chan struct{}
	once           sync.Once
}

func (g *gatedBalancer) open() { g.once.Do(func() { close(g.release) }) }

func (g *gatedBalancer) MemberBalancer(members []kmsg.JoinGroupResponseMember) (kgo.GroupMemberBalancer, map[string]struct{}, error) {
	if len(members) >= 2 && g.armed.CompareAndSwap(true, false) {
		g.blocked.Store(true)
		<-g.release
	}
	return g.GroupBalancer.MemberBalancer(members)
}

// pollGroup polls cl until the returned function is called, so that its
// group management runs.
func pollGroup(cl *kgo.Client) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil && !cl.PollFetches(ctx).IsClientClosed() {
		}
	}()
	return func() { cancel(); <-done }
}

// TestGroupMemberKeptWhileAwaitingJoin: a member whose JoinGroup waits
// for another member to rejoin stays in the group, as in Kafka, however
// long past its session timeout the other takes (within the rebalance
// timeout). kfake times it out at its session timeout, counted from its
// last heartbeat, and never answers its JoinGroup: the join phase ends
// without it, and its client waits out its request timeout before it
// joins again, as a new member, which starts another rebalance.
func TestGroupMemberKeptWhileAwaitingJoin(t *testing.T) {
	b := startTestBroker(t, "")
	ctx := testCtx(t)
	adm := newTestAdmin(t, b.Addrs())
	if _, _, err := EnsureTopic(ctx, adm, "t", 2, nil); err != nil {
		t.Fatal(err)
	}
	const group = "g"
	a := newTestClient(t, b.Addrs(), kgo.ConsumerGroup(group), kgo.ConsumeTopics("t"), kgo.InstanceID("a"),
		kgo.Balancers(kgo.RangeBalancer()), kgo.SessionTimeout(500*time.Millisecond), kgo.HeartbeatInterval(100*time.Millisecond),
		kgo.RebalanceTimeout(20*time.Second))
	defer pollGroup(a)()
	waitMembers(t, adm, group, "a")

	// s, a member driven by hand, joins and syncs, then heartbeats
	// every 100 ms like a client would. (Each raw member has a client of
	// its own: the broker takes a connection's requests one at a time.)
	s := &rawMember{t: t, cl: newTestClient(t, b.Addrs()), group: group, instance: "s"}
	s.join(ctx)
	s.sync(ctx)
	waitMembers(t, adm, group, "a", "s")
	aID, _ := a.GroupMetadata()

	// n joins, which starts a rebalance: a rejoins at its next
	// heartbeat and waits; s goes on heartbeating (each answered with
	// REBALANCE_IN_PROGRESS, which keeps it in the group) and rejoins
	// only after its tenth, two of a's session timeouts later.
	n := &rawMember{t: t, cl: newTestClient(t, b.Addrs()), group: group, instance: "n"}
	nJoined := make(chan struct{})
	go func() {
		defer close(nJoined)
		n.join(ctx)
	}()
	beat := time.NewTicker(100 * time.Millisecond)
	defer beat.Stop()
	for rebalancing := 0; rebalancing < 10; {
		<-beat.C
		if err := s.heartbeat(ctx); errors.Is(err, kerr.RebalanceInProgress) {
			rebalancing++
		} else if err != nil {
			t.Fatalf("s's heartbeat: %v", err)
		}
	}
	s.join(ctx) // answered once every member has rejoined
	<-nJoined
	gs, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	var members []string
	for _, m := range gs[group].Members {
		members = append(members, m.MemberID)
	}
	if !slices.Contains(members, aID) {
		t.Fatalf("after the rebalance the group's members are %v, not a (%s): it was timed out while its JoinGroup waited", members, aID)
	}
}

// rawMember is a static group member whose requests a test sends one by
// one, over cl, with no group management of its own.
type rawMember struct {
	t               testing.TB
	cl              *kgo.Client
	group, instance string
	memberID        string
	generation      int32
	leader          bool
}

func (m *rawMember) join(ctx context.Context) {
	m.t.Helper()
	req := kmsg.NewPtrJoinGroupRequest()
	req.Group, req.MemberID, req.InstanceID = m.group, m.memberID, kmsg.StringPtr(m.instance)
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 500, 20000
	req.ProtocolType = "consumer"
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Topics = []string{"t"}
	proto := kmsg.NewJoinGroupRequestProtocol()
	proto.Name = "range"
	proto.Metadata = meta.AppendTo(nil)
	req.Protocols = append(req.Protocols, proto)
	resp, err := req.RequestWith(ctx, m.cl)
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if err != nil {
		m.t.Errorf("%s's JoinGroup: %v", m.instance, err)
		return
	}
	m.memberID, m.generation, m.leader = resp.MemberID, resp.Generation, resp.LeaderID == resp.MemberID
}

func (m *rawMember) sync(ctx context.Context) {
	m.t.Helper()
	req := kmsg.NewPtrSyncGroupRequest()
	req.Group, req.MemberID, req.InstanceID, req.Generation = m.group, m.memberID, kmsg.StringPtr(m.instance), m.generation
	req.ProtocolType, req.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
	resp, err := req.RequestWith(ctx, m.cl)
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if err != nil {
		m.t.Fatalf("%s's SyncGroup: %v", m.instance, err)
	}
}

func (m *rawMember) heartbeat(ctx context.Context) error {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Group, req.MemberID, req.InstanceID, req.Generation = m.group, m.memberID, kmsg.StringPtr(m.instance), m.generation
	resp, err := req.RequestWith(ctx, m.cl)
	if err != nil {
		return err
	}
	return kerr.ErrorForCode(resp.ErrorCode)
}
