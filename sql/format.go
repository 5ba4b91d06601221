package sql

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/cockroachdb/apd/v3"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/numeric"
)

// Format renders a statement as canonical basin SQL: keywords in upper
// case, names quoted only when they must be, every operator
// parenthesized. Parsing the result gives the same statement (positions
// and texts aside), so Format is also how statements are compared in
// tests and shown in EXPLAIN and logs.
func Format(s Statement) string {
	var f formatter
	f.stmt(s)
	return f.b.String()
}

// FormatExpr renders an expression as Format does.
func FormatExpr(e Expr) string {
	var f formatter
	f.expr(e)
	return f.b.String()
}

// formatter writes SQL. With positions set it appends @pos to every
// expression and relation, for tests that check positions.
type formatter struct {
	b         strings.Builder
	positions bool
}

func (f *formatter) printf(format string, args ...any) { fmt.Fprintf(&f.b, format, args...) }

func (f *formatter) pos(p int) {
	if f.positions {
		f.printf("@%d", p)
	}
}

func (f *formatter) stmt(s Statement) {
	switch s := s.(type) {
	case *CreateSource:
		f.printf("CREATE %s ", s.Kind)
		if s.IfNotExists {
			f.b.WriteString("IF NOT EXISTS ")
		}
		f.b.WriteString(QuoteIdent(s.Name))
		if len(s.Columns) == 0 {
			// The columns come from the schema registry.
			f.with(s.With)
			break
		}
		f.b.WriteString(" (")
		keys := 0
		for _, c := range s.Columns {
			if c.Key {
				keys++
			}
		}
		for k, c := range s.Columns {
			if k > 0 {
				f.b.WriteString(", ")
			}
			f.printf("%s %s%s", QuoteIdent(c.Name), c.Type, catalog.TypeModifiers(c.Type, c.Precision, c.Scale))
			switch {
			case c.Headers:
				f.b.WriteString(" HEADERS")
			case c.Header != "":
				f.printf(" HEADER(%s)", QuoteString(c.Header))
			}
			if c.Key {
				// A table has one PRIMARY KEY; a key of several columns
				// is written with KEY on each, which both kinds accept.
				if s.Kind == KindStream || keys > 1 {
					f.b.WriteString(" KEY")
				} else {
					f.b.WriteString(" PRIMARY KEY")
				}
			}
		}
		f.b.WriteString(")")
		f.with(s.With)
	case *CreateTableAs:
		f.b.WriteString("CREATE TABLE ")
		if s.IfNotExists {
			f.b.WriteString("IF NOT EXISTS ")
		}
		f.b.WriteString(QuoteIdent(s.Name))
		f.with(s.With)
		f.b.WriteString(" AS ")
		f.selectStmt(s.Select)
	case *CreateStreamAs:
		f.b.WriteString("CREATE STREAM ")
		if s.IfNotExists {
			f.b.WriteString("IF NOT EXISTS ")
		}
		f.b.WriteString(QuoteIdent(s.Name))
		f.with(s.With)
		f.b.WriteString(" AS ")
		f.selectStmt(s.Select)
		if s.PartitionBy != nil {
			f.b.WriteString(" PARTITION BY ")
			f.expr(s.PartitionBy)
		}
	case *InsertSelect:
		f.insertInto(s.Table, s.Pos, s.Columns, nil)
		f.b.WriteString(" ")
		f.selectStmt(s.Select)
	case *Insert:
		f.insertInto(s.Table, s.Pos, s.Columns, s.ColumnPos)
		f.b.WriteString(" VALUES ")
		for k, row := range s.Rows {
			if k > 0 {
				f.b.WriteString(", ")
			}
			f.b.WriteString("(")
			f.exprs(row)
			f.b.WriteString(")")
		}
		if s.ReturnPosition {
			f.b.WriteString(" RETURNING _position")
		}
	case *Delete:
		f.printf("DELETE FROM %s", QuoteIdent(s.Table))
		f.pos(s.Pos)
		if s.Alias != "" {
			f.printf(" AS %s", QuoteIdent(s.Alias))
		}
		if s.Where != nil {
			f.b.WriteString(" WHERE ")
			f.expr(s.Where)
		}
		if s.ReturnPosition {
			f.b.WriteString(" RETURNING _position")
		}
	case *Select:
		f.selectStmt(s)
	case *Show:
		switch s.What {
		case ShowStreams:
			f.b.WriteString("SHOW STREAMS")
		case ShowTables:
			f.b.WriteString("SHOW TABLES")
		case ShowQueries:
			f.b.WriteString("SHOW QUERIES")
		case ShowTasks:
			f.b.WriteString("SHOW TASKS")
		case ShowCluster:
			f.b.WriteString("SHOW CLUSTER")
		default:
			f.printf("SHOW %s", settingName(s.Name))
		}
	case *Describe:
		f.printf("DESCRIBE %s", QuoteIdent(s.Name))
	case *Resume:
		f.printf("RESUME %s", QuoteIdent(s.Query))
	case *Terminate:
		f.printf("TERMINATE %s", QuoteIdent(s.Query))
	case *Subscribe:
		f.printf("SUBSCRIBE TO %s", QuoteIdent(s.Name))
		if s.Where != nil {
			f.b.WriteString(" WHERE ")
			f.expr(s.Where)
		}
		if len(s.With) > 0 {
			f.with(s.With)
		}
		if s.AsOf != "" {
			f.printf(" AS OF %s", QuoteString(s.AsOf))
		}
	case *Drop:
		f.printf("DROP %s ", s.Kind)
		if s.IfExists {
			f.b.WriteString("IF EXISTS ")
		}
		f.b.WriteString(QuoteIdent(s.Name))
	case *Set:
		switch {
		case s.Reset && !s.Local:
			f.printf("RESET %s", settingName(s.Name))
		case s.Reset:
			f.printf("SET LOCAL %s TO DEFAULT", settingName(s.Name))
		default:
			f.b.WriteString("SET ")
			if s.Local {
				f.b.WriteString("LOCAL ")
			}
			f.printf("%s = %s", settingName(s.Name), QuoteString(s.Value))
		}
	case *Explain:
		f.b.WriteString("EXPLAIN ")
		switch {
		case s.Analyze && (!s.Timing || !s.Summary):
			onOff := map[bool]string{true: "ON", false: "OFF"}
			f.printf("(ANALYZE, TIMING %s, SUMMARY %s) ", onOff[s.Timing], onOff[s.Summary])
		case s.Analyze:
			f.b.WriteString("ANALYZE ")
		}
		f.stmt(s.Stmt)
	case *Txn:
		switch s.Kind {
		case TxnBegin:
			f.b.WriteString("BEGIN")
			for i, m := range s.Modes {
				if i > 0 {
					f.b.WriteString(",")
				}
				f.b.WriteString(" " + txnModeText(m))
			}
		case TxnCommit:
			f.b.WriteString("COMMIT")
		default:
			f.b.WriteString("ROLLBACK")
		}
	case *Copy:
		f.formatCopy(s)
	default:
		if !f.sessionStmt(s) && !f.formatCursorStmt(s) {
			f.printf("<%T>", s)
		}
	}
}

