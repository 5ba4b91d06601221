package sql

import (
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
)

// This file is the second layer: it rewrites a run of Postgres tokens into
// MySQL-dialect text for TiDB's parser and records, for every piece of
// that text, which piece of the user's text it stands for.
//
// The output is a list of items, one per emitted token, written with one
// space between them. Each item carries the byte range of the user's
// text it came from, so an offset TiDB reports (an error's token, an
// expression's start, a select field's span) maps back to the user's
// text by a binary search over the items. Items the rewrite inserts (the
// function name and parentheses of a cast) borrow the range of the
// operand or type they belong to.
//
// What TiDB cannot carry in its own AST travels in side tables keyed by
// the offset of the item in the TiDB text: $n parameters (TiDB numbers ?
// markers in order of appearance; basin needs n) and casts (TiDB's CAST
// knows MySQL's types only; basin rewrites x::t and CAST(x AS t) to a
// call basin__cast_t(x) and keeps t here, so a user function of that name
// is never mistaken for a cast).

// itemKind classifies output items for the :: rewrite, which must find
// the start of the operand before it.
type itemKind uint8

const (
	itemOther   itemKind = iota // operators, punctuation, keywords
	itemOperand                 // identifier, constant, parameter
	itemFunc                    // function name; its "(" follows
	itemOpen                    // (
	itemClose                   // )
	itemDot                     // .
	itemCase                    // CASE
	itemEnd                     // END
)

type outItem struct {
	text string
	kind itemKind
	// orig and origEnd are the byte range of the user's text the item
	// stands for.
	orig, origEnd int
	// glue writes the item without a space before it: TiDB wants some
	// function names directly followed by their parenthesis.
	glue  bool
	param int       // for a ? item, n of $n
	cast  *castInfo // for a cast function name
	// mark says what a function name the rewrite made up stands for
	// (ARRAY[...], x[i], ...); see rewrite_pg.go.
	mark markKind
	// run is, for the placeholder of a folded run of constants
	// (literals.go), 1 + the index of the run's token.
	run int
	// tail, for a ? item, is the parsed LIMIT or OFFSET of a
	// parenthesized SELECT it stands for (nestedTail); tailNone: no
	// limit (LIMIT ALL, or OFFSET alone).
	tail     Expr
	tailNone bool
}

// castInfo is a cast the rewrite turned into a function call.
type castInfo struct {
	typ catalog.Type
	// precision and scale are NUMERIC(p,s)'s modifiers.
	precision, scale int
	// pos is the byte offset of the ::, the CAST keyword or the type name
	// of a typed literal (TIMESTAMP '...'), where Postgres reports casts.
	pos int
}

// castFuncPrefix names the function calls casts are rewritten to. Only
// the side table decides whether a call is a cast; the name is for
// whoever reads the rewritten text.
const castFuncPrefix = "basin__cast_"

// tidbText is the text handed to TiDB and what maps its answers back.
type tidbText struct {
	sql    string
	items  []outItem
	starts []int // starts[k] is the offset of items[k] in sql
	params map[int]int
	casts  map[int]castInfo
	marks  map[int]markKind
	// runs maps the offset of a placeholder constant to the index of
	// the folded run of constants it stands for (literals.go).
	runs map[int]int
	// tails maps the offset of a ? to the LIMIT or OFFSET it stands for
	// (outItem.tail; nil: no limit).
	tails map[int]Expr
	// aliases are the FROM aliases the rewrite replaced by placeholders
	// (basin__alias_N), because TiDB has no column alias lists.
	aliases []aliasInfo
	// windows are the join windows (WITHIN ...) the rewrite replaced by
	// index hints, USE INDEX (basin__within_N) (within.go).
	windows []JoinWindow
	// end is the token TiDB's "end of input" stands for: the token after
	// the rewritten run, often the statement's sentinel.
	end token
}

func build(items []outItem, end token) *tidbText {
	return buildWith(items, end, nil)
}

func buildWith(items []outItem, end token, aliases []aliasInfo) *tidbText {
	tt := &tidbText{items: items, starts: make([]int, len(items)), end: end, aliases: aliases}
	var b strings.Builder
	for k, it := range items {
		if k > 0 && !it.glue {
			b.WriteByte(' ')
		}
		tt.starts[k] = b.Len()
		if it.tail != nil || it.tailNone {
			if tt.tails == nil {
				tt.tails = make(map[int]Expr)
			}
			tt.tails[b.Len()] = it.tail
		}
		if it.param != 0 {
			if tt.params == nil {
				tt.params = make(map[int]int)
			}
			tt.params[b.Len()] = it.param
		}
		if it.cast != nil {
			if tt.casts == nil {
				tt.casts = make(map[int]castInfo)
			}
			tt.casts[b.Len()] = *it.cast
		}
		if it.mark != 0 {
			if tt.marks == nil {
				tt.marks = make(map[int]markKind)
			}
			tt.marks[b.Len()] = it.mark
		}
		if it.run != 0 {
			if tt.runs == nil {
				tt.runs = make(map[int]int)
			}
			tt.runs[b.Len()] = it.run - 1
		}
		b.WriteString(it.text)
	}
	tt.sql = b.String()
	return tt
}

// build builds the TiDB text of what the rewriter wrote, with the side
// tables it collected; end is the token after the rewritten run.
func (rw *rewriter) build(end token) *tidbText {
	tt := buildWith(rw.out, end, rw.aliases)
	tt.windows = rw.windows
	return tt
}

