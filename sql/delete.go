package sql

import (
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// parseDelete parses DELETE FROM name [[AS] alias] [WHERE cond]
// [RETURNING _position] at toks[i]. The condition goes through TiDB like
// a SELECT's; what Postgres has beyond it (USING, WHERE CURRENT OF) and
// MySQL's extras (ORDER BY, LIMIT, several tables) are refused.
func (sp *stmtParser) parseDelete(i int) (*Delete, error) {
	toks := sp.toks
	if !toks[i+1].isWord("from") {
		return nil, sp.syntaxErr(toks[i+1])
	}
	hi, returning, err := sp.scanWrite("DELETE", i+2, func(k int, t token) error {
		switch {
		case t.val == "using":
			return unsupported(sp.charPos(t.pos), "DELETE ... USING is not supported").
				WithHint("Name the rows to delete with WHERE, with a subquery over the other table if need be.")
		case t.val == "current" && toks[k+1].isWord("of"):
			return unsupported(sp.charPos(t.pos), "WHERE CURRENT OF is not supported")
		case t.val == "order" || t.val == "limit":
			return sp.syntaxErr(t)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	stmt, c, err := sp.viaTiDB(i, hi, map[string]bool{"delete": true})
	if err != nil {
		return nil, err
	}
	del, ok := stmt.(*ast.DeleteStmt)
	if !ok {
		return nil, sp.syntaxErr(toks[i])
	}
	out, err := c.deleteStmt(del)
	if err != nil {
		return nil, err
	}
	out.ReturnPosition = returning
	out.Pos = sp.charPos(toks[i+2].pos)
	return out, nil
}

// deleteStmt converts TiDB's single-table DELETE.
func (c *converter) deleteStmt(s *ast.DeleteStmt) (*Delete, error) {
	switch {
	case s.IsMultiTable || s.Tables != nil:
		return nil, unsupported(0, "DELETE of several tables is not supported")
	case s.Order != nil || s.Limit != nil || s.IgnoreErr || s.Quick || s.With != nil:
		return nil, internalErr("TiDB read MySQL-only DELETE syntax")
	case s.TableRefs == nil || s.TableRefs.TableRefs == nil || s.TableRefs.TableRefs.Right != nil:
		return nil, unsupported(0, "DELETE of several tables is not supported")
	}
	ts, ok := s.TableRefs.TableRefs.Left.(*ast.TableSource)
	if !ok {
		return nil, internalErr("TiDB returned %T as the DELETE table", s.TableRefs.TableRefs.Left)
	}
	tn, ok := ts.Source.(*ast.TableName)
	if !ok {
		return nil, internalErr("TiDB returned %T as the DELETE table", ts.Source)
	}
	if tn.Schema.L != "" {
		return nil, unsupported(0, "schema-qualified names are not supported")
	}
	out := &Delete{Table: tn.Name.O, Alias: ts.AsName.O}
	if s.Where != nil {
		w, err := c.expr(s.Where)
		if err != nil {
			return nil, err
		}
		out.Where = w
	}
	return out, nil
}

// SelectOf is the SELECT of the rows d deletes: their key columns, keys,
// from d's table under d's condition.
func (d *Delete) SelectOf(keys []string) *Select {
	items := make([]SelectItem, len(keys))
	for i, k := range keys {
		items[i] = SelectItem{Expr: &ColumnRef{Name: k, Pos: d.Pos}, Text: k}
	}
	return &Select{Items: items, From: []FromItem{&TableRef{Name: d.Table, Alias: d.Alias, Pos: d.Pos}}, Where: d.Where}
}
