package sql

import (
	"math"
	"strconv"
	"strings"

	"github.com/cockroachdb/apd/v3"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/pingcap/tidb/pkg/parser/opcode"
	driver "github.com/pingcap/tidb/pkg/parser/test_driver"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/numeric"
	"github.com/basindb/basin/internal/pgerr"
)

// This file is the last layer: TiDB's AST to basin's. Anything TiDB
// parsed that basin does not implement becomes a 0A000 naming it, so the
// layers above never see a construct they do not know.

// converter converts one TiDB statement parsed from tt.
type converter struct {
	sp *stmtParser
	tt *tidbText
	// windows are the named windows of the SELECT being converted (its
	// WINDOW clause), by name.
	windows map[string]*ast.WindowSpec
}

// orig maps an offset in the TiDB text to one in the user's text; ok is
// false when there is none.
func (c *converter) orig(off int) (int, bool) {
	if off <= 0 {
		// Every TiDB text starts with a keyword, so no expression sits at
		// 0; TiDB leaves 0 on nodes it made up (the 1 of COUNT(*)).
		return 0, false
	}
	return c.tt.mapStart(off)
}

// pos is the 1-based character position of a TiDB expression, or 0.
func (c *converter) pos(n ast.ExprNode) int {
	o, ok := c.orig(n.OriginTextPosition())
	if !ok {
		return 0
	}
	return c.sp.charPos(o)
}

// tokIndex is the index of the user's token where a TiDB expression
// starts, or -1.
func (c *converter) tokIndex(n ast.ExprNode) int {
	o, ok := c.orig(n.OriginTextPosition())
	if !ok {
		return -1
	}
	return c.sp.tokenAt(o)
}

// opPos is the position of a binary operator: the token just before its
// right operand. Postgres reports operator errors there.
func (c *converter) opPos(right ast.ExprNode) int {
	if k := c.tokIndex(right); k > 0 {
		return c.sp.charPos(c.sp.toks[k-1].pos)
	}
	return 0
}

// fieldSpan is the byte range in the user's text of a select field.
func (c *converter) fieldSpan(f *ast.SelectField) (start, end int) {
	start, _ = c.tt.mapStart(f.Offset)
	end = c.tt.mapEnd(f.Offset + len(f.OriginalText()))
	return start, end
}

func (c *converter) unsupportedAt(n ast.ExprNode, format string, args ...any) *pgerr.Error {
	return unsupported(c.pos(n), format, args...)
}

