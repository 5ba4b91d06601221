//go:build bench

package bench

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/basindb/basin/internal/testcluster"
)

// benchRows is how many rows B1 and B3 load into basin and PostgreSQL.
const benchRows = 100_000

// itemName is row id's name column, the same in both systems.
func itemName(id int64) string { return fmt.Sprintf("item-%06d", id) }

// itemAmount is row id's amount column.
func itemAmount(id int64) int64 { return id*7%1000 + 1 }

// loadPostgresItems creates items (id bigint PRIMARY KEY, name, amount)
// in pg with benchRows rows, by COPY, and analyzes it.
func loadPostgresItems(t *testing.T, pg *postgres) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "CREATE TABLE items (id bigint PRIMARY KEY, name varchar, amount bigint)"); err != nil {
		t.Fatal(err)
	}
	n, err := conn.CopyFrom(ctx, pgx.Identifier{"items"}, []string{"id", "name", "amount"},
		pgx.CopyFromFunc(func() func() ([]any, error) {
			var id int64
			return func() ([]any, error) {
				if id == benchRows {
					return nil, nil
				}
				row := []any{id, itemName(id), itemAmount(id)}
				id++
				return row, nil
			}
		}()))
	if err != nil {
		t.Fatalf("COPY into PostgreSQL: %v", err)
	}
	if n != benchRows {
		t.Fatalf("COPY into PostgreSQL: %d rows, want %d", n, benchRows)
	}
	if _, err := conn.Exec(ctx, "ANALYZE items"); err != nil {
		t.Fatal(err)
	}
}

// loadBasinItems creates, on c, a relation items of benchRows rows over 4
// partitions and waits until every node counts them all. Without view,
// items is a table over topic items (BIGINT key in the kafka key format);
// with it, the table is items_src and items is a view mirroring it. The
// records are produced straight to the topic in large batches, which is
// much faster than INSERT.
func loadBasinItems(t *testing.T, c *testcluster.Cluster, view bool) {
	t.Helper()
	n := c.Node(0)
	table := "items"
	if view {
		table = "items_src"
	}
	n.Exec(t, "CREATE TABLE "+table+" (id BIGINT PRIMARY KEY, name VARCHAR, amount BIGINT) WITH (kafka_topic = '"+table+"', value_format = 'json', partitions = 4)")
	if view {
		n.Exec(t, "CREATE TABLE items AS SELECT id, name, amount FROM items_src")
	}
	start := time.Now()
	const batch = 10_000
	for lo := int64(0); lo < benchRows; lo += batch {
		recs := make([]*kgo.Record, 0, batch)
		for id := lo; id < lo+batch && id < benchRows; id++ {
			key := make([]byte, 8)
			binary.BigEndian.PutUint64(key, uint64(id))
			val, err := json.Marshal(map[string]any{"name": itemName(id), "amount": itemAmount(id)})
			if err != nil {
				t.Fatal(err)
			}
			recs = append(recs, &kgo.Record{Key: key, Value: val})
		}
		c.Produce(t, table, recs...)
	}
	produced := time.Since(start)
	for _, node := range c.Nodes() {
		waitCount(t, c, node, "items", benchRows)
	}
	t.Logf("basin: produced %d records in %v; every node counts them all in items after %v", benchRows, produced.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
}

// waitCount waits until SELECT count(*) FROM relation on n returns want.
func waitCount(t *testing.T, c *testcluster.Cluster, n *testcluster.Node, relation string, want int) {
	t.Helper()
	c.Eventually(t, 5*time.Minute, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), testcluster.QueryTimeout)
		defer cancel()
		rows, err := n.QueryCtx(ctx, "SELECT count(*) FROM "+relation)
		if err != nil {
			return err
		}
		if len(rows) != 1 || rows[0][0] != strconv.Itoa(want) {
			return fmt.Errorf("%s: SELECT count(*) FROM %s = %v, want %d", n.ID, relation, rows, want)
		}
		return nil
	})
}

// basinDSN is a connection string for user basin, database basin on addr.
func basinDSN(addr string) string {
	return "postgres://basin@" + addr + "/basin?sslmode=disable"
}

