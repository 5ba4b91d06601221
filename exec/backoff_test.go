package exec

import (
	"testing"
	"time"
)

// TestBackoff checks a task's restart waits as backoff.go documents them
// (internal/backoff tests the doubling and the jitter): 100ms first,
// doubling to a 5s ceiling while runs keep failing fast, and 100ms again
// after a run that lasted the healthy period.
func TestBackoff(t *testing.T) {
	const ms = time.Millisecond
	b := newBackoff()
	fast := 10 * ms
	var got []time.Duration
	for range 8 {
		got = append(got, b.Failed(fast, 0)) // rnd 0: half the backoff
	}
	want := []time.Duration{50 * ms, 100 * ms, 200 * ms, 400 * ms, 800 * ms, 1600 * ms, 2500 * ms, 2500 * ms}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("waits of fast failures with rnd 0: %v, want %v", got, want)
		}
	}
	if d := b.Failed(healthyRun, 0); d != 50*ms {
		t.Errorf("after a healthy run: %v, want 50ms", d)
	}
}
