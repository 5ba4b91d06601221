package sql

import (
	"fmt"
	"github.com/basindb/basin/internal/pgerr"
	"strings"
)

// Rewrites of the Postgres constructs catalog queries use that MySQL's
// grammar lacks. Each becomes something TiDB parses, marked so that the
// converter turns it back into the Postgres construct:
//
//	ARRAY[a, b]             basin__array(a, b)                marked
//	ARRAY(SELECT ...)       basin__array_sub((SELECT ...))    marked
//	x op ANY (array)        x op ANY (SELECT basin__any(array)) marked call
//	x[i]                    basin__subscript(x, i)            marked
//	(x).field               basin__field((x), 'field')        marked
//	x ~ p, x !~ p           x REGEXP p, x NOT REGEXP p
//	x ~* p                  x REGEXP basin__regex_ci(p)       marked
//	OPERATOR(pg_catalog.~)  the operator itself
//	COLLATE name            dropped (basin compares bytewise, as "C")
//	FROM f(args) AS a(c)    FROM (SELECT f(args)) AS basin__alias_N, f marked
//	(SELECT ...) AS a(c)    (SELECT ...) AS basin__alias_N
//	row_number() OVER (...) the window call TiDB parses natively
//	x IS NOT DISTINCT FROM y   x <=> y
//	x IS DISTINCT FROM y    x <=> basin__distinct(y)           marked
//	x -> y (and ->>, #>, #>>, @>, <@, ?, ?|, ?&, #-)
//	                        x | basin__jsonop('->', y)         marked
//	x->name                 basin__deref(x, 'name')           marked
//
// Marks live in the tidbText side table keyed by the made-up function's
// offset, as casts do, so that a user's function of the same name is
// never mistaken for one. Alias placeholders index tidbText.aliases.

// markKind says what a made-up function call stands for.
type markKind uint8

const (
	markArray markKind = iota + 1
	markArraySub
	markAnyArray
	markSubscript
	markField
	markRegexCI
	markFromFunc
	markDistinct
	markJSONOp
	markDistinctOn
	markRollup
	markCube
	markGroupingSets
	markGroupingList
	markDeref
)

// aliasInfo is a FROM alias with its column alias list.
type aliasInfo struct {
	name    string
	columns []string
}

// aliasPrefix starts the placeholder names of aliases.
const aliasPrefix = "basin__alias_"

// clauseWords are the keywords that start a clause of a SELECT; the
// rewriter tracks the last one per parenthesis depth.
var clauseWords = map[string]string{
	"select": "select", "from": "from", "join": "from", "where": "where", "group": "group",
	"having": "having", "order": "order", "limit": "limit", "offset": "offset", "on": "on",
	"using": "using", "union": "select", "intersect": "select", "except": "select", "window": "window",
}

func (rw *rewriter) noteClause(word string) {
	if c, ok := clauseWords[word]; ok && len(rw.clause) > 0 {
		rw.clause[len(rw.clause)-1] = c
	}
}

func (rw *rewriter) inFrom() bool {
	return len(rw.clause) > 0 && rw.clause[len(rw.clause)-1] == "from"
}

func isName(t token) bool { return t.kind == tokIdent || t.kind == tokQuotedIdent }

