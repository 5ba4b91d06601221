package sql

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/basindb/basin/internal/pgerr"
)

// The WITHIN clause of a stream–stream join, in ksqlDB's syntax:
//
//	FROM a [AS] x [LEFT | FULL [OUTER]] JOIN b [AS] y
//	     WITHIN <duration> [GRACE PERIOD <duration>] ON ...
//	FROM a JOIN b WITHIN (<before>, <after>) [GRACE PERIOD <duration>] ON ...
//
// where a duration is <integer> <unit>, the unit one of MILLISECOND,
// SECOND, MINUTE, HOUR and DAY, singular or plural.
//
// MySQL has no such clause, so the rewrite parses it from the tokens and
// hands TiDB, in its place, an index hint on the right relation, USE
// INDEX (basin__within_N), which TiDB's grammar takes exactly there
// (after the table's alias, before ON). N indexes tidbText.windows,
// where the parsed window is; the converter takes the hint off the
// join's right relation and sets the Join's Within. A user cannot forge
// the hint: the rewrite writes USE, FORCE and IGNORE as quoted names,
// so USE INDEX in the user's text is a syntax error, and only the
// rewrite writes index hints at all.

// windowPrefix starts the index names of the hints that carry windows.
const windowPrefix = "basin__within_"

// durationUnits are the units of a join window's durations.
var durationUnits = map[string]time.Duration{
	"millisecond": time.Millisecond, "milliseconds": time.Millisecond,
	"second": time.Second, "seconds": time.Second,
	"minute": time.Minute, "minutes": time.Minute,
	"hour": time.Hour, "hours": time.Hour,
	"day": 24 * time.Hour, "days": 24 * time.Hour,
}

// windowHint is the hint of an error about where WITHIN stands.
const windowHint = "WITHIN follows the right relation of a join, before its ON: FROM a JOIN b WITHIN 1 HOUR ON a.k = b.k."

// durationHint is the hint of an error inside a duration.
const durationHint = "A duration is a whole number of MILLISECONDS, SECONDS, MINUTES, HOURS or DAYS, e.g. WITHIN 1 HOUR."

// windowStarts reports whether the word WITHIN at toks[i] starts a join
// window rather than being a name. WITHIN is no reserved word in
// Postgres (a column, a table or an alias may be called within), so it
// starts a window only where no name can stand: followed by a number,
// or, in FROM, by whatever else could start a duration or the
// (before, after) pair and cannot follow a name there. The window
// itself then reports what is wrong with it.
func (rw *rewriter) windowStarts(i int) bool {
	toks := rw.sp.toks
	prev, next := rw.prev(i), toks[i+1]
	if prev.isOp(".") || prev.isWord("as") || prev.isWord("from") || prev.isWord("join") || prev.isOp(",") {
		return false
	}
	if next.kind == tokNumber {
		return true
	}
	if !rw.inFrom() {
		return false
	}
	switch {
	case next.kind == tokParam, next.kind == tokString, next.isOp("-"), next.isOp("+"):
		return true
	case next.isOp("("):
		// An alias's column list, b within (x, y), has names.
		after := toks[i+2]
		return !isName(after) && !after.isOp(")")
	}
	return false
}