func (f *formatter) with(opts []Option) {
	if len(opts) == 0 {
		return
	}
	f.b.WriteString(" WITH (")
	for k, o := range opts {
		if k > 0 {
			f.b.WriteString(", ")
		}
		f.printf("%s = %s", optionKey(o.Key), QuoteString(o.Value))
	}
	f.b.WriteString(")")
}

// optionKey writes a WITH key: dotted words as they are, anything else
// as a string.
func optionKey(k string) string {
	for _, part := range strings.Split(k, ".") {
		if !isPlainName(part) {
			return QuoteString(k)
		}
	}
	return k
}

// settingName writes a SET/SHOW name; SHOW "tables" must not become
// SHOW TABLES.
func settingName(n string) string {
	switch n {
	case "all":
		return "ALL"
	case "streams", "tables", "queries", "transaction", "time", "session", "local":
		return `"` + n + `"`
	}
	parts := strings.Split(n, ".")
	for k, p := range parts {
		parts[k] = QuoteIdent(p)
	}
	return strings.Join(parts, ".")
}

func (f *formatter) selectStmt(s *Select) {
	f.ctes(s.With)
	f.b.WriteString("SELECT ")
	if s.Distinct {
		f.b.WriteString("DISTINCT ")
	}
	if len(s.DistinctOn) > 0 {
		f.b.WriteString("DISTINCT ON (")
		f.exprs(s.DistinctOn)
		f.b.WriteString(") ")
	}
	for k, it := range s.Items {
		if k > 0 {
			f.b.WriteString(", ")
		}
		switch {
		case it.Star && it.Table != "":
			f.printf("%s.*", QuoteIdent(it.Table))
		case it.Star:
			f.b.WriteString("*")
		default:
			f.expr(it.Expr)
			if it.Alias != "" {
				f.printf(" AS %s", QuoteIdent(it.Alias))
			}
		}
	}
	if len(s.From) > 0 {
		f.b.WriteString(" FROM ")
		for k, it := range s.From {
			if k > 0 {
				f.b.WriteString(", ")
			}
			if j, ok := it.(*Join); ok && j.Kind == JoinCross && j.On == nil {
				// FROM (a, b) is one item, a cross join; without its
				// parentheses it would read as two.
				f.b.WriteString("(")
				f.fromItem(it)
				f.b.WriteString(")")
				continue
			}
			f.fromItem(it)
		}
	}
	if s.Window != nil {
		f.streamWindow(s.Window)
	}
	if s.Where != nil {
		f.b.WriteString(" WHERE ")
		f.expr(s.Where)
	}
	switch {
	case s.GroupingSets != nil:
		f.b.WriteString(" GROUP BY GROUPING SETS (")
		for k, set := range s.GroupingSets {
			if k > 0 {
				f.b.WriteString(", ")
			}
			es := make([]Expr, len(set))
			for n, i := range set {
				es[n] = s.GroupBy[i]
			}
			f.b.WriteString("(")
			f.exprs(es)
			f.b.WriteString(")")
		}
		f.b.WriteString(")")
	case len(s.GroupBy) > 0:
		f.b.WriteString(" GROUP BY ")
		f.exprs(s.GroupBy)
	}
	if s.Having != nil {
		f.b.WriteString(" HAVING ")
		f.expr(s.Having)
	}
	f.setOps(s.SetOps)
	for k, o := range s.OrderBy {
		if k == 0 {
			f.b.WriteString(" ORDER BY ")
		} else {
			f.b.WriteString(", ")
		}
		f.expr(o.Expr)
		if o.Desc {
			f.b.WriteString(" DESC")
		}
		if o.NullsFirst != nil {
			if *o.NullsFirst {
				f.b.WriteString(" NULLS FIRST")
			} else {
				f.b.WriteString(" NULLS LAST")
			}
		}
	}
	if s.Limit != nil {
		f.b.WriteString(" LIMIT ")
		f.expr(s.Limit)
	}
	if s.Offset != nil {
		f.b.WriteString(" OFFSET ")
		f.expr(s.Offset)
	}
	switch s.Emit {
	case EmitChanges:
		f.b.WriteString(" EMIT CHANGES")
	case EmitFinal:
		f.b.WriteString(" EMIT FINAL")
	}
}

