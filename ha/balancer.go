package ha

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/basindb/basin/internal/safe"
	"github.com/basindb/basin/materialize"
)

// ProtocolName is the group protocol basin nodes join with. An
// incompatible change to the join metadata or assignment encoding needs
// a new name (see protocol.go).
const ProtocolName = "basin-v1"

// DefaultProbingInterval is BalancerConfig.ProbingInterval's default, as
// Kafka Streams' probing.rebalance.interval.ms is a bound on how long a
// caught-up warm-up waits for its move.
const DefaultProbingInterval = time.Minute

// LocalState is what a node reports about itself when it joins.
type LocalState struct {
	// PGAddr and HTTPAddr are the node's advertised addresses.
	PGAddr, HTTPAddr string
	// Offsets holds the checkpointed changelog offset of every task the
	// node has on disk (Member.Offsets).
	Offsets map[materialize.StoreID]int64
}

// BalancerConfig configures a Balancer.
type BalancerConfig struct {
	// NodeID is this node's id (--node-id). It is also the group
	// instance id (KIP-345 static membership). Required.
	NodeID string
	// Group is the consumer group of the cluster. Required.
	Group string
	// Topic is the membership topic the group subscribes to. It must
	// exist (one partition is enough); no partition of it is ever
	// assigned or consumed. Required.
	Topic string
	// Assign holds the assignment settings; zero fields take defaults.
	Assign Config
	// ProbingInterval is how long after an assignment with warm-ups the
	// leader triggers a follow-up rebalance to complete the moves of
	// those that caught up. Default DefaultProbingInterval.
	ProbingInterval time.Duration
	// Local returns this node's current state; called at every join.
	// Required.
	Local func() LocalState
	// Tasks returns the tasks to assign: every partition of every view
	// in the catalog with its standby count (the view's
	// num.standby.replicas, else the server default) and changelog end
	// offset. Called by the leader when it balances, and by any node to
	// check an assignment it got without a rebalance. An error fails the
	// rebalance, which the client retries. Required.
	Tasks func() ([]Task, error)
	// OnAssignment is called with each new assignment, on the goroutine
	// running Balancer.Run, in order. It should not block for long.
	// Optional.
	OnAssignment func(Assignment)
	// LastJoin is the join metadata this node sent last before it
	// restarted, as passed to OnJoin. When it still describes the node
	// (same id and addresses, and no task's offset is above the node's
	// current one), the first join sends these exact bytes again, so
	// that a broker that compares them (kfake) sees an unchanged static
	// member and does not rebalance. Optional.
	LastJoin []byte
	// OnJoin is called with the join metadata bytes each time the node
	// joins, for the node to persist and pass back as LastJoin after a
	// restart. Called on the client's group goroutine; it should not
	// block for long. Optional.
	OnJoin func(metadata []byte)
	// Logger receives the balancer's logs. Default slog.Default().
	Logger *slog.Logger
}

