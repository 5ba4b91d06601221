package exec

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/eval"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/internal/safe"
	"github.com/basindb/basin/pgcodec"
	"github.com/basindb/basin/planner"
	"github.com/basindb/basin/pull"
	"github.com/basindb/basin/sql"
)

// Prepared statements and portals: the engine's side of the extended
// query protocol.
//
// Session.Prepare parses one statement and, for a SELECT, plans it once;
// the plan's $n references give the parameter types (a parameter
// compared with a BIGINT column is int8) and its select list the result
// columns. A Prepared is bound to values into a Portal, which runs the
// statement; a SELECT's plan is reused by every Bind, and re-made only
// when the catalog changed since (a view dropped and re-created), which
// must not change the result columns a client was told about.
//
// A portal executed without a row limit runs on the caller's goroutine
// and streams straight into the ResultWriter, as a simple query does. A
// row limit needs the statement to stop after N rows and resume later,
// which a pull query (a callback over a Pebble scan) cannot do by
// itself; so the portal then runs the pull on a goroutine of its own,
// which hands rows over a small channel and blocks when the client is
// not asking for more. The goroutine is owned by the portal: Close
// cancels it and waits for it, and its context is also ended by the
// context Bind was given (the connection's). Memory stays bounded by the
// channel however large the scan. Other row-returning statements (SHOW,
// DESCRIBE, EXPLAIN) produce few rows from session state the goroutine
// must not touch, so a row-limited portal runs them to the end at once
// and hands out the buffered rows.

// portalBuffer is how many rows a row-limited SELECT's goroutine may run
// ahead of the client.
const portalBuffer = 64

// Prepared is a statement prepared for the extended query protocol. It
// belongs to its session and is used from one goroutine at a time.
type Prepared struct {
	s *Session
	// stmt is nil for the empty statement; text is its own text.
	stmt sql.Statement
	text string
	// declared are the parameter types the client gave (Unknown where it
	// left one to us); params are the types reported, one per $n.
	declared []catalog.Type
	params   []catalog.Type
	cols     []catalog.Column

	// A SELECT's plan, made when the catalog was at planAt. LIMIT $n and
	// OFFSET $n are taken out of the plan and applied at Bind.
	plan   *planner.PullPlan
	planAt int64
	// code is plan's compiled expressions (codeOf the plan they are of),
	// compiled at the first Bind of each plan rather than per execution.
	code                    *pull.PullCode
	codeOf                  *planner.PullPlan
	limitParam, offsetParam int
	// spare is a closed portal of this statement that nothing runs any
	// more, for the next Bind to make its portal in (a client running a
	// prepared statement again and again binds a portal each time).
	spare *Portal
	// counted is set while the statement counts against the session's
	// basin.max_prepared_statements (a client's, not the plan cache's).
	counted bool
}

// Prepare parses text, one statement, for the extended protocol.
// paramTypes are the types the client declared for $1, $2, ...
// (catalog.Unknown where it declared none). Zero statements make the
// empty statement; more than one is 42601, as in Postgres.
func (s *Session) Prepare(ctx context.Context, text string, paramTypes []catalog.Type) (p *Prepared, err error) {
	defer func() { s.failTxn(err) }()
	// statement_timeout and cancel cover a Parse message's parse and
	// plan, as they do a Query's (limits.go).
	sctx, cancel, timeout := s.statementContext(ctx)
	defer cancel()
	p, err = s.prepare(sctx, text, paramTypes)
	if err == nil && sctx.Err() != nil {
		err = sctx.Err()
	}
	if err = timeout(err); errors.Is(err, context.Canceled) {
		err = pgerr.New(pgerr.QueryCanceled, "canceling statement due to user request")
	}
	if err != nil {
		return nil, err
	}
	if err := s.countPrepared(p); err != nil {
		return nil, err
	}
	return p, nil
}

