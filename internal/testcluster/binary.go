package testcluster

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// modulePath is the module whose cmd/basin Binary builds.
const modulePath = "github.com/basindb/basin"

// binDirPrefix names the temporary directories holding built binaries;
// each holds an "owner" file with the pid of the test binary that built
// it, so a later run can remove the directories of dead ones.
const binDirPrefix = "basin-testcluster-"

var build struct {
	once sync.Once
	dir  string // the temporary directory holding the binary
	path string
	err  error
}

// Binary returns the path of a basin binary built from this module's
// cmd/basin. It is built once per test binary, on first use, into a
// temporary directory; Main removes it when the tests end, and otherwise
// the next run removes it (best effort: directories whose owner process
// is gone). BASIN_TEST_BINARY, when set, names a binary to use instead.
func Binary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("BASIN_TEST_BINARY"); p != "" {
		return p
	}
	build.once.Do(func() {
		build.dir, build.path, build.err = buildBinary()
	})
	if build.err != nil {
		t.Fatal(build.err)
	}
	return build.path
}

// Main runs a package's tests, fails the run if goroutines outlive them
// (goleak; opts name more to ignore), and removes the binary Binary
// built. Call it from TestMain:
//
//	func TestMain(m *testing.M) { testcluster.Main(m) }
func Main(m *testing.M, opts ...goleak.Option) {
	opts = append(opts,
		// The goroutine that forks the nodes lives as long as the test
		// binary, by design (spawn_linux.go).
		goleak.IgnoreTopFunction(modulePath+"/internal/testcluster.spawnLoop"),
		goleak.Cleanup(func(code int) {
			if build.dir != "" {
				_ = os.RemoveAll(build.dir)
			}
			os.Exit(code)
		}))
	goleak.VerifyTestMain(m, opts...)
}

func buildBinary() (dir, path string, err error) {
	root, err := moduleRoot()
	if err != nil {
		return "", "", err
	}
	removeStaleBinaries()
	dir, err = os.MkdirTemp("", binDirPrefix)
	if err != nil {
		return "", "", fmt.Errorf("testcluster: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "owner"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return "", "", fmt.Errorf("testcluster: %w", err)
	}
	path = filepath.Join(dir, "basin")
	// A race-built test binary gets a race-built basin, so the code that
	// runs only in basin processes (the cluster membership, heartbeats,
	// forwarded reads) runs under the detector too.
	goArgs := []string{"build"}
	if raceEnabled {
		goArgs = append(goArgs, "-race")
	}
	// Under make cover (BASIN_TEST_COVERDIR set), the processes count
	// their coverage of every package too, written where Env points them.
	if coverDir() != "" {
		goArgs = append(goArgs, "-cover", "-coverpkg=./...")
	}
	cmd := exec.Command("go", append(goArgs, "-o", path, "./cmd/basin")...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		_ = os.RemoveAll(dir)
		return "", "", fmt.Errorf("testcluster: go %s ./cmd/basin in %s: %v\n%s", strings.Join(goArgs, " "), root, err, out)
	}
	return dir, path, nil
}

// Race reports whether the test binary, and so the basin binary Binary
// builds, runs with the race detector.
func Race() bool { return raceEnabled }

// Env is what the environment of a basin process started from Binary
// needs on top of the test's: under the race detector,
// GORACE=halt_on_error=1 (added to the test's own GORACE options), so
// that a data race in the process ends it with exit status 66, a crash
// the test sees, rather than a report in a log nobody reads; under make
// cover, GOCOVERDIR set to BASIN_TEST_COVERDIR as an absolute path,
// where the cover-built process writes its coverage when it exits (one
// killed with SIGKILL writes none).
func Env() []string {
	var env []string
	if raceEnabled {
		opts := strings.TrimSpace(os.Getenv("GORACE"))
		if opts != "" {
			opts += " "
		}
		env = append(env, "GORACE="+opts+"halt_on_error=1")
	}
	if dir := coverDir(); dir != "" {
		env = append(env, "GOCOVERDIR="+dir)
	}
	return env
}

// coverDir is the absolute path of BASIN_TEST_COVERDIR, or "" when it is
// not set. (Not GOCOVERDIR: go test -cover sets that for the test binary
// to a directory of its own, removed when the test ends.)
func coverDir() string {
	dir := os.Getenv("BASIN_TEST_COVERDIR")
	if dir == "" {
		return ""
	}
	if abs, err := filepath.Abs(dir); err == nil {
		return abs
	}
	return dir
}

// raceSlowdown is how much slower a race-built process is taken to be
// for the waits of tests (Timeout): the detector costs 2-20x in CPU and
// 5-10x in memory, more on a machine shared with other tests.
const raceSlowdown = 4

// Timeout returns d for a wait a test makes on basin processes: d
// itself, or d scaled by raceSlowdown when they are race-built. Only
// how long a wait may take grows; what the test waits for does not
// change.
func Timeout(d time.Duration) time.Duration {
	if raceEnabled {
		return d * raceSlowdown
	}
	return d
}

// moduleRoot walks up from the working directory (a test runs in its
// package's directory) to the go.mod of this module.
func moduleRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("testcluster: %w", err)
	}
	for dir := wd; ; {
		if mod, err := modulePathOf(filepath.Join(dir, "go.mod")); err == nil {
			if mod != modulePath {
				return "", fmt.Errorf("testcluster: %s/go.mod is module %q, not %s: run the tests inside the basin module", dir, mod, modulePath)
			}
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("testcluster: no go.mod above %s: run the tests inside the basin module", wd)
		}
		dir = parent
	}
}

func modulePathOf(gomod string) (string, error) {
	f, err := os.Open(gomod)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module"); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`), nil
		}
	}
	return "", errors.New("no module line")
}

// removeStaleBinaries removes the binary directories of test binaries
// that are gone: those that were killed or did not use Main.
func removeStaleBinaries() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), binDirPrefix+"*"))
	for _, dir := range dirs {
		b, err := os.ReadFile(filepath.Join(dir, "owner"))
		if err != nil {
			continue // being created, or not ours
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			_ = os.RemoveAll(dir)
		}
	}
}
