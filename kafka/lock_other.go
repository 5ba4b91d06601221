//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package kafka

import (
	"errors"
	"os"
)

var errWouldBlock = errors.New("kafka: lock held")

// lockFile does nothing where flock is unavailable: the data dir is not
// protected against a second broker there.
func lockFile(*os.File) error { return nil }
