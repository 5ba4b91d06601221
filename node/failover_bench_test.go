//go:build failover

package node

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/basindb/basin/internal/testcluster"
)

// The failover benchmark's schedule and load. The rate is the only knob
// (BASIN_FAILOVER_RATE); the windows are fixed so that runs compare.
const (
	failoverClients  = 8
	failoverRate     = 500 // queries per second over all clients
	failoverRecords  = 2000
	failoverBaseline = 10 * time.Second // steady load before the signal
	failoverAfter    = 10 * time.Second // load kept up after the reassignment
	failoverTail     = 5 * time.Second  // the failover window's end, after the reassignment
	failoverMaxWait  = 2 * time.Minute  // for the reassignment
	// failoverQueryTimeout bounds one query, connecting included: far
	// above any latency the design allows, so a hang shows as an error
	// rather than stalling a client for the rest of the phase.
	failoverQueryTimeout = 15 * time.Second
	// failoverScanEvery makes every n-th query of a client a whole-view
	// read; the others are key lookups.
	failoverScanEvery = 5
	// failoverFirstErrors is how many errors the report quotes per phase.
	failoverFirstErrors = 5
)

// TestFailoverBenchmark measures what clients see when the node holding
// the most active partitions fails: a steady load of pull queries
// (key lookups and whole-view reads, every answer checked) runs against
// the other nodes of a three-node cluster with one standby per
// partition, through a SIGKILL of that node, and then through a SIGSTOP
// of the node holding the most actives after the first has returned.
// It reports, per phase, the queries, the failures and wrong answers,
// the latencies before the signal and in the failover window (from the
// signal until failoverTail after the group has moved the victim's
// tasks), and the time to that reassignment.
//
// It is not part of make test: `make failover` runs it (build tag
// failover). BASIN_FAILOVER_RATE sets the total query rate (default
// 500/s) and BASIN_FAILOVER_OUT=path writes the markdown report there.
// The design promises no client-visible error with one standby, so any
// failed query or wrong answer fails the test, after the report.
func TestFailoverBenchmark(t *testing.T) {
	rate := failoverRate
	if s := os.Getenv("BASIN_FAILOVER_RATE"); s != "" {
		r, err := strconv.Atoi(s)
		if err != nil || r <= 0 {
			t.Fatalf("BASIN_FAILOVER_RATE=%q: want a positive number of queries per second", s)
		}
		rate = r
	}
	c, v, _ := startClusterView(t, 3, DefaultSessionTimeout.String(), failoverRecords)
	t.Logf("%d records produced; %d regions; load %d queries/s from %d clients", failoverRecords, len(v.want), rate, failoverClients)

	var phases []*failoverPhase
	// The report is written at cleanup, before the cluster's (cleanups
	// run last-registered first), so that a phase cut short by t.Fatal
	// still reports what it measured.
	t.Cleanup(func() {
		report := failoverReport(rate, phases)
		t.Log("\n" + report)
		if out := os.Getenv("BASIN_FAILOVER_OUT"); out != "" {
			if err := os.WriteFile(out, []byte(report), 0o644); err != nil {
				t.Errorf("writing BASIN_FAILOVER_OUT: %v", err)
			}
		}
		for _, p := range phases {
			if failed, wrong := p.failures(); failed > 0 || wrong > 0 {
				t.Errorf("%s: %d of %d queries failed and %d returned wrong answers; first: %s",
					p.signal, failed, len(p.results), wrong, strings.Join(p.firstErrors(), "; "))
			}
			if p.reassigned < 0 {
				t.Errorf("%s: %s's tasks did not move within %v", p.signal, p.victim, failoverMaxWait)
			}
		}
	})

	kill := runFailoverPhase(t, c, v, rate, "SIGKILL", &phases)
	victim := failoverNode(c, kill.victim)
	victim.Restart(t)
	waitPlaced(t, c, victim, 1)
	v.checkReplicas(t, 2)

	runFailoverPhase(t, c, v, rate, "SIGSTOP", &phases)
}

