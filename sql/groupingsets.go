package sql

import (
	"slices"

	"github.com/basindb/basin/internal/pgerr"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// GROUP BY's grouping sets: ROLLUP (...), CUBE (...) and GROUPING SETS
// (...), which MySQL lacks (it has GROUP BY ... WITH ROLLUP), are
// rewritten as marked calls, basin__rollup(...), basin__cube(...) and
// basin__grouping_sets(...), with each parenthesized list of their
// elements a basin__grouping_list(...) call; the converter expands them
// into Select.GroupingSets.

// maxGroupingSets is how many grouping sets one GROUP BY may make, as in
// Postgres.
const maxGroupingSets = 4096

// groupingConstruct reports whether toks[i] starts ROLLUP (, CUBE ( or
// GROUPING SETS ( in a GROUP BY, and the index of its "(".
func (rw *rewriter) groupingConstruct(i int) (mark markKind, open int, ok bool) {
	toks := rw.sp.toks
	switch t := toks[i]; {
	case (t.isWord("rollup") || t.isWord("cube")) && toks[i+1].isOp("("):
		if t.isWord("rollup") {
			return markRollup, i + 1, true
		}
		return markCube, i + 1, true
	case t.isWord("grouping") && toks[i+1].isWord("sets") && toks[i+2].isOp("("):
		return markGroupingSets, i + 2, true
	}
	return 0, 0, false
}

// groupingSets rewrites the grouping construct at toks[i] (one whose
// groupingConstruct is ok) and returns the index after it.
func (rw *rewriter) groupingSets(i, j int) (int, error) {
	sp := rw.sp
	toks := sp.toks
	mark, open, _ := rw.groupingConstruct(i)
	close := sp.matchParen(open)
	if close >= j {
		return 0, sp.syntaxErr(toks[j])
	}
	names := map[markKind]string{markRollup: "`basin__rollup`", markCube: "`basin__cube`", markGroupingSets: "`basin__grouping_sets`"}
	rw.add(outItem{text: names[mark], kind: itemFunc, orig: toks[i].pos, origEnd: toks[open-1].end, mark: mark})
	rw.add(outItem{text: "(", kind: itemOpen, orig: toks[open].pos, origEnd: toks[open].end, glue: true})
	items := sp.splitList(open+1, close)
	if len(items) == 0 && mark != markGroupingSets {
		return 0, sp.syntaxErr(toks[close])
	}
	for k, it := range items {
		if k > 0 {
			rw.addTok(toks[it[0]-1], ",", itemOther)
		}
		if err := rw.groupingElem(it[0], it[1], mark == markGroupingSets); err != nil {
			return 0, err
		}
	}
	rw.add(outItem{text: ")", kind: itemClose, orig: toks[close].pos, origEnd: toks[close].end})
	return close + 1, nil
}

// groupingElem rewrites one element of a grouping construct, toks[a:b]:
// a nested construct (in GROUPING SETS only, as in Postgres), a
// parenthesized list (an empty one in GROUPING SETS only), or an
// expression.
func (rw *rewriter) groupingElem(a, b int, nested bool) error {
	sp := rw.sp
	toks := sp.toks
	if a >= b {
		return sp.syntaxErr(toks[a])
	}
	if mark, open, ok := rw.groupingConstruct(a); ok && sp.matchParen(open) == b-1 {
		switch {
		case nested:
			_, err := rw.groupingSets(a, b)
			return err
		case mark == markGroupingSets:
			return sp.syntaxErr(toks[a])
		}
		// In ROLLUP or CUBE, ROLLUP (...) is a call of a function of
		// that name, as in Postgres.
		rw.addTok(toks[a], funcTiDB(toks[a].val), itemFunc)
		return rw.run(a+1, b)
	}
	if !toks[a].isOp("(") || sp.matchParen(a) != b-1 {
		return rw.run(a, b)
	}
	inner := sp.splitList(a+1, b-1)
	if len(inner) == 1 {
		return rw.run(a, b) // (x) is x
	}
	if len(inner) == 0 && !nested {
		return sp.syntaxErr(toks[b-1])
	}
	rw.add(outItem{text: "`basin__grouping_list`", kind: itemFunc, orig: toks[a].pos, origEnd: toks[a].end, mark: markGroupingList})
	rw.add(outItem{text: "(", kind: itemOpen, orig: toks[a].pos, origEnd: toks[a].end, glue: true})
	for k, it := range inner {
		if k > 0 {
			rw.addTok(toks[it[0]-1], ",", itemOther)
		}
		if it[0] >= it[1] {
			return sp.syntaxErr(toks[it[0]])
		}
		if err := rw.run(it[0], it[1]); err != nil {
			return err
		}
	}
	rw.add(outItem{text: ")", kind: itemClose, orig: toks[b-1].pos, origEnd: toks[b-1].end})
	return nil
}

// groupSets is what one GROUP BY item makes: a list of grouping sets,
// each a list of expressions.
type groupSets [][]Expr

// groupingItem converts a GROUP BY item; ok is false for a plain
// expression, which the caller converts as usual.
func (c *converter) groupingItem(n ast.ExprNode) (sets groupSets, ok bool, err error) {
	f, isCall := n.(*ast.FuncCallExpr)
	if !isCall {
		return nil, false, nil
	}
	mark := c.tt.marks[f.OriginTextPosition()]
	if mark != markRollup && mark != markCube && mark != markGroupingSets {
		return nil, false, nil
	}
	// elems are the construct's elements, each a list of grouping sets.
	var elems []groupSets
	for _, a := range f.Args {
		var el groupSets
		switch g, isCall := a.(*ast.FuncCallExpr); {
		case isCall && c.tt.marks[g.OriginTextPosition()] == markGroupingList:
			var set []Expr
			for _, x := range g.Args {
				e, err := c.expr(x)
				if err != nil {
					return nil, true, err
				}
				set = append(set, e)
			}
			el = groupSets{set}
		default:
			if nested, ok, err := c.groupingItem(a); ok || err != nil {
				if err != nil {
					return nil, true, err
				}
				el = nested
				break
			}
			e, err := c.expr(a)
			if err != nil {
				return nil, true, err
			}
			el = groupSets{{e}}
		}
		elems = append(elems, el)
	}
	switch mark {
	case markGroupingSets:
		if len(elems) == 0 {
			return groupSets{nil}, true, nil
		}
		for _, el := range elems {
			sets = append(sets, el...)
		}
	case markRollup:
		// (e1, ..., en), (e1, ..., en-1), ..., ().
		for k := len(elems); k >= 0; k-- {
			var set []Expr
			for _, el := range elems[:k] {
				set = append(set, el[0]...)
			}
			sets = append(sets, set)
		}
	case markCube:
		if len(elems) > 12 {
			return nil, true, pgerr.New(pgerr.ProgramLimitExceeded, "CUBE is limited to 12 elements").WithPosition(c.pos(f))
		}
		// Every subset, the whole first.
		for m := (1 << len(elems)) - 1; m >= 0; m-- {
			var set []Expr
			for k, el := range elems {
				if m&(1<<(len(elems)-1-k)) != 0 {
					set = append(set, el[0]...)
				}
			}
			sets = append(sets, set)
		}
	}
	if len(sets) > maxGroupingSets {
		return nil, true, tooManyGroupingSets(c.pos(f))
	}
	return sets, true, nil
}

func tooManyGroupingSets(pos int) *pgerr.Error {
	return pgerr.New(pgerr.ProgramLimitExceeded, "too many grouping sets present (maximum %d)", maxGroupingSets).WithPosition(pos)
}

// crossGroupingSets combines the GROUP BY items' sets as Postgres does:
// every combination of one set of each item, concatenated.
func crossGroupingSets(items []groupSets, pos int) ([][]Expr, error) {
	out := [][]Expr{nil}
	for _, it := range items {
		if len(out)*len(it) > maxGroupingSets {
			return nil, tooManyGroupingSets(pos)
		}
		next := make([][]Expr, 0, len(out)*len(it))
		for _, prefix := range out {
			for _, set := range it {
				next = append(next, append(append([]Expr{}, prefix...), set...))
			}
		}
		out = next
	}
	return out, nil
}

// setGroupingSets makes s.GroupBy every expression of items' sets, each
// once, and s.GroupingSets their combinations as indexes into it.
func (s *Select) setGroupingSets(items []groupSets, pos int) error {
	crossed, err := crossGroupingSets(items, pos)
	if err != nil {
		return err
	}
	s.GroupBy = nil
	index := map[string]int{}
	at := func(e Expr) int {
		k := FormatExpr(e)
		i, ok := index[k]
		if !ok {
			i = len(s.GroupBy)
			index[k] = i
			s.GroupBy = append(s.GroupBy, e)
		}
		return i
	}
	for _, it := range items {
		for _, set := range it {
			for _, e := range set {
				at(e)
			}
		}
	}
	s.GroupingSets = make([][]int, 0, len(crossed))
	for _, set := range crossed {
		idx := make([]int, 0, len(set))
		for _, e := range set {
			if i := at(e); !slices.Contains(idx, i) {
				idx = append(idx, i)
			}
		}
		s.GroupingSets = append(s.GroupingSets, idx)
	}
	return nil
}
