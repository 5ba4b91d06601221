package node

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestDifferentialPostgres checks basin's pull queries against
// PostgreSQL's answers over the same rows. Random records go into a
// basin stream and table (NULLs, keys that join nothing, times across
// two days); the views over them are read back, and PostgreSQL gets
// tables of the same records and of the views' rows (the views are
// checked first: each equals its SQL run by PostgreSQL over the
// records). Then some hundreds of queries generated from templates —
// joins of every kind (LATERAL too), subqueries, CTEs (recursive too), set operations, window
// functions, grouping (grouping sets too), DISTINCT and DISTINCT ON, CASE, LIKE, date_trunc and EXTRACT,
// NULL ordering — must give the same rows in both (in order when the
// query orders them totally). -seed replays or explores (0: a fixed
// seed).
func TestDifferentialPostgres(t *testing.T) {
	semanticOnly(t)
	rng := rand.New(rand.NewPCG(uint64(testSeed(t, 20261203)), 1))
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	m := startPGMirror(t, ctx)
	bconn, pconn := m.basin, m.pg
	b, p := m.b(), m.p()

	b.exec("CREATE STREAM ev (id BIGINT KEY, grp VARCHAR, cat VARCHAR, v BIGINT, at TIMESTAMP) WITH (partitions = 3)")
	b.exec("CREATE TABLE dim (grp VARCHAR PRIMARY KEY, label VARCHAR, weight BIGINT) WITH (partitions = 2)")
	views := map[string]string{
		"per_grp": "SELECT grp, COUNT(*) AS n, SUM(v) AS sv, MIN(v) AS lo, MAX(v) AS hi FROM ev GROUP BY grp",
		"per_cat": "SELECT cat, grp, COUNT(*) AS n, COUNT(v) AS nv FROM ev GROUP BY cat, grp",
		"hourly":  "SELECT date_trunc('hour', at) AS hour, COUNT(*) AS n, SUM(v) AS sv FROM ev GROUP BY date_trunc('hour', at)",
	}
	// PostgreSQL's tables of the views' rows have basin's column types
	// (its SUM of BIGINT is numeric; basin's is BIGINT).
	viewTables := map[string]string{
		"per_grp": "grp TEXT, n BIGINT, sv BIGINT, lo BIGINT, hi BIGINT",
		"per_cat": "cat TEXT, grp TEXT, n BIGINT, nv BIGINT",
		"hourly":  "hour TIMESTAMP, n BIGINT, sv BIGINT",
	}
	for name, q := range views {
		b.exec(fmt.Sprintf("CREATE TABLE %s AS %s", name, q))
	}
	p.exec("CREATE TABLE ev (id BIGINT PRIMARY KEY, grp TEXT, cat TEXT, v BIGINT, at TIMESTAMP)")
	p.exec("CREATE TABLE dim (grp TEXT PRIMARY KEY, label TEXT, weight BIGINT)")

	maybe := func(pNull float64, s string) string {
		if rng.Float64() < pNull {
			return "NULL"
		}
		return s
	}
	base := time.Date(2026, 3, 14, 0, 0, 0, 0, time.UTC)
	var rows []string
	for id := range 400 {
		at := base.Add(time.Duration(rng.Int64N(int64(48 * time.Hour)))).Truncate(time.Millisecond)
		rows = append(rows, fmt.Sprintf("(%d, %s, %s, %s, '%s')", id,
			maybe(0.05, fmt.Sprintf("'g%d'", rng.IntN(8))), maybe(0.1, fmt.Sprintf("'c%d'", rng.IntN(4))),
			maybe(0.1, fmt.Sprint(rng.IntN(100))), at.Format("2006-01-02 15:04:05.000")))
	}
	m.insert("ev", rows)
	var dims []string
	for g := range 6 { // g6 and g7 have no row
		dims = append(dims, fmt.Sprintf("('g%d', %s, %s)", g, maybe(0.2, fmt.Sprintf("'label %c'", 'a'+rune(rng.IntN(3)))),
			maybe(0.1, fmt.Sprint(rng.IntN(10)))))
	}
	m.insert("dim", dims)

	// The views' rows, read with the session's own writes as the bound,
	// become PostgreSQL tables; each must be its SQL over the records.
	for name, q := range views {
		m.mirrorView(name, q, viewTables[name], 0)
	}

	g := func() string { return fmt.Sprintf("'g%d'", rng.IntN(9)) }
	c := func() string { return fmt.Sprintf("'c%d'", rng.IntN(5)) }
	num := func(n int) string { return fmt.Sprint(rng.IntN(n)) }
	unit := func() string { return []string{"'hour'", "'day'", "'minute'", "'week'", "'month'"}[rng.IntN(5)] }
	field := func() string {
		return []string{"hour", "day", "dow", "doy", "minute", "month", "year", "isodow"}[rng.IntN(8)]
	}
	join := func() string { return []string{"JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN"}[rng.IntN(4)] }
	templates := []func() (q string, ordered bool){
		func() (string, bool) {
			return fmt.Sprintf("SELECT p.grp, p.n, d.grp, d.label FROM per_grp p %s dim d ON d.grp = p.grp WHERE p.n > %s OR d.weight > %s", join(), num(60), num(10)), false
		},
		func() (string, bool) {
			return fmt.Sprintf("SELECT d.label, SUM(p.sv), COUNT(*), MAX(p.hi) FROM per_grp p %s dim d ON d.grp = p.grp GROUP BY d.label", join()), false
		},
		func() (string, bool) {
			return fmt.Sprintf("SELECT grp, sv, rank() OVER (ORDER BY sv DESC NULLS LAST), row_number() OVER (ORDER BY grp NULLS FIRST) FROM per_grp WHERE n > %s ORDER BY grp NULLS FIRST", num(50)), true
		},
		func() (string, bool) {
			return fmt.Sprintf("SELECT cat, grp, n, dense_rank() OVER (PARTITION BY cat ORDER BY n DESC, grp) FROM per_cat WHERE cat IS NOT NULL AND grp IS NOT NULL AND n >= %s", num(10)), false
		},
		func() (string, bool) {
			return fmt.Sprintf("SELECT cat, COUNT(*), SUM(n), MIN(nv) FROM per_cat GROUP BY cat HAVING SUM(n) > %s", num(100)), false
		},
		func() (string, bool) {
			return fmt.Sprintf("SELECT grp FROM dim WHERE grp IN (SELECT grp FROM per_grp WHERE sv > %s) ORDER BY grp", num(3000)), true
		},
		func() (string, bool) {
			return fmt.Sprintf("SELECT d.grp, d.weight FROM dim d WHERE %s EXISTS (SELECT 1 FROM per_cat c WHERE c.grp = d.grp AND c.cat = %s AND c.n > %s)",
				[]string{"", "NOT"}[rng.IntN(2)], c(), num(15)), false
		},
		func() (string, bool) {
			return fmt.Sprintf("SELECT d.grp, (SELECT n FROM per_grp p WHERE p.grp = d.grp), (SELECT COUNT(*) FROM per_cat c WHERE c.grp = d.grp AND c.n > %s) FROM dim d", num(20)), false
		},
		func() (string, bool) {
			return fmt.Sprintf("WITH a AS (SELECT grp FROM per_grp WHERE n > %s) SELECT grp FROM a %s SELECT grp FROM dim WHERE weight > %s",
				num(60), []string{"UNION", "UNION ALL", "INTERSECT", "EXCEPT"}[rng.IntN(4)], num(10)), false
		},
		func() (string, bool) {
			return fmt.Sprintf("SELECT date_trunc(%s, hour) AS t, SUM(n), SUM(sv) FROM hourly GROUP BY 1 ORDER BY 1", unit()), true
		},
		func() (string, bool) {
			return fmt.Sprintf("SELECT extract(%s FROM at), COUNT(*), COUNT(v), SUM(v) FROM ev WHERE grp = %s GROUP BY 1", field(), g()), false
		},
		func() (string, bool) {
			return fmt.Sprintf("SELECT COUNT(v), COUNT(*), SUM(v), MIN(v), MAX(v), COUNT(DISTINCT cat) FROM ev WHERE grp = %s", g()), false
		},
		func() (string, bool) {
			return fmt.Sprintf("SELECT id, grp, v FROM ev WHERE cat = %s ORDER BY v %s, id LIMIT %s",
				c(), []string{"NULLS FIRST", "DESC NULLS LAST", "DESC", ""}[rng.IntN(4)], num(30)), true
		},
		func() (string, bool) {
			return fmt.Sprintf("SELECT DISTINCT cat, grp FROM ev WHERE v < %s", num(100)), false
		},
		func() (string, bool) {
			return fmt.Sprintf("SELECT cat, grp, COUNT(*), SUM(v), MAX(at), GROUPING(cat, grp) FROM ev WHERE v >= %s GROUP BY %s HAVING COUNT(*) > %s", num(50),
				[]string{"ROLLUP (cat, grp)", "CUBE (cat, grp)", "GROUPING SETS ((cat), (grp), ())", "cat, ROLLUP (grp)", "GROUPING SETS ((cat, grp), cat, ROLLUP (grp))"}[rng.IntN(5)], num(3)), false
		},
		func() (string, bool) {
			jn := [][2]string{{",", ""}, {"JOIN", "ON true"}, {"LEFT JOIN", "ON c.n > p.n / 10"}}[rng.IntN(3)]
			return fmt.Sprintf("SELECT p.grp, p.n, c.cat, c.n FROM per_grp p %s LATERAL (SELECT cat, n FROM per_cat c WHERE c.grp = p.grp AND c.n > %s ORDER BY n DESC, cat LIMIT %s) c %s",
				jn[0], num(20), fmt.Sprint(1+rng.IntN(3)), jn[1]), false
		},
		func() (string, bool) {
			return fmt.Sprintf("WITH RECURSIVE r(g, d, s) AS (SELECT grp, 0, weight FROM dim WHERE weight > %s UNION %s SELECT r.g, r.d + 1, r.s + p.n FROM r JOIN per_grp p ON p.grp = r.g WHERE r.d < %s) SELECT g, d, s FROM r",
				num(8), []string{"", "ALL"}[rng.IntN(2)], fmt.Sprint(1+rng.IntN(4))), false
		},
		func() (string, bool) {
			return fmt.Sprintf("SELECT DISTINCT ON (grp, cat) grp, cat, id, v FROM ev WHERE v < %s ORDER BY cat %s, grp, v %s, id",
				num(100), []string{"", "DESC", "NULLS FIRST"}[rng.IntN(3)], []string{"DESC NULLS LAST", "NULLS FIRST", ""}[rng.IntN(3)]), true
		},
		func() (string, bool) {
			return fmt.Sprintf("SELECT grp, COALESCE(label, 'none'), CASE WHEN weight > %s THEN 'big' WHEN weight IS NULL THEN 'unknown' ELSE 'small' END FROM dim", num(10)), false
		},
		func() (string, bool) {
			return fmt.Sprintf("SELECT grp, label FROM dim WHERE label LIKE '%%%c%%' OR grp = %s", 'a'+rune(rng.IntN(3)), g()), false
		},
		func() (string, bool) {
			return fmt.Sprintf("SELECT grp, sv / n, sv %% %s, n * %s - sv FROM per_grp WHERE n > 0 AND sv IS NOT NULL", fmt.Sprint(1+rng.IntN(9)), num(100)), false
		},
		func() (string, bool) {
			return fmt.Sprintf("SELECT s.grp, s.total FROM (SELECT grp, SUM(n) AS total FROM per_cat WHERE cat <> %s GROUP BY grp) s WHERE s.total > %s", c(), num(40)), false
		},
		func() (string, bool) {
			return fmt.Sprintf("SELECT p.grp, c.cat, c.n FROM per_grp p JOIN per_cat c ON c.grp = p.grp JOIN dim d ON d.grp = p.grp WHERE d.weight >= %s AND c.n > %s", num(10), num(20)), false
		},
		func() (string, bool) {
			return fmt.Sprintf("SELECT grp, n FROM per_grp WHERE grp = %s OR grp IN (%s, %s)", g(), g(), g()), false
		},
		// The functions dashboards use: aggregates with ORDER BY,
		// FILTER and WITHIN GROUP, string, math and time functions.
		func() (string, bool) {
			return fmt.Sprintf("SELECT grp, string_agg(cat, ',' ORDER BY cat DESC, id), count(*) FILTER (WHERE v > %s), percentile_disc(0.5) WITHIN GROUP (ORDER BY v), percentile_cont(0.%s) WITHIN GROUP (ORDER BY v::float8), mode() WITHIN GROUP (ORDER BY cat) FROM ev GROUP BY grp",
				num(100), num(10)), false
		},
		func() (string, bool) {
			return fmt.Sprintf("SELECT id, to_char(at, 'YYYY-MM-DD HH24:MI Dy FMMonth IW'), lpad(cat, %s, '*'), split_part(grp, 'g', 2), left(grp, 1) || right(cat, 1), initcap(grp || ' ' || cat), strpos(cat, '%s') FROM ev WHERE v < %s",
				num(6), num(4), num(30)), false
		},
		func() (string, bool) {
			return fmt.Sprintf("SELECT date_bin(interval '%s minutes', at, timestamp '2026-03-14'), count(*), array_agg(id ORDER BY id) FROM ev WHERE grp = %s GROUP BY 1", fmt.Sprint(5+rng.IntN(120)), g()), false
		},
		// corr and the covariances, rounded: the stream's partitions
		// are read in another order than PostgreSQL's rows, and a float
		// sum's last digits follow the order.
		func() (string, bool) {
			return fmt.Sprintf("SELECT grp, round(corr(v, id)::numeric, 9), round(covar_pop(v, id)::numeric, 4), round(covar_samp(id, v)::numeric, 4), round(corr(v, extract(hour from at))::numeric, 9) FROM ev WHERE cat <> %s GROUP BY grp", c()), false
		},
		func() (string, bool) {
			k := fmt.Sprint(1 + rng.IntN(9))
			return fmt.Sprintf("SELECT id, mod(v, %s), div(v, %s), power(v, 2), abs(v - 50), sign(v - 50), width_bucket(v, 0, 100, %s), gcd(v, %s) FROM ev WHERE grp = %s", k, k, k, k, g()), false
		},
	}
	const perTemplate = 15
	for i := range len(templates) * perTemplate {
		q, ordered := templates[i%len(templates)]()
		got, gerr := diffRows(ctx, bconn, q, ordered)
		want, werr := diffRows(ctx, pconn, q, ordered)
		if gerr != nil || werr != nil {
			t.Fatalf("query %d: %s\nbasin: %v\nPostgreSQL: %v", i, q, gerr, werr)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("query %d: %s\nbasin gave %d rows, PostgreSQL %d: %s", i, q, len(got), len(want), firstDiff(got, want))
		}
	}
}
