package sql

// ksqlDB's constructors and lambdas, which MySQL's grammar has no room
// for, rewritten into calls TiDB parses:
//
//	STRUCT(a := x, "B" := y)        basin__struct('a', x, 'B', y)
//	MAP('k' := v, ...)              basin__map('k', v, ...)
//	TRANSFORM(arr, x => x + 1)      transform(arr, basin__lambda('x', x + 1))
//	REDUCE(m, 0, (s, k, v) => ...)  reduce(m, 0, basin__lambda('s', 'k', 'v', ...))
//
// A lambda's body is an ordinary expression; its parameters are names,
// which the planner resolves to the lambda's arguments before columns.
// The made-up names are what the planner reads (StructFunc, MapFunc,
// LambdaFunc); a user calling them by those names gets what these
// constructs give.

// The functions the constructors and lambdas become.
const (
	StructFunc = "basin__struct"
	MapFunc    = "basin__map"
	LambdaFunc = "basin__lambda"
)

// lambdaCalls are the functions that take lambdas.
var lambdaCalls = map[string]bool{"transform": true, "filter": true, "reduce": true}

// nestedCall rewrites STRUCT(...), MAP(...) and a call of a function of
// lambdaCalls with a lambda argument, the call's name at toks[i]; ok is
// false for any other call, which is rewritten as usual.
func (rw *rewriter) nestedCall(i, j int) (int, bool, error) {
	sp := rw.sp
	toks := sp.toks
	t := toks[i]
	if t.kind != tokIdent || !(t.val == "struct" || t.val == "map" || lambdaCalls[t.val]) {
		return 0, false, nil
	}
	if t.val == "filter" && rw.prev(i).isOp(")") {
		return 0, false, nil // an aggregate's FILTER (WHERE ...)
	}
	open := i + 1
	close := sp.matchParen(open)
	if close >= j {
		return 0, false, nil
	}
	// The arguments: runs of tokens between depth-1 commas; for each,
	// the := in it, if any, and whether it is a lambda.
	type arg struct{ lo, hi, assign int }
	var args []arg
	depth, start, assign := 0, open+1, -1
	for k := open + 1; k <= close; k++ {
		tk := toks[k]
		switch {
		case k == close || depth == 0 && tk.isOp(","):
			if k == close && k == start && len(args) > 0 {
				return 0, true, sp.syntaxErr(tk) // f(a, )
			}
			if k > start || k != close {
				args = append(args, arg{start, k, assign})
			}
			start, assign = k+1, -1
		case tk.isOp("("), tk.isOp("["):
			depth++
		case tk.isOp(")"), tk.isOp("]"):
			depth--
		case depth == 0 && tk.isOp(":") && toks[k+1].isOp("=") && toks[k+1].pos == tk.end:
			assign = k
		}
	}
	if lambdaCalls[t.val] {
		lambda := false
		for _, a := range args {
			if _, _, ok := rw.lambdaParams(a.lo, a.hi); ok {
				lambda = true
			}
		}
		if !lambda {
			return 0, false, nil
		}
		rw.addTok(t, funcTiDB(t.val), itemFunc)
	} else {
		name := StructFunc
		if t.val == "map" {
			name = MapFunc
		}
		rw.add(outItem{text: quoteTiDB(name), kind: itemFunc, orig: t.pos, origEnd: t.end})
	}
	rw.addTok(toks[open], "(", itemOpen)
	rw.out[len(rw.out)-1].glue = true
	for n, a := range args {
		if n > 0 {
			rw.addTok(toks[a.lo-1], ",", itemOther)
		}
		if a.lo == a.hi {
			return 0, true, sp.syntaxErr(toks[a.hi])
		}
		switch {
		case lambdaCalls[t.val]:
			params, body, ok := rw.lambdaParams(a.lo, a.hi)
			if !ok {
				if err := rw.run(a.lo, a.hi); err != nil {
					return 0, true, err
				}
				continue
			}
			first := toks[a.lo]
			rw.add(outItem{text: quoteTiDB(LambdaFunc), kind: itemFunc, orig: first.pos, origEnd: first.end})
			rw.add(outItem{text: "(", kind: itemOpen, orig: first.pos, origEnd: first.end, glue: true})
			for _, p := range params {
				rw.addTok(p, stringTiDB(p.val), itemOperand)
				rw.addTok(p, ",", itemOther)
			}
			if body >= a.hi {
				return 0, true, sp.syntaxErr(toks[a.hi])
			}
			if err := rw.run(body, a.hi); err != nil {
				return 0, true, err
			}
			last := toks[a.hi-1]
			rw.add(outItem{text: ")", kind: itemClose, orig: last.pos, origEnd: last.end})
		case a.assign < 0:
			return 0, true, sp.syntaxErr(toks[a.lo]).
				WithHint("%s takes name := value pairs.", upper(t.val))
		case t.val == "struct":
			nt := toks[a.lo]
			if a.assign != a.lo+1 || nt.kind != tokIdent && nt.kind != tokQuotedIdent {
				return 0, true, sp.syntaxErr(toks[a.assign])
			}
			rw.addTok(nt, stringTiDB(nt.val), itemOperand)
			rw.addTok(toks[a.assign], ",", itemOther)
			if err := rw.run(a.assign+2, a.hi); err != nil {
				return 0, true, err
			}
		default: // map
			if a.assign == a.lo {
				return 0, true, sp.syntaxErr(toks[a.assign])
			}
			if err := rw.run(a.lo, a.assign); err != nil {
				return 0, true, err
			}
			rw.addTok(toks[a.assign], ",", itemOther)
			if err := rw.run(a.assign+2, a.hi); err != nil {
				return 0, true, err
			}
		}
	}
	rw.addTok(toks[close], ")", itemClose)
	return close + 1, true, nil
}

// lambdaParams reads a lambda's head in toks[lo:hi]: x => or
// (x, y, ...) =>; it returns the parameter names' tokens and where the
// body starts, or false when the argument is no lambda.
func (rw *rewriter) lambdaParams(lo, hi int) (params []token, body int, ok bool) {
	toks := rw.sp.toks
	name := func(t token) bool { return t.kind == tokIdent || t.kind == tokQuotedIdent }
	if hi-lo >= 2 && name(toks[lo]) && toks[lo+1].isOp("=>") {
		return []token{toks[lo]}, lo + 2, true
	}
	if !toks[lo].isOp("(") {
		return nil, 0, false
	}
	k := lo + 1
	for k < hi && name(toks[k]) {
		params = append(params, toks[k])
		k++
		if toks[k].isOp(")") {
			break
		}
		if !toks[k].isOp(",") {
			return nil, 0, false
		}
		k++
	}
	if k+1 >= hi || !toks[k].isOp(")") || !toks[k+1].isOp("=>") || len(params) == 0 {
		return nil, 0, false
	}
	return params, k + 2, true
}

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			b[i] = c - 32
		}
	}
	return string(b)
}
