//go:build !unix

package main

import "log/slog"

// raiseFileLimit does nothing where there is no RLIMIT_NOFILE.
func raiseFileLimit(*slog.Logger) {}
