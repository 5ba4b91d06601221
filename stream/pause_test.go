package stream

import (
	"testing"
	"time"
)

// TestPauseWatch: a gap between ticks longer than pauseGap makes every
// lag unknown from the last tick before it until pauseSettle after it,
// and so does a pause no tick has ended yet; ticks on time change
// nothing.
func TestPauseWatch(t *testing.T) {
	base := time.Unix(1_700_000_000, 0)
	w := newPauseWatch(base)
	at := func(d time.Duration) time.Time { return base.Add(d) }
	for d := pauseTick; d <= 2*time.Second; d += pauseTick {
		w.tick(at(d))
		if _, ok := w.stale(at(d + pauseTick/2)); ok {
			t.Fatalf("stale at %v with ticks on time", d)
		}
	}
	// The process stops after the tick at 2s; a read at 5s, before any
	// tick, does not know it was paused but sees no tick for 3s.
	if since, ok := w.stale(at(5 * time.Second)); !ok || !since.Equal(at(2*time.Second)) {
		t.Fatalf("during a pause: stale %v since %v, want since 2s", ok, since.Sub(base))
	}
	w.tick(at(5 * time.Second))
	for d := 5 * time.Second; d < 5*time.Second+pauseSettle; d += pauseTick {
		w.tick(at(d))
		if since, ok := w.stale(at(d + pauseTick/2)); !ok || !since.Equal(at(2*time.Second)) {
			t.Fatalf("at %v after the pause: stale %v since %v, want since 2s", d, ok, since.Sub(base))
		}
	}
	w.tick(at(5*time.Second + pauseSettle))
	if _, ok := w.stale(at(5*time.Second + pauseSettle + time.Millisecond)); ok {
		t.Fatal("still stale once the pause has settled")
	}

	// A task's lag: current before, unknown after a pause.
	ts := newTaskState(0)
	ts.pause = w
	ts.markRestored()
	ts.inputNext.Store(10)
	ts.inputEnd.Store(10)
	now := at(5*time.Second + pauseSettle + 50*time.Millisecond)
	if lag, tlag := ts.Lag(now); lag != 0 || tlag != 0 {
		t.Fatalf("lag of a current task: %d, %d ms", lag, tlag)
	}
	now = at(5*time.Second + pauseSettle + 3*time.Second) // no tick for 3s
	if lag, tlag := ts.Lag(now); lag != 1 || tlag < 3000 {
		t.Fatalf("lag of a task paused: %d, %d ms; want 1 and at least 3000 ms", lag, tlag)
	}
}
