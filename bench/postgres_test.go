//go:build bench

package bench

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/basindb/basin/internal/pgserver"
)

// postgres is a PostgreSQL server the benchmark started
// (internal/pgserver).
type postgres struct{ *pgserver.Server }

// startPostgres starts a PostgreSQL server for the test; settings are
// extra -c name=value server settings.
func startPostgres(t testing.TB, settings ...string) *postgres {
	t.Helper()
	return &postgres{pgserver.Start(t, settings...)}
}

// PeakRSS is the server's peak resident set (the postmaster's and its
// backends' high-water marks summed), in bytes.
func (pg *postgres) PeakRSS() int64 {
	var total int64
	for _, pid := range descendants(pg.PID) {
		total += peakRSS(pid)
	}
	return total
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
