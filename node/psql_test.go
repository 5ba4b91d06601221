package node

import (
	"bytes"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// runPsql runs the real psql binary against addr with the given
// arguments and standard input.
func runPsql(t *testing.T, addr, stdin string, args ...string) (string, error) {
	t.Helper()
	path, err := exec.LookPath("psql")
	if err != nil {
		t.Fatalf("psql is not installed (CI installs postgresql-client): %v", err)
	}
	host, port := addr[:strings.LastIndexByte(addr, ':')], addr[strings.LastIndexByte(addr, ':')+1:]
	base := []string{"-X", "-h", host, "-p", port, "-U", "basin", "-d", "basin", "-v", "ON_ERROR_STOP=1"}
	cmd := exec.Command(path, append(base, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Env = append(cmd.Environ(), "PGCONNECT_TIMEOUT=10", "PAGER=", "PSQL_PAGER=")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	return out.String(), err
}

// TestPsql drives the real psql binary: a script creating a stream and a
// view, inserts and reads, in psql's aligned output, then an error with
// its position marker.
func TestPsql(t *testing.T) {
	n := startNode(t, t.TempDir())
	script := `
CREATE STREAM orders (order_id BIGINT KEY, region VARCHAR, amount DOUBLE) WITH (kafka_topic = 'orders', value_format = 'json', partitions = 4);
CREATE TABLE revenue AS SELECT region, COUNT(*) AS orders, SUM(amount) AS revenue FROM orders GROUP BY region;
INSERT INTO orders (order_id, region, amount) VALUES (1, 'eu', 9.5), (2, 'eu', 10), (3, 'us', 4.25);
-- ping
SHOW STREAMS;
DESCRIBE revenue;
`
	out, err := runPsql(t, n.PGAddr(), script)
	if err != nil {
		t.Fatalf("psql script failed: %v\n%s", err, out)
	}
	for _, want := range []string{"CREATE STREAM", "CREATE TABLE", "INSERT 0 3", "orders", "region  | VARCHAR | t"} {
		if !strings.Contains(out, want) {
			t.Errorf("psql output lacks %q:\n%s", want, out)
		}
	}
	var got string
	eventually(t, 20*time.Second, func() error {
		got, err = runPsql(t, n.PGAddr(), "", "-c", "SELECT * FROM revenue ORDER BY region")
		if err != nil {
			return err
		}
		if !strings.Contains(got, " eu     |      2 |    19.5") || !strings.Contains(got, "(2 rows)") {
			return fmt.Errorf("unexpected output:\n%s", got)
		}
		return nil
	})

	out, err = runPsql(t, n.PGAddr(), "", "-c", "SELECT region FRM revenue")
	if err == nil {
		t.Fatalf("psql accepted a syntax error:\n%s", out)
	}
	if !strings.Contains(out, "ERROR:  syntax error") || !strings.Contains(out, "LINE 1: SELECT region FRM revenue") || !strings.Contains(out, "^") {
		t.Fatalf("psql error output lacks the position marker:\n%s", out)
	}

	// Unaligned, tuples-only output is what scripts parse.
	out, err = runPsql(t, n.PGAddr(), "", "-A", "-t", "-c", "SELECT orders, revenue FROM revenue WHERE region = 'us'")
	if err != nil || strings.TrimSpace(out) != "1|4.25" {
		t.Fatalf("psql -A -t = %q, %v", out, err)
	}
}
