package node

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestSessionFeatures covers statement_timeout, DEALLOCATE, DISCARD ALL
// and the settings functions, in both query protocols.
func TestSessionFeatures(t *testing.T) {
	n := startNode(t, t.TempDir())
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
		t.Run(mode.String(), func(t *testing.T) {
			conn := connect(t, n.PGAddr(), func(c *pgx.ConnConfig) { c.DefaultQueryExecMode = mode })
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()

			mustExec(t, conn, "SET statement_timeout = '50ms'")
			start := time.Now()
			_, err := conn.Exec(ctx, "SELECT pg_sleep(30)")
			if pgCode(err) != "57014" || !strings.Contains(err.Error(), "statement timeout") {
				t.Fatalf("pg_sleep under statement_timeout: %v", err)
			}
			if time.Since(start) > 20*time.Second {
				t.Fatalf("statement_timeout did not stop the statement")
			}
			var v string
			if err := conn.QueryRow(ctx, "SHOW statement_timeout").Scan(&v); err != nil || v != "50ms" {
				t.Fatalf("SHOW statement_timeout = %q, %v", v, err)
			}
			if err := conn.QueryRow(ctx, "SELECT current_setting('statement_timeout')").Scan(&v); err != nil || v != "50ms" {
				t.Fatalf("current_setting = %q, %v", v, err)
			}
			// DISCARD ALL also drops prepared statements, pgx's cached ones
			// included (as in Postgres), so the cache must forget them too.
			mustExec(t, conn, "DISCARD ALL")
			if err := conn.DeallocateAll(ctx); err != nil {
				t.Fatalf("DEALLOCATE ALL: %v", err)
			}
			if err := conn.QueryRow(ctx, "SHOW statement_timeout").Scan(&v); err != nil || v != "0" {
				t.Fatalf("after DISCARD ALL statement_timeout = %q, %v", v, err)
			}
			if err := conn.QueryRow(ctx, "SELECT set_config('application_name', 'grafana', false)").Scan(&v); err != nil || v != "grafana" {
				t.Fatalf("set_config = %q, %v", v, err)
			}
			if err := conn.QueryRow(ctx, "SHOW application_name").Scan(&v); err != nil || v != "grafana" {
				t.Fatalf("application_name after set_config = %q, %v", v, err)
			}
			if err := conn.QueryRow(ctx, "SELECT current_setting('server_version_num')").Scan(&v); err != nil || v != "150000" {
				t.Fatalf("server_version_num = %q, %v", v, err)
			}
			var ok bool
			if err := conn.QueryRow(ctx, "SELECT has_table_privilege('basin_processing_log', 'SELECT') AND has_schema_privilege('public', 'USAGE')").Scan(&ok); err != nil || !ok {
				t.Fatalf("has_*_privilege = %v, %v", ok, err)
			}
			if _, err := conn.Exec(ctx, "SELECT current_setting('no_such_setting')"); pgCode(err) != "42704" {
				t.Fatalf("unknown setting: %v", err)
			}
			if _, err := conn.Exec(ctx, "DEALLOCATE nope"); pgCode(err) != "26000" {
				t.Fatalf("DEALLOCATE of a missing statement: %v", err)
			}
		})
	}
}

// TestDeallocate drops a named prepared statement with SQL.
func TestDeallocate(t *testing.T) {
	n := startNode(t, t.TempDir())
	conn := connect(t, n.PGAddr(), func(c *pgx.ConnConfig) { c.DefaultQueryExecMode = pgx.QueryExecModeExec })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := conn.Prepare(ctx, "s1", "SELECT $1::bigint + 1"); err != nil {
		t.Fatal(err)
	}
	var got int64
	if err := conn.QueryRow(ctx, "s1", int64(41)).Scan(&got); err != nil || got != 42 {
		t.Fatalf("s1 = %d, %v", got, err)
	}
	if _, err := conn.Exec(ctx, "DEALLOCATE s1"); err != nil {
		t.Fatal(err)
	}
	res := conn.PgConn().ExecPrepared(ctx, "s1", [][]byte{[]byte("1")}, nil, nil).Read()
	if pgCode(res.Err) != "26000" {
		t.Fatalf("executing a deallocated statement: %v", res.Err)
	}
}