// fromItem rewrites a function call that is a FROM item, or the alias
// with a column list of a derived table. ok is false when toks[i] is
// neither.
func (rw *rewriter) fromItem(i, j int) (next int, ok bool, err error) {
	if !rw.inFrom() {
		return 0, false, nil
	}
	sp := rw.sp
	toks := sp.toks
	prev := rw.prev(i)
	t := toks[i]
	// An item starts after FROM, JOIN, LATERAL, a comma, or the
	// parenthesis of a join in parentheses (the clause is "from" in
	// there only then).
	itemStart := (prev.isWord("from") || prev.isWord("join") || prev.isWord("lateral") || prev.isOp(",") || prev.isOp("(")) &&
		(t.kind == tokQuotedIdent || !passThrough[t.val])
	switch {
	case itemStart && toks[i+1].isOp("("):
		return rw.fromFunction(i, i, j)
	case itemStart && toks[i+1].isOp(".") && isName(toks[i+2]) && toks[i+3].isOp("("):
		return rw.fromFunction(i, i+2, j)
	}
	// table [AS] alias (columns): toks[i] is the alias after a table's
	// (possibly qualified) name, itself after FROM, JOIN or a comma.
	if isName(t) && toks[i+1].isOp("(") && (t.kind == tokQuotedIdent || !passThrough[t.val]) {
		k := i - 1
		if prev.isWord("as") {
			k--
		}
		if k > rw.lo && isName(toks[k]) {
			if k-2 >= rw.lo && toks[k-1].isOp(".") && isName(toks[k-2]) {
				k -= 2
			}
			if b := rw.prev(k); b.isWord("from") || b.isWord("join") || b.isOp(",") || b.isOp("(") {
				cols, end, err := rw.columnAliases(i + 1)
				if err != nil {
					return 0, true, err
				}
				rw.addAlias(t, aliasInfo{name: t.val, columns: cols}, prev.isWord("as"))
				return end, true, nil
			}
		}
	}
	// (SELECT ...) [AS] alias (columns)
	afterParen := prev.isOp(")") || prev.isWord("as") && i-2 >= rw.lo && toks[i-2].isOp(")")
	if afterParen && toks[i+1].isOp("(") && (t.kind == tokQuotedIdent || !passThrough[t.val]) {
		cols, end, err := rw.columnAliases(i + 1)
		if err != nil {
			return 0, true, err
		}
		rw.addAlias(t, aliasInfo{name: t.val, columns: cols}, prev.isWord("as"))
		return end, true, nil
	}
	return 0, false, nil
}

// valuesList rewrites (VALUES (a, b), (c, d)) in FROM, which TiDB does
// not read, as (SELECT a AS column1, b AS column2 UNION ALL SELECT c, d):
// the same rows, with Postgres's names for the columns, and their types
// resolved across the rows as UNION resolves them, as Postgres's VALUES
// does. toks[i] is the "(".
func (rw *rewriter) valuesList(i int) (int, error) {
	sp := rw.sp
	toks := sp.toks
	close := sp.matchParen(i)
	rw.addTok(toks[i], "(", itemOpen)
	rw.clause = append(rw.clause, "")
	width := -1
	k := i + 2
	for row := 0; ; row++ {
		if !toks[k].isOp("(") || k >= close {
			return 0, sp.syntaxErr(toks[k])
		}
		end := sp.matchParen(k)
		if end >= close {
			return 0, sp.syntaxErr(toks[close])
		}
		items := sp.splitList(k+1, end)
		if len(items) == 0 {
			return 0, sp.syntaxErr(toks[end])
		}
		if width < 0 {
			width = len(items)
		}
		if len(items) != width {
			return 0, pgerr.New(pgerr.SyntaxError, "VALUES lists must all be the same length").WithPosition(sp.charPos(toks[k].pos))
		}
		if row > 0 {
			rw.addTok(toks[k], "UNION", itemOther)
			rw.addTok(toks[k], "ALL", itemOther)
		}
		rw.addTok(toks[k], "SELECT", itemOther)
		for c, it := range items {
			if it[0] == it[1] {
				return 0, sp.syntaxErr(toks[it[0]])
			}
			if c > 0 {
				rw.addTok(toks[it[0]-1], ",", itemOther)
			}
			if err := rw.run(it[0], it[1]); err != nil {
				return 0, err
			}
			if row == 0 {
				last := toks[it[1]-1]
				rw.addTok(last, "AS", itemOther)
				rw.addTok(last, quoteTiDB(fmt.Sprintf("column%d", c+1)), itemOperand)
			}
		}
		k = end + 1
		if !toks[k].isOp(",") {
			break
		}
		k++
	}
	if k != close {
		return 0, sp.syntaxErr(toks[k])
	}
	rw.clause = rw.clause[:len(rw.clause)-1]
	rw.addTok(toks[close], ")", itemClose)
	return close + 1, nil
}

// addAlias writes an alias placeholder (after AS unless the AS was
// already written).
func (rw *rewriter) addAlias(t token, a aliasInfo, asWritten bool) {
	if !asWritten {
		rw.addTok(t, "AS", itemOther)
	}
	rw.aliases = append(rw.aliases, a)
	rw.addTok(t, quoteTiDB(fmt.Sprintf("%s%d", aliasPrefix, len(rw.aliases)-1)), itemOperand)
}

