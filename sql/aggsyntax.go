package sql

import (
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/basindb/basin/internal/pgerr"
)

// The aggregate syntax MySQL lacks:
//
//	agg(...) FILTER (WHERE cond)
//	agg(x, ... ORDER BY k [ASC | DESC], ...)
//	agg(direct args) WITHIN GROUP (ORDER BY k [ASC | DESC])
//
// The rewrite hands TiDB plain calls of marked functions in their place:
// FILTER wraps the call, basin__filter(agg(...), cond); each ORDER BY key
// becomes one more argument of the call, basin__order(k), its mark
// saying the direction and whether it came from WITHIN GROUP. The
// converter takes the keys off the arguments (takeOrderKeys) and the
// condition off the wrapper. As with the other marks, only the rewrite
// can write these calls: the marks are kept by offset, not by name.

const (
	markFilter markKind = 100 + iota
	markOrderAsc
	markOrderDesc
	markWithinAsc
	markWithinDesc
	markAggDistinct
)

// aggFilter rewrites FILTER (WHERE cond) at toks[i], after an aggregate
// call.
func (rw *rewriter) aggFilter(i, j int) (int, error) {
	sp := rw.sp
	toks := sp.toks
	open := i + 1
	close := sp.matchParen(open)
	if close >= j || !toks[open+1].isWord("where") {
		return 0, sp.syntaxErr(toks[open+1])
	}
	m := matchBack(rw.out, len(rw.out)-1, itemOpen, itemClose)
	if m < 1 || rw.out[m-1].kind != itemFunc {
		return 0, sp.syntaxErr(toks[i])
	}
	first := rw.out[m-1]
	fn := outItem{text: "`basin__filter`", kind: itemFunc, orig: first.orig, origEnd: first.origEnd, mark: markFilter}
	paren := outItem{text: "(", kind: itemOpen, orig: first.orig, origEnd: first.origEnd, glue: true}
	rw.out = insertItems(rw.out, m-1, fn, paren)
	rw.addTok(toks[i], ",", itemOther)
	if err := rw.run(open+2, close); err != nil {
		return 0, err
	}
	rw.addTok(toks[close], ")", itemClose)
	return close + 1, nil
}

// withinGroup rewrites WITHIN GROUP (ORDER BY ...) at toks[i], after an
// ordered-set aggregate's call: its keys join the call's arguments.
func (rw *rewriter) withinGroup(i, j int) (int, error) {
	sp := rw.sp
	toks := sp.toks
	open := i + 2
	if !toks[open].isOp("(") {
		return 0, sp.syntaxErr(toks[open])
	}
	close := sp.matchParen(open)
	if close >= j || !toks[open+1].isWord("order") || !toks[open+2].isWord("by") {
		return 0, sp.syntaxErr(toks[open+1])
	}
	last := rw.out[len(rw.out)-1]
	if last.kind != itemClose {
		return 0, sp.syntaxErr(toks[i])
	}
	rw.out = rw.out[:len(rw.out)-1]
	noArgs := rw.out[len(rw.out)-1].kind == itemOpen
	if err := rw.orderKeys(open+3, close, markWithinAsc, markWithinDesc, !noArgs); err != nil {
		return 0, err
	}
	rw.add(last)
	return close + 1, nil
}

