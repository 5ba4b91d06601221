package sql

import "github.com/basindb/basin/catalog"

// Statement is one parsed basin statement. The concrete types below are
// all there is: later layers switch on them.
type Statement interface {
	statement()
}

// RelationKind says what CREATE or DROP names.
type RelationKind uint8

const (
	KindStream RelationKind = iota + 1
	KindTable
)

func (k RelationKind) String() string {
	if k == KindStream {
		return "STREAM"
	}
	return "TABLE"
}

// Option is one key = value pair of a WITH (...) clause. Keys are lower
// case and may contain dots (acceptable.offset.lag). Value is the literal
// as written without quotes: 'orders' gives orders, 1000 gives 1000.
type Option struct {
	Key   string
	Value string
	// Pos is the 1-based character position of the key in the text given
	// to Parse.
	Pos int
}

// ColumnDef is a column of CREATE STREAM / CREATE TABLE.
type ColumnDef struct {
	Name string
	Type catalog.Type
	// Precision and Scale are NUMERIC(p,s)'s modifiers; Precision 0 is
	// an unconstrained NUMERIC (and every other type).
	Precision, Scale int
	// Key is set by KEY or PRIMARY KEY on the column, or by a table-level
	// PRIMARY KEY (...) naming it.
	Key bool
	// Headers marks a HEADERS column (the record's headers); Header is
	// the key of a HEADER('key') column ("" for none).
	Headers bool
	Header  string
}

// CreateSource is CREATE STREAM|TABLE name (cols) WITH (...): a relation
// over an existing or new Kafka topic.
type CreateSource struct {
	Kind        RelationKind
	Name        string
	IfNotExists bool
	Columns     []ColumnDef
	With        []Option
}

// CreateTableAs is CREATE TABLE name WITH (...) AS SELECT: a materialized
// view.
type CreateTableAs struct {
	Name        string
	IfNotExists bool
	With        []Option
	Select      *Select
	// SelectText is the user's text of the SELECT, for SHOW QUERIES.
	SelectText string
}

// CreateStreamAs is CREATE STREAM name WITH (...) AS SELECT ...
// [PARTITION BY expr]: a derived stream, whose records a persistent
// query writes to its topic.
type CreateStreamAs struct {
	Name        string
	IfNotExists bool
	With        []Option
	Select      *Select
	// PartitionBy re-keys the records by an expression over the source
	// row; nil keeps the source's key.
	PartitionBy Expr
	// SelectText is the user's text of the SELECT (without PARTITION
	// BY), for SHOW QUERIES.
	SelectText string
}

// Delete is DELETE FROM name [[AS] alias] [WHERE cond] [RETURNING
// _position]: the rows of a table that cond holds for are deleted, each
// by a tombstone record for its key.
type Delete struct {
	Table, Alias string
	// Where is the condition; nil deletes every row.
	Where Expr
	// ReturnPosition is RETURNING _position, as for Insert.
	ReturnPosition bool
	// Pos is the position of the table name.
	Pos int
}

// Insert is INSERT INTO name (cols) VALUES (...), (...) [RETURNING
// _position].
type Insert struct {
	Table   string
	Columns []string // empty: all columns in order
	Rows    [][]Expr
	// ReturnPosition is RETURNING _position: the statement returns one
	// row, the position token of the records it wrote. It is the only
	// RETURNING basin has.
	ReturnPosition bool
	// Pos is the position of the table name; ColumnPos[i] that of
	// Columns[i]. The planner reports unknown relations and columns there.
	Pos       int
	ColumnPos []int
}

// InsertSelect is INSERT INTO stream [(cols)] SELECT ...: a persistent
// query that writes the records its SELECT derives into an existing
// stream.
type InsertSelect struct {
	Table   string
	Columns []string // empty: all columns in order
	Select  *Select
	// SelectText is the user's text of the SELECT, for SHOW QUERIES.
	SelectText string
	// Pos is the position of the table name.
	Pos int
}

// TableRef is a relation in FROM, optionally aliased. Schema is set
// when the name was qualified (pg_catalog.pg_type).
type TableRef struct {
	Schema string
	Name   string
	Alias  string
	// Columns rename the relation's first columns (FROM t AS x(a, b)).
	Columns []string
	Pos     int
}