// mapStart maps an offset in the TiDB text to the byte offset in the
// user's text of the item there (or of the next item, from whitespace).
// ok is false at the end of the TiDB text.
func (tt *tidbText) mapStart(off int) (orig int, ok bool) {
	k := sort.Search(len(tt.starts), func(k int) bool { return tt.starts[k] > off }) - 1
	if k >= 0 && off < tt.starts[k]+len(tt.items[k].text) {
		return tt.items[k].orig, true
	}
	if k+1 < len(tt.items) {
		return tt.items[k+1].orig, true
	}
	return 0, false
}

// mapEnd maps the exclusive end of a span of the TiDB text to the end of
// the user's text of the last item inside the span.
func (tt *tidbText) mapEnd(off int) int {
	k := sort.Search(len(tt.starts), func(k int) bool {
		return tt.starts[k]+len(tt.items[k].text) > off
	}) - 1
	if k < 0 {
		return 0
	}
	return tt.items[k].origEnd
}

// rewriter turns tokens into TiDB items.
type rewriter struct {
	sp  *stmtParser
	out []outItem
	// lo is the index of the first token of the run being rewritten: the
	// token before it belongs to another layer (the AS of CREATE ... AS
	// SELECT, the EXPLAIN keyword) and must not steer the rewrite.
	lo int
	// skip marks tokens a caller has consumed itself (NULLS FIRST).
	skip map[int]bool
	// keywords are words to pass through bare in addition to
	// passThrough (KEY in column definitions).
	keywords map[string]bool
	// clause is, per parenthesis depth, the clause keyword last seen
	// there (from, where, ...): a function call directly in FROM is a
	// set-returning function, anywhere else an expression.
	clause []string
	// aliases collects the FROM aliases replaced by placeholders.
	aliases []aliasInfo
	// windows collects the join windows replaced by index hints.
	windows []JoinWindow
	// operand is the index of the token after an OPERATOR(...) call: an
	// operand although a ")" precedes it.
	operand int
}

func (sp *stmtParser) newRewriter(lo int) *rewriter {
	return &rewriter{sp: sp, lo: lo, out: make([]outItem, 0, len(sp.toks)+4), clause: []string{""}, operand: -1}
}

// passThrough are the words written to TiDB as keywords. They are
// Postgres reserved words with the same meaning in MySQL. Every other
// word is written as a `quoted` identifier, so that words Postgres lets
// users name columns with but MySQL reserves (key, range, status, ...)
// keep working.
var passThrough = map[string]bool{
	"all": true, "and": true, "any": true, "as": true, "asc": true, "between": true,
	"both": true, "by": true, "case": true, "check": true, "column": true, "constraint": true,
	"create": true, "cross": true, "current_date": true, "current_time": true,
	"current_timestamp": true, "default": true, "desc": true, "distinct": true, "else": true,
	"end": true, "escape": true, "except": true, "exists": true, "false": true, "fetch": true,
	"for": true, "foreign": true, "from": true, "full": true, "group": true, "having": true,
	"ilike": true, "in": true, "inner": true, "insert": true, "intersect": true, "into": true,
	"is": true, "join": true, "lateral": true, "leading": true, "left": true, "like": true,
	"limit": true, "localtime": true, "localtimestamp": true, "natural": true, "not": true,
	"null": true, "offset": true, "on": true, "or": true, "order": true, "outer": true,
	"primary": true, "references": true, "right": true, "select": true, "some": true,
	"table": true, "then": true, "trailing": true, "true": true, "union": true, "unique": true,
	"using": true, "values": true, "when": true, "where": true, "window": true,
}

// isFieldName reports whether t, after ->, names a STRUCT's field: a
// name, keywords included (s->order is the field order), but for the
// words that start an expression json's -> could take (x -> NULL).
func isFieldName(t token) bool {
	if t.kind == tokQuotedIdent {
		return true
	}
	if t.kind != tokIdent || constantWords[t.val] {
		return false
	}
	switch t.val {
	case "case", "not", "exists", "array", "cast", "select", "interval", "row":
		return false
	}
	return true
}

// constantWords are pass-through keywords that are whole operands.
var constantWords = map[string]bool{
	"true": true, "false": true, "null": true, "current_date": true, "current_time": true,
	"current_timestamp": true, "localtime": true, "localtimestamp": true,
}

// niladicFuncs are SQL functions Postgres calls without parentheses;
// TiDB gets them with.
var niladicFuncs = map[string]bool{
	"current_catalog": true, "current_role": true, "current_schema": true, "current_user": true,
	"session_user": true, "system_user": true, "user": true,
}

// unsupportedWords are Postgres reserved words for constructs basin does
// not implement, with the error they get; TiDB would misread most of
// them as names.
var unsupportedWords = map[string]string{
	"only":        "ONLY is not supported",
	"returning":   "RETURNING is not supported",
	"tablesample": "TABLESAMPLE is not supported",
	"overlaps":    "OVERLAPS is not supported",
	"variadic":    "VARIADIC is not supported",
	"symmetric":   "BETWEEN SYMMETRIC is not supported",
	"asymmetric":  "BETWEEN ASYMMETRIC is not supported",
}

// reservedWords are the remaining Postgres reserved words: never names,
// never valid where the rewrite meets them.
var reservedWords = map[string]bool{
	"analyse": true, "analyze": true, "authorization": true, "binary": true, "collation": true,
	"concurrently": true, "deferrable": true, "do": true, "freeze": true, "grant": true,
	"initially": true, "placing": true, "to": true, "verbose": true, "with": true,
}

