package sql

import (
	"github.com/basindb/basin/internal/pgerr"
	"strconv"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	driver "github.com/pingcap/tidb/pkg/parser/test_driver"
)

// Conversion of what catalog queries use: FROM lists, joins, derived
// tables, set-returning functions in FROM, compound queries, subqueries
// and the constructs rewrite_pg.go marked.

// fromClause converts a FROM clause. Items joined by commas become list
// items; explicit joins stay Join trees.
func (c *converter) fromClause(j *ast.Join, fromPos int) ([]FromItem, error) {
	pos := 0
	if fromPos >= 0 {
		pos = c.sp.charPos(fromPos)
	}
	var items []FromItem
	var walk func(j *ast.Join) error
	walk = func(j *ast.Join) error {
		if j.Right == nil {
			it, err := c.fromNode(j.Left, pos)
			if err != nil {
				return err
			}
			items = append(items, it)
			return nil
		}
		if j.Tp == ast.CrossJoin && j.On == nil && len(j.Using) == 0 && !j.ExplicitParens {
			if lj, ok := j.Left.(*ast.Join); ok {
				if err := walk(lj); err != nil {
					return err
				}
			} else {
				it, err := c.fromNode(j.Left, pos)
				if err != nil {
					return err
				}
				items = append(items, it)
			}
			it, err := c.fromNode(j.Right, pos)
			if err != nil {
				return err
			}
			items = append(items, it)
			return nil
		}
		it, err := c.join(j, pos)
		if err != nil {
			return err
		}
		items = append(items, it)
		return nil
	}
	if err := walk(j); err != nil {
		return nil, err
	}
	return items, nil
}

// join converts an explicit join.
func (c *converter) join(j *ast.Join, pos int) (FromItem, error) {
	if j.Right == nil {
		return c.fromNode(j.Left, pos)
	}
	left, err := c.fromNode(j.Left, pos)
	if err != nil {
		return nil, err
	}
	// The window of a stream–stream join rides on its right relation as
	// an index hint (within.go).
	within := c.takeWindow(j.Right)
	right, err := c.fromNode(j.Right, pos)
	if err != nil {
		return nil, err
	}
	out := &Join{Left: left, Right: right, Within: within, Natural: j.NaturalJoin, Pos: pos}
	switch {
	case j.StraightJoin:
		// The rewrite writes FULL [OUTER] JOIN as STRAIGHT_JOIN, which
		// only it can write (a user's straight_join is a quoted name).
		out.Kind = JoinFull
	case j.Tp == ast.LeftJoin:
		out.Kind = JoinLeft
	case j.Tp == ast.RightJoin:
		out.Kind = JoinRight
	default:
		out.Kind = JoinCross
		if j.On != nil || len(j.Using) > 0 || j.NaturalJoin {
			out.Kind = JoinInner
		}
	}
	if j.On != nil {
		if out.On, err = c.expr(j.On.Expr); err != nil {
			return nil, err
		}
	}
	for _, u := range j.Using {
		out.Using = append(out.Using, u.Name.O)
	}
	return out, nil
}

// fromNode converts one FROM item.
func (c *converter) fromNode(n ast.ResultSetNode, pos int) (FromItem, error) {
	switch n := n.(type) {
	case *ast.Join:
		return c.join(n, pos)
	case *ast.TableSource:
		alias, cols, err := c.alias(n.AsName.O)
		if err != nil {
			return nil, err
		}
		switch src := n.Source.(type) {
		case *ast.TableName:
			if len(src.IndexHints) > 0 {
				// Only the rewrite writes index hints (a user's USE is a
				// name), for a join window, which join has taken off
				// the join's right relation.
				return nil, unsupported(pos, "index hints are not supported")
			}
			return &TableRef{Schema: src.Schema.O, Name: src.Name.O, Alias: alias, Columns: cols, Pos: pos}, nil
		case *ast.SelectStmt:
			if f := c.fromFunc(src); f != nil {
				fn, err := c.funcCallPlain(f)
				if err != nil {
					return nil, err
				}
				return &FuncRef{Func: fn, Alias: alias, Columns: cols, Pos: fn.Pos}, nil
			}
			sel, err := c.subquery(src)
			if err != nil {
				return nil, err
			}
			return &SubqueryRef{Select: sel, Alias: alias, Columns: cols, Pos: pos, Lateral: n.Lateral}, nil
		case *ast.SetOprStmt:
			sel, err := c.subquery(src)
			if err != nil {
				return nil, err
			}
			return &SubqueryRef{Select: sel, Alias: alias, Columns: cols, Pos: pos, Lateral: n.Lateral}, nil
		case *ast.Join:
			if alias != "" {
				return nil, unsupported(pos, "an alias on a parenthesized join is not supported")
			}
			return c.join(src, pos)
		}
		return nil, unsupported(pos, "this kind of FROM item is not supported")
	}
	return nil, unsupported(pos, "this kind of FROM item is not supported")
}

