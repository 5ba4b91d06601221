package node

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestLogic runs the SQL logic files in testdata/logic, each against a
// fresh node. Directives:
//
//	exec                  the statement succeeds; output: the notices it sent,
//	                      NOTICE <sqlstate>: <message>, one a line
//	error [detail]        the statement fails; output: ERROR <sqlstate>: <message> [(position N)],
//	                      with detail also its DETAIL and HINT lines
//	query [rowsort] [colnames] [retry]
//	                      output: the rows, values separated by |.
//	                      retry re-runs the query until it returns the
//	                      expected rows or 15s pass (views are updated
//	                      asynchronously).
//
// Regenerate expected output with -rewrite and review the diff.
func TestLogic(t *testing.T) {
	datadriven.Walk(t, "../testdata/logic", func(t *testing.T, path string) {
		// A fixed node id, so that _served_by and SHOW basin.last_read
		// read the same on every machine.
		n := startNode(t, t.TempDir(), func(o *Options) { o.NodeID = "node-a" })
		var notices strings.Builder
		conn := connect(t, n.PGAddr(), func(cfg *pgx.ConnConfig) {
			cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
				fmt.Fprintf(&notices, "%s %s: %s\n", n.Severity, n.Code, n.Message)
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
				if !d.HasArg("retry") || d.Rewrite {
					if d.HasArg("retry") {
						// Rewriting: wait until the answer stops changing
						// for a while (views may apply a burst of records
						// in several transactions). Review the result.
						prev, same := run(), 0
						for i := 0; i < 200 && same < 10; i++ {
							waitABit()
							cur := run()
							if cur == prev && cur != "" {
								same++
							} else {
								same = 0
							}
							prev = cur
						}
						return prev
					}
					return run()
				}
				var got string
				deadline := time.Now().Add(15 * time.Second)
				for {
					got = run()
					if got == d.Expected || time.Now().After(deadline) {
						return got
					}
					waitABit()
				}
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
