package node

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/basindb/basin/internal/poll"
	"github.com/basindb/basin/internal/testcluster"
)

// TestLogic runs the SQL logic files in testdata/logic, each against a
// fresh node. Directives:
//
//	exec                  the statement succeeds; output: the notices it sent,
//	                      NOTICE <sqlstate>: <message>, one a line, and the
//	                      notifications it received (LISTEN/NOTIFY),
//	                      NOTIFICATION <channel> "<payload>" from self|pid N
//	error [detail]        the statement fails; output: ERROR <sqlstate>: <message> [(position N)],
//	                      with detail also its DETAIL and HINT lines
//	query [rowsort] [colnames] [settled]
//	                      output: the rows, values separated by |.
//	                      settled is for a read of views the file's
//	                      writes feed: the session's read-your-writes
//	                      bound (on by default) makes the first answer
//	                      wait for them, so it must match; the query is
//	                      then read again until every task of the node has
//	                      applied all its input, and each of those answers
//	                      must match too (settledAnswers). A count that
//	                      overshoots and then settles fails.
//	changes n=<n> [rowsort]
//	                      a FETCH from a cursor of a subscription, run
//	                      again until it has returned n rows; output: the
//	                      rows without their last two columns (_ts and
//	                      _position, which differ in every run)
//	query ... caughtup    read once every task of the node has applied
//	                      all its input, and again until the answer is
//	                      the expected one (a pipeline's later stage sees
//	                      its input grow when it next fetches): for a
//	                      derived stream, whose records its tasks write
//	                      after the statement that fed them returned.
//
// Regenerate expected output with -rewrite and review the diff.
// semanticOnly skips a test that checks answers, one session at a time,
// under the race detector: make test runs it (CI runs make test, then
// make race), and the race pass, for data races, is kept to the tests
// with concurrency (clusters, failover, concurrent sessions) so that CI
// stays within its time.
func semanticOnly(t *testing.T) {
	t.Helper()
	if testcluster.Race() {
		t.Skip("answers only: make test runs it; make race is for the tests with concurrency")
	}
}

func TestLogic(t *testing.T) {
	semanticOnly(t)
	datadriven.Walk(t, "../testdata/logic", func(t *testing.T, path string) {
		// A fixed node id, so that _served_by and SHOW basin.last_read
		// read the same on every machine.
		n := startNode(t, t.TempDir(), func(o *Options) { o.NodeID = "node-a" })
		var notices strings.Builder
		conn := connect(t, n.PGAddr(), func(cfg *pgx.ConnConfig) {
			cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
				fmt.Fprintf(&notices, "%s %s: %s\n", n.Severity, n.Code, n.Message)
			}
			cfg.OnNotification = func(c *pgconn.PgConn, n *pgconn.Notification) {
				from := "self"
				if n.PID != c.PID() {
					from = fmt.Sprintf("pid %d", n.PID)
				}
				fmt.Fprintf(&notices, "NOTIFICATION %s %q from %s\n", n.Channel, n.Payload, from)
			}
		})
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			notices.Reset()
			switch d.Cmd {
			case "exec":
				if _, err := conn.Exec(ctx, d.Input); err != nil {
					t.Fatalf("%s: %s", d.Pos, errorText(err))
				}
				return notices.String()
			case "error":
				_, err := conn.Exec(ctx, d.Input)
				if err == nil {
					t.Fatalf("%s: expected an error", d.Pos)
				}
				out := errorText(err)
				if pe, ok := err.(*pgconn.PgError); ok && d.HasArg("detail") {
					if pe.Detail != "" {
						out += "DETAIL: " + pe.Detail + "\n"
					}
					if pe.Hint != "" {
						out += "HINT: " + pe.Hint + "\n"
					}
				}
				return notices.String() + out
			case "copy":
				// COPY ... TO STDOUT: the lines as the client got them,
				// then the command tag.
				var buf strings.Builder
				tag, err := conn.PgConn().CopyTo(ctx, &buf, d.Input)
				if err != nil {
					return notices.String() + buf.String() + errorText(err)
				}
				return notices.String() + buf.String() + tag.String() + "\n"
			case "changes":
				var want int
				d.ScanArgs(t, "n", &want)
				var rows []string
				for len(rows) < want && ctx.Err() == nil {
					out, err := queryText(ctx, conn, d.Input, false)
					if err != nil {
						return notices.String() + strings.Join(rows, "") + errorText(err)
					}
					for _, l := range strings.SplitAfter(out, "\n") {
						if f := strings.Split(l, "|"); len(f) > 2 {
							rows = append(rows, strings.Join(f[:len(f)-2], "|")+"\n")
						}
					}
				}
				if d.HasArg("rowsort") {
					slices.Sort(rows)
				}
				return notices.String() + strings.Join(rows, "")
			case "query":
				run := func() string {
					out, err := queryText(ctx, conn, d.Input, d.HasArg("colnames"))
					if err != nil {
						return errorText(err)
					}
					if d.HasArg("rowsort") {
						out = sortRows(out, d.HasArg("colnames"))
					}
					return out
				}
				if d.HasArg("caughtup") {
					if !poll.Cond(settleTimeout, func() bool { return tasksCaughtUp(n) }) {
						t.Fatalf("%s: the node's tasks did not apply all their input in time", d.Pos)
					}
					if d.Rewrite {
						// A later stage may not have fetched its input's
						// last records yet: take the answer once it has
						// stayed the same for a second. Review it.
						got, since := run(), time.Now()
						poll.Cond(settleTimeout, func() bool {
							if g := run(); g != got {
								got, since = g, time.Now()
							}
							return time.Since(since) >= time.Second
						})
						return got
					}
					// A pipeline's later stage learns of its input's new
					// end when it next fetches: read until the answer is
					// the expected one (records only add to a stream).
					got := run()
					poll.Cond(settleTimeout, func() bool { got = run(); return got == d.Expected })
					return got
				}
				if !d.HasArg("settled") {
					return run()
				}
				caughtUp := func() bool { return tasksCaughtUp(n) }
				if d.Rewrite {
					// Rewriting: take the answer once every task has
					// applied its input. Review the result.
					waitFor(caughtUp, time.Now().Add(settleTimeout))
					return run()
				}
				got, err := settledAnswers(d.Expected, run, caughtUp, time.Now().Add(settleTimeout))
				if err != nil {
					t.Errorf("%s: %v", d.Pos, err)
				}
				return got
			}
			t.Fatalf("%s: unknown directive %q", d.Pos, d.Cmd)
			return ""
		})
	})
}

