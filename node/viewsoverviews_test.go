package node

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestViewsOverViewsRecompute writes random upserts and deletes to a
// table and keeps a chain of three views over it, each over the one
// before. After every round, a read of the last view bounded by the
// position of the round's writes (basin.min_position, which must hold
// through the chain: positions compose) equals the same SQL evaluated
// over the table as it then is.
func TestViewsOverViewsRecompute(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	n := startNode(t, t.TempDir())
	c := sqlConn{t, ctx, connect(t, n.PGAddr())}
	c.exec("CREATE TABLE accounts (id BIGINT PRIMARY KEY, region VARCHAR, balance BIGINT) WITH (partitions = 3)")
	c.exec("CREATE TABLE funded AS SELECT id, region, balance FROM accounts WHERE balance > 10")
	c.exec("CREATE TABLE funded_west AS SELECT id, region, balance * 2 AS doubled FROM funded WHERE region IN ('eu', 'us')")
	c.exec("CREATE TABLE funded_west_big AS SELECT id, doubled FROM funded_west WHERE doubled < 180")
	const want = "SELECT id, balance * 2 FROM accounts WHERE balance > 10 AND region IN ('eu', 'us') AND balance * 2 < 180"

	rng := rand.New(rand.NewPCG(3, 16))
	regions := []string{"eu", "us", "apac"}
	read := connect(t, n.PGAddr())
	for round := range 12 {
		var vals []string
		for range 40 {
			vals = append(vals, fmt.Sprintf("(%d, '%s', %d)", rng.IntN(60), regions[rng.IntN(3)], rng.IntN(100)))
		}
		c.exec("INSERT INTO accounts VALUES " + strings.Join(vals, ", "))
		for range 5 {
			c.exec(fmt.Sprintf("DELETE FROM accounts WHERE id = %d", rng.IntN(60)))
		}
		var pos string
		if err := c.conn.QueryRow(ctx, "SHOW basin.last_write_position").Scan(&pos); err != nil {
			t.Fatal(err)
		}
		// Another session, bounded by the writes' position only.
		if _, err := read.Exec(ctx, fmt.Sprintf("SET basin.min_position = '%s'", pos)); err != nil {
			t.Fatal(err)
		}
		got := sqlConn{t, ctx, read}.rows("SELECT id, doubled FROM funded_west_big")
		if w := c.rows(want); !slices.Equal(got, w) {
			t.Fatalf("round %d: funded_west_big has %d rows, the SQL over accounts %d: %s", round, len(got), len(w), firstDiff(got, w))
		}
	}
}
