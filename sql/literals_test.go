package sql

import (
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"

	"github.com/basindb/basin/internal/pgerr"
)

// parseWithFold parses text with runs of constants folded from the
// given number of tokens on (1: every run; a huge number: none, the
// parse every statement had before folding).
func parseWithFold(text string, tokens int) ([]Parsed, error) {
	defer func(old int) { runFoldTokens = old }(runFoldTokens)
	runFoldTokens = tokens
	return ParseStatements(text)
}

const noFold = 1 << 40

// hasRun reports whether lexing text folds a run.
func hasRun(text string) bool {
	defer func(old int) { runFoldTokens = old }(runFoldTokens)
	runFoldTokens = 1
	toks, err := lex(text)
	if err != nil {
		return false
	}
	for _, t := range toks {
		if t.kind == tokLiterals || t.kind == tokRows {
			return true
		}
	}
	return false
}

// sameParse checks that text parses to the same statements, or fails
// with the same error, folded and unfolded.
func sameParse(t *testing.T, text string) {
	t.Helper()
	want, werr := parseWithFold(text, noFold)
	got, gerr := parseWithFold(text, 1)
	if (werr == nil) != (gerr == nil) {
		t.Fatalf("%q:\nunfolded: %v\nfolded:   %v", text, werr, gerr)
	}
	if werr != nil {
		we, _ := pgerr.As(werr)
		ge, _ := pgerr.As(gerr)
		if we == nil || ge == nil || *we != *ge {
			t.Fatalf("%q:\nunfolded error: %#v\nfolded error:   %#v", text, we, ge)
		}
		return
	}
	if !reflect.DeepEqual(want, got) {
		var w, g strings.Builder
		for _, p := range want {
			w.WriteString(Format(p.Stmt) + "\n" + formatPositions(p.Stmt))
		}
		for _, p := range got {
			g.WriteString(Format(p.Stmt) + "\n" + formatPositions(p.Stmt))
		}
		t.Fatalf("%q:\nunfolded: %s\nfolded:   %s", text, w.String(), g.String())
	}
}

// randConstant is a constant in one of the spellings a run may hold.
func randConstant(r *rand.Rand) string {
	switch r.Intn(22) {
	case 0:
		return fmt.Sprint(r.Int63())
	case 1:
		return fmt.Sprint(r.Intn(1000))
	case 2:
		return "-" + fmt.Sprint(r.Intn(1000))
	case 3:
		return "- " + fmt.Sprint(r.Int63())
	case 4:
		return "9223372036854775808" // beyond int64: a double
	case 5:
		return "-9223372036854775807"
	case 6:
		return []string{"007", "0x1F", "0o17", "0b101", "1_000", "0"}[r.Intn(6)]
	case 7:
		return fmt.Sprintf("%d.%d", r.Intn(100), r.Intn(1000))
	case 8:
		return []string{".5", "1e10", "1.5E-3", "-2.25", "1e300", "0.1", "123456789.123456789", "-0.0", "1e-7"}[r.Intn(9)]
	case 9:
		return fmt.Sprintf("%g", r.NormFloat64()*1e6)
	case 10:
		return "'" + randWord(r) + "'"
	case 11:
		return "'it''s " + randWord(r) + "'"
	case 12:
		return []string{`E'a\nb'`, `E'\x41\u00e9\''`, `e'\\'`, `E'\101'`}[r.Intn(4)]
	case 13:
		return []string{"$$x'y$$", "$t$a$$b$t$", "N'nat'", "'a'\n'b'", "''", "'é ü'"}[r.Intn(6)]
	case 14:
		return []string{"NULL", "null", "TRUE", "false", "True"}[r.Intn(5)]
	case 15:
		return "'" + randWord(r) + "' /* c */"
	case 16:
		return "-- c\n" + fmt.Sprint(r.Intn(10))
	default:
		return fmt.Sprint(r.Intn(100000))
	}
}

// randItem is an IN list item: mostly constants, sometimes something
// that must keep the list out of the fast path.
func randItem(r *rand.Rand, plain bool) string {
	if plain || r.Intn(30) != 0 {
		return randConstant(r)
	}
	return []string{"2+3", "$1", "x", "'a'::text", "(1)", "-'a'", "+1", "- -1", "CAST(1 AS int)",
		"date '2020-01-01'", "1 'a'", "1 2", "", "count(*)", "ARRAY[1]", "x IN (1, 2)", "NOT TRUE",
		"(SELECT 1)", "1;", "-", "'a' || 'b'", "1)", "(2", "1 IN (2)", "TRUE AND FALSE"}[r.Intn(25)]
}

