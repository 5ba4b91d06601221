package poll

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// MaxInterval bounds the wait between two calls.
const MaxInterval = 100 * time.Millisecond

// Wait calls fn until it reports done or fails, or until ctx is done;
// it returns fn's error, or else ctx's (after one last call).
func Wait(ctx context.Context, fn func() (done bool, err error)) error {
	return wait(ctx, 0, fn)
}

// WaitEvery is Wait at a fixed pace: fn is called every interval (a
// benchmark that times when a condition came to hold, and must not load
// what it measures with calls).
func WaitEvery(ctx context.Context, interval time.Duration, fn func() (done bool, err error)) error {
	return wait(ctx, interval, fn)
}

// wait is Wait at a fixed interval, or doubling from a millisecond up to
// MaxInterval when interval is 0.
func wait(ctx context.Context, interval time.Duration, fn func() (done bool, err error)) error {
	next := func(w time.Duration) time.Duration { return min(2*w, MaxInterval) }
	first := time.Millisecond
	if interval > 0 {
		first, next = interval, func(w time.Duration) time.Duration { return w }
	}
	for wait := first; ; wait = next(wait) {
		done, err := fn()
		if err != nil || done {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			if done, err := fn(); err != nil || done {
				return err
			}
			return ctx.Err()
		case <-t.C:
		}
	}
}

// Cond calls cond until it holds (true) or d has passed (false).
func Cond(d time.Duration, cond func() bool) bool {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return Wait(ctx, func() (bool, error) { return cond(), nil }) == nil
}

// Until calls fn until it returns nil, and fails t with fn's last error
// if that takes longer than d.
func Until(t testing.TB, d time.Duration, fn func() error) {
	t.Helper()
	UntilOr(t, d, fn, nil)
}

// UntilOr is Until that also fails t at once when abort, if not nil,
// returns a reason (a process of the test exited unasked).
func UntilOr(t testing.TB, d time.Duration, fn func() error, abort func() string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var last error
	var why string
	err := Wait(ctx, func() (bool, error) {
		last = fn()
		if last != nil && abort != nil {
			if why = abort(); why != "" {
				return false, fmt.Errorf("%s (waiting for: %v)", why, last)
			}
		}
		return last == nil, nil
	})
	switch {
	case err == nil:
	case why != "":
		t.Fatal(err)
	default:
		t.Fatalf("condition not met within %v: %v", d, last)
	}
}