// columnAliases reads (a, b, ...) at toks[k] and returns the names and
// the index after the ")".
func (rw *rewriter) columnAliases(k int) ([]string, int, error) {
	sp := rw.sp
	close := sp.matchParen(k)
	var cols []string
	for _, it := range sp.splitList(k+1, close) {
		if it[1] != it[0]+1 || !isName(sp.toks[it[0]]) {
			return nil, 0, sp.syntaxErr(sp.toks[it[0]])
		}
		cols = append(cols, sp.toks[it[0]].val)
	}
	if close >= len(sp.toks)-1 {
		return nil, 0, sp.syntaxErr(sp.toks[close])
	}
	return cols, close + 1, nil
}

// fromFunction rewrites f(args) [AS] alias [(columns)] in FROM, where
// toks[start] begins the (possibly qualified) name and toks[name] is the
// function's own name.
func (rw *rewriter) fromFunction(start, name, j int) (int, bool, error) {
	sp := rw.sp
	toks := sp.toks
	open := name + 1
	close := sp.matchParen(open)
	if close >= j {
		return 0, true, sp.syntaxErr(toks[close])
	}
	first := toks[start]
	rw.add(outItem{text: "(", kind: itemOpen, orig: first.pos, origEnd: first.end})
	rw.add(outItem{text: "SELECT", kind: itemOther, orig: first.pos, origEnd: first.end})
	if start != name {
		rw.add(outItem{text: quoteTiDB(toks[start].val), kind: itemOperand, orig: first.pos, origEnd: first.end, mark: markFromFunc})
		rw.addTok(toks[start+1], ".", itemDot)
	}
	fn := toks[name]
	rw.add(outItem{text: quoteTiDB(fn.val), kind: itemFunc, orig: fn.pos, origEnd: fn.end, mark: markFromFunc})
	rw.clause = append(rw.clause, "")
	rw.addTok(toks[open], "(", itemOpen)
	rw.out[len(rw.out)-1].glue = true
	if err := rw.run(open+1, close); err != nil {
		return 0, true, err
	}
	rw.addTok(toks[close], ")", itemClose)
	rw.clause = rw.clause[:len(rw.clause)-1]
	rw.add(outItem{text: ")", kind: itemClose, orig: toks[close].pos, origEnd: toks[close].end})
	k := close + 1
	if toks[k].isWord("with") && toks[k+1].isWord("ordinality") {
		return 0, true, unsupported(sp.charPos(toks[k].pos), "WITH ORDINALITY is not supported")
	}
	alias := aliasInfo{name: fn.val}
	at := toks[close]
	if toks[k].isWord("as") {
		k++
	}
	if isName(toks[k]) && (toks[k].kind == tokQuotedIdent || !passThrough[toks[k].val] && !reservedWords[toks[k].val]) {
		alias.name, at = toks[k].val, toks[k]
		k++
		if toks[k].isOp("(") {
			cols, end, err := rw.columnAliases(k)
			if err != nil {
				return 0, true, err
			}
			alias.columns, k = cols, end
		}
	}
	rw.addAlias(at, alias, false)
	return k, true, nil
}

// fieldSelect rewrites (x).field; toks[i] is the dot.
func (rw *rewriter) fieldSelect(i int) (int, error) {
	sp := rw.sp
	f := sp.toks[i+1]
	if f.isOp("*") {
		return 0, unsupported(sp.charPos(f.pos), "(record).* is not supported")
	}
	return rw.nameCall(i, "`basin__field`", markField)
}

// nameCall rewrites the operand before toks[i] and the name after it,
// toks[i+1], as a call of fn with the two: fn(operand, 'name'), marked
// mark.
func (rw *rewriter) nameCall(i int, fn string, mark markKind) (int, error) {
	sp := rw.sp
	f := sp.toks[i+1]
	start := rw.operandStart()
	if start < 0 {
		return 0, sp.syntaxErr(sp.toks[i])
	}
	first := rw.out[start]
	call := outItem{text: fn, kind: itemFunc, orig: first.orig, origEnd: first.origEnd, mark: mark}
	open := outItem{text: "(", kind: itemOpen, orig: first.orig, origEnd: first.origEnd, glue: true}
	rw.out = insertItems(rw.out, start, call, open)
	rw.addTok(sp.toks[i], ",", itemOther)
	rw.addTok(f, stringTiDB(f.val), itemOperand)
	rw.addTok(f, ")", itemClose)
	return i + 2, nil
}