// alias resolves a FROM alias: a placeholder the rewrite made stands for
// an alias with a column list.
func (c *converter) alias(name string) (string, []string, error) {
	if !strings.HasPrefix(name, aliasPrefix) {
		return name, nil, nil
	}
	k, err := strconv.Atoi(name[len(aliasPrefix):])
	if err != nil || k < 0 || k >= len(c.tt.aliases) {
		return name, nil, nil // a user's alias that looks like ours
	}
	a := c.tt.aliases[k]
	return a.name, a.columns, nil
}

// fromFunc returns the marked call of a SELECT the rewrite made of a
// function in FROM, or nil.
func (c *converter) fromFunc(s *ast.SelectStmt) *ast.FuncCallExpr {
	if s.From != nil || s.Where != nil || s.Fields == nil || len(s.Fields.Fields) != 1 {
		return nil
	}
	f, ok := s.Fields.Fields[0].Expr.(*ast.FuncCallExpr)
	if !ok || c.tt.marks[f.OriginTextPosition()] != markFromFunc {
		return nil
	}
	return f
}

// funcCallPlain converts a call without looking at marks.
func (c *converter) funcCallPlain(n *ast.FuncCallExpr) (*Func, error) {
	args, err := c.exprs(n.Args)
	if err != nil {
		return nil, err
	}
	name := n.FnName.L
	if k := c.tokIndex(n); k >= 0 && c.sp.toks[k].kind == tokQuotedIdent {
		name = n.FnName.O
	}
	return &Func{Name: name, Args: args, Pos: c.pos(n)}, nil
}

// subquery converts a nested SELECT or compound query.
func (c *converter) subquery(n ast.Node) (*Select, error) {
	stmt, ok := n.(ast.StmtNode)
	if !ok {
		return nil, internalErr("TiDB returned %T as a subquery", n)
	}
	return c.selectStmt(stmt, &selectInfo{fromPos: -1})
}

// with converts the common table expressions of WITH.
func (c *converter) with(w *ast.WithClause) ([]CTE, error) {
	var out []CTE
	for _, cte := range w.CTEs {
		sel, err := c.subquery(cte.Query.Query)
		if err != nil {
			return nil, err
		}
		def := CTE{Name: cte.Name.O, Select: sel, Recursive: w.IsRecursive}
		for _, col := range cte.ColNameList {
			def.Columns = append(def.Columns, col.O)
		}
		out = append(out, def)
	}
	return out, nil
}