// Validate checks c and fills in defaults.
func (c *BalancerConfig) Validate() error {
	switch {
	case c.NodeID == "":
		return fmt.Errorf("%w: node id is empty", ErrInvalidConfig)
	case c.Group == "":
		return fmt.Errorf("%w: group is empty", ErrInvalidConfig)
	case c.Topic == "":
		return fmt.Errorf("%w: membership topic is empty", ErrInvalidConfig)
	case c.Local == nil:
		return fmt.Errorf("%w: Local is nil", ErrInvalidConfig)
	case c.Tasks == nil:
		return fmt.Errorf("%w: Tasks is nil", ErrInvalidConfig)
	case c.ProbingInterval < 0:
		return fmt.Errorf("%w: probing interval %v is negative", ErrInvalidConfig, c.ProbingInterval)
	}
	if err := c.Assign.Validate(); err != nil {
		return err
	}
	if c.ProbingInterval == 0 {
		c.ProbingInterval = DefaultProbingInterval
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}

// Balancer is a kgo.GroupBalancer that assigns basin's tasks over
// Kafka's group protocol. Every node's membership client uses one (see
// ClientOpts); whichever is the group leader computes the assignment with
// Assign and sends the whole map to every member.
//
// Run must be running for assignments to reach OnAssignment and for
// follow-up rebalances to happen.
type Balancer struct {
	cfg BalancerConfig
	log *slog.Logger

	assigned chan struct{} // cap 1: mu.current changed
	rejoin   chan string   // cap 1: a rebalance was requested

	mu struct {
		sync.Mutex
		// epoch is the RejoinEpoch of the join metadata.
		epoch uint64
		// reuse is LastJoin while it may still be sent verbatim: until
		// the first assignment arrives.
		reuse []byte
		// lastJoin is the metadata of the last join.
		lastJoin []byte
		// current is the last assignment received.
		current *Assignment
	}
}

var (
	_ kgo.GroupBalancer              = (*Balancer)(nil)
	_ kgo.GroupMemberBalancerOrError = (*memberBalancer)(nil)
	_ kgo.GroupMemberBalancerInfo    = (*memberBalancer)(nil)
)

// NewBalancer returns a Balancer for cfg.
func NewBalancer(cfg BalancerConfig) (*Balancer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	b := &Balancer{
		cfg:      cfg,
		log:      cfg.Logger.With("component", "ha", "node", cfg.NodeID),
		assigned: make(chan struct{}, 1),
		rejoin:   make(chan string, 1),
	}
	if len(cfg.LastJoin) > 0 {
		if m, err := DecodeGroupMetadata(cfg.LastJoin); err == nil && m.NodeID == cfg.NodeID {
			b.mu.reuse = bytes.Clone(cfg.LastJoin)
			b.mu.epoch = m.RejoinEpoch
		} else {
			b.log.Warn("ignoring the join metadata of the previous run", "err", err)
		}
	}
	return b, nil
}

// ClientOpts returns the kgo options that make a client a member of the
// cluster's group with this balancer: the group, the membership topic,
// static membership with the node id as instance id, no offset commits.
// Add the seed brokers, SessionTimeout, HeartbeatInterval and
// RebalanceTimeout. The client must be dedicated to membership.
func (b *Balancer) ClientOpts() []kgo.Opt {
	return []kgo.Opt{
		kgo.ConsumerGroup(b.cfg.Group),
		kgo.ConsumeTopics(b.cfg.Topic),
		kgo.Balancers(b),
		kgo.InstanceID(b.cfg.NodeID),
		kgo.DisableAutoCommit(),
	}
}

// ProtocolName implements kgo.GroupBalancer.
func (*Balancer) ProtocolName() string { return ProtocolName }

// IsCooperative implements kgo.GroupBalancer. The protocol is eager, but
// as no partitions are assigned, eager revocation costs nothing; tasks
// move between nodes according to the assignment map, not the group's
// partitions.
func (*Balancer) IsCooperative() bool { return false }

// JoinGroupMetadata implements kgo.GroupBalancer: this node's id,
// addresses and task offsets, or LastJoin verbatim on the first join of a
// restarted node when it still holds (see BalancerConfig.LastJoin).
func (b *Balancer) JoinGroupMetadata(_ []string, _ map[string][]int32, generation int32) []byte {
	local := b.cfg.Local()
	b.mu.Lock()
	var out []byte
	if reuse := b.mu.reuse; reuse != nil && generation < 0 {
		if err := stillDescribes(reuse, b.cfg.NodeID, local); err == nil {
			out = reuse
		} else {
			b.log.Info("not reusing the join metadata of the previous run", "why", err)
			b.mu.reuse = nil
		}
	}
	if out == nil {
		m := JoinMetadata{NodeID: b.cfg.NodeID, PGAddr: local.PGAddr, HTTPAddr: local.HTTPAddr, RejoinEpoch: b.mu.epoch, Offsets: local.Offsets}
		out = EncodeGroupMetadata(b.cfg.Topic, m)
	}
	b.mu.lastJoin = out
	b.mu.Unlock()
	if b.cfg.OnJoin != nil {
		b.cfg.OnJoin(bytes.Clone(out))
	}
	return out
}

// stillDescribes reports whether old join metadata still describes the
// node: same id and addresses, and every offset it claims at most the
// node's current one, so that it under-states, never over-states, the
// state the node has.
func stillDescribes(old []byte, nodeID string, local LocalState) error {
	m, err := DecodeGroupMetadata(old)
	if err != nil {
		return err
	}
	if m.NodeID != nodeID || m.PGAddr != local.PGAddr || m.HTTPAddr != local.HTTPAddr {
		return errors.New("node id or addresses changed")
	}
	for t, off := range m.Offsets {
		if cur, ok := local.Offsets[t]; !ok || cur < off {
			return fmt.Errorf("task %s: state behind the previous run's report", t)
		}
	}
	return nil
}

// ParseSyncAssignment implements kgo.GroupBalancer: it decodes the map,
// makes it current and wakes Run. No partitions are assigned.
func (b *Balancer) ParseSyncAssignment(assignment []byte) (map[string][]int32, error) {
	if len(assignment) == 0 {
		// The leader did not assign us (it could not read our
		// metadata); keep the previous map.
		b.log.Warn("empty group assignment; the leader could not read this node's join metadata")
		return map[string][]int32{}, nil
	}
	a, err := DecodeGroupAssignment(assignment)
	if err != nil {
		return nil, fmt.Errorf("ha: group assignment from the leader: %w", err)
	}
	b.mu.Lock()
	b.mu.current = &a
	b.mu.reuse = nil
	b.mu.Unlock()
	select {
	case b.assigned <- struct{}{}:
	default:
	}
	return map[string][]int32{}, nil
}

// MemberBalancer implements kgo.GroupBalancer. Decoding and balancing
// happen in BalanceOrError: kgo calls MemberBalancer even when the broker
// tells a restarted static leader to skip the assignment (KIP-814).
func (b *Balancer) MemberBalancer(members []kmsg.JoinGroupResponseMember) (kgo.GroupMemberBalancer, map[string]struct{}, error) {
	return &memberBalancer{b: b, members: members}, map[string]struct{}{}, nil
}

// memberBalancer balances one generation on the leader.
type memberBalancer struct {
	b       *Balancer
	members []kmsg.JoinGroupResponseMember
	info    kgo.BalanceInfo
}

// SetBalanceInfo implements kgo.GroupMemberBalancerInfo.
func (m *memberBalancer) SetBalanceInfo(info kgo.BalanceInfo) { m.info = info }

// Balance implements kgo.GroupMemberBalancer; kgo calls BalanceOrError
// instead.
func (m *memberBalancer) Balance(map[string]int32) kgo.IntoSyncAssignment {
	panic("ha: Balance called; kgo uses BalanceOrError")
}

// BalanceOrError decodes the members' metadata, runs Assign and gives
// every member the whole map.
func (m *memberBalancer) BalanceOrError(map[string]int32) (kgo.IntoSyncAssignment, error) {
	b := m.b
	start := time.Now()
	tasks, err := b.cfg.Tasks()
	if err != nil {
		return nil, fmt.Errorf("ha: balancing generation %d: listing tasks: %w", m.info.Generation, err)
	}
	var members []Member
	digests := make(map[string]uint64)
	for _, jm := range m.members {
		meta, err := DecodeGroupMetadata(jm.ProtocolMetadata)
		if err != nil {
			// A member we cannot read (a newer, incompatible node)
			// gets the map but no tasks.
			b.log.Warn("group member with unreadable join metadata gets no tasks", "member", jm.MemberID, "err", err)
			continue
		}
		if _, dup := digests[meta.NodeID]; dup || meta.NodeID == "" {
			b.log.Warn("group member with a duplicate or empty node id gets no tasks", "member", jm.MemberID, "node", meta.NodeID)
			continue
		}
		digests[meta.NodeID] = digest(jm.ProtocolMetadata)
		members = append(members, Member{ID: meta.NodeID, PGAddr: meta.PGAddr, HTTPAddr: meta.HTTPAddr, Offsets: meta.Offsets})
	}
	b.mu.Lock()
	prev := b.mu.current
	b.mu.Unlock()
	a := Assign(AssignInput{
		Generation: m.info.Generation,
		Leader:     b.cfg.NodeID,
		Members:    members,
		Tasks:      tasks,
		Previous:   prev,
		Config:     b.cfg.Assign,
	})
	for id, nt := range a.Nodes {
		nt.JoinDigest = digests[id]
		a.Nodes[id] = nt
	}
	warmups := 0
	for _, nt := range a.Nodes {
		warmups += len(nt.Warmup)
	}
	b.log.Info("balanced group", "generation", a.Generation, "members", len(members), "tasks", len(tasks),
		"warmups", warmups, "standby_shortfall", len(a.Shortfall), "follow_up", a.NeedsFollowUp,
		"took", time.Since(start).Round(time.Millisecond))
	if len(a.Shortfall) > 0 {
		b.log.Warn("too few nodes for the standby replicas wanted", "tasks_short", len(a.Shortfall), "nodes", len(members))
	}
	enc := EncodeGroupAssignment(&a)
	plan := make(syncPlan, 0, len(m.members))
	for _, jm := range m.members {
		plan = append(plan, kmsg.SyncGroupRequestGroupAssignment{MemberID: jm.MemberID, MemberAssignment: enc})
	}
	return plan, nil
}

type syncPlan []kmsg.SyncGroupRequestGroupAssignment

func (p syncPlan) IntoSyncAssignment() []kmsg.SyncGroupRequestGroupAssignment { return p }

// Current returns the last assignment this node received.
func (b *Balancer) Current() (Assignment, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.mu.current == nil {
		return Assignment{}, false
	}
	return *b.mu.current, true
}

// IsLeader reports whether the last assignment was computed by this node.
func (b *Balancer) IsLeader() bool {
	a, ok := b.Current()
	return ok && a.Leader == b.cfg.NodeID
}

// RequestRebalance asks for a rebalance: the node rejoins with changed
// metadata (a new RejoinEpoch), which makes both Kafka and kfake
// rebalance whether or not it is the leader. Call it when the tasks
// change (a view was created or dropped) or a warm-up is known to have
// caught up. Requests made while one is pending coalesce.
func (b *Balancer) RequestRebalance(reason string) {
	b.mu.Lock()
	b.mu.epoch++
	b.mu.Unlock()
	select {
	case b.rejoin <- reason:
	default:
	}
}

// Run delivers assignments to OnAssignment and drives rebalances on the
// group client cl: follow-up (probing) rebalances while this node is the
// leader of an assignment with warm-ups, rebalances asked for with
// RequestRebalance, and one when the first assignment after a restart
// was computed from stale join metadata and gives this node an active it
// cannot run from its state. It also drains the client's group errors
// into the log. It returns when ctx is done.
func (b *Balancer) Run(ctx context.Context, cl *kgo.Client) {
	// The poll loop ends with Run, however Run ends (a panic unwinding
	// through here must not wait for ctx).
	pctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		stop()
		wg.Wait()
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		safe.Restart(pctx, b.log, "ha: panic polling the group client", time.Second, func() {
			for {
				fs := cl.PollFetches(pctx)
				if pctx.Err() != nil || fs.IsClientClosed() {
					return
				}
				fs.EachError(func(topic string, p int32, err error) {
					b.log.Warn("group membership error", "err", err)
				})
			}
		})
	}()

	var probe *time.Timer
	var probeC <-chan time.Time
	stopProbe := func() {
		if probe != nil {
			probe.Stop()
			probe, probeC = nil, nil
		}
	}
	defer stopProbe()
	first := true
	for {
		select {
		case <-ctx.Done():
			return
		case <-b.assigned:
			a, ok := b.Current()
			if !ok {
				continue
			}
			if b.cfg.OnAssignment != nil {
				// A panic applying one assignment is logged; the next
				// assignment is applied as usual.
				_ = safe.Do(b.log, "ha: panic applying an assignment", func() { b.cfg.OnAssignment(a) })
			}
			stopProbe()
			if a.Leader == b.cfg.NodeID && a.NeedsFollowUp {
				probe = time.NewTimer(b.cfg.ProbingInterval)
				probeC = probe.C
			}
			if first {
				first = false
				if why := b.stale(a); why != "" {
					b.RequestRebalance(why)
				}
			}
		case <-probeC:
			probe, probeC = nil, nil
			b.RequestRebalance("probing rebalance: warm-ups in progress")
		case why := <-b.rejoin:
			b.log.Info("requesting a rebalance", "why", why)
			cl.ForceRebalance()
		}
	}
}