// SelectItem is one entry of the select list. Star is *; Expr is nil
// then.
type SelectItem struct {
	Expr  Expr
	Alias string
	Star  bool
	// Table qualifies a star (t.*); empty for a bare *.
	Table string
	// Text is the item as the user wrote it, used to name unaliased
	// expressions the way Postgres does (?column? aside).
	Text string
}

// OrderItem is one ORDER BY entry.
type OrderItem struct {
	Expr Expr
	Desc bool
	// NullsFirst is nil for the default (Postgres: NULLS LAST for ASC,
	// NULLS FIRST for DESC).
	NullsFirst *bool
}

// Select is a SELECT statement. From is the FROM list, empty for
// SELECT without FROM (SELECT 1); most queries read one relation, which
// Table returns.
//
// SetOps are the UNION, INTERSECT and EXCEPT arms that follow this
// SELECT, applied left to right; OrderBy, Limit and Offset then apply to
// the whole compound query, as in Postgres.
type Select struct {
	// With are the common table expressions of WITH, visible to the
	// whole statement.
	With     []CTE
	Items    []SelectItem
	Distinct bool
	// DistinctOn are the expressions of SELECT DISTINCT ON (...): one
	// row, the first in ORDER BY's order, for each of their values.
	DistinctOn []Expr
	From       []FromItem
	Where      Expr
	GroupBy    []Expr
	// GroupingSets, when GROUP BY has ROLLUP, CUBE or GROUPING SETS,
	// are the sets it groups by, each a list of indexes into GroupBy,
	// which then lists each expression once.
	GroupingSets [][]int
	Having       Expr
	SetOps       []SetOp
	OrderBy      []OrderItem
	Limit        Expr // nil: no limit
	Offset       Expr // nil: no offset
	// Window is ksqlDB's WINDOW clause of an aggregate over a stream
	// (window.go); nil without one.
	Window *StreamWindow
	// Emit is the EMIT clause at the end of the query.
	Emit EmitMode
}

// Table returns the relation of a FROM clause that names exactly one
// relation, else nil.
func (s *Select) Table() *TableRef {
	if len(s.From) != 1 {
		return nil
	}
	t, _ := s.From[0].(*TableRef)
	return t
}

// ShowKind says what SHOW lists.
type ShowKind uint8

const (
	ShowStreams ShowKind = iota + 1
	ShowTables
	ShowQueries
	ShowTasks
	ShowCluster
	// ShowVariable is SHOW name (a session or server setting); Name holds
	// it.
	ShowVariable
)

// Show is SHOW STREAMS | TABLES | QUERIES | TASKS | CLUSTER | <variable> | ALL.
type Show struct {
	What ShowKind
	Name string
}

// Describe is DESCRIBE name (also DESC name).
type Describe struct {
	Name string
}

// Resume is RESUME query_id: the operator accepts that the query's
// input lost records and lets its stopped tasks continue.
type Resume struct {
	Query string
}

// Terminate is TERMINATE query_id: it stops and removes an INSERT ...
// SELECT query (ksqlDB's statement).
type Terminate struct {
	Query string
}

// Drop is DROP STREAM|TABLE [IF EXISTS] name.
type Drop struct {
	Kind     RelationKind
	Name     string
	IfExists bool
}

// Set is SET name = value / SET name TO value; Value is unquoted text
// (a list is joined with ", "). Reset is SET name TO DEFAULT or RESET name
// (RESET ALL has Name "all"). Local is SET LOCAL: the setting lasts until
// the end of the transaction.
type Set struct {
	Name  string
	Value string
	Reset bool
	Local bool
}

// Explain is EXPLAIN [ANALYZE] <statement>, or EXPLAIN (option, ...)
// <statement> with the options basin has: ANALYZE, TIMING, SUMMARY,
// COSTS (basin shows no costs: accepted either way) and FORMAT TEXT.
type Explain struct {
	Stmt Statement
	// Analyze runs the statement and shows what each operator did;
	// Timing (on unless TIMING OFF) adds their times, Summary (on with
	// ANALYZE unless SUMMARY OFF) the execution time and peak memory.
	Analyze, Timing, Summary bool
}

// TxnKind is the transaction-control statement kind.
type TxnKind uint8

const (
	TxnBegin TxnKind = iota + 1
	TxnCommit
	TxnRollback
)

// Txn is BEGIN / START TRANSACTION / COMMIT / END / ROLLBACK; basin
// accepts them for read-only work.
type Txn struct {
	Kind TxnKind
	// Modes are BEGIN's transaction modes, in order.
	Modes []TxnMode
}

