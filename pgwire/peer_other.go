//go:build !unix

package pgwire

// Without MSG_PEEK the socket is not watched during statements: a client
// that hangs up is noticed at the next read or write.
const canPeek = false

func peek(uintptr) (ready, gone bool) { return true, false }
