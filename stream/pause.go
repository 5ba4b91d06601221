package stream

import (
	"context"
	"sync/atomic"
	"time"
)

// Pauses: a replica's lag right after its process did not run.
//
// A task's lag is measured against its inputs' ends as its consumer
// last fetched them. While the process runs that knowledge is at most a
// fetch old (tasks fetch with a 500 ms wait, and a broker answers at
// once when records arrive). A process that stops running for a while
// (SIGSTOP, a frozen VM, a stop-the-world pause) knows the ends only as
// they were when it stopped, and once it runs again it would report its
// old rows as current until its consumers have fetched again: a read
// bounded by acceptable_offset_lag or acceptable_time_lag could take
// them. So the runtime watches its own clock: a tick that comes more
// than pauseGap after the one before means the process was paused, and
// for pauseSettle after it every task's lag is unknown (an offset lag of
// at least 1, a time lag of at least the time since the pause began), as
// it is while a pause is under way and no tick has come yet.

const (
	// pauseTick is how often the watch ticks.
	pauseTick = 100 * time.Millisecond
	// pauseGap is the time without a tick that counts as a pause.
	pauseGap = time.Second
	// pauseSettle is how long after a pause lags stay unknown: the time
	// for a fetch sent after it to be answered (a 500 ms wait at most)
	// and taken, with room for a loaded machine.
	pauseSettle = 2 * time.Second
)

// pauseWatch notices that the process was paused. Its times are
// monotonic, in nanoseconds since base.
type pauseWatch struct {
	base time.Time
	// last is the last tick; from and until bound the time lags stay
	// unknown, from the last tick before a pause to pauseSettle after it.
	last, from, until atomic.Int64
}

func newPauseWatch(now time.Time) *pauseWatch {
	w := &pauseWatch{base: now}
	return w
}

// run ticks until ctx is done.
func (w *pauseWatch) run(ctx context.Context) {
	t := time.NewTicker(pauseTick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			w.tick(now)
		}
	}
}

// tick records a tick at now.
func (w *pauseWatch) tick(now time.Time) {
	n := int64(now.Sub(w.base))
	last := w.last.Swap(n)
	if n-last > int64(pauseGap) {
		w.from.Store(last)
		w.until.Store(n + int64(pauseSettle))
	}
}

// stale reports whether a lag measured at now is unknown because of a
// pause, and since when the process knows nothing of its inputs.
func (w *pauseWatch) stale(now time.Time) (since time.Time, ok bool) {
	if w == nil {
		return time.Time{}, false
	}
	n := int64(now.Sub(w.base))
	if last := w.last.Load(); n-last > int64(pauseGap) {
		return w.base.Add(time.Duration(last)), true // paused, and no tick yet
	}
	if n < w.until.Load() {
		return w.base.Add(time.Duration(w.from.Load())), true
	}
	return time.Time{}, false
}
