package pgwire

import (
	"sync"

	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/internal/safe"
	"github.com/jackc/pgx/v5/pgproto3"
)

// Asynchronous notifications (LISTEN/NOTIFY).
//
// A session queues notifications at any time (another session's NOTIFY
// commits, a view changes) and calls the wake function it got from
// SetWake. Postgres hands them to the client at two points, and so does
// this file:
//
//   - before ReadyForQuery, when the transaction status is 'I': a
//     statement that ran while notifications arrived, or that committed
//     its own, is followed by them (sendReady, on the connection's
//     goroutine);
//   - at once when the connection is idle: ReadyForQuery 'I' was sent and
//     the connection waits for the client's next message. Its goroutine is
//     then blocked reading, so a wake starts a short-lived goroutine,
//     deliver, which writes them and ends.
//
// Inside a transaction block (status 'T' or 'E'), and between the
// messages of an extended-protocol pipeline before its Sync, nothing is
// delivered: Postgres holds notifications until the transaction ends,
// and the client sees them before the ReadyForQuery 'I' that follows.
//
// The writer belongs to the connection's goroutine except while the
// connection is idle, when it may lend it to deliver. The hand-over is
// notifier.mu: the connection's goroutine marks itself idle before it
// reads and busy as soon as a read returns, and then waits for a
// running deliver to finish before it touches the writer. deliver checks
// idle before each batch, so it ends at most one batch after the
// connection turns busy. Reading and writing the socket at the same time
// is safe for TCP and TLS connections alike (tls.Conn locks each
// direction on its own).
//
// A client that reads nothing while it is sent notifications blocks
// deliver in its write, and the connection's next message waits for
// that write, as it would in Postgres; what may pile up meanwhile is
// bounded by the session's queue, not here. Shutdown, TerminateBackend
// and a dead socket bound the write by the deadlines ctx's end sets.
// deliver is joined before the connection ends (notifier.close), so no
// goroutine outlives its connection.
type notifier struct {
	c  *conn
	mu struct {
		sync.Mutex
		// idle is set while the connection waits for a message after
		// ReadyForQuery 'I'; woken since a wake came in, not yet taken;
		// closed once the connection ends. running is set while deliver
		// runs and closed when it returns.
		idle, woken, closed bool
		running             chan struct{}
	}
}

// wake is what the session calls when it has queued notifications.
func (n *notifier) wake() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.mu.woken = true
	n.startLocked()
}

// startLocked starts deliver when the connection is idle, has something
// to deliver and no deliver runs. n.mu must be held.
func (n *notifier) startLocked() {
	if !n.mu.idle || !n.mu.woken || n.mu.closed || n.mu.running != nil {
		return
	}
	done := make(chan struct{})
	n.mu.running = done
	go n.deliver(done)
}

// idle is called by the connection's goroutine before it waits for the
// next message, after a ReadyForQuery 'I'.
func (n *notifier) idle() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.mu.idle = true
	n.startLocked()
}

// busy is called by the connection's goroutine when a read returned,
// before it writes anything: it takes the writer back.
func (n *notifier) busy() {
	n.mu.Lock()
	n.mu.idle = false
	running := n.mu.running
	n.mu.Unlock()
	if running != nil {
		<-running
	}
}

// close stops delivery for good and waits for a deliver that runs; the
// session's wakes do nothing after it.
func (n *notifier) close() {
	n.mu.Lock()
	n.mu.idle, n.mu.closed = false, true
	running := n.mu.running
	n.mu.Unlock()
	if running != nil {
		<-running
	}
}

// takeWoken reports whether a wake came since the last call, and clears
// it. The connection's goroutine asks before ReadyForQuery, so that a
// session that never listens costs no call into it.
func (n *notifier) takeWoken() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	woken := n.mu.woken
	n.mu.woken = false
	return woken
}

// deliver writes what the session queued while the connection stays
// idle, then returns. It runs on its own goroutine with the writer lent
// to it (see notifier).
func (n *notifier) deliver(done chan struct{}) {
	c := n.c
	defer func() {
		n.mu.Lock()
		n.mu.running = nil
		n.mu.Unlock()
		close(done)
	}()
	// A panic here would be pgwire's own bug: it ends this connection
	// (the stream may be mid-message), not the process.
	var panicked error
	defer func() {
		if panicked != nil {
			safe.Log(c.log, "pgwire: panic delivering notifications; closing the connection", panicked)
			c.cancel(errClientGone)
		}
	}()
	defer safe.Recover(&panicked)
	for {
		n.mu.Lock()
		if !n.mu.idle || n.mu.closed || !n.mu.woken {
			n.mu.Unlock()
			return
		}
		n.mu.woken = false
		n.mu.Unlock()
		err := c.sendNotifications()
		if err == nil {
			err = c.w.flush()
		}
		if err != nil {
			// The socket failed: end the connection, which also ends the
			// read its goroutine waits in.
			c.cancel(errClientGone)
			return
		}
	}
}

// sendNotifications takes what the session queued and adds it to the
// writer, without flushing. Whoever holds the writer calls it.
func (c *conn) sendNotifications() error {
	var ns []Notification
	var notice *pgerr.Error
	if err := callSafely(func() error { ns, notice = c.sess.Notifications(); return nil }); err != nil {
		c.internalError(err)
		return nil
	}
	if notice != nil {
		if err := c.w.send(noticeResponse(notice)); err != nil {
			return err
		}
	}
	for _, n := range ns {
		if err := c.w.send(&pgproto3.NotificationResponse{PID: n.PID, Channel: cstring(n.Channel), Payload: cstring(n.Payload)}); err != nil {
			return err
		}
	}
	return nil
}