// TxnMode is one transaction mode: Name is "isolation", "read_only" or
// "deferrable"; Value is the level ("read committed", ...) or on/off.
type TxnMode struct {
	Name, Value string
}

func (*CreateSource) statement()   {}
func (*CreateTableAs) statement()  {}
func (*CreateStreamAs) statement() {}
func (*InsertSelect) statement()   {}
func (*Terminate) statement()      {}
func (*Insert) statement()         {}
func (*Delete) statement()         {}
func (*Select) statement()         {}
func (*Show) statement()           {}
func (*Describe) statement()       {}
func (*Drop) statement()           {}
func (*Resume) statement()         {}
func (*Set) statement()            {}
func (*Explain) statement()        {}
func (*Txn) statement()            {}

// Expr is a scalar expression. Pos is the 1-based character position in
// the text given to Parse, or 0 when unknown; errors use it. It is where
// Postgres reports the expression: the operator of a Binary or Unary
// (the LIKE of x NOT LIKE y, the NOT of its Unary), the :: or CAST of a
// Cast, the name of a Func or ColumnRef, else where the expression
// starts.
type Expr interface {
	Position() int
}

// Literal is a constant. Value is nil for NULL (Type Unknown), else the
// Go value of Type (see catalog.Type). Integer literals are BigInt,
// decimal literals Double, strings Varchar.
type Literal struct {
	Value any
	Type  catalog.Type
	Pos   int
}

// ColumnRef names a column, optionally qualified by a relation or alias.
type ColumnRef struct {
	Table string
	Name  string
	Pos   int
}

// Param is a $n placeholder (1-based).
type Param struct {
	N   int
	Pos int
}

// Unary is -x, +x or NOT x. Op is "-", "+" or "NOT".
type Unary struct {
	Op  string
	X   Expr
	Pos int
}

// Binary is a binary operator. Op is one of
// + - * / % = <> < <= > >= AND OR || LIKE ILIKE & and the regular
// expression matches ~ ~* !~ !~*.
// NotLike is represented as Unary NOT over LIKE.
type Binary struct {
	Op   string
	L, R Expr
	Pos  int
}

// IsNull is x IS [NOT] NULL.
type IsNull struct {
	X   Expr
	Not bool
	Pos int
}

// In is x [NOT] IN (list).
type In struct {
	X    Expr
	List []Expr
	Not  bool
	Pos  int
}

// Between is x [NOT] BETWEEN lo AND hi.
type Between struct {
	X, Lo, Hi Expr
	Not       bool
	Pos       int
}

// Func is a function call. Name is lower case. Star is COUNT(*). Over
// is set for a window function call (row_number() OVER (...)).
type Func struct {
	Name     string
	Args     []Expr
	Star     bool
	Distinct bool
	Over     *Window
	Pos      int
	// Filter is an aggregate's FILTER (WHERE ...) condition.
	Filter Expr
	// OrderBy is an aggregate's ORDER BY inside its parentheses, or,
	// with WithinGroup, an ordered-set aggregate's WITHIN GROUP (ORDER
	// BY ...), whose key is the value aggregated.
	OrderBy     []OrderItem
	WithinGroup bool
}

// Cast is CAST(x AS type) or x::type.
type Cast struct {
	X    Expr
	Type catalog.Type
	// Precision and Scale are x::numeric(p,s)'s modifiers (Precision 0:
	// none).
	Precision, Scale int
	Pos              int
}

// When is one WHEN cond THEN result arm of a CASE.
type When struct {
	Cond, Result Expr
}

// Case is CASE [operand] WHEN ... THEN ... [ELSE ...] END.
type Case struct {
	Operand Expr // nil for a searched CASE
	Whens   []When
	Else    Expr
	Pos     int
}

func (e *Literal) Position() int   { return e.Pos }
func (e *ColumnRef) Position() int { return e.Pos }
func (e *Param) Position() int     { return e.Pos }
func (e *Unary) Position() int     { return e.Pos }
func (e *Binary) Position() int    { return e.Pos }
func (e *IsNull) Position() int    { return e.Pos }
func (e *In) Position() int        { return e.Pos }
func (e *Between) Position() int   { return e.Pos }
func (e *Func) Position() int      { return e.Pos }
func (e *Cast) Position() int      { return e.Pos }
func (e *Case) Position() int      { return e.Pos }
