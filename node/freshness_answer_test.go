package node

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/basindb/basin/internal/testcluster"
	"github.com/basindb/basin/stream"
)

// TestForgedLagReportNeverServesStaleRows is the attack of a forged lag
// report (issue 14): POST /lag takes a report from anyone when the
// cluster has no secret, so a report saying a lagging standby is current
// used to make basin.acceptable_offset_lag = 0 return its stale rows.
// Freshness is now checked on the answer: the serving node refuses a
// read its replica cannot serve within the bound the request carries,
// and the forwarding node checks the lag the rows come with.
//
// A standby is made to lag by exactly k records by freezing (SIGSTOP)
// its partition's active, as TestHALagBoundRejection does. Then, from
// the node holding no replica of the partition, with the bound at 0,
// over and over: a forged report says the standby's lag is 0, and the
// read right after it must fail with 55000, never return the old
// counts. At least one of the reads must have gone to the standby on the
// forged report's word (its rejection says it answered or refused, not
// that its report was over the bound), or the test proved nothing.
func TestForgedLagReportNeverServesStaleRows(t *testing.T) {
	c, v, placed := startClusterView(t, 3, "30s", 300)
	task, part, active, standby, reader := haPartition(t, c, placed)
	t.Logf("partition %s (%s): active %s (to freeze), standby %s, read from %s", part, task, active.ID, standby.ID, reader.ID)
	c.Eventually(t, 30*time.Second, func() error {
		for _, n := range []*testcluster.Node{active, standby} {
			_, state, lag, err := haTaskLag(t, reader, n.ID, task)
			if err != nil {
				return err
			}
			if state != "RUNNING" || lag != 0 {
				return fmt.Errorf("%s on %s: %s, offset lag %d", task, n.ID, state, lag)
			}
		}
		return nil
	})
	haWaitGroupStable(t, c)
	active.Stop()
	defer active.Cont()
	const k = 50
	v.produce(t, k)
	haWaitAlive(t, c, []*testcluster.Node{reader}, active.ID, false)
	c.Eventually(t, 30*time.Second, func() error {
		if _, _, lag, err := haTaskLag(t, reader, standby.ID, task); err != nil || lag != k {
			return fmt.Errorf("%s on %s: offset lag %d (%v), want %d", task, standby.ID, lag, err, k)
		}
		return nil
	})

	// forge posts to the reader a lag report in the standby's name that
	// says all its tasks are current.
	forge := func() error { return forgeLagReport(t, reader, standby.ID) }

	conn := reader.Conn(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	haExec(t, ctx, conn, "SET basin.acceptable_offset_lag = 0")
	queries := map[string]string{
		"scan":     "SELECT region, n, total, _served_by, _offset_lag FROM by_region WHERE _partition = " + part,
		"raw scan": "SELECT region, n, total FROM by_region WHERE _partition = " + part,
	}
	fooled := 0 // reads that went to the standby on the forged report's word
	for i := 0; i < 40 && fooled < 4; i++ {
		for name, q := range queries {
			if err := forge(); err != nil {
				t.Fatalf("forging a lag report: %v", err)
			}
			rows, err := haRows(ctx, conn, q)
			if err == nil {
				t.Fatalf("%s: a read with basin.acceptable_offset_lag = 0 returned rows while the only live replica is %d records behind: %v", name, k, rows)
			}
			pe := haPgError(err)
			if pe == nil || pe.Code != "55000" {
				t.Fatalf("%s: %v, want SQLSTATE 55000", name, err)
			}
			// The standby's part of the message: its report's lag (the
			// forged report came too late) or what it said when tried.
			if strings.Contains(pe.Message, standby.ID+" (standby) read failed: ") &&
				strings.Contains(pe.Message, fmt.Sprintf("is behind the read's bound: offset lag %d > 0", k)) ||
				strings.Contains(pe.Message, fmt.Sprintf("%s (standby) answered with offset lag %d > 0", standby.ID, k)) {
				fooled++
				t.Logf("%s: %s", name, pe.Message)
			} else if !strings.Contains(pe.Message, fmt.Sprintf("%s (standby) offset lag %d > 0", standby.ID, k)) {
				t.Fatalf("%s: message does not say why the standby was passed over: %s", name, pe.Message)
			}
		}
	}
	if fooled == 0 {
		t.Fatalf("no read went to the standby on the forged report: the attack was not reproduced")
	}

	// Within a bound the standby meets, both reads are served by it, the
	// checked columns of a raw read cut off again.
	haExec(t, ctx, conn, fmt.Sprintf("SET basin.acceptable_offset_lag = %d", k))
	for name, q := range queries {
		rows, err := haRows(ctx, conn, q)
		if err != nil {
			t.Fatalf("%s within the bound: %v", name, err)
		}
		if len(rows) == 0 {
			t.Fatalf("%s within the bound: no rows", name)
		}
		for _, r := range rows {
			if name == "scan" && (len(r) != 5 || r[3] != standby.ID || r[4] != fmt.Sprint(k)) {
				t.Fatalf("%s within the bound: row %v, want served by %s with offset lag %d", name, r, standby.ID, k)
			}
			if name == "raw scan" && len(r) != 3 {
				t.Fatalf("%s within the bound: row %v, want 3 columns", name, r)
			}
		}
	}
	// And one over it again is refused, though the lag report says lag 0.
	haExec(t, ctx, conn, fmt.Sprintf("SET basin.acceptable_offset_lag = %d", k-1))
	if err := forge(); err != nil {
		t.Fatal(err)
	}
	if _, err := haRows(ctx, conn, queries["raw scan"]); haPgError(err) == nil || haPgError(err).Code != "55000" {
		t.Fatalf("raw scan over the bound: %v, want 55000", err)
	}
}

// forgeLagReport posts to reader, as no member would, a lag report in
// node's name that says all its tasks are current, by offset and by
// time (the cluster has no secret, so /lag takes it).
func forgeLagReport(t *testing.T, reader *testcluster.Node, node string) error {
	st, err := haClusterStatus(t, reader)
	if err != nil {
		return err
	}
	var tasks []stream.TaskStatus
	for _, ns := range st.Nodes {
		if ns.Node == node {
			tasks = ns.Tasks
		}
	}
	if len(tasks) == 0 {
		return fmt.Errorf("%s lists no tasks of %s", reader.ID, node)
	}
	for i := range tasks {
		tasks[i].OffsetLag, tasks[i].TimeLagMs = 0, 0
	}
	body, _ := json.Marshal(map[string]any{"node": node, "tasks": tasks})
	resp, err := http.Post("http://"+reader.HTTPAddr+"/lag", "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("POST /lag: %s", resp.Status)
	}
	return nil
}
