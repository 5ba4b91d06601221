package sql

import "strings"

// Format for the constructs of ast_query.go.

func (f *formatter) fromItem(it FromItem) {
	switch it := it.(type) {
	case *TableRef:
		if it.Schema != "" {
			f.printf("%s.", QuoteIdent(it.Schema))
		}
		f.b.WriteString(QuoteIdent(it.Name))
		f.pos(it.Pos)
		f.aliasList(it.Alias, it.Columns)
	case *SubqueryRef:
		if it.Lateral {
			f.b.WriteString("LATERAL ")
		}
		f.b.WriteString("(")
		f.selectStmt(it.Select)
		f.b.WriteString(")")
		f.pos(it.Pos)
		f.aliasList(it.Alias, it.Columns)
	case *FuncRef:
		f.expr(it.Func)
		f.aliasList(it.Alias, it.Columns)
	case *Join:
		// Joins associate to the left, so only a join on the right needs
		// parentheses: a whole join in them, as in FROM ((SELECT 0) AS
		// a(a) JOIN b ON ...), is not SQL basin's parser reads back.
		f.fromItem(it.Left)
		if it.Natural {
			f.b.WriteString(" NATURAL")
		}
		f.printf(" %s ", it.Kind)
		if _, nested := it.Right.(*Join); nested {
			f.b.WriteString("(")
			f.fromItem(it.Right)
			f.b.WriteString(")")
		} else {
			f.fromItem(it.Right)
		}
		if it.Within != nil {
			f.window(it.Within)
		}
		if it.On != nil {
			f.b.WriteString(" ON ")
			f.expr(it.On)
		}
		if len(it.Using) > 0 {
			f.b.WriteString(" USING (")
			for k, u := range it.Using {
				if k > 0 {
					f.b.WriteString(", ")
				}
				f.b.WriteString(QuoteIdent(u))
			}
			f.b.WriteString(")")
		}
	default:
		f.printf("<%T>", it)
	}
}

func (f *formatter) aliasList(alias string, cols []string) {
	if alias == "" {
		return
	}
	f.printf(" AS %s", QuoteIdent(alias))
	if len(cols) > 0 {
		q := make([]string, len(cols))
		for k, c := range cols {
			q[k] = QuoteIdent(c)
		}
		f.printf("(%s)", strings.Join(q, ", "))
	}
}

func (f *formatter) setOps(ops []SetOp) {
	for _, op := range ops {
		f.printf(" %s ", op.Op)
		if op.All {
			f.b.WriteString("ALL ")
		}
		if len(op.Select.OrderBy) > 0 || op.Select.Limit != nil || op.Select.Offset != nil || len(op.Select.SetOps) > 0 {
			f.b.WriteString("(")
			f.selectStmt(op.Select)
			f.b.WriteString(")")
		} else {
			f.selectStmt(op.Select)
		}
	}
}

func (f *formatter) over(w *Window) {
	if w == nil {
		return
	}
	f.b.WriteString(" OVER (")
	sep := ""
	if len(w.PartitionBy) > 0 {
		f.b.WriteString("PARTITION BY ")
		f.exprs(w.PartitionBy)
		sep = " "
	}
	for k, o := range w.OrderBy {
		if k == 0 {
			f.printf("%sORDER BY ", sep)
		} else {
			f.b.WriteString(", ")
		}
		f.expr(o.Expr)
		if o.Desc {
			f.b.WriteString(" DESC")
		}
		sep = " "
	}
	if fr := w.Frame; fr != nil {
		f.b.WriteString(sep)
		if fr.Range {
			f.b.WriteString("RANGE BETWEEN ")
		} else if fr.Groups {
			f.b.WriteString("GROUPS BETWEEN ")
		} else {
			f.b.WriteString("ROWS BETWEEN ")
		}
		f.frameBound(fr.Start)
		f.b.WriteString(" AND ")
		f.frameBound(fr.End)
	}
	f.b.WriteString(")")
}

func (f *formatter) frameBound(b FrameBound) {
	switch b.Kind {
	case UnboundedPreceding:
		f.b.WriteString("UNBOUNDED PRECEDING")
	case OffsetPreceding:
		f.expr(b.Offset)
		f.b.WriteString(" PRECEDING")
	case CurrentRow:
		f.b.WriteString("CURRENT ROW")
	case OffsetFollowing:
		f.expr(b.Offset)
		f.b.WriteString(" FOLLOWING")
	case UnboundedFollowing:
		f.b.WriteString("UNBOUNDED FOLLOWING")
	}
}

// queryExpr writes the expressions of ast_query.go; ok is false for any
// other.
func (f *formatter) queryExpr(e Expr) bool {
	switch e := e.(type) {
	case *Subquery:
		switch e.Kind {
		case SubExists:
			f.b.WriteString("EXISTS ")
		case SubArray:
			f.b.WriteString("ARRAY")
		}
		f.b.WriteString("(")
		f.selectStmt(e.Select)
		f.b.WriteString(")")
	case *InSubquery:
		f.b.WriteString("(")
		f.expr(e.X)
		if e.Not {
			f.b.WriteString(" NOT")
		}
		f.b.WriteString(" IN (")
		f.selectStmt(e.Select)
		f.b.WriteString("))")
	case *Quantified:
		f.b.WriteString("(")
		f.expr(e.X)
		f.printf(" %s ", e.Op)
		if e.All {
			f.b.WriteString("ALL (")
		} else {
			f.b.WriteString("ANY (")
		}
		if e.Select != nil {
			f.selectStmt(e.Select)
		} else {
			f.expr(e.Array)
		}
		f.b.WriteString("))")
	case *ArrayExpr:
		f.b.WriteString("ARRAY[")
		f.exprs(e.Elems)
		f.b.WriteString("]")
	case *Subscript:
		f.b.WriteString("(")
		f.expr(e.X)
		f.b.WriteString(")[")
		f.expr(e.Index)
		f.b.WriteString("]")
	case *FieldSelect:
		f.b.WriteString("(")
		f.expr(e.X)
		f.printf(").%s", QuoteIdent(e.Field))
	default:
		return false
	}
	return true
}

func (f *formatter) ctes(ctes []CTE) {
	for k, c := range ctes {
		if k == 0 {
			f.b.WriteString("WITH ")
			if c.Recursive {
				f.b.WriteString("RECURSIVE ")
			}
		} else {
			f.b.WriteString(", ")
		}
		f.b.WriteString(QuoteIdent(c.Name))
		if len(c.Columns) > 0 {
			q := make([]string, len(c.Columns))
			for i, n := range c.Columns {
				q[i] = QuoteIdent(n)
			}
			f.printf(" (%s)", strings.Join(q, ", "))
		}
		f.b.WriteString(" AS (")
		f.selectStmt(c.Select)
		f.b.WriteString(")")
	}
	if len(ctes) > 0 {
		f.b.WriteString(" ")
	}
}
