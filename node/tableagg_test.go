package node

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
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
		"CREATE TABLE by_region WITH (partitions = 2) AS SELECT region, COUNT(*) AS n, SUM(balance) AS total, MIN(balance) AS low, MAX(balance) AS high, COUNT(DISTINCT tier) AS tiers FROM accounts WHERE balance > -50 GROUP BY region":      "SELECT region, n, total, low, high, tiers FROM by_region",
		"CREATE TABLE by_tier AS SELECT tier, region, COUNT(*) AS n, AVG(balance) AS mean FROM accounts GROUP BY tier, region HAVING COUNT(*) > 1":                                                                                             "SELECT tier, region, n, mean FROM by_tier",
		"CREATE TABLE per_id AS SELECT id, SUM(balance) AS total, COUNT(*) AS n FROM accounts GROUP BY id":                                                                                                                                     "SELECT id, total, n FROM per_id",
		"CREATE TABLE spread AS SELECT tier, STDDEV_SAMP(balance) AS sd, VAR_POP(balance) AS vp, BOOL_AND(balance > 0) AS all_pos, BOOL_OR(region = 'eu') AS any_eu FROM accounts GROUP BY tier":                                               "SELECT tier, round(sd::numeric, 6), round(vp::numeric, 6), all_pos, any_eu FROM spread",
		"CREATE TABLE lib AS SELECT region, ARRAY_AGG(tier) AS tiers, COLLECT_SET(tier) AS tierset, TOPK(balance, 2) AS top2, TOPKDISTINCT(tier, 2) AS top2t, HISTOGRAM(tier) AS hist, CORR(balance, tier) AS r FROM accounts GROUP BY region": "SELECT region, tiers, tierset, top2, top2t, hist, round(r::numeric, 6) FROM lib",
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
		// Over a table the arrays are in value order, NULLs last; the
		// pull engine computes topk, topkdistinct and histogram on its
		// own (query/), the histogram also by jsonb_object_agg.
		"SELECT region, tiers, tierset, top2, top2t, hist, round(r::numeric, 6) FROM lib": "SELECT region, ARRAY_AGG(tier ORDER BY tier), ARRAY_AGG(DISTINCT tier ORDER BY tier), " +
			"TOPK(balance, 2), TOPKDISTINCT(tier, 2), coalesce(jsonb_object_agg(tier, n) FILTER (WHERE tier IS NOT NULL), '{}'), round(CORR(balance, tier)::numeric, 6) " +
			"FROM (SELECT region, tier, balance, count(*) OVER (PARTITION BY region, tier) AS n FROM accounts) a GROUP BY region",
	}
	for create := range views {
		c.exec(create)
	}
	rng := rand.New(rand.NewPCG(7, 11))
	regions := []string{"eu", "us", "apac", "latam"}
	for round := range 16 {
		if round == 8 {
			waitTasks(t, n, 29)
			if err := n.Close(); err != nil {
				t.Fatal(err)
			}
			n = start()
			c.conn = connect(t, n.PGAddr())
			// Back in the group, the node holds its tasks again: 3
			// table partitions, 2+3+3+3+3 view partitions and 3+3+3+3
			// change stages.
			waitTasks(t, n, 29)
		}
		var vals []string
		for range 50 {
			tier := strconv.Itoa(rng.IntN(4))
			if rng.IntN(8) == 0 {
				tier = "NULL"
			}
			vals = append(vals, fmt.Sprintf("(%d, '%s', %s, %d)", rng.IntN(80), regions[rng.IntN(len(regions))], tier, rng.IntN(200)-60))
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
