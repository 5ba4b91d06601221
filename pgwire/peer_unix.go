//go:build unix

package pgwire

import (
	"errors"
	"syscall"
)

const canPeek = true

// peek looks at what the socket fd holds without taking it. ready is
// false when there is nothing yet; else gone says whether the client
// closed (nothing to read at the end of the stream) or reset the socket.
func peek(fd uintptr) (ready, gone bool) {
	var b [1]byte
	n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EINTR) {
		return false, false
	}
	return true, err != nil || n == 0
}
