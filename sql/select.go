package sql

import (
	"sort"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
)

// selectInfo is what the token layer learns about a SELECT that TiDB's
// AST does not keep.
type selectInfo struct {
	// fromPos is the byte offset of the relation after FROM, or -1.
	fromPos int
	// nulls[k] is NULLS FIRST/LAST of the k-th ORDER BY item, which TiDB
	// does not parse and the token layer strips.
	nulls []*bool
	// orderStarts and groupStarts are the byte offsets where the ORDER
	// BY and GROUP BY items start: TiDB turns ORDER BY 1 into a position
	// without an offset.
	orderStarts, groupStarts []int
}

// parseSelect parses the SELECT in toks[lo:hi]; toks[hi] ends it.
//
// The token layer handles what TiDB's grammar lacks or reads differently:
// NULLS FIRST/LAST is stripped and recorded, and the LIMIT / OFFSET /
// FETCH clauses (which Postgres accepts in any order, OFFSET alone and
// LIMIT ALL included) are cut off and parsed here, each value as an
// expression of its own.
func (sp *stmtParser) parseSelect(lo, hi int) (*Select, error) {
	toks := sp.toks
	info := selectInfo{fromPos: -1}
	var emit EmitMode
	if hi-lo > 2 && toks[hi-2].isWord("emit") && (toks[hi-1].isWord("changes") || toks[hi-1].isWord("final")) {
		emit = EmitChanges
		if toks[hi-1].isWord("final") {
			emit = EmitFinal
		}
		hi -= 2
	}
	skip := make(map[int]bool)
	var window *StreamWindow
	tail := hi
	orderBy, groupBy := -1, -1
	setOps := false
	var clauses []int // depth-0 clause keywords after GROUP BY
	depth := 0
scan:
	for k := lo; k < hi; k++ {
		t := toks[k]
		switch {
		case t.isOp("("):
			depth++
		case t.isOp(")"):
			depth--
		case depth != 0 || t.kind != tokIdent:
		case t.val == "union" || t.val == "intersect" || t.val == "except":
			// The arms are converted from TiDB's AST; only the ORDER BY
			// after the last one, which orders the whole, needs tokens.
			setOps = true
			groupBy = -1
			clauses = clauses[:0]
		case t.val == "limit" || t.val == "offset" || t.val == "fetch" || t.val == "for":
			tail = k
			break scan
		case t.val == "from" && info.fromPos < 0:
			info.fromPos = toks[k+1].pos
		case t.val == "group" && toks[k+1].isWord("by"):
			groupBy = k
		case t.val == "order" && toks[k+1].isWord("by"):
			orderBy = k
			clauses = append(clauses, k)
		case t.val == "window" && info.fromPos >= 0 && sp.streamWindowStarts(k):
			if window != nil {
				return nil, sp.syntaxErr(t).WithHint("A query has one WINDOW clause.")
			}
			clauses = append(clauses, k)
			var err error
			if window, k, err = sp.streamWindow(k, skip); err != nil {
				return nil, err
			}
			k-- // the loop's k++ moves past the clause
		case t.val == "having" || t.val == "window":
			clauses = append(clauses, k)
		}
	}

	if groupBy >= 0 && !setOps {
		end := tail
		for _, c := range clauses {
			if c > groupBy && c < end {
				end = c
			}
		}
		for _, it := range sp.splitList(groupBy+2, end) {
			info.groupStarts = append(info.groupStarts, toks[it[0]].pos)
		}
	}
	if orderBy >= 0 {
		for _, it := range sp.splitList(orderBy+2, tail) {
			a, b := it[0], it[1]
			info.orderStarts = append(info.orderStarts, toks[a].pos)
			var nf *bool
			if b-a >= 3 && toks[b-2].isWord("nulls") && (toks[b-1].isWord("first") || toks[b-1].isWord("last")) {
				first := toks[b-1].isWord("first")
				nf = &first
				skip[b-2], skip[b-1] = true, true
			}
			info.nulls = append(info.nulls, nf)
		}
	}

	sp.nestedNulls(lo, tail, skip)
	rw := sp.newRewriter(lo)
	rw.skip = skip
	if err := rw.run(lo, tail); err != nil {
		return nil, err
	}
	tt := rw.build(toks[tail])
	stmt, err := sp.parseTiDB(tt)
	if err != nil {
		return nil, err
	}
	c := &converter{sp: sp, tt: tt}
	sel, err := c.selectStmt(stmt, &info)
	if err != nil {
		return nil, err
	}
	if err := sp.selectTail(sel, tail, hi); err != nil {
		return nil, err
	}
	sel.Window, sel.Emit = window, emit
	return sel, nil
}

