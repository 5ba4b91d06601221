package sql

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/cockroachdb/datadriven"

	"github.com/basindb/basin/internal/pgerr"
)

// TestParse runs testdata/parse. Commands:
//
//	parse [pos]  the input is parsed; the output is each statement as
//	             Format writes it, or the error. With pos, positions
//	             (@n), select-item texts and CTAS select texts are shown.
//	statements   the text ParseStatements gives each statement, one
//	             per line between brackets.
//	rewrite      the TiDB text the input's single statement rewrites to,
//	             with each item's origin in the input.
//
// Every statement parse and statements return is also checked to
// survive a Format round trip and to parse back from its own text.
//
// Rewrite expected output with -rewrite and review the diff.
func TestParse(t *testing.T) {
	datadriven.RunTest(t, "testdata/parse", func(t *testing.T, d *datadriven.TestData) string {
		switch d.Cmd {
		case "parse", "statements":
			stmts, err := ParseStatements(d.Input)
			if err != nil {
				return formatError(d.Input, err)
			}
			if len(stmts) == 0 {
				return "(no statements)\n"
			}
			var b strings.Builder
			for _, p := range stmts {
				switch {
				case d.Cmd == "statements":
					fmt.Fprintf(&b, "[%s]", p.Text)
				case d.HasArg("pos"):
					b.WriteString(formatPositions(p.Stmt))
				default:
					b.WriteString(Format(p.Stmt))
				}
				b.WriteString("\n")
				if err := checkStatement(p); err != nil {
					t.Errorf("%s: %v", d.Pos, err)
				}
			}
			return b.String()
		case "rewrite":
			out, err := rewriteForDebug(d.Input)
			if err != nil {
				return formatError(d.Input, err)
			}
			return out + "\n"
		}
		t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
		return ""
	})
}

// formatError renders an error as "error <sqlstate> at <position>:
// <message>", followed by the line it points into with a caret under the
// position, the way psql shows it.
func formatError(text string, err error) string {
	pe, ok := pgerr.As(err)
	if !ok {
		return fmt.Sprintf("error without SQLSTATE: %v\n", err)
	}
	var b strings.Builder
	if pe.Position > 0 {
		fmt.Fprintf(&b, "error %s at %d: %s\n", pe.Code, pe.Position, pe.Message)
		runes := []rune(text)
		p := pe.Position - 1
		start := p
		for start > 0 && start <= len(runes) && runes[start-1] != '\n' {
			start--
		}
		if start > len(runes) {
			start = len(runes)
		}
		end := start
		for end < len(runes) && runes[end] != '\n' {
			end++
		}
		fmt.Fprintf(&b, "%s\n%s^\n", string(runes[start:end]), strings.Repeat(" ", p-start))
	} else {
		fmt.Fprintf(&b, "error %s: %s\n", pe.Code, pe.Message)
	}
	if pe.Detail != "" {
		fmt.Fprintf(&b, "detail: %s\n", pe.Detail)
	}
	if pe.Hint != "" {
		fmt.Fprintf(&b, "hint: %s\n", pe.Hint)
	}
	return b.String()
}

// formatPositions renders s with positions and texts.
func formatPositions(s Statement) string {
	f := formatter{positions: true}
	f.stmt(s)
	var extra []string
	sel, _ := s.(*Select)
	switch s := s.(type) {
	case *CreateTableAs:
		sel = s.Select
		extra = append(extra, fmt.Sprintf("select text: %q", s.SelectText))
	case *Explain:
		if x, ok := s.Stmt.(*Select); ok {
			sel = x
		}
	}
	if sel != nil {
		var texts []string
		for _, it := range sel.Items {
			texts = append(texts, fmt.Sprintf("%q", it.Text))
		}
		extra = append(extra, "item texts: "+strings.Join(texts, ", "))
	}
	out := f.b.String()
	for _, e := range extra {
		out += "\n  " + e
	}
	return out
}

// checkStatement checks that a parsed statement survives a Format round
// trip and that its text parses back to it.
func checkStatement(p Parsed) error {
	if err := checkRoundTrip(p.Stmt); err != nil {
		return err
	}
	again, err := Parse(p.Text)
	if err != nil {
		return fmt.Errorf("statement text %q does not parse: %v", p.Text, err)
	}
	if len(again) != 1 || Format(again[0]) != Format(p.Stmt) {
		return fmt.Errorf("statement text %q does not parse back to %q", p.Text, Format(p.Stmt))
	}
	return nil
}

// checkRoundTrip checks that Format's output parses back to a statement
// Format renders the same way.
func checkRoundTrip(s Statement) error {
	text := Format(s)
	again, err := Parse(text)
	if err != nil {
		return fmt.Errorf("Format output %q does not parse: %v", text, err)
	}
	if len(again) != 1 {
		return fmt.Errorf("Format output %q parses to %d statements", text, len(again))
	}
	if got := Format(again[0]); got != text {
		return fmt.Errorf("Format output %q parses back as %q", text, got)
	}
	return nil
}

