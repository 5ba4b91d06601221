//go:build !linux

package testcluster

import "os/exec"

// spawn starts cmd. Without PR_SET_PDEATHSIG a process outlives a test
// binary that dies without running its cleanups, except on Ctrl-C, which
// reaches the whole foreground process group.
func spawn(cmd *exec.Cmd) error { return cmd.Start() }

// waitStopped is a no-op where the process state cannot be read cheaply.
func waitStopped(pid int, stopped bool) {}
