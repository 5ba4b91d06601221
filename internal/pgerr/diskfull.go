package pgerr

import (
	"errors"
	"io/fs"
	"syscall"
)

// FromDiskFull returns the 53100 disk_full error for err when its chain
// holds syscall.ENOSPC (or EDQUOT, a quota reached), naming the file
// from the *fs.PathError in the chain when there is one, and fallback
// (what was being written: a store, a topic) when not. It reports false
// for any other error. Without it a full disk reached the client as
// XX000 (or the broker's UNKNOWN_SERVER_ERROR), naming no disk.
func FromDiskFull(err error, fallback string) (*Error, bool) {
	if !errors.Is(err, syscall.ENOSPC) && !errors.Is(err, syscall.EDQUOT) {
		return nil, false
	}
	what := fallback
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Path != "" {
		what = pe.Path
	}
	why := "no space left on device"
	if errors.Is(err, syscall.EDQUOT) {
		why = "disk quota exceeded"
	}
	return New(DiskFull, "could not write to %s: %s", what, why).
		WithHint("Free space on the file system that holds it, or give it more; the write can be retried then."), true
}
