package testcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TerminateTimeout is how long Terminate waits for a process to exit
// after SIGTERM before it kills it.
const TerminateTimeout = 30 * time.Second

// tailLines is how many lines of each log a failed test prints.
const tailLines = 60

// Process is one basin process of a cluster: the broker or a node. Its
// command line is fixed when it is first started, so Restart brings back
// the same node id, data dir and ports.
type Process struct {
	// Name is "broker" or the node id.
	Name string

	t            testing.TB // the cluster's test, for errors of methods without one
	bin          string
	env          []string
	log          *logBuffer
	startTimeout time.Duration
	// ready returns nil once the run whose output starts at log offset
	// logFrom is ready, and why not otherwise.
	ready func(ctx context.Context, logFrom int) error

	mu struct {
		sync.Mutex
		args    []string
		cmd     *exec.Cmd
		done    chan struct{} // closed when cmd has exited
		exited  bool
		exitErr error
		// expectExit is set by whatever asked the process to exit
		// (Kill, Terminate, WaitExit, cleanup); an exit without it is a
		// crash.
		expectExit bool
		stopped    bool
		starts     int
		// crashes are unexpected exits of earlier runs, kept for the
		// cleanup report when a test restarts a crashed process.
		crashes []string
	}
}

func newProcess(t testing.TB, name, bin string, args, env []string, logDir string, startTimeout time.Duration) (*Process, error) {
	f, err := os.OpenFile(filepath.Join(logDir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("testcluster: %w", err)
	}
	p := &Process{Name: name, t: t, bin: bin, env: env, log: &logBuffer{file: f}, startTimeout: startTimeout}
	p.mu.args = args
	return p, nil
}

// start starts the process with its current command line and returns the
// log offset its output starts at. The process must not be running. It
// forks under mu, against the rule, so that a start is atomic with
// respect to Kill and Running; starts are rare and take milliseconds.
func (p *Process) start() (logFrom int, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.cmd != nil && !p.mu.exited {
		return 0, fmt.Errorf("testcluster: %s is already running (pid %d)", p.Name, p.mu.cmd.Process.Pid)
	}
	if p.mu.cmd != nil && !p.mu.expectExit {
		p.mu.crashes = append(p.mu.crashes, exitString(p.mu.exitErr))
	}
	p.mu.starts++
	cmd := exec.Command(p.bin, p.mu.args...)
	cmd.Env = p.env
	cmd.Stdout, cmd.Stderr = p.log, p.log
	cmd.WaitDelay = 5 * time.Second // the pipe to p.log closes when the process exits
	p.log.mark("start %d: %s %s", p.mu.starts, filepath.Base(p.bin), strings.Join(p.mu.args, " "))
	logFrom = p.log.Len()
	if err := spawn(cmd); err != nil {
		return 0, fmt.Errorf("testcluster: starting %s: %w", p.Name, err)
	}
	done := make(chan struct{})
	p.mu.cmd, p.mu.done = cmd, done
	p.mu.exited, p.mu.exitErr, p.mu.expectExit, p.mu.stopped = false, nil, false, false
	go func() {
		err := cmd.Wait()
		p.log.mark("exited: %s", exitString(err))
		p.mu.Lock()
		p.mu.exited, p.mu.exitErr = true, err
		p.mu.Unlock()
		close(done)
	}()
	return logFrom, nil
}

// waitReady waits until p.ready succeeds, the process exits or the
// timeout passes.
func (p *Process) waitReady(timeout time.Duration, logFrom int) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	done := p.doneChan()
	var last error
	for wait := 10 * time.Millisecond; ; wait = min(2*wait, 200*time.Millisecond) {
		select {
		case <-done:
			return fmt.Errorf("testcluster: %s exited before it was ready: %s", p.Name, p.ExitString())
		default:
		}
		if last = p.ready(ctx, logFrom); last == nil {
			return nil
		}
		timer := time.NewTimer(wait)
		select {
		case <-done:
		case <-ctx.Done():
			timer.Stop()
			return fmt.Errorf("testcluster: %s not ready within %v: %v", p.Name, timeout, last)
		case <-timer.C:
		}
	}
}

func (p *Process) doneChan() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.done
}