// stale checks the first assignment a (re)started node receives. After a
// static member restarts, Kafka answers its join with the assignment of
// the running generation, computed from the metadata its previous
// incarnation sent, without rebalancing, even when the new metadata
// differs (kfake rebalances instead). That is what we want unless the
// node lost state the old metadata claimed: then it would hold actives it
// must restore from scratch while caught-up replicas exist elsewhere. It
// returns why a rebalance is needed, or "".
func (b *Balancer) stale(a Assignment) string {
	b.mu.Lock()
	last := b.mu.lastJoin
	b.mu.Unlock()
	nt, ok := a.Nodes[b.cfg.NodeID]
	if !ok {
		return "the assignment does not include this node"
	}
	if last == nil || nt.JoinDigest == digest(last) {
		return ""
	}
	tasks, err := b.cfg.Tasks()
	if err != nil {
		return ""
	}
	ends := make(map[materialize.StoreID]int64, len(tasks))
	for _, t := range tasks {
		ends[t.ID] = t.EndOffset
	}
	local := b.cfg.Local()
	for _, t := range nt.Active {
		end, known := ends[t]
		off := local.Offsets[t]
		if known && end-off > b.cfg.Assign.AcceptableRecoveryLag {
			return fmt.Sprintf("assigned active %s from stale join metadata, %d records behind", t, end-off)
		}
	}
	return ""
}