func (c *converter) selectStmt(stmt ast.StmtNode, info *selectInfo) (*Select, error) {
	s, ok := stmt.(*ast.SelectStmt)
	if !ok {
		if so, ok := stmt.(*ast.SetOprStmt); ok {
			if so.SelectList != nil && len(so.SelectList.Selects) == 1 {
				return nil, unsupported(0, "ORDER BY or LIMIT outside a parenthesized SELECT is not supported")
			}
			return c.setOprStmt(so, info)
		}
		return nil, internalErr("TiDB returned %T for a SELECT", stmt)
	}
	var with []CTE
	if s.With != nil {
		var err error
		if with, err = c.with(s.With); err != nil {
			return nil, err
		}
	}
	switch {
	case s.Kind != ast.SelectStmtKindSelect:
		return nil, unsupported(0, "VALUES and TABLE as queries are not supported")
	case s.LockInfo != nil:
		return nil, unsupported(0, "SELECT ... FOR UPDATE/SHARE is not supported")
	case s.SelectIntoOpt != nil:
		return nil, unsupported(0, "SELECT ... INTO is not supported")
	case s.GroupBy != nil && s.GroupBy.Rollup:
		return nil, unsupported(0, "GROUP BY ... WITH ROLLUP is not supported")
	}
	// A SELECT's WINDOW clause names windows for its own OVER clauses
	// only (not its subqueries').
	saved := c.windows
	defer func() { c.windows = saved }()
	c.windows = nil
	for k := range s.WindowSpecs {
		w := &s.WindowSpecs[k]
		if c.windows == nil {
			c.windows = map[string]*ast.WindowSpec{}
		}
		if _, dup := c.windows[w.Name.L]; dup {
			return nil, pgerr.New(pgerr.WindowingError, "window %q is already defined", w.Name.O)
		}
		c.windows[w.Name.L] = w
	}
	for _, w := range c.windows {
		if _, err := c.resolveWindow(*w, 0); err != nil {
			return nil, err
		}
	}
	out := &Select{Distinct: s.Distinct, With: with}
	fields := s.Fields.Fields
	if n := len(fields); n > 0 {
		if f, ok := fields[n-1].Expr.(*ast.FuncCallExpr); ok && c.tt.marks[f.OriginTextPosition()] == markDistinctOn {
			for _, a := range f.Args {
				e, err := c.expr(a)
				if err != nil {
					return nil, err
				}
				out.DistinctOn = append(out.DistinctOn, e)
			}
			fields = fields[:n-1]
		}
	}
	for _, f := range fields {
		item, err := c.selectItem(f)
		if err != nil {
			return nil, err
		}
		out.Items = append(out.Items, item)
	}
	if s.From != nil {
		from, err := c.fromClause(s.From.TableRefs, info.fromPos)
		if err != nil {
			return nil, err
		}
		out.From = from
	}
	var err error
	if s.Where != nil {
		if out.Where, err = c.expr(s.Where); err != nil {
			return nil, err
		}
	}
	if s.GroupBy != nil {
		// A subquery's or a compound arm's starts are unknown (nil): its
		// positional items get no position.
		if info.groupStarts != nil && len(info.groupStarts) != len(s.GroupBy.Items) {
			return nil, internalErr("GROUP BY has %d items, tokens say %d", len(s.GroupBy.Items), len(info.groupStarts))
		}
		var items []groupSets
		sets := false
		for k, it := range s.GroupBy.Items {
			if g, ok, err := c.groupingItem(it.Expr); ok || err != nil {
				if err != nil {
					return nil, err
				}
				items, sets = append(items, g), true
				continue
			}
			start := -1
			if info.groupStarts != nil {
				start = info.groupStarts[k]
			}
			e, err := c.byExpr(it.Expr, start)
			if err != nil {
				return nil, err
			}
			out.GroupBy = append(out.GroupBy, e)
			items = append(items, groupSets{{e}})
		}
		if sets {
			if err := out.setGroupingSets(items, c.pos(s.GroupBy.Items[0].Expr)); err != nil {
				return nil, err
			}
		}
	}
	if s.Having != nil {
		if out.Having, err = c.expr(s.Having.Expr); err != nil {
			return nil, err
		}
	}
	if s.OrderBy != nil {
		if out.OrderBy, err = c.orderBy(s.OrderBy, info); err != nil {
			return nil, err
		}
	}
	if s.Limit != nil {
		// Only a parenthesized SELECT gets here with its LIMIT inside.
		if s.Limit.Count != nil {
			if out.Limit, err = c.expr(s.Limit.Count); err != nil {
				return nil, err
			}
		}
		if s.Limit.Offset != nil {
			if out.Offset, err = c.expr(s.Limit.Offset); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// byExpr converts a GROUP BY or ORDER BY item; TiDB has turned a bare
// integer into a PositionExpr without an offset, so start supplies it.
func (c *converter) byExpr(e ast.ExprNode, start int) (Expr, error) {
	if p, ok := e.(*ast.PositionExpr); ok && p.P == nil {
		pos := 0
		if start >= 0 {
			pos = c.sp.charPos(start)
		}
		return &Literal{Value: int64(p.N), Type: IntLiteralType(int64(p.N)), Pos: pos}, nil
	}
	return c.expr(e)
}

func (c *converter) selectItem(f *ast.SelectField) (SelectItem, error) {
	start, end := c.fieldSpan(f)
	if f.WildCard != nil {
		// TiDB gives a wildcard no text; it ends at the first * from its
		// start (* or t.*).
		item := SelectItem{Star: true, Table: f.WildCard.Table.O}
		if k := c.sp.tokenAt(start); k >= 0 {
			for ; k < len(c.sp.toks)-1; k++ {
				if c.sp.toks[k].isOp("*") {
					item.Text = c.sp.text[start:c.sp.toks[k].end]
					break
				}
			}
		}
		return item, nil
	}
	e, err := c.expr(f.Expr)
	if err != nil {
		return SelectItem{}, err
	}
	item := SelectItem{Expr: e, Alias: f.AsName.O}
	if item.Alias != "" {
		// The span ends with the alias, after an optional AS; Text is
		// the expression alone.
		if k := c.sp.tokenBefore(end); k > 0 {
			k--
			if c.sp.toks[k].isWord("as") && k > 0 {
				k--
			}
			end = c.sp.toks[k].end
		}
	}
	if start < end {
		item.Text = c.sp.text[start:end]
	}
	return item, nil
}

func (c *converter) insertStmt(s *ast.InsertStmt) (*Insert, error) {
	switch {
	case s.IsReplace || s.IgnoreErr || s.Setlist || len(s.OnDuplicate) > 0:
		return nil, internalErr("TiDB read MySQL-only INSERT syntax")
	case s.Select != nil:
		return nil, unsupported(0, "INSERT ... SELECT is not supported")
	}
	ts, ok := s.Table.TableRefs.Left.(*ast.TableSource)
	if !ok {
		return nil, internalErr("TiDB returned %T as the INSERT table", s.Table.TableRefs.Left)
	}
	tn, ok := ts.Source.(*ast.TableName)
	if !ok {
		return nil, internalErr("TiDB returned %T as the INSERT table", ts.Source)
	}
	if tn.Schema.L != "" {
		return nil, unsupported(0, "schema-qualified names are not supported")
	}
	out := &Insert{Table: tn.Name.O}
	for _, col := range s.Columns {
		out.Columns = append(out.Columns, col.Name.O)
	}
	if c.tt.runs != nil {
		n := len(s.Lists)
		for _, row := range s.Lists {
			if len(row) != 1 {
				continue
			}
			if run, ok := c.run(row[0]); ok {
				n += run.param - 1
			}
		}
		out.Rows = make([][]Expr, 0, n)
	}
	for _, row := range s.Lists {
		if len(row) == 1 {
			if run, ok := c.run(row[0]); ok {
				if err := c.runRows(out, run); err != nil {
					return nil, err
				}
				continue
			}
		}
		if len(out.Columns) > 0 && len(row) > len(out.Columns) {
			return nil, &pgerr.Error{Code: pgerr.SyntaxError,
				Message: "INSERT has more expressions than target columns", Position: c.pos(row[len(out.Columns)])}
		}
		if err := checkRowWidth(out, len(row), func() int { return c.pos(row[0]) }); err != nil {
			return nil, err
		}
		var exprs []Expr
		for _, x := range row {
			e, err := c.expr(x)
			if err != nil {
				return nil, err
			}
			exprs = append(exprs, e)
		}
		out.Rows = append(out.Rows, exprs)
	}
	return out, nil
}

// checkRowWidth checks that a row of n values, the first at pos(), is
// as wide as the INSERT's first.
func checkRowWidth(ins *Insert, n int, pos func() int) error {
	if len(ins.Rows) > 0 && n != len(ins.Rows[0]) {
		p := 0
		if n > 0 {
			p = pos()
		}
		return &pgerr.Error{Code: pgerr.SyntaxError,
			Message: "VALUES lists must all be the same length", Position: p}
	}
	return nil
}

// runRows appends the rows of a folded run of rows to the INSERT,
// checked as rows TiDB parsed are.
func (c *converter) runRows(ins *Insert, run token) error {
	if run.kind != tokRows {
		return c.errMisplacedRun()
	}
	rows, ok := c.sp.runRows(run)
	if !ok {
		return c.errMisplacedRun()
	}
	for _, row := range rows {
		if len(ins.Columns) > 0 && len(row) > len(ins.Columns) {
			return &pgerr.Error{Code: pgerr.SyntaxError,
				Message: "INSERT has more expressions than target columns", Position: row[len(ins.Columns)].Position()}
		}
		if err := checkRowWidth(ins, len(row), func() int { return row[0].Position() }); err != nil {
			return err
		}
		ins.Rows = append(ins.Rows, row)
	}
	return nil
}

// binaryOps maps TiDB operators to basin's. opcode.Or is | in TiDB's
// text, which the rewrite only writes for ||.
var binaryOps = map[opcode.Op]string{
	opcode.Plus: "+", opcode.Minus: "-", opcode.Mul: "*", opcode.Div: "/", opcode.Mod: "%",
	opcode.EQ: "=", opcode.NE: "<>", opcode.LT: "<", opcode.LE: "<=", opcode.GT: ">", opcode.GE: ">=",
	opcode.LogicAnd: "AND", opcode.LogicOr: "OR", opcode.Or: "||", opcode.And: "&",
}

// expr converts a TiDB expression.
func (c *converter) expr(n ast.ExprNode) (Expr, error) {
	switch n := n.(type) {
	case *ast.ParenthesesExpr:
		return c.expr(n.Expr)
	case *driver.ParamMarkerExpr:
		if e, ok := c.tt.tails[n.Offset]; ok {
			return e, nil
		}
		num, ok := c.tt.params[n.Offset]
		if !ok {
			return nil, internalErr("parameter at offset %d of %q has no $n", n.Offset, c.tt.sql)
		}
		return &Param{N: num, Pos: c.pos(n)}, nil
	case *driver.ValueExpr:
		return c.literal(n)
	case *ast.ColumnNameExpr:
		// schema.table.column names the column as table.column does:
		// FROM names each table once (Metabase qualifies every column).
		return &ColumnRef{Table: n.Name.Table.O, Name: n.Name.Name.O, Pos: c.pos(n)}, nil
	case *ast.UnaryOperationExpr:
		return c.unary(n)
	case *ast.BinaryOperationExpr:
		if n.Op == opcode.NullEQ {
			return c.distinctFrom(n)
		}
		if n.Op == opcode.Or {
			if e, ok, err := c.jsonOp(n); ok {
				return e, err
			}
		}
		op, ok := binaryOps[n.Op]
		if !ok {
			return nil, c.unsupportedAt(n, "operator %s is not supported", n.Op)
		}
		l, err := c.expr(n.L)
		if err != nil {
			return nil, err
		}
		r, err := c.expr(n.R)
		if err != nil {
			return nil, err
		}
		return &Binary{Op: op, L: l, R: r, Pos: c.opPos(n.R)}, nil
	case *ast.IsNullExpr:
		x, err := c.expr(n.Expr)
		if err != nil {
			return nil, err
		}
		return &IsNull{X: x, Not: n.Not, Pos: c.pos(n)}, nil
	case *ast.PatternInExpr:
		if n.Sel != nil {
			return c.inSubquery(n)
		}
		x, err := c.expr(n.Expr)
		if err != nil {
			return nil, err
		}
		list, err := c.inList(n.List)
		if err != nil {
			return nil, err
		}
		return &In{X: x, List: list, Not: n.Not, Pos: c.pos(n)}, nil
	case *ast.BetweenExpr:
		xs, err := c.exprs([]ast.ExprNode{n.Expr, n.Left, n.Right})
		if err != nil {
			return nil, err
		}
		return &Between{X: xs[0], Lo: xs[1], Hi: xs[2], Not: n.Not, Pos: c.pos(n)}, nil
	case *ast.PatternLikeOrIlikeExpr:
		return c.like(n)
	case *ast.FuncCallExpr:
		return c.funcCall(n)
	case *ast.AggregateFuncExpr:
		return c.aggregate(n)
	case *ast.CaseExpr:
		return c.caseExpr(n)
	case *ast.PositionExpr:
		return &Literal{Value: int64(n.N), Type: IntLiteralType(int64(n.N)), Pos: c.pos(n)}, nil
	case *ast.WindowFuncExpr:
		return c.windowFunc(n)
	case *ast.SubqueryExpr:
		return c.scalarSubquery(n)
	case *ast.ExistsSubqueryExpr:
		return c.exists(n)
	case *ast.CompareSubqueryExpr:
		return c.quantified(n)
	case *ast.PatternRegexpExpr:
		return c.regexp(n)
	case *ast.RowExpr:
		return nil, c.unsupportedAt(n, "row constructors are not supported")
	case *ast.IsTruthExpr:
		return nil, c.unsupportedAt(n, "IS TRUE and IS FALSE are not supported").
			WithHint("Compare with = TRUE, or use COALESCE for NULL.")
	case *ast.DefaultExpr:
		return nil, c.unsupportedAt(n, "DEFAULT is not supported")
	}
	near := ""
	if k := c.tokIndex(n); k >= 0 {
		near = " at or near " + quoteNear(c.sp.tokText(c.sp.toks[k]))
	}
	return nil, c.unsupportedAt(n, "this expression%s is not supported", near)
}

func (c *converter) exprs(ns []ast.ExprNode) ([]Expr, error) {
	out := make([]Expr, 0, len(ns))
	for _, n := range ns {
		e, err := c.expr(n)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// run returns the folded run of constants n is the placeholder of.
func (c *converter) run(n ast.ExprNode) (token, bool) {
	if c.tt.runs == nil {
		return token{}, false
	}
	v, ok := n.(*driver.ValueExpr)
	if !ok {
		return token{}, false
	}
	k, ok := c.tt.runs[v.OriginTextPosition()]
	if !ok {
		return token{}, false
	}
	return c.sp.toks[k], true
}

// errMisplacedRun is returned with stmtParser.unfold set, for the
// statement to be parsed again unfolded.
func (c *converter) errMisplacedRun() error {
	c.sp.unfold = true
	return internalErr("a folded run of constants is misplaced in %q", c.tt.sql)
}

// inList converts the items of an IN list, putting back the constants
// of a folded run.
func (c *converter) inList(ns []ast.ExprNode) ([]Expr, error) {
	if c.tt.runs == nil {
		return c.exprs(ns)
	}
	n := len(ns)
	for _, x := range ns {
		if run, ok := c.run(x); ok {
			n += run.param - 1
		}
	}
	out := make([]Expr, 0, n)
	for _, x := range ns {
		run, ok := c.run(x)
		if !ok {
			e, err := c.expr(x)
			if err != nil {
				return nil, err
			}
			out = append(out, e)
			continue
		}
		if run.kind != tokLiterals {
			return nil, c.errMisplacedRun()
		}
		if out, ok = c.sp.runLiterals(run, out); !ok {
			return nil, c.errMisplacedRun()
		}
	}
	return out, nil
}

// IntLiteralType is the type of an integer constant, as Postgres types
// it: integer when the value fits in 32 bits, bigint otherwise (and
// numeric beyond bigint, which the caller handles).
func IntLiteralType(v int64) catalog.Type {
	if v >= math.MinInt32 && v <= math.MaxInt32 {
		return catalog.Int
	}
	return catalog.BigInt
}

func (c *converter) literal(n *driver.ValueExpr) (Expr, error) {
	if _, ok := c.run(n); ok {
		return nil, c.errMisplacedRun()
	}
	lit := &Literal{Pos: c.pos(n)}
	switch n.Kind() {
	case driver.KindNull:
		lit.Type = catalog.Unknown
	case driver.KindInt64:
		if mysql.HasIsBooleanFlag(n.Type.GetFlag()) {
			lit.Type, lit.Value = catalog.Boolean, n.GetInt64() != 0
		} else {
			lit.Type, lit.Value = IntLiteralType(n.GetInt64()), n.GetInt64()
		}
	case driver.KindUint64, driver.KindFloat64, driver.KindFloat32, driver.KindMysqlDecimal:
		// As in Postgres, a constant with a point or an exponent, or an
		// integer beyond bigint, is numeric: read exactly from the
		// user's text.
		d, err := c.numericLiteral(n)
		if err != nil {
			return nil, err
		}
		lit.Type, lit.Value = catalog.Decimal, d
	case driver.KindString:
		lit.Type, lit.Value = catalog.Varchar, n.GetString()
	default:
		return nil, unsupported(lit.Pos, "this kind of constant is not supported")
	}
	return lit, nil
}

// unary converts -x, +x and NOT x; a minus before a numeric constant is
// folded into it, as Postgres's grammar does (-1 is a constant, and
// - -1 is 1).
func (c *converter) unary(n *ast.UnaryOperationExpr) (Expr, error) {
	var op string
	switch n.Op {
	case opcode.Minus:
		op = "-"
	case opcode.Plus:
		op = "+"
	case opcode.Not:
		op = "NOT"
	default:
		return nil, c.unsupportedAt(n, "operator %s is not supported", n.Op)
	}
	x, err := c.expr(n.V)
	if err != nil {
		return nil, err
	}
	pos := c.pos(n)
	if lit, ok := x.(*Literal); ok && op == "-" {
		switch v := lit.Value.(type) {
		case int64:
			if v != -v || v == 0 { // -math.MinInt64 overflows
				return &Literal{Value: -v, Type: IntLiteralType(-v), Pos: pos}, nil
			}
		case float64:
			return &Literal{Value: -v, Type: lit.Type, Pos: pos}, nil
		case *apd.Decimal:
			return &Literal{Value: numeric.Neg(v), Type: lit.Type, Pos: pos}, nil
		}
	}
	return &Unary{Op: op, X: x, Pos: pos}, nil
}

func (c *converter) like(n *ast.PatternLikeOrIlikeExpr) (Expr, error) {
	if n.EscapeExplicit && n.Escape != '\\' {
		return nil, c.unsupportedAt(n, "LIKE ... ESCAPE is not supported")
	}
	x, err := c.expr(n.Expr)
	if err != nil {
		return nil, err
	}
	p, err := c.expr(n.Pattern)
	if err != nil {
		return nil, err
	}
	op := "LIKE"
	if !n.IsLike {
		op = "ILIKE"
	}
	pos := c.opPos(n.Pattern)
	var e Expr = &Binary{Op: op, L: x, R: p, Pos: pos}
	if n.Not {
		notPos := pos
		if k := c.tokIndex(n.Pattern); k > 1 && c.sp.toks[k-2].isWord("not") {
			notPos = c.sp.charPos(c.sp.toks[k-2].pos)
		}
		e = &Unary{Op: "NOT", X: e, Pos: notPos}
	}
	return e, nil
}

func (c *converter) funcCall(n *ast.FuncCallExpr) (Expr, error) {
	if cast, ok := c.tt.casts[n.OriginTextPosition()]; ok {
		if len(n.Args) != 1 {
			return nil, internalErr("cast with %d operands in %q", len(n.Args), c.tt.sql)
		}
		x, err := c.expr(n.Args[0])
		if err != nil {
			return nil, err
		}
		return &Cast{X: x, Type: cast.typ, Precision: cast.precision, Scale: cast.scale, Pos: c.sp.charPos(cast.pos)}, nil
	}
	if mark, ok := c.tt.marks[n.OriginTextPosition()]; ok {
		return c.markedCall(n, mark)
	}
	name := n.FnName.L
	if k := c.tokIndex(n); k >= 0 && c.sp.toks[k].kind == tokQuotedIdent {
		name = n.FnName.O // "Lower"(x) names another function than lower(x)
	}
	if n.Schema.L != "" {
		if n.Schema.L != "pg_catalog" && n.Schema.L != "information_schema" {
			return nil, c.unsupportedAt(n, "schema-qualified function names are not supported")
		}
	}
	args, err := c.exprs(n.Args)
	if err != nil {
		return nil, err
	}
	return takeOrderKeys(&Func{Name: name, Args: args, Pos: c.pos(n)}), nil
}

func (c *converter) aggregate(n *ast.AggregateFuncExpr) (Expr, error) {
	if n.Order != nil {
		return nil, c.unsupportedAt(n, "ORDER BY inside an aggregate is not supported")
	}
	f := &Func{Name: strings.ToLower(n.F), Distinct: n.Distinct, Pos: c.pos(n)}
	// TiDB reads COUNT(*) as COUNT(1); the tokens tell them apart.
	if k := c.tokIndex(n); f.Name == "count" && k >= 0 && c.sp.toks[k+1].isOp("(") && c.sp.toks[k+2].isOp("*") {
		f.Star = true
		return f, nil
	}
	args, err := c.exprs(n.Args)
	if err != nil {
		return nil, err
	}
	f.Args = args
	return f, nil
}

func (c *converter) caseExpr(n *ast.CaseExpr) (Expr, error) {
	out := &Case{Pos: c.pos(n)}
	var err error
	if n.Value != nil {
		if out.Operand, err = c.expr(n.Value); err != nil {
			return nil, err
		}
	}
	for _, w := range n.WhenClauses {
		cond, err := c.expr(w.Expr)
		if err != nil {
			return nil, err
		}
		res, err := c.expr(w.Result)
		if err != nil {
			return nil, err
		}
		out.Whens = append(out.Whens, When{Cond: cond, Result: res})
	}
	if n.ElseClause != nil {
		if out.Else, err = c.expr(n.ElseClause); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// numericLiteral is the NUMERIC value of a number constant TiDB read as
// a decimal, a float or an unsigned integer: the digits of the user's
// token, so that no float rounds them.
func (c *converter) numericLiteral(n *driver.ValueExpr) (*apd.Decimal, error) {
	text := ""
	if k := c.tokIndex(n); k >= 0 && c.sp.toks[k].kind == tokNumber {
		return c.sp.numericToken(c.sp.toks[k])
	} else {
		switch n.Kind() {
		case driver.KindUint64:
			text = strconv.FormatUint(n.GetUint64(), 10)
		case driver.KindMysqlDecimal:
			text = n.GetMysqlDecimal().String()
		default:
			return numeric.FromFloat64(n.GetFloat64()), nil
		}
	}
	d, err := numeric.Parse(text)
	if err != nil {
		return nil, internalErr("numeric constant %s: %v", text, err)
	}
	return d, nil
}

// numericToken is the NUMERIC value of a number token, read from the
// user's text (the token's value is spelled for TiDB: 1e3 as 1000.0).
func (sp *stmtParser) numericToken(t token) (*apd.Decimal, error) {
	text := t.val
	if t.pos >= 0 && t.end <= len(sp.text) && t.pos < t.end {
		if src := strings.ReplaceAll(sp.text[t.pos:t.end], "_", ""); src != "" {
			if d, err := numeric.Parse(src); err == nil {
				return d, nil
			}
		}
	}
	d, err := numeric.Parse(text)
	if err != nil {
		return nil, internalErr("numeric constant %s: %v", text, err)
	}
	return d, nil
}
