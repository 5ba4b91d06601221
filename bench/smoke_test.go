//go:build bench

package bench

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestPostgresHarness checks the harness: a PostgreSQL server starts,
// answers and reports its peak RSS.
func TestPostgresHarness(t *testing.T) {
	pg := startPostgres(t)
	conn, err := pgx.Connect(context.Background(), pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(context.Background(), "SELECT 1").Scan(&n); err != nil || n != 1 {
		t.Fatalf("SELECT 1: %v %v", n, err)
	}
	if pg.PeakRSS() == 0 {
		t.Error("no peak RSS for the PostgreSQL processes")
	}
	t.Logf("%s at %s, peak RSS %d MiB", pg.Version(t), pg.Addr, pg.PeakRSS()>>20)
}
