package node

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/basindb/basin/internal/poll"
	"github.com/basindb/basin/kafka"
)

// TestWindowedViewRecompute writes random records to a stream, out of
// order within the grace periods, and keeps windowed views of it:
// a tumbling window grouped by the stream's key, a hopping window
// grouped by another column (re-keyed, into another number of
// partitions), session windows, which records merge and split out of
// order, a tumbling window with EMIT FINAL, and date buckets (GROUP BY
// date_bin and date_trunc of the same records' times as TIMESTAMPs, some
// NULL, in a second stream), one keyed by its bucket alone. The node is closed
// and started again twice, the second time without its state/, so the
// view tasks restore their stores (and stream times) from their
// changelogs. After every round each view equals the same grouping
// computed from scratch over all the stream's records, by a query of
// the stream: every window, its count, sum, least and greatest; the
// final view holds exactly the windows its partition's stream time has
// closed.
func TestWindowedViewRecompute(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	start, _, dir := restartableIn(t)
	n := start()
	c := sqlConn{t, ctx, connect(t, n.PGAddr())}
	c.exec("CREATE STREAM ev (k VARCHAR KEY, g VARCHAR, v BIGINT, ts BIGINT) WITH (partitions = 3, timestamp = 'ts')")
	c.exec(`CREATE TABLE tum AS SELECT k, count(*) AS n, sum(v) AS s, min(v) AS lo, max(v) AS hi, collect_list(g) AS gs, topkdistinct(v, 2) AS top2
		FROM ev WINDOW TUMBLING (SIZE 1 MINUTE, GRACE PERIOD 10 MINUTES) GROUP BY k`)
	c.exec(`CREATE TABLE hop WITH (partitions = 2) AS SELECT g, windowstart, windowend, count(*) AS n, sum(v) AS s
		FROM ev WINDOW HOPPING (SIZE 2 MINUTES, ADVANCE BY 30 SECONDS, GRACE PERIOD 10 MINUTES) WHERE v <> 13 GROUP BY g`)
	c.exec(`CREATE TABLE ses AS SELECT k, count(*) AS n, sum(v) AS s, max(v) AS hi, stddev_samp(v) AS sd, bool_or(v < 0) AS neg,
		       topk(v, 3) AS top3, histogram(g) AS hist, corr(v, ts) AS r
		FROM ev WINDOW SESSION (5 SECONDS, GRACE PERIOD 10 MINUTES) GROUP BY k`)
	c.exec(`CREATE TABLE hopf AS SELECT g, window_start, count(*) AS n, max(v) AS hi
		FROM HOP(ev, ts, INTERVAL '20 seconds', INTERVAL '1 minute') GROUP BY g, window_start`)
	c.exec(`CREATE TABLE fin AS SELECT k, count(*) AS n, sum(v) AS s
		FROM ev WINDOW TUMBLING (SIZE 1 MINUTE, GRACE PERIOD 2 MINUTES) GROUP BY k EMIT FINAL`)
	c.exec("CREATE STREAM evt (k VARCHAR KEY, v BIGINT, at TIMESTAMP) WITH (partitions = 3, timestamp = 'at')")
	c.exec(`CREATE TABLE bins AS SELECT date_bin(INTERVAL '45 seconds', at, TIMESTAMP '2023-11-14 22:13:05') AS b, count(*) AS n, sum(v) AS s
		FROM evt GROUP BY 1`)
	c.exec(`CREATE TABLE mins AS SELECT k, date_trunc('minute', at) AS m, count(*) AS n, max(v) AS hi
		FROM evt GROUP BY k, m`)
	if plan := strings.Join(c.rows(`EXPLAIN CREATE TABLE x AS SELECT date_bin(INTERVAL '45 seconds', at, TIMESTAMP '2023-11-14 22:13:05') AS b, count(*)
		FROM evt GROUP BY 1`), "\n"); !strings.Contains(plan, "Window tumbling size 45s offset 20s") {
		t.Fatalf("bins is not a tumbling window from 22:13:05:\n%s", plan)
	}
	// tum, ses and fin: 3 view tasks each; hop: 2, and 3 re-keying
	// tasks; hopf: 3, and 3 re-keying tasks; bins: 3, and 3 re-keying
	// tasks; mins: 3.
	const tasks = 29

	queries := map[string][2]string{
		"tum": {
			"SELECT k, windowstart, windowend, n, s, lo, hi, cardinality(gs), top2 FROM tum",
			"SELECT k, (ts / 60000) * 60000 AS ws, (ts / 60000) * 60000 + 60000, count(*), sum(v)::bigint, min(v), max(v), count(*), topkdistinct(v, 2) FROM ev GROUP BY k, ws",
		},
		"hop": {
			"SELECT g, windowstart, windowend, n, s FROM hop",
			`SELECT g, ws, ws + 120000, count(*), sum(v)::bigint
			   FROM (SELECT g, v, (ts / 30000) * 30000 - j * 30000 AS ws FROM ev CROSS JOIN generate_series(0, 3) AS j WHERE v <> 13) x
			  GROUP BY g, ws`,
		},
		// HOP, the table function: the same windows, nothing late.
		"hopf": {
			"SELECT g, window_start, n, hi FROM hopf",
			`SELECT g, ws, count(*), max(v)
			   FROM (SELECT g, v, (ts / 20000) * 20000 - j * 20000 AS ws FROM ev CROSS JOIN generate_series(0, 2) AS j) x
			  GROUP BY g, ws`,
		},
		// Date buckets: the plain grouping's rows, a NULL time's too.
		"bins": {
			"SELECT b, n, s FROM bins",
			"SELECT date_bin(INTERVAL '45 seconds', at, TIMESTAMP '2023-11-14 22:13:05'), count(*), sum(v)::bigint FROM evt GROUP BY 1",
		},
		"mins": {
			"SELECT k, m, n, hi FROM mins",
			"SELECT k, date_trunc('minute', at), count(*), max(v) FROM evt GROUP BY 1, 2",
		},
		// A session starts at each record more than the gap after the
		// one before it.
		"ses": {
			"SELECT k, windowstart, windowend, n, s, hi, round(sd::numeric, 6), neg, top3, hist, round(r::numeric, 6) FROM ses",
			`SELECT k, min(ts), max(ts), count(*), sum(v)::bigint, max(v), round(stddev_samp(v)::numeric, 6), bool_or(v < 0),
			        topk(v, 3), histogram(g), round(corr(v, ts)::numeric, 6)
			   FROM (SELECT k, ts, v, g, sum(first) OVER (PARTITION BY k ORDER BY ts) AS session
			           FROM (SELECT k, ts, v, g, CASE WHEN ts - lag(ts) OVER (PARTITION BY k ORDER BY ts) <= 5000 THEN 0 ELSE 1 END AS first FROM ev) x) y
			  GROUP BY k, session`,
		},
	}
	// The final view's windows are the tumbling ones its partition's
	// stream time, the greatest time of the partition's records, has
	// closed: end plus the 2-minute grace at most that time.
	finQuery := `SELECT k, ws, count(*), sum(v)::bigint FROM (SELECT k, v, (ts / 60000) * 60000 AS ws FROM ev) x GROUP BY k, ws`
	const (
		base = int64(1_700_000_000_000)
		keys = 12
	)
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 7))
	t.Logf("seed %d", seed)
	streamTime := map[int32]int64{} // per partition of ev
	next := base
	holds := func(when string) {
		t.Helper()
		for view, q := range queries {
			var got, want []string
			if !poll.Cond(30*time.Second, func() bool {
				got, want = c.rows(q[0]), c.rows(q[1])
				return slices.Equal(got, want)
			}) {
				t.Fatalf("%s: %s has %d windows, the grouping from scratch %d: %s", when, view, len(got), len(want), firstDiff(got, want))
			}
		}
		var got, want []string
		if !poll.Cond(30*time.Second, func() bool {
			want = want[:0]
			for _, r := range c.rows(finQuery) {
				f := strings.Fields(r)
				var ws int64
				fmt.Sscan(f[1], &ws)
				if ws+60_000+120_000 <= streamTime[kafka.Partition([]byte(f[0]), 3)] {
					want = append(want, r)
				}
			}
			got = c.rows("SELECT k, windowstart, n, s FROM fin")
			return slices.Equal(got, want)
		}) {
			t.Fatalf("%s: fin has %d windows, the closed windows from scratch %d: %s", when, len(got), len(want), firstDiff(got, want))
		}
	}
	for round := range 6 {
		var vals, tvals []string
		for range 150 {
			// Time moves on about a second a record, and a record is up
			// to 80 seconds behind: within every grace period, so no
			// record is late, and windows see records out of order.
			next += int64(rng.IntN(2000))
			ts := next - int64(rng.IntN(80_000))
			k := fmt.Sprintf("k%d", rng.IntN(keys))
			g := fmt.Sprintf("g%d", rng.IntN(4))
			v := int64(rng.IntN(40)) - 10
			p := kafka.Partition([]byte(k), 3)
			streamTime[p] = max(streamTime[p], ts)
			vals = append(vals, fmt.Sprintf("('%s', '%s', %d, %d)", k, g, v, ts))
			at := time.UnixMilli(ts).UTC().Format("'2006-01-02 15:04:05.000'")
			if rng.IntN(50) == 0 {
				at = "NULL"
			}
			tvals = append(tvals, fmt.Sprintf("('%s', %d, %s)", k, v, at))
		}
		c.exec("INSERT INTO ev VALUES " + strings.Join(vals, ", "))
		c.exec("INSERT INTO evt VALUES " + strings.Join(tvals, ", "))
		if round == 2 || round == 4 {
			// Closed with the round's records perhaps not applied, the
			// node restores the views' stores and reads on: after round
			// 2 from their checkpoints, after round 4 from the
			// changelogs alone.
			if err := n.Close(); err != nil {
				t.Fatal(err)
			}
			if round == 4 {
				if err := os.Rename(filepath.Join(dir, "state"), filepath.Join(dir, "state.old")); err != nil {
					t.Fatal(err)
				}
			}
			n = start()
			c.conn = connect(t, n.PGAddr())
			waitTasks(t, n, tasks)
		}
		holds(fmt.Sprintf("round %d", round))
	}
	if got := c.rows("SELECT count(*) FROM basin_processing_log"); !slices.Equal(got, []string{"0"}) {
		t.Fatalf("records were skipped: %v", c.rows("SELECT query_id, error FROM basin_processing_log"))
	}
}