// running returns the command and its done channel if the process is
// running, and marks it expected to exit if expectExit.
func (p *Process) running(expectExit bool) (*exec.Cmd, <-chan struct{}, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.cmd == nil || p.mu.exited {
		return nil, nil, false
	}
	if expectExit {
		p.mu.expectExit = true
	}
	return p.mu.cmd, p.mu.done, true
}

// Kill sends SIGKILL and waits for the process to exit. It does nothing
// if the process is not running.
func (p *Process) Kill() {
	cmd, done, ok := p.running(true)
	if !ok {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL) // it may have exited meanwhile
	<-done
}

// coverExitTimeout is how long end waits under make cover for a process
// to exit after SIGTERM before it kills it.
const coverExitTimeout = 10 * time.Second

// end ends p when its test is over: SIGKILL, or under make cover
// (coverDir) SIGTERM first, since a killed process writes no coverage;
// one that has not exited within coverExitTimeout is killed.
func (p *Process) end() {
	cmd, done, ok := p.running(true)
	if !ok {
		return
	}
	if coverDir() != "" {
		if exited, _ := p.sigterm(cmd, done, coverExitTimeout); exited {
			return
		}
	}
	_ = cmd.Process.Signal(syscall.SIGKILL) // it may have exited meanwhile
	<-done
}

// sigterm sends SIGTERM to cmd, p's running command (and SIGCONT, should
// p be stopped), and waits up to d for it to exit (done closed); it
// reports whether it did.
func (p *Process) sigterm(cmd *exec.Cmd, done <-chan struct{}, d time.Duration) (bool, error) {
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return false, err
	}
	if p.Stopped() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-done:
		return true, nil
	case <-timer.C:
		return false, nil
	}
}

// Stop sends SIGSTOP: the process freezes, its sockets stay open and
// connections to it hang. On Linux Stop returns once the kernel reports
// the process stopped.
func (p *Process) Stop() {
	p.signalStop(syscall.SIGSTOP, true)
}

// Cont sends SIGCONT to a process stopped with Stop.
func (p *Process) Cont() {
	p.signalStop(syscall.SIGCONT, false)
}

func (p *Process) signalStop(sig syscall.Signal, stopped bool) {
	cmd, _, ok := p.running(false)
	if !ok {
		p.t.Errorf("testcluster: %v to %s: it is not running (%s)", sig, p.Name, p.ExitString())
		return
	}
	if err := cmd.Process.Signal(sig); err != nil {
		p.t.Errorf("testcluster: %v to %s: %v", sig, p.Name, err)
		return
	}
	waitStopped(cmd.Process.Pid, stopped)
	p.mu.Lock()
	p.mu.stopped = stopped
	p.mu.Unlock()
}

// Terminate sends SIGTERM (and SIGCONT, should the process be stopped)
// and waits up to TerminateTimeout for it to exit. It returns nil for a
// clean exit (status 0), the exit status otherwise; a process that does
// not exit in time is killed and reported as an error.
func (p *Process) Terminate() error {
	cmd, done, ok := p.running(true)
	if !ok {
		return fmt.Errorf("testcluster: terminate %s: it is not running (%s)", p.Name, p.ExitString())
	}
	exited, err := p.sigterm(cmd, done, TerminateTimeout)
	if err != nil {
		return fmt.Errorf("testcluster: SIGTERM to %s: %w", p.Name, err)
	}
	if !exited {
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-done
		return fmt.Errorf("testcluster: %s did not exit within %v of SIGTERM; killed it", p.Name, TerminateTimeout)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.exitErr != nil {
		return fmt.Errorf("testcluster: %s after SIGTERM: %s", p.Name, exitString(p.mu.exitErr))
	}
	return nil
}

// WaitExit waits up to d for a process that is expected to exit by itself
// (a node refusing to start, say) and returns its exit status as an
// error, nil for status 0. Such an exit is then not reported as a crash.
func (p *Process) WaitExit(d time.Duration) error {
	p.mu.Lock()
	p.mu.expectExit = true
	done := p.mu.done
	p.mu.Unlock()
	if done == nil {
		return fmt.Errorf("testcluster: %s was never started", p.Name)
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		return fmt.Errorf("testcluster: %s still running after %v", p.Name, d)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.exitErr
}

// Restart starts a process that has exited (killed, terminated or
// crashed) again with the same command line, and waits until it is ready.
func (p *Process) Restart(t testing.TB) {
	t.Helper()
	logFrom, err := p.start()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.waitReady(p.startTimeout, logFrom); err != nil {
		t.Fatalf("%v\n%s", err, p.Tail(tailLines))
	}
}

// Running reports whether the process is alive: started and not exited.
// A stopped process is running.
func (p *Process) Running() bool {
	_, _, ok := p.running(false)
	return ok
}

// Stopped reports whether the process was stopped with Stop and not
// continued since.
func (p *Process) Stopped() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.stopped && !p.mu.exited
}

// PID is the pid of the current (or last) run, 0 before the first start.
func (p *Process) PID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.cmd == nil {
		return 0
	}
	return p.mu.cmd.Process.Pid
}