// failoverResult is one query of the load.
type failoverResult struct {
	start   time.Time
	latency time.Duration
	scan    bool   // a whole-view read, else a key lookup
	node    string // the node the client was connected to
	err     error  // the query failed
	wrong   string // the query answered, but not what was produced
}

// failoverPhase is one signal's run of the load and what it measured.
type failoverPhase struct {
	signal  string
	victim  string
	actives int // of the victim, of the view's partitions
	readers []string
	// loadStart, signalled and loadEnd bound the phase; reassigned is
	// from the signal until SHOW TASKS showed no task on the victim, -1
	// if it never did.
	loadStart, signalled, loadEnd time.Time
	reassigned                    time.Duration
	results                       []failoverResult
}

// runFailoverPhase runs the load against every node but the one holding
// the most actives, sends it signal after failoverBaseline, waits for the
// reassignment, keeps the load up failoverAfter more and stops it. A
// SIGSTOPped victim is continued once the load has stopped. The phase is
// appended to phases once it has chosen its victim, so that the report
// has what it measured even if it is cut short.
func runFailoverPhase(t *testing.T, c *testcluster.Cluster, v *clusterView, rate int, signal string, phases *[]*failoverPhase) *failoverPhase {
	t.Helper()
	placed := waitPlaced(t, c, c.Node(0), 1)
	victim, actives := mostActives(c, placed)
	var readers []*testcluster.Node
	p := &failoverPhase{signal: signal, victim: victim.ID, actives: actives, reassigned: -1}
	for _, n := range c.Nodes() {
		if n != victim {
			readers = append(readers, n)
			p.readers = append(p.readers, n.ID)
		}
	}
	*phases = append(*phases, p)
	t.Logf("%s: placement %v; victim %s (%d of %d actives); load on %v", signal, placed, victim.ID, p.actives, len(placed), p.readers)

	// The clients connect before the load starts, so that the baseline
	// measures queries only.
	clients := make([]*failoverClient, failoverClients)
	for i := range clients {
		cl := &failoverClient{node: readers[i%len(readers)], v: v, offset: i}
		ctx, cancel := context.WithTimeout(context.Background(), testcluster.QueryTimeout)
		conn, err := cl.node.Connect(ctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		cl.conn = conn
		clients[i] = cl
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	interval := time.Duration(float64(time.Second) * failoverClients / float64(rate))
	p.loadStart = time.Now()
	for i, cl := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Spread the clients' ticks over the interval.
			cl.run(stop, interval, time.Duration(i)*interval/failoverClients)
		}()
	}
	stopLoad := func() {
		close(stop)
		wg.Wait()
		p.loadEnd = time.Now()
		for _, cl := range clients {
			p.results = append(p.results, cl.results...)
			cl.close()
		}
		sort.Slice(p.results, func(i, j int) bool { return p.results[i].start.Before(p.results[j].start) })
	}
	// The load must stop, and a stopped victim go on, even when the
	// phase is cut short; Cont of a killed process would be an error.
	stopped := false
	defer func() {
		if !stopped {
			stopLoad()
		}
		if signal == "SIGSTOP" && victim.Stopped() {
			victim.Cont()
		}
	}()

	failoverWait(failoverBaseline)
	p.signalled = time.Now()
	switch signal {
	case "SIGKILL":
		victim.Kill()
	case "SIGSTOP":
		victim.Stop()
	default:
		t.Fatalf("unknown signal %q", signal)
	}
	t.Logf("%s %s at %s", signal, victim.ID, p.signalled.Format("15:04:05.000"))
	if moved, ok := waitTasksMoved(readers[0], victim.ID, p.signalled.Add(failoverMaxWait)); ok {
		p.reassigned = moved.Sub(p.signalled)
		t.Logf("%s's tasks moved %v after the %s", victim.ID, p.reassigned.Round(time.Millisecond), signal)
		failoverWait(time.Until(moved.Add(failoverAfter)))
	}
	stopLoad()
	stopped = true
	return p
}

