//go:build bench

package bench

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// postgres is a PostgreSQL server the benchmark started in a temporary
// directory, with trust authentication on 127.0.0.1.
type postgres struct {
	bin  string // the directory of postgres, initdb, pg_ctl
	dir  string // its data directory
	Addr string // host:port
	pid  int
}

// DSN is a connection string for user postgres, database postgres.
func (pg *postgres) DSN() string {
	return fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable", pg.Addr)
}

// Port is the server's port, for pgbench -p.
func (pg *postgres) Port() string {
	_, p, _ := net.SplitHostPort(pg.Addr)
	return p
}

// Version is the server's version string.
func (pg *postgres) Version(t testing.TB) string {
	out, err := exec.Command(filepath.Join(pg.bin, "postgres"), "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// PeakRSS is the server's peak resident set (the postmaster's and its
// backends' high-water marks summed), in bytes.
func (pg *postgres) PeakRSS() int64 {
	var total int64
	for _, pid := range descendants(pg.pid) {
		total += peakRSS(pid)
	}
	return total
}

// postgresBin finds the newest installed PostgreSQL server's binaries
// (Debian's layout; make bench installs the package when missing).
func postgresBin(t testing.TB) string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[i])))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[j])))
		return vi < vj
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "initdb")); err == nil {
			return dirs[i]
		}
	}
	t.Fatal("no PostgreSQL server found under /usr/lib/postgresql: make bench installs Debian's postgresql package")
	return ""
}

// startPostgres initializes and starts a PostgreSQL server in a temporary
// directory, stopped when the test ends. PostgreSQL refuses to run as
// root, so as root it runs as the postgres user the Debian package
// creates. settings are extra -c name=value server settings.
func startPostgres(t testing.TB, settings ...string) *postgres {
	t.Helper()
	pg := &postgres{bin: postgresBin(t)}
	root, err := os.MkdirTemp("", "basin-bench-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	pg.dir = filepath.Join(root, "data")
	asPostgres := func(name string, args ...string) *exec.Cmd {
		cmd := exec.Command(filepath.Join(pg.bin, name), args...)
		if os.Geteuid() == 0 {
			cmd = exec.Command("runuser", append([]string{"-u", "postgres", "--", filepath.Join(pg.bin, name)}, args...)...)
		}
		cmd.Dir = root
		return cmd
	}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("running as root needs the postgres user (Debian's postgresql package creates it): %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(root, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := asPostgres("initdb", "-D", pg.dir, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C").CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	pg.Addr = fmt.Sprintf("127.0.0.1:%d", port)
	opts := []string{"-p", strconv.Itoa(port), "-h", "127.0.0.1", "-k", root, "-c", "max_connections=200"}
	for _, s := range settings {
		opts = append(opts, "-c", s)
	}
	logFile := filepath.Join(root, "postgres.log")
	if out, err := asPostgres("pg_ctl", "-D", pg.dir, "-l", logFile, "-w", "-t", "60", "-o", strings.Join(opts, " "), "start").CombinedOutput(); err != nil {
		log, _ := os.ReadFile(logFile)
		t.Fatalf("pg_ctl start: %v\n%s\n%s", err, out, log)
	}
	t.Cleanup(func() {
		_ = asPostgres("pg_ctl", "-D", pg.dir, "-m", "immediate", "-w", "stop").Run()
	})
	b, err := os.ReadFile(filepath.Join(pg.dir, "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pg.pid, _ = strconv.Atoi(strings.SplitN(string(b), "\n", 2)[0])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, pg.DSN())
	if err != nil {
		t.Fatalf("connecting to PostgreSQL at %s: %v", pg.Addr, err)
	}
	conn.Close(ctx)
	return pg
}

// freePort returns a TCP port free on 127.0.0.1 a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// peakRSS is a process's peak resident set (VmHWM) in bytes, 0 if gone.
func peakRSS(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				return kb << 10
			}
		}
	}
	return 0
}

// descendants is pid and every process under it.
func descendants(pid int) []int {
	children := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", child))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces; cut after ')'.
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); i >= 0 {
			f := strings.Fields(s[i+1:])
			if len(f) > 1 {
				ppid, _ := strconv.Atoi(f[1])
				children[ppid] = append(children[ppid], child)
			}
		}
	}
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out
}
