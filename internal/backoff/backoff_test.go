package backoff

import (
	"context"
	"testing"
	"time"
)

// TestFailed checks the waits: doubling from Min to the Max ceiling
// while runs keep failing fast, each jittered within [half, whole) of
// the backoff, and back to Min after a run that lasted Healthy.
func TestFailed(t *testing.T) {
	const ms = time.Millisecond
	const healthy = 30 * time.Second
	b := &Backoff{Min: 100 * ms, Max: 5 * time.Second, Healthy: healthy}
	fast := 10 * ms
	var got []time.Duration
	for range 8 {
		got = append(got, b.Failed(fast, 0)) // rnd 0: the lower bound, half the backoff
	}
	want := []time.Duration{50 * ms, 100 * ms, 200 * ms, 400 * ms, 800 * ms, 1600 * ms, 2500 * ms, 2500 * ms}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("waits of fast failures with rnd 0: %v, want %v", got, want)
		}
	}
	if d := b.Failed(fast, 0.5); d != 3750*ms {
		t.Errorf("rnd 0.5 at the ceiling: %v, want 3.75s", d)
	}
	if d := b.Failed(fast, 0.999); d < 4990*ms || d >= 5*time.Second {
		t.Errorf("rnd 0.999 at the ceiling: %v, want just under 5s", d)
	}
	if d := b.Failed(healthy-ms, 0); d != 2500*ms {
		t.Errorf("after a run of %v: %v, want the ceiling's 2.5s", healthy-ms, d)
	}
	if d := b.Failed(healthy, 0); d != 50*ms {
		t.Errorf("after a healthy run: %v, want 50ms", d)
	}
	if d := b.Failed(fast, 0); d != 100*ms {
		t.Errorf("the failure after: %v, want 100ms", d)
	}
	c := &Backoff{Min: 100 * ms, Max: 5 * time.Second}
	if lo, hi := c.Failed(fast, -1), c.Failed(fast, 2); lo != 50*ms || hi != 200*ms {
		t.Errorf("rnd -1, 2: %v, %v", lo, hi)
	}
	// Without Healthy, however long a run lasted, the waits keep growing.
	d := New(10*ms, time.Second)
	for range 3 {
		d.Failed(time.Hour, 0)
	}
	if w := d.Failed(time.Hour, 0); w != 40*ms {
		t.Errorf("fourth wait without Healthy: %v, want 40ms", w)
	}
}

// TestWaitCanceled: Wait returns the context's error at once when it is
// done.
func TestWaitCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := New(time.Hour, time.Hour).Wait(ctx); err != context.Canceled {
		t.Fatalf("Wait on a canceled context: %v", err)
	}
	if err := Sleep(context.Background(), 0); err != nil {
		t.Fatalf("Sleep 0: %v", err)
	}
}

// TestJitterSpreadsRetries checks that loops failing together do not
// retry together: many backoffs fed different random numbers spread
// their waits over the window.
func TestJitterSpreadsRetries(t *testing.T) {
	seen := map[time.Duration]bool{}
	for i := range 100 {
		b := New(100*time.Millisecond, 5*time.Second)
		seen[b.Failed(0, float64(i)/100)] = true
	}
	if len(seen) < 90 {
		t.Errorf("100 loops failing at once retry at only %d distinct times", len(seen))
	}
}