// prepare is Prepare without failing the transaction block on an error.
func (s *Session) prepare(ctx context.Context, text string, paramTypes []catalog.Type) (p *Prepared, err error) {
	stmts, err := s.parseStatement(ctx, text)
	if err != nil {
		return nil, err
	}
	if len(stmts) > 1 {
		return nil, pgerr.New(pgerr.SyntaxError, "cannot insert multiple commands into a prepared statement")
	}
	if len(stmts) == 1 {
		if err := s.txnGate(stmts[0].Stmt); err != nil {
			return nil, err
		}
	}
	p = &Prepared{s: s, declared: paramTypes}
	types := &paramTypeSet{}
	if len(stmts) == 1 {
		p.stmt, p.text = stmts[0].Stmt, stmts[0].Text
		switch st := p.stmt.(type) {
		case *sql.Select:
			if err := p.planSelect(st, types); err != nil {
				return nil, err
			}
			p.cols = p.plan.Columns
		case *sql.Insert:
			p.insertParams(st, types)
			if st.ReturnPosition {
				p.cols = positionColumns
			}
		case *sql.Delete:
			p.deleteParams(st, types)
			if st.ReturnPosition {
				p.cols = positionColumns
			}
		case *sql.Fetch:
			p.cols = s.fetchColumns(st)
		case *sql.Show, *sql.Describe, *sql.Explain:
			cols, err := s.describeColumns(ctx, p.stmt, p.text)
			if err != nil {
				return nil, canceled(ctx, err)
			}
			p.cols = cols
		}
	}
	n := max(len(paramTypes), types.max)
	p.params = make([]catalog.Type, n)
	for i := range p.params {
		switch {
		case i < len(paramTypes) && paramTypes[i] != catalog.Unknown:
			p.params[i] = paramTypes[i]
		case types.t[i+1] != catalog.Unknown:
			p.params[i] = types.t[i+1]
		default:
			// Nothing says what it is: text, which converts to anything.
			p.params[i] = catalog.Varchar
		}
	}
	return p, nil
}

// ParamTypes returns the type of each parameter $1..$n.
func (p *Prepared) ParamTypes() []catalog.Type { return p.params }

// Columns returns the result columns, nil when the statement returns no
// rows.
func (p *Prepared) Columns() []catalog.Column { return p.cols }

// Close releases the statement. Its portals are independent of it.
func (p *Prepared) Close() {
	if p.counted {
		p.counted = false
		p.s.prepared.Add(-1)
	}
}

// paramTypeSet collects what a statement says about its parameters.
type paramTypeSet struct {
	t   map[int]catalog.Type
	max int
}

// note records that $n appears, as type t if nothing typed it before.
func (ps *paramTypeSet) note(n int, t catalog.Type) {
	if ps.t == nil {
		ps.t = make(map[int]catalog.Type)
	}
	ps.max = max(ps.max, n)
	if ps.t[n] == catalog.Unknown {
		ps.t[n] = t
	}
}

// planSelect plans p's SELECT, noting its parameters' types in types.
func (p *Prepared) planSelect(st *sql.Select, types *paramTypeSet) error {
	sel := *st
	p.limitParam, p.offsetParam = paramOf(sel.Limit), paramOf(sel.Offset)
	if p.limitParam > 0 {
		sel.Limit = nil
		types.note(p.limitParam, catalog.BigInt)
	}
	if p.offsetParam > 0 {
		sel.Offset = nil
		types.note(p.offsetParam, catalog.BigInt)
	}
	p.planAt = p.s.e.Catalog.Applied()
	plan, err := planner.PlanSelect(p.s.e.Catalog, &sel)
	if err != nil {
		return err
	}
	for n, t := range plan.Params.Types {
		types.note(n, t)
	}
	visitParams(plan, func(r *planner.ParamRef) { types.note(r.N, r.T) })
	// A parameter nothing in the query typed ("SELECT $1") takes the
	// client's declared type, as in Postgres, so its value comes back as
	// it went in. The plan is this statement's own, so the references
	// can be typed in place.
	visitParams(plan, func(r *planner.ParamRef) {
		if r.T == catalog.Unknown && r.N <= len(p.declared) {
			r.T = p.declared[r.N-1]
		}
	})
	for i, o := range plan.Output {
		if r, ok := o.(*planner.ParamRef); ok && r.T != catalog.Unknown {
			plan.Columns[i].Type = r.T
		}
	}
	p.plan = plan
	return nil
}