// derefOp rewrites x->name (toks[i] the ->, toks[i+1] a name):
// ksqlDB's dereference of a STRUCT field, which binds as tightly as a
// subscript (a->b * c->d multiplies two fields), where json's ->, whose
// right operand is a value ('key', 0), has the precedence of ||. It
// becomes x -> name again for the planner, which picks the STRUCT field
// or the json operator by x's type.
func (rw *rewriter) derefOp(i int) (int, error) {
	return rw.nameCall(i, "`basin__deref`", markDeref)
}

func insertItems(out []outItem, at int, items ...outItem) []outItem {
	out = append(out, items...)
	copy(out[at+len(items):], out[at:len(out)-len(items)])
	copy(out[at:], items)
	return out
}

// subscript rewrites x[i]; toks[i] is the "[".
func (rw *rewriter) subscript(i, j int) (int, error) {
	sp := rw.sp
	t := sp.toks[i]
	close := rw.matchBracket(i)
	if close >= j {
		return 0, sp.syntaxErr(sp.toks[close])
	}
	depth := 0
	for k := i + 1; k < close; k++ {
		switch tk := sp.toks[k]; {
		case tk.isOp("("), tk.isOp("["):
			depth++
		case tk.isOp(")"), tk.isOp("]"):
			depth--
		case depth == 0 && (tk.isOp(":") || tk.isOp(",")):
			return 0, unsupported(sp.charPos(tk.pos), "array slices and multidimensional subscripts are not supported")
		}
	}
	start := rw.operandStart()
	if start < 0 {
		return 0, unsupported(sp.charPos(t.pos), "multidimensional arrays are not supported")
	}
	first := rw.out[start]
	fn := outItem{text: "`basin__subscript`", kind: itemFunc, orig: first.orig, origEnd: first.origEnd, mark: markSubscript}
	open := outItem{text: "(", kind: itemOpen, orig: first.orig, origEnd: first.origEnd, glue: true}
	rw.out = insertItems(rw.out, start, fn, open)
	rw.addTok(t, ",", itemOther)
	if err := rw.run(i+1, close); err != nil {
		return 0, err
	}
	rw.addTok(sp.toks[close], ")", itemClose)
	return close + 1, nil
}

// matchBracket returns the index of the "]" closing the "[" at toks[i],
// or the sentinel's index.
func (rw *rewriter) matchBracket(i int) int {
	toks := rw.sp.toks
	depth := 0
	for k := i; k < len(toks)-1; k++ {
		switch {
		case toks[k].isOp("["):
			depth++
		case toks[k].isOp("]"):
			depth--
			if depth == 0 {
				return k
			}
		}
	}
	return len(toks) - 1
}

// regexOp writes a regular expression match operator t whose right
// operand starts at toks[k].
func (rw *rewriter) regexOp(t token, k, j int) (int, error) {
	not := strings.HasPrefix(t.val, "!")
	ci := strings.HasSuffix(t.val, "*")
	if not {
		rw.addTok(t, "NOT", itemOther)
	}
	rw.addTok(t, "REGEXP", itemOther)
	e := min(rw.arithSpan(k), j)
	if e <= k {
		return k, nil // let TiDB report the missing operand
	}
	first, last := rw.sp.toks[k], rw.sp.toks[e-1]
	if ci {
		rw.add(outItem{text: "`basin__regex_ci`", kind: itemFunc, orig: first.pos, origEnd: first.end, mark: markRegexCI})
		rw.add(outItem{text: "(", kind: itemOpen, orig: first.pos, origEnd: first.end, glue: true})
	} else if e > k+1 {
		rw.add(outItem{text: "(", kind: itemOpen, orig: first.pos, origEnd: first.end})
	} else {
		return k, nil
	}
	if err := rw.run(k, e); err != nil {
		return 0, err
	}
	rw.add(outItem{text: ")", kind: itemClose, orig: last.pos, origEnd: last.end})
	return e, nil
}