// failoverWait waits d: the benchmark's schedule, not a wait for a
// condition.
func failoverWait(d time.Duration) {
	if d <= 0 {
		return
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	<-timer.C
}

// waitTasksMoved polls SHOW TASKS on n until it lists no task on victim
// or deadline passes, and returns when the first poll that saw none
// started. A poll is started every 100ms without waiting for the
// previous ones: while the victim is frozen, SHOW TASKS waits up to
// peerTimeout for it, and sequential polls would measure that instead.
func waitTasksMoved(n *testcluster.Node, victim string, deadline time.Time) (time.Time, bool) {
	type poll struct {
		start time.Time
		moved bool
	}
	polls := make(chan poll, 64)
	var wg sync.WaitGroup
	defer wg.Wait()
	ticker := time.NewTicker(100 * time.Millisecond)
	defer ticker.Stop()
	var first time.Time
	for {
		select {
		case <-ticker.C:
			if !first.IsZero() || time.Now().After(deadline) {
				break
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				start := time.Now()
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				rows, err := n.QueryCtx(ctx, "SHOW TASKS")
				moved := err == nil
				for _, r := range rows {
					if r[3] == victim {
						moved = false
					}
				}
				polls <- poll{start, moved}
			}()
		case p := <-polls:
			if p.moved && (first.IsZero() || p.start.Before(first)) {
				first = p.start
			}
		}
		if !first.IsZero() || time.Now().After(deadline) {
			break
		}
	}
	// Polls still running may have started earlier and seen the same.
	go func() {
		wg.Wait()
		close(polls)
	}()
	for p := range polls {
		if p.moved && (first.IsZero() || p.start.Before(first)) {
			first = p.start
		}
	}
	return first, !first.IsZero()
}

// failoverClient is one client of the load: one connection, one query
// at a time, at its share of the rate.
type failoverClient struct {
	node    *testcluster.Node
	v       *clusterView
	offset  int // spreads the clients over the regions
	conn    *pgx.Conn
	results []failoverResult
}

// run queries at every tick of interval until stop is closed. A query
// that outlasts the interval delays the next (the ticker drops ticks),
// as a client waiting for an answer would; its latency shows it.
func (cl *failoverClient) run(stop <-chan struct{}, interval, delay time.Duration) {
	failoverWait(delay)
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	regions := make([]string, 0, len(cl.v.want))
	for r := range cl.v.want {
		regions = append(regions, r)
	}
	sort.Strings(regions)
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		case <-ticker.C:
		}
		if i%failoverScanEvery == failoverScanEvery-1 {
			cl.scan()
		} else {
			cl.lookup(regions[(i+cl.offset)%len(regions)])
		}
	}
}

// query runs sql on the client's connection, connecting first if the
// last query lost it, and records the result; check judges the rows.
func (cl *failoverClient) query(scan bool, check func([][]string) string, sql string, args ...any) {
	r := failoverResult{start: time.Now(), scan: scan, node: cl.node.ID}
	ctx, cancel := context.WithTimeout(context.Background(), failoverQueryTimeout)
	defer cancel()
	rows, err := cl.rows(ctx, sql, args...)
	r.latency = time.Since(r.start)
	if err != nil {
		r.err = err
		// The connection may be broken or mid-protocol: start afresh.
		cl.close()
	} else {
		r.wrong = check(rows)
	}
	cl.results = append(cl.results, r)
}

func (cl *failoverClient) rows(ctx context.Context, sql string, args ...any) ([][]string, error) {
	if cl.conn == nil {
		conn, err := cl.node.Connect(ctx)
		if err != nil {
			return nil, err
		}
		cl.conn = conn
	}
	rows, err := cl.conn.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return testcluster.Text(rows)
}

