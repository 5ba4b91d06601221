package node

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestJSONModifyMatchesPostgres runs jsonb_set, jsonb_insert,
// jsonb_set_lax, jsonb_strip_nulls and json_strip_nulls over random
// documents, paths and values on basin and on PostgreSQL, and requires
// the same answer from both: the same text, or an error with the same
// SQLSTATE. Then a view of them over random records must hold the rows
// PostgreSQL computes over the same records.
func TestJSONModifyMatchesPostgres(t *testing.T) {
	semanticOnly(t)
	rng := rand.New(rand.NewPCG(uint64(testSeed(t, 20261204)), 2))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m := startPGMirror(t, ctx)

	answer := func(conn string, q string) string {
		c := m.basin
		if conn == "pg" {
			c = m.pg
		}
		rows, err := diffRows(ctx, c, q, true)
		if pe := (*pgconn.PgError)(nil); errors.As(err, &pe) {
			return "ERROR " + pe.Code
		} else if err != nil {
			t.Fatalf("%s: %s: %v", conn, q, err)
		}
		return strings.Join(rows, "\n")
	}
	flags := []string{"", ", true", ", false", ", NULL"}
	treatments := []string{"", ", 'use_json_null'", ", 'delete_key'", ", 'return_target'", ", 'raise_exception'", ", 'other'"}
	var kinds [6]int // answers compared, by function
	for i := range 300 {
		doc, path := randJSON(rng, 0, true), randPath(rng)
		val := "'" + randJSON(rng, 1, false) + "'"
		if rng.IntN(8) == 0 {
			val = "NULL"
		}
		flag := flags[rng.IntN(len(flags))]
		qs := []string{
			fmt.Sprintf("SELECT jsonb_set('%s', '%s', %s%s)", doc, path, val, flag),
			fmt.Sprintf("SELECT jsonb_insert('%s', '%s', %s%s)", doc, path, val, flag),
			fmt.Sprintf("SELECT jsonb_set_lax('%s', '%s', %s%s%s)", doc, path, val, cmpOr(flag, ", true"), treatments[rng.IntN(len(treatments))]),
			fmt.Sprintf("SELECT jsonb_strip_nulls('%s')", doc),
			fmt.Sprintf("SELECT json_strip_nulls('%s')", strings.ReplaceAll(doc, ", ", " ,  ")),
			fmt.Sprintf("SELECT '%s'::jsonb #- '%s'", doc, path),
		}
		for k, q := range qs {
			got, want := answer("basin", q), answer("pg", q)
			if got != want {
				t.Fatalf("case %d: %s\nbasin:      %s\nPostgreSQL: %s", i, q, got, want)
			}
			kinds[k]++
		}
	}
	t.Logf("answers compared: %v", kinds)

	// A view: every record's document with a value set, one inserted and
	// its nulls stripped. (The documents are objects with keys a and b,
	// so that no path fails in either.)
	m.b().exec("CREATE STREAM jdocs (id BIGINT KEY, doc JSONB, v JSONB) WITH (partitions = 2)")
	m.p().exec("CREATE TABLE jdocs (id BIGINT, doc JSONB, v JSONB)")
	const q = "SELECT id, jsonb_set(doc, '{a,0}', v) AS s, jsonb_insert(doc, '{b,-1}', v, true) AS i, jsonb_strip_nulls(doc) AS n FROM jdocs"
	m.b().exec("CREATE TABLE jview AS " + q)
	var rows []string
	for id := range 200 {
		doc := fmt.Sprintf(`{"a": %s, "b": %s, "c": %s}`, randJSON(rng, 1, false), randJSON(rng, 1, false), randJSON(rng, 1, false))
		v := randJSON(rng, 1, false)
		for v == "null" { // a JSON null column is NULL in a JSON record
			v = randJSON(rng, 1, false)
		}
		rows = append(rows, fmt.Sprintf("(%d, '%s', '%s')", id, doc, v))
	}
	m.insert("jdocs", rows)
	m.mirrorView("jview", q, "id BIGINT, s JSONB, i JSONB, n JSONB", 30*time.Second)
}

func cmpOr(s, or string) string {
	if s == "" {
		return or
	}
	return s
}

// randJSON returns a random JSON text; top, an object or an array.
// Its keys never exist twice in an object and it holds no quote, so it
// goes into SQL in single quotes as it is.
func randJSON(rng *rand.Rand, depth int, top bool) string {
	kind := rng.IntN(8)
	if top {
		kind = 6 + rng.IntN(2)
	} else if depth >= 3 {
		kind = rng.IntN(6)
	}
	switch kind {
	case 0:
		return "null"
	case 1:
		return []string{"true", "false"}[rng.IntN(2)]
	case 2:
		return fmt.Sprint(rng.IntN(200) - 100)
	case 3:
		return []string{"1.50", "-0.0", "2e3", "0.1"}[rng.IntN(4)]
	case 4, 5:
		return []string{`"s"`, `"é"`, `"a\nb"`, `""`, `"0"`}[rng.IntN(5)]
	case 6:
		elems := make([]string, rng.IntN(4))
		for i := range elems {
			elems[i] = randJSON(rng, depth+1, false)
		}
		return "[" + strings.Join(elems, ", ") + "]"
	}
	keys := []string{"a", "b", "c", "0", "1", "long key"}
	rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	members := make([]string, rng.IntN(4))
	for i := range members {
		members[i] = fmt.Sprintf(`"%s": %s`, keys[i], randJSON(rng, depth+1, false))
	}
	return "{" + strings.Join(members, ", ") + "}"
}

// randPath returns a random text[] literal of up to three steps: keys,
// indexes in and out of range, text that is not an index, NULL.
func randPath(rng *rand.Rand) string {
	steps := []string{"a", "b", "c", "0", "1", "-1", "-5", "5", "x", `" 1"`, "NULL", `"long key"`}
	path := make([]string, rng.IntN(4))
	for i := range path {
		path[i] = steps[rng.IntN(len(steps))]
		if path[i] == "NULL" && rng.IntN(3) != 0 {
			path[i] = "0"
		}
	}
	return "{" + strings.Join(path, ",") + "}"
}