func (f *formatter) exprs(es []Expr) {
	for k, e := range es {
		if k > 0 {
			f.b.WriteString(", ")
		}
		f.expr(e)
	}
}

func (f *formatter) expr(e Expr) {
	switch e := e.(type) {
	case *Literal:
		f.b.WriteString(formatLiteral(e))
	case *ColumnRef:
		if e.Table != "" {
			f.printf("%s.", QuoteIdent(e.Table))
		}
		f.b.WriteString(QuoteIdent(e.Name))
	case *Param:
		f.printf("$%d", e.N)
	case *Unary:
		// A space after the operator keeps "- -1" from becoming a comment.
		f.printf("(%s ", e.Op)
		f.expr(e.X)
		f.b.WriteString(")")
	case *Binary:
		f.b.WriteString("(")
		f.expr(e.L)
		f.printf(" %s ", e.Op)
		f.expr(e.R)
		f.b.WriteString(")")
	case *IsNull:
		f.b.WriteString("(")
		f.expr(e.X)
		if e.Not {
			f.b.WriteString(" IS NOT NULL)")
		} else {
			f.b.WriteString(" IS NULL)")
		}
	case *In:
		f.b.WriteString("(")
		f.expr(e.X)
		if e.Not {
			f.b.WriteString(" NOT")
		}
		f.b.WriteString(" IN (")
		f.exprs(e.List)
		f.b.WriteString("))")
	case *Between:
		f.b.WriteString("(")
		f.expr(e.X)
		if e.Not {
			f.b.WriteString(" NOT")
		}
		f.b.WriteString(" BETWEEN ")
		f.expr(e.Lo)
		f.b.WriteString(" AND ")
		f.expr(e.Hi)
		f.b.WriteString(")")
	case *Func:
		if len(e.Args) == 0 && !e.Star && (constantWords[e.Name] || niladicFuncs[e.Name]) {
			// current_timestamp, current_user: Postgres wants no parentheses.
			f.b.WriteString(e.Name)
			break
		}
		f.b.WriteString(funcName(e.Name))
		f.b.WriteString("(")
		if e.Distinct {
			f.b.WriteString("DISTINCT ")
		}
		if e.Star {
			f.b.WriteString("*")
		}
		f.exprs(e.Args)
		if len(e.OrderBy) > 0 && !e.WithinGroup {
			f.b.WriteString(" ORDER BY ")
			f.orderItems(e.OrderBy)
		}
		f.b.WriteString(")")
		if e.WithinGroup {
			f.b.WriteString(" WITHIN GROUP (ORDER BY ")
			f.orderItems(e.OrderBy)
			f.b.WriteString(")")
		}
		if e.Filter != nil {
			f.b.WriteString(" FILTER (WHERE ")
			f.expr(e.Filter)
			f.b.WriteString(")")
		}
		f.over(e.Over)
	case *Cast:
		f.b.WriteString("CAST(")
		f.expr(e.X)
		f.printf(" AS %s%s)", e.Type, catalog.TypeModifiers(e.Type, e.Precision, e.Scale))
	case *Case:
		f.b.WriteString("CASE")
		if e.Operand != nil {
			f.b.WriteString(" ")
			f.expr(e.Operand)
		}
		for _, w := range e.Whens {
			f.b.WriteString(" WHEN ")
			f.expr(w.Cond)
			f.b.WriteString(" THEN ")
			f.expr(w.Result)
		}
		if e.Else != nil {
			f.b.WriteString(" ELSE ")
			f.expr(e.Else)
		}
		f.b.WriteString(" END")
	case nil:
		f.b.WriteString("<nil>")
	default:
		if !f.queryExpr(e) {
			f.printf("<%T>", e)
		}
	}
	if e != nil {
		f.pos(e.Position())
	}
}

