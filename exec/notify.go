package exec

import (
	"fmt"
	"slices"
	"sync"

	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/sql"
)

// LISTEN, UNLISTEN and NOTIFY.
//
// The hub (notifyHub, one per Engine) maps each channel to the sessions
// listening on it. Whoever produces a notification, a session's NOTIFY
// or pg_notify at commit, or another part of the node through
// Engine.Notify, hands it to the hub, which appends it to the queue of
// every listener of the channel and calls the listener's wake function;
// pgwire then takes the queue (Session.Notifications) and sends it to
// the client when Postgres would. The hub is node-local: a NOTIFY
// reaches the sessions connected to the node that ran it, not those of
// other nodes of a cluster.
//
// As in Postgres, a session's LISTEN, UNLISTEN and NOTIFY take effect
// when its transaction commits: at COMMIT in a transaction block, else
// at the end of the simple Query message (its statements are one
// implicit transaction) or of the Execute. A ROLLBACK, a failed block or
// an error in the implicit transaction drops them. Within one
// transaction a notification equal to one already sent on the same
// channel with the same payload is sent once; otherwise order is kept.
//
// Each listener's queue is bounded (maxQueuedNotifyBytes). Postgres has
// one queue of 8 GB shared by all sessions, and a NOTIFY fails once it
// is full, which lets one client that never reads stop every sender.
// Here a sender never fails and never waits for a listener, which
// matters for producers that cannot fail (a view's changes): past the
// bound the listener's oldest notifications are dropped, and the client
// gets a WARNING before the next ones it receives, saying how many.
//
// Locking: notifyHub.mu, then listener.mu, never the other way. Wake
// functions and the listening hook are called with neither held.

// maxQueuedNotifyBytes bounds what a session's queue of undelivered
// notifications may hold, counting each one's channel, payload and
// notifyOverhead. 1 MiB is a few thousand row-sized JSON payloads, or
// about 130 of the largest (8000 bytes): enough to ride out a client
// that is busy for a while, small enough that a thousand stuck clients
// cost at most a gigabyte.
const maxQueuedNotifyBytes = 1 << 20

// notifyOverhead is what a queued notification costs besides its
// strings (the struct, slice slot, string headers).
const notifyOverhead = 64

// maxNotifyPayload is Postgres's limit on a payload: it must be shorter
// than 8000 bytes.
const maxNotifyPayload = 8000

// maxChannelName is the longest channel name, Postgres's NAMEDATALEN-1.
const maxChannelName = 63

// Notification is one asynchronous notification.
type Notification struct {
	// PID is the backend PID of the session that sent it; 0 for one from
	// Engine.Notify without a session.
	PID     int32
	Channel string
	Payload string
}

// notifyHub routes notifications from their senders to the sessions
// listening on their channels.
type notifyHub struct {
	// hookMu serializes changes of a channel's first or last listener
	// with the calls of the hook that report them, so the hook sees each
	// channel's changes in order. Taken before mu.
	hookMu sync.Mutex
	mu     struct {
		sync.Mutex
		channels map[string]map[*listener]struct{}
		hook     func(channel string, listening bool)
	}
}

// listener is one session's end of the hub: its queue of notifications
// not yet taken by the client's connection.
type listener struct {
	mu struct {
		sync.Mutex
		queue []Notification
		// bytes is what queue holds, as maxQueuedNotifyBytes counts;
		// dropped how many were dropped since the client last took it.
		bytes, dropped int
		wake           func()
	}
}

// push queues n and returns the wake function to call, nil when there
// is none. l.mu must not be held.
func (l *listener) push(n Notification) func() {
	l.mu.Lock()
	defer l.mu.Unlock()
	size := len(n.Channel) + len(n.Payload) + notifyOverhead
	l.mu.queue = append(l.mu.queue, n)
	l.mu.bytes += size
	drop := 0
	for l.mu.bytes > maxQueuedNotifyBytes && drop < len(l.mu.queue)-1 {
		d := l.mu.queue[drop]
		l.mu.bytes -= len(d.Channel) + len(d.Payload) + notifyOverhead
		drop++
	}
	if drop > 0 {
		l.mu.queue = slices.Delete(l.mu.queue, 0, drop)
		l.mu.dropped += drop
	}
	return l.mu.wake
}

// take removes and returns the queue, with the number dropped since the
// last take.
func (l *listener) take() ([]Notification, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	q, dropped := l.mu.queue, l.mu.dropped
	l.mu.queue, l.mu.bytes, l.mu.dropped = nil, 0, 0
	return q, dropped
}

