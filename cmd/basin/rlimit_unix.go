//go:build unix

package main

import (
	"log/slog"
	"syscall"
)

// lowFileLimit is the descriptor limit below which basin warns: each
// Postgres session, broker connection, view partition's store and
// in-flight startup holds descriptors.
const lowFileLimit = 4096

// raiseFileLimit raises the soft RLIMIT_NOFILE to the hard limit (the
// most an unprivileged process may have) and logs the limit basin runs
// with. Go's runtime does the same on Linux at start; doing it here too
// makes it explicit, covers every Unix, and puts the budget in the log,
// where an operator looking at "too many open files" finds it.
func raiseFileLimit(log *slog.Logger) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		log.Warn("cannot read the file descriptor limit", "err", err)
		return
	}
	if lim.Cur < lim.Max {
		raised := lim
		raised.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised); err != nil {
			log.Warn("cannot raise the file descriptor limit to its hard limit", "soft", lim.Cur, "hard", lim.Max, "err", err)
		} else {
			lim = raised
		}
	}
	if lim.Cur < lowFileLimit {
		log.Warn("file descriptor limit is low; raise it (ulimit -n, or LimitNOFILE= in a systemd unit)",
			"limit", lim.Cur, "hard", lim.Max, "recommended", lowFileLimit)
		return
	}
	log.Info("file descriptor limit", "limit", lim.Cur, "hard", lim.Max)
}
