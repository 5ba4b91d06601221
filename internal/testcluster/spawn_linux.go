package testcluster

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// spawner starts every process from one goroutine locked to its OS thread
// for the life of the test binary. PR_SET_PDEATHSIG fires when the thread
// that forked the child exits, not the process; a Go thread can exit (when
// a goroutine locked to it returns), so forking from an arbitrary thread
// could kill a node in the middle of a test. This thread never exits.
var spawner struct {
	once sync.Once
	reqs chan spawnReq
}

type spawnReq struct {
	cmd *exec.Cmd
	err chan error
}

// spawn starts cmd so that the kernel kills it with SIGKILL if the test
// binary dies without running its cleanups.
func spawn(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	spawner.once.Do(func() {
		spawner.reqs = make(chan spawnReq)
		go spawnLoop(spawner.reqs)
	})
	r := spawnReq{cmd: cmd, err: make(chan error, 1)}
	spawner.reqs <- r
	return <-r.err
}

// spawnLoop is the spawner's goroutine. It never returns, so Main tells
// goleak to ignore it (by this name).
func spawnLoop(reqs <-chan spawnReq) {
	runtime.LockOSThread() // never unlocked: see spawner
	for r := range reqs {
		r.err <- r.cmd.Start()
	}
}

// waitStopped waits until the process with pid is (stopped=true) or is
// not (false) in the stopped state, as /proc reports it, for up to 5s:
// signal delivery is asynchronous, and a test that stops a node expects
// it frozen when Stop returns. It gives up quietly; callers find out soon
// enough.
func waitStopped(pid int, stopped bool) {
	deadline := time.Now().Add(5 * time.Second)
	for wait := time.Millisecond; time.Now().Before(deadline); wait = min(2*wait, 50*time.Millisecond) {
		state, ok := procState(pid)
		if !ok || (state == 'T') == stopped {
			return
		}
		time.Sleep(wait)
	}
}

// procState is the state letter of /proc/<pid>/stat ("R", "S", "T", ...).
func procState(pid int) (byte, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// "pid (comm) S ...": comm may hold spaces and parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return 0, false
	}
	return s[i+2], true
}
