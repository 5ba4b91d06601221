package sql

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"

	// The TiDB parser needs a driver for constants; the test driver's
	// ValueExpr is a plain datum, which is all conversion needs.
	_ "github.com/pingcap/tidb/pkg/parser/test_driver"

	"github.com/basindb/basin/internal/pgerr"
)

// tidbParsers pools TiDB parsers: one is not safe for concurrent use and
// is costly to build, and Parse runs on every connection's goroutine.
// A parser keeps pointers into the tree it last returned (its symbol
// cache) and writes through them when it parses again (yySetOffset sets
// the text position of the cached expression), so a parser goes back to
// the pool only once the statement's conversion is done with its tree
// (stmtParser.release).
var tidbParsers = sync.Pool{New: func() any {
	p := parser.New()
	// NO_BACKSLASH_ESCAPES: strings reach TiDB with only quotes doubled.
	// IGNORE_SPACE: a builtin's name may be followed by a space.
	p.SetSQLMode(mysql.ModeNoBackslashEscapes | mysql.ModeIgnoreSpace)
	return p
}}

// parseTiDB parses the rewritten text, which holds exactly one statement.
// The tree is good until sp.release.
func (sp *stmtParser) parseTiDB(tt *tidbText) (stmt ast.StmtNode, err error) {
	p := tidbParsers.Get().(*parser.Parser)
	defer func() {
		// A panic inside TiDB's parser must not take the server down; the
		// parser is discarded in case it was left inconsistent.
		if r := recover(); r != nil {
			stmt, err = nil, internalErr("TiDB parser panicked on %q: %v", tt.sql, r)
			return
		}
		sp.tidb = append(sp.tidb, p)
	}()
	stmts, _, perr := p.ParseSQL(tt.sql)
	if perr != nil {
		return nil, sp.tidbError(perr, tt)
	}
	if len(stmts) != 1 {
		return nil, internalErr("TiDB parsed %d statements from %q", len(stmts), tt.sql)
	}
	return stmts[0], nil
}

// release gives the TiDB parsers of the statement's trees back to the
// pool, once nothing reads those trees any more.
func (sp *stmtParser) release() {
	for _, p := range sp.tidb {
		tidbParsers.Put(p)
	}
	sp.tidb = nil
}

// nearRE matches TiDB's error position: `line 1 column 12 near "FRM t"`.
// The quoted text is the rest of the input from the offending token on,
// cut at 2048 bytes with "(total length N)" appended.
var nearRE = regexp.MustCompile(`(?s)^line \d+ column \d+ near "(.*)$`)

var totalRE = regexp.MustCompile(`"[^"]*\(total length (\d+)\)$`)

// tidbError turns a TiDB parse error into Postgres's: the offset of the
// token TiDB stopped at is recovered from the text TiDB quotes, mapped
// back through the rewrite, and reported with the user's token.
func (sp *stmtParser) tidbError(err error, tt *tidbText) *pgerr.Error {
	msg := err.Error()
	off, ok := tidbErrorOffset(msg, tt.sql)
	if !ok {
		return &pgerr.Error{Code: pgerr.SyntaxError, Message: "syntax error", Detail: msg}
	}
	orig, ok := tt.mapStart(off)
	if !ok {
		return sp.syntaxErr(tt.end)
	}
	if k := sp.tokenAt(orig); k >= 0 {
		return sp.syntaxErr(sp.toks[k])
	}
	return &pgerr.Error{Code: pgerr.SyntaxError, Message: "syntax error", Position: sp.charPos(orig)}
}

// tidbErrorOffset finds the byte offset in sql that a TiDB error message
// points at.
func tidbErrorOffset(msg, sql string) (int, bool) {
	m := nearRE.FindStringSubmatch(msg)
	if m == nil {
		return 0, false
	}
	rest := m[1]
	if t := totalRE.FindStringSubmatch(rest); t != nil {
		n, err := strconv.Atoi(t[1])
		if err != nil || n > len(sql) {
			return 0, false
		}
		return len(sql) - n, true
	}
	// The quoted text is a suffix of sql followed by `"` and TiDB's note
	// (empty for plain syntax errors). The note may itself contain
	// quotes, so try each closing quote, shortest suffix first.
	for q := 0; q < len(rest); q++ {
		if rest[q] != '"' {
			continue
		}
		if strings.HasSuffix(sql, rest[:q]) {
			return len(sql) - q, true
		}
	}
	return 0, false
}

// String renders the rewritten text with its origin map, for debugging
// a rewrite (see doc.go).
func (tt *tidbText) String() string {
	var b strings.Builder
	b.WriteString(tt.sql)
	for k, it := range tt.items {
		fmt.Fprintf(&b, "\n%5d %-24q <- [%d,%d)", tt.starts[k], it.text, it.orig, it.origEnd)
		if it.param != 0 {
			fmt.Fprintf(&b, " $%d", it.param)
		}
		if it.cast != nil {
			fmt.Fprintf(&b, " cast %s", it.cast.typ)
		}
	}
	for k, w := range tt.windows {
		fmt.Fprintf(&b, "\nwindow %d: before %v after %v", k, w.Before, w.After)
		if w.HasGrace {
			fmt.Fprintf(&b, " grace %v", w.Grace)
		}
	}
	return b.String()
}