// checkLookups reads a few keys with the extended protocol, as pgbench -M
// prepared does, and checks the answers: a wrong answer would make any
// rate meaningless.
func checkLookups(t *testing.T, system, dsn string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("%s: %v", system, err)
	}
	defer conn.Close(context.Background())
	for _, id := range []int64{0, 1, 4242, 50_000, benchRows - 1} {
		var name string
		var amount int64
		if err := conn.QueryRow(ctx, "SELECT name, amount FROM items WHERE id = $1", id).Scan(&name, &amount); err != nil {
			t.Fatalf("%s: key %d: %v", system, id, err)
		}
		if name != itemName(id) || amount != itemAmount(id) {
			t.Fatalf("%s: key %d: got (%q, %d), want (%q, %d)", system, id, name, amount, itemName(id), itemAmount(id))
		}
	}
}

// rowCacheEntries is the node's basin_row_cache_entries line, or what
// kept it from being read.
func rowCacheEntries(t *testing.T, node *testcluster.Node) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	status, body, err := node.HTTPGet(ctx, "/metrics")
	if err != nil || status != 200 {
		return fmt.Sprintf("no metrics (%d, %v)", status, err)
	}
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "basin_row_cache_entries") {
			return line
		}
	}
	return "no basin_row_cache_entries in the metrics"
}

// warmLookups reads every key once by key, a thousand to a statement
// (WHERE id IN (...), which basin answers by key lookups too), so that
// both systems serve the measured lookups from memory from the first
// round on: PostgreSQL's shared buffers already hold the table after
// the load, basin's row cache fills on first read.
func warmLookups(t *testing.T, system, dsn string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("%s: %v", system, err)
	}
	defer conn.Close(context.Background())
	const per = 1000
	seen := 0
	var q strings.Builder
	for lo := int64(0); lo < benchRows; lo += per {
		q.Reset()
		q.WriteString("SELECT count(*) FROM items WHERE id IN (")
		for id := lo; id < min(lo+per, benchRows); id++ {
			if id > lo {
				q.WriteByte(',')
			}
			q.WriteString(strconv.FormatInt(id, 10))
		}
		q.WriteByte(')')
		var n int
		if err := conn.QueryRow(ctx, q.String(), pgx.QueryExecModeSimpleProtocol).Scan(&n); err != nil {
			t.Fatalf("%s: warming keys from %d: %v", system, lo, err)
		}
		seen += n
	}
	if seen != benchRows {
		t.Fatalf("%s: warming read %d keys, want %d", system, seen, benchRows)
	}
}

// benchSeconds is the length of each pgbench run: $BASIN_BENCH_SECONDS,
// default 20.
func benchSeconds(t *testing.T) int {
	s := os.Getenv("BASIN_BENCH_SECONDS")
	if s == "" {
		return 20
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		t.Fatalf("BASIN_BENCH_SECONDS=%q: want a positive number of seconds", s)
	}
	return n
}

// pgbenchResult is what one pgbench run measured.
type pgbenchResult struct {
	TPS  float64
	Avg  float64 // mean latency, ms
	P99  float64 // ms, from the per-transaction log
	Txns int     // transactions in the log
	lat  []float64
}

// mergeRounds is the result of equally long pgbench runs taken as one:
// the mean tps, and the latencies of all of them.
func mergeRounds(rs []pgbenchResult) pgbenchResult {
	var m pgbenchResult
	var sum float64
	for _, r := range rs {
		m.TPS += r.TPS / float64(len(rs))
		sum += r.Avg * float64(r.Txns)
		m.Txns += r.Txns
		m.lat = append(m.lat, r.lat...)
	}
	if m.Txns > 0 {
		m.Avg = sum / float64(m.Txns)
	}
	m.P99 = percentile(m.lat, 0.99) / 1000
	return m
}

var (
	tpsLine = regexp.MustCompile(`tps = ([0-9.]+) \(without initial connection time\)`)
	avgLine = regexp.MustCompile(`latency average = ([0-9.]+) ms`)
)