func (rw *rewriter) add(it outItem) { rw.out = append(rw.out, it) }

func (rw *rewriter) addTok(t token, text string, kind itemKind) {
	rw.add(outItem{text: text, kind: kind, orig: t.pos, origEnd: t.end})
}

// run rewrites toks[i:j].
func (rw *rewriter) run(i, j int) error {
	for i < j {
		if rw.skip[i] {
			i++
			continue
		}
		next, err := rw.one(i, j)
		if err != nil {
			return err
		}
		i = next
	}
	return nil
}

// prev is the token before toks[i] inside the run, or a sentinel.
func (rw *rewriter) prev(i int) token {
	if i > rw.lo {
		return rw.sp.toks[i-1]
	}
	return token{kind: tokEOF, pos: -1}
}

// one rewrites the token at toks[i] (and any it consumes with it) and
// returns the index of the next token to rewrite.
func (rw *rewriter) one(i, j int) (int, error) {
	sp := rw.sp
	t := sp.toks[i]
	switch t.kind {
	case tokIdent:
		return rw.word(i, j)
	case tokQuotedIdent:
		if n, ok, err := rw.fromItem(i, j); ok || err != nil {
			return n, err
		}
		if sp.toks[i+1].isOp("(") && !rw.prev(i).isWord("into") {
			rw.addTok(t, funcTiDB(t.val), itemFunc)
			return i + 1, nil
		}
		rw.addTok(t, quoteTiDB(t.val), itemOperand)
		return i + 1, nil
	case tokString:
		// MySQL takes 'a' 'b' as 'ab' and a string after an expression as
		// its alias; in Postgres both are syntax errors.
		p := rw.prev(i)
		if i == rw.operand {
			p = token{kind: tokOp, val: "="} // after OPERATOR(...)
		}
		if p.kind == tokString || p.kind == tokNumber || p.kind == tokParam ||
			p.kind == tokQuotedIdent || p.isOp(")") || p.isWord("as") {
			return 0, sp.syntaxErr(t)
		}
		rw.addTok(t, stringTiDB(t.val), itemOperand)
		return i + 1, nil
	case tokNumber:
		rw.addTok(t, t.val, itemOperand)
		return i + 1, nil
	case tokParam:
		rw.add(outItem{text: "?", kind: itemOperand, orig: t.pos, origEnd: t.end, param: t.param})
		return i + 1, nil
	case tokLiterals:
		// The conversion puts the constants in the placeholder's place.
		rw.add(outItem{text: "0", kind: itemOperand, orig: t.pos, origEnd: t.end, run: i + 1})
		return i + 1, nil
	case tokRows:
		rw.addTok(t, "(", itemOpen)
		rw.add(outItem{text: "0", kind: itemOperand, orig: t.pos, origEnd: t.end, run: i + 1})
		rw.addTok(t, ")", itemClose)
		return i + 1, nil
	}
	switch t.val {
	case "(":
		if rw.inFrom() && sp.toks[i+1].isWord("values") {
			return rw.valuesList(i)
		}
		// A parenthesis in FROM that does not start a subquery holds
		// FROM items (a join), where a function call is a table function
		// and LATERAL may stand: FROM a, (f() AS x JOIN b ON ...).
		inner := ""
		if rw.inFrom() && !sp.toks[i+1].isWord("select") && !sp.toks[i+1].isWord("with") && !sp.toks[i+1].isOp("(") {
			inner = "from"
		}
		rw.addTok(t, "(", itemOpen)
		rw.clause = append(rw.clause, inner)
	case ")":
		rw.addTok(t, ")", itemClose)
		if len(rw.clause) > 1 {
			rw.clause = rw.clause[:len(rw.clause)-1]
		}
	case ".":
		if rw.prev(i).isOp(")") && (sp.toks[i+1].kind == tokIdent || sp.toks[i+1].kind == tokQuotedIdent || sp.toks[i+1].isOp("*")) {
			return rw.fieldSelect(i)
		}
		rw.addTok(t, ".", itemDot)
	case ",":
		// A comma after a join's ON (at its depth) starts the next FROM
		// item: FROM a JOIN b ON ..., c.
		if n := len(rw.clause); n > 0 && rw.clause[n-1] == "on" {
			rw.clause[n-1] = "from"
		}
		rw.addTok(t, t.val, itemOther)
	case "*", "+", "-", "/", "%", "=", "<>", "<", ">", "<=", ">=", "&":
		rw.addTok(t, t.val, itemOther)
	case "~", "~*", "!~", "!~*":
		return rw.regexOp(t, i+1, j)
	case "->", "->>", "#>", "#>>", "@>", "<@", "?", "?|", "?&", "#-":
		if t.val == "->" && i+2 < len(sp.toks) && isFieldName(sp.toks[i+1]) {
			if after := sp.toks[i+2]; !after.isOp("(") && !after.isOp(".") && after.kind != tokString {
				return rw.derefOp(i)
			}
		}
		return rw.jsonOp(t, i+1, j)
	case "||":
		// Without PIPES_AS_CONCAT, MySQL's || is OR; its | has the
		// precedence Postgres gives ||: below + and -, above comparisons.
		// Postgres's own | (bitwise or) is rejected below, so | in TiDB's
		// AST always means ||.
		rw.addTok(t, "|", itemOther)
	case "::":
		return rw.castOp(i)
	case "[":
		return rw.subscript(i, j)
	case "]":
		return 0, sp.syntaxErr(t)
	default:
		if isOpChar(t.val[0]) {
			return 0, unsupported(sp.charPos(t.pos), "operator %s is not supported", t.val)
		}
		return 0, sp.syntaxErr(t)
	}
	return i + 1, nil
}