// distinctFrom rewrites x IS [NOT] DISTINCT FROM y (toks[i] is the IS,
// toks[k] the first token of y) as MySQL's null-safe x <=> y; for IS
// DISTINCT FROM, y's first item is marked and the converter negates.
func (rw *rewriter) distinctFrom(i, k int) (int, error) {
	sp := rw.sp
	rw.addTok(sp.toks[i], "<=>", itemOther)
	if sp.toks[i+1].isWord("not") {
		return k, nil
	}
	e := rw.arithSpan(k)
	if e <= k {
		return k, nil // let TiDB report the missing operand
	}
	first, last := sp.toks[k], sp.toks[e-1]
	rw.add(outItem{text: "`basin__distinct`", kind: itemFunc, orig: first.pos, origEnd: first.end, mark: markDistinct})
	rw.add(outItem{text: "(", kind: itemOpen, orig: first.pos, origEnd: first.end, glue: true})
	if err := rw.run(k, e); err != nil {
		return 0, err
	}
	rw.add(outItem{text: ")", kind: itemClose, orig: last.pos, origEnd: last.end})
	return e, nil
}

// distinctOn rewrites SELECT DISTINCT ON (e, ...) list at toks[i] (the
// DISTINCT), which MySQL lacks, as SELECT list, basin__distinct_on(e,
// ...): the marked call goes last, so that the positions of ORDER BY 1
// and GROUP BY 1 still count the user's items, and the converter takes
// it off the list.
func (rw *rewriter) distinctOn(i, j int) (int, error) {
	sp := rw.sp
	toks := sp.toks
	open := i + 2
	if open >= j || !toks[open].isOp("(") {
		return 0, sp.syntaxErr(toks[min(open, j)])
	}
	close := sp.matchParen(open)
	if close >= j {
		return 0, sp.syntaxErr(toks[j])
	}
	if close == open+1 {
		return 0, sp.syntaxErr(toks[close])
	}
	// The select list ends at the first clause word, or the parenthesis
	// that closes the subquery, at its depth.
	end := sp.listEnd(close+1, j, selectListEnds)
	if end == close+1 {
		return 0, sp.syntaxErr(toks[end])
	}
	if err := rw.run(close+1, end); err != nil {
		return 0, err
	}
	first, last := toks[i], toks[close]
	rw.add(outItem{text: ",", kind: itemOther, orig: first.pos, origEnd: first.end})
	rw.add(outItem{text: "`basin__distinct_on`", kind: itemFunc, orig: first.pos, origEnd: last.end, mark: markDistinctOn})
	rw.add(outItem{text: "(", kind: itemOpen, orig: toks[open].pos, origEnd: toks[open].end, glue: true})
	if err := rw.run(open+1, close); err != nil {
		return 0, err
	}
	rw.add(outItem{text: ")", kind: itemClose, orig: last.pos, origEnd: last.end})
	return end, nil
}

// selectListEnds are the words that end a select list at its depth.
var selectListEnds = map[string]bool{
	"from": true, "where": true, "group": true, "having": true, "window": true, "order": true,
	"limit": true, "offset": true, "fetch": true, "for": true, "into": true,
	"union": true, "intersect": true, "except": true,
}

// operatorCall rewrites OPERATOR(schema.op) at toks[i] as the operator.
func (rw *rewriter) operatorCall(i, j int) (int, error) {
	sp := rw.sp
	toks := sp.toks
	k := i + 2
	if k+2 >= len(toks) {
		return 0, sp.syntaxErr(toks[len(toks)-1])
	}
	if isName(toks[k]) && toks[k+1].isOp(".") {
		if !strings.EqualFold(toks[k].val, "pg_catalog") {
			return 0, unsupported(sp.charPos(toks[k].pos), "operators outside pg_catalog are not supported")
		}
		k += 2
	}
	op := toks[k]
	if op.kind != tokOp || k+1 >= len(toks) || !toks[k+1].isOp(")") {
		return 0, sp.syntaxErr(op)
	}
	rw.operand = k + 2
	switch op.val {
	case "~", "~*", "!~", "!~*":
		return rw.regexOp(op, k+2, j)
	case "=", "<>", "<", ">", "<=", ">=", "+", "-", "*", "/", "%", "&":
		rw.addTok(op, op.val, itemOther)
	case "||":
		rw.addTok(op, "|", itemOther)
	case "~~", "!~~", "~~*", "!~~*":
		// LIKE's operator names: the pattern is the next operand.
		if strings.HasPrefix(op.val, "!") {
			rw.addTok(op, "NOT", itemOther)
		}
		word := "LIKE"
		if strings.HasSuffix(op.val, "*") {
			word = "ILIKE"
		}
		rw.addTok(op, word, itemOther)
	default:
		return 0, unsupported(sp.charPos(op.pos), "operator %s is not supported", op.val)
	}
	return k + 2, nil
}

