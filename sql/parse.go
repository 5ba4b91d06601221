package sql

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/pingcap/tidb/pkg/parser"

	"github.com/basindb/basin/internal/pgerr"
)

// Parse parses a text of zero or more semicolon-separated statements.
// Statements that are empty or only comments are dropped, so "-- ping"
// yields no statements and no error. As in Postgres, the whole text is
// parsed before any of it runs: one bad statement fails the lot.
//
// Every error is a *pgerr.Error. Syntax errors are 42601 with Position
// the 1-based character index of the offending token in text; valid
// Postgres that basin does not implement is 0A000 naming the construct.
func Parse(text string) ([]Statement, error) {
	parsed, err := ParseStatements(text)
	if err != nil {
		return nil, err
	}
	stmts := make([]Statement, len(parsed))
	for i, p := range parsed {
		stmts[i] = p.Stmt
	}
	return stmts, nil
}

// parse implements ParseStatements.
func parse(text string) ([]Parsed, error) {
	// A NUL cannot reach Postgres (its Query message is NUL-terminated),
	// so no client relies on one; refuse it like an invalid byte.
	if i := strings.IndexByte(text, 0); i >= 0 {
		return nil, &pgerr.Error{Code: pgerr.CharacterNotInRepertoire,
			Message:  "invalid byte sequence for encoding \"UTF8\": 0x00",
			Position: charPos(text, i)}
	}
	if !utf8.ValidString(text) {
		off := 0
		for {
			r, size := utf8.DecodeRuneInString(text[off:])
			if r == utf8.RuneError && size == 1 {
				break
			}
			off += size
		}
		return nil, &pgerr.Error{Code: pgerr.CharacterNotInRepertoire,
			Message:  fmt.Sprintf("invalid byte sequence for encoding \"UTF8\": 0x%02x", text[off]),
			Position: charPos(text, off)}
	}
	toks, lerr := lex(text)
	if lerr != nil {
		return nil, lerr
	}
	var out []Parsed
	pt := newPosTable(text)
	for len(toks) > 0 {
		n := 0
		for n < len(toks) && !toks[n].isOp(";") {
			n++
		}
		piece := make([]token, n, n+1)
		copy(piece, toks[:n])
		end := token{kind: tokEOF, pos: len(text), end: len(text)}
		if n < len(toks) {
			end = token{kind: tokEOF, val: ";", pos: toks[n].pos, end: toks[n].end}
			toks = toks[n+1:]
		} else {
			toks = nil
		}
		if n == 0 {
			continue
		}
		sp := &stmtParser{text: text, toks: append(piece, end), pos: pt}
		st, err := sp.statement(0)
		sp.release()
		if sp.unfold {
			// A folded run of constants was not where it may be: parse
			// the statement from the tokens it would have had.
			piece = lexRange(make([]token, 0, 2*n), text, piece[0].pos, piece[n-1].end)
			sp = &stmtParser{text: text, toks: append(piece, end), pos: pt}
			st, err = sp.statement(0)
			sp.release()
		}
		if err != nil {
			return nil, err
		}
		out = append(out, Parsed{Stmt: st, Text: text[piece[0].pos:piece[n-1].end]})
	}
	return out, nil
}

// stmtParser parses one statement. toks are its tokens, ending with a
// tokEOF sentinel; indexes into toks are how the layers refer to pieces
// of the statement, and every token keeps its offset into the full text.
type stmtParser struct {
	text string
	toks []token
	pos  *posTable
	// tidb are the TiDB parsers whose trees the statement's conversion
	// reads (parseTiDB); release returns them.
	tidb []*parser.Parser
	// unfold is set when the statement's parse met a folded run of
	// constants (literals.go) where it cannot stand, in an error or
	// in TiDB's tree: the statement is parsed again without folds.
	unfold bool
	// nullsItems are the ORDER BY items inside parentheses (a window's,
	// a subquery's) that ended in NULLS FIRST/LAST (nestedNulls).
	nullsItems []nullsItem
}