// setOprStmt converts UNION, INTERSECT and EXCEPT.
func (c *converter) setOprStmt(so *ast.SetOprStmt, info *selectInfo) (*Select, error) {
	var with []CTE
	if so.With != nil {
		var err error
		if with, err = c.with(so.With); err != nil {
			return nil, err
		}
	}
	if so.SelectList == nil || len(so.SelectList.Selects) == 0 {
		return nil, internalErr("empty compound query")
	}
	var out *Select
	for k, arm := range so.SelectList.Selects {
		s, ok := arm.(*ast.SelectStmt)
		if !ok {
			return nil, unsupported(0, "nested parenthesized UNION, INTERSECT and EXCEPT are not supported")
		}
		armInfo := &selectInfo{fromPos: -1}
		if k == 0 {
			armInfo.fromPos = info.fromPos
		}
		sel, err := c.selectStmt(s, armInfo)
		if err != nil {
			return nil, err
		}
		if k == 0 {
			out = sel
			continue
		}
		op := SetOp{Select: sel}
		if s.AfterSetOperator != nil {
			switch *s.AfterSetOperator {
			case ast.Union:
				op.Op = "UNION"
			case ast.UnionAll:
				op.Op, op.All = "UNION", true
			case ast.Except:
				op.Op = "EXCEPT"
			case ast.ExceptAll:
				op.Op, op.All = "EXCEPT", true
			case ast.Intersect:
				op.Op = "INTERSECT"
			case ast.IntersectAll:
				op.Op, op.All = "INTERSECT", true
			}
		}
		if op.Op == "" {
			return nil, internalErr("compound query arm %d has no operator", k)
		}
		out.SetOps = append(out.SetOps, op)
	}
	if len(with) > 0 {
		if len(out.With) > 0 {
			return nil, unsupported(0, "WITH in both a compound query and its first arm is not supported")
		}
		out.With = with
	}
	if len(out.OrderBy) > 0 || out.Limit != nil {
		// The first arm's own ORDER BY/LIMIT: it was parenthesized.
		return nil, unsupported(0, "ORDER BY or LIMIT inside the first arm of a compound query is not supported")
	}
	if so.OrderBy != nil {
		ob, err := c.orderBy(so.OrderBy, info)
		if err != nil {
			return nil, err
		}
		out.OrderBy = ob
	}
	if so.Limit != nil {
		var err error
		if so.Limit.Count != nil {
			if out.Limit, err = c.expr(so.Limit.Count); err != nil {
				return nil, err
			}
		}
		if so.Limit.Offset != nil {
			if out.Offset, err = c.expr(so.Limit.Offset); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// orderBy converts ORDER BY items; info has the tokens' view of them
// for the top-level statement (nil starts elsewhere).
func (c *converter) orderBy(ob *ast.OrderByClause, info *selectInfo) ([]OrderItem, error) {
	if info.orderStarts != nil && len(info.orderStarts) != len(ob.Items) {
		return nil, internalErr("ORDER BY has %d items, tokens say %d", len(ob.Items), len(info.orderStarts))
	}
	var out []OrderItem
	for k, it := range ob.Items {
		start := -1
		var nulls *bool
		if info.orderStarts != nil {
			start, nulls = info.orderStarts[k], info.nulls[k]
		} else if at := c.tokIndex(it.Expr); at >= 0 {
			// An ORDER BY inside parentheses: nestedNulls kept its
			// NULLS FIRST/LAST.
			for _, n := range c.sp.nullsItems {
				if at >= n.lo && at < n.hi {
					first := n.first
					nulls = &first
				}
			}
		}
		e, err := c.byExpr(it.Expr, start)
		if err != nil {
			return nil, err
		}
		out = append(out, OrderItem{Expr: e, Desc: it.Desc, NullsFirst: nulls})
	}
	return out, nil
}

func (c *converter) scalarSubquery(n *ast.SubqueryExpr) (Expr, error) {
	sel, err := c.subquery(n.Query)
	if err != nil {
		return nil, err
	}
	return &Subquery{Kind: SubScalar, Select: sel, Pos: c.pos(n)}, nil
}

func (c *converter) exists(n *ast.ExistsSubqueryExpr) (Expr, error) {
	sq, ok := n.Sel.(*ast.SubqueryExpr)
	if !ok {
		return nil, c.unsupportedAt(n, "EXISTS needs a subquery")
	}
	sel, err := c.subquery(sq.Query)
	if err != nil {
		return nil, err
	}
	var e Expr = &Subquery{Kind: SubExists, Select: sel, Pos: c.pos(n)}
	if n.Not {
		e = &Unary{Op: "NOT", X: e, Pos: c.pos(n)}
	}
	return e, nil
}

func (c *converter) inSubquery(n *ast.PatternInExpr) (Expr, error) {
	sq, ok := n.Sel.(*ast.SubqueryExpr)
	if !ok {
		return nil, c.unsupportedAt(n, "IN needs a list or a subquery")
	}
	x, err := c.expr(n.Expr)
	if err != nil {
		return nil, err
	}
	sel, err := c.subquery(sq.Query)
	if err != nil {
		return nil, err
	}
	return &InSubquery{X: x, Select: sel, Not: n.Not, Pos: c.pos(n)}, nil
}

// quantified converts x op ANY|ALL (...): over the array in a marked
// call the rewrite made, or over a subquery.
func (c *converter) quantified(n *ast.CompareSubqueryExpr) (Expr, error) {
	op, ok := binaryOps[n.Op]
	if !ok || !comparisonOp(op) {
		return nil, c.unsupportedAt(n, "operator %s with ANY or ALL is not supported", n.Op)
	}
	x, err := c.expr(n.L)
	if err != nil {
		return nil, err
	}
	sq, ok := n.R.(*ast.SubqueryExpr)
	if !ok {
		return nil, c.unsupportedAt(n, "ANY and ALL need an array or a subquery")
	}
	out := &Quantified{X: x, Op: op, All: n.All, Pos: c.opPos(n.R)}
	if s, ok := sq.Query.(*ast.SelectStmt); ok && s.From == nil && s.Fields != nil && len(s.Fields.Fields) == 1 {
		if f, ok := s.Fields.Fields[0].Expr.(*ast.FuncCallExpr); ok && c.tt.marks[f.OriginTextPosition()] == markAnyArray {
			if len(f.Args) != 1 {
				return nil, c.unsupportedAt(n, "ANY takes one array")
			}
			if out.Array, err = c.expr(f.Args[0]); err != nil {
				return nil, err
			}
			return out, nil
		}
	}
	if out.Select, err = c.subquery(sq.Query); err != nil {
		return nil, err
	}
	return out, nil
}

func comparisonOp(op string) bool {
	switch op {
	case "=", "<>", "<", "<=", ">", ">=":
		return true
	}
	return false
}

// regexp converts x [NOT] REGEXP p back to ~ or !~ (~* and !~* when the
// pattern is a marked call).
func (c *converter) regexp(n *ast.PatternRegexpExpr) (Expr, error) {
	x, err := c.expr(n.Expr)
	if err != nil {
		return nil, err
	}
	pat := n.Pattern
	ci := false
	if f, ok := pat.(*ast.FuncCallExpr); ok && c.tt.marks[f.OriginTextPosition()] == markRegexCI && len(f.Args) == 1 {
		pat, ci = f.Args[0], true
	}
	p, err := c.expr(pat)
	if err != nil {
		return nil, err
	}
	op := "~"
	if n.Not {
		op = "!~"
	}
	if ci {
		op += "*"
	}
	return &Binary{Op: op, L: x, R: p, Pos: c.opPos(n.Pattern)}, nil
}

// markedCall converts a call the rewrite made up.
func (c *converter) markedCall(n *ast.FuncCallExpr, mark markKind) (Expr, error) {
	pos := c.pos(n)
	switch mark {
	case markArray:
		elems, err := c.exprs(n.Args)
		if err != nil {
			return nil, err
		}
		return &ArrayExpr{Elems: elems, Pos: pos}, nil
	case markArraySub:
		if len(n.Args) == 1 {
			if sq, ok := n.Args[0].(*ast.SubqueryExpr); ok {
				sel, err := c.subquery(sq.Query)
				if err != nil {
					return nil, err
				}
				return &Subquery{Kind: SubArray, Select: sel, Pos: pos}, nil
			}
		}
		return nil, c.unsupportedAt(n, "ARRAY( ) needs a subquery")
	case markSubscript:
		if len(n.Args) != 2 {
			return nil, internalErr("subscript with %d operands", len(n.Args))
		}
		xs, err := c.exprs(n.Args)
		if err != nil {
			return nil, err
		}
		return &Subscript{X: xs[0], Index: xs[1], Pos: pos}, nil
	case markField:
		if len(n.Args) != 2 {
			return nil, internalErr("field selection with %d operands", len(n.Args))
		}
		x, err := c.expr(n.Args[0])
		if err != nil {
			return nil, err
		}
		v, ok := n.Args[1].(*driver.ValueExpr)
		if !ok {
			return nil, internalErr("field selection without a field name")
		}
		return &FieldSelect{X: x, Field: v.GetString(), Pos: pos}, nil
	case markDeref:
		if len(n.Args) != 2 {
			return nil, internalErr("dereference with %d operands", len(n.Args))
		}
		x, err := c.expr(n.Args[0])
		if err != nil {
			return nil, err
		}
		v, ok := n.Args[1].(*driver.ValueExpr)
		if !ok {
			return nil, internalErr("dereference without a field name")
		}
		return &Binary{Op: "->", L: x, R: &ColumnRef{Name: v.GetString(), Pos: c.pos(v)}, Pos: pos}, nil
	case markFromFunc:
		return nil, c.unsupportedAt(n, "a set-returning function is not allowed here")
	case markJSONOp:
		return nil, c.unsupportedAt(n, "this use of a json operator is not supported").
			WithHint("Put the operator's operands in parentheses.")
	case markDistinct:
		return nil, c.unsupportedAt(n, "this right operand of IS DISTINCT FROM is not supported").
			WithHint("Put the operand in parentheses.")
	case markRegexCI:
		return nil, c.unsupportedAt(n, "this pattern of ~* or !~* is not supported").
			WithHint("Put the pattern in parentheses.")
	case markAnyArray:
		return nil, c.unsupportedAt(n, "ANY or ALL over an array is not supported here")
	case markFilter, markOrderAsc, markOrderDesc, markWithinAsc, markWithinDesc, markAggDistinct:
		return c.aggSyntaxCall(n, mark)
	case markRollup, markCube, markGroupingSets, markGroupingList:
		// One inside an expression of GROUP BY (a % ROLLUP (b)).
		return nil, c.unsupportedAt(n, "ROLLUP, CUBE and GROUPING SETS are elements of GROUP BY, not expressions")
	}
	return nil, internalErr("unknown mark %d", mark)
}

// distinctFrom converts x <=> y back to x IS [NOT] DISTINCT FROM y.
func (c *converter) distinctFrom(n *ast.BinaryOperationExpr) (Expr, error) {
	l, err := c.expr(n.L)
	if err != nil {
		return nil, err
	}
	right, op := n.R, "IS NOT DISTINCT FROM"
	if f, ok := right.(*ast.FuncCallExpr); ok && c.tt.marks[f.OriginTextPosition()] == markDistinct && len(f.Args) == 1 {
		right, op = f.Args[0], "IS DISTINCT FROM"
	}
	r, err := c.expr(right)
	if err != nil {
		return nil, err
	}
	return &Binary{Op: op, L: l, R: r, Pos: c.opPos(n.R)}, nil
}

// windowFunc converts f(...) OVER (PARTITION BY ... ORDER BY ...).
func (c *converter) windowFunc(n *ast.WindowFuncExpr) (Expr, error) {
	spec, err := c.resolveWindow(n.Spec, 0)
	if err != nil {
		if pe, ok := pgerr.As(err); ok && pe.Position == 0 {
			pe.WithPosition(c.pos(n))
		}
		return nil, err
	}
	n.Spec = spec
	name := strings.ToLower(n.Name)
	f := &Func{Name: name, Distinct: n.Distinct, Pos: c.pos(n), Over: &Window{}}
	if k := c.tokIndex(n); name == "count" && k >= 0 && c.sp.toks[k+1].isOp("(") && c.sp.toks[k+2].isOp("*") {
		f.Star = true
	} else {
		args, err := c.exprs(n.Args)
		if err != nil {
			return nil, err
		}
		f.Args = args
	}
	if n.Spec.PartitionBy != nil {
		for _, it := range n.Spec.PartitionBy.Items {
			e, err := c.expr(it.Expr)
			if err != nil {
				return nil, err
			}
			f.Over.PartitionBy = append(f.Over.PartitionBy, e)
		}
	}
	if n.Spec.OrderBy != nil {
		ob, err := c.orderBy(n.Spec.OrderBy, &selectInfo{fromPos: -1})
		if err != nil {
			return nil, err
		}
		f.Over.OrderBy = ob
	}
	if fr := n.Spec.Frame; fr != nil {
		frame := &Frame{Range: fr.Type == ast.Ranges, Groups: fr.Type == ast.Groups, Pos: c.pos(n)}
		var err error
		if frame.Start, err = c.frameBound(fr.Extent.Start); err != nil {
			return nil, err
		}
		if frame.End, err = c.frameBound(fr.Extent.End); err != nil {
			return nil, err
		}
		f.Over.Frame = frame
	}
	return f, nil
}

// resolveWindow returns spec with the named window it refers to copied
// in, as Postgres does: OVER w is w; OVER (w ORDER BY ...) and a WINDOW
// clause's w2 AS (w ...) take w's PARTITION BY and ORDER BY and add to
// them, which may not override either, nor copy a window with a frame.
func (c *converter) resolveWindow(spec ast.WindowSpec, depth int) (ast.WindowSpec, error) {
	name := spec.Ref
	if spec.OnlyAlias {
		name = spec.Name
	}
	if name.L == "" {
		return spec, nil
	}
	base, ok := c.windows[name.L]
	if !ok || depth > len(c.windows) {
		return spec, pgerr.New(pgerr.UndefinedObject, "window %q does not exist", name.O)
	}
	resolved, err := c.resolveWindow(*base, depth+1)
	if err != nil {
		return spec, err
	}
	if spec.OnlyAlias {
		return resolved, nil
	}
	switch {
	case spec.PartitionBy != nil:
		return spec, pgerr.New(pgerr.WindowingError, "cannot override PARTITION BY clause of window %q", name.O)
	case spec.OrderBy != nil && resolved.OrderBy != nil:
		return spec, pgerr.New(pgerr.WindowingError, "cannot override ORDER BY clause of window %q", name.O)
	case resolved.Frame != nil:
		return spec, pgerr.New(pgerr.WindowingError, "cannot copy window %q because it has a frame clause", name.O).
			WithHint("Omit the parentheses in this OVER clause.")
	}
	out := spec
	out.Ref = ast.CIStr{}
	out.PartitionBy = resolved.PartitionBy
	if out.OrderBy == nil {
		out.OrderBy = resolved.OrderBy
	}
	return out, nil
}

// frameBound converts one end of a window frame.
func (c *converter) frameBound(b ast.FrameBound) (FrameBound, error) {
	switch {
	case b.Type == ast.CurrentRow:
		return FrameBound{Kind: CurrentRow}, nil
	case b.UnBounded && b.Type == ast.Preceding:
		return FrameBound{Kind: UnboundedPreceding}, nil
	case b.UnBounded:
		return FrameBound{Kind: UnboundedFollowing}, nil
	case b.Expr == nil:
		return FrameBound{Kind: CurrentRow}, nil
	}
	if b.Unit != ast.TimeUnitInvalid {
		return FrameBound{}, unsupported(0, "INTERVAL n unit frame offsets are not supported: write the offset as '1 day'::interval")
	}
	if p, ok := b.Expr.(*driver.ParamMarkerExpr); ok {
		// TiDB puts a frame offset's marker at the word after it.
		k := min(p.Offset, len(c.tt.sql)) - 1
		for k > 0 && c.tt.sql[k] == ' ' {
			k--
		}
		e, ok := c.tt.tails[k]
		if !ok {
			return FrameBound{}, c.unsupportedAt(b.Expr, "a parameter as a window frame offset is not supported")
		}
		return frameOffset(b.Type, e), nil
	}
	off, err := c.expr(b.Expr)
	if err != nil {
		return FrameBound{}, err
	}
	return frameOffset(b.Type, off), nil
}

func frameOffset(typ ast.BoundType, off Expr) FrameBound {
	if typ == ast.Preceding {
		return FrameBound{Kind: OffsetPreceding, Offset: off}
	}
	return FrameBound{Kind: OffsetFollowing, Offset: off}
}

// jsonOp converts x | basin__jsonop('op', y) back to x op y; ok is
// false for any other |.
func (c *converter) jsonOp(n *ast.BinaryOperationExpr) (e Expr, ok bool, err error) {
	f, isCall := n.R.(*ast.FuncCallExpr)
	if !isCall || c.tt.marks[f.OriginTextPosition()] != markJSONOp || len(f.Args) != 2 {
		return nil, false, nil
	}
	opv, isVal := f.Args[0].(*driver.ValueExpr)
	if !isVal {
		return nil, true, internalErr("json operator without its name")
	}
	l, err := c.expr(n.L)
	if err != nil {
		return nil, true, err
	}
	r, err := c.expr(f.Args[1])
	if err != nil {
		return nil, true, err
	}
	return &Binary{Op: opv.GetString(), L: l, R: r, Pos: c.pos(f)}, true, nil
}
