//go:build bench

package bench

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// result is one line of the report: a measure of basin and of the
// reference in the same run, and their ratio.
type result struct {
	// Bench is B1, B2, ...; What says what was measured.
	Bench, What string
	// Basin and Ref are the two measures, in Unit; HigherBetter says
	// whether more is better (a rate) or worse (a time).
	Basin, Ref   float64
	Unit         string
	RefName      string
	HigherBetter bool
	// Target is the ratio basin must reach ("≥ 1.0×"), Met whether it
	// did; Note says anything else (peak RSS, p99s). An empty Target is
	// a reference given for comparison only.
	Target string
	Met    bool
	Note   string
}

// Ratio is basin's measure over the reference's, oriented so that more
// than 1 is better for basin.
func (r result) Ratio() float64 {
	if r.Basin == 0 || r.Ref == 0 {
		return 0
	}
	if r.HigherBetter {
		return r.Basin / r.Ref
	}
	return r.Ref / r.Basin
}

// report collects the results of a run and prints them as markdown.
type report struct {
	mu      sync.Mutex
	results []result
	notes   []string
}

var theReport = &report{}

func (rp *report) add(t testing.TB, r result) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	rp.results = append(rp.results, r)
	t.Logf("%s %s: basin %.4g %s, %s %.4g %s, ratio %.2f× (target %s, met %v) %s",
		r.Bench, r.What, r.Basin, r.Unit, r.RefName, r.Ref, r.Unit, r.Ratio(), r.Target, r.Met, r.Note)
}

func (rp *report) note(format string, args ...any) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	rp.notes = append(rp.notes, fmt.Sprintf(format, args...))
}

// markdown renders the report.
func (rp *report) markdown() string {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "make bench, %s, %s on %s/%s, %d CPUs.\n\n", time.Now().UTC().Format("2006-01-02"), runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU())
	b.WriteString("| bench | measure | basin | reference | ratio (>1: basin better) | target | met | notes |\n")
	b.WriteString("|---|---|---:|---:|---:|---|---|---|\n")
	for _, r := range rp.results {
		met, target := "yes", r.Target
		switch {
		case target == "":
			met, target = "—", "—"
		case !r.Met:
			met = "**no**"
		}
		ref, ratio := fmt.Sprintf("%.4g %s (%s)", r.Ref, r.Unit, r.RefName), fmt.Sprintf("%.2f×", r.Ratio())
		if r.Ref == 0 {
			ref, ratio = "—", "—" // a measure with nothing to compare it to
		}
		fmt.Fprintf(&b, "| %s | %s | %.4g %s | %s | %s | %s | %s | %s |\n",
			r.Bench, r.What, r.Basin, r.Unit, ref, ratio, target, met, r.Note)
	}
	for _, n := range rp.notes {
		b.WriteString("\n" + n + "\n")
	}
	if path := os.Getenv("BASIN_BENCH_FAILOVER"); path != "" {
		if md, err := os.ReadFile(path); err == nil {
			b.WriteString("\nB5, failover (make failover, run just before):\n\n" + string(md))
		}
	}
	return b.String()
}

// TestMain prints the report after every benchmark ran, and writes it to
// $BASIN_BENCH_OUT when set.
func TestMain(m *testing.M) {
	code := m.Run()
	md := theReport.markdown()
	fmt.Println("\n" + md)
	if path := os.Getenv("BASIN_BENCH_OUT"); path != "" {
		if err := os.WriteFile(path, []byte(md), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}