// orderedCall rewrites a call with ORDER BY inside its parentheses, or
// with DISTINCT first in them (TiDB knows DISTINCT in its own aggregates
// only); ok is false when the call at toks[i] has neither.
func (rw *rewriter) orderedCall(i, j int) (int, bool, error) {
	sp := rw.sp
	toks := sp.toks
	open := i + 1
	close := sp.matchParen(open)
	if close >= j {
		return 0, false, nil
	}
	order := -1
	depth := 0
	for k := open; k < close; k++ {
		switch tk := toks[k]; {
		case tk.isOp("("), tk.isOp("["):
			depth++
		case tk.isOp(")"), tk.isOp("]"):
			depth--
		case depth == 1 && tk.isWord("order") && toks[k+1].isWord("by"):
			order = k
		}
		if order >= 0 {
			break
		}
	}
	t := toks[i]
	distinct := toks[open+1].isWord("distinct") && !tidbAggregates[t.val]
	if order < 0 && !distinct {
		return 0, false, nil
	}
	if order >= 0 && tidbAggregates[t.val] {
		return 0, true, unsupported(sp.charPos(toks[order].pos), "ORDER BY inside %s() is not supported", t.val).
			WithHint("The order of the rows does not change what %s computes.", t.val)
	}
	rw.addTok(t, funcTiDB(t.val), itemFunc)
	if distinct {
		// agg(DISTINCT ...) of an aggregate TiDB does not know.
		rw.out[len(rw.out)-1].mark = markAggDistinct
	}
	rw.addTok(toks[open], "(", itemOpen)
	rw.out[len(rw.out)-1].glue = true
	argsFrom, argsTo := open+1, order
	if distinct {
		argsFrom++
	}
	if order < 0 {
		argsTo = close
	}
	if err := rw.run(argsFrom, argsTo); err != nil {
		return 0, true, err
	}
	if order >= 0 {
		if err := rw.orderKeys(order+2, close, markOrderAsc, markOrderDesc, order > argsFrom); err != nil {
			return 0, true, err
		}
	}
	rw.addTok(toks[close], ")", itemClose)
	return close + 1, true, nil
}

// orderKeys writes the keys of toks[lo:hi], an ORDER BY list, as marked
// calls basin__order(k), each after a comma when comma is set or it is
// not the first.
func (rw *rewriter) orderKeys(lo, hi int, asc, desc markKind, comma bool) error {
	sp := rw.sp
	toks := sp.toks
	start := lo
	depth := 0
	for k := lo; k <= hi; k++ {
		if k < hi {
			switch tk := toks[k]; {
			case tk.isOp("("), tk.isOp("["):
				depth++
				continue
			case tk.isOp(")"), tk.isOp("]"):
				depth--
				continue
			case depth > 0 || !tk.isOp(","):
				continue
			}
		}
		end := k
		if end <= start {
			return sp.syntaxErr(toks[k])
		}
		mark := asc
		for n := start; n < end; n++ {
			if toks[n].isWord("nulls") || toks[n].isWord("using") {
				return unsupported(sp.charPos(toks[n].pos), "%s in an aggregate's ORDER BY is not supported", strings.ToUpper(toks[n].val))
			}
		}
		switch {
		case toks[end-1].isWord("desc"):
			mark, end = desc, end-1
		case toks[end-1].isWord("asc"):
			end--
		}
		if end <= start {
			return sp.syntaxErr(toks[end]) // ORDER BY DESC: a direction without a key
		}
		first := toks[start]
		if comma {
			rw.addTok(first, ",", itemOther)
		}
		comma = true
		rw.add(outItem{text: "`basin__order`", kind: itemFunc, orig: first.pos, origEnd: first.end, mark: mark})
		rw.add(outItem{text: "(", kind: itemOpen, orig: first.pos, origEnd: first.end, glue: true})
		if err := rw.run(start, end); err != nil {
			return err
		}
		rw.add(outItem{text: ")", kind: itemClose, orig: toks[end-1].pos, origEnd: toks[end-1].end})
		start = k + 1
	}
	return nil
}

// orderKey is an ORDER BY key the converter found among a call's
// arguments; takeOrderKeys moves it to the call's OrderBy.
type orderKey struct {
	item   OrderItem
	within bool
	pos    int
}

func (k *orderKey) Position() int { return k.pos }

// aggSyntaxCall converts the marked calls of the rewrite above.
func (c *converter) aggSyntaxCall(n *ast.FuncCallExpr, mark markKind) (Expr, error) {
	if mark == markAggDistinct {
		f, err := c.funcCallPlain(n)
		if err != nil {
			return nil, err
		}
		f.Distinct = true
		return takeOrderKeys(f), nil
	}
	args, err := c.exprs(n.Args)
	if err != nil {
		return nil, err
	}
	if mark == markFilter {
		if len(args) != 2 {
			return nil, internalErr("FILTER with %d operands", len(args))
		}
		f, ok := args[0].(*Func)
		if !ok {
			return nil, c.unsupportedAt(n, "FILTER follows an aggregate call")
		}
		if f.Filter != nil {
			return nil, c.unsupportedAt(n, "an aggregate has one FILTER clause")
		}
		f.Filter = args[1]
		return f, nil
	}
	if len(args) != 1 {
		return nil, internalErr("ORDER BY key with %d operands", len(args))
	}
	return &orderKey{item: OrderItem{Expr: args[0], Desc: mark == markOrderDesc || mark == markWithinDesc},
		within: mark == markWithinAsc || mark == markWithinDesc, pos: c.pos(n)}, nil
}

