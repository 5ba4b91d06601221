package ha

// Liveness is the failure detector behind lag-aware routing: which peers
// are up, as far as this node can tell from the heartbeats it receives
// (KLIP-12's /heartbeat and /clusterStatus). It is the decision only, a
// deterministic state machine with time passed in; the HTTP endpoint that
// receives heartbeats, the goroutine that sends them every
// HeartbeatInterval and the cluster-status page are thin wrappers around
// it that own the clock.
//
// # Rules
//
// Every time is a time on this node's clock: the caller stamps a
// heartbeat with the time it received it, not the time the sender wrote
// into it, so the peers' clocks never matter.
//
//   - Down. A peer is down once it has been silent for MissedThreshold
//     heartbeat intervals: with last its latest heartbeat, it is down at
//     every now >= last + MissedThreshold*HeartbeatInterval, and
//     DownSince is exactly that instant. DownSince is a function of the
//     heartbeats, not of when somebody asked, so two reads that see the
//     same heartbeats report the same time.
//   - Up again (hysteresis). A down peer is up again once it has sent
//     ReceivedThreshold heartbeats within one Window, with no silence of
//     MissedThreshold intervals between them. One heartbeat does not
//     revive a peer; a peer that sends one and goes silent again (a
//     flapping link, a process stuck in a GC pause loop) stays down the
//     whole time, with its first DownSince.
//   - Unknown. A peer never heard from (the assignment names it, Add)
//     counts as up for UnknownGrace after the tracker learned of it, then
//     as down since added+UnknownGrace; its first heartbeats then revive
//     it like any down peer. A node that has just started thus tries its
//     peers optimistically instead of rejecting them all, and a peer that
//     never shows up is out of the candidate lists a second later.
//   - Untracked. A node the tracker has never been told of counts as up.
//     Being wrong costs one failed attempt, which the router moves past
//     at once (Route's attempts go to the next candidate when one
//     fails, see router.go), while being wrong
//     the other way would reject a good replica.
//   - Clocks. Pass times from time.Now: they carry the monotonic clock,
//     which every comparison here uses, so a wall-clock step changes
//     nothing. Should times still go back (times from another source, a
//     delayed duplicate), heartbeats at or before the latest one recorded
//     for the peer are ignored: they neither extend its life nor count
//     toward its recovery. A query whose now is before the latest
//     heartbeat is answered as of that heartbeat: the peer was certainly
//     alive then.
//
// # Defaults
//
// HeartbeatInterval 100ms and MissedThreshold 5 declare a silent peer
// down 500ms after its last heartbeat, so a dead node is out of every
// candidate list well within a second (the bound docs/configuration.md
// gives under --heartbeat-interval), with room
// left for heartbeat delivery delay; 5 rather than ksqlDB's 3 tolerates
// a 300-400ms stall (GC, a busy host) without flapping. ReceivedThreshold
// 2 within a Window of 1s brings it back 100ms after it resumes. Window
// also bounds Received in NodeLiveness, the heartbeats of the last second
// that the status page shows against the Window/HeartbeatInterval
// expected.
//
// ksqlDB's HeartbeatAgent re-decides each peer every check interval from
// the heartbeats of the window, with no memory: a single late heartbeat
// flips a peer up. This tracker keeps one bit of memory (down, and since
// when) so that recovery needs evidence, and it decides on demand at the
// time asked, so there is no check interval adding delay.
//
// # Concurrency
//
// A Liveness is safe for concurrent use. Queries do not change the state:
// only Observe, Add and Forget do, so the answer for a given now depends
// only on the heartbeats recorded, never on who asked before.

import (
	"fmt"
	"slices"
	"sync"
	"time"
)

// LivenessConfig holds the failure-detector settings. The zero value is
// the defaults.
type LivenessConfig struct {
	// HeartbeatInterval is how often every node sends a heartbeat to
	// every other. Default DefaultHeartbeatInterval (100ms).
	HeartbeatInterval time.Duration
	// Window is the span within which ReceivedThreshold heartbeats must
	// arrive to bring a down peer back up, and over which
	// NodeLiveness.Received counts. It must hold ReceivedThreshold
	// intervals. Default DefaultHeartbeatWindow (1s), or ten intervals
	// when that is more.
	Window time.Duration
	// MissedThreshold is how many heartbeat intervals of silence make a
	// peer down. Default DefaultMissedThreshold (5: down 500ms after the
	// last heartbeat with the default interval).
	MissedThreshold int
	// ReceivedThreshold is how many heartbeats within Window bring a down
	// peer back up. Default DefaultReceivedThreshold (2).
	ReceivedThreshold int
	// UnknownGrace is how long a peer the tracker was told of (Add) but
	// never heard from counts as up. Default DefaultUnknownGrace (1s).
	UnknownGrace time.Duration
}

