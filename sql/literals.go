package sql

import (
	"strconv"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/numeric"
)

// This file keeps long runs of constants out of TiDB's parser. A key
// lookup with a 1 MB IN list, or a 1 MB multi-row INSERT, is about
// 130,000 constants; as tokens, rewrite items, TiDB value expressions
// and converted literals each costs some 1.5 KB, so parsing the
// megabyte took 200 MB. Folded, it costs about what its literals in the
// AST do.
//
// The lexer folds two shapes, and only these, into one token each:
//
//   - a tokLiterals: the items of x IN (c1, c2, ...) when every item is
//     a plain constant (a number, optionally after a minus, a string in
//     any spelling, TRUE, FALSE or NULL) and the list is closed by its
//     ")";
//   - a tokRows: the rows of INSERT ... VALUES (c, ...), (c, ...) when
//     every row is a non-empty list of such constants and the rows end
//     the INSERT (at the end of the text, its ";" or RETURNING).
//
// Comments between the constants are part of the run. Anything else
// met inside a run (an expression, a parameter, a cast, a list or rows
// that do not end as above) unfolds it again: the lexer re-lexes the
// run's text into the tokens it stands for, so a statement that is not
// exactly one of the two shapes gets the tokens it always had. Lists
// shorter than runFoldTokens tokens are never folded at all.
//
// A folded token keeps only its byte range and its count (items or
// rows) in param; the constants are lexed again from the text when the
// AST is built (runLiterals, runRows), straight into basin literals,
// so nothing of them is held in between. The rewrite writes a run as a
// placeholder constant, 0 for a list and (0) for rows, marked in
// tidbText.runs, and the conversion puts the constants in the
// placeholder's place: the AST is the one TiDB's parse of the constants
// gives, positions included (TestFoldedRunsParseAsBefore compares the
// two on random lists).
//
// A statement the statement layer or TiDB rejects at a folded token,
// or that puts a placeholder anywhere else, is parsed again from
// unfolded tokens (stmtParser.unfold), so errors name the token they
// always named.

// runFoldTokens is how many tokens of a run the lexer collects before it
// folds them; a variable so that tests fold every run.
var runFoldTokens = 64

// runState is where a run is in its grammar.
type runState uint8

const (
	runNone      runState = iota
	runItem               // a constant or a minus is next
	runSign               // a number is next
	runAfterItem          // "," or the end of the list or row is next
	runRow                // rows: "(" is next
	runAfterRow           // rows: "," or the end of the rows is next
)

// litRun is the run the lexer is collecting.
type litRun struct {
	state runState
	rows  bool
	// start is the index in lexer.toks of the run's first token, which
	// is the folded token once folded is set.
	start  int
	folded bool
	// count is how many items (list) or rows (rows) the run has
	// completed; the tokens lexed since the last one are not its yet.
	count int
}

// isRunConstant reports whether t is a constant a run may hold.
func isRunConstant(t token) bool {
	switch t.kind {
	case tokNumber, tokString:
		return true
	case tokIdent:
		return t.val == "true" || t.val == "false" || t.val == "null"
	}
	return false
}

// stepRun feeds the run the token just lexed; depth is the parenthesis
// depth after it.
func (l *lexer) stepRun(depth int) {
	k := len(l.toks) - 1
	t := l.toks[k]
	r := &l.run
	if r.state != runNone {
		if in, done := r.advance(t); in {
			if done {
				r.count++
				if len(l.toks)-r.start >= runFoldTokens {
					l.foldRun()
				}
			}
			return
		}
		// The run ends before t. Only a list closed by its ")" and rows
		// ending the INSERT keep their fold.
		clean := r.state == runAfterItem && !r.rows && t.isOp(")") ||
			r.state == runAfterRow && (t.isOp(";") || t.isWord("returning"))
		if !clean {
			l.unfoldRun()
		}
		r.state = runNone
	}
	k = len(l.toks) - 1 // unfolding moved t
	switch {
	case t.isOp(";"):
		l.stmt = k + 1
	case t.isOp("(") && k >= 1 && l.toks[k-1].isWord("in") && !isNamePosition(l.toks, k-1):
		*r = litRun{state: runItem, start: k + 1}
	case t.isWord("values") && depth == 0 && l.stmt < k && l.toks[l.stmt].isWord("insert") &&
		!isNamePosition(l.toks, k):
		*r = litRun{state: runRow, rows: true, start: k + 1}
	}
}

// isNamePosition reports whether the word at toks[k] is a name because
// of what precedes it (t.in, AS in), as the rewrite decides.
func isNamePosition(toks []token, k int) bool {
	return k >= 1 && (toks[k-1].isOp(".") || toks[k-1].isWord("as"))
}

// advance moves the run past t. in reports whether t belongs to the
// run, done whether it completes an item (list) or a row (rows).
func (r *litRun) advance(t token) (in, done bool) {
	switch r.state {
	case runItem:
		switch {
		case isRunConstant(t):
			r.state = runAfterItem
			return true, !r.rows
		case t.isOp("-"):
			r.state = runSign
			return true, false
		}
	case runSign:
		if t.kind == tokNumber {
			r.state = runAfterItem
			return true, !r.rows
		}
	case runAfterItem:
		switch {
		case t.isOp(","):
			r.state = runItem
			return true, false
		case r.rows && t.isOp(")"):
			r.state = runAfterRow
			return true, true
		}
	case runRow:
		if t.isOp("(") {
			r.state = runItem
			return true, false
		}
	case runAfterRow:
		if t.isOp(",") {
			r.state = runRow
			return true, false
		}
	}
	return false, false
}

