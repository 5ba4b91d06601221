package node

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/basindb/basin/internal/testcluster"
)

// TestStatementLimitsOverWire replays the statement attacks of issue 14
// with pgx against a node: a 2 MB SELECT 1+1+... (once 3.4 GB) is
// refused by basin.max_statement_bytes on both protocols, a deep one
// within it by its depth, a parse that outlasts statement_timeout is
// cancelled, and Parse messages past basin.max_prepared_statements are
// refused until the client closes some. The connection goes on after
// each.
func TestStatementLimitsOverWire(t *testing.T) {
	n := startNode(t, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	plus := func(size int) string { return "SELECT 1" + strings.Repeat("+1", (size-len("SELECT 1"))/2) }
	alive := func(conn *pgx.Conn) {
		t.Helper()
		var v int
		if err := conn.QueryRow(ctx, "SELECT 41 + 1").Scan(&v); err != nil || v != 42 {
			t.Fatalf("after the refusal: %v, %v", v, err)
		}
	}
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeDescribeExec} {
		t.Run(mode.String(), func(t *testing.T) {
			conn := connect(t, n.PGAddr(), func(c *pgx.ConnConfig) { c.DefaultQueryExecMode = mode })
			_, err := conn.Exec(ctx, plus(2<<20))
			if pgCode(err) != "54000" || !strings.Contains(err.Error(), "basin.max_statement_bytes (1MB)") {
				t.Fatalf("2 MB statement: %v, want 54000 naming basin.max_statement_bytes", err)
			}
			alive(conn)
			if _, err := conn.Exec(ctx, plus(1<<20-16)); pgCode(err) != "54001" {
				t.Fatalf("1 MB SELECT 1+1+...: %v, want 54001", err)
			}
			alive(conn)
		})
	}

	conn := connect(t, n.PGAddr())
	mustExec(t, conn, "SET basin.max_statement_bytes = '8MB'")
	mustExec(t, conn, "SET statement_timeout = 1")
	var list strings.Builder
	for i := 0; i < 400000; i++ {
		if i > 0 {
			list.WriteString(", ")
		}
		list.WriteString(strconv.Itoa(i))
	}
	if _, err := conn.Exec(ctx, "SELECT 1 WHERE 1 IN ("+list.String()+")"); pgCode(err) != "57014" {
		t.Fatalf("3 MB IN list under statement_timeout 1ms: %v, want 57014", err)
	}
	mustExec(t, conn, "RESET statement_timeout")
	alive(conn)

	// Prepared statements, by name, as a driver makes them.
	mustExec(t, conn, "SET basin.max_prepared_statements = 50")
	for i := 0; i < 50; i++ {
		if _, err := conn.Prepare(ctx, "s"+strconv.Itoa(i), "SELECT "+strconv.Itoa(i)); err != nil {
			t.Fatalf("prepared statement %d of 50: %v", i+1, err)
		}
	}
	_, err := conn.Prepare(ctx, "s50", "SELECT 50")
	if pgCode(err) != "53000" || !strings.Contains(err.Error(), "basin.max_prepared_statements (50)") {
		t.Fatalf("51st prepared statement: %v, want 53000 naming basin.max_prepared_statements", err)
	}
	if err := conn.Deallocate(ctx, "s0"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Prepare(ctx, "s50", "SELECT 50"); err != nil {
		t.Fatalf("after closing one: %v", err)
	}
	if err := conn.DeallocateAll(ctx); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50; i++ {
		if _, err := conn.Prepare(ctx, "t"+strconv.Itoa(i), "SELECT "+strconv.Itoa(i)); err != nil {
			t.Fatalf("after DEALLOCATE ALL, prepared statement %d of 50: %v", i+1, err)
		}
	}
	alive(conn)
}

// TestClusterLongInList reads a key IN list just under
// basin.max_statement_bytes from a node that holds only some of the
// view's partitions: the reads it forwards carry the list (the WHERE
// clause) and the partition's keys as parameters, longer than the
// client's statement, and the serving node must still take them.
func TestClusterLongInList(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{Nodes: 2, Args: []string{"--standby-replicas", "0"}})
	v := newClusterView(t, c)
	c.Node(0).Exec(t, "CREATE TABLE per_id AS SELECT id, COUNT(*) AS n FROM orders GROUP BY id")
	waitPlacedView(t, c, c.Node(0), "per_id", 4, 0)
	v.produce(t, 300)
	n := c.Node(0)
	c.Eventually(t, 30*time.Second, func() error {
		rows, err := n.QueryErr(t, "SELECT count(*) FROM per_id")
		if err != nil || rows[0][0] != "300" {
			return fmt.Errorf("count %v %v", rows, err)
		}
		return nil
	})
	var b strings.Builder
	b.WriteString("SELECT count(*), sum(n) FROM per_id WHERE id IN (")
	for i := 0; b.Len() < 1<<20-16; i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(i))
	}
	b.WriteString(")")
	// The peer parses a statement of a megabyte, several times slower
	// under the race detector than basin.forward_timeout's default
	// allows: the test is about the size bound, not the time.
	ctx, cancel := context.WithTimeout(context.Background(), testcluster.Timeout(2*time.Minute))
	defer cancel()
	conn, err := n.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "SET basin.forward_timeout = '60s'"); err != nil {
		t.Fatal(err)
	}
	qrows, err := conn.Query(ctx, b.String())
	if err != nil {
		t.Fatalf("IN list of %d bytes across nodes: %v", b.Len(), err)
	}
	rows, err := testcluster.Text(qrows)
	if err != nil || len(rows) != 1 || rows[0][0] != "300" || rows[0][1] != "300" {
		t.Fatalf("IN list of %d bytes across nodes: %v, %v; want 300 rows", b.Len(), rows, err)
	}
}
