package pgwire

import (
	"sync"
	"syscall"
	"time"
)

// watchAfter is how long a statement runs before its connection starts
// watching the socket for the client going away. Shorter statements
// cost no goroutine, no system call and no hand-off: a client that hangs
// up during one is noticed at the next read, a moment later.
const watchAfter = 20 * time.Millisecond

// peerWatch notices, while a statement runs, that the client closed or
// reset its socket, and ends the connection's context, which cancels the
// statement. It peeks at the socket (MSG_PEEK) through the runtime's
// poller, so nothing is consumed: bytes the client sent meanwhile (the
// next message of a pipeline) stay for the connection's next read, and
// only mean the client is still there.
//
// start and stop bracket each statement, on the connection's goroutine;
// the watch itself runs on the timer's goroutine, and stop interrupts it
// with a read deadline in the past.
//
// The timer is not set and stopped for every statement: at thousands of
// short statements a second, that was a good part of the runtime's work
// for each. start sets it only when it is not already set; when it fires
// with no statement running it stays unset until the next start, and
// when the running statement started after it was set, it is set again
// for the rest of that statement's watchAfter.
type peerWatch struct {
	c  *conn
	rc syscall.RawConn // nil: the socket has none (no watching)

	timer *time.Timer
	mu    sync.Mutex
	// running is set from start to stop, since is when the statement
	// started; armed is set while the timer is; watching is set while a
	// watch runs, done is closed when it returns.
	running, armed, watching bool
	since                    time.Time
	done                     chan struct{}
}

func (w *peerWatch) init(c *conn) {
	w.c = c
	if sc, ok := c.raw.(syscall.Conn); ok && canPeek {
		if rc, err := sc.SyscallConn(); err == nil {
			w.rc = rc
		}
	}
	if w.rc != nil {
		w.timer = time.AfterFunc(time.Hour, w.watch)
		w.timer.Stop()
	}
}

// start begins a statement: past watchAfter, the socket is watched.
func (w *peerWatch) start() {
	if w.rc == nil {
		return
	}
	now := time.Now()
	w.mu.Lock()
	w.running, w.since = true, now
	arm := !w.armed
	w.armed = true
	w.mu.Unlock()
	if arm {
		w.timer.Reset(watchAfter)
	}
}

// stop ends a statement, and a watch that runs.
func (w *peerWatch) stop() {
	if w.rc == nil {
		return
	}
	w.mu.Lock()
	w.running = false
	watching, done := w.watching, w.done
	w.watching = false
	w.mu.Unlock()
	if !watching {
		return
	}
	_ = w.c.raw.SetReadDeadline(time.Unix(1, 0))
	<-done
	_ = w.c.raw.SetReadDeadline(time.Time{})
	if w.c.ctx.Err() != nil {
		// The connection's end set a deadline the line above cleared.
		w.c.expireDeadlines()
	}
}

// watch waits until the socket is readable and looks at what is there
// without taking it: nothing (the client closed it) or an error (reset)
// end the connection.
func (w *peerWatch) watch() {
	w.mu.Lock()
	if !w.running || w.watching {
		w.armed = false // the next start sets the timer
		w.mu.Unlock()
		return
	}
	if rest := watchAfter - time.Since(w.since); rest > 0 {
		// Set for an earlier statement: this one has not run for
		// watchAfter yet.
		w.timer.Reset(rest)
		w.mu.Unlock()
		return
	}
	w.armed = false
	w.watching, w.done = true, make(chan struct{})
	done := w.done
	w.mu.Unlock()
	defer close(done)
	gone := false
	err := w.rc.Read(func(fd uintptr) bool {
		var ready bool
		ready, gone = peek(fd)
		return ready // not ready: wait until readable
	})
	if err == nil && gone {
		w.c.cancel(errClientGone)
	}
}