// word rewrites an unquoted word: a keyword, a function name, a typed
// literal or a name.
func (rw *rewriter) word(i, j int) (int, error) {
	sp := rw.sp
	t := sp.toks[i]
	next := sp.toks[i+1]
	prev := rw.prev(i)
	pos := sp.charPos(t.pos)

	if t.val == "within" && rw.windowStarts(i) {
		return rw.joinWindow(i, j)
	}
	if n, ok, err := rw.fromItem(i, j); ok || err != nil {
		return n, err
	}
	// After a dot or AS any word is a name, reserved or not, as in
	// Postgres (SELECT 1 AS select).
	if prev.isOp(".") || prev.isWord("as") {
		kind := itemOperand
		if next.isOp("(") && prev.isOp(".") {
			kind = itemFunc // schema-qualified function: pg_catalog.now()
		}
		rw.addTok(t, quoteTiDB(t.val), kind)
		return i + 1, nil
	}

	if rw.clause[len(rw.clause)-1] == "group" {
		if _, _, ok := rw.groupingConstruct(i); ok {
			return rw.groupingSets(i, j)
		}
	}
	switch t.val {
	case "limit", "offset", "fetch":
		return rw.nestedTail(i, j)
	case "cast":
		if next.isOp("(") {
			return rw.castCall(i, j)
		}
	case "isnull", "notnull":
		if !next.isOp("(") {
			text := "IS NULL"
			if t.val == "notnull" {
				text = "IS NOT NULL"
			}
			rw.addTok(t, text, itemOther)
			return i + 1, nil
		}
	case "over":
		if prev.isOp(")") && (next.isOp("(") || isName(next)) {
			return rw.over(i, j)
		}
		if next.isOp("(") || next.kind == tokIdent || next.kind == tokQuotedIdent {
			return 0, unsupported(pos, "window functions are not supported")
		}
	case "window":
		if isName(next) && sp.toks[i+2].isWord("as") && sp.toks[i+3].isOp("(") {
			return rw.windowClause(i, j)
		}
	case "filter":
		if next.isOp("(") && prev.isOp(")") {
			return rw.aggFilter(i, j)
		}
	case "within":
		if next.isWord("group") && prev.isOp(")") {
			return rw.withinGroup(i, j)
		}
		if next.isWord("group") {
			return 0, unsupported(pos, "WITHIN GROUP is not supported here")
		}
	case "similar":
		return 0, unsupported(pos, "SIMILAR TO is not supported")
	case "distinct":
		if next.isWord("on") {
			return rw.distinctOn(i, j)
		}
	case "is":
		k := i + 1
		if sp.toks[k].isWord("not") {
			k++
		}
		if sp.toks[k].isWord("distinct") && sp.toks[k+1].isWord("from") {
			return rw.distinctFrom(i, k+2)
		}
	case "any", "some", "all":
		if next.isOp("(") && isComparison(prev) {
			return rw.quantified(i, j)
		}
	case "operator":
		if next.isOp("(") {
			return rw.operatorCall(i, j)
		}
	case "collate":
		return rw.collate(i)
	case "array":
		if next.isOp("[") {
			return rw.arrayLiteral(i, j)
		}
		if next.isOp("(") {
			return rw.arraySubquery(i, j)
		}
		return 0, sp.syntaxErr(t)
	case "full":
		// FULL [OUTER] JOIN, which MySQL lacks, as the one join keyword
		// TiDB has that basin's users cannot write (convert_query.go).
		switch {
		case next.isWord("join"):
			rw.addTok(t, "STRAIGHT_JOIN", itemOther)
			return i + 2, nil
		case next.isWord("outer") && sp.toks[i+2].isWord("join"):
			rw.addTok(t, "STRAIGHT_JOIN", itemOther)
			return i + 3, nil
		}
	case "join":
		if err := rw.checkJoinQual(i); err != nil {
			return 0, err
		}
	case "natural":
		// NATURAL [INNER | LEFT | RIGHT] JOIN TiDB reads as Postgres
		// does; NATURAL FULL JOIN it cannot (FULL JOIN is rewritten).
		if next.isWord("full") {
			return 0, unsupported(pos, "NATURAL FULL JOIN is not supported")
		}
		if next.isWord("inner") && sp.toks[i+2].isWord("join") {
			// TiDB has no NATURAL INNER JOIN: NATURAL JOIN is the same.
			rw.addTok(t, "NATURAL", itemOther)
			return i + 2, nil
		}
	case "lateral":
		if rw.inFrom() {
			rw.addTok(t, "LATERAL", itemOther)
			return i + 1, nil
		}
		return 0, sp.syntaxErr(t)
	case "at":
		if next.isWord("time") && sp.toks[i+2].isWord("zone") {
			return rw.atTimeZone(i)
		}
	case "row":
		if next.isOp("(") {
			return 0, unsupported(pos, "row constructors are not supported")
		}
	case "like", "ilike":
		return rw.like(i, j)
	case "with":
		if i == rw.lo {
			rw.addTok(t, "WITH", itemOther)
			if next.isWord("recursive") {
				rw.addTok(next, "RECURSIVE", itemOther)
				return i + 2, nil
			}
			return i + 1, nil
		}
	}

	if niladicFuncs[t.val] && !next.isOp("(") {
		rw.add(outItem{text: funcTiDB(t.val), kind: itemFunc, orig: t.pos, origEnd: t.end})
		rw.add(outItem{text: "(", kind: itemOpen, orig: t.pos, origEnd: t.end, glue: true})
		rw.add(outItem{text: ")", kind: itemClose, orig: t.pos, origEnd: t.end})
		return i + 1, nil
	}
	if msg, ok := unsupportedWords[t.val]; ok {
		return 0, unsupported(pos, "%s", msg)
	}
	if passThrough[t.val] || rw.keywords[t.val] {
		rw.noteClause(t.val)
		kind := itemOther
		switch {
		case constantWords[t.val]:
			kind = itemOperand
		case t.val == "case":
			kind = itemCase
		case t.val == "end":
			kind = itemEnd
		}
		rw.addTok(t, strings.ToUpper(t.val), kind)
		return i + 1, nil
	}
	if reservedWords[t.val] {
		return 0, sp.syntaxErr(t)
	}
	if next.isOp("(") && !prev.isWord("into") {
		if n, ok, err := rw.nestedCall(i, j); ok || err != nil {
			return n, err
		}
		if n, ok, err := rw.orderedCall(i, j); ok || err != nil {
			return n, err
		}
		if n, ok, err := rw.namedCall(i, j); ok || err != nil {
			return n, err
		}
		if specialCalls[t.val] {
			if n, ok, err := rw.specialCall(i, j); ok || err != nil {
				return n, err
			}
		}
		rw.addTok(t, funcTiDB(t.val), itemFunc)
		return i + 1, nil
	}
	if next.kind == tokString || typeLiteralStarts[t.val] {
		// A type name directly followed by a string is a typed literal
		// (TIMESTAMP '...'); a word that is no type is reported as one.
		// A malformed modifier means this was no type name at all.
		ref, err := sp.parseType(i)
		if sp.toks[ref.end].kind == tokString && (err == nil || err.Code != pgerr.SyntaxError) {
			if err != nil {
				return 0, err
			}
			return rw.typedLiteral(i, ref), nil
		}
	}
	rw.addTok(t, quoteTiDB(t.val), itemOperand)
	return i + 1, nil
}

