package sql

// Subscribe is SUBSCRIBE [TO] relation [WHERE condition] [WITH (options)]
// [AS OF 'position']: the relation's rows, then its changes, as they
// happen (package push). SELECT ... FROM relation [WHERE ...] EMIT
// CHANGES, ksqlDB's push query, is the same statement with a select
// list (Items).
type Subscribe struct {
	Name    string
	NamePos int
	// Items are the select list of SELECT ... EMIT CHANGES; nil for
	// SUBSCRIBE, whose rows have every column.
	Items []SelectItem
	Where Expr
	With  []Option
	// AsOf is the position token of AS OF; "" for none.
	AsOf    string
	AsOfPos int
}

func (*Subscribe) statement() {}

// parseSubscribe parses SUBSCRIBE at toks[i].
func (sp *stmtParser) parseSubscribe(i int) (Statement, error) {
	c := sp.cursor(i + 1)
	c.words("to")
	t := c.tok()
	if t.kind != tokIdent && t.kind != tokQuotedIdent {
		return nil, sp.syntaxErr(t)
	}
	s := &Subscribe{Name: t.val, NamePos: sp.charPos(t.pos)}
	c.k++
	if c.words("where") {
		// The condition runs to WITH ( or AS OF outside parentheses,
		// or the end.
		start, depth := c.k, 0
		for ; sp.toks[c.k].kind != tokEOF; c.k++ {
			tk := sp.toks[c.k]
			switch {
			case tk.isOp("("):
				depth++
			case tk.isOp(")"):
				depth--
			case depth == 0 && tk.isWord("with") && c.peek(1).isOp("("),
				depth == 0 && tk.isWord("as") && c.peek(1).isWord("of"):
				goto done
			}
		}
	done:
		if c.k == start {
			return nil, sp.syntaxErr(sp.toks[c.k])
		}
		w, err := sp.parseExpr(start, c.k)
		if err != nil {
			return nil, err
		}
		s.Where = w
	}
	if c.tok().isWord("with") {
		opts, next, err := sp.withOptions(c.k + 1)
		if err != nil {
			return nil, err
		}
		s.With, c.k = opts, next
	}
	if c.words("as", "of") {
		t := c.tok()
		if t.kind != tokString {
			return nil, sp.syntaxErr(t)
		}
		s.AsOf, s.AsOfPos = t.val, sp.charPos(t.pos)
		c.k++
	}
	return s, c.end()
}