// Notify sends a notification to every session of this node listening
// on channel, from the session with backend PID pid (0 for none). It
// never blocks on a client: each listener's queue is bounded, and its
// oldest notifications are dropped past the bound. channel is compared
// as is (a LISTEN's identifier is case-folded unless quoted); payload
// is not checked against Postgres's 8000-byte limit, which is NOTIFY's.
// Safe for concurrent use.
func (e *Engine) Notify(channel, payload string, pid int32) {
	e.notify.deliver([]Notification{{PID: pid, Channel: channel, Payload: payload}})
}

// OnListen sets the function told when a channel gets its first
// listener on this node (listening true) and when it loses its last
// (false), replacing any set before; nil removes it. For each channel
// the calls alternate, true first, in the order the changes happened,
// and are made one at a time, from the goroutine of the session whose
// LISTEN, UNLISTEN or disconnection caused them; they happen at its
// commit, before its ReadyForQuery. The function must not wait for any
// session; it may call Engine.Notify and ListeningChannels. When it is
// set, the channels that already have listeners are not reported:
// ListeningChannels lists them.
func (e *Engine) OnListen(hook func(channel string, listening bool)) {
	e.notify.hookMu.Lock()
	defer e.notify.hookMu.Unlock()
	e.notify.mu.Lock()
	defer e.notify.mu.Unlock()
	e.notify.mu.hook = hook
}

// ListeningChannels returns the channels that have a listener on this
// node, sorted.
func (e *Engine) ListeningChannels() []string {
	e.notify.mu.Lock()
	defer e.notify.mu.Unlock()
	out := make([]string, 0, len(e.notify.mu.channels))
	for ch := range e.notify.mu.channels {
		out = append(out, ch)
	}
	slices.Sort(out)
	return out
}

// deliver queues ns for the listeners of their channels and wakes each
// listener once.
func (h *notifyHub) deliver(ns []Notification) {
	var wakes map[*listener]func()
	h.mu.Lock()
	for _, n := range ns {
		for l := range h.mu.channels[n.Channel] {
			if w := l.push(n); w != nil {
				if wakes == nil {
					wakes = map[*listener]func(){}
				}
				wakes[l] = w
			}
		}
	}
	h.mu.Unlock()
	for _, w := range wakes {
		w()
	}
}

// listen adds l to channel's listeners and reports a first listener to
// the hook.
func (h *notifyHub) listen(l *listener, channel string) {
	h.hookMu.Lock()
	defer h.hookMu.Unlock()
	h.mu.Lock()
	ls := h.mu.channels[channel]
	first := len(ls) == 0
	if ls == nil {
		if h.mu.channels == nil {
			h.mu.channels = map[string]map[*listener]struct{}{}
		}
		ls = map[*listener]struct{}{}
		h.mu.channels[channel] = ls
	}
	ls[l] = struct{}{}
	hook := h.mu.hook
	h.mu.Unlock()
	if first && hook != nil {
		hook(channel, true)
	}
}

// unlisten removes l from channel's listeners and reports a last one to
// the hook.
func (h *notifyHub) unlisten(l *listener, channel string) {
	h.hookMu.Lock()
	defer h.hookMu.Unlock()
	h.mu.Lock()
	ls, ok := h.mu.channels[channel]
	_, was := ls[l]
	last := false
	if ok && was {
		delete(ls, l)
		if len(ls) == 0 {
			delete(h.mu.channels, channel)
			last = true
		}
	}
	hook := h.mu.hook
	h.mu.Unlock()
	if last && hook != nil {
		hook(channel, false)
	}
}

// sessionNotify is a session's side of LISTEN/NOTIFY. It belongs to the
// session's goroutine, except l, whose queue the hub fills.
type sessionNotify struct {
	l listener
	// channels are the channels the session listens on, in the order it
	// started to (pg_listening_channels).
	channels []string
	// pending is what the current transaction will do at commit: its
	// LISTEN and UNLISTEN in order, and its notifications, each once
	// (sent collapses repeats).
	actions []listenAction
	sends   []Notification
	sent    map[Notification]bool
}

// listenAction is a LISTEN (channel set, listen true), an UNLISTEN
// (listen false) or an UNLISTEN * (channel "", listen false).
type listenAction struct {
	channel string
	listen  bool
}

// SetWake sets the function the session calls when it has queued
// notifications for its client (Notifications); pgwire supplies it.
func (s *Session) SetWake(wake func()) {
	s.notify.l.mu.Lock()
	defer s.notify.l.mu.Unlock()
	s.notify.l.mu.wake = wake
}

