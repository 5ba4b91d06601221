package stream

import (
	"testing"
	"time"
)

// TestBackoff checks that a task's restart backoff is the one backoff.go
// documents (internal/backoff tests the doubling and the jitter): 100ms
// first, a 5s ceiling, reset by a run of 30s.
func TestBackoff(t *testing.T) {
	b := newBackoff()
	if b.Min != 100*time.Millisecond || b.Max != 5*time.Second || b.Healthy != 30*time.Second {
		t.Fatalf("restart backoff %+v, want 100ms to 5s, reset after 30s", *b)
	}
	if d := b.Failed(0, 0); d != 50*time.Millisecond {
		t.Fatalf("first wait with rnd 0: %v, want half of 100ms", d)
	}
}