// foldRun folds the run's tokens, which end l.toks with a complete item
// or row, into its token.
func (l *lexer) foldRun() {
	r := &l.run
	first := &l.toks[r.start]
	end := l.toks[len(l.toks)-1].end
	if !r.folded {
		kind := tokLiterals
		if r.rows {
			kind = tokRows
		}
		*first = token{kind: kind, pos: first.pos}
		r.folded = true
	}
	first.end, first.param = end, r.count
	clear(l.toks[r.start+1:]) // keep no decoded string alive
	l.toks = l.toks[:r.start+1]
}

// unfoldRun puts back the tokens a folded run stands for, before the
// tokens lexed since its last fold.
func (l *lexer) unfoldRun() {
	r := &l.run
	if !r.folded {
		return
	}
	run := l.toks[r.start]
	tail := append([]token(nil), l.toks[r.start+1:]...)
	l.toks = lexRange(l.toks[:r.start], l.text, run.pos, run.end)
	l.toks = append(l.toks, tail...)
	r.folded = false
}

// endRun ends the run at the end of the text: rows may end there, a
// list may not.
func (l *lexer) endRun() {
	if r := &l.run; r.state != runNone && r.state != runAfterRow {
		l.unfoldRun()
	}
	l.run = litRun{}
}

// lexRange appends to toks the tokens of text[from:to], a range that
// lexed without error before and starts and ends at token boundaries;
// no run is folded.
func lexRange(toks []token, text string, from, to int) []token {
	l := &lexer{text: text, i: from, toks: toks}
	for {
		if l.skipSpace() != nil || l.i >= to || l.next() != nil {
			return l.toks
		}
	}
}

// runReader lexes the tokens of a folded run one at a time, into a
// buffer it reuses.
type runReader struct {
	l   lexer
	end int
	buf [1]token
}

func newRunReader(text string, run token) *runReader {
	r := &runReader{end: run.end}
	r.l = lexer{text: text, i: run.pos, toks: r.buf[:0]}
	return r
}

// next returns the run's next token; ok is false past its end.
func (r *runReader) next() (t token, ok bool) {
	r.l.toks = r.buf[:0]
	if r.l.skipSpace() != nil || r.l.i >= r.end || r.l.next() != nil || len(r.l.toks) != 1 {
		return token{}, false
	}
	return r.l.toks[0], true
}

// literal reads the next item of a run (its "," or ")" is left to the
// caller) into lit, which it fills as converting TiDB's parse of the
// item would: a minus before a number folds into it (convert.unary),
// integers are INTEGER or BIGINT (IntLiteralType), other numbers NUMERIC.
func (r *runReader) literal(sp *stmtParser, lit *Literal) bool {
	t, ok := r.next()
	if !ok {
		return false
	}
	*lit = Literal{Pos: sp.charPos(t.pos)}
	neg := t.isOp("-")
	if neg {
		if t, ok = r.next(); !ok {
			return false
		}
	}
	switch {
	case t.kind == tokNumber && t.isInt:
		v, err := strconv.ParseInt(t.val, 10, 64)
		if err != nil {
			return false
		}
		if neg {
			v = -v
		}
		lit.Type, lit.Value = IntLiteralType(v), v
	case t.kind == tokNumber:
		d, err := sp.numericToken(t)
		if err != nil {
			return false
		}
		if neg {
			d = numeric.Neg(d)
		}
		lit.Type, lit.Value = catalog.Decimal, d
	case neg:
		return false
	case t.kind == tokString:
		lit.Type, lit.Value = catalog.Varchar, t.val
	case t.isWord("true"), t.isWord("false"):
		lit.Type, lit.Value = catalog.Boolean, t.val == "true"
	case t.isWord("null"):
		lit.Type = catalog.Unknown
	default:
		return false
	}
	return true
}

// runLiterals appends the literals of the folded list run to out. ok is
// false if the run does not read back as one (a bug: the statement is
// then parsed unfolded).
func (sp *stmtParser) runLiterals(run token, out []Expr) (_ []Expr, ok bool) {
	r := newRunReader(sp.text, run)
	// One allocation for the list's literals rather than one each.
	lits := make([]Literal, run.param)
	for k := range lits {
		if k > 0 {
			if t, ok := r.next(); !ok || !t.isOp(",") {
				return nil, false
			}
		}
		if !r.literal(sp, &lits[k]) {
			return nil, false
		}
		out = append(out, &lits[k])
	}
	if _, more := r.next(); more {
		return nil, false
	}
	return out, true
}

// runRows returns the rows of the folded rows run; ok is as for
// runLiterals.
func (sp *stmtParser) runRows(run token) (rows [][]Expr, ok bool) {
	r := newRunReader(sp.text, run)
	rows = make([][]Expr, 0, run.param)
	width := 1
	for n := 0; n < run.param; n++ {
		if n > 0 {
			if t, ok := r.next(); !ok || !t.isOp(",") {
				return nil, false
			}
		}
		if t, ok := r.next(); !ok || !t.isOp("(") {
			return nil, false
		}
		// Rows are usually all as wide as the first: its width sizes
		// the slabs.
		lits := make([]Literal, 0, width)
		row := make([]Expr, 0, width)
		for {
			lits = append(lits, Literal{})
			if !r.literal(sp, &lits[len(lits)-1]) {
				return nil, false
			}
			t, ok := r.next()
			if !ok {
				return nil, false
			}
			if t.isOp(")") {
				break
			}
			if !t.isOp(",") {
				return nil, false
			}
		}
		for k := range lits {
			row = append(row, &lits[k])
		}
		width = len(row)
		rows = append(rows, row)
	}
	if _, more := r.next(); more {
		return nil, false
	}
	return rows, true
}