// Notifications removes and returns the notifications queued for the
// client, and a WARNING to send before them when some were dropped for
// the queue's bound.
func (s *Session) Notifications() ([]Notification, *pgerr.Error) {
	ns, dropped := s.notify.l.take()
	if dropped == 0 {
		return ns, nil
	}
	return ns, &pgerr.Error{Severity: "WARNING", Code: pgerr.Warning,
		Message: fmt.Sprintf("%d notifications for this session were dropped: the client did not read them in time", dropped),
		Detail:  fmt.Sprintf("A session holds at most %d KiB of notifications its client has not read; past that the oldest are dropped.", maxQueuedNotifyBytes>>10),
		Hint:    "Read notifications promptly; a client that waits in a long statement or transaction block receives none until it ends."}
}

// checkChannel checks a channel name as pg_notify does.
func checkChannel(channel string) error {
	if channel == "" {
		return pgerr.New(pgerr.InvalidParameterValue, "channel name cannot be empty")
	}
	if len(channel) > maxChannelName {
		return pgerr.New(pgerr.InvalidParameterValue, "channel name too long").
			WithDetail("A channel name is at most %d bytes; %q is %d.", maxChannelName, channel, len(channel))
	}
	return nil
}

// queueNotify adds a notification to the session's transaction: NOTIFY
// and pg_notify.
func (s *Session) queueNotify(channel, payload string) error {
	if err := checkChannel(channel); err != nil {
		return err
	}
	if len(payload) >= maxNotifyPayload {
		return pgerr.New(pgerr.InvalidParameterValue, "payload string too long").
			WithDetail("A payload must be shorter than %d bytes; this one is %d.", maxNotifyPayload, len(payload))
	}
	n := Notification{PID: s.pid, Channel: channel, Payload: payload}
	if s.notify.sent[n] {
		return nil
	}
	if s.notify.sent == nil {
		s.notify.sent = map[Notification]bool{}
	}
	s.notify.sent[n] = true
	s.notify.sends = append(s.notify.sends, n)
	return nil
}

// Notify queues a notification as pg_notify(channel, payload) does: it
// is sent when the session's transaction commits.
func (s *Session) Notify(channel, payload string) error { return s.queueNotify(channel, payload) }

// ListeningChannels returns the channels the session listens on, in the
// order it started to: pg_listening_channels().
func (s *Session) ListeningChannels() []string { return slices.Clone(s.notify.channels) }

// listenStmt runs LISTEN, UNLISTEN and NOTIFY.
func (s *Session) listenStmt(st *sql.Listen, w ResultWriter) error {
	switch st.Kind {
	case sql.ListenNotify:
		if err := s.queueNotify(st.Channel, st.Payload); err != nil {
			return withPosition(err, st.Pos)
		}
		return w.Complete("NOTIFY")
	case sql.ListenListen:
		if err := checkChannel(st.Channel); err != nil {
			return withPosition(err, st.Pos)
		}
		s.notify.actions = append(s.notify.actions, listenAction{channel: st.Channel, listen: true})
		return w.Complete("LISTEN")
	default:
		s.notify.actions = append(s.notify.actions, listenAction{channel: st.Channel})
		return w.Complete("UNLISTEN")
	}
}

// endNotifyTxn ends the transaction of the session's LISTEN, UNLISTEN
// and NOTIFY: commit applies the first two and sends the notifications,
// else all are dropped.
func (s *Session) endNotifyTxn(commit bool) {
	sn := &s.notify
	if len(sn.actions) == 0 && len(sn.sends) == 0 {
		return
	}
	actions, sends := sn.actions, sn.sends
	sn.actions, sn.sends, sn.sent = nil, nil, nil
	if !commit {
		return
	}
	h := &s.e.notify
	for _, a := range actions {
		switch {
		case a.listen:
			if !slices.Contains(sn.channels, a.channel) {
				sn.channels = append(sn.channels, a.channel)
				h.listen(&sn.l, a.channel)
			}
		case a.channel == "":
			s.unlistenAll()
		default:
			if i := slices.Index(sn.channels, a.channel); i >= 0 {
				sn.channels = slices.Delete(sn.channels, i, i+1)
				h.unlisten(&sn.l, a.channel)
			}
		}
	}
	if len(sends) > 0 {
		h.deliver(sends)
	}
}

// unlistenAll stops listening on every channel: UNLISTEN * and Close.
func (s *Session) unlistenAll() {
	for _, ch := range s.notify.channels {
		s.e.notify.unlisten(&s.notify.l, ch)
	}
	s.notify.channels = nil
}

// endImplicitTxn ends the implicit transaction of a simple Query or an
// Execute outside a transaction block: what its statements did to
// LISTEN and NOTIFY takes effect when it succeeded (err nil).
func (s *Session) endImplicitTxn(err error) {
	if !s.inTxn {
		s.endNotifyTxn(err == nil)
	}
}
