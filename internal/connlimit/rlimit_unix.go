//go:build unix

package connlimit

import "syscall"

// FileLimit is the process's soft descriptor limit (RLIMIT_NOFILE), or 0
// when unknown: the budget the callers' default caps are shares of.
func FileLimit() int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur > 1<<30 {
		return 0
	}
	return int(lim.Cur)
}