// nullsItem is an ORDER BY item, toks[lo:hi], whose NULLS FIRST/LAST
// the token layer stripped.
type nullsItem struct {
	lo, hi int
	first  bool
}

// orderEnds are the words that end an ORDER BY list at its own depth.
var orderEnds = map[string]bool{
	"limit": true, "offset": true, "fetch": true, "for": true, "rows": true, "range": true, "groups": true,
	"union": true, "intersect": true, "except": true, "window": true,
}

// nestedNulls strips NULLS FIRST/LAST from the items of every ORDER BY
// inside parentheses in toks[lo:hi] (a window's OVER (... ORDER BY x
// NULLS LAST), a subquery's), which TiDB does not parse: it marks those
// words skipped and records the items (converter.orderBy finds them by
// their tokens). The statement's own ORDER BY is parseSelect's.
func (sp *stmtParser) nestedNulls(lo, hi int, skip map[int]bool) {
	toks := sp.toks
	depth := 0
	for k := lo; k+1 < hi; k++ {
		switch t := toks[k]; {
		case t.isOp("("):
			depth++
			continue
		case t.isOp(")"):
			depth--
			continue
		case depth == 0 || !t.isWord("order") || !toks[k+1].isWord("by"):
			continue
		}
		end := sp.listEnd(k+2, hi, orderEnds)
		for _, it := range sp.splitList(k+2, end) {
			a, b := it[0], it[1]
			if b-a >= 3 && toks[b-2].isWord("nulls") && (toks[b-1].isWord("first") || toks[b-1].isWord("last")) {
				skip[b-2], skip[b-1] = true, true
				sp.nullsItems = append(sp.nullsItems, nullsItem{lo: a, hi: b - 2, first: toks[b-1].isWord("first")})
			}
		}
	}
}

// listEnd returns where a list starting at toks[from] ends, before hi:
// at the first word of ends or the ")" that closes an enclosing
// parenthesis, at the list's own depth.
func (sp *stmtParser) listEnd(from, hi int, ends map[string]bool) int {
	depth := 0
	for k := from; k < hi; k++ {
		switch t := sp.toks[k]; {
		case t.isOp("("):
			depth++
		case t.isOp(")"):
			if depth == 0 {
				return k
			}
			depth--
		case depth == 0 && t.kind == tokIdent && ends[t.val]:
			return k
		}
	}
	return hi
}

// splitList splits toks[a:b] at depth-0 commas into [start, end) pairs.
// An empty range has no items; an empty item (a, , b) is kept for the
// caller to report.
func (sp *stmtParser) splitList(a, b int) [][2]int {
	if a >= b {
		return nil
	}
	var items [][2]int
	depth := 0
	start := a
	for k := a; k < b; k++ {
		switch t := sp.toks[k]; {
		case t.isOp("("):
			depth++
		case t.isOp(")"):
			depth--
		case depth == 0 && t.isOp(","):
			items = append(items, [2]int{start, k})
			start = k + 1
		}
	}
	return append(items, [2]int{start, b})
}