func (cl *failoverClient) close() {
	if cl.conn == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = cl.conn.Close(ctx)
	cl.conn = nil
}

// lookup reads one region by key.
func (cl *failoverClient) lookup(region string) {
	w := cl.v.want[region]
	want := fmt.Sprintf("%d|%d", w[0], w[1])
	cl.query(false, func(rows [][]string) string {
		if len(rows) != 1 || strings.Join(rows[0], "|") != want {
			return fmt.Sprintf("%s: %v, want [%s]", region, rows, want)
		}
		return ""
	}, "SELECT n, total FROM by_region WHERE region = $1", region)
}

// scan reads the whole view.
func (cl *failoverClient) scan() {
	var want []string
	for region, w := range cl.v.want {
		want = append(want, fmt.Sprintf("%s|%d|%d", region, w[0], w[1]))
	}
	sort.Strings(want)
	cl.query(true, func(rows [][]string) string {
		got := make([]string, 0, len(rows))
		for _, r := range rows {
			got = append(got, strings.Join(r, "|"))
		}
		sort.Strings(got)
		if !slices.Equal(got, want) {
			return fmt.Sprintf("SELECT *: %v, want %v", got, want)
		}
		return ""
	}, "SELECT * FROM by_region")
}

// failoverNode is the node of c with that id.
func failoverNode(c *testcluster.Cluster, id string) *testcluster.Node {
	for _, n := range c.Nodes() {
		if n.ID == id {
			return n
		}
	}
	return nil
}

// failures counts the failed queries and the wrong answers.
func (p *failoverPhase) failures() (failed, wrong int) {
	for _, r := range p.results {
		switch {
		case r.err != nil:
			failed++
		case r.wrong != "":
			wrong++
		}
	}
	return failed, wrong
}

// firstErrors quotes the first failures, timed from the signal.
func (p *failoverPhase) firstErrors() []string {
	var out []string
	for _, r := range p.results {
		if r.err == nil && r.wrong == "" {
			continue
		}
		what := "wrong answer: " + r.wrong
		if r.err != nil {
			what = "error: " + r.err.Error()
		}
		kind := "key lookup"
		if r.scan {
			kind = "SELECT *"
		}
		out = append(out, fmt.Sprintf("%+.3fs after the %s, %s on %s, after %v: %s",
			r.start.Sub(p.signalled).Seconds(), p.signal, kind, r.node, r.latency.Round(time.Millisecond), what))
		if len(out) == failoverFirstErrors {
			break
		}
	}
	return out
}

// failoverWindow is the statistics of the queries of a window.
type failoverWindow struct {
	name               string
	span               time.Duration
	queries            int
	failed, wrong      int
	slow               int // queries over failoverSlow
	p50, p99, max      time.Duration
	lookupP99, scanP99 time.Duration
}

// failoverSlow is the latency over which the report counts a query slow.
const failoverSlow = 100 * time.Millisecond

// window gathers the queries in for which in(r) holds.
func (p *failoverPhase) window(name string, span time.Duration, in func(r failoverResult) bool) failoverWindow {
	w := failoverWindow{name: name, span: span}
	var all, lookups, scans []time.Duration
	for _, r := range p.results {
		if !in(r) {
			continue
		}
		w.queries++
		switch {
		case r.err != nil:
			w.failed++
		case r.wrong != "":
			w.wrong++
		}
		if r.latency > failoverSlow {
			w.slow++
		}
		all = append(all, r.latency)
		if r.scan {
			scans = append(scans, r.latency)
		} else {
			lookups = append(lookups, r.latency)
		}
	}
	w.p50, w.p99, w.max = failoverQuantile(all, 0.50), failoverQuantile(all, 0.99), failoverQuantile(all, 1)
	w.lookupP99, w.scanP99 = failoverQuantile(lookups, 0.99), failoverQuantile(scans, 0.99)
	return w
}

