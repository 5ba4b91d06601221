// Package testcluster runs a basin cluster as real processes, for tests
// that need what only separate processes give: SIGKILL in the middle of a
// transaction, a node frozen with SIGSTOP while its peers go on, a restart
// with the same node id, data dir and ports.
//
// # What it starts
//
// Start builds cmd/basin once per test binary (Binary), then starts
//
//   - one `basin broker --addr 127.0.0.1:0 --data-dir <tmp>/broker`, whose
//     address is read from its "basin broker listening on" line and which
//     is ready once a Kafka client's metadata request succeeds;
//   - Options.Nodes `basin serve --brokers <broker> --cluster <name>
//     --node-id node-<i> --data-dir <tmp>/node-<i> --pg-addr 127.0.0.1:<p>
//     --http-addr 127.0.0.1:<h>` processes, started together and each
//     waited for until it is ready.
//
// A node is ready when its own log (since its latest start) has the
// "basin ... ready: psql -h ... -p <port>" line for its port (node.Start
// has returned: the catalog is replayed, the queries are started and both
// listeners are bound), `SELECT 1` over the Postgres wire answers 1, and
// GET /healthz answers 200. The log line is what tells our process apart
// from another one that may hold the same port: node ports are found by
// listening on port 0 and closing, so another test can take one before
// the node binds it. A node that exits before it is ready because a port
// was taken ("address already in use" in its log) is started once more on
// new ports. The broker binds port 0 itself, so it never races.
//
// # Under the race detector
//
// A test binary built with -race (make race) builds basin with -race too
// (race.go and norace.go hold the constant that says which), so the code
// that runs only in basin processes (node/cluster.go, control.go,
// forward.go) runs under the detector. Every process gets
// GORACE=halt_on_error=1 (Env; tests that start basin themselves add it
// too): a race ends the process with exit status 66, a crash the test
// fails on, with the race report at the end of that process's log. A
// race-built process is several times slower, so the waits of the
// harness (Eventually, StartTimeout) are scaled by Timeout; what the
// tests wait for, and the nodes' own timeouts, stay as they are.
//
// # Under make cover
//
// With BASIN_TEST_COVERDIR set (make cover sets it), Binary builds basin
// with -cover -coverpkg=./... and Env sets every process's GOCOVERDIR to
// that directory (as an absolute path), where a process writes the
// coverage of every package when it exits. make cover merges it with the
// test binaries' own (go tool covdata), so the coverage of the code that
// runs only in processes is counted. A process writes it only when it
// exits, so the cleanup of a Cluster then ends the processes with SIGTERM
// rather than SIGKILL (Process.end). It cannot be GOCOVERDIR itself: go
// test -cover points the test binary's at a directory of its own, removed
// when the test ends. Without BASIN_TEST_COVERDIR nothing is built or
// stopped differently.
//
// # Process lifecycle
//
// Every process is a *Process: Kill (SIGKILL, then wait), Stop (SIGSTOP),
// Cont (SIGCONT), Terminate (SIGTERM, wait, exit status as an error),
// Restart (the same command line, so the same id, data dir and ports),
// WaitExit (for a process expected to exit by itself). A process that
// exits without one of these asking it to is a crash: Cluster.Eventually
// fails at once, and the test fails at cleanup, naming the process and
// its exit status.
//
// Nothing outlives the test. The cluster's t.Cleanup kills every process
// still running (SIGKILL works on a stopped process too) and waits for it.
// When the test binary itself dies without running cleanups (a `go test
// -timeout` panic, SIGKILL, Ctrl-C), Linux kills the children through
// PR_SET_PDEATHSIG; for that the processes are started from one goroutine
// locked to its OS thread for the life of the test binary, because the
// signal follows the thread that forked, not the process. Elsewhere only
// Ctrl-C is covered: the children are in the terminal's process group and
// receive it too (we do not Setpgid for that reason).
//
// # Logs
//
// Each process's stdout and stderr go, combined, to memory (Log) and to
// <t.TempDir>/logs/<name>.log, with a "=== testcluster:" line at every
// start and exit. When the test has failed, cleanup prints the last 60
// lines of every process's log. The temporary directory goes when the
// test ends; set BASIN_TEST_LOG_DIR to keep the whole logs, under
// $BASIN_TEST_LOG_DIR/<test name>-<cluster name>/. Options.LogLevel, or
// BASIN_TEST_LOG, sets --log-level (default info).
//
// # Reading state
//
// Node.Query and friends open a connection per call (simple protocol, so
// every value arrives as text) and close it: they work across restarts
// without reconnect logic, but each call is its own session; use Conn for
// session settings. Node.GetJSON reads the HTTP endpoints. Cluster.Produce
// writes records with kgo's StickyKeyPartitioner(nil), whose murmur2 over
// the key bytes is Kafka's default partitioner and basin's
// (kafka.Partition): a keyed record lands where basin looks for its key.
//
// Helpers that take a testing.TB fail the test with t.Fatal and must be
// called from the test's goroutine. Kill, Stop and Cont take none and may
// be called from any goroutine while the test runs: Kill of a process
// that is not running does nothing; Stop and Cont of one report it with
// t.Errorf on the cluster's test.
//
// Its waits are internal/poll's.
package testcluster
