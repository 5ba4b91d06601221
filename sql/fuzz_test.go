package sql

import (
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/basindb/basin/internal/pgerr"
)

// FuzzParse checks that Parse never panics, that every error it returns
// carries a SQLSTATE other than XX000 and a position inside the text, and
// that every statement it returns survives a Format round trip and parses
// back from its own text, and that folding runs of constants (every run,
// however short) changes nothing it returns. Seeds are
// the committed corpus in testdata/fuzz/FuzzParse, every input of
// testdata/parse, and the statements below.
func FuzzParse(f *testing.F) {
	inputs, err := dataDrivenInputs("testdata/parse")
	if err != nil {
		f.Fatal(err)
	}
	for _, in := range inputs {
		f.Add(in)
	}
	for _, s := range []string{
		"SELECT * FROM revenue_by_region WHERE region = 'eu'",
		"SELECT a::int, \"Q\", $1, E'\\n' || 'x' FROM t ORDER BY a NULLS FIRST LIMIT 1 OFFSET 2",
		"CREATE STREAM s (k BIGINT KEY, v VARCHAR) WITH (kafka_topic = 's', partitions = 4)",
		"INSERT INTO s (k, v) VALUES (1, 'a'), (-2, NULL)",
		"SET basin.acceptable_offset_lag = 1000; SHOW ALL; -- ping",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		sameParse(t, text)
		stmts, err := ParseStatements(text)
		if err != nil {
			pe, ok := pgerr.As(err)
			if !ok {
				t.Fatalf("Parse(%q): error without SQLSTATE: %v", text, err)
			}
			if pe.Code == pgerr.InternalError || pe.Code == "" {
				t.Fatalf("Parse(%q): %s %v", text, pe.Code, pe)
			}
			if n := utf8.RuneCountInString(text); pe.Position < 0 || pe.Position > n+1 {
				t.Fatalf("Parse(%q): position %d outside 1..%d", text, pe.Position, n+1)
			}
			return
		}
		for _, p := range stmts {
			if err := checkStatement(p); err != nil {
				t.Fatalf("Parse(%q): %v", text, err)
			}
		}
	})
}

// dataDrivenInputs returns the inputs of the test cases in a datadriven
// file: the lines between a command line and its "----".
func dataDrivenInputs(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var inputs []string
	var cur []string
	in := false
	for _, line := range strings.Split(string(data), "\n") {
		switch {
		case !in && (strings.HasPrefix(line, "parse") || strings.HasPrefix(line, "rewrite")):
			in, cur = true, nil
		case in && line == "----":
			inputs = append(inputs, strings.Join(cur, "\n"))
			in = false
		case in:
			cur = append(cur, line)
		}
	}
	return inputs, nil
}
