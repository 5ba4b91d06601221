//go:build unix

package pgwire

import "syscall"

// fileLimit is the process's soft descriptor limit (RLIMIT_NOFILE), or 0
// when unknown. The default startup limits stay below it.
func fileLimit() int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur > 1<<30 {
		return 0
	}
	return int(lim.Cur)
}
