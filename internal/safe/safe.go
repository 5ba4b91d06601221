package safe

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/basindb/basin/internal/backoff"
)

// PanicError is a recovered panic: the value passed to panic and the
// stack of the goroutine that panicked, taken where it was recovered
// (the panicking frames are still on the stack then).
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// Unwrap returns the panic value when it is an error (a runtime error,
// panic(err)), so errors.Is and errors.As see through the panic.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// Recover turns a panic into a *PanicError stored in *err. It must be
// deferred directly, as the last defer of the function whose panics it
// catches, which then returns normally:
//
//	func f() (err error) {
//		defer safe.Recover(&err)
//		...
//	}
func Recover(err *error) {
	if r := recover(); r != nil {
		*err = &PanicError{Value: r, Stack: debug.Stack()}
	}
}

// Call runs f and returns its error, or a *PanicError if it panicked.
func Call(f func() error) (err error) {
	defer Recover(&err)
	return f()
}

// Restart runs f until it returns; when f panics, the panic is logged
// (Log) with msg and f runs again after wait, unless ctx is done by then.
// For the loops of long-lived goroutines (heartbeats, group membership):
// one bad turn of the loop must not end the loop, nor the process.
func Restart(ctx context.Context, log *slog.Logger, msg string, wait time.Duration, f func()) {
	for Do(log, msg, f) != nil {
		if backoff.Sleep(ctx, wait) != nil {
			return
		}
	}
}

// Do runs f; a panic in it is logged (Log) with msg and returned as a
// *PanicError, nil if f returned.
func Do(log *slog.Logger, msg string, f func()) error {
	err := Call(func() error { f(); return nil })
	if err != nil {
		Log(log, msg, err)
	}
	return err
}

// Log logs err at error level with a "stack" attribute: the stack of the
// goroutine that panicked for a *PanicError in err's chain, else the
// caller's.
func Log(log *slog.Logger, msg string, err error, args ...any) {
	if log == nil {
		log = slog.Default()
	}
	log.Error(msg, append([]any{"err", err, "stack", string(StackOf(err))}, args...)...)
}

// StackOf returns the stack of the panic in err's chain, or the caller's
// stack when err holds none.
func StackOf(err error) []byte {
	var pe *PanicError
	if errors.As(err, &pe) {
		return pe.Stack
	}
	return debug.Stack()
}

// IsPanic reports whether err's chain holds a *PanicError.
func IsPanic(err error) bool {
	var pe *PanicError
	return errors.As(err, &pe)
}