// paramOf returns n when e is $n or a cast of it, else 0.
func paramOf(e sql.Expr) int {
	if c, ok := e.(*sql.Cast); ok {
		e = c.X
	}
	if q, ok := e.(*sql.Param); ok {
		return q.N
	}
	return 0
}

// visitParams calls fn for every parameter reference in plan.
func visitParams(plan *planner.PullPlan, fn func(*planner.ParamRef)) {
	plan.Walk(func(s planner.Scalar) {
		if r, ok := s.(*planner.ParamRef); ok {
			fn(r)
		}
	})
}

// insertParams notes the types of an INSERT's parameters as the values
// would bind: each value is planned as a cast to its column's type in a
// SELECT of its own, so $n takes the column's type, a cast's, or what
// the expression around it wants ($3 * 2 is int8). A value that does
// not plan is left for execution to report.
func (p *Prepared) insertParams(st *sql.Insert, types *paramTypeSet) {
	rel, _ := p.s.e.Catalog.Lookup(st.Table)
	colType := func(j int) catalog.Type {
		if rel == nil {
			return catalog.Unknown
		}
		if len(st.Columns) == 0 {
			if j < len(rel.Schema.Columns) {
				return rel.Schema.Columns[j].Type
			}
			return catalog.Unknown
		}
		if j < len(st.Columns) {
			if i := rel.Schema.Index(st.Columns[j]); i >= 0 {
				return rel.Schema.Columns[i].Type
			}
		}
		return catalog.Unknown
	}
	for _, row := range st.Rows {
		for j, e := range row {
			hasParam := false
			mapExpr(e, func(e sql.Expr) sql.Expr {
				if q, ok := e.(*sql.Param); ok {
					hasParam = true
					types.note(q.N, catalog.Unknown)
				}
				return e
			})
			if !hasParam {
				continue
			}
			if t := colType(j); t != catalog.Unknown {
				e = &sql.Cast{X: e, Type: t, Pos: e.Position()}
			}
			plan, err := planner.PlanSelect(p.s.e.Catalog, &sql.Select{Items: []sql.SelectItem{{Expr: e}}})
			if err != nil {
				continue
			}
			for n, t := range plan.Params.Types {
				types.note(n, t)
			}
			visitParams(plan, func(r *planner.ParamRef) { types.note(r.N, r.T) })
		}
	}
}

// errDescribed stops a statement run only to learn its result columns.
var errDescribed = errors.New("exec: result columns described")

// describeColumns learns the result columns of a read-only utility
// statement (SHOW, DESCRIBE, EXPLAIN) by running it up to its Columns
// call: the statement's own code is the one place that knows them.
func (s *Session) describeColumns(ctx context.Context, st sql.Statement, text string) ([]catalog.Column, error) {
	dw := &describeWriter{}
	err := s.exec(ctx, st, text, dw)
	if err != nil && !errors.Is(err, errDescribed) {
		return nil, err
	}
	return dw.cols, nil
}

// describeWriter is the ResultWriter of describeColumns.
type describeWriter struct{ cols []catalog.Column }

func (d *describeWriter) Columns(cols []catalog.Column) error {
	d.cols = append([]catalog.Column{}, cols...)
	return errDescribed
}
func (d *describeWriter) Row([]any) error           { return errDescribed }
func (d *describeWriter) Complete(string) error     { return nil }
func (d *describeWriter) Empty() error              { return nil }
func (d *describeWriter) Notice(*pgerr.Error) error { return nil }
func (d *describeWriter) Flush() error              { return nil }
func (d *describeWriter) CopyOut([]catalog.Column, *pgcodec.CopyFormat) error {
	return errDescribed
}

