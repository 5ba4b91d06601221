package sql

import "time"

// The AST of what catalog queries use beyond a single-relation SELECT:
// FROM lists with joins, derived tables and set-returning functions,
// subqueries, arrays, subscripts, record fields and window functions.
// psql, JDBC, SQLAlchemy and BI tools send these against pg_catalog and
// information_schema; basin runs them there (see planner.PlanSelect).

// FromItem is one item of a FROM list: *TableRef, *SubqueryRef,
// *FuncRef or *Join.
type FromItem interface {
	fromItem()
}

// SubqueryRef is a derived table: (SELECT ...) [AS] alias [(columns)].
type SubqueryRef struct {
	Select  *Select
	Alias   string
	Columns []string // column aliases; empty keeps the select's names
	Pos     int
	// Lateral subqueries (LATERAL (SELECT ...)) see the columns of the
	// FROM items before them.
	Lateral bool
}

// FuncRef is a set-returning function in FROM:
// generate_series(1, 3) AS s(n). Alias defaults to the function's name.
type FuncRef struct {
	Func    *Func
	Alias   string
	Columns []string
	Pos     int
}

// JoinKind is the kind of a Join.
type JoinKind uint8

const (
	JoinInner JoinKind = iota + 1
	JoinLeft
	JoinRight
	// JoinFull is FULL [OUTER] JOIN.
	JoinFull
	// JoinCross is CROSS JOIN and the comma of a FROM list.
	JoinCross
)

func (k JoinKind) String() string {
	switch k {
	case JoinLeft:
		return "LEFT JOIN"
	case JoinRight:
		return "RIGHT JOIN"
	case JoinFull:
		return "FULL JOIN"
	case JoinCross:
		return "CROSS JOIN"
	}
	return "JOIN"
}

// Join is Left JOIN Right ON On, or USING (Using).
type Join struct {
	Kind        JoinKind
	Left, Right FromItem
	On          Expr
	Using       []string
	// Natural is NATURAL JOIN: USING the columns both sides have, which
	// the planner finds.
	Natural bool
	// Within is the window of a stream–stream join (ksqlDB's WITHIN
	// clause, between Right and ON), nil when none was written.
	Within *JoinWindow
	Pos    int
}

// JoinWindow is a stream–stream join's WITHIN clause: a record of the
// left stream at time t joins the right stream's records of times
// [t-Before, t+After]; Grace is how long after a window closes late
// records are still taken (HasGrace when GRACE PERIOD was written).
type JoinWindow struct {
	Before, After time.Duration
	Grace         time.Duration
	HasGrace      bool
	Pos           int // the WITHIN keyword's character position (1-based, as other Pos fields)
}

func (*TableRef) fromItem()    {}
func (*SubqueryRef) fromItem() {}
func (*FuncRef) fromItem()     {}
func (*Join) fromItem()        {}

// CTE is one common table expression: name [(columns)] AS (select).
type CTE struct {
	Name    string
	Columns []string
	Select  *Select
	// Recursive is set for every CTE of WITH RECURSIVE: one whose query
	// is base UNION [ALL] step may read itself in step.
	Recursive bool
}

// SetOp is one UNION, INTERSECT or EXCEPT arm of a compound query.
type SetOp struct {
	// Op is "UNION", "INTERSECT" or "EXCEPT".
	Op     string
	All    bool
	Select *Select
}

// SubqueryKind says how a subquery is used.
type SubqueryKind uint8

const (
	// SubScalar is (SELECT x ...): one value, NULL when no row.
	SubScalar SubqueryKind = iota + 1
	// SubExists is EXISTS (SELECT ...).
	SubExists
	// SubArray is ARRAY(SELECT x ...): the values as an array.
	SubArray
)

// Subquery is a subquery expression.
type Subquery struct {
	Kind   SubqueryKind
	Select *Select
	Pos    int
}

// InSubquery is x [NOT] IN (SELECT ...).
type InSubquery struct {
	X      Expr
	Select *Select
	Not    bool
	Pos    int
}

// Quantified is x op ANY|SOME|ALL (...): over an array expression
// (Array) or a subquery (Select).
type Quantified struct {
	X      Expr
	Op     string // a comparison operator
	All    bool
	Array  Expr
	Select *Select
	Pos    int
}

// ArrayExpr is ARRAY[elems...].
type ArrayExpr struct {
	Elems []Expr
	Pos   int
}

// Subscript is x[index].
type Subscript struct {
	X, Index Expr
	Pos      int
}

// FieldSelect is (x).field, a field of a record.
type FieldSelect struct {
	X     Expr
	Field string
	Pos   int
}

// Window is the OVER clause of a window function call.
type Window struct {
	PartitionBy []Expr
	OrderBy     []OrderItem
	// Frame is the ROWS or RANGE clause; nil is the default frame.
	Frame *Frame
}

// Frame is a window frame: ROWS, RANGE or GROUPS BETWEEN Start AND
// End.
type Frame struct {
	Range      bool // RANGE
	Groups     bool // GROUPS; ROWS when neither is set
	Start, End FrameBound
	Pos        int
}

// FrameBound is one end of a frame.
type FrameBound struct {
	Kind   BoundKind
	Offset Expr // for OffsetPreceding and OffsetFollowing
}

// BoundKind is where a frame bound lies.
type BoundKind uint8

// The frame bounds, in the order rows come.
const (
	UnboundedPreceding BoundKind = iota
	OffsetPreceding
	CurrentRow
	OffsetFollowing
	UnboundedFollowing
)

func (e *Subquery) Position() int    { return e.Pos }
func (e *InSubquery) Position() int  { return e.Pos }
func (e *Quantified) Position() int  { return e.Pos }
func (e *ArrayExpr) Position() int   { return e.Pos }
func (e *Subscript) Position() int   { return e.Pos }
func (e *FieldSelect) Position() int { return e.Pos }