const (
	// DefaultHeartbeatInterval is LivenessConfig.HeartbeatInterval's
	// default.
	DefaultHeartbeatInterval = 100 * time.Millisecond
	// DefaultHeartbeatWindow is LivenessConfig.Window's default.
	DefaultHeartbeatWindow = time.Second
	// DefaultMissedThreshold is LivenessConfig.MissedThreshold's default.
	DefaultMissedThreshold = 5
	// DefaultReceivedThreshold is LivenessConfig.ReceivedThreshold's
	// default.
	DefaultReceivedThreshold = 2
	// DefaultUnknownGrace is LivenessConfig.UnknownGrace's default.
	DefaultUnknownGrace = time.Second
)

// Validate checks c and fills in defaults.
func (c *LivenessConfig) Validate() error {
	switch {
	case c.HeartbeatInterval < 0:
		return fmt.Errorf("%w: heartbeat interval %v is negative", ErrInvalidConfig, c.HeartbeatInterval)
	case c.Window < 0:
		return fmt.Errorf("%w: heartbeat window %v is negative", ErrInvalidConfig, c.Window)
	case c.MissedThreshold < 0:
		return fmt.Errorf("%w: missed-heartbeat threshold %d is negative", ErrInvalidConfig, c.MissedThreshold)
	case c.ReceivedThreshold < 0:
		return fmt.Errorf("%w: received-heartbeat threshold %d is negative", ErrInvalidConfig, c.ReceivedThreshold)
	case c.UnknownGrace < 0:
		return fmt.Errorf("%w: unknown-node grace %v is negative", ErrInvalidConfig, c.UnknownGrace)
	}
	if c.HeartbeatInterval == 0 {
		c.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if c.Window == 0 {
		// Ten intervals, and at least the default: a longer interval
		// (--heartbeat-interval 1s) widens the window with it, which
		// must hold ReceivedThreshold of them.
		c.Window = max(DefaultHeartbeatWindow, 10*c.HeartbeatInterval)
	}
	if c.MissedThreshold == 0 {
		c.MissedThreshold = DefaultMissedThreshold
	}
	if c.ReceivedThreshold == 0 {
		c.ReceivedThreshold = DefaultReceivedThreshold
	}
	if c.UnknownGrace == 0 {
		c.UnknownGrace = DefaultUnknownGrace
	}
	// ReceivedThreshold heartbeats sent HeartbeatInterval apart span
	// (ReceivedThreshold-1) intervals; a window that cannot hold them
	// would never let a down peer back up.
	if need := time.Duration(c.ReceivedThreshold) * c.HeartbeatInterval; c.Window < need {
		return fmt.Errorf("%w: heartbeat window %v cannot hold %d heartbeats %v apart (need at least %v)",
			ErrInvalidConfig, c.Window, c.ReceivedThreshold, c.HeartbeatInterval, need)
	}
	return nil
}

// NodeLiveness is what the tracker knows of one peer at a given time.
type NodeLiveness struct {
	// Alive is false while the peer is down.
	Alive bool
	// LastHeartbeat is when its latest heartbeat arrived; zero if it
	// never sent one.
	LastHeartbeat time.Time
	// DownSince is when the peer went down (its last heartbeat plus
	// MissedThreshold intervals, or when it was added plus UnknownGrace
	// for a peer never heard from); zero while it is alive.
	DownSince time.Time
	// Received is the number of heartbeats that arrived in the Window
	// ending at the time asked (at most Window/HeartbeatInterval when the
	// peer is healthy).
	Received int
}

// Liveness tracks which peers are alive from the heartbeats they send.
// See the comment at the top of liveness.go for the rules.
type Liveness struct {
	cfg LivenessConfig

	mu struct {
		sync.Mutex
		peers map[string]*peerLiveness
	}
}

// peerLiveness is one peer's heartbeat history, as of its last heartbeat
// (or, never heard from, as of when it was added). Whether the peer has
// gone down since is decided at query time from last and added.
type peerLiveness struct {
	// added is when the tracker learned of the peer (Add, or its first
	// heartbeat).
	added time.Time
	// last is the latest heartbeat; zero if none yet.
	last time.Time
	// recent holds the heartbeats in (last-Window, last], ascending.
	recent []time.Time
	// down and downSince: the peer was down as of last, since downSince.
	down      bool
	downSince time.Time
	// streak, while down, is the first heartbeat since the peer last went
	// silent; recovery counts the heartbeats of recent at or after it.
	streak time.Time
}

// NewLiveness returns a tracker with no peers. cfg is validated and its
// defaults filled in.
func NewLiveness(cfg LivenessConfig) (*Liveness, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	l := &Liveness{cfg: cfg}
	l.mu.peers = make(map[string]*peerLiveness)
	return l, nil
}

// Config returns the tracker's settings, defaults filled in.
func (l *Liveness) Config() LivenessConfig { return l.cfg }

// Add starts tracking node, learned of at at (say, an assignment named
// it). A node already tracked keeps its history. A node never heard from
// counts as alive until UnknownGrace after at.
func (l *Liveness) Add(node string, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.mu.peers[node]; !ok {
		l.mu.peers[node] = &peerLiveness{added: at}
	}
}

// Forget stops tracking node (it left the cluster); it becomes
// untracked, which counts as alive.
func (l *Liveness) Forget(node string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.mu.peers, node)
}