// joinWindow rewrites the join window at toks[i] (WITHIN) into the index
// hint that carries it to the converter, and returns the index of its
// ON.
func (rw *rewriter) joinWindow(i, j int) (int, error) {
	sp := rw.sp
	toks := sp.toks
	t := toks[i]
	join := -1
	if rw.inFrom() {
		join = rw.joinBefore(i)
	}
	if join < 0 || join > rw.lo && toks[join-1].isWord("cross") {
		return 0, sp.syntaxErr(t).WithHint(windowHint)
	}
	table, ok := rw.relationBetween(join+1, i)
	if !ok {
		return 0, sp.syntaxErr(t).WithHint(windowHint)
	}
	if !table {
		return 0, unsupported(sp.charPos(t.pos), "WITHIN after a subquery or function is not supported").
			WithHint("A windowed join joins two streams by name: FROM a JOIN b WITHIN 1 HOUR ON a.k = b.k.")
	}
	w := JoinWindow{Pos: sp.charPos(t.pos)}
	k := i + 1
	var err error
	if toks[k].isOp("(") {
		if w.Before, k, err = sp.duration(k + 1); err != nil {
			return 0, err
		}
		if !toks[k].isOp(",") {
			return 0, sp.syntaxErr(toks[k]).
				WithHint("Write the window before and after a left record as WITHIN (1 SECOND, 5 MINUTES).")
		}
		if w.After, k, err = sp.duration(k + 1); err != nil {
			return 0, err
		}
		if !toks[k].isOp(")") {
			return 0, sp.syntaxErr(toks[k]).
				WithHint("Write the window before and after a left record as WITHIN (1 SECOND, 5 MINUTES).")
		}
		k++
	} else {
		if w.Before, k, err = sp.duration(k); err != nil {
			return 0, err
		}
		w.After = w.Before
	}
	if toks[k].isWord("grace") {
		if !toks[k+1].isWord("period") {
			return 0, sp.syntaxErr(toks[k+1]).WithHint("Write the grace period as GRACE PERIOD 10 MINUTES.")
		}
		if w.Grace, k, err = sp.duration(k + 2); err != nil {
			return 0, err
		}
		w.HasGrace = true
	}
	if k >= j || !toks[k].isWord("on") {
		return 0, sp.syntaxErr(toks[k]).
			WithHint("A join with WITHIN takes its condition with ON after the window: FROM a JOIN b WITHIN 1 HOUR ON a.k = b.k.")
	}
	rw.windows = append(rw.windows, w)
	last := toks[k-1]
	rw.addTok(t, "USE", itemOther)
	rw.addTok(t, "INDEX", itemOther)
	rw.addTok(t, "(", itemOpen)
	rw.add(outItem{text: quoteTiDB(fmt.Sprintf("%s%d", windowPrefix, len(rw.windows)-1)),
		kind: itemOperand, orig: t.pos, origEnd: last.end})
	rw.addTok(last, ")", itemClose)
	return k, nil
}

// joinBefore returns the index of the JOIN keyword nearest before
// toks[i] at the same parenthesis depth, or -1 when another keyword (a
// clause's, ON, FROM) or the start of the run comes first.
func (rw *rewriter) joinBefore(i int) int {
	toks := rw.sp.toks
	depth := 0
	for k := i - 1; k >= rw.lo; k-- {
		t := toks[k]
		switch {
		case t.isOp(")"):
			depth++
		case t.isOp("("):
			if depth == 0 {
				return -1
			}
			depth--
		case depth > 0, t.kind != tokIdent, !passThrough[t.val], t.val == "as":
		case k > rw.lo && (toks[k-1].isWord("as") || toks[k-1].isOp(".")):
			// A keyword as a name: b AS join, s.table.
		case t.val == "join":
			return k
		default:
			return -1
		}
	}
	return -1
}

// relationBetween reports whether toks[k:i] is one FROM item with its
// alias: a name, a function call or a parenthesized query, then
// optionally [AS] alias [(columns)]. table is whether the item is a
// (possibly qualified) relation name, the only item a window can carry.
func (rw *rewriter) relationBetween(k, i int) (table, ok bool) {
	sp := rw.sp
	toks := sp.toks
	switch {
	case toks[k].isOp("("):
		k = sp.matchParen(k) + 1
	case isName(toks[k]) && !(toks[k].kind == tokIdent && passThrough[toks[k].val]):
		k++
		for k+1 < i && toks[k].isOp(".") && isName(toks[k+1]) {
			k += 2
		}
		if k < i && toks[k].isOp("(") {
			k = sp.matchParen(k) + 1
		} else {
			table = true
		}
	default:
		return false, false
	}
	if k < i && toks[k].isWord("as") {
		k++
		if k >= i {
			return false, false
		}
	}
	if k < i && isName(toks[k]) {
		k++
		if k < i && toks[k].isOp("(") {
			k = sp.matchParen(k) + 1
		}
	}
	return table, k == i
}

