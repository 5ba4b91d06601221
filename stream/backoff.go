package stream

import (
	"time"

	"github.com/basindb/basin/internal/backoff"
)

// Restart backoff of supervised tasks (internal/backoff). A task that
// fails is restarted from its checkpoint after a wait that doubles with
// each failure in a row, from restartMin up to restartMax, so a task that
// cannot run (its broker down, a bug on one record) does not spin; each
// wait is jittered,
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

// newBackoff returns the restart backoff of one task.
func newBackoff() *backoff.Backoff {
	return &backoff.Backoff{Min: restartMin, Max: restartMax, Healthy: healthyRun}
}