// rewriteForDebug returns the TiDB text the single statement in text
// rewrites to, whole, with its origin map.
func rewriteForDebug(text string) (string, error) {
	toks, err := lex(text)
	if err != nil {
		return "", err
	}
	if n := len(toks); n > 0 && toks[n-1].isOp(";") {
		toks = toks[:n-1]
	}
	sp := &stmtParser{text: text, pos: newPosTable(text),
		toks: append(toks, token{kind: tokEOF, pos: len(text), end: len(text)})}
	rw := sp.newRewriter(0)
	if err := rw.run(0, len(sp.toks)-1); err != nil {
		return "", err
	}
	return rw.build(sp.toks[len(sp.toks)-1]).String(), nil
}

// TestJoinWindow checks the fields of the join windows statements parse
// to (testdata/parse shows them only as Format writes them): each join's
// Within, in FROM order, nil for a join without one.
func TestJoinWindow(t *testing.T) {
	hour := time.Hour
	for _, c := range []struct {
		text string
		want []*JoinWindow
	}{
		{"SELECT * FROM a JOIN b WITHIN 1 HOUR ON a.k = b.k",
			[]*JoinWindow{{Before: hour, After: hour, Pos: 24}}},
		{"SELECT * FROM a JOIN b WITHIN 2 HOURS GRACE PERIOD 10 MINUTES ON a.k = b.k",
			[]*JoinWindow{{Before: 2 * hour, After: 2 * hour, Grace: 10 * time.Minute, HasGrace: true, Pos: 24}}},
		{"SELECT * FROM a JOIN b WITHIN (1 SECOND, 5 MINUTES) ON a.k = b.k",
			[]*JoinWindow{{Before: time.Second, After: 5 * time.Minute, Pos: 24}}},
		{"SELECT * FROM a JOIN b WITHIN 500 MILLISECONDS ON a.k = b.k",
			[]*JoinWindow{{Before: 500 * time.Millisecond, After: 500 * time.Millisecond, Pos: 24}}},
		{"SELECT * FROM a JOIN b WITHIN 1 DAY GRACE PERIOD 0 seconds ON a.k = b.k",
			[]*JoinWindow{{Before: 24 * hour, After: 24 * hour, HasGrace: true, Pos: 24}}},
		{"select * from a x left outer join b y within 3 minutes on x.k = y.k",
			[]*JoinWindow{{Before: 3 * time.Minute, After: 3 * time.Minute, Pos: 39}}},
		{"SELECT * FROM a AS x FULL OUTER JOIN b AS y WITHIN (0 SECONDS, 1 HOUR) ON x.k = y.k",
			[]*JoinWindow{{After: hour, Pos: 45}}},
		// Positions count characters, not bytes.
		{"SELECT 'é' FROM a JOIN b WITHIN 1 HOUR ON a.k = b.k",
			[]*JoinWindow{{Before: hour, After: hour, Pos: 26}}},
		{"SELECT * FROM a JOIN b WITHIN 1 HOUR ON a.k = b.k JOIN c ON c.k = a.k LEFT JOIN d WITHIN 2 SECONDS ON d.k = a.k",
			[]*JoinWindow{{Before: hour, After: hour, Pos: 24}, nil, {Before: 2 * time.Second, After: 2 * time.Second, Pos: 83}}},
		{"CREATE STREAM s AS SELECT * FROM a JOIN b WITHIN 1 HOUR ON a.id = b.id PARTITION BY a.id",
			[]*JoinWindow{{Before: hour, After: hour, Pos: 43}}},
		{"SELECT * FROM a JOIN b AS within ON a.k = within.k", []*JoinWindow{nil}},
	} {
		stmts, err := Parse(c.text)
		if err != nil {
			t.Errorf("Parse(%q): %v", c.text, err)
			continue
		}
		var sel *Select
		switch s := stmts[0].(type) {
		case *Select:
			sel = s
		case *CreateStreamAs:
			sel = s.Select
		}
		var got []*JoinWindow
		var walk func(it FromItem)
		walk = func(it FromItem) {
			if j, ok := it.(*Join); ok {
				walk(j.Left)
				got = append(got, j.Within)
			}
		}
		walk(sel.From[0])
		if len(got) != len(c.want) {
			t.Errorf("Parse(%q): %d joins, want %d", c.text, len(got), len(c.want))
			continue
		}
		for k := range got {
			if (got[k] == nil) != (c.want[k] == nil) || got[k] != nil && *got[k] != *c.want[k] {
				t.Errorf("Parse(%q): join %d has window %+v, want %+v", c.text, k, got[k], c.want[k])
			}
		}
	}
}

func TestCharPos(t *testing.T) {
	text := "héllo wörld"
	pt := newPosTable(text)
	for off := range text {
		if !utf8.RuneStart(text[off]) {
			continue
		}
		if got, want := pt.charPos(off), utf8.RuneCountInString(text[:off])+1; got != want {
			t.Errorf("charPos(%d) = %d, want %d", off, got, want)
		}
	}
	if got := pt.charPos(len(text)); got != utf8.RuneCountInString(text)+1 {
		t.Errorf("charPos(end) = %d", got)
	}
}