// statement parses the statement starting at toks[i] and running to the
// sentinel. basin's own statements are parsed here at the token level;
// SELECT, INSERT and the column list of CREATE go through TiDB.
func (sp *stmtParser) statement(i int) (Statement, error) {
	t := sp.toks[i]
	if t.isOp("(") {
		return sp.parseSelect(i, len(sp.toks)-1)
	}
	if t.kind != tokIdent {
		return nil, sp.syntaxErr(t)
	}
	switch t.val {
	case "select":
		return sp.parseSelect(i, len(sp.toks)-1)
	case "insert":
		if k, ok := sp.insertQuery(i); ok {
			return sp.parseInsertSelect(i, k)
		}
		return sp.parseInsert(i)
	case "delete":
		return sp.parseDelete(i)
	case "create":
		return sp.parseCreate(i)
	case "drop":
		return sp.parseDrop(i)
	case "show":
		return sp.parseShow(i)
	case "describe", "desc":
		return sp.parseDescribe(i)
	case "resume":
		return sp.parseResume(i)
	case "terminate":
		return sp.parseTerminate(i)
	case "subscribe":
		return sp.parseSubscribe(i)
	case "set":
		return sp.parseSet(i)
	case "reset":
		return sp.parseReset(i)
	case "begin", "start":
		return sp.parseBegin(i)
	case "commit", "end", "rollback", "abort":
		return sp.parseCommit(i)
	case "explain":
		return sp.parseExplain(i)
	case "discard":
		return sp.parseDiscard(i)
	case "deallocate":
		return sp.parseDeallocate(i)
	case "listen":
		return sp.parseListen(i, ListenListen)
	case "unlisten":
		return sp.parseListen(i, ListenUnlisten)
	case "notify":
		return sp.parseListen(i, ListenNotify)
	case "with":
		return sp.parseSelect(i, len(sp.toks)-1)
	case "values":
		return sp.parseValues(i)
	case "copy":
		return sp.parseCopy(i)
	case "declare":
		return sp.parseDeclare(i)
	case "fetch", "move":
		return sp.parseFetch(i)
	case "close":
		return sp.parseClose(i)
	case "update", "merge", "truncate":
		return nil, unsupported(sp.charPos(t.pos), "%s is not supported", strings.ToUpper(t.val)).
			WithHint("Tables are maintained from their Kafka topics; INSERT appends to a stream or table, DELETE writes tombstones to a table.")
	}
	if unsupportedStatements[t.val] {
		return nil, unsupported(sp.charPos(t.pos), "%s is not supported", strings.ToUpper(t.val))
	}
	return nil, sp.syntaxErr(t)
}

// unsupportedStatements are the first keywords of Postgres statements
// basin does not implement. Anything else unknown is a syntax error, as
// in Postgres.
var unsupportedStatements = map[string]bool{
	"alter": true, "analyze": true, "analyse": true, "call": true, "checkpoint": true,
	"cluster": true, "comment": true,
	"do": true, "execute": true, "grant": true, "import": true,
	"load": true, "lock": true, "prepare": true,
	"reassign": true, "refresh": true, "reindex": true, "release": true, "revoke": true,
	"savepoint": true, "security": true, "vacuum": true,
	"table": true,
}

// syntaxErr is Postgres's syntax error at a token.
func (sp *stmtParser) syntaxErr(t token) *pgerr.Error {
	e := &pgerr.Error{Code: pgerr.SyntaxError, Position: sp.charPos(t.pos)}
	if t.kind == tokEOF && t.val == "" {
		e.Message = "syntax error at end of input"
	} else {
		e.Message = "syntax error at or near " + quoteNear(sp.tokText(t))
	}
	return e
}

// tokText is the token as the user wrote it.
func (sp *stmtParser) tokText(t token) string {
	if t.kind == tokEOF {
		return t.val
	}
	if t.kind == tokLiterals || t.kind == tokRows {
		sp.unfold = true // the message is to name a token of the run
	}
	return sp.text[t.pos:t.end]
}

func unsupported(pos int, format string, args ...any) *pgerr.Error {
	e := pgerr.New(pgerr.FeatureNotSupported, format, args...)
	e.Position = pos
	return e
}

func internalErr(format string, args ...any) *pgerr.Error {
	return pgerr.New(pgerr.InternalError, "sql: "+format, args...)
}

// charPos converts a byte offset in the text to the 1-based character
// position Postgres reports.
func (sp *stmtParser) charPos(off int) int { return sp.pos.charPos(off) }

// tokenAt returns the index of the token starting at byte offset off, or
// -1.
func (sp *stmtParser) tokenAt(off int) int {
	lo, hi := 0, len(sp.toks)-1
	for lo < hi {
		m := (lo + hi) / 2
		if sp.toks[m].pos < off {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if sp.toks[lo].pos == off {
		return lo
	}
	return -1
}

// matchParen returns the index of the ")" closing the "(" at toks[i], or
// the sentinel's index when it is not closed.
func (sp *stmtParser) matchParen(i int) int {
	depth := 0
	for j := i; j < len(sp.toks)-1; j++ {
		switch {
		case sp.toks[j].isOp("("):
			depth++
		case sp.toks[j].isOp(")"):
			depth--
			if depth == 0 {
				return j
			}
		}
	}
	return len(sp.toks) - 1
}

// posTable converts byte offsets to character positions without
// rescanning the text for each expression of a large statement.
type posTable struct {
	text  string
	ascii bool
	// runes[i] is the number of runes before byte i; built on first use.
	runes []int32
}

func newPosTable(text string) *posTable {
	ascii := true
	for i := 0; i < len(text); i++ {
		if text[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	return &posTable{text: text, ascii: ascii}
}

func (p *posTable) charPos(off int) int {
	if off < 0 {
		return 0
	}
	if off > len(p.text) {
		off = len(p.text)
	}
	if p.ascii {
		return off + 1
	}
	if p.runes == nil {
		p.runes = make([]int32, len(p.text)+1)
		n := int32(0)
		for i := 0; i < len(p.text); i++ {
			p.runes[i] = n
			if utf8.RuneStart(p.text[i]) {
				n++
			}
		}
		p.runes[len(p.text)] = n
	}
	return int(p.runes[off]) + 1
}