// collate skips COLLATE name at toks[i]: basin compares text bytewise,
// which is the C collation psql's queries ask for.
func (rw *rewriter) collate(i int) (int, error) {
	toks := rw.sp.toks
	k := i + 1
	if !isName(toks[k]) {
		return 0, rw.sp.syntaxErr(toks[k])
	}
	for toks[k+1].isOp(".") && isName(toks[k+2]) {
		k += 2
	}
	return k + 1, nil
}

// arrayLiteral rewrites ARRAY[...] at toks[i].
func (rw *rewriter) arrayLiteral(i, j int) (int, error) {
	sp := rw.sp
	t := sp.toks[i]
	close := rw.matchBracket(i + 1)
	if close >= j {
		return 0, sp.syntaxErr(sp.toks[close])
	}
	rw.add(outItem{text: "`basin__array`", kind: itemFunc, orig: t.pos, origEnd: t.end, mark: markArray})
	rw.add(outItem{text: "(", kind: itemOpen, orig: t.pos, origEnd: t.end, glue: true})
	rw.clause = append(rw.clause, "")
	if err := rw.run(i+2, close); err != nil {
		return 0, err
	}
	rw.clause = rw.clause[:len(rw.clause)-1]
	rw.addTok(sp.toks[close], ")", itemClose)
	return close + 1, nil
}

// arraySubquery rewrites ARRAY(SELECT ...) at toks[i].
func (rw *rewriter) arraySubquery(i, j int) (int, error) {
	sp := rw.sp
	t := sp.toks[i]
	close := sp.matchParen(i + 1)
	if close >= j {
		return 0, sp.syntaxErr(sp.toks[close])
	}
	rw.add(outItem{text: "`basin__array_sub`", kind: itemFunc, orig: t.pos, origEnd: t.end, mark: markArraySub})
	rw.add(outItem{text: "(", kind: itemOpen, orig: t.pos, origEnd: t.end, glue: true})
	if err := rw.run(i+1, close+1); err != nil {
		return 0, err
	}
	rw.addTok(sp.toks[close], ")", itemClose)
	return close + 1, nil
}

// quantified rewrites ANY|SOME|ALL (...) after a comparison. A subquery
// is TiDB's own; an array becomes a subquery over a marked call.
func (rw *rewriter) quantified(i, j int) (int, error) {
	sp := rw.sp
	toks := sp.toks
	t := toks[i]
	word := "ANY"
	if t.val == "all" {
		word = "ALL"
	}
	rw.addTok(t, word, itemOther)
	open := i + 1
	k := open + 1
	for toks[k].isOp("(") {
		k++
	}
	if toks[k].isWord("select") {
		return open, nil
	}
	close := sp.matchParen(open)
	if close >= j {
		return 0, sp.syntaxErr(toks[close])
	}
	rw.addTok(toks[open], "(", itemOpen)
	rw.addTok(toks[open], "SELECT", itemOther)
	rw.add(outItem{text: "`basin__any`", kind: itemFunc, orig: toks[open].pos, origEnd: toks[open].end, mark: markAnyArray})
	rw.add(outItem{text: "(", kind: itemOpen, orig: toks[open].pos, origEnd: toks[open].end, glue: true})
	rw.clause = append(rw.clause, "")
	if err := rw.run(open+1, close); err != nil {
		return 0, err
	}
	rw.clause = rw.clause[:len(rw.clause)-1]
	rw.addTok(toks[close], ")", itemClose)
	rw.addTok(toks[close], ")", itemClose)
	return close + 1, nil
}