// runPgbench runs pgbench with script against host:port as user on db
// for seconds, with mode (prepared, simple), 8 clients on 2 threads,
// logging every transaction under dir, and returns its tps and latencies.
func runPgbench(t *testing.T, dir, label, script, addr, user, db, mode string, seconds int) pgbenchResult {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	prefix := filepath.Join(dir, label)
	cmd := exec.Command("pgbench", "-n", "-f", script, "-c", "8", "-j", "2", "-T", strconv.Itoa(seconds),
		"-M", mode, "-l", "--log-prefix", prefix,
		"-h", host, "-p", port, "-U", user, db)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PGSSLMODE=disable", "PGCONNECT_TIMEOUT=10")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("pgbench %s: %v\n%s", label, err, out)
	}
	var r pgbenchResult
	m := tpsLine.FindSubmatch(out)
	if m == nil {
		t.Fatalf("pgbench %s: no tps line in\n%s", label, out)
	}
	r.TPS, _ = strconv.ParseFloat(string(m[1]), 64)
	if m := avgLine.FindSubmatch(out); m != nil {
		r.Avg, _ = strconv.ParseFloat(string(m[1]), 64)
	}
	if strings.Contains(string(out), "aborted") {
		t.Fatalf("pgbench %s: clients aborted\n%s", label, out)
	}
	lat := readPgbenchLogs(t, prefix)
	r.Txns = len(lat)
	r.P99 = percentile(lat, 0.99) / 1000
	r.lat = lat
	t.Logf("pgbench %s: tps %.0f, latency avg %.3f ms, p99 %.3f ms (%d transactions logged)", label, r.TPS, r.Avg, r.P99, r.Txns)
	return r
}

// readPgbenchLogs reads the per-transaction logs of a run
// (<prefix>.<pid>, <prefix>.<pid>.<thread>) and returns every
// transaction's latency in microseconds (the third column).
func readPgbenchLogs(t *testing.T, prefix string) []float64 {
	t.Helper()
	files, err := filepath.Glob(prefix + ".*")
	if err != nil || len(files) == 0 {
		t.Fatalf("no pgbench logs %s.*: %v", prefix, err)
	}
	var lat []float64
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 3 {
				continue
			}
			us, err := strconv.ParseFloat(fields[2], 64)
			if err != nil {
				continue // "skipped" or "failed" has no latency
			}
			lat = append(lat, us)
		}
		err = sc.Err()
		fh.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(lat) == 0 {
		t.Fatalf("pgbench logs %s.*: no transactions", prefix)
	}
	return lat
}

// percentile is the q-quantile of xs (nearest rank); it sorts xs.
func percentile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	sort.Float64s(xs)
	i := int(math.Ceil(q*float64(len(xs)))) - 1
	return xs[max(0, min(i, len(xs)-1))]
}

// watchPeak samples fn every 250ms until the returned stop is called (or
// the test ends), and stop returns the largest value seen (fn's value at
// stop included). PostgreSQL's backends exit with their connections, and
// their high-water marks with them, so pg.PeakRSS() at the end of a test
// misses the backends of pgbench runs: sampling while they run catches
// them.
func watchPeak(t *testing.T, fn func() int64) (stop func() int64) {
	done := make(chan struct{})
	result := make(chan int64, 1)
	go func() {
		peak := fn()
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				peak = max(peak, fn())
			case <-done:
				result <- max(peak, fn())
				return
			}
		}
	}()
	var once sync.Once
	var peak int64
	stop = func() int64 {
		once.Do(func() {
			close(done)
			peak = <-result
		})
		return peak
	}
	t.Cleanup(func() { stop() })
	return stop
}

// profileDuring, when $BASIN_BENCH_PROFILE names a directory, fetches a
// CPU profile of secs seconds from node's /debug/pprof/profile into
// <dir>/<label>.pprof, then its allocation profile into
// <dir>/<label>-allocs.pprof, and returns a wait that joins the fetch; otherwise
// it does nothing. Start it just before the load it should see.
func profileDuring(t *testing.T, node *testcluster.Node, label string, secs int) (wait func()) {
	dir := os.Getenv("BASIN_BENCH_PROFILE")
	if dir == "" {
		return func() {}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	path := filepath.Join(dir, label+".pprof")
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(secs+30)*time.Second)
		defer cancel()
		status, body, err := node.HTTPGet(ctx, fmt.Sprintf("/debug/pprof/profile?seconds=%d", secs))
		if err == nil && status != 200 {
			err = fmt.Errorf("GET /debug/pprof/profile: %d %s", status, strings.TrimSpace(string(body)))
		}
		if err == nil {
			err = os.WriteFile(path, body, 0o644)
		}
		// And the allocations since the node started (mostly this load's).
		if err == nil {
			status, body, err = node.HTTPGet(ctx, "/debug/pprof/allocs")
			if err == nil && status == 200 {
				err = os.WriteFile(filepath.Join(dir, label+"-allocs.pprof"), body, 0o644)
			}
		}
		done <- err
	}()
	return func() {
		if err := <-done; err != nil {
			t.Logf("no CPU profile for %s: %v", label, err)
			return
		}
		t.Logf("CPU profile of basin during %s: %s", label, path)
	}
}

