package pgwire

import (
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestDiskFullError: a statement that fails because a write found no
// space (ENOSPC anywhere in its error's chain, without a SQLSTATE) is
// 53100 disk_full naming the file, not XX000 internal error, and the
// session goes on.
func TestDiskFullError(t *testing.T) {
	ts := startServer(t, Options{})
	conn, err := pgx.ConnectConfig(testCtx(t), ts.pgxConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(testCtx(t))
	_, err = conn.Exec(testCtx(t), "disk full", pgx.QueryExecModeSimpleProtocol)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "53100" || !strings.Contains(pe.Message, "/data/state/v/000001.log") {
		t.Fatalf("disk full: %v, want 53100 naming the file", err)
	}
	if _, err := conn.Exec(testCtx(t), "-- ping", pgx.QueryExecModeSimpleProtocol); err != nil {
		t.Errorf("the session after the error: %v", err)
	}
}