func formatLiteral(l *Literal) string {
	switch v := l.Value.(type) {
	case nil:
		return "NULL"
	case bool:
		if v {
			return "TRUE"
		}
		return "FALSE"
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		return floatText(v)
	case *apd.Decimal:
		return numeric.Text(v)
	case string:
		return QuoteString(v)
	}
	return fmt.Sprintf("<%T %v as %s>", l.Value, l.Value, l.Type)
}

// QuoteString quotes s as a standard-conforming Postgres string
// constant: only the quote is doubled.
func QuoteString(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// QuoteIdent returns name as Postgres would need it written: bare when it
// is lower case, plain and not a keyword basin reserves, else in double
// quotes.
func QuoteIdent(name string) string {
	if isPlainName(name) && !passThrough[name] && !reservedWords[name] && !niladicFuncs[name] &&
		unsupportedWords[name] == "" {
		return name
	}
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

// funcName writes a function name: bare unless quoting is needed to
// keep it a name (a keyword that is not also a function, or odd
// characters).
func funcName(name string) string {
	callable := !passThrough[name] || name == "left" || name == "right" ||
		constantWords[name] && name != "true" && name != "false" && name != "null"
	if isPlainName(name) && callable && !reservedWords[name] && unsupportedWords[name] == "" {
		return name
	}
	return QuoteIdent(name)
}

// isPlainName reports whether name reads back as itself unquoted.
func isPlainName(name string) bool {
	if name == "" || !isIdentStart(name[0]) || name[0] >= 0x80 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c == '_' || isDigit(c) || c == '$') {
			return false
		}
	}
	return true
}

// txnModeText is the SQL of a transaction mode.
func txnModeText(m TxnMode) string {
	switch m.Name {
	case "isolation":
		return "ISOLATION LEVEL " + strings.ToUpper(m.Value)
	case "read_only":
		if m.Value == "on" {
			return "READ ONLY"
		}
		return "READ WRITE"
	default:
		if m.Value == "on" {
			return "DEFERRABLE"
		}
		return "NOT DEFERRABLE"
	}
}

// insertInto writes INSERT INTO table [(columns)], with the positions
// of the table and of the columns that have one.
func (f *formatter) insertInto(table string, pos int, cols []string, colPos []int) {
	f.printf("INSERT INTO %s", QuoteIdent(table))
	f.pos(pos)
	if len(cols) == 0 {
		return
	}
	f.b.WriteString(" (")
	for k, c := range cols {
		if k > 0 {
			f.b.WriteString(", ")
		}
		f.b.WriteString(QuoteIdent(c))
		if k < len(colPos) {
			f.pos(colPos[k])
		}
	}
	f.b.WriteString(")")
}

// orderItems writes the keys of an aggregate's ORDER BY.
func (f *formatter) orderItems(items []OrderItem) {
	for i, o := range items {
		if i > 0 {
			f.b.WriteString(", ")
		}
		f.expr(o.Expr)
		if o.Desc {
			f.b.WriteString(" DESC")
		}
	}
}