// Bind makes a portal of p with params, one value per ParamTypes entry
// (nil for NULL; any basin Go value, converted to what the plan wants as
// the portal runs). ctx bounds the portal's life: a row-limited SELECT's
// goroutine ends with it at the latest.
func (p *Prepared) Bind(ctx context.Context, params []any) (_ *Portal, err error) {
	defer func() { p.s.failTxn(err) }()
	if err := p.s.txnGate(p.stmt); err != nil {
		return nil, err
	}
	if len(params) != len(p.params) {
		return nil, pgerr.New(pgerr.ProtocolViolation, "bind supplies %d parameters, but the statement requires %d", len(params), len(p.params))
	}
	pt := p.spare
	var q *pull.Query
	if pt != nil {
		p.spare, q = nil, pt.q
	} else {
		pt = new(Portal)
	}
	*pt = Portal{s: p.s, stmt: p.stmt, text: p.text, cols: p.cols, ctx: ctx, from: p, q: q}
	pt.env, pt.opts = &pt.envVal, &pt.optsVal
	p.s.fillEnv(pt.env, pt.opts)
	pt.env.Params = params
	switch st := p.stmt.(type) {
	case *sql.Select:
		if p.s.e.Catalog.Applied() != p.planAt {
			if err := p.replan(st); err != nil {
				return nil, err
			}
		}
		if p.code == nil || p.codeOf != p.plan {
			p.code, p.codeOf = pull.CompilePull(p.plan), p.plan
		}
		pt.code = p.code
		pt.plan = p.plan
		if p.limitParam == 0 && p.offsetParam == 0 {
			break
		}
		plan := *p.plan
		if p.limitParam > 0 {
			n, err := rowCount(params[p.limitParam-1], "LIMIT", -1)
			if err != nil {
				return nil, err
			}
			plan.Limit = n
		}
		if p.offsetParam > 0 {
			n, err := rowCount(params[p.offsetParam-1], "OFFSET", 0)
			if err != nil {
				return nil, err
			}
			plan.Offset = n
		}
		pt.plan = &plan
	case *sql.Fetch:
		// Describe answered with the cursor's columns at Prepare; a
		// cursor of that name declared since may return others.
		if cols := p.s.fetchColumns(st); cols != nil && !sameColumns(cols, p.cols) {
			return nil, pgerr.New(pgerr.FeatureNotSupported, "cached plan must not change result type").
				WithDetail("Cursor %q returns other columns than when the FETCH was prepared.", st.Name).
				WithHint("Prepare the statement again.")
		}
	case *sql.Insert:
		pt.stmt = bindInsert(st, params)
	case *sql.Delete:
		del := *st
		if del.Where != nil {
			del.Where = bindParams(st.Where, params)
		}
		pt.stmt = &del
	}
	return pt, nil
}

// sameColumns reports whether a and b have the same names and types.
func sameColumns(a, b []catalog.Column) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || a[i].Type != b[i].Type {
			return false
		}
	}
	return true
}

// replan plans p's SELECT again after the catalog changed. The result
// columns must stay those the client was told about.
//
// A failed replan leaves the old plan and its catalog position in place,
// so the next Bind tries again (and fails again, until the statement is
// prepared anew or the relation is back as it was).
func (p *Prepared) replan(st *sql.Select) error {
	old := *p
	cols := p.cols
	err := p.planSelect(st, &paramTypeSet{})
	same := err == nil && len(cols) == len(p.plan.Columns)
	for i := 0; same && i < len(cols); i++ {
		same = cols[i].Name == p.plan.Columns[i].Name && cols[i].Type == p.plan.Columns[i].Type
	}
	if !same {
		*p = old
	}
	if err != nil {
		return err
	}
	if !same {
		return pgerr.New(pgerr.FeatureNotSupported, "cached plan must not change result type").
			WithDetail("A relation the statement reads was re-created with other columns.").
			WithHint("Prepare the statement again.")
	}
	return nil
}