// parseValues parses a VALUES statement, VALUES (...), (...) with an
// ORDER BY, LIMIT, OFFSET or FETCH after its rows, which Postgres runs as
// SELECT * FROM (VALUES ...) AS "*VALUES*" with that ORDER BY and
// LIMIT: its columns are column1, column2, ... It is parsed as that
// SELECT, whose added words stand at the VALUES keyword.
func (sp *stmtParser) parseValues(i int) (Statement, error) {
	toks := sp.toks
	end, depth := i+1, 0
scan:
	for ; end < len(toks)-1; end++ {
		t := toks[end]
		switch {
		case t.isOp("("):
			depth++
		case t.isOp(")"):
			depth--
		case depth != 0:
		case t.isWord("order") && toks[end+1].isWord("by"), t.isWord("limit"), t.isWord("offset"),
			t.isWord("fetch"), t.isWord("for"), t.isWord("union"), t.isWord("intersect"), t.isWord("except"):
			break scan
		}
	}
	at := toks[i]
	word := func(kind tokKind, val string) token { return token{kind: kind, val: val, pos: at.pos, end: at.pos} }
	st := make([]token, 0, len(toks)+7)
	st = append(st, toks[:i]...)
	st = append(st, word(tokIdent, "select"), word(tokOp, "*"), word(tokIdent, "from"), word(tokOp, "("))
	st = append(st, toks[i:end]...)
	st = append(st, word(tokOp, ")"), word(tokIdent, "as"), word(tokQuotedIdent, "*VALUES*"))
	st = append(st, toks[end:]...)
	sp.toks = st
	return sp.parseSelect(i, len(st)-1)
}

// nestedTail rewrites the LIMIT, OFFSET and FETCH clauses of a
// parenthesized SELECT, which start at toks[i] and end at the closing
// parenthesis (before j): they are parsed as the statement's own are
// (selectTail: in any order, OFFSET alone, LIMIT ALL, FETCH FIRST, each
// value an expression) and handed to TiDB as "LIMIT ? OFFSET ?", whose
// markers the converter replaces by what was parsed.
func (rw *rewriter) nestedTail(i, j int) (int, error) {
	toks := rw.sp.toks
	end, depth := i, 0
	for ; end < j; end++ {
		t := toks[end]
		if t.isOp("(") {
			depth++
		} else if t.isOp(")") {
			if depth == 0 {
				break
			}
			depth--
		} else if depth == 0 && (t.isOp(";") || t.isWord("union") || t.isWord("intersect") || t.isWord("except")) {
			break
		}
	}
	var tail Select
	if err := rw.sp.selectTail(&tail, i, end); err != nil {
		return 0, err
	}
	rw.noteClause("limit")
	t := toks[i]
	if tail.Limit == nil && tail.Offset == nil {
		return end, nil // LIMIT ALL
	}
	rw.addTok(t, "LIMIT", itemOther)
	rw.add(outItem{text: "?", kind: itemOperand, orig: t.pos, origEnd: t.end, tail: tail.Limit, tailNone: tail.Limit == nil})
	if tail.Offset != nil {
		rw.addTok(t, "OFFSET", itemOther)
		rw.add(outItem{text: "?", kind: itemOperand, orig: t.pos, origEnd: t.end, tail: tail.Offset})
	}
	return end, nil
}

// selectTail parses LIMIT, OFFSET and FETCH in toks[k:hi].
func (sp *stmtParser) selectTail(sel *Select, k, hi int) error {
	toks := sp.toks
	limitSeen, offsetSeen := false, false
	for k < hi {
		t := toks[k]
		switch {
		case t.isWord("limit"), t.isWord("fetch"):
			if limitSeen {
				return &pgerr.Error{Code: pgerr.SyntaxError, Message: "multiple LIMIT clauses not allowed",
					Position: sp.charPos(t.pos)}
			}
			limitSeen = true
			var err error
			if t.isWord("limit") {
				k, err = sp.limitClause(sel, k+1, hi)
			} else {
				k, err = sp.fetchClause(sel, k+1, hi)
			}
			if err != nil {
				return err
			}
		case t.isWord("offset"):
			if offsetSeen {
				return &pgerr.Error{Code: pgerr.SyntaxError, Message: "multiple OFFSET clauses not allowed",
					Position: sp.charPos(t.pos)}
			}
			offsetSeen = true
			e, next, err := sp.tailExpr(k+1, hi)
			if err != nil {
				return err
			}
			sel.Offset = e
			k = next
			if toks[k].isWord("row") || toks[k].isWord("rows") {
				k++
			}
		case t.isWord("for"):
			return unsupported(sp.charPos(t.pos), "SELECT ... FOR UPDATE/SHARE is not supported")
		default:
			return sp.syntaxErr(t)
		}
	}
	return nil
}

