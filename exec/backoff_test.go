package exec

import (
	"testing"
	"time"
)

// TestBackoff checks the restart waits of a task: doubling from 100ms to
// a 5s ceiling while runs keep failing fast, each wait jittered within
// [half, whole) of the backoff, and back to 100ms after a run that lasted
// the healthy period.
func TestBackoff(t *testing.T) {
	const ms = time.Millisecond
	b := newBackoff()
	fast := 10 * ms
	// rnd 0 gives the lower bound, half the backoff.
	var got []time.Duration
	for range 8 {
		got = append(got, b.failed(fast, 0))
	}
	want := []time.Duration{50 * ms, 100 * ms, 200 * ms, 400 * ms, 800 * ms, 1600 * ms, 2500 * ms, 2500 * ms}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("waits of fast failures with rnd 0: %v, want %v", got, want)
		}
	}
	// The jitter spreads a wait over [half, whole).
	if d := b.failed(fast, 0.5); d != 3750*ms {
		t.Errorf("rnd 0.5 at the ceiling: %v, want 3.75s", d)
	}
	if d := b.failed(fast, 0.999); d < 4990*ms || d >= 5*time.Second {
		t.Errorf("rnd 0.999 at the ceiling: %v, want just under 5s", d)
	}
	// A run shorter than the healthy period keeps the backoff up...
	if d := b.failed(healthyRun-ms, 0); d != 2500*ms {
		t.Errorf("after a run of %v: %v, want the ceiling's 2.5s", healthyRun-ms, d)
	}
	// ...one that lasted it resets the backoff, and the doubling starts
	// again.
	if d := b.failed(healthyRun, 0); d != 50*ms {
		t.Errorf("after a healthy run: %v, want 50ms", d)
	}
	if d := b.failed(fast, 0); d != 100*ms {
		t.Errorf("the failure after: %v, want 100ms", d)
	}
	// Out-of-range randomness stays within the bounds.
	c := newBackoff()
	if lo, hi := c.failed(fast, -1), c.failed(fast, 2); lo != 50*ms || hi != 200*ms {
		t.Errorf("rnd -1, 2: %v, %v", lo, hi)
	}
}

// TestBackoffJitterSpreadsRestarts checks that tasks failing together
// do not restart together: many backoffs fed different random numbers
// spread their waits over the window.
func TestBackoffJitterSpreadsRestarts(t *testing.T) {
	seen := map[time.Duration]bool{}
	for i := range 100 {
		b := newBackoff()
		seen[b.failed(0, float64(i)/100)] = true
	}
	if len(seen) < 90 {
		t.Errorf("100 tasks failing at once restart at only %d distinct times", len(seen))
	}
}