// mib formats a byte count in MiB.
func mib(b int64) string { return fmt.Sprintf("%d MiB", b>>20) }

// TestB1PointLookups compares point reads by primary key: pgbench, 8
// clients on 2 threads, a random key of 100,000 per transaction, against
// a basin table on one node and a PostgreSQL table with a primary key,
// with prepared statements and with the simple protocol.
func TestB1PointLookups(t *testing.T) {
	seconds := benchSeconds(t)
	pg := startPostgres(t)
	pgPeak := watchPeak(t, pg.PeakRSS)
	loadPostgresItems(t, pg)
	c := testcluster.Start(t, testcluster.Options{Nodes: 1, Args: []string{"--standby-replicas", "0", "--pprof"}})
	node := c.Node(0)
	// A table: basin materializes it into its stores, so WHERE id = $1
	// is a key lookup in Pebble, as it is for a view.
	loadBasinItems(t, c, false)
	checkLookups(t, "basin", basinDSN(node.PGAddr))
	checkLookups(t, "PostgreSQL", pg.DSN())
	warmLookups(t, "basin", basinDSN(node.PGAddr))
	warmLookups(t, "PostgreSQL", pg.DSN())
	t.Logf("basin after warming: %s", rowCacheEntries(t, node))

	dir := t.TempDir()
	script := filepath.Join(dir, "lookup.sql")
	if err := os.WriteFile(script, []byte("\\set k random(0, 99999)\nSELECT name, amount FROM items WHERE id = :k;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	basin := func(label, mode string, secs int) pgbenchResult {
		return runPgbench(t, dir, label, script, node.PGAddr, "basin", "basin", mode, secs)
	}
	ref := func(label, mode string, secs int) pgbenchResult {
		return runPgbench(t, dir, label, script, pg.Addr, "postgres", "postgres", mode, secs)
	}
	// Warm both up (caches, the Go runtime's heap) before measuring.
	warm := min(3, seconds)
	basin("warm-basin", "prepared", warm)
	ref("warm-pg", "prepared", warm)

	// Alternate the systems in rounds of about 5 s (basin first in odd
	// rounds, PostgreSQL in even ones), so that the machine's other
	// load, which comes and goes over seconds on a shared host, falls on
	// both alike; a mode's result is its rounds taken together.
	rounds := max(1, seconds/5)
	per := max(1, seconds/rounds)
	for _, mode := range []string{"prepared", "simple"} {
		var bs, ps []pgbenchResult
		var ratios []string
		for r := range rounds {
			label := fmt.Sprintf("%s-%d", mode, r+1)
			runBasin := func() {
				wait := func() {}
				if r == 0 {
					wait = profileDuring(t, node, "basin-"+mode, min(10, per))
				}
				bs = append(bs, basin("basin-"+label, mode, per))
				wait()
			}
			if r%2 == 0 {
				runBasin()
				ps = append(ps, ref("pg-"+label, mode, per))
			} else {
				ps = append(ps, ref("pg-"+label, mode, per))
				runBasin()
			}
			ratios = append(ratios, fmt.Sprintf("%.2f", bs[r].TPS/ps[r].TPS))
		}
		b, p := mergeRounds(bs), mergeRounds(ps)
		p99 := fmt.Sprintf("p99 basin %.3f ms / pg %.3f ms; mean basin %.3f ms / pg %.3f ms; QPS ratio per round %s",
			b.P99, p.P99, b.Avg, p.Avg, strings.Join(ratios, ", "))
		theReport.add(t, result{
			Bench: "B1", What: "point lookups QPS, -M " + mode,
			Basin: b.TPS, Ref: p.TPS, Unit: "tps",
			RefName: "PostgreSQL 15 table with PK", HigherBetter: true,
			Target: "≥ 1.0× (stretch 1.5×)", Met: b.TPS >= p.TPS,
			Note: p99,
		})
		theReport.add(t, result{
			Bench: "B1", What: "point lookups p99 latency, -M " + mode,
			Basin: b.P99, Ref: p.P99, Unit: "ms",
			RefName: "PostgreSQL 15 table with PK", HigherBetter: false,
			Target: "p99 ≤ PostgreSQL's", Met: b.P99 <= p.P99,
			Note: fmt.Sprintf("pgbench -c 8 -j 2, %d alternating rounds of %d s each; %d / %d transactions", rounds, per, b.Txns, p.Txns),
		})
	}
	theReport.note("B1 peak RSS: basin node %s (one process, 100k-row table); PostgreSQL %s (the largest sum over the postmaster and its live backends, sampled every 250ms; shared buffers count once per process that touched them).",
		mib(peakRSS(node.PID())), mib(pgPeak()))
}

// TestB3ScatterGather compares a full read of 100,000 rows: SELECT * of
// a basin view over 4 partitions spread on 3 nodes (one standby each),
// read through one node that gathers the others' partitions, against a
// PostgreSQL table; one pgx connection each, extended protocol.
func TestB3ScatterGather(t *testing.T) {
	pg := startPostgres(t)
	pgPeak := watchPeak(t, pg.PeakRSS)
	loadPostgresItems(t, pg)
	c := testcluster.Start(t, testcluster.Options{Nodes: 3, Args: []string{"--standby-replicas", "1", "--pprof"}})
	loadBasinItems(t, c, true)
	// Where the partitions are read from: the gathering node's own
	// replicas, or its peers'.
	for _, row := range c.Node(0).Query(t, "SELECT _partition, _served_by, _role, count(*) FROM items GROUP BY _partition, _served_by, _role ORDER BY _partition") {
		t.Logf("basin: partition %s: %s rows from %s (%s)", row[0], row[3], row[1], row[2])
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	bconn, err := pgx.Connect(ctx, basinDSN(c.Node(0).PGAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer bconn.Close(context.Background())
	pconn, err := pgx.Connect(ctx, pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer pconn.Close(context.Background())

	scan := func(system string, conn *pgx.Conn) time.Duration {
		start := time.Now()
		rows, err := conn.Query(ctx, "SELECT * FROM items")
		if err != nil {
			t.Fatalf("%s: SELECT * FROM items: %v", system, err)
		}
		n := 0
		for rows.Next() {
			if len(rows.RawValues()) != 3 {
				t.Fatalf("%s: a row of %d columns, want 3", system, len(rows.RawValues()))
			}
			n++
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			t.Fatalf("%s: SELECT * FROM items: %v", system, err)
		}
		d := time.Since(start)
		if n != benchRows {
			t.Fatalf("%s: SELECT * FROM items returned %d rows, want %d", system, n, benchRows)
		}
		return d
	}
	const warmups, runs = 2, 10
	var bt, pt []float64
	var waits []func()
	for i := 0; i < warmups+runs; i++ {
		if i == warmups {
			// The measured scans take a few seconds: profile the
			// gathering node and a peer through their start.
			waits = append(waits, profileDuring(t, c.Node(0), "b3-node-0", 3), profileDuring(t, c.Node(1), "b3-node-1", 3))
		}
		b := scan("basin", bconn)
		p := scan("PostgreSQL", pconn)
		if i >= warmups {
			bt = append(bt, b.Seconds())
			pt = append(pt, p.Seconds())
		}
	}
	for _, wait := range waits {
		wait()
	}
	// One partition at a time, to tell the cost of reading a partition
	// from the cost of gathering: node-0 reads its own partitions
	// locally and the others from their owners.
	for part := 0; part < 4; part++ {
		start := time.Now()
		rows, err := bconn.Query(ctx, "SELECT * FROM items WHERE _partition = $1", part)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for rows.Next() {
			n++
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		t.Logf("basin: SELECT * of partition %d through node-0: %d rows in %.3f s", part, n, time.Since(start).Seconds())
	}
	t.Logf("basin scans (s): %.3f", bt)
	t.Logf("PostgreSQL scans (s): %.3f", pt)
	bmed, pmed := percentile(bt, 0.5), percentile(pt, 0.5) // sorts them
	var rss int64
	var rssEach []string
	for _, n := range c.Nodes() {
		r := peakRSS(n.PID())
		rss = max(rss, r)
		rssEach = append(rssEach, mib(r))
	}
	theReport.add(t, result{
		Bench: "B3", What: "SELECT * of 100k rows, 3 nodes, 4 partitions",
		Basin: bmed, Ref: pmed, Unit: "s",
		RefName: "PostgreSQL 15 table", HigherBetter: false,
		Target: "≤ 1.5× PostgreSQL's time", Met: bmed <= 1.5*pmed,
		Note: fmt.Sprintf("median of %d after %d warm-ups, one pgx connection each; min basin %.3f s / pg %.3f s; peak RSS basin max node %s (%s), pg %s",
			runs, warmups, bt[0], pt[0], mib(rss), strings.Join(rssEach, ", "), mib(pgPeak())),
	})
}
