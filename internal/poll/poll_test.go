package poll

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestWait: fn is called until it is done, its error ends the wait, and
// a context done first gives one last call and then the context's error.
func TestWait(t *testing.T) {
	n := 0
	if err := Wait(context.Background(), func() (bool, error) { n++; return n == 5, nil }); err != nil || n != 5 {
		t.Fatalf("Wait: %v after %d calls, want nil after 5", err, n)
	}
	boom := errors.New("boom")
	if err := Wait(context.Background(), func() (bool, error) { return false, boom }); err != boom {
		t.Fatalf("Wait with a failing fn: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls := 0
	if err := Wait(ctx, func() (bool, error) { calls++; return false, nil }); err != context.Canceled || calls != 2 {
		t.Fatalf("Wait on a done context: %v after %d calls, want Canceled after 2", err, calls)
	}
	held := false
	if !Cond(time.Minute, func() bool { held = !held; return !held }) {
		t.Fatal("Cond: a condition that holds on the second call was not seen")
	}
	if Cond(5*time.Millisecond, func() bool { return false }) {
		t.Fatal("Cond: a condition that never holds held")
	}
}

// fakeT records a failure instead of ending the test.
type fakeT struct {
	testing.TB
	failed string
}

func (f *fakeT) Helper()               {}
func (f *fakeT) Fatal(args ...any)     { f.failed = "fatal" }
func (f *fakeT) Fatalf(string, ...any) { f.failed = "fatalf" }

// TestUntil: Until returns once fn succeeds, fails after d otherwise, and
// UntilOr fails at once when abort gives a reason.
func TestUntil(t *testing.T) {
	var ft fakeT
	n := 0
	Until(&ft, time.Minute, func() error {
		if n++; n < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	if ft.failed != "" || n != 3 {
		t.Fatalf("Until: failed %q after %d calls", ft.failed, n)
	}
	Until(&ft, 5*time.Millisecond, func() error { return errors.New("never") })
	if ft.failed != "fatalf" {
		t.Fatalf("Until past its deadline: %q", ft.failed)
	}
	ft.failed = ""
	calls := 0
	UntilOr(&ft, time.Minute, func() error { calls++; return errors.New("never") }, func() string { return "node-1 exited" })
	if ft.failed != "fatal" || calls != 1 {
		t.Fatalf("UntilOr with an abort: %q after %d calls, want a failure after the first", ft.failed, calls)
	}
}

// TestWaitEvery: at a fixed pace fn is still called until it is done.
func TestWaitEvery(t *testing.T) {
	n := 0
	if err := WaitEvery(context.Background(), time.Millisecond, func() (bool, error) { n++; return n == 3, nil }); err != nil || n != 3 {
		t.Fatalf("WaitEvery: %v after %d calls, want nil after 3", err, n)
	}
}