func randWord(r *rand.Rand) string {
	const letters = "abcxyz IN(,)'-"
	n := r.Intn(6)
	var b strings.Builder
	for range n {
		c := letters[r.Intn(len(letters))]
		if c == '\'' {
			b.WriteString("''")
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

func randList(r *rand.Rand, plain bool) string {
	n := 1 + r.Intn(8)
	if r.Intn(4) == 0 {
		n += r.Intn(200)
	}
	items := make([]string, n)
	for k := range items {
		items[k] = randItem(r, plain)
	}
	sep := []string{", ", ",", " , ", ",\n", ", /* x, y */ "}[r.Intn(5)]
	return strings.Join(items, sep)
}

func randRows(r *rand.Rand, plain bool) string {
	n := 1 + r.Intn(6)
	if r.Intn(4) == 0 {
		n += r.Intn(100)
	}
	width := 1 + r.Intn(3)
	rows := make([]string, n)
	for k := range rows {
		w := width
		if !plain && r.Intn(40) == 0 {
			w = r.Intn(5) // a row of another width, or an empty one
		}
		items := make([]string, w)
		for m := range items {
			items[m] = randItem(r, plain)
		}
		rows[k] = "(" + strings.Join(items, ", ") + ")"
	}
	return strings.Join(rows, ", ")
}

// foldContexts are statements with %L for a list's items and %R for
// rows; the first ones fold when the list is plain.
var foldContexts = []string{
	"SELECT * FROM t WHERE k IN (%L)",
	"SELECT * FROM t WHERE k NOT IN (%L) ORDER BY k LIMIT 3",
	"select k in (%L) as b, v FROM t",
	"SELECT * FROM t WHERE k IN (%L) AND v IN (%L) OR k IN(%L)",
	"SELECT * FROM t WHERE k IN ( %L )",
	"INSERT INTO t VALUES %R",
	"INSERT INTO t (a, b) VALUES %R",
	"INSERT INTO t (a) VALUES %R RETURNING _position",
	"INSERT INTO t VALUES %R; SELECT * FROM t WHERE k IN (%L)",
	"SELECT * FROM t WHERE k IN (%L) GROUP BY k IN (%L)",
	"EXPLAIN SELECT * FROM t WHERE k IN (%L)",
	"CREATE TABLE v AS SELECT * FROM t WHERE k IN (%L)",
	"SELECT CASE WHEN k IN (%L) THEN 1 END FROM t",
	"SELECT * FROM t WHERE k IN (%L)::text",
	"SELECT * FROM t WHERE (k IN (%L)) IS NULL",
	"SELECT * FROM t WHERE k IN (%L) junk here",
	"SELECT * FROM t WHERE k IN (%L",
	"SELECT * FROM t WHERE k IN (%L) )",
	"SELECT * FROM t WHERE k IN (%L) 'x'",
	"INSERT INTO t VALUES %R junk",
	"INSERT INTO t VALUES %R,",
	"INSERT INTO t VALUES %R ON CONFLICT DO NOTHING",
	"INSERT INTO t VALUES %R RETURNING k",
	"INSERT INTO t VALUES %R, (1+1)",
	"INSERT INTO t (a, b, c, d, e, f) VALUES %R",
	"INSERT INTO t VALUES %R.x",
	"INSERT INTO t VALUES %R::text",
	// Contexts where "in (" or VALUES is no list or rows to fold.
	"SELECT in (%L)",
	"SELECT t.in (%L) FROM t",
	"SELECT 1 AS in (%L)",
	"SET x = in (%L)",
	"SET x TO %L",
	"SHOW x in (%L)",
	"DROP TABLE in (%L)",
	"SELECT position('a' in (%L))",
	"SELECT trim(both in (%L))",
	"SELECT substring('x' from in (%L))",
	"CREATE TABLE c (a int CHECK (a IN (%L)), b int)",
	"CREATE STREAM s (a int DEFAULT 1 IN (%L)) WITH (kafka_topic = 's')",
	"SELECT * FROM (VALUES %R) v",
	"INSERT INTO t SELECT * FROM (VALUES %R) v",
	"INSERT INTO t VALUES %R UNION SELECT 1",
	"VALUES %R",
	"SELECT * FROM t WHERE k = ANY (%L)",
	"SELECT f(%L) FROM t",
	"SELECT ARRAY[%L]",
	"SELECT 'k IN (%L)' FROM t",
	"SELECT 1 /* k IN (%L) */, 2 -- IN (1, 2)\n",
	"SELECT * FROM t WHERE k IN (%L) IN (%L)",
	"SELECT * FROM t WHERE k IN ((%L))",
	"SELECT * FROM t WHERE k IN (SELECT %L)",
	"SELECT * FROM t WHERE k IN (%L) = TRUE",
	"INSERT INTO in VALUES %R",
	"insert into t values %R returning _position",
	"INSERT INTO t VALUES %R; INSERT INTO t VALUES %R",
	"SELECT * FROM t WHERE k IN (%L); SELECT $1 IN (%L)",
}

func fillContext(r *rand.Rand, ctx string, plain bool) string {
	var b strings.Builder
	for {
		k := strings.IndexByte(ctx, '%')
		if k < 0 || k+1 >= len(ctx) {
			b.WriteString(ctx)
			return b.String()
		}
		b.WriteString(ctx[:k])
		switch ctx[k+1] {
		case 'L':
			b.WriteString(randList(r, plain))
		case 'R':
			b.WriteString(randRows(r, plain))
		}
		ctx = ctx[k+2:]
	}
}

// TestFoldedRunsParseAsBefore checks that folding runs of constants
// changes nothing a parse returns: random IN lists and VALUES rows, in
// contexts that fold and contexts that must not, parse to the same
// statements or fail with the same error (code, message, position)
// folded and unfolded.
func TestFoldedRunsParseAsBefore(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	folded := 0
	const n = 6000
	for i := range n {
		ctx := foldContexts[r.Intn(len(foldContexts))]
		text := fillContext(r, ctx, i%2 == 0)
		if hasRun(text) {
			folded++
		}
		sameParse(t, text)
	}
	if folded < n/4 {
		t.Fatalf("only %d of %d statements folded a run", folded, n)
	}
}

// TestFoldedRunsShapeAsBefore checks that ShapeOf, which folds runs as
// the parser does, returns the same shapes folded and unfolded.
func TestFoldedRunsShapeAsBefore(t *testing.T) {
	shape := func(text string, tokens int) (Shape, bool) {
		defer func(old int) { runFoldTokens = old }(runFoldTokens)
		runFoldTokens = tokens
		return ShapeOf(text)
	}
	r := rand.New(rand.NewSource(2))
	for i := range 3000 {
		text := fillContext(r, foldContexts[r.Intn(len(foldContexts))], i%2 == 0)
		want, wok := shape(text, noFold)
		got, gok := shape(text, 1)
		if wok != gok || !reflect.DeepEqual(want, got) {
			t.Fatalf("%q:\nunfolded: %v %#v\nfolded:   %v %#v", text, wok, want, gok, got)
		}
	}
}

// TestShapeOfParameterBound checks that a statement with more constants
// to lift than a statement may have parameters has no shape.
func TestShapeOfParameterBound(t *testing.T) {
	list := func(n int) string {
		var b strings.Builder
		b.WriteString("SELECT * FROM t WHERE k IN (")
		for k := range n {
			if k > 0 {
				b.WriteString(", ")
			}
			fmt.Fprint(&b, k)
		}
		return b.String() + ")"
	}
	if sh, ok := ShapeOf(list(maxParams)); !ok || len(sh.Args) != maxParams {
		t.Errorf("%d constants: ok %v, %d arguments", maxParams, ok, len(sh.Args))
	}
	if _, ok := ShapeOf(list(maxParams + 1)); ok {
		t.Errorf("%d constants: has a shape", maxParams+1)
	}
}

// TestFoldedRunsFixed checks folding against the plain parse on
// statements picked by hand, and that the plain lists among them fold.
func TestFoldedRunsFixed(t *testing.T) {
	for _, c := range []struct {
		text string
		fold bool
	}{
		{"SELECT * FROM t WHERE k IN (1, -2, 3.5, 'a''b', E'\\n', NULL, TRUE, false, $$x$$)", true},
		{"SELECT * FROM t WHERE k IN (1, /* two */ 2, -- three\n 3)", true},
		{"SELECT * FROM t WHERE k IN (1, 2+3)", false},
		{"SELECT * FROM t WHERE k IN ($1, $2)", false},
		{"SELECT * FROM t WHERE k IN (SELECT k FROM u)", false},
		{"SELECT * FROM t WHERE k IN (1, 2, 3) AND v IN (4, 5) ORDER BY k", true},
		{"SELECT 'k IN (1, 2, 3)', k FROM t -- k IN (1, 2)", false},
		{"SELECT /* k IN (1, 2, 3) */ k FROM t", false},
		{"SELECT * FROM t WHERE k IN (1, 2, 3) garbage", true},
		{"SELECT * FROM t WHERE k IN (1, 2, 3", false},
		{"INSERT INTO t (k, v) VALUES (1, 'a'), (-2, NULL), (3, E'c')", true},
		{"INSERT INTO t (k) VALUES (1, 'a'), (2, 'b')", true},
		{"INSERT INTO t VALUES (1, 'a'), (2)", true},
		{"INSERT INTO t VALUES (1), (2) RETURNING _position", true},
		{"INSERT INTO t VALUES (1), (2) RETURNING k", true},
		{"INSERT INTO t VALUES (1), (2), (3 + 4)", false},
		{"INSERT INTO t VALUES (1), (2) garbage", false},
		{"SELECT * FROM (VALUES (1), (2)) v", false},
		{"SELECT 1 AS in (1, 2)", false},
		{"SELECT t.in (1, 2) FROM t", false},
		{"SHOW x in (1, 2)", true},
		{"SET x = in (1, 2)", true},
	} {
		if got := hasRun(c.text); got != c.fold {
			t.Errorf("%q: folds %v, want %v", c.text, got, c.fold)
		}
		sameParse(t, c.text)
	}
}