// Leave takes this node out of the group now, so that its tasks move at
// once instead of after the session timeout. A static member's Close
// does not leave the group (KIP-345: a restart within the session
// timeout keeps the tasks), so this stops the client's group management
// and sends a LeaveGroup for the instance id. Close the client
// afterwards.
//
// Leave returns within ctx even when a rebalance is in flight. kgo lets
// an in-flight JoinGroup finish before its group management stops, and
// the broker answers a JoinGroup only once every member has rejoined
// (each learns of the rebalance at its next heartbeat, or never if it
// died), so the wait for the client is bounded by leaveStopWait and the
// LeaveGroup is sent regardless: it is what lets the others complete the
// rebalance without this node. The client's Close then waits for that
// JoinGroup's answer, which a broker may never send to a member that has
// left (kfake does not): close it with a bound too (see the node's
// shutdown).
func (b *Balancer) Leave(ctx context.Context, cl *kgo.Client) error {
	memberID, _ := cl.GroupMetadata()
	// Group management stops first, so that the client does not rejoin
	// on hearing that it is no longer a member.
	stop, cancel := context.WithTimeout(ctx, leaveStopWait)
	err := cl.LeaveGroupContext(stop)
	cancel()
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("ha: leaving group %q: %w", b.cfg.Group, err)
	}
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Group = b.cfg.Group
	m := kmsg.NewLeaveGroupRequestMember()
	m.MemberID = memberID
	m.InstanceID = kmsg.StringPtr(b.cfg.NodeID)
	m.Reason = kmsg.StringPtr("basin node " + b.cfg.NodeID + " shutting down")
	req.Members = append(req.Members, m)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("ha: leaving group %q: %w", b.cfg.Group, err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return fmt.Errorf("ha: leaving group %q: %w", b.cfg.Group, err)
	}
	for _, mr := range resp.Members {
		if err := kerr.ErrorForCode(mr.ErrorCode); err != nil && !errors.Is(err, kerr.UnknownMemberID) {
			return fmt.Errorf("ha: leaving group %q: %w", b.cfg.Group, err)
		}
	}
	return nil
}

// leaveStopWait bounds Leave's wait for the client's group management to
// stop: without a rebalance in flight it stops at once.
const leaveStopWait = 100 * time.Millisecond