// takeOrderKeys moves the ORDER BY keys among f's arguments to its
// OrderBy.
func takeOrderKeys(f *Func) *Func {
	args := f.Args[:0]
	for _, a := range f.Args {
		if k, ok := a.(*orderKey); ok {
			f.OrderBy = append(f.OrderBy, k.item)
			f.WithinGroup = k.within
			continue
		}
		args = append(args, a)
	}
	f.Args = args
	return f
}

// namedParams are the parameters, in order, with their defaults, of the
// functions a call may name arguments of (name => value).
var namedParams = map[string][][2]string{
	"make_interval": {{"years", "0"}, {"months", "0"}, {"weeks", "0"}, {"days", "0"}, {"hours", "0"}, {"mins", "0"}, {"secs", "0"}},
}

// namedCall rewrites a call with named arguments, f(a, name => b), to
// the positional call, defaults filling the parameters not given; ok is
// false when the call at toks[i] names none.
func (rw *rewriter) namedCall(i, j int) (int, bool, error) {
	sp := rw.sp
	toks := sp.toks
	open := i + 1
	close := sp.matchParen(open)
	if close >= j || close == open+1 {
		return 0, false, nil
	}
	// The arguments: runs of tokens between depth-1 commas.
	type arg struct{ lo, hi, arrow int }
	var args []arg
	named := false
	depth, start, arrow := 0, open+1, -1
	for k := open + 1; k <= close; k++ {
		tk := toks[k]
		switch {
		case k == close || depth == 0 && tk.isOp(","):
			args = append(args, arg{start, k, arrow})
			start, arrow = k+1, -1
		case tk.isOp("("), tk.isOp("["):
			depth++
		case tk.isOp(")"), tk.isOp("]"):
			depth--
		case depth == 0 && tk.isOp("=>"):
			arrow, named = k, true
		}
	}
	if !named {
		return 0, false, nil
	}
	t := toks[i]
	params, ok := namedParams[t.val]
	if !ok {
		return 0, true, unsupported(sp.charPos(t.pos), "named arguments of %s are not supported", t.val).
			WithHint("Pass the arguments by position.")
	}
	given := make([]*arg, len(params))
	for n := range args {
		a := &args[n]
		pos := n
		if a.arrow >= 0 {
			if a.arrow != a.lo+1 || toks[a.lo].kind != tokIdent {
				return 0, true, sp.syntaxErr(toks[a.arrow])
			}
			pos = -1
			for p, prm := range params {
				if prm[0] == toks[a.lo].val {
					pos = p
				}
			}
			if pos < 0 {
				return 0, true, pgerr.New(pgerr.UndefinedFunction, "function %s has no parameter named %s", t.val, toks[a.lo].val).
					WithPosition(sp.charPos(toks[a.lo].pos))
			}
			a.lo = a.arrow + 1
		} else if n > 0 && args[n-1].arrow >= 0 {
			return 0, true, pgerr.New(pgerr.SyntaxError, "positional argument cannot follow named argument").
				WithPosition(sp.charPos(toks[a.lo].pos))
		}
		if pos >= len(params) || given[pos] != nil {
			return 0, true, pgerr.New(pgerr.SyntaxError, "argument name %q used more than once", params[min(pos, len(params)-1)][0]).
				WithPosition(sp.charPos(toks[a.lo].pos))
		}
		given[pos] = a
	}
	last := 0
	for p, a := range given {
		if a != nil {
			last = p
		}
	}
	rw.addTok(t, funcTiDB(t.val), itemFunc)
	rw.addTok(toks[open], "(", itemOpen)
	rw.out[len(rw.out)-1].glue = true
	for p := 0; p <= last; p++ {
		if p > 0 {
			rw.addTok(toks[open], ",", itemOther)
		}
		if given[p] == nil {
			rw.addTok(t, params[p][1], itemOperand)
			continue
		}
		if err := rw.run(given[p].lo, given[p].hi); err != nil {
			return 0, true, err
		}
	}
	rw.addTok(toks[close], ")", itemClose)
	return close + 1, true, nil
}
