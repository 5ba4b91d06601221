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

// TestTableJoinRecompute writes random upserts and deletes to two tables
// and keeps views of their inner, left, right and full joins on the key,
// an aggregate of a join, and inner and left joins on a foreign key (l's
// column f names r's rows; l and o are partitioned differently) over
// them. The node is closed and started
// again halfway. After every round, each view read by another session
// with the writes' position as its bound (basin.min_position, in both
// tables' topics) equals the join of the tables as they are then,
// computed here from their rows.
func TestTableJoinRecompute(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start, _ := restartable(t)
	n := start()
	c := sqlConn{t, ctx, connect(t, n.PGAddr())}
	c.exec("CREATE TABLE l (id BIGINT PRIMARY KEY, v BIGINT, g VARCHAR) WITH (partitions = 3)")
	c.exec("CREATE TABLE r (id BIGINT PRIMARY KEY, w BIGINT) WITH (partitions = 3)")
	c.exec("CREATE TABLE o (id BIGINT PRIMARY KEY, f BIGINT, x VARCHAR) WITH (partitions = 2)")
	c.exec("CREATE TABLE fk_inner AS SELECT o.id, o.x, r.id AS rid, r.w FROM o JOIN r ON o.f = r.id")
	c.exec("CREATE TABLE fk_left AS SELECT o.id, o.f, r.w FROM o LEFT JOIN r ON r.id = o.f + 1 WHERE o.x <> 'x'")
	// Aggregates of joins by other columns, through a change stage.
	c.exec("CREATE TABLE by_g AS SELECT l.g, COUNT(*) AS n, SUM(r.w) AS total FROM l LEFT JOIN r ON l.id = r.id GROUP BY l.g")
	c.exec("CREATE TABLE fk_by_x AS SELECT o.x, COUNT(*) AS n, SUM(r.w) AS total FROM o JOIN r ON o.f = r.id GROUP BY o.x")
	c.exec("CREATE TABLE inner_j AS SELECT l.id, l.v, r.w FROM l JOIN r ON l.id = r.id")
	c.exec("CREATE TABLE left_j AS SELECT l.id, l.v, r.w FROM l LEFT JOIN r ON r.id = l.id")
	c.exec("CREATE TABLE right_j AS SELECT r.id, l.v, r.w FROM l RIGHT JOIN r ON l.id = r.id")
	c.exec("CREATE TABLE full_j AS SELECT COALESCE(l.id, r.id) AS id, l.v, l.g, r.w FROM l FULL JOIN r ON l.id = r.id")
	c.exec("CREATE TABLE agg_j AS SELECT l.id, SUM(r.w) AS total, COUNT(*) AS n FROM l LEFT JOIN r ON l.id = r.id WHERE l.g <> 'x' GROUP BY l.id")
	// Joins with views on a side: a filtered view keyed as its table, an
	// aggregate re-keyed into other partitions, joined on the keys, as a
	// foreign key, with each other, and aggregated.
	c.exec("CREATE TABLE lv AS SELECT id, v, g FROM l WHERE g <> 'x'")
	c.exec("CREATE TABLE ofc AS SELECT f, COUNT(*) AS n FROM o WHERE f IS NOT NULL GROUP BY f")
	c.exec("CREATE TABLE vj_pk AS SELECT lv.id, lv.v, r.w FROM lv LEFT JOIN r ON lv.id = r.id")
	c.exec("CREATE TABLE vj_fk AS SELECT l.id, l.v, ofc.n FROM l LEFT JOIN ofc ON l.id = ofc.f")
	c.exec("CREATE TABLE vj_vv AS SELECT ofc.f, ofc.n, lv.v FROM ofc JOIN lv ON ofc.f = lv.id")
	c.exec("CREATE TABLE vj_self AS SELECT o.id, o.f, ofc.n FROM o JOIN ofc ON o.f = ofc.f")
	c.exec("CREATE TABLE vj_agg AS SELECT lv.g, SUM(ofc.n) AS total, COUNT(*) AS n FROM lv JOIN ofc ON lv.id = ofc.f GROUP BY lv.g")
	// A FULL JOIN of tables partitioned apart, and chains of three and
	// four relations: foreign keys in a row, keys with a FULL JOIN of
	// tables partitioned apart last, and an aggregate of a chain.
	c.exec("CREATE TABLE full_apart AS SELECT COALESCE(l.id, o.id) AS id, l.v, o.x FROM l FULL JOIN o ON l.id = o.id")
	c.exec("CREATE TABLE chain3 AS SELECT o.id, r.w, l.v FROM o JOIN r ON o.f = r.id LEFT JOIN l ON o.f = l.id")
	c.exec("CREATE TABLE chain_pk AS SELECT COALESCE(l.id, o.id) AS id, l.v, r.w, o.x FROM l LEFT JOIN r ON l.id = r.id FULL JOIN o ON l.id = o.id")
	c.exec("CREATE TABLE chain_by_g AS SELECT l.g, COUNT(*) AS n FROM o JOIN r ON o.f = r.id JOIN l ON o.f = l.id JOIN lv ON l.id = lv.id GROUP BY l.g")
	read := sqlConn{t, ctx, connect(t, n.PGAddr())}
	rng := rand.New(rand.NewPCG(3, 5))
	groups := []string{"a", "b", "x"}
	for round := range 12 {
		if round == 6 {
			// 3+3+2 table partitions, 6×3+3×2 view partitions, as many
			// join stages, and 3+2 change stages; over views, 3+2+3+3+2+3
			// +2 view partitions, 3+3+2+3+2 join stages and 2+3 change
			// stages; 6 for full_apart, 6 and 9 for the chains, 10 for
			// the chain's aggregate.
			waitTasks(t, n, 61+18+13+5+6+6+9+10)
			if err := n.Close(); err != nil {
				t.Fatal(err)
			}
			n = start()
			c.conn, read.conn = connect(t, n.PGAddr()), connect(t, n.PGAddr())
			waitTasks(t, n, 61+18+13+5+6+6+9+10)
		}
		var lv, rv, ov []string
		for range 40 {
			f := fmt.Sprint(rng.IntN(70))
			if rng.IntN(10) == 0 {
				f = "NULL"
			}
			ov = append(ov, fmt.Sprintf("(%d, %s, '%s')", rng.IntN(50), f, groups[rng.IntN(len(groups))]))
			v := fmt.Sprint(rng.IntN(100))
			if rng.IntN(8) == 0 {
				v = "NULL"
			}
			lv = append(lv, fmt.Sprintf("(%d, %s, '%s')", rng.IntN(60), v, groups[rng.IntN(len(groups))]))
			rv = append(rv, fmt.Sprintf("(%d, %d)", rng.IntN(60), rng.IntN(100)))
		}
		c.exec("INSERT INTO l VALUES " + strings.Join(lv, ", "))
		c.exec("INSERT INTO r VALUES " + strings.Join(rv, ", "))
		c.exec("INSERT INTO o VALUES " + strings.Join(ov, ", "))
		for range 8 {
			c.exec(fmt.Sprintf("DELETE FROM o WHERE id = %d", rng.IntN(50)))
			c.exec(fmt.Sprintf("DELETE FROM l WHERE id = %d", rng.IntN(60)))
			c.exec(fmt.Sprintf("DELETE FROM r WHERE id = %d", rng.IntN(60)))
		}
		var pos string
		if err := c.conn.QueryRow(ctx, "SHOW basin.last_write_position").Scan(&pos); err != nil {
			t.Fatal(err)
		}
		read.exec(fmt.Sprintf("SET basin.min_position = '%s'", pos))
		ls, rs := map[string][]string{}, map[string]string{}
		for _, row := range c.rows("SELECT id, v, g FROM l") {
			f := strings.Fields(row)
			ls[f[0]] = f[1:]
		}
		for _, row := range c.rows("SELECT id, w FROM r") {
			f := strings.Fields(row)
			rs[f[0]] = f[1]
		}
		os := map[string][]string{}
		for _, row := range c.rows("SELECT id, f, x FROM o") {
			f := strings.Fields(row)
			os[f[0]] = f[1:]
		}
		want := map[string][]string{}
		add := func(view string, vals ...string) { want[view] = append(want[view], strings.Join(vals, " ")) }
		for id, lr := range ls {
			w, ok := rs[id]
			if !ok {
				w = "<nil>"
			}
			if ok {
				add("inner_j", id, lr[0], w)
			}
			add("left_j", id, lr[0], w)
			add("full_j", id, lr[0], lr[1], w)
			if lr[1] != "x" {
				add("agg_j", id, w, "1")
			}
		}
		for id, w := range rs {
			lr, ok := ls[id]
			v := "<nil>"
			if ok {
				v = lr[0]
			}
			add("right_j", id, v, w)
			if !ok {
				add("full_j", id, "<nil>", "<nil>", w)
			}
		}
		for id, or := range os {
			if w, ok := rs[or[0]]; ok {
				add("fk_inner", id, or[1], or[0], w)
			}
			if or[1] == "x" {
				continue
			}
			w, next := "<nil>", "<nil>"
			if or[0] != "<nil>" {
				var f int
				fmt.Sscan(or[0], &f)
				next = fmt.Sprint(f + 1)
			}
			if rw, ok := rs[next]; ok {
				w = rw
			}
			add("fk_left", id, or[0], w)
		}
		type agg struct {
			n     int
			total int
			sum   bool
		}
		groupsOf := func(view string, m map[string]*agg) {
			for g, a := range m {
				total := "<nil>"
				if a.sum {
					total = fmt.Sprint(a.total)
				}
				add(view, g, fmt.Sprint(a.n), total)
			}
		}
		byG, byX := map[string]*agg{}, map[string]*agg{}
		for id, lr := range ls {
			a := byG[lr[1]]
			if a == nil {
				a = &agg{}
				byG[lr[1]] = a
			}
			a.n++
			if w, ok := rs[id]; ok {
				var v int
				fmt.Sscan(w, &v)
				a.total, a.sum = a.total+v, true
			}
		}
		for _, or := range os {
			w, ok := rs[or[0]]
			if !ok {
				continue
			}
			a := byX[or[1]]
			if a == nil {
				a = &agg{}
				byX[or[1]] = a
			}
			var v int
			fmt.Sscan(w, &v)
			a.n, a.total, a.sum = a.n+1, a.total+v, true
		}
		// The views' rows, and their joins.
		ofc := map[string]int{}
		for _, or := range os {
			if or[0] != "<nil>" {
				ofc[or[0]]++
			}
		}
		lvs := map[string][]string{}
		for id, lr := range ls {
			if lr[1] != "x" {
				lvs[id] = lr
			}
		}
		for id, lr := range lvs {
			w, ok := rs[id]
			if !ok {
				w = "<nil>"
			}
			add("vj_pk", id, lr[0], w)
		}
		for id, lr := range ls {
			cnt := "<nil>"
			if k, ok := ofc[id]; ok {
				cnt = fmt.Sprint(k)
			}
			add("vj_fk", id, lr[0], cnt)
		}
		for id, or := range os {
			if k, ok := ofc[or[0]]; ok {
				add("vj_self", id, or[0], fmt.Sprint(k))
			}
		}
		ids := map[string]bool{}
		for id := range ls {
			ids[id] = true
		}
		for id := range os {
			ids[id] = true
		}
		for id := range ids {
			v, x, w := "<nil>", "<nil>", "<nil>"
			if lr, ok := ls[id]; ok {
				v = lr[0]
				if rw, ok := rs[id]; ok {
					w = rw
				}
			}
			if or, ok := os[id]; ok {
				x = or[1]
			}
			add("full_apart", id, v, x)
			add("chain_pk", id, v, w, x)
		}
		byChainG := map[string]int{}
		for id, or := range os {
			w, ok := rs[or[0]]
			if !ok {
				continue
			}
			v := "<nil>"
			if lr, ok := ls[or[0]]; ok {
				v = lr[0]
				if _, ok := lvs[or[0]]; ok {
					byChainG[lr[1]]++
				}
			}
			add("chain3", id, w, v)
		}
		for g, k := range byChainG {
			add("chain_by_g", g, fmt.Sprint(k))
		}
		byLvG := map[string]*agg{}
		for f, k := range ofc {
			lr, ok := lvs[f]
			if !ok {
				continue
			}
			add("vj_vv", f, fmt.Sprint(k), lr[0])
			a := byLvG[lr[1]]
			if a == nil {
				a = &agg{}
				byLvG[lr[1]] = a
			}
			a.n, a.total, a.sum = a.n+1, a.total+k, true
		}
		for g, a := range byLvG {
			add("vj_agg", g, fmt.Sprint(a.total), fmt.Sprint(a.n))
		}
		groupsOf("by_g", byG)
		groupsOf("fk_by_x", byX)
		for view, q := range map[string]string{
			"by_g": "SELECT g, n, total FROM by_g", "fk_by_x": "SELECT x, n, total FROM fk_by_x",
			"fk_inner": "SELECT id, x, rid, w FROM fk_inner", "fk_left": "SELECT id, f, w FROM fk_left",
			"inner_j": "SELECT id, v, w FROM inner_j", "left_j": "SELECT id, v, w FROM left_j", "right_j": "SELECT id, v, w FROM right_j",
			"full_j": "SELECT id, v, g, w FROM full_j", "agg_j": "SELECT id, total, n FROM agg_j",
			"vj_pk": "SELECT id, v, w FROM vj_pk", "vj_fk": "SELECT id, v, n FROM vj_fk", "vj_vv": "SELECT f, n, v FROM vj_vv",
			"vj_agg": "SELECT g, total, n FROM vj_agg", "vj_self": "SELECT id, f, n FROM vj_self",
			"full_apart": "SELECT id, v, x FROM full_apart", "chain3": "SELECT id, w, v FROM chain3",
			"chain_pk": "SELECT id, v, w, x FROM chain_pk", "chain_by_g": "SELECT g, n FROM chain_by_g",
		} {
			got, w := read.rows(q), want[view]
			slices.Sort(w)
			if !slices.Equal(got, w) {
				t.Fatalf("round %d: %s has %d rows, the join of the tables %d: %s", round, view, len(got), len(w), firstDiff(got, w))
			}
		}
	}
}
