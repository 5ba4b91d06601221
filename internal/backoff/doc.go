// Package backoff is the one retry wait of basin: a wait that doubles
// with each failure in a row, from Min up to Max, jittered so that
// many retries that failed on one cause (a broker restart) do not come
// back in lockstep, and started again from Min after a healthy run.
//
// A Backoff is a deterministic function of what it is told (how long each
// run lasted, a random number per wait), so its waits are tested without
// sleeping; Wait feeds it the clock and math/rand and waits on a timer
// under a context. The zero Healthy never resets: the waits of a loop that
// retries one call (create a topic, ping a broker) grow until it succeeds.
//
// It imports only the standard library; every package may use it.
package backoff
