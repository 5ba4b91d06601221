// Package safe keeps a bug in one goroutine from taking the node down.
//
// Every goroutine basin starts runs its work under Recover (or Call, Do,
// Restart): a panic becomes a *PanicError carrying the value and the stack of
// the goroutine that panicked, and the goroutine's owner deals with it as
// with any other error of that work.
//
//   - A statement's goroutines (the portal's pull query, the
//     scatter-gather read-ahead) hand the error to the statement, which
//     fails; the error has no SQLSTATE, so pgwire sends XX000 and logs it
//     with the panic's stack (Log), and the session goes on.
//   - A task's supervisor treats a panic in the task as a failure of that
//     task: logged with its stack, the task restarts from its checkpoint
//     after its backoff.
//   - Work with no statement to fail logs the panic with its stack (Do)
//     and ends the one unit of work that panicked: a pgwire connection
//     (FATAL XX000 to its client), one heartbeat to one peer, one
//     applied assignment. The loops of long-lived goroutines (the
//     cluster membership, heartbeats, the refresh of lag ends) go on
//     after a panic (Restart).
//
// A recovered panic leaves the process running on state the panicking
// code may have left half-updated. That is the trade: the work that
// panicked is abandoned (its transaction aborts, its statement fails, its
// connection closes), and what it shares with other work is guarded by
// locks released in defers. A panic that is not a bug of one unit of work
// (out of memory, a corrupted heap) is not recoverable anyway: the
// runtime throws, it does not panic.
//
// # Faults
//
// Fault marks a place where tests make a goroutine panic: SetFault arms
// it for the next n times the place is reached. Unarmed, Fault is one
// atomic load. Only tests arm faults (SetFault takes the test, and clears
// what it armed when the test ends).
package safe