// Observe records a heartbeat from node, received at at. An untracked
// node starts being tracked. It reports whether the heartbeat counted: a
// heartbeat at or before the latest one recorded for node (the clock went
// back, or a duplicate), or at the zero time, is ignored.
func (l *Liveness) Observe(node string, at time.Time) bool {
	if at.IsZero() {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.mu.peers[node]
	if p == nil {
		p = &peerLiveness{added: at}
		l.mu.peers[node] = p
	}
	if !p.last.IsZero() && !at.After(p.last) {
		return false
	}
	// Bring the state up to at, just before this heartbeat arrived.
	if !p.down {
		if from, limit := l.silence(p); at.Sub(from) >= limit {
			p.down, p.downSince, p.streak = true, from.Add(limit), time.Time{}
		}
	} else if !p.last.IsZero() && at.Sub(p.last) >= l.missedLimit() {
		// Silent again while down: the recovery starts over.
		p.streak = time.Time{}
	}
	if p.down && p.streak.IsZero() {
		p.streak = at
	}
	p.last = at
	p.recent = append(pruneBefore(p.recent, at.Add(-l.cfg.Window)), at)
	if p.down && countFrom(p.recent, p.streak) >= l.cfg.ReceivedThreshold {
		p.down, p.downSince, p.streak = false, time.Time{}, time.Time{}
	}
	return true
}

// Alive reports whether node is alive at now. An untracked node is alive.
func (l *Liveness) Alive(node string, now time.Time) bool {
	nl, _ := l.Get(node, now)
	return nl.Alive
}

// Get returns what the tracker knows of node at now, and whether it is
// tracked. An untracked node is reported alive, never heard from.
func (l *Liveness) Get(node string, now time.Time) (NodeLiveness, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	p, ok := l.mu.peers[node]
	if !ok {
		return NodeLiveness{Alive: true}, false
	}
	return l.evaluateLocked(p, now), true
}

// Status returns every tracked node's liveness at now, for
// /clusterStatus and the status page.
func (l *Liveness) Status(now time.Time) map[string]NodeLiveness {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]NodeLiveness, len(l.mu.peers))
	for node, p := range l.mu.peers {
		out[node] = l.evaluateLocked(p, now)
	}
	return out
}

// evaluateLocked decides p's liveness at now without changing p. l.mu
// must be held (p is shared with Observe).
func (l *Liveness) evaluateLocked(p *peerLiveness, now time.Time) NodeLiveness {
	if now.Before(p.last) {
		now = p.last
	}
	down, since := p.down, p.downSince
	if !down {
		if from, limit := l.silence(p); now.Sub(from) >= limit {
			down, since = true, from.Add(limit)
		}
	}
	nl := NodeLiveness{Alive: !down, LastHeartbeat: p.last, Received: countAfter(p.recent, now.Add(-l.cfg.Window))}
	if down {
		nl.DownSince = since
	}
	return nl
}

// silence returns when p's current silence started and how long it may
// last before p counts as down.
func (l *Liveness) silence(p *peerLiveness) (from time.Time, limit time.Duration) {
	if p.last.IsZero() {
		return p.added, l.cfg.UnknownGrace
	}
	return p.last, l.missedLimit()
}

func (l *Liveness) missedLimit() time.Duration {
	return time.Duration(l.cfg.MissedThreshold) * l.cfg.HeartbeatInterval
}

// pruneBefore drops the times at or before cutoff from ts (ascending),
// in place.
func pruneBefore(ts []time.Time, cutoff time.Time) []time.Time {
	i := 0
	for i < len(ts) && !ts[i].After(cutoff) {
		i++
	}
	return slices.Delete(ts, 0, i)
}

// countAfter counts the times in ts after cutoff.
func countAfter(ts []time.Time, cutoff time.Time) int {
	n := 0
	for _, t := range ts {
		if t.After(cutoff) {
			n++
		}
	}
	return n
}

// countFrom counts the times in ts at or after from.
func countFrom(ts []time.Time, from time.Time) int {
	n := 0
	for _, t := range ts {
		if !t.Before(from) {
			n++
		}
	}
	return n
}