// windowFuncs are the functions TiDB parses with OVER.
var windowFuncs = map[string]bool{
	"row_number": true, "rank": true, "dense_rank": true, "percent_rank": true, "cume_dist": true,
	"ntile": true, "lead": true, "lag": true, "first_value": true, "last_value": true, "nth_value": true,
	"count": true, "sum": true, "avg": true, "min": true, "max": true,
	"stddev": true, "stddev_samp": true, "stddev_pop": true, "variance": true, "var_samp": true, "var_pop": true,
}

// over rewrites OVER (PARTITION BY ... ORDER BY ...) at toks[i], after a
// call whose name TiDB must see bare to parse a window function.
func (rw *rewriter) over(i, j int) (int, error) {
	sp := rw.sp
	toks := sp.toks
	t := toks[i]
	m := matchBack(rw.out, len(rw.out)-1, itemOpen, itemClose)
	if m < 1 || rw.out[m-1].kind != itemFunc {
		return 0, sp.syntaxErr(t)
	}
	name := strings.Trim(rw.out[m-1].text, "`")
	if !windowFuncs[name] {
		return 0, unsupported(sp.charPos(t.pos), "%s is not a window function basin supports", name)
	}
	// TiDB reads stddev and variance as MySQL's, the population
	// versions; Postgres's are the sample ones.
	switch name {
	case "stddev":
		name = "stddev_samp"
	case "variance":
		name = "var_samp"
	}
	rw.out[m-1].text = name
	rw.addTok(t, "OVER", itemOther)
	if w := toks[i+1]; isName(w) {
		// OVER w: a window of the WINDOW clause.
		rw.addTok(w, quoteTiDB(w.val), itemOperand)
		return i + 2, nil
	}
	return rw.windowSpec(i+1, j)
}

// windowClause rewrites WINDOW w AS (...) [, ...]; toks[i] is WINDOW.
func (rw *rewriter) windowClause(i, j int) (int, error) {
	sp := rw.sp
	toks := sp.toks
	rw.addTok(toks[i], "WINDOW", itemOther)
	rw.noteClause("window")
	for k := i + 1; ; {
		if !isName(toks[k]) || !toks[k+1].isWord("as") || !toks[k+2].isOp("(") {
			return 0, sp.syntaxErr(toks[k])
		}
		rw.addTok(toks[k], quoteTiDB(toks[k].val), itemOperand)
		rw.addTok(toks[k+1], "AS", itemOther)
		next, err := rw.windowSpec(k+2, j)
		if err != nil {
			return 0, err
		}
		if !toks[next].isOp(",") {
			return next, nil
		}
		rw.addTok(toks[next], ",", itemOther)
		k = next + 1
	}
}

// windowSpec rewrites a window's (PARTITION BY ... ORDER BY ... frame),
// with toks[open] its "(", and returns the index after its ")".
func (rw *rewriter) windowSpec(open, j int) (int, error) {
	sp := rw.sp
	toks := sp.toks
	close := sp.matchParen(open)
	if close >= j {
		return 0, sp.syntaxErr(toks[close])
	}
	for k := open + 1; k < close; k++ {
		if toks[k].isWord("exclude") {
			return 0, unsupported(sp.charPos(toks[k].pos), "EXCLUDE in a window frame is not supported")
		}
	}
	saved := rw.keywords
	rw.keywords = map[string]bool{"partition": true, "rows": true, "range": true, "groups": true, "between": true, "unbounded": true,
		"preceding": true, "following": true, "current": true, "row": true}
	for k := range saved {
		rw.keywords[k] = true
	}
	err := rw.frameOffsets(open, close+1)
	rw.keywords = saved
	if err != nil {
		return 0, err
	}
	return close + 1, nil
}