// rowCount converts a LIMIT or OFFSET parameter; NULL means def.
func rowCount(v any, clause string, def int64) (int64, error) {
	if v == nil {
		return def, nil
	}
	c, err := planner.ConvertValue(v, catalog.BigInt)
	if err != nil {
		return 0, err
	}
	n := c.(int64)
	if n < 0 {
		code := pgerr.InvalidRowCountInLimitClause
		if clause == "OFFSET" {
			code = pgerr.InvalidRowCountInResultOffsetClause
		}
		return 0, pgerr.New(code, "%s must not be negative", clause)
	}
	return n, nil
}

// bindInsert returns st with each $n replaced by its value as a literal,
// so the INSERT runs as if the values had been written in it: each
// converts to its column's type as a literal would.
func bindInsert(st *sql.Insert, params []any) *sql.Insert {
	out := *st
	out.Rows = make([][]sql.Expr, len(st.Rows))
	for i, row := range st.Rows {
		out.Rows[i] = make([]sql.Expr, len(row))
		for j, e := range row {
			out.Rows[i][j] = bindParams(e, params)
		}
	}
	return &out
}

// bindParams returns e with each $n replaced by the literal of its
// value.
func bindParams(e sql.Expr, params []any) sql.Expr {
	return mapExpr(e, func(e sql.Expr) sql.Expr {
		q, ok := e.(*sql.Param)
		if !ok || q.N > len(params) {
			return e // an unknown $n fails as it does in a query
		}
		v := params[q.N-1]
		return &sql.Literal{Value: v, Type: typeOfValue(v), Pos: q.Pos}
	})
}

// deleteParams types the parameters of a DELETE's condition as its read
// of the table's keys (planDelete) types them; an unknown table leaves
// them to the client's declared types, and the DELETE fails when run.
func (p *Prepared) deleteParams(st *sql.Delete, types *paramTypeSet) {
	rel, err := p.s.e.Catalog.Resolve(st.Table)
	if err != nil {
		return
	}
	plan, err := p.s.planDelete(rel, st)
	if err != nil {
		return
	}
	for n, t := range plan.Params.Types {
		types.note(n, t)
	}
	visitParams(plan, func(r *planner.ParamRef) { types.note(r.N, r.T) })
}

// typeOfValue returns the basin type of a Go value (Unknown for nil).
func typeOfValue(v any) catalog.Type {
	switch v.(type) {
	case bool:
		return catalog.Boolean
	case int64:
		return catalog.BigInt
	case float64:
		return catalog.Double
	case string:
		return catalog.Varchar
	case catalog.DateVal:
		return catalog.Date
	case catalog.TimeOfDay:
		return catalog.Time
	case catalog.IntervalVal:
		return catalog.Interval
	case catalog.JSONText:
		// A jsonb parameter: into a STRUCT or MAP column it converts
		// as jsonb does.
		return catalog.JSONB
	}
	if v == nil {
		return catalog.Unknown
	}
	return catalog.Timestamp
}

// mapExpr returns e with f applied to every node, children first; nodes
// with children are copied, so e itself is unchanged.
func mapExpr(e sql.Expr, f func(sql.Expr) sql.Expr) sql.Expr {
	m := func(x sql.Expr) sql.Expr {
		if x == nil {
			return nil
		}
		return mapExpr(x, f)
	}
	switch x := e.(type) {
	case *sql.Unary:
		c := *x
		c.X = m(x.X)
		e = &c
	case *sql.Binary:
		c := *x
		c.L, c.R = m(x.L), m(x.R)
		e = &c
	case *sql.IsNull:
		c := *x
		c.X = m(x.X)
		e = &c
	case *sql.In:
		c := *x
		c.X = m(x.X)
		c.List = make([]sql.Expr, len(x.List))
		for i, l := range x.List {
			c.List[i] = m(l)
		}
		e = &c
	case *sql.Between:
		c := *x
		c.X, c.Lo, c.Hi = m(x.X), m(x.Lo), m(x.Hi)
		e = &c
	case *sql.Func:
		c := *x
		c.Args = make([]sql.Expr, len(x.Args))
		for i, a := range x.Args {
			c.Args[i] = m(a)
		}
		e = &c
	case *sql.Cast:
		c := *x
		c.X = m(x.X)
		e = &c
	case *sql.Case:
		c := *x
		c.Operand, c.Else = m(x.Operand), m(x.Else)
		c.Whens = make([]sql.When, len(x.Whens))
		for i, w := range x.Whens {
			c.Whens[i] = sql.When{Cond: m(w.Cond), Result: m(w.Result)}
		}
		e = &c
	}
	return f(e)
}