// tidbAggregates are the aggregates written bare, for TiDB to parse as
// keywords: COUNT(*) and DISTINCT need its aggregate grammar. Every other
// function name is written quoted, which makes TiDB read a plain call
// whatever special grammar MySQL has for the name (EXTRACT, POSITION,
// CHAR, ...). STDDEV and VARIANCE stay quoted because TiDB reads them as
// the population variants, Postgres as the sample ones.
var tidbAggregates = map[string]bool{
	"count": true, "sum": true, "avg": true, "min": true, "max": true,
}

func funcTiDB(name string) string {
	if tidbAggregates[name] {
		return name
	}
	return quoteTiDB(name)
}

// specialCalls are the functions with SQL-standard keyword syntax inside
// their parentheses.
var specialCalls = map[string]bool{
	"extract": true, "substring": true, "position": true, "trim": true, "overlay": true,
}

// specialCall rewrites EXTRACT(field FROM x) to extract('field', x) and
// SUBSTRING(x FROM a FOR b) to substring(x, a, b), the plain calls
// Postgres defines them as. ok is false when the call uses no keyword
// syntax and is an ordinary call.
func (rw *rewriter) specialCall(i, j int) (next int, ok bool, err error) {
	sp := rw.sp
	t := sp.toks[i]
	open := i + 1
	close := sp.matchParen(open)
	if close >= j {
		return 0, false, nil
	}
	var kws []int // depth-1 keywords
	depth := 0
	for k := open; k < close; k++ {
		switch tk := sp.toks[k]; {
		case tk.isOp("("):
			depth++
		case tk.isOp(")"):
			depth--
		case depth == 1 && tk.kind == tokIdent:
			switch tk.val {
			case "from", "for", "in", "both", "leading", "trailing", "placing", "similar":
				kws = append(kws, k)
			}
		}
	}
	if len(kws) == 0 {
		return 0, false, nil
	}
	fn := func() {
		rw.addTok(t, quoteTiDB(t.val), itemFunc)
		rw.addTok(sp.toks[open], "(", itemOpen)
		rw.out[len(rw.out)-1].glue = true
	}
	switch {
	case t.val == "extract" && len(kws) == 1 && kws[0] == open+2:
		field := sp.toks[open+1]
		if field.kind != tokIdent && field.kind != tokString && field.kind != tokQuotedIdent {
			return 0, true, sp.syntaxErr(field)
		}
		fn()
		rw.addTok(field, stringTiDB(field.val), itemOperand)
		rw.addTok(sp.toks[kws[0]], ",", itemOther)
		if err := rw.run(kws[0]+1, close); err != nil {
			return 0, true, err
		}
	case t.val == "substring" && len(kws) <= 2:
		from, forr := -1, -1
		for _, k := range kws {
			switch {
			case sp.toks[k].isWord("from") && from < 0:
				from = k
			case sp.toks[k].isWord("for") && forr < 0:
				forr = k
			default:
				return 0, true, sp.syntaxErr(sp.toks[k])
			}
		}
		// Each keyword's operand runs to the next keyword or the end.
		end := func(k int) int {
			for _, o := range kws {
				if o > k {
					return o
				}
			}
			return close
		}
		fn()
		if err := rw.run(open+1, kws[0]); err != nil {
			return 0, true, err
		}
		if from >= 0 {
			rw.addTok(sp.toks[from], ",", itemOther)
			if err := rw.run(from+1, end(from)); err != nil {
				return 0, true, err
			}
		} else {
			// SUBSTRING(x FOR n) starts at 1.
			rw.addTok(sp.toks[forr], ",", itemOther)
			rw.addTok(sp.toks[forr], "1", itemOperand)
		}
		if forr >= 0 {
			rw.addTok(sp.toks[forr], ",", itemOther)
			if err := rw.run(forr+1, end(forr)); err != nil {
				return 0, true, err
			}
		}
	case t.val == "trim":
		n, err := rw.trimCall(i, open, close)
		return n, true, err
	case t.val == "position" && len(kws) == 1 && sp.toks[kws[0]].isWord("in"):
		// POSITION(sub IN s) is position(s, sub).
		fn()
		if err := rw.run(kws[0]+1, close); err != nil {
			return 0, true, err
		}
		rw.addTok(sp.toks[kws[0]], ",", itemOther)
		if err := rw.run(open+1, kws[0]); err != nil {
			return 0, true, err
		}
	case t.val == "overlay" && (len(kws) == 2 || len(kws) == 3) && sp.toks[kws[0]].isWord("placing") &&
		sp.toks[kws[1]].isWord("from") && (len(kws) == 2 || sp.toks[kws[2]].isWord("for")):
		// OVERLAY(s PLACING r FROM a [FOR n]) is overlay(s, r, a [, n]).
		fn()
		if err := rw.run(open+1, kws[0]); err != nil {
			return 0, true, err
		}
		for n, k := range kws {
			end := close
			if n+1 < len(kws) {
				end = kws[n+1]
			}
			rw.addTok(sp.toks[k], ",", itemOther)
			if err := rw.run(k+1, end); err != nil {
				return 0, true, err
			}
		}
	default:
		return 0, true, unsupported(sp.charPos(sp.toks[kws[0]].pos), "%s(... %s ...) is not supported",
			strings.ToUpper(t.val), strings.ToUpper(sp.toks[kws[0]].val)).
			WithHint("Call the function with plain arguments, e.g. strpos(string, substring) or btrim(string, characters).")
	}
	rw.addTok(sp.toks[close], ")", itemClose)
	return close + 1, true, nil
}

