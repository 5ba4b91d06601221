// Package poll is the one way basin's tests wait for a condition that
// nothing signals (a task's progress on another process, a slot freed
// on a server after a client hung up): call it until it holds or a
// deadline passes. The wait between calls is a pace, not a guess at how
// long anything takes: it starts at a millisecond and doubles up to
// MaxInterval, so a condition that holds soon is seen soon and one that
// takes seconds costs a few calls a second.
//
// Tests wait on channels and conditions with deadlines, never on sleeps
// (STYLE.md); poll is for the conditions no channel reports. It imports
// only the standard library and testing.
package poll