// ExitString describes how the last run ended: "running", "exit status
// 0", "signal: killed", ...
func (p *Process) ExitString() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.mu.cmd == nil:
		return "never started"
	case !p.mu.exited:
		return "running"
	}
	return exitString(p.mu.exitErr)
}

// crashReport describes the unexpected exits of the process, "" if none.
func (p *Process) crashReport() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	crashes := p.mu.crashes
	if p.mu.exited && !p.mu.expectExit {
		crashes = append(crashes[:len(crashes):len(crashes)], exitString(p.mu.exitErr))
	}
	if len(crashes) == 0 {
		return ""
	}
	return fmt.Sprintf("%s exited without being asked to: %s", p.Name, strings.Join(crashes, "; "))
}

// Log is the combined stdout and stderr of every run of the process so
// far, with a "=== testcluster:" line at each start and exit.
func (p *Process) Log() string { return p.log.String() }

// Tail is the last n lines of Log, headed by the process name.
func (p *Process) Tail(n int) string {
	lines := strings.SplitAfter(p.log.String(), "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	skipped := max(0, len(lines)-n)
	return fmt.Sprintf("--- %s log (last %d of %d lines; %s):\n%s", p.Name, len(lines)-skipped, len(lines),
		p.log.file.Name(), strings.TrimSuffix(strings.Join(lines[skipped:], ""), "\n"))
}

// Grep is the last n lines of Log that contain any of substrs, headed by
// the process name: a compact record of chosen events (a node's
// assignments, say) for a failure message, where Tail would be crowded
// out by routine lines.
func (p *Process) Grep(n int, substrs ...string) string {
	var lines []string
	for line := range strings.Lines(p.log.String()) {
		for _, s := range substrs {
			if strings.Contains(line, s) {
				lines = append(lines, line)
				break
			}
		}
	}
	skipped := max(0, len(lines)-n)
	return fmt.Sprintf("--- %s: last %d of %d lines with %q:\n%s", p.Name, len(lines)-skipped, len(lines),
		substrs, strings.TrimSuffix(strings.Join(lines[skipped:], ""), "\n"))
}

func exitString(err error) string {
	if err == nil {
		return "exit status 0"
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ProcessState.String()
	}
	return err.Error()
}

// logBuffer keeps a process's output in memory and in a file. Its
// methods are safe for concurrent use: the process writes through its
// pipe-copying goroutine while tests read.
type logBuffer struct {
	file *os.File

	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(b)
	_, _ = l.file.Write(b) // the file is a convenience; memory is the record
	return len(b), nil
}

// mark writes a harness line, on a line of its own.
func (l *logBuffer) mark(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var s strings.Builder
	if n := l.buf.Len(); n > 0 && l.buf.Bytes()[n-1] != '\n' {
		s.WriteByte('\n')
	}
	fmt.Fprintf(&s, "=== testcluster: %s: "+format+"\n", append([]any{time.Now().Format("15:04:05.000")}, args...)...)
	l.buf.WriteString(s.String())
	_, _ = l.file.WriteString(s.String())
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *logBuffer) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Len()
}

// since is the log from offset on.
func (l *logBuffer) since(offset int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if offset > l.buf.Len() {
		return ""
	}
	return string(l.buf.Bytes()[offset:])
}

func (l *logBuffer) close() { _ = l.file.Close() }

// ackExit marks the current run's exit, past or future, as expected.
func (p *Process) ackExit() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.expectExit = true
}