func sortRows(out string, header bool) string {
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if out == "" {
		return ""
	}
	start := 0
	if header {
		start = 1
	}
	sort.Strings(lines[start:])
	return strings.Join(lines, "\n") + "\n"
}

// settleTimeout bounds how long a settled query is read again for the
// node's tasks to apply all their input.
const settleTimeout = 15 * time.Second

// settledAnswers reads a settled query: the first answer of read must be
// want (the read waited for the session's writes), and so must every
// later one, read until caughtUp reports every task current (one more
// read after it does). It returns the answer that differs from want, or
// the last one; the error says which answer differed after a first that
// matched, or that the tasks did not catch up by the deadline.
func settledAnswers(want string, read func() string, caughtUp func() bool, deadline time.Time) (string, error) {
	got := read()
	if got != want {
		return got, nil
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	i := 1
	err := poll.Wait(ctx, func() (bool, error) {
		i++
		done := caughtUp()
		if got = read(); got != want {
			return false, fmt.Errorf("answer %d differs from the expected rows, which the first answer had", i)
		}
		return done, nil
	})
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		err = errors.New("the node's tasks did not apply all their input in time")
	}
	return got, err
}

// tasksCaughtUp reports whether every task of n has restored and applied
// all the input records it knows of. (A task's changelog offset is no
// measure: the changelog's end counts its transaction markers too.)
func tasksCaughtUp(n *Node) bool {
	for _, ts := range n.localTasks().Tasks {
		if ts.State != "RUNNING" || ts.OffsetLag != 0 {
			return false
		}
	}
	return true
}

// waitFor waits until cond holds or the deadline passes.
func waitFor(cond func() bool, deadline time.Time) { poll.Cond(time.Until(deadline), cond) }

// TestSettledAnswers runs the settled directive's check against fake
// reads: an answer that overshoots and then settles fails (the retry
// directive it replaced passed it on its second read), as does a right
// answer that a later read contradicts.
func TestSettledAnswers(t *testing.T) {
	deadline := time.Now().Add(time.Minute)
	reads := func(answers ...string) func() string {
		return func() string {
			a := answers[0]
			if len(answers) > 1 {
				answers = answers[1:]
			}
			return a
		}
	}
	after := func(n int) func() bool { // caught up from the nth check on
		return func() bool { n--; return n <= 0 }
	}
	for _, tc := range []struct {
		name     string
		read     func() string
		caughtUp func() bool
		want     string // the answer returned
		err      string
	}{
		{"overshoots then settles", reads("14\n", "13\n"), after(1), "14\n", ""},
		{"right then overshoots", reads("13\n", "13\n", "14\n", "13\n"), after(3), "14\n", "answer 3 differs"},
		{"right until caught up", reads("13\n"), after(3), "13\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := settledAnswers("13\n", tc.read, tc.caughtUp, deadline)
			if got != tc.want {
				t.Errorf("answer %q, want %q", got, tc.want)
			}
			if (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
				t.Errorf("error %v, want %q", err, tc.err)
			}
		})
	}
	// Tasks that never catch up fail the query at the deadline.
	_, err := settledAnswers("13\n", reads("13\n"), func() bool { return false }, time.Now())
	if err == nil {
		t.Error("no error for tasks that never caught up")
	}
}