// typeLiteralStarts are words that can start a typed literal whose
// string is not the next token: DOUBLE PRECISION '1', VARCHAR(3) 'x',
// pg_catalog.int8 '1'.
var typeLiteralStarts = map[string]bool{
	"double": true, "character": true, "char": true, "national": true, "timestamp": true,
	"time": true, "bit": true, "pg_catalog": true, "varchar": true, "numeric": true, "decimal": true,
	"interval": true,
}

func isComparison(t token) bool {
	if t.kind != tokOp {
		return false
	}
	switch t.val {
	case "=", "<>", "<", ">", "<=", ">=":
		return true
	}
	return false
}

// like writes LIKE or ILIKE and parenthesizes a pattern that is more
// than one token: TiDB's grammar takes a simple expression there, where
// Postgres takes an arithmetic one (a LIKE 'x' || $1).
func (rw *rewriter) like(i, j int) (int, error) {
	t := rw.sp.toks[i]
	rw.addTok(t, strings.ToUpper(t.val), itemOther)
	e := min(rw.arithSpan(i+1), j)
	if e <= i+2 {
		return i + 1, nil
	}
	first, last := rw.sp.toks[i+1], rw.sp.toks[e-1]
	rw.add(outItem{text: "(", kind: itemOpen, orig: first.pos, origEnd: first.end})
	if err := rw.run(i+1, e); err != nil {
		return 0, err
	}
	rw.add(outItem{text: ")", kind: itemClose, orig: last.pos, origEnd: last.end})
	return e, nil
}

// arithSpan returns the end of the arithmetic expression starting at
// toks[i]: operands joined by + - * / % || with their casts. It is a
// scan, not a parse: on anything unexpected it stops and lets TiDB
// report the error.
func (rw *rewriter) arithSpan(i int) int { return rw.opSpan(i, " + - * / % || ") }

// opSpan is arithSpan over operands joined by ops (space-separated,
// with a space at each end).
func (rw *rewriter) opSpan(i int, ops string) int {
	toks := rw.sp.toks
	last := len(toks) - 1
	for {
		for toks[i].isOp("+") || toks[i].isOp("-") {
			i++
		}
		t := toks[i]
		switch {
		case t.kind == tokString || t.kind == tokNumber || t.kind == tokParam:
			i++
		case t.kind == tokIdent && t.val == "array" && toks[i+1].isOp("["):
			i = rw.matchBracket(i+1) + 1
		case t.kind == tokIdent || t.kind == tokQuotedIdent:
			if passThrough[t.val] && t.kind == tokIdent && !constantWords[t.val] {
				return i
			}
			if toks[i+1].isOp("(") {
				i = rw.sp.matchParen(i+1) + 1
				break
			}
			if t.kind == tokIdent && (toks[i+1].kind == tokString || typeLiteralStarts[t.val]) {
				if ref, err := rw.sp.parseType(i); err == nil && toks[ref.end].kind == tokString {
					i = ref.end + 1
					break
				}
			}
			i++
			for toks[i].isOp(".") && (toks[i+1].kind == tokIdent || toks[i+1].kind == tokQuotedIdent) {
				i += 2
			}
		case t.isOp("("):
			i = rw.sp.matchParen(i) + 1
		default:
			return i
		}
		if i > last {
			return last
		}
		for toks[i].isOp("::") {
			ref, err := rw.sp.parseType(i + 1)
			if err != nil {
				return i
			}
			i = ref.end
		}
		switch {
		case toks[i].kind == tokOp && strings.Contains(ops, " "+toks[i].val+" "):
			i++
		default:
			return i
		}
	}
}

