package node

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// copyQuery has a value of each kind COPY escapes or quotes: a tab, a
// backslash, quotes and a comma, NULLs, the empty string, and the text
// output of floats, booleans, timestamps and numerics.
const copyQuery = `SELECT * FROM (VALUES (1, 'a	b\c', 1.5::float8, true, TIMESTAMP '2024-05-01 12:34:56.789', 12.50::numeric), ` +
	`(2, NULL, -0.25::float8, false, NULL, NULL), ` +
	`(3, 'say "hi", ok', 1e20::float8, NULL, TIMESTAMP '1999-12-31 23:59:59', -3::numeric), ` +
	`(4, '', 0.1::float8, true, NULL, 0.001::numeric)) AS v(id, s, f, b, ts, n) ORDER BY id`

// TestPsqlCopy runs COPY ... TO STDOUT and \copy from the real psql and
// compares what it prints with what PostgreSQL 15's psql prints for the
// same statements (taken from a real server).
func TestPsqlCopy(t *testing.T) {
	n := startNode(t, t.TempDir())
	for _, tc := range []struct {
		cmd, want string
	}{
		{"COPY (" + copyQuery + ") TO STDOUT",
			"1\ta\\tb\\\\c\t1.5\tt\t2024-05-01 12:34:56.789\t12.50\n" +
				"2\t\\N\t-0.25\tf\t\\N\t\\N\n" +
				"3\tsay \"hi\", ok\t1e+20\t\\N\t1999-12-31 23:59:59\t-3\n" +
				"4\t\t0.1\tt\t\\N\t0.001\n"},
		{`\copy (` + copyQuery + `) to stdout with csv header`,
			"id,s,f,b,ts,n\n" +
				"1,a\tb\\c,1.5,t,2024-05-01 12:34:56.789,12.50\n" +
				"2,,-0.25,f,,\n" +
				"3,\"say \"\"hi\"\", ok\",1e+20,,1999-12-31 23:59:59,-3\n" +
				"4,\"\",0.1,t,,0.001\n"},
	} {
		out, err := runPsql(t, n.PGAddr(), "", "-c", tc.cmd)
		if err != nil {
			t.Fatalf("%s: %v\n%s", tc.cmd, err, out)
		}
		if out != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.cmd, out, tc.want)
		}
	}

	// Cursors from psql: the command tags of MOVE, FETCH's rows.
	script := `BEGIN;
DECLARE c SCROLL CURSOR FOR SELECT * FROM (VALUES (1), (2), (3), (4), (5)) AS v(x) ORDER BY x;
MOVE FORWARD 3 c;
FETCH BACKWARD 2 FROM c;
MOVE LAST IN c;
MOVE 10 c;
MOVE BACKWARD ALL c;
MOVE RELATIVE 0 c;
FETCH ALL c;
MOVE ABSOLUTE -9 c;
CLOSE c;
COMMIT;
`
	want := "BEGIN\nDECLARE CURSOR\nMOVE 3\nx\n2\n1\n(2 rows)\nMOVE 1\nMOVE 0\nMOVE 5\nMOVE 0\nx\n1\n2\n3\n4\n5\n(5 rows)\nMOVE 0\nCLOSE CURSOR\nCOMMIT\n"
	out, err := runPsql(t, n.PGAddr(), script, "-A")
	if err != nil {
		t.Fatalf("cursor script: %v\n%s", err, out)
	}
	if out != want {
		t.Errorf("cursor script:\n got %q\nwant %q", out, want)
	}

	// The statements of one Query form an implicit block, in which a
	// cursor without HOLD may live; it ends with them.
	out, err = runPsql(t, n.PGAddr(), "", "-A", "-t", "-c", "DECLARE c CURSOR FOR SELECT 7 AS x; FETCH c")
	if err != nil || out != "DECLARE CURSOR\n7\n" { // as psql 15 prints it from PostgreSQL 15
		t.Errorf("DECLARE and FETCH in one Query: %q, %v", out, err)
	}
	out, err = runPsql(t, n.PGAddr(), "", "-c", "FETCH c")
	if err == nil || !strings.Contains(out, `cursor "c" does not exist`) {
		t.Errorf("a cursor outlived its implicit block: %q, %v", out, err)
	}

	// An error in COPY's query: psql reports it and no data.
	out, err = runPsql(t, n.PGAddr(), "", "-c", "COPY (SELECT 1/0) TO STDOUT")
	if err == nil || !strings.Contains(out, "ERROR:  division by zero") {
		t.Errorf("COPY of a failing query: %v\n%s", err, out)
	}
}

// TestPgxCursor declares a cursor in a transaction and fetches it in
// pages through pgx, in the extended protocol (Describe of FETCH gives
// the cursor's columns) and the simple one; COMMIT closes it.
func TestPgxCursor(t *testing.T) {
	n := startNode(t, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeSimpleProtocol} {
		conn := connect(t, n.PGAddr(), func(cfg *pgx.ConnConfig) { cfg.DefaultQueryExecMode = mode })
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, "DECLARE c CURSOR FOR SELECT x, 'row ' || x AS label FROM (VALUES (1), (2), (3), (4), (5)) AS v(x) ORDER BY x"); err != nil {
			t.Fatalf("%v: DECLARE: %v", mode, err)
		}
		var got []string
		for page := 0; ; page++ {
			rows, err := tx.Query(ctx, "FETCH 2 FROM c")
			if err != nil {
				t.Fatalf("%v: FETCH: %v", mode, err)
			}
			k := 0
			for rows.Next() {
				var x int64
				var label string
				if err := rows.Scan(&x, &label); err != nil {
					t.Fatalf("%v: scan: %v", mode, err)
				}
				got = append(got, label)
				k++
			}
			if err := rows.Err(); err != nil {
				t.Fatalf("%v: FETCH: %v", mode, err)
			}
			if tag := rows.CommandTag().String(); tag != "FETCH "+string(rune('0'+k)) {
				t.Errorf("%v: tag %q after %d rows", mode, tag, k)
			}
			if k == 0 {
				break
			}
			if page > 5 {
				t.Fatalf("%v: FETCH never ran out: %v", mode, got)
			}
		}
		if strings.Join(got, ",") != "row 1,row 2,row 3,row 4,row 5" {
			t.Errorf("%v: fetched %v", mode, got)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		_, err = conn.Exec(ctx, "FETCH c")
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "34000" {
			t.Errorf("%v: FETCH after COMMIT: %v, want 34000", mode, err)
		}
	}
}
