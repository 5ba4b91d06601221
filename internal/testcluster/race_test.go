package testcluster

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestBinaryBuiltLikeTheTests checks that Binary builds basin with the
// race detector exactly when the test binary has it (go test -race), and
// that the processes it starts then halt on the first race.
func TestBinaryBuiltLikeTheTests(t *testing.T) {
	// A binary named by BASIN_TEST_BINARY was built by whoever named it
	// (make bench); one Binary builds must match the test binary.
	if os.Getenv("BASIN_TEST_BINARY") == "" {
		out, err := exec.Command("go", "version", "-m", Binary(t)).CombinedOutput()
		if err != nil {
			t.Fatalf("go version -m: %v\n%s", err, out)
		}
		if built := strings.Contains(string(out), "-race=true"); built != Race() {
			t.Errorf("test binary race-built %v, basin race-built %v:\n%s", Race(), built, out)
		}
	}
	env := strings.Join(Env(), " ")
	if halts := strings.Contains(env, "halt_on_error=1"); halts != Race() {
		t.Errorf("race-built %v, Env %q", Race(), env)
	}
	if want := time.Second; Race() {
		if got := Timeout(want); got <= want {
			t.Errorf("Timeout(%v) = %v under the race detector", want, got)
		}
	} else if got := Timeout(want); got != want {
		t.Errorf("Timeout(%v) = %v without the race detector", want, got)
	}
}