func (sp *stmtParser) limitClause(sel *Select, k, hi int) (int, error) {
	if sp.toks[k].isWord("all") {
		return k + 1, nil // LIMIT ALL: no limit
	}
	e, next, err := sp.tailExpr(k, hi)
	if err != nil {
		return 0, err
	}
	sel.Limit = e
	return next, nil
}

// fetchClause parses FETCH {FIRST|NEXT} [n] {ROW|ROWS} ONLY after FETCH.
func (sp *stmtParser) fetchClause(sel *Select, k, hi int) (int, error) {
	toks := sp.toks
	if !toks[k].isWord("first") && !toks[k].isWord("next") {
		return 0, sp.syntaxErr(toks[k])
	}
	k++
	if toks[k].isWord("row") || toks[k].isWord("rows") {
		sel.Limit = &Literal{Value: int64(1), Type: catalog.BigInt}
	} else {
		e, next, err := sp.tailExpr(k, hi)
		if err != nil {
			return 0, err
		}
		sel.Limit = e
		k = next
	}
	if !toks[k].isWord("row") && !toks[k].isWord("rows") {
		return 0, sp.syntaxErr(toks[k])
	}
	k++
	if toks[k].isWord("with") && toks[k+1].isWord("ties") {
		return 0, unsupported(sp.charPos(toks[k].pos), "FETCH ... WITH TIES is not supported")
	}
	if !toks[k].isWord("only") {
		return 0, sp.syntaxErr(toks[k])
	}
	return k + 1, nil
}

// tailExpr parses the value of a LIMIT, OFFSET or FETCH clause: the
// tokens from k up to the next clause keyword at depth 0.
func (sp *stmtParser) tailExpr(k, hi int) (Expr, int, error) {
	e := k
	depth := 0
	for ; e < hi; e++ {
		t := sp.toks[e]
		if t.isOp("(") {
			depth++
		} else if t.isOp(")") {
			depth--
		} else if depth == 0 && t.kind == tokIdent {
			switch t.val {
			case "limit", "offset", "fetch", "for", "row", "rows":
				goto done
			}
		}
	}
done:
	if e == k {
		return nil, 0, sp.syntaxErr(sp.toks[k])
	}
	x, err := sp.parseExpr(k, e)
	return x, e, err
}

// parseExpr parses toks[a:b] as one expression, by handing TiDB
// "SELECT <expr>".
func (sp *stmtParser) parseExpr(a, b int) (Expr, error) {
	rw := sp.newRewriter(a)
	first := sp.toks[a]
	rw.add(outItem{text: "SELECT", orig: first.pos, origEnd: first.pos})
	if err := rw.run(a, b); err != nil {
		return nil, err
	}
	tt := rw.build(sp.toks[b])
	stmt, err := sp.parseTiDB(tt)
	if err != nil {
		return nil, err
	}
	sel, ok := stmt.(*ast.SelectStmt)
	if !ok || sel.Fields == nil || len(sel.Fields.Fields) == 0 {
		return nil, sp.syntaxErr(first)
	}
	c := &converter{sp: sp, tt: tt}
	fields := sel.Fields.Fields
	if len(fields) > 1 {
		// The comma before the second field is where Postgres stops.
		start, _ := c.fieldSpan(fields[1])
		if k := sp.tokenAt(start); k > 0 {
			return nil, sp.syntaxErr(sp.toks[k-1])
		}
		return nil, sp.syntaxErr(first)
	}
	f := fields[0]
	if f.AsName.L != "" || f.WildCard != nil || sel.From != nil || sel.Where != nil ||
		sel.GroupBy != nil || sel.Having != nil || sel.OrderBy != nil || sel.Limit != nil {
		_, end := c.fieldSpan(f)
		if k := sp.tokenBefore(end); k >= 0 {
			return nil, sp.syntaxErr(sp.toks[k])
		}
		return nil, sp.syntaxErr(first)
	}
	return c.expr(f.Expr)
}

