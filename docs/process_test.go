package docs

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// logBuffer keeps a process's output and wakes waiters on each write.
type logBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{} // closed and replaced by every write
}

func newLogBuffer() *logBuffer { return &logBuffer{changed: make(chan struct{})} }

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	close(l.changed)
	l.changed = make(chan struct{})
	return len(p), nil
}

func (l *logBuffer) snapshot() (string, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String(), l.changed
}

func (l *logBuffer) String() string { s, _ := l.snapshot(); return s }

// tail returns the last n lines.
func (l *logBuffer) tail(n int) string {
	lines := strings.Split(strings.TrimRight(l.String(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// process is a command started in its own process group, so that what it
// starts goes with it.
type process struct {
	cmd    *exec.Cmd
	log    *logBuffer
	done   chan struct{}
	exit   error // set before done is closed
	killed bool
}

func startProcess(dir string, env []string, name string, args ...string) (*process, error) {
	p := &process{log: newLogBuffer(), done: make(chan struct{})}
	p.cmd = exec.Command(name, args...)
	p.cmd.Dir, p.cmd.Env = dir, env
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p.cmd.WaitDelay = 5 * time.Second
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		p.exit = p.cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// waitLog waits until the output has want, the process exits or d passes.
func (p *process) waitLog(want string, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		s, changed := p.log.snapshot()
		if strings.Contains(s, want) {
			return nil
		}
		select {
		case <-changed:
		case <-p.done:
			if strings.Contains(p.log.String(), want) {
				return nil
			}
			return fmt.Errorf("exited (%v) before printing %q", p.exit, want)
		case <-timer.C:
			return fmt.Errorf("did not print %q within %v", want, d)
		}
	}
}

// terminate sends SIGTERM and waits up to d for the exit status.
func (p *process) terminate(d time.Duration) error {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return p.exit
	case <-time.After(d):
		p.kill()
		return fmt.Errorf("still running %v after SIGTERM", d)
	}
}

// kill kills the process group and waits for the process.
func (p *process) kill() {
	p.killed = true
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// freePort returns a port nothing listens on at the moment.
func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return port, nil
}

// shell is one bash session per document: blocks are sourced into it in
// turn, so variables and background jobs carry over as in a terminal.
type shell struct {
	p       *process
	stdin   io.WriteCloser
	markers chan string // lines bash itself prints: the end markers
	dir     string      // where block scripts and outputs are written
	n       int
}

// shellInit runs before the first block: `make build` stands for the
// binary the test built, and nothing else of make runs.
const shellInit = `make() { if [ "$*" = build ]; then return 0; fi; echo "doctest: make $* is not run by the doc test" >&2; return 2; }
`

func startShell(work string, env []string) (*shell, error) {
	s := &shell{markers: make(chan string, 16), dir: filepath.Join(work, ".doctest")}
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return nil, err
	}
	p := &process{log: newLogBuffer(), done: make(chan struct{})}
	p.cmd = exec.Command("bash", "--noprofile", "--norc")
	p.cmd.Dir, p.cmd.Env = work, env
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p.cmd.Stderr = p.log
	stdin, err := p.cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	s.p, s.stdin = p, stdin
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			s.markers <- sc.Text()
		}
		close(s.markers)
		p.exit = p.cmd.Wait()
		close(p.done)
	}()
	if _, err := io.WriteString(stdin, shellInit); err != nil {
		return nil, err
	}
	return s, nil
}

var errShellExited = errors.New("the shell exited")

// run sources script into the session, with standard input from
// /dev/null and its output (and that of anything it starts in the
// background) to a file, and returns that output and its status. With
// checked, the session runs the script under set -e, so a failing command
// ends the session: run then returns errShellExited.
func (s *shell) run(script string, checked bool, d time.Duration) (string, int, error) {
	s.n++
	path := filepath.Join(s.dir, fmt.Sprintf("block-%d.sh", s.n))
	out := filepath.Join(s.dir, fmt.Sprintf("block-%d.out", s.n))
	if err := os.WriteFile(path, []byte(script+"\n"), 0o644); err != nil {
		return "", 0, err
	}
	marker := fmt.Sprintf("@@doctest-done-%d", s.n)
	errexit := "set +e"
	if checked {
		errexit = "set -e"
	}
	cmd := fmt.Sprintf("%s; source %q </dev/null >%q 2>&1; set +e; echo %s $?\n", errexit, path, out, marker)
	if _, err := io.WriteString(s.stdin, cmd); err != nil {
		return s.output(out), 0, fmt.Errorf("%w: %v", errShellExited, err)
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case line, ok := <-s.markers:
			if !ok {
				<-s.p.done
				return s.output(out), 0, fmt.Errorf("%w (%v)", errShellExited, s.p.exit)
			}
			if rest, ok := strings.CutPrefix(line, marker+" "); ok {
				status, _ := strconv.Atoi(rest)
				return s.output(out), status, nil
			}
		case <-timer.C:
			return s.output(out), 0, fmt.Errorf("still running after %v", d)
		}
	}
}

func (s *shell) output(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// close kills the session and everything it started.
func (s *shell) close() {
	_ = s.stdin.Close()
	s.p.kill()
}