// frameOffsets rewrites toks[i:j], a window specification, handing each
// frame offset (INTERVAL '1 hour', '1 day'::interval, 2 * 3, 5) to TiDB
// as a ? marker standing for the offset parsed here (outItem.tail):
// TiDB's grammar takes only numbers there.
func (rw *rewriter) frameOffsets(i, j int) error {
	toks := rw.sp.toks
	from, depth := i, 0
	start := -1 // after the last ROWS, RANGE, BETWEEN or AND at the spec's depth
	for k := i; k < j; k++ {
		t := toks[k]
		switch {
		case t.isOp("("):
			depth++
			continue
		case t.isOp(")"):
			depth--
			continue
		case depth != 1:
			continue
		case t.isWord("rows"), t.isWord("range"), t.isWord("groups"), t.isWord("between"), t.isWord("and"):
			start = k + 1
			continue
		case !t.isWord("preceding") && !t.isWord("following"):
			continue
		}
		if start < 0 || k-start < 1 || k-start == 1 && toks[start].isWord("unbounded") {
			continue
		}
		off, err := rw.sp.parseExpr(start, k)
		if err != nil {
			return err
		}
		if err := rw.run(from, start); err != nil {
			return err
		}
		rw.add(outItem{text: "?", kind: itemOperand, orig: toks[start].pos, origEnd: toks[k-1].end, tail: off})
		from, start = k, -1
	}
	return rw.run(from, j)
}

// trimCall rewrites TRIM([BOTH|LEADING|TRAILING] [chars] FROM s) to
// btrim, ltrim or rtrim(s [, chars]), the functions Postgres defines it
// as. toks[open] is the "(" and toks[close] its ")".
func (rw *rewriter) trimCall(i, open, close int) (int, error) {
	sp := rw.sp
	toks := sp.toks
	fn := "btrim"
	k := open + 1
	switch {
	case toks[k].isWord("both"):
		k++
	case toks[k].isWord("leading"):
		fn, k = "ltrim", k+1
	case toks[k].isWord("trailing"):
		fn, k = "rtrim", k+1
	}
	from := -1
	depth := 0
	for m := k; m < close; m++ {
		switch tk := toks[m]; {
		case tk.isOp("("):
			depth++
		case tk.isOp(")"):
			depth--
		case depth == 0 && tk.isWord("from") && from < 0:
			from = m
		}
	}
	t := toks[i]
	rw.addTok(t, quoteTiDB(fn), itemFunc)
	rw.addTok(toks[open], "(", itemOpen)
	rw.out[len(rw.out)-1].glue = true
	if from < 0 {
		// TRIM(BOTH s): the characters default to a space.
		if err := rw.run(k, close); err != nil {
			return 0, err
		}
	} else {
		if from+1 >= close {
			return 0, sp.syntaxErr(toks[close])
		}
		if err := rw.run(from+1, close); err != nil {
			return 0, err
		}
		if from > k {
			rw.addTok(toks[from], ",", itemOther)
			if err := rw.run(k, from); err != nil {
				return 0, err
			}
		}
	}
	rw.addTok(toks[close], ")", itemClose)
	return close + 1, nil
}

// jsonOp rewrites a json operator (-> ->> #> #>> @> <@ ? ?| ?& #-, the
// token t; toks[k] starts the right operand) as MySQL's | with the
// operand wrapped in a marked call naming the operator. Postgres gives
// these operators the precedence of ||, which | has in TiDB (below + and
// -, above comparisons, left-associative), so x -> 'a' ->> 'b' = 'c'
// groups as Postgres groups it. MySQL's own -> and ->> (JSON_EXTRACT,
// with MySQL's path syntax) never reach TiDB.
func (rw *rewriter) jsonOp(t token, k, j int) (int, error) {
	sp := rw.sp
	rw.addTok(t, "|", itemOther)
	e := min(rw.opSpan(k, " + - * / % "), j)
	if e <= k {
		return k, nil // let TiDB report the missing operand
	}
	last := sp.toks[e-1]
	rw.add(outItem{text: "`basin__jsonop`", kind: itemFunc, orig: t.pos, origEnd: t.end, mark: markJSONOp})
	rw.add(outItem{text: "(", kind: itemOpen, orig: t.pos, origEnd: t.end, glue: true})
	rw.add(outItem{text: "'" + t.val + "'", kind: itemOperand, orig: t.pos, origEnd: t.end})
	rw.add(outItem{text: ",", kind: itemOther, orig: t.pos, origEnd: t.end})
	if err := rw.run(k, e); err != nil {
		return 0, err
	}
	rw.add(outItem{text: ")", kind: itemClose, orig: last.pos, origEnd: last.end})
	return e, nil
}