// duration parses <integer> <unit> at toks[k] and returns the index after
// it.
func (sp *stmtParser) duration(k int) (time.Duration, int, error) {
	toks := sp.toks
	n := toks[k]
	if n.isOp("-") {
		return 0, k, sp.syntaxErr(n).WithHint("A join window's durations are not negative: WITHIN (0 SECONDS, 1 HOUR) takes no earlier records.")
	}
	if n.kind != tokNumber {
		return 0, k, sp.syntaxErr(n).WithHint(durationHint)
	}
	if !n.isInt {
		text := strings.ToLower(sp.text[n.pos:n.end])
		radix := len(text) > 1 && text[0] == '0' && strings.ContainsAny(text[1:2], "xob")
		if !radix && strings.ContainsAny(text, ".e") {
			return 0, k, sp.syntaxErr(n).WithHint(durationHint)
		}
		return 0, k, durationOverflow(sp, n)
	}
	u := toks[k+1] // n is no sentinel: there is a token after it
	unit, ok := durationUnits[u.val]
	if u.kind != tokIdent || !ok {
		return 0, k, sp.syntaxErr(u).WithHint(durationHint)
	}
	amount, err := strconv.ParseInt(n.val, 10, 64)
	if err != nil || amount > math.MaxInt64/int64(unit) {
		return 0, k, durationOverflow(sp, n)
	}
	return time.Duration(amount) * unit, k + 2, nil
}

func durationOverflow(sp *stmtParser, n token) *pgerr.Error {
	return &pgerr.Error{Code: pgerr.IntervalFieldOverflow,
		Message:  "interval field value out of range: " + quoteNear(sp.tokText(n)),
		Position: sp.charPos(n.pos),
		Hint:     "A join window's durations are at most about 292 years."}
}

// takeWindow returns the window the rewrite put on the right relation
// n of a join, and removes its hint so that fromNode, which refuses
// index hints, converts the relation as it would without one.
func (c *converter) takeWindow(n ast.ResultSetNode) *JoinWindow {
	ts, ok := n.(*ast.TableSource)
	if !ok {
		return nil
	}
	tn, ok := ts.Source.(*ast.TableName)
	if !ok || len(tn.IndexHints) != 1 {
		return nil
	}
	h := tn.IndexHints[0]
	if h.HintType != ast.HintUse || len(h.IndexNames) != 1 || !strings.HasPrefix(h.IndexNames[0].O, windowPrefix) {
		return nil
	}
	k, err := strconv.Atoi(h.IndexNames[0].O[len(windowPrefix):])
	if err != nil || k < 0 || k >= len(c.tt.windows) {
		return nil
	}
	w := c.tt.windows[k]
	tn.IndexHints = nil
	return &w
}

// window writes a join window as WITHIN ... [GRACE PERIOD ...].
func (f *formatter) window(w *JoinWindow) {
	f.b.WriteString(" WITHIN")
	f.pos(w.Pos)
	if w.Before == w.After {
		f.printf(" %s", formatDuration(w.Before))
	} else {
		f.printf(" (%s, %s)", formatDuration(w.Before), formatDuration(w.After))
	}
	if w.HasGrace {
		f.printf(" GRACE PERIOD %s", formatDuration(w.Grace))
	}
}

// formatDuration spells a duration in the largest unit that divides it
// (1 HOUR, 90 MINUTES), in milliseconds when none does, and zero as 0
// SECONDS.
func formatDuration(d time.Duration) string {
	units := []struct {
		d    time.Duration
		name string
	}{{24 * time.Hour, "DAY"}, {time.Hour, "HOUR"}, {time.Minute, "MINUTE"}, {time.Second, "SECOND"}}
	n, name := int64(d/time.Millisecond), "MILLISECOND"
	if d == 0 {
		name = "SECOND"
	} else {
		for _, u := range units {
			if d%u.d == 0 {
				n, name = int64(d/u.d), u.name
				break
			}
		}
	}
	if n != 1 {
		name += "S"
	}
	return fmt.Sprintf("%d %s", n, name)
}