// castCall rewrites CAST(x AS type) at toks[i] to basin__cast_type(x).
func (rw *rewriter) castCall(i, j int) (int, error) {
	sp := rw.sp
	open := i + 1
	close := sp.matchParen(open)
	as, comma := -1, -1
	depth := 0
	for k := open; k < close; k++ {
		switch {
		case sp.toks[k].isOp("("):
			depth++
		case sp.toks[k].isOp(")"):
			depth--
		case depth == 1 && sp.toks[k].isWord("as"):
			as = k
		case depth == 1 && sp.toks[k].isOp(",") && comma < 0:
			comma = k
		}
	}
	if close >= j || as < 0 {
		// Malformed: let TiDB report where.
		rw.addTok(sp.toks[i], "CAST", itemFunc)
		return i + 1, nil
	}
	if as == open+1 {
		return 0, sp.syntaxErr(sp.toks[as])
	}
	if comma >= 0 && comma < as {
		return 0, sp.syntaxErr(sp.toks[comma])
	}
	ref, err := sp.parseType(as + 1)
	if err != nil {
		return 0, err
	}
	if ref.end != close {
		return 0, sp.syntaxErr(sp.toks[ref.end])
	}
	t := sp.toks[i]
	rw.add(outItem{text: castFuncName(ref.typ), kind: itemFunc, orig: t.pos, origEnd: t.end,
		cast: &castInfo{typ: ref.typ, precision: ref.precision, scale: ref.scale, pos: t.pos}})
	rw.addTok(sp.toks[open], "(", itemOpen)
	rw.out[len(rw.out)-1].glue = true
	if err := rw.run(open+1, as); err != nil {
		return 0, err
	}
	rw.addTok(sp.toks[close], ")", itemClose)
	return close + 1, nil
}

// typedLiteral rewrites TIMESTAMP '...' (type name, then a string) to a
// cast of the string.
func (rw *rewriter) typedLiteral(i int, ref typeRef) int {
	t := rw.sp.toks[i]
	s := rw.sp.toks[ref.end]
	val, end := s.val, ref.end+1
	if ref.typ == catalog.Interval {
		val, end = rw.intervalQualifier(val, end)
	}
	rw.add(outItem{text: castFuncName(ref.typ), kind: itemFunc, orig: t.pos, origEnd: t.end,
		cast: &castInfo{typ: ref.typ, precision: ref.precision, scale: ref.scale, pos: t.pos}})
	rw.add(outItem{text: "(", kind: itemOpen, orig: t.pos, origEnd: t.end, glue: true})
	rw.addTok(s, stringTiDB(val), itemOperand)
	rw.add(outItem{text: ")", kind: itemClose, orig: s.pos, origEnd: s.end})
	return end
}

// intervalFields are the field words an interval literal's qualifier
// may name: INTERVAL '3' DAY, INTERVAL '1:30' HOUR TO MINUTE.
var intervalFields = map[string]bool{
	"year": true, "month": true, "day": true, "hour": true, "minute": true, "second": true,
}

// intervalQualifier reads the qualifier after INTERVAL '...' at toks[j]:
// a bare number in the string counts the first field's units ('3' DAY is
// 3 days), as Postgres reads it; other text keeps its own units. It
// returns the string to cast and the index after the qualifier.
func (rw *rewriter) intervalQualifier(val string, j int) (string, int) {
	toks := rw.sp.toks
	if !(toks[j].kind == tokIdent && intervalFields[toks[j].val]) {
		return val, j
	}
	unit := toks[j].val
	j++
	if toks[j].isOp("(") { // SECOND(3)
		if k, _, err := rw.sp.typeModifiers(j); err == nil {
			j = k
		}
	}
	if toks[j].isWord("to") && toks[j+1].kind == tokIdent && intervalFields[toks[j+1].val] {
		j += 2
		if toks[j].isOp("(") {
			if k, _, err := rw.sp.typeModifiers(j); err == nil {
				j = k
			}
		}
	}
	if _, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err == nil {
		val = strings.TrimSpace(val) + " " + unit
	}
	return val, j
}

// castOp rewrites x::type (the :: at toks[i]) by wrapping the operand
// already written, which :: binds tighter than any other operator.
func (rw *rewriter) castOp(i int) (int, error) {
	sp := rw.sp
	t := sp.toks[i]
	start := rw.operandStart()
	if start < 0 {
		return 0, sp.syntaxErr(t)
	}
	ref, err := sp.parseType(i + 1)
	if err != nil {
		return 0, err
	}
	first := rw.out[start]
	last := sp.toks[ref.end-1]
	fn := outItem{text: castFuncName(ref.typ), kind: itemFunc, orig: first.orig, origEnd: first.origEnd,
		cast: &castInfo{typ: ref.typ, precision: ref.precision, scale: ref.scale, pos: t.pos}}
	open := outItem{text: "(", kind: itemOpen, orig: first.orig, origEnd: first.origEnd, glue: true}
	rw.out = slices.Insert(rw.out, start, fn, open)
	rw.add(outItem{text: ")", kind: itemClose, orig: last.pos, origEnd: last.end})
	return ref.end, nil
}

