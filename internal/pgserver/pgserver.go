// Package pgserver starts a PostgreSQL server for a test: the benchmarks
// measure basin against it, and the differential tests compare basin's
// answers with its answers over the same rows.
package pgserver

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

// Server is a PostgreSQL server started in a temporary directory, with
// trust authentication on 127.0.0.1.
type Server struct {
	Bin  string // the directory of postgres, initdb, pg_ctl
	Dir  string // its data directory
	Addr string // host:port
	PID  int    // the postmaster's
}

// DSN is a connection string for user postgres, database postgres.
func (s *Server) DSN() string {
	return fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable", s.Addr)
}

// Port is the server's port, for pgbench -p.
func (s *Server) Port() string {
	_, p, _ := net.SplitHostPort(s.Addr)
	return p
}

// Version is the server's version string.
func (s *Server) Version(t testing.TB) string {
	out, err := exec.Command(filepath.Join(s.Bin, "postgres"), "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// bin finds the newest installed PostgreSQL server's binaries (Debian's
// layout: the postgresql package, which .ci/run and make bench install).
func bin(t testing.TB) string {
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
	t.Fatal("no PostgreSQL server found under /usr/lib/postgresql: install Debian's postgresql package (.ci/run does)")
	return ""
}

// Start initializes and starts a PostgreSQL server in a temporary
// directory, stopped when the test ends. PostgreSQL refuses to run as
// root, so as root it runs as the postgres user the Debian package
// creates. settings are extra -c name=value server settings.
func Start(t testing.TB, settings ...string) *Server {
	t.Helper()
	s := &Server{Bin: bin(t)}
	root, err := os.MkdirTemp("", "basin-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	s.Dir = filepath.Join(root, "data")
	asPostgres := func(name string, args ...string) *exec.Cmd {
		cmd := exec.Command(filepath.Join(s.Bin, name), args...)
		if os.Geteuid() == 0 {
			cmd = exec.Command("runuser", append([]string{"-u", "postgres", "--", filepath.Join(s.Bin, name)}, args...)...)
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
	if out, err := asPostgres("initdb", "-D", s.Dir, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C").CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	s.Addr = fmt.Sprintf("127.0.0.1:%d", port)
	opts := []string{"-p", strconv.Itoa(port), "-h", "127.0.0.1", "-k", root, "-c", "max_connections=200"}
	for _, set := range settings {
		opts = append(opts, "-c", set)
	}
	logFile := filepath.Join(root, "postgres.log")
	if out, err := asPostgres("pg_ctl", "-D", s.Dir, "-l", logFile, "-w", "-t", "60", "-o", strings.Join(opts, " "), "start").CombinedOutput(); err != nil {
		log, _ := os.ReadFile(logFile)
		t.Fatalf("pg_ctl start: %v\n%s\n%s", err, out, log)
	}
	t.Cleanup(func() {
		_ = asPostgres("pg_ctl", "-D", s.Dir, "-m", "immediate", "-w", "stop").Run()
	})
	b, err := os.ReadFile(filepath.Join(s.Dir, "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	s.PID, _ = strconv.Atoi(strings.SplitN(string(b), "\n", 2)[0])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.DSN())
	if err != nil {
		t.Fatalf("connecting to PostgreSQL at %s: %v", s.Addr, err)
	}
	conn.Close(ctx)
	return s
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
