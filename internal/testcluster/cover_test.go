package testcluster

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestEnvCoverDir checks that under make cover (BASIN_TEST_COVERDIR set)
// every process started from Binary gets GOCOVERDIR as an absolute path,
// and that without it Env adds none.
func TestEnvCoverDir(t *testing.T) {
	t.Setenv("BASIN_TEST_COVERDIR", "")
	if env := Env(); slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "GOCOVERDIR=") }) {
		t.Errorf("Env() = %q without BASIN_TEST_COVERDIR", env)
	}
	t.Setenv("BASIN_TEST_COVERDIR", "procs")
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if want := "GOCOVERDIR=" + filepath.Join(wd, "procs"); !slices.Contains(Env(), want) {
		t.Errorf("Env() = %q, want it to hold %q", Env(), want)
	}
}
