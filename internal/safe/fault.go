package safe

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// Places where tests make a goroutine panic (Fault, SetFault).
const (
	// FaultPortal is the goroutine running a portal's pull query
	// (exec/prepared.go).
	FaultPortal = "exec.portal"
	// FaultGather is a scatter-gather read-ahead goroutine, one per
	// partition read (pull/pull.go).
	FaultGather = "exec.gather"
	// FaultTask is a supervised task's run (stream/runtime.go).
	FaultTask = "exec.task"
	// FaultConn is a pgwire connection's command loop, outside the
	// Backend calls (pgwire/conn.go).
	FaultConn = "pgwire.conn"
)

// faults are the armed places; nil when none is, which is all Fault
// reads.
var (
	faults   atomic.Pointer[map[string]*atomic.Int64]
	faultsMu sync.Mutex // serializes SetFault's copy-on-write of faults
)

// Fault panics if a test armed place and it has panics left.
func Fault(place string) {
	m := faults.Load()
	if m == nil {
		return
	}
	if left := (*m)[place]; left != nil && left.Add(-1) >= 0 {
		panic(fmt.Sprintf("safe: fault injected at %s", place))
	}
}

// TB is what SetFault needs of a test (testing.TB has it), so that the
// package does not import testing.
type TB interface {
	Helper()
	Cleanup(func())
}

// SetFault makes the next n passes through Fault(place) panic, until the
// test ends. Faults are process-wide: tests that arm them must not run
// in parallel with tests that reach the same place.
func SetFault(tb TB, place string, n int) {
	tb.Helper()
	faultsMu.Lock()
	defer faultsMu.Unlock()
	next := map[string]*atomic.Int64{}
	if m := faults.Load(); m != nil {
		for k, v := range *m {
			next[k] = v
		}
	}
	left := &atomic.Int64{}
	left.Store(int64(n))
	next[place] = left
	faults.Store(&next)
	tb.Cleanup(func() {
		faultsMu.Lock()
		defer faultsMu.Unlock()
		m := faults.Load()
		if m == nil || (*m)[place] != left {
			return
		}
		rest := map[string]*atomic.Int64{}
		for k, v := range *m {
			if k != place {
				rest[k] = v
			}
		}
		if len(rest) == 0 {
			faults.Store(nil)
		} else {
			faults.Store(&rest)
		}
	})
}

// FaultsLeft returns how many panics place has left (0 when unarmed), for
// a test to see that its fault fired.
func FaultsLeft(place string) int {
	if m := faults.Load(); m != nil {
		if left := (*m)[place]; left != nil {
			return int(max(0, left.Load()))
		}
	}
	return 0
}