// Portal is a bound statement. Its methods are called from one goroutine
// at a time (the connection's); the goroutine a row-limited SELECT runs
// on is the portal's own and touches only the plan and env.
type Portal struct {
	s    *Session
	stmt sql.Statement // nil: the empty statement
	text string
	cols []catalog.Column
	env  *eval.Env         // envVal, the portal's own
	opts *pull.ReadOptions // optsVal, the portal's own
	plan *planner.PullPlan // a SELECT's, with LIMIT/OFFSET parameters applied
	code *pull.PullCode    // plan's compiled expressions
	// ctx is Bind's: the row-limited goroutine's parent.
	ctx context.Context

	// src feeds a row-limited execution; nil until one starts.
	src rowSource
	// done is set once the statement has run to its end; tag is the tag
	// it ended with.
	done   bool
	tag    string
	failed bool

	envVal  eval.Env
	optsVal pull.ReadOptions
	// rows counts the rows a run sent, counted the raw ones among them.
	rows    int
	counted countedRaw
	// q holds a whole run's query state (Runtime.pullIn); made by the
	// first, kept when the portal's memory is made again.
	q *pull.Query

	// from is the statement bound; closed is set by Close, which hands
	// the portal back to from when nothing of it still runs.
	from   *Prepared
	closed bool
}

var errPortalFailed = pgerr.New(pgerr.ObjectNotInPrerequisiteState, "portal cannot be run: an earlier execution of it failed")

// Execute runs the portal, or resumes it, reporting rows and the
// statement's end to w. maxRows > 0 stops after that many rows and
// reports suspended; as in Postgres, a portal that had exactly that many
// rows left is suspended too, and the next Execute completes it with
// none. The command tag counts the rows of this call. An error (57014
// when ctx was cancelled) leaves the portal failed.
func (pt *Portal) Execute(ctx context.Context, w ResultWriter, maxRows int) (suspended bool, err error) {
	// Outside a block each Execute is its own transaction for LISTEN and
	// NOTIFY. (In Postgres the pipeline up to Sync is one: a NOTIFY
	// followed by a failing Execute before Sync is sent here, dropped
	// there.)
	defer func() {
		if !suspended {
			pt.s.endImplicitTxn(err)
		}
	}()
	if pt.failed {
		return false, pt.s.failTxn(errPortalFailed)
	}
	if err := pt.s.txnGate(pt.stmt); err != nil {
		return false, err
	}
	ctx, cancel, timeout := pt.s.statementContext(ctx)
	defer cancel()
	pt.s.startStatement(pt.text)
	defer pt.s.endStatement()
	defer func() {
		if err != nil {
			err = canceled(ctx, timeout(err))
			pt.failed = true
			pt.stop()
			pt.s.failTxn(err)
		}
	}()
	if pt.done {
		if pt.cols == nil {
			return false, pgerr.New(pgerr.ObjectNotInPrerequisiteState, "portal cannot be run again: its statement has completed")
		}
		// A finished query has no rows left, as Postgres answers.
		return false, w.Complete(withCount(pt.tag, 0))
	}
	if pt.src == nil {
		if maxRows <= 0 || pt.cols == nil {
			pt.done = true
			return false, pt.run(ctx, w)
		}
		if pt.src, err = pt.start(ctx, w); err != nil {
			return false, err
		}
	}
	n := 0
	for maxRows <= 0 || n < maxRows {
		row, ok, err := pt.src.next(ctx)
		if err != nil {
			return false, err
		}
		if !ok {
			pt.done = true
			pt.tag = pt.src.tag(n)
			pt.src.close()
			return false, w.Complete(pt.tag)
		}
		if err := w.Row(row); err != nil {
			return false, err
		}
		n++
	}
	return true, nil
}

