package node

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/basindb/basin/internal/pgserver"
)

// pgMirror pairs a basin node with a PostgreSQL server that holds the
// same records, so that a query's answers from both can be compared
// (TestDifferentialPostgres, TestBIQueries). PostgreSQL gets tables of
// the records written through both, and tables of the rows basin's
// views hold: a view is a table there, with basin's column types.
type pgMirror struct {
	t     testing.TB
	ctx   context.Context
	n     *Node
	basin *pgx.Conn
	pg    *pgx.Conn
}

// startPGMirror starts a PostgreSQL server (in UTC, as basin's sessions
// are) and a basin node, and connects to both.
func startPGMirror(t testing.TB, ctx context.Context) *pgMirror {
	t.Helper()
	pg := pgserver.Start(t, "timezone=UTC")
	pconn, err := pgx.Connect(ctx, pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pconn.Close(context.Background()) })
	n := startNode(t, t.TempDir())
	return &pgMirror{t: t, ctx: ctx, n: n, basin: connect(t, n.PGAddr()), pg: pconn}
}

// b and p run a test's statements on basin and on PostgreSQL.
func (m *pgMirror) b() sqlConn { return sqlConn{m.t, m.ctx, m.basin} }
func (m *pgMirror) p() sqlConn { return sqlConn{m.t, m.ctx, m.pg} }

// insert writes the same VALUES rows into basin's and PostgreSQL's
// table, a hundred rows a statement.
func (m *pgMirror) insert(table string, rows []string) {
	m.t.Helper()
	for i := 0; i < len(rows); i += 100 {
		q := fmt.Sprintf("INSERT INTO %s VALUES %s", table, strings.Join(rows[i:min(i+100, len(rows))], ", "))
		m.b().exec(q)
		m.p().exec(q)
	}
}

// mirrorView checks that basin's view name holds the rows its SQL q
// gives when PostgreSQL runs it over the records, then makes those rows
// a PostgreSQL table of the given columns (basin's types: its SUM of
// BIGINT is BIGINT where PostgreSQL's is numeric). A view fed through
// a pipeline of several tasks (a stream–table join's repartitioning)
// may lag the session's writes, so it is read again until it matches
// or wait has passed.
func (m *pgMirror) mirrorView(name, q, columns string, wait time.Duration) {
	m.t.Helper()
	want, err := diffRows(m.ctx, m.pg, q, false)
	if err != nil {
		m.t.Fatalf("PostgreSQL's %s: %v", q, err)
	}
	var got []string
	deadline := time.Now().Add(wait)
	for {
		got, err = diffRows(m.ctx, m.basin, "SELECT * FROM "+name, false)
		if err != nil {
			m.t.Fatal(err)
		}
		if slices.Equal(got, want) || !time.Now().Before(deadline) {
			break
		}
		select {
		case <-m.ctx.Done():
			m.t.Fatal(m.ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	if !slices.Equal(got, want) {
		m.t.Fatalf("view %s has %d rows, PostgreSQL's %s over the records %d: %s", name, len(got), q, len(want), firstDiff(got, want))
	}
	m.p().exec(fmt.Sprintf("CREATE TABLE %s (%s)", name, columns))
	m.p().exec(fmt.Sprintf("INSERT INTO %s %s", name, q))
}

// diffRows runs q over conn in the simple protocol (so values are
// compared as the server's text) and returns its rows, sorted unless
// ordered.
func diffRows(ctx context.Context, conn *pgx.Conn, q string, ordered bool) ([]string, error) {
	a, err := queryAnswer(ctx, conn, q, false, nil, nil, ordered)
	return a.rows, err
}

// answer is a query's answer as text: its columns' names and types, and
// its rows.
type answer struct {
	columns []string // name and type OID, "name:oid"
	rows    []string // values separated by |
}

// queryAnswer runs q over conn and returns its answer, the rows sorted
// unless ordered. In the simple protocol values come as the server's
// text. In the extended protocol it goes as a driver that prepares
// statements does: Parse with the parameters' type OIDs (0 leaves a
// type to the server), Bind of text values (nil is NULL), results in
// text.
func queryAnswer(ctx context.Context, conn *pgx.Conn, q string, extended bool, oids []uint32, args [][]byte, ordered bool) (answer, error) {
	var a answer
	describe := func(fields []pgconn.FieldDescription) {
		if a.columns == nil {
			a.columns = []string{}
			for _, f := range fields {
				a.columns = append(a.columns, fmt.Sprintf("%s:%d", f.Name, f.DataTypeOID))
			}
		}
	}
	if extended {
		formats := make([]int16, len(args)) // all text
		rr := conn.PgConn().ExecParams(ctx, q, args, oids, formats, nil)
		for rr.NextRow() {
			a.rows = append(a.rows, rawRowText(rr.Values()))
		}
		describe(rr.FieldDescriptions())
		if _, err := rr.Close(); err != nil {
			return answer{}, err
		}
	} else {
		rs, err := conn.Query(ctx, q, pgx.QueryExecModeSimpleProtocol)
		if err != nil {
			return answer{}, err
		}
		for rs.Next() {
			a.rows = append(a.rows, rawRowText(rs.RawValues()))
		}
		describe(rs.FieldDescriptions())
		rs.Close()
		if err := rs.Err(); err != nil {
			return answer{}, err
		}
	}
	if !ordered {
		slices.Sort(a.rows)
	}
	return a, nil
}

// rawRowText joins a row's text values with |, NULL for a null.
func rawRowText(raw [][]byte) string {
	fields := make([]string, len(raw))
	for i, v := range raw {
		if v == nil {
			fields[i] = "NULL"
		} else {
			fields[i] = string(v)
		}
	}
	return strings.Join(fields, "|")
}

// errText is an error as the comparison reports it: a server's error
// as its SQLSTATE and message, on one line.
func errText(err error) string {
	if pe, ok := err.(*pgconn.PgError); ok {
		return strings.ReplaceAll(pe.Code+" "+pe.Message, "\n", " ")
	}
	return strings.ReplaceAll(err.Error(), "\n", " ")
}