// AtTimeZoneFunc is the function x AT TIME ZONE z is rewritten to, with
// its operands in that order (timezone(z, x) takes them reversed).
const AtTimeZoneFunc = "basin_at_time_zone"

// atTimeZone rewrites x AT TIME ZONE z (AT at toks[i]) to a call of
// AtTimeZoneFunc: AT binds tighter than arithmetic, so x is the operand
// already written, and z one token (a string, a column or a parameter).
func (rw *rewriter) atTimeZone(i int) (int, error) {
	sp := rw.sp
	t := sp.toks[i]
	start := rw.operandStart()
	if start < 0 {
		return 0, sp.syntaxErr(t)
	}
	first := rw.out[start]
	fn := outItem{text: quoteTiDB(AtTimeZoneFunc), kind: itemFunc, orig: first.orig, origEnd: first.origEnd}
	open := outItem{text: "(", kind: itemOpen, orig: first.orig, origEnd: first.origEnd, glue: true}
	rw.out = slices.Insert(rw.out, start, fn, open)
	rw.addTok(t, ",", itemOther)
	z := sp.toks[i+3]
	switch z.kind {
	case tokString:
		rw.addTok(z, stringTiDB(z.val), itemOperand)
	case tokParam:
		rw.add(outItem{text: "?", kind: itemOperand, orig: z.pos, origEnd: z.end, param: z.param})
	case tokIdent, tokQuotedIdent:
		if reservedWords[z.val] && z.kind == tokIdent {
			return 0, sp.syntaxErr(z)
		}
		rw.addTok(z, quoteTiDB(z.val), itemOperand)
	default:
		return 0, sp.syntaxErr(z)
	}
	rw.add(outItem{text: ")", kind: itemClose, orig: z.pos, origEnd: z.end})
	return i + 4, nil
}

// operandStart returns the index in rw.out where the operand ending at
// the last item starts, or -1 when the last item ends no operand.
func (rw *rewriter) operandStart() int {
	out := rw.out
	k := len(out) - 1
	if k < 0 {
		return -1
	}
	dotted := func(s int) int {
		for s >= 2 && out[s-1].kind == itemDot && out[s-2].kind == itemOperand {
			s -= 2
		}
		return s
	}
	switch out[k].kind {
	case itemOperand:
		return dotted(k)
	case itemClose:
		m := matchBack(out, k, itemOpen, itemClose)
		if m < 0 {
			return -1
		}
		if m > 0 && out[m-1].kind == itemFunc {
			return dotted(m - 1)
		}
		return m
	case itemEnd:
		return matchBack(out, k, itemCase, itemEnd)
	}
	return -1
}

// matchBack finds the opening item matching the closing one at out[k].
func matchBack(out []outItem, k int, open, close itemKind) int {
	depth := 0
	for m := k; m >= 0; m-- {
		switch out[m].kind {
		case close:
			depth++
		case open:
			depth--
			if depth == 0 {
				return m
			}
		}
	}
	return -1
}

func castFuncName(t catalog.Type) string {
	if t.HasNested() {
		// A compound type's text is no identifier; the side table
		// has the type.
		return castFuncPrefix + "nested"
	}
	return castFuncPrefix + strings.NewReplacer("[]", "_array", " ", "_").Replace(strings.ToLower(t.String()))
}

// quoteTiDB quotes a name for TiDB.
func quoteTiDB(name string) string {
	return "`" + strings.ReplaceAll(name, "`", "``") + "`"
}

// stringTiDB spells a string constant for TiDB, whose parser runs with
// NO_BACKSLASH_ESCAPES: only the quote needs doubling.
func stringTiDB(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// joinEnds are the words that end a join's right item at its depth when
// no ON or USING came first: another join, or the next clause.
var joinEnds = map[string]bool{
	"join": true, "inner": true, "left": true, "right": true, "full": true, "cross": true, "natural": true,
	"where": true, "group": true, "having": true, "order": true, "limit": true, "offset": true, "window": true,
	"union": true, "intersect": true, "except": true, "fetch": true, "for": true, "emit": true,
}

// checkJoinQual refuses a JOIN at toks[i] that needs ON or USING and
// has neither, as Postgres does (MySQL, and so TiDB, reads it as a
// cross join): every JOIN but CROSS JOIN and NATURAL ... JOIN.
func (rw *rewriter) checkJoinQual(i int) error {
	sp := rw.sp
	toks := sp.toks
	for k := i - 1; k >= rw.lo; k-- {
		t := toks[k]
		if t.isWord("inner") || t.isWord("left") || t.isWord("right") || t.isWord("full") || t.isWord("outer") {
			continue
		}
		if t.isWord("cross") || t.isWord("natural") {
			return nil
		}
		break
	}
	depth := 0
	for k := i + 1; k < len(toks); k++ {
		t := toks[k]
		switch {
		case t.kind == tokEOF || t.isOp(";"):
			return sp.syntaxErr(t)
		case t.isOp("("):
			depth++
		case t.isOp(")"):
			if depth == 0 {
				return sp.syntaxErr(t)
			}
			depth--
		case depth == 0 && t.isOp(","):
			return sp.syntaxErr(t)
		case depth > 0 || t.kind != tokIdent || toks[k-1].isWord("as") || toks[k-1].isOp("."):
		case t.val == "on" || t.val == "using":
			return nil
		case k > i+1 && joinEnds[t.val]:
			return sp.syntaxErr(t)
		}
	}
	return nil
}
