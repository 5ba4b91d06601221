package exec

import "time"

// Restart backoff of supervised tasks. A task that fails is restarted
// from its checkpoint after a wait that doubles with each failure in a
// row, from restartMin up to restartMax, so a task that cannot run (its
// broker down, a bug on one record) does not spin; each wait is jittered,
// so the tasks of a node that all failed on one cause (a broker restart)
// do not come back in lockstep. A run that lasted healthyRun or longer
// is taken as healthy: the next failure starts again from restartMin, so
// one failure after hours of running waits 100ms, not the 5s a long
// history of failures had built up.
//
// Healthy is a matter of how long the run lasted rather than of what it
// reached (markRestored, input processed): a task that restores, takes a
// record and fails on it, again and again, would otherwise reset its
// backoff each time and restart ten times a second.
const (
	restartMin = 100 * time.Millisecond
	restartMax = 5 * time.Second
	healthyRun = 30 * time.Second
)

// backoff decides the waits between the restarts of one task. It is a
// deterministic function of what it is told (how long each run lasted,
// a random number per wait), so it is tested without sleeping; the
// supervisor feeds it the clock and math/rand.
type backoff struct {
	min, max, healthy time.Duration
	// next is the wait, before jitter, of the next restart.
	next time.Duration
}

func newBackoff() *backoff {
	return &backoff{min: restartMin, max: restartMax, healthy: healthyRun}
}

// failed returns the wait before restarting a task whose run lasted ran
// and failed. rnd, in [0, 1), picks the wait within [next/2, next)
// ("equal jitter": never less than half the backoff, so the doubling
// still spaces restarts out).
func (b *backoff) failed(ran time.Duration, rnd float64) time.Duration {
	if b.next == 0 || ran >= b.healthy {
		b.next = b.min
	}
	d := b.next
	b.next = min(2*b.next, b.max)
	rnd = min(max(rnd, 0), 1)
	return d/2 + time.Duration(rnd*float64(d/2))
}
