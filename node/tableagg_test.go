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

// TestTableAggregationRecompute writes random upserts and deletes to a
// table (rows moving between groups, leaving them, groups emptying) and
// keeps views grouped over it, by other columns (through the change
// stage) and by its key. The node is closed and started again halfway.
// After every round, each view read with the round's writes as its
// bound (read-your-writes) equals the same SQL run over the table.
func TestTableAggregationRecompute(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start, _ := restartable(t)
	n := start()
	c := sqlConn{t, ctx, connect(t, n.PGAddr())}
	c.exec("CREATE TABLE accounts (id BIGINT PRIMARY KEY, region VARCHAR, tier BIGINT, balance BIGINT) WITH (partitions = 3)")
	views := map[string]string{
		"CREATE TABLE by_region WITH (partitions = 2) AS SELECT region, COUNT(*) AS n, SUM(balance) AS total, MIN(balance) AS low, MAX(balance) AS high, COUNT(DISTINCT tier) AS tiers FROM accounts WHERE balance > -50 GROUP BY region": "SELECT region, n, total, low, high, tiers FROM by_region",
		"CREATE TABLE by_tier AS SELECT tier, region, COUNT(*) AS n, AVG(balance) AS mean FROM accounts GROUP BY tier, region HAVING COUNT(*) > 1":                                                                                        "SELECT tier, region, n, mean FROM by_tier",
		"CREATE TABLE per_id AS SELECT id, SUM(balance) AS total, COUNT(*) AS n FROM accounts GROUP BY id":                                                                                                                                "SELECT id, total, n FROM per_id",
		"CREATE TABLE spread AS SELECT tier, STDDEV_SAMP(balance) AS sd, VAR_POP(balance) AS vp, BOOL_AND(balance > 0) AS all_pos, BOOL_OR(region = 'eu') AS any_eu FROM accounts GROUP BY tier":                                          "SELECT tier, round(sd::numeric, 6), round(vp::numeric, 6), all_pos, any_eu FROM spread",
	}
	// A query's sum(bigint) is numeric, as Postgres's; a view's is
	// bigint: the recomputation casts, to compare values.
	want := map[string]string{
		"SELECT region, n, total, low, high, tiers FROM by_region": "SELECT region, COUNT(*), SUM(balance)::bigint, MIN(balance), MAX(balance), COUNT(DISTINCT tier) FROM accounts WHERE balance > -50 GROUP BY region",
		"SELECT tier, region, n, mean FROM by_tier":                "SELECT tier, region, COUNT(*), AVG(balance) FROM accounts GROUP BY tier, region HAVING COUNT(*) > 1",
		"SELECT id, total, n FROM per_id":                          "SELECT id, SUM(balance)::bigint, COUNT(*) FROM accounts GROUP BY id",
		// A float statistic taken back can differ from a recompute in
		// its last digits: compared to six places.
		"SELECT tier, round(sd::numeric, 6), round(vp::numeric, 6), all_pos, any_eu FROM spread": "SELECT tier, round(STDDEV_SAMP(balance)::numeric, 6), round(VAR_POP(balance)::numeric, 6), BOOL_AND(balance > 0), BOOL_OR(region = 'eu') FROM accounts GROUP BY tier",
	}
	for create := range views {
		c.exec(create)
	}
	rng := rand.New(rand.NewPCG(7, 11))
	regions := []string{"eu", "us", "apac", "latam"}
	for round := range 16 {
		if round == 8 {
			waitTasks(t, n, 23)
			if err := n.Close(); err != nil {
				t.Fatal(err)
			}
			n = start()
			c.conn = connect(t, n.PGAddr())
			// Back in the group, the node holds its tasks again: 3
			// table partitions, 2+3+3 view partitions and 3+3 change
			// stages.
			waitTasks(t, n, 23)
		}
		var vals []string
		for range 50 {
			vals = append(vals, fmt.Sprintf("(%d, '%s', %d, %d)", rng.IntN(80), regions[rng.IntN(len(regions))], rng.IntN(4), rng.IntN(200)-60))
		}
		c.exec("INSERT INTO accounts VALUES " + strings.Join(vals, ", "))
		for range 8 {
			c.exec(fmt.Sprintf("DELETE FROM accounts WHERE id = %d", rng.IntN(80)))
		}
		for _, read := range views {
			got, w := c.rows(read), c.rows(want[read])
			if !slices.Equal(got, w) {
				t.Fatalf("round %d: %q gives %d rows, the SQL over accounts %d: %s", round, read, len(got), len(w), firstDiff(got, w))
			}
		}
	}
}