// failoverQuantile is the nearest-rank q-quantile of ds (which it
// sorts), 0 for none.
func failoverQuantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	i := int(float64(len(ds))*q+0.999999) - 1
	return ds[min(max(i, 0), len(ds)-1)]
}

// windows are the phase's baseline (queries answered before the
// signal), failover window (the others started before failoverTail
// after the reassignment, so including those in flight at the signal),
// the rest, and all.
func (p *failoverPhase) windows() []failoverWindow {
	if p.loadEnd.IsZero() {
		return nil
	}
	end := p.loadEnd
	if p.reassigned >= 0 {
		end = p.signalled.Add(p.reassigned + failoverTail)
	}
	baseline := func(r failoverResult) bool { return r.start.Add(r.latency).Before(p.signalled) }
	after := func(r failoverResult) bool { return !r.start.Before(end) }
	return []failoverWindow{
		p.window("baseline", p.signalled.Sub(p.loadStart), baseline),
		p.window("failover", end.Sub(p.signalled), func(r failoverResult) bool { return !baseline(r) && !after(r) }),
		p.window("after", p.loadEnd.Sub(end), after),
		p.window("whole phase", p.loadEnd.Sub(p.loadStart), func(failoverResult) bool { return true }),
	}
}

// failoverReport is the benchmark's markdown report.
func failoverReport(rate int, phases []*failoverPhase) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Failover benchmark, %s, %s on %s/%s, %d CPUs.\n", time.Now().Format(time.DateOnly),
		runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU())
	fmt.Fprintf(&b, "3 nodes, 1 standby per partition, session timeout %v, view by_region (4 partitions, %d records); "+
		"load: %d clients, %d queries/s in total, 1 in %d a whole-view read (SELECT *), the rest key lookups; "+
		"every answer checked.\n\n", DefaultSessionTimeout, failoverRecords, failoverClients, rate, failoverScanEvery)
	b.WriteString("| phase | victim | time to reassignment | window | span | queries | failed | wrong | over " + failoverSlow.String() +
		" | p50 | p99 | max | p99 lookup | p99 SELECT * |\n")
	b.WriteString("|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }
	for _, p := range phases {
		reassigned := fmt.Sprintf("not within %v", failoverMaxWait)
		if p.reassigned >= 0 {
			reassigned = fmt.Sprintf("%.2f s", p.reassigned.Seconds())
		}
		for i, w := range p.windows() {
			phase, victim, re := "", "", ""
			if i == 0 {
				phase, victim, re = p.signal, fmt.Sprintf("%s (%d actives)", p.victim, p.actives), reassigned
			}
			name := w.name
			if w.name == "whole phase" {
				name = "**whole phase**"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %.1f s | %d | %d | %d | %d | %s | %s | %s | %s | %s |\n", phase, victim, re,
				name, w.span.Seconds(), w.queries, w.failed, w.wrong, w.slow, ms(w.p50), ms(w.p99), ms(w.max), ms(w.lookupP99), ms(w.scanP99))
		}
	}
	b.WriteString("\nbaseline: the queries answered before the signal; failover: the others started before " +
		failoverTail.String() + " after SHOW TASKS first showed no task on the victim (so including those in flight at " +
		"the signal); after: the rest of the phase (the load runs " + failoverAfter.String() + " past the reassignment). " +
		"Time to reassignment: from the signal until the start of the first SHOW TASKS (polled every 100ms) that listed " +
		"no task on the victim. Latency: from sending the query to its last row, reconnecting included after a failed " +
		"query; a client waits for its answer, so a stalled query delays that client's next ones (fewer queries in " +
		"the window).\n")
	for _, p := range phases {
		failed, wrong := p.failures()
		if failed+wrong == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n%s: first failures of %d:\n\n", p.signal, failed+wrong)
		for _, e := range p.firstErrors() {
			fmt.Fprintf(&b, "- `%s`\n", strings.ReplaceAll(e, "`", "'"))
		}
	}
	return b.String()
}
