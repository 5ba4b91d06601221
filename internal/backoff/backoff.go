package backoff

import (
	"context"
	"math/rand/v2"
	"time"
)

// Backoff decides the waits between the retries of one loop. Not safe for
// concurrent use: each loop has its own.
type Backoff struct {
	// Min is the first wait (before jitter), Max the ceiling of the
	// doubling.
	Min, Max time.Duration
	// Healthy is how long a run must have lasted for the next failure
	// to wait Min again; 0 means runs are not timed (Next).
	Healthy time.Duration
	// next is the wait, before jitter, of the next retry.
	next time.Duration
}

// New returns a backoff from min to max, never reset by a run.
func New(min, max time.Duration) *Backoff { return &Backoff{Min: min, Max: max} }

// Failed returns the wait before retrying after a run that lasted ran
// and failed. rnd, in [0, 1), picks the wait within [next/2, next)
// ("equal jitter": never less than half the backoff, so the doubling
// still spaces retries out).
func (b *Backoff) Failed(ran time.Duration, rnd float64) time.Duration {
	if b.next == 0 || b.Healthy > 0 && ran >= b.Healthy {
		b.next = b.Min
	}
	d := b.next
	b.next = min(2*b.next, b.Max)
	rnd = min(max(rnd, 0), 1)
	return d/2 + time.Duration(rnd*float64(d/2))
}

// Next is Failed for a loop whose runs are not timed.
func (b *Backoff) Next() time.Duration { return b.Failed(0, rand.Float64()) }

// Wait waits the next wait (Next), or until ctx is done, whose error it
// then returns.
func (b *Backoff) Wait(ctx context.Context) error { return Sleep(ctx, b.Next()) }

// Sleep waits d, or until ctx is done, whose error it then returns.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