// Close stops a row-limited execution's goroutine, if any, and waits for
// it. It may be called more than once. The portal must not be used after
// it: its statement's next Bind may make its portal in the same memory.
func (pt *Portal) Close() {
	if pt.closed {
		return
	}
	pt.closed = true
	if pt.src != nil {
		pt.stop() // a portal that ran row-limited is not made again
		return
	}
	if pt.from != nil && pt.from.spare == nil {
		pt.from.spare = pt
	}
}

// stop stops a row-limited execution's goroutine, if any, and waits for
// it.
func (pt *Portal) stop() {
	if pt.src != nil {
		pt.src.close()
	}
}

// run executes the whole statement on the caller's goroutine, streaming
// into w.
func (pt *Portal) run(ctx context.Context, w ResultWriter) error {
	switch st := pt.stmt.(type) {
	case nil:
		return w.Empty()
	case *sql.Select:
		// The portal's own ReadOptions take the raw writer of this run.
		pt.rows = 0
		if raw, ok := w.(pull.RawRows); ok {
			pt.counted = countedRaw{RawRows: raw, n: &pt.rows}
			pt.opts.Raw = &pt.counted
			defer func() { pt.opts.Raw = nil }()
		}
		if pt.q == nil {
			pt.q = new(pull.Query)
		}
		reads, err := pt.s.e.read(pt.q, ctx, pt.plan, pt.code, pt.env, pt.opts, func(r catalog.Row) error {
			pt.rows++
			return w.Row(r)
		})
		if err == nil {
			pt.s.afterRead(pt.plan.Rel, reads, w)
		}
		// What the run held (its rows, if it sorted or grouped them) is
		// not kept while the portal waits for its statement's next Bind.
		*pt.q = pull.Query{}
		if err != nil {
			return err
		}
		pt.tag = selectTag(pt.rows)
		return w.Complete(pt.tag)
	default:
		return pt.s.exec(ctx, st, pt.text, &tagWriter{ResultWriter: w, tag: &pt.tag})
	}
}

// start begins a row-limited execution.
func (pt *Portal) start(ctx context.Context, w ResultWriter) (rowSource, error) {
	if pt.plan != nil {
		return startPull(pt.ctx, pt.s.e, pt.plan, pt.code, pt.env, pt.opts), nil
	}
	b := &bufferWriter{w: w}
	if err := pt.s.exec(ctx, pt.stmt, pt.text, b); err != nil {
		return nil, err
	}
	return b, nil
}

// withCount replaces the row count at the end of a command tag
// ("SELECT 5" → "SELECT 0"); a tag without one is returned as it is.
func withCount(tag string, n int) string {
	i := strings.LastIndexByte(tag, ' ')
	if i < 0 {
		return tag
	}
	if _, err := strconv.Atoi(tag[i+1:]); err != nil {
		return tag
	}
	return tag[:i+1] + strconv.Itoa(n)
}

// canceled turns the error of a cancelled statement into 57014, as
// Session.Query does.
func canceled(ctx context.Context, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(ctx.Err(), context.Canceled) {
		return pgerr.New(pgerr.QueryCanceled, "canceling statement due to user request")
	}
	return err
}

// tagWriter records the command tag a statement completes with.
type tagWriter struct {
	ResultWriter
	tag *string
}

func (t *tagWriter) unwrap() ResultWriter { return t.ResultWriter }

func (t *tagWriter) Complete(tag string) error {
	*t.tag = tag
	return t.ResultWriter.Complete(tag)
}

// rowSource feeds a row-limited execution.
type rowSource interface {
	// next returns the next row; ok is false at the end, where err is
	// the statement's error, if any. ctx is the Execute's.
	next(ctx context.Context) (row []any, ok bool, err error)
	// tag is the command tag once the end was reached, n rows into the
	// last Execute.
	tag(n int) string
	close()
}

// bufferWriter runs a statement to its end and keeps its rows and tag;
// notices go to the client at once.
type bufferWriter struct {
	w    ResultWriter
	rows [][]any
	end  string
}

