package node

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/basindb/basin/internal/testcluster"
	"github.com/basindb/basin/stream"
)

// TestForwardedTimeLagBound is basin.acceptable_time_lag on a cluster of
// real processes: a read forwarded to a replica whose time lag is over
// the bound is refused, by the serving node itself when the forwarding
// node's lag report says the replica is current, and never returns the
// replica's stale rows; with the bound lifted the same read returns them.
//
// The standby of a partition is made to lag by freezing (SIGSTOP) its
// active, as TestHALagBoundRejection does: it then stays k records
// behind, and its time lag (the age of what it last applied) grows. From
// the node holding no replica of the partition, with the bound 2 s:
//   - with the standby's own lag report the read fails with 55000 naming
//     the active (down) and the standby (its time lag);
//   - with a forged report (offset and time lag 0) before each read the
//     read still fails with 55000: the standby, asked, refuses it (its
//     time lag is over the bound the request carries);
//   - with the bound lifted the standby serves the old counts;
//   - once the active is back, the read within the bound is served,
//     with the new counts, never the old ones.
func TestForwardedTimeLagBound(t *testing.T) {
	c, v, placed := startClusterView(t, 3, "30s", 300)
	task, part, active, standby, reader := haPartition(t, c, placed)
	t.Logf("partition %s (%s): active %s (to freeze), standby %s, read from %s", part, task, active.ID, standby.ID, reader.ID)

	conn := reader.Conn(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	query := "SELECT region, n, total, _served_by, _role, _time_lag_ms FROM by_region WHERE _partition = " + part + " ORDER BY region"
	queries := map[string]string{
		"scan":     query,
		"raw scan": "SELECT region, n, total FROM by_region WHERE _partition = " + part,
	}
	regionsRows, err := haRows(ctx, conn, "SELECT region FROM by_region WHERE _partition = "+part+" ORDER BY region")
	if err != nil {
		t.Fatal(err)
	}
	var regions []string
	for _, r := range regionsRows {
		regions = append(regions, r[0])
	}
	// want is the partition's rows, region|n|total, as produced so far.
	want := func() string {
		var out []string
		for _, region := range regions {
			w := v.want[region]
			out = append(out, fmt.Sprintf("%s|%d|%d", region, w[0], w[1]))
		}
		sort.Strings(out)
		return strings.Join(out, "\n")
	}
	wantOld := want()
	// rowsOf returns rows without the pseudo-columns, sorted, and the
	// pseudo-columns of the last.
	rowsOf := func(rows [][]string) (string, []string) {
		var out []string
		var pseudo []string
		for _, r := range rows {
			out = append(out, strings.Join(r[:3], "|"))
			pseudo = r[3:]
		}
		sort.Strings(out)
		return strings.Join(out, "\n"), pseudo
	}

	c.Eventually(t, 30*time.Second, func() error {
		for _, n := range []*testcluster.Node{active, standby} {
			ts, err := reportedTask(t, reader, n.ID, task)
			if err != nil {
				return err
			}
			if ts.State != "RUNNING" || ts.OffsetLag != 0 {
				return fmt.Errorf("%s on %s: %s, offset lag %d", task, n.ID, ts.State, ts.OffsetLag)
			}
		}
		return nil
	})
	haWaitGroupStable(t, c)
	active.Stop()
	frozen := true
	defer func() {
		if frozen {
			active.Cont()
		}
	}()
	const k = 50
	const bound = 2 * time.Second
	v.produce(t, k)
	wantNew := want()
	haWaitAlive(t, c, []*testcluster.Node{reader}, active.ID, false)
	c.Eventually(t, 30*time.Second, func() error {
		ts, err := reportedTask(t, reader, standby.ID, task)
		if err != nil {
			return err
		}
		if ts.OffsetLag != k || time.Duration(ts.TimeLagMs)*time.Millisecond <= bound {
			return fmt.Errorf("%s on %s: offset lag %d, time lag %d ms; want %d and over %v", task, standby.ID, ts.OffsetLag, ts.TimeLagMs, k, bound)
		}
		return nil
	})

	// forge posts to the reader a lag report in the standby's name that
	// says all its tasks are current, by offset and by time.
	forge := func() error { return forgeLagReport(t, reader, standby.ID) }
	// refused checks that a read under the bound failed with 55000
	// naming both replicas, and returns the message.
	refused := func(name string, rows [][]string, err error) string {
		t.Helper()
		if err == nil {
			t.Fatalf("%s: a read with basin.acceptable_time_lag = '%v' returned rows while the only live replica is %d records behind: %v", name, bound, k, rows)
		}
		pe := haPgError(err)
		if pe == nil || pe.Code != "55000" {
			t.Fatalf("%s: %v, want SQLSTATE 55000", name, err)
		}
		prefix := "no replica of by_region partition " + part + " can serve this read: "
		if !strings.HasPrefix(pe.Message, prefix) || !strings.Contains(pe.Message, active.ID+" (active) down since ") ||
			!strings.Contains(pe.Message, standby.ID+" (standby) ") {
			t.Fatalf("%s: message does not name the view, the partition and both replicas: %s", name, pe.Message)
		}
		return pe.Message
	}

	haExec(t, ctx, conn, fmt.Sprintf("SET basin.acceptable_time_lag = '%v'", bound))
	// By the standby's own report: passed over without being asked.
	for name, q := range queries {
		rows, err := haRows(ctx, conn, q)
		msg := refused(name, rows, err)
		if !strings.Contains(msg, standby.ID+" (standby) time lag ") || !strings.Contains(msg, fmt.Sprintf(" > %v (basin.acceptable_time_lag)", bound)) {
			t.Fatalf("%s: message does not say the standby's time lag is over the bound: %s", name, msg)
		}
	}
	// By a forged report: asked, and it refuses.
	asked := 0 // reads that went to the standby on the forged report's word
	for i := 0; i < 40 && asked < 4; i++ {
		for name, q := range queries {
			if err := forge(); err != nil {
				t.Fatalf("forging a lag report: %v", err)
			}
			rows, err := haRows(ctx, conn, q)
			msg := refused(name, rows, err)
			switch {
			case strings.Contains(msg, standby.ID+" (standby) read failed: ") &&
				strings.Contains(msg, fmt.Sprintf("partition %s of by_region on node %s is behind the read's bound: time lag ", part, standby.ID)) &&
				strings.Contains(msg, fmt.Sprintf(" > %v", bound)):
				asked++
				t.Logf("%s: %s", name, msg)
			case strings.Contains(msg, standby.ID+" (standby) time lag "):
				// The standby's own report came after the forged one.
			default:
				t.Fatalf("%s: message does not say why the standby was passed over: %s", name, msg)
			}
		}
	}
	if asked == 0 {
		t.Fatalf("no read went to the standby on the forged report: the serving node's refusal was not reached")
	}

	// With the bound lifted the standby serves its old counts, with their
	// time lag, whatever the report says.
	for _, setting := range []string{"SET basin.acceptable_time_lag = '1h'", "RESET basin.acceptable_time_lag"} {
		haExec(t, ctx, conn, setting)
		if err := forge(); err != nil {
			t.Fatal(err)
		}
		rows, err := haRows(ctx, conn, query)
		if err != nil {
			t.Fatalf("%s: %v", setting, err)
		}
		got, pseudo := rowsOf(rows)
		if got != wantOld || len(pseudo) != 3 || pseudo[0] != standby.ID || pseudo[1] != "standby" {
			t.Fatalf("%s: served by %v:\n%s\nwant the standby's:\n%s", setting, pseudo, got, wantOld)
		}
		if ms, _ := strconv.ParseInt(pseudo[2], 10, 64); time.Duration(ms)*time.Millisecond <= bound {
			t.Fatalf("%s: _time_lag_ms %s, want over %v", setting, pseudo[2], bound)
		}
		rows, err = haRows(ctx, conn, queries["raw scan"])
		if got, _ := rowsOf(rows); err != nil || got != wantOld {
			t.Fatalf("%s: raw scan:\n%s\n%v; want:\n%s", setting, got, err, wantOld)
		}
	}

	// With the active back, the read within the bound is served, and
	// only with the new counts.
	haExec(t, ctx, conn, fmt.Sprintf("SET basin.acceptable_time_lag = '%v'", bound))
	active.Cont()
	frozen = false
	c.Eventually(t, 30*time.Second, func() error {
		rows, err := haRows(ctx, conn, query)
		if err != nil {
			return err
		}
		// The active, just thawed, may not have fetched the source's
		// new end yet; having been paused for seconds, it reports its
		// lag unknown until it has (stream's pause watch), so its old
		// counts are never served within the bound.
		if got, pseudo := rowsOf(rows); got != wantNew {
			if got == wantOld {
				t.Fatalf("the old counts were served within basin.acceptable_time_lag = '%v' (by %v)", bound, pseudo)
			}
			return fmt.Errorf("served by %v:\n%s\nwant:\n%s", pseudo, got, wantNew)
		}
		return nil
	})
}

// reportedTask is task on node as observer's /clusterStatus reports it
// (node's last lag report, or observer's own tasks).
func reportedTask(t *testing.T, observer *testcluster.Node, node, task string) (stream.TaskStatus, error) {
	t.Helper()
	st, err := haClusterStatus(t, observer)
	if err != nil {
		return stream.TaskStatus{}, err
	}
	for _, ns := range st.Nodes {
		if ns.Node != node {
			continue
		}
		for _, ts := range ns.Tasks {
			if ts.Task == task {
				return ts, nil
			}
		}
	}
	return stream.TaskStatus{}, fmt.Errorf("%s does not report %s on %s", observer.ID, task, node)
}