// TestTransactionStatus checks what drivers see of transaction blocks in
// both protocols: ReadyForQuery's status, 25P02 in a failed block, and
// COMMIT of a failed block reported as ROLLBACK.
func TestTransactionStatus(t *testing.T) {
	n := startNode(t, t.TempDir())
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
		t.Run(mode.String(), func(t *testing.T) {
			conn := connect(t, n.PGAddr(), func(c *pgx.ConnConfig) { c.DefaultQueryExecMode = mode })
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			status := func(want byte) {
				t.Helper()
				if got := conn.PgConn().TxStatus(); got != want {
					t.Fatalf("transaction status %q, want %q", got, want)
				}
			}
			status('I')
			mustExec(t, conn, "BEGIN")
			status('T')
			if _, err := conn.Exec(ctx, "SELECT 1/0"); pgCode(err) != "22012" {
				t.Fatalf("1/0: %v", err)
			}
			status('E')
			if _, err := conn.Exec(ctx, "SELECT $1::int", 1); pgCode(err) != "25P02" {
				t.Fatalf("in a failed block: %v", err)
			}
			status('E')
			tag, err := conn.Exec(ctx, "COMMIT")
			if err != nil || tag.String() != "ROLLBACK" {
				t.Fatalf("COMMIT of a failed block: %q, %v", tag, err)
			}
			status('I')

			// pgx's own transaction helper.
			tx, err := conn.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			status('T')
			var v int
			if err := tx.QueryRow(ctx, "SELECT 41 + $1::int", 1).Scan(&v); err != nil || v != 42 {
				t.Fatalf("in a block: %d, %v", v, err)
			}
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			status('I')
		})
	}
}

// TestStatActivity checks that pg_stat_activity lists every session of
// the node with its state, and that pg_cancel_backend and
// pg_terminate_backend reach another session by its PID.
func TestStatActivity(t *testing.T) {
	n := startNode(t, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin := connect(t, n.PGAddr())
	other := connect(t, n.PGAddr(), func(c *pgx.ConnConfig) { c.RuntimeParams["application_name"] = "worker" })
	otherPID := other.PgConn().PID()
	var myPID int32
	if err := admin.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&myPID); err != nil || myPID != int32(admin.PgConn().PID()) {
		t.Fatalf("pg_backend_pid() = %d, %v; BackendKeyData says %d", myPID, err, admin.PgConn().PID())
	}
	mustExec(t, other, "BEGIN")
	mustExec(t, other, "SELECT 1")

	var state, app, query string
	var port int
	err := admin.QueryRow(ctx, `SELECT state, application_name, query, client_port
		FROM pg_stat_activity WHERE pid = $1 AND client_addr IS NOT NULL`, otherPID).Scan(&state, &app, &query, &port)
	if err != nil || state != "idle in transaction" || app != "worker" || query != "SELECT 1" || port == 0 {
		t.Fatalf("other session: state %q app %q query %q port %d, %v", state, app, query, port, err)
	}
	if err := admin.QueryRow(ctx, `SELECT state, query FROM pg_stat_activity WHERE pid = pg_backend_pid()`).Scan(&state, &query); err != nil ||
		state != "active" || !strings.Contains(query, "pg_stat_activity") {
		t.Fatalf("own session: state %q query %q, %v", state, query, err)
	}

	// Cancel a running statement of the other session.
	mustExec(t, other, "ROLLBACK")
	errc := make(chan error, 1)
	go func() {
		_, err := other.Exec(ctx, "SELECT pg_sleep(60)")
		errc <- err
	}()
	eventually(t, 10*time.Second, func() error {
		var st string
		if err := admin.QueryRow(ctx, "SELECT state FROM pg_stat_activity WHERE pid = $1 AND query LIKE '%pg_sleep%'", otherPID).Scan(&st); err != nil || st != "active" {
			return fmt.Errorf("state %q, %v", st, err)
		}
		return nil
	})
	var ok bool
	if err := admin.QueryRow(ctx, "SELECT pg_cancel_backend($1)", otherPID).Scan(&ok); err != nil || !ok {
		t.Fatalf("pg_cancel_backend = %v, %v", ok, err)
	}
	if err := <-errc; pgCode(err) != "57014" {
		t.Fatalf("cancelled statement: %v", err)
	}
	if err := admin.QueryRow(ctx, "SELECT pg_cancel_backend(999999)").Scan(&ok); err != nil || ok {
		t.Fatalf("pg_cancel_backend of no session = %v, %v", ok, err)
	}

	// Terminate it: it gets 57P01 and leaves pg_stat_activity.
	if err := admin.QueryRow(ctx, "SELECT pg_terminate_backend($1)", otherPID).Scan(&ok); err != nil || !ok {
		t.Fatalf("pg_terminate_backend = %v, %v", ok, err)
	}
	if _, err := other.Exec(ctx, "SELECT 1"); err == nil {
		t.Fatal("terminated session still runs statements")
	}
	eventually(t, 10*time.Second, func() error {
		var c int
		if err := admin.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE pid = $1", otherPID).Scan(&c); err != nil || c != 0 {
			return fmt.Errorf("terminated session: %d rows, %v", c, err)
		}
		return nil
	})
}