func (b *bufferWriter) unwrap() ResultWriter           { return b.w }
func (b *bufferWriter) Columns([]catalog.Column) error { return nil }
func (b *bufferWriter) Row(r []any) error {
	b.rows = append(b.rows, append([]any{}, r...))
	return nil
}
func (b *bufferWriter) Complete(tag string) error   { b.end = tag; return nil }
func (b *bufferWriter) Empty() error                { return nil }
func (b *bufferWriter) Notice(n *pgerr.Error) error { return b.w.Notice(n) }
func (b *bufferWriter) Flush() error                { return nil }
func (b *bufferWriter) CopyOut([]catalog.Column, *pgcodec.CopyFormat) error {
	return errors.New("exec: COPY cannot run row-limited")
}
func (b *bufferWriter) tag(int) string { return b.end }
func (b *bufferWriter) close()         { b.rows = nil }
func (b *bufferWriter) next(context.Context) ([]any, bool, error) {
	if len(b.rows) == 0 {
		return nil, false, nil
	}
	r := b.rows[0]
	b.rows = b.rows[1:]
	return r, true, nil
}

// pullSource runs a pull query on a goroutine of its own, handing rows
// over a bounded channel. Closing it cancels the query and waits for the
// goroutine.
type pullSource struct {
	rows   chan catalog.Row
	cancel context.CancelFunc
	done   chan struct{}
	// err is the query's error; it is written before rows is closed and
	// read after, which orders the two.
	err       error
	closeOnce sync.Once
}

func startPull(parent context.Context, e *Engine, plan *planner.PullPlan, code *pull.PullCode, env *eval.Env, opts *pull.ReadOptions) *pullSource {
	if parent == nil {
		parent = context.Background()
	}
	ctx, cancel := context.WithCancel(parent)
	ps := &pullSource{rows: make(chan catalog.Row, portalBuffer), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(ps.done)
		defer close(ps.rows)
		// A panic is the statement's error (XX000 at the wire), set
		// before rows is closed like any other.
		defer safe.Recover(&ps.err)
		safe.Fault(safe.FaultPortal)
		_, ps.err = e.read(nil, ctx, plan, code, env, opts, func(r catalog.Row) error {
			// The row is handed to another goroutine: copy it, whatever
			// Pull does with its buffers.
			select {
			case ps.rows <- append(catalog.Row{}, r...):
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	}()
	return ps
}

func (ps *pullSource) next(ctx context.Context) ([]any, bool, error) {
	select {
	case r, ok := <-ps.rows:
		if !ok {
			return nil, false, ps.err
		}
		return r, true, nil
	case <-ctx.Done():
		return nil, false, ctx.Err()
	}
}

func (ps *pullSource) tag(n int) string { return selectTag(n) }

// selectTags are the command tags of SELECTs of few rows, made once.
var selectTags = func() (tags [65]string) {
	for n := range tags {
		tags[n] = "SELECT " + strconv.Itoa(n)
	}
	return tags
}()

// selectTag is the command tag of a SELECT that returned n rows.
func selectTag(n int) string {
	if n >= 0 && n < len(selectTags) {
		return selectTags[n]
	}
	return "SELECT " + strconv.Itoa(n)
}

func (ps *pullSource) close() {
	ps.closeOnce.Do(func() {
		ps.cancel()
		<-ps.done
	})
}

// withRaw returns opts with Raw set when w takes raw rows, counting them
// into n with the rows emitted one by one.
func withRaw(opts *pull.ReadOptions, w ResultWriter, n *int) *pull.ReadOptions {
	raw, ok := w.(pull.RawRows)
	if !ok {
		return opts
	}
	opts.Raw = &countedRaw{RawRows: raw, n: n}
	return opts
}

// countedRaw counts the rows written raw.
type countedRaw struct {
	pull.RawRows
	n *int
}

func (c *countedRaw) WriteRows(b []byte, rows int) error {
	*c.n += rows
	return c.RawRows.WriteRows(b, rows)
}
