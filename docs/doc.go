// Package docs holds basin's user documentation (the *.md files here and
// the repository's README.md) and the test that runs it: TestDocs reads
// every fenced block of those files, runs the SQL and the shell commands
// against real basin processes built from the tree, and compares what
// they print with what the page shows. A page that tells a user to type
// something that fails, or shows output basin no longer gives, fails
// `make test`.
//
// # What runs, and where
//
// Each document gets a fresh temporary directory, the working directory
// of everything it runs, with bin/basin in it (the binary
// internal/testcluster builds from the tree; `basin` is on PATH too), and
// when it needs one a fresh `basin serve` with an embedded broker: the
// node the page's commands talk to. Every document's blocks run in
// order, by kind:
//
//   - ```sql: the statements go, in one psql session per block, to the
//     session the page last opened (a shell block's bare `psql ...`
//     line without -c or -f), or else to `psql -h 127.0.0.1 -p 5433 -U
//     basin basin`. A statement that fails fails the test unless the page
//     shows its error.
//   - ```sh and ```console: the lines run in one bash session per
//     document, so variables and background jobs (`&`) carry from block
//     to block as in a terminal, with `set -e`: a failing command fails
//     the test. `make build` does nothing (the test's binary stands for
//     bin/basin); any other make target is refused.
//   - a block that starts with a `basin=> ` prompt is a psql transcript:
//     each prompt's statement runs and the lines after it are its output.
//
// Addresses and paths are the page's, moved out of the way: every port
// the page names (127.0.0.1:N, localhost:N, -p N) stands for a free port
// of the test's choosing, consistently across the document and in the
// output it expects, so `make run` or another test on this machine never
// collides with it; 5433, 8433 and 9092 are the document's node's
// Postgres, HTTP and broker ports. /tmp/ and /var/lib/ stand for
// directories under the document's temporary directory, and the node's
// data dir is /var/lib/basin.
//
// # Shown output
//
// Output a page shows is compared loosely enough to survive formatting,
// strictly enough to catch a wrong doc:
//
//   - in a sql block, comment lines right after a statement that form a
//     psql table (a header, a ---+--- line, rows) or start with ERROR:
//     are that statement's output;
//   - an untyped block marked `output` is the output of the block before
//     it (the last statement, for sql).
//
// Tables are compared cell by cell: the same column names, the same rows
// (in order when the statement has ORDER BY, else in any order), each
// cell equal after collapsing white space; `...` in a shown cell matches
// any text (a cell of just `...`, anything). psql's "(N rows)" footer,
// command tags and notices need not be shown.
// Other lines of the shown output must each appear in the real output, in
// order, with `...` matching any text within a line.
//
// # Markup
//
// An HTML comment before a block (only blank lines between), invisible
// on a rendered page, says how to treat it. Clauses are separated by
// `;`; `output of:` and `setup` take the rest of the comment, which may
// span lines:
//
//	<!-- doctest: skip (why it cannot run here) -->
//	<!-- doctest: output -->              output of the block before
//	<!-- doctest: volatile _served_by, 18619 -->
//	    columns of a shown table, or words of shown text, whose value
//	    differs from run to run (lags, pids, nodes chosen by assignment)
//	<!-- doctest: eventually -->          a read-only block re-run until its
//	                                      output matches (at most 30 s):
//	                                      what a user sees a moment later
//	<!-- doctest: log -->                 each line appears in the node's log
//	<!-- doctest: file basin.yaml -->     written to that file, not run
//	<!-- doctest: servers -->             each line starts a server: it must
//	                                      print its ready line, then stop
//	                                      cleanly on SIGTERM (an HTTP or
//	                                      broker address the line and its
//	                                      config file leave to the default
//	                                      is a free port, through BASIN_*)
//	<!-- doctest: restart -->             a sh block ending in the node's
//	                                      basin serve: the node stops, the
//	                                      other lines run, the test starts
//	                                      the node again
//	<!-- doctest: volatile 18619; output of: basin serve --data-dir /var/lib/basin -->
//	    the block is the output of that hidden shell script
//	<!-- doctest: setup
//	CREATE STREAM ...;
//	-->                                   hidden SQL, run where it stands in
//	                                      a psql session of its own
//
// Every block either runs or carries a skip with a reason; an unmarked
// block the test does not know how to run fails it, so a new example is
// tested or consciously not. Skip a block only when it cannot run on one
// machine (an external Kafka, a TLS certificate, a terminal), is not a
// command (a synopsis, a diagram, a layout), or is the test itself
// (`make test`); say which test covers it when one does.
//
// # The Grafana dashboard
//
// grafana/basin.json is the dashboard operations.md offers. Two tests
// keep it true: TestDashboardSchema decodes it strictly with Grafana's
// own schema (github.com/grafana/grafana-foundation-sdk/go, whose types
// are generated from it) and checks that every panel uses the
// datasource variable and every metric it names is in operations.md's
// metrics table; TestDashboardThroughFailover runs a real Prometheus
// (Debian's prometheus) scraping three real nodes, checks by name what
// their metrics say while one is SIGKILLed and the others take over,
// then runs every query of the dashboard against what was scraped: each
// must parse and answer, over metrics that were scraped.
//
// # Running and debugging
//
//	go test -count=1 ./docs/                          every document
//	go test -count=1 -run 'TestDocs/README.md' ./docs/
//	go test -count=1 -run 'TestDocs/README.md/Several_nodes' ./docs/
//	go test -count=1 -run 'TestDashboard' ./docs/
//
// Subtests are documents, then their level-2 sections in order; a
// section may need what earlier ones created, so select a whole document
// unless the section stands alone (the README's Several nodes does). A
// failure names the file and line of the block, what ran and the whole
// output; the node's log is printed when a document fails.
// BASIN_TEST_BINARY=bin/basin skips the build.
//
// Processes a document starts are killed when it ends (each shell
// session is its own process group), not when the test binary itself is
// killed: after a `go test -timeout` panic look for stray `basin`
// processes.
package docs
