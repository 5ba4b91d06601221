package pgwire

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// psql runs the real psql binary against the server. psql is required:
// CI installs it (postgresql-client), and a wire protocol server that is
// not tested against libpq is not tested.
func (ts *testServer) psql(t *testing.T, conn string, args ...string) *exec.Cmd {
	t.Helper()
	path, err := exec.LookPath("psql")
	if err != nil {
		t.Fatalf("psql is not on PATH (%v): the pgwire tests need the real client; install it with "+
			"`apt-get install postgresql-client`", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, path, append([]string{conn, "-X", "-A", "-t"}, args...)...)
	// Only what psql needs: no PG* variables or ~/.psqlrc from the
	// machine running the tests.
	cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH"), "LC_ALL=C", "PGCONNECT_TIMEOUT=20"}
	return cmd
}

// run runs cmd and returns its stdout, stderr and exit code.
func run(t *testing.T, cmd *exec.Cmd) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr):
		code = exitErr.ExitCode()
	default:
		t.Fatalf("psql: %v", err)
	}
	return out.String(), errOut.String(), code
}

func TestPsqlSelect(t *testing.T) {
	ts := startServer(t, Options{})
	out, errOut, code := run(t, ts.psql(t, ts.connString(), "-c", "select 1"))
	if code != 0 || out != "1\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

func TestPsqlTypes(t *testing.T) {
	ts := startServer(t, Options{})
	out, errOut, code := run(t, ts.psql(t, ts.connString(), "-c", "types"))
	want := "t|-42|9223372036854775807|0.1|héllo, world|2024-02-29 13:04:05.123456|\n||||||\n"
	if code != 0 || out != want {
		t.Fatalf("exit %d, stdout %q, want %q; stderr %q", code, out, want, errOut)
	}
}

// TestPsqlSSLPrefer connects with libpq's default sslmode=prefer: the
// server answers SSLRequest with 'N' and libpq goes on in plaintext.
func TestPsqlSSLPrefer(t *testing.T) {
	ts := startServer(t, Options{})
	conn := strings.Replace(ts.connString(), "sslmode=disable", "sslmode=prefer", 1)
	out, errOut, code := run(t, ts.psql(t, conn, "-c", "select 1"))
	if code != 0 || out != "1\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

func TestPsqlTLS(t *testing.T) {
	ts := startServer(t, Options{TLSConfig: selfSignedTLS(t)})
	conn := strings.Replace(ts.connString(), "sslmode=disable", "sslmode=require", 1)
	out, errOut, code := run(t, ts.psql(t, conn, "-c", "select 1"))
	if code != 0 || out != "1\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

func TestPsqlError(t *testing.T) {
	ts := startServer(t, Options{})
	_, errOut, code := run(t, ts.psql(t, ts.connString(), "-v", "ON_ERROR_STOP=1", "-v", "VERBOSITY=verbose", "-c", "boom"))
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	// libpq shows the SQLSTATE (verbose) and uses the position to point
	// at the statement text.
	for _, want := range []string{
		`ERROR:  42601: syntax error at or near "boom"`,
		"LINE 1: boom\n        ^",
		"DETAIL:  boom is not a statement",
		"HINT:  Try SELECT.",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
}

// TestPsqlScript runs a script through psql: statements after an error
// still run without ON_ERROR_STOP, and with it psql stops with exit 3.
func TestPsqlScript(t *testing.T) {
	ts := startServer(t, Options{})
	script := "select 1;\nboom;\n-- ping\nnotice;\nselect 1;\n"

	cmd := ts.psql(t, ts.connString())
	cmd.Stdin = strings.NewReader(script)
	out, errOut, code := run(t, cmd)
	if code != 0 || out != "1\n1\n1\n" || !strings.Contains(errOut, "syntax error") || !strings.Contains(errOut, "NOTICE:  served by node-a") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	cmd = ts.psql(t, ts.connString(), "-v", "ON_ERROR_STOP=1")
	cmd.Stdin = strings.NewReader(script)
	out, errOut, code = run(t, cmd)
	if code != 3 || out != "1\n" {
		t.Errorf("ON_ERROR_STOP: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// TestPsqlCancel presses ^C in psql while a statement runs: psql sends a
// CancelRequest on a new connection and reports the 57014 the statement
// ends with.
func TestPsqlCancel(t *testing.T) {
	ts := startServer(t, Options{})
	cmd := ts.psql(t, ts.connString(), "-c", "slow")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ts.waitStarted(t, "slow")
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitCode() != 1 {
		t.Errorf("psql: %v, want exit 1", err)
	}
	if !strings.Contains(errOut.String(), "ERROR:  canceling statement due to user request") {
		t.Errorf("stderr %q", errOut.String())
	}
}