// tokenBefore returns the index of the last token ending at or before
// byte offset off, or -1.
func (sp *stmtParser) tokenBefore(off int) int {
	toks := sp.toks[:len(sp.toks)-1]
	return sort.Search(len(toks), func(k int) bool { return toks[k].end > off }) - 1
}

// parseInsert parses INSERT INTO name [(cols)] VALUES (...), ...
// [RETURNING _position] at toks[i].
func (sp *stmtParser) parseInsert(i int) (*Insert, error) {
	toks := sp.toks
	hi, returning, err := sp.scanWrite("INSERT", i, func(k int, t token) error {
		switch {
		case t.val == "on" && toks[k+1].isWord("conflict"):
			return unsupported(sp.charPos(t.pos), "INSERT ... ON CONFLICT is not supported")
		case t.val == "default" && toks[k+1].isWord("values"):
			return unsupported(sp.charPos(t.pos), "INSERT ... DEFAULT VALUES is not supported")
		case t.val == "overriding":
			return unsupported(sp.charPos(t.pos), "INSERT ... OVERRIDING is not supported")
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	stmt, c, err := sp.viaTiDB(i, hi, nil)
	if err != nil {
		return nil, err
	}
	ins, ok := stmt.(*ast.InsertStmt)
	if !ok {
		return nil, sp.syntaxErr(toks[i])
	}
	out, err := c.insertStmt(ins)
	if err != nil {
		return nil, err
	}
	out.ReturnPosition = returning
	sp.insertPositions(out, i)
	return out, nil
}

// viaTiDB rewrites the statement toks[i:hi] for TiDB's parser, passing
// keywords through bare besides the usual ones, and parses it there; it
// returns TiDB's tree and the converter that reads it.
func (sp *stmtParser) viaTiDB(i, hi int, keywords map[string]bool) (ast.StmtNode, *converter, error) {
	rw := sp.newRewriter(i)
	rw.keywords = keywords
	if err := rw.run(i, hi); err != nil {
		return nil, nil, err
	}
	tt := rw.build(sp.toks[hi])
	stmt, err := sp.parseTiDB(tt)
	if err != nil {
		return nil, nil, err
	}
	return stmt, &converter{sp: sp, tt: tt}, nil
}

// scanWrite scans the write statement verb (INSERT, DELETE) from
// toks[i] for a top-level RETURNING, which ends what TiDB sees (so a
// syntax error at the end of the statement before it points at
// RETURNING, as in Postgres), and passes every other top-level word to
// refuse, which returns an error for syntax basin does not take. It
// returns where the statement ends for TiDB and whether RETURNING
// _position followed.
func (sp *stmtParser) scanWrite(verb string, i int, refuse func(k int, t token) error) (hi int, returning bool, err error) {
	toks := sp.toks
	hi = len(toks) - 1
	depth := 0
	for k := i; k < hi; k++ {
		t := toks[k]
		switch {
		case t.isOp("("):
			depth++
		case t.isOp(")"):
			depth--
		case depth != 0 || t.kind != tokIdent:
		case t.val == "returning":
			if err := sp.checkReturning(verb, k, hi); err != nil {
				return 0, false, err
			}
			return k, true, nil
		default:
			if err := refuse(k, t); err != nil {
				return 0, false, err
			}
		}
	}
	return hi, false, nil
}

// checkReturning checks the RETURNING clause of verb (INSERT, DELETE)
// at toks[k], which runs to toks[hi]. A write returns no rows (they are
// Kafka records, read back through the stores), only the position token
// of what it wrote.
func (sp *stmtParser) checkReturning(verb string, k, hi int) error {
	toks := sp.toks
	if k+1 == hi {
		return sp.syntaxErr(toks[hi])
	}
	bad := k + 1
	if t := toks[k+1]; (t.kind == tokIdent || t.kind == tokQuotedIdent) && t.val == "_position" {
		if k+2 == hi {
			return nil
		}
		bad = k + 2
	}
	return unsupported(sp.charPos(toks[bad].pos), "%s ... RETURNING supports only _position", verb).
		WithHint("RETURNING _position returns the position token of the rows written; read the rows back with SELECT.")
}

// insertQuery reports whether the INSERT at toks[i] takes a query
// rather than VALUES, and the index of the query's first token: INSERT
// INTO name [(columns)] then SELECT, WITH, TABLE or a parenthesized
// SELECT.
func (sp *stmtParser) insertQuery(i int) (int, bool) {
	toks := sp.toks
	last := len(toks) - 1 // the sentinel
	k := i + 1
	if !toks[k].isWord("into") || k+1 >= last {
		// Without a name (INSERT INTO at the end) the statement is
		// parseInsert's to report.
		return 0, false
	}
	k += 2 // the name
	if toks[k].isOp("(") && !toks[k+1].isWord("select") && !toks[k+1].isWord("with") && !toks[k+1].isOp("(") {
		close := sp.matchParen(k)
		if close >= last {
			return 0, false // an unclosed column list, parseInsert's too
		}
		k = close + 1 // the column list
	}
	q := k
	for toks[q].isOp("(") {
		q++
	}
	if toks[q].isWord("select") || toks[q].isWord("with") || toks[q].isWord("table") {
		return k, true
	}
	return 0, false
}

// parseInsertSelect parses INSERT INTO name [(columns)] query, the
// query at toks[k].
func (sp *stmtParser) parseInsertSelect(i, k int) (*InsertSelect, error) {
	toks := sp.toks
	out := &InsertSelect{Pos: sp.charPos(toks[i+2].pos)}
	name, j, err := sp.relationName(i + 2)
	if err != nil {
		return nil, err
	}
	out.Table = name
	if j < k {
		for _, c := range sp.splitList(j+1, k-1) {
			t := toks[c[0]]
			if c[1] != c[0]+1 || t.kind != tokIdent && t.kind != tokQuotedIdent {
				return nil, sp.syntaxErr(t)
			}
			out.Columns = append(out.Columns, t.val)
		}
	}
	first := toks[k]
	for q := k; q < len(toks)-1; q++ {
		t := toks[q]
		switch {
		case t.isWord("returning"):
			return nil, unsupported(sp.charPos(t.pos), "INSERT ... SELECT ... RETURNING is not supported").
				WithHint("An INSERT ... SELECT is a persistent query; SHOW QUERIES shows it.")
		case t.isWord("on") && toks[q+1].isWord("conflict"):
			return nil, unsupported(sp.charPos(t.pos), "INSERT ... ON CONFLICT is not supported")
		}
	}
	if first.isWord("with") || first.isWord("table") {
		return nil, unsupported(sp.charPos(first.pos), "INSERT ... %s is not supported", strings.ToUpper(first.val)).
			WithHint("INSERT takes VALUES, or a SELECT from a stream.")
	}
	sel, err := sp.parseSelect(k, len(toks)-1)
	if err != nil {
		return nil, err
	}
	out.Select = sel
	out.SelectText = sp.text[first.pos:toks[len(toks)-2].end]
	return out, nil
}

// insertPositions fills the positions of the table and column names,
// which TiDB's AST does not keep, from the tokens.
func (sp *stmtParser) insertPositions(ins *Insert, i int) {
	toks := sp.toks
	k := i + 1
	if !toks[k].isWord("into") {
		return
	}
	k++
	ins.Pos = sp.charPos(toks[k].pos)
	k++
	if !toks[k].isOp("(") || len(ins.Columns) == 0 {
		return
	}
	cols := sp.splitList(k+1, sp.matchParen(k))
	if len(cols) != len(ins.Columns) {
		return
	}
	ins.ColumnPos = make([]int, len(cols))
	for n, c := range cols {
		ins.ColumnPos[n] = sp.charPos(toks[c[0]].pos)
	}
}
