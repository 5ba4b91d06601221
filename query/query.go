package query

import (
	"cmp"
	"context"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cockroachdb/apd/v3"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/eval"
	"github.com/basindb/basin/internal/numeric"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/planner"
	"github.com/basindb/basin/sql"
)

// Catalog queries (planner.QueryPlan) run here, over the rows of a
// catalog.PGSnapshot made for the statement and of the streams, tables
// and views they name (read whole through the pull engine, Reader).
// Every operator materializes its rows, counted against
// basin.query_memory (memory.go): a materialized operator is simple to
// get right. Rows coming from the snapshot are shared, so no operator
// changes a row it was given; it makes new ones.

// Reader returns every row of the relation a planner.RelationRel reads,
// as its Scan gives them with init the values of its Init, passing each
// to admit first (which counts it
// against the query's memory; an error ends the read).
type Reader func(ctx context.Context, scan *planner.PullPlan, init []any, admit func(catalog.Row) error) ([]catalog.Row, error)

// Run runs a query of the relational engine, emitting its rows; read
// reads the tables, views and streams it names (nil: it names none).
func Run(ctx context.Context, plan *planner.PullPlan, env *eval.Env, read Reader, emit func(catalog.Row) error) error {
	e := env.WithContext(ctx)
	e.Scope = &eval.Scope{Snap: sync.OnceValue(func() *catalog.PGSnapshot { return e.SessionSnapshot() }), Mem: &eval.Memory{Limit: e.QueryMemory}}
	mem := e.Scope.Mem
	if read != nil {
		e.Scope.Read = func(ctx context.Context, scan any, init []any) ([]catalog.Row, error) {
			p := scan.(*planner.PullPlan)
			what := "rows read from " + p.Rel.Name
			return read(ctx, p, init, func(row catalog.Row) error { return mem.Grow(eval.RowBytes(row), what) })
		}
	}
	if a := analysisOf(&e); a != nil {
		start := time.Now()
		defer func() { a.Time, a.PeakMemory = time.Since(start), mem.Peak }()
		emit = func(emit func(catalog.Row) error) func(catalog.Row) error {
			return func(r catalog.Row) error {
				a.Rows++
				return emit(r)
			}
		}(emit)
	}
	root := compileRel(plan.Query.Root)
	if b, ok := root.(*measured).op.(*blockOp); ok && b.keep < 0 && plan.Limit >= 0 && plan.Limit <= maxTopN && plan.Offset <= maxTopN {
		b.keep = plan.Limit + plan.Offset // the query's LIMIT, applied below
	}
	rows, err := root.run(&e)
	if err != nil {
		return err
	}
	cols := plan.Query.Columns
	convert := false
	for _, c := range cols {
		convert = convert || c.Type.IsReg() || c.Type == catalog.Record
	}
	sent := int64(0)
	for i, r := range rows {
		if int64(i) < plan.Offset {
			continue
		}
		if plan.Limit >= 0 && sent >= plan.Limit {
			break
		}
		out := r
		if convert {
			// reg* values reach the client as names, records as text.
			out = append(catalog.Row{}, r...)
			for k, c := range cols {
				switch {
				case out[k] == nil:
				case c.Type.IsReg():
					out[k] = planner.RegName(e.Scope.Snap(), c.Type, out[k].(int64))
				case c.Type == catalog.Record:
					out[k] = catalog.FormatRecord(out[k].([]any), planner.FormatValue)
				}
			}
		}
		sent++
		if err := emit(out); err != nil {
			return err
		}
	}
	return nil
}

// relOp is a compiled relational operator.
type relOp interface {
	run(env *eval.Env) ([]catalog.Row, error)
}

// compileRel compiles r, measured into the run's Analysis (analyze.go).
func compileRel(r planner.Rel) relOp {
	return &measured{rel: r, op: compileOp(r)}
}

func compileOp(r planner.Rel) relOp {
	switch r := r.(type) {
	case *planner.ScanRel:
		return scanOp{r.Table}
	case *planner.RelationRel:
		return newRelationOp(r)
	case *planner.ValuesRel:
		return valuesOp{}
	case *planner.FuncRel:
		if r.Scalar != nil {
			return &scalarOp{eval.Compile(r.Scalar)}
		}
		args := make([]eval.Expr, len(r.Args))
		for i, a := range r.Args {
			args[i] = eval.Compile(a)
		}
		types := make([]catalog.Type, len(r.Args))
		for i, a := range r.Args {
			types[i] = a.Type()
		}
		return &funcOp{name: r.Name, args: args, types: types, width: len(r.Columns)}
	case *planner.JoinRel:
		if r.Lateral {
			j := &lateralJoinOp{kind: r.Kind, l: compileRel(r.L), r: compileRel(r.R), rw: len(r.R.Cols())}
			if r.On != nil {
				j.on = eval.Compile(r.On)
			}
			return j
		}
		j := &joinOp{kind: r.Kind, l: compileRel(r.L), r: compileRel(r.R), equi: r.Equi,
			lw: len(r.L.Cols()), rw: len(r.R.Cols())}
		if r.On != nil {
			j.on = eval.Compile(r.On)
		}
		return j
	case *planner.DerivedRel:
		return compileRel(r.Query.Root)
	case *planner.BlockRel:
		return compileBlock(r)
	case *planner.FilterRel:
		return &filterOp{in: compileRel(r.In), cond: eval.Compile(r.Cond)}
	case *planner.PermuteRel:
		return &permuteOp{in: compileRel(r.In), perm: r.Map}
	case *planner.RecursiveRel:
		return &recursiveOp{id: r.ID, all: r.All, base: compileRel(r.Base), step: compileRel(r.Step)}
	case *planner.WorkTableRel:
		return workTableOp{id: r.ID}
	case *planner.SetRel:
		s := &setOp{rel: r, op: r.Op, all: r.All, l: compileRel(r.L), r: compileRel(r.R), limit: r.Limit, offset: r.Offset}
		for _, k := range r.Order {
			s.order = append(s.order, eval.Compile(k.Expr))
		}
		s.keys = r.Order
		return s
	}
	return errOp{pgerr.New(pgerr.InternalError, "cannot run %T", r)}
}

type errOp struct{ err error }

func (o errOp) run(*eval.Env) ([]catalog.Row, error) { return nil, o.err }

type scanOp struct{ t *catalog.VirtualTable }

func (o scanOp) run(env *eval.Env) ([]catalog.Row, error) { return env.Scope.Snap().Rows(o.t), nil }

// relationOp reads a table, view or stream through the pull engine
// (Scope.Read).
type relationOp struct {
	r    *planner.RelationRel
	scan *planner.PullPlan // r.ReadScan(), the same for the whole statement
	init []eval.Expr       // r.Init's subqueries
}

func newRelationOp(r *planner.RelationRel) *relationOp {
	o := &relationOp{r: r, scan: r.ReadScan()}
	for _, sub := range r.Init {
		o.init = append(o.init, eval.Compile(sub))
	}
	return o
}

func (o *relationOp) run(env *eval.Env) ([]catalog.Row, error) {
	if env.Scope.Read == nil {
		return nil, pgerr.New(pgerr.FeatureNotSupported, "%s %s cannot be read here", strings.ToLower(string(o.r.Rel.Kind)), o.r.Rel.Name)
	}
	// The reader keeps the rows for the statement: pinned.
	rows, held, err := input(readOp{o}, env)
	env.Scope.Mem.Pin(held)
	return rows, err
}

// readOp reads a relation through Scope.Read, its subqueries run first.
type readOp struct{ o *relationOp }

func (r readOp) run(env *eval.Env) ([]catalog.Row, error) {
	init, err := eval.EvalAll(r.o.init, nil, env)
	if err != nil {
		return nil, err
	}
	return env.Scope.Read(env.Context(), r.o.scan, init)
}

type valuesOp struct{}

func (valuesOp) run(*eval.Env) ([]catalog.Row, error) { return []catalog.Row{{}}, nil }

type filterOp struct {
	in   relOp
	cond eval.Expr
}

func (o *filterOp) run(env *eval.Env) ([]catalog.Row, error) {
	in, err := o.in.run(env)
	if err != nil {
		return nil, err
	}
	var out []catalog.Row
	for _, r := range in {
		ok, err := o.cond(r, env)
		if err != nil {
			return nil, err
		}
		if eval.Truthy(ok) {
			out = append(out, r)
		}
	}
	return out, nil
}

type permuteOp struct {
	in   relOp
	perm []int
}

func (o *permuteOp) run(env *eval.Env) ([]catalog.Row, error) {
	in, inHeld, err := input(o.in, env)
	if err != nil {
		return nil, err
	}
	out := make([]catalog.Row, len(in))
	var held int64
	var arena rowArena
	for i, r := range in {
		row := arena.row(len(o.perm))
		for k, p := range o.perm {
			row[k] = r[p]
		}
		if err := charge(env, &held, eval.RowBytes(row), "result"); err != nil {
			return nil, err
		}
		out[i] = row
	}
	release(env, inHeld)
	return out, nil
}

// maxJoinRows bounds what one join of a catalog query may produce, so
// that a query joining catalogs without conditions fails instead of
// exhausting memory.
const maxJoinRows = 2_000_000

// scalarOp is a one-row relation of a value.
type scalarOp struct{ e eval.Expr }

func (o *scalarOp) run(env *eval.Env) ([]catalog.Row, error) {
	v, err := o.e(nil, env)
	if err != nil {
		return nil, err
	}
	return []catalog.Row{{v}}, nil
}

type funcOp struct {
	name  string
	args  []eval.Expr
	types []catalog.Type
	width int
}

func (o *funcOp) run(env *eval.Env) ([]catalog.Row, error) {
	vals, err := eval.EvalAll(o.args, nil, env)
	if err != nil {
		return nil, err
	}
	out, err := eval.RunSRF(o.name, vals, o.types, env)
	if err != nil {
		return nil, err
	}
	rows := make([]catalog.Row, len(out))
	var held int64
	for i, v := range out {
		if o.width > 1 {
			rec, _ := v.([]any)
			rows[i] = append(catalog.Row{}, rec...)
		} else {
			rows[i] = catalog.Row{v}
		}
		if err := charge(env, &held, eval.RowBytes(rows[i]), o.name+"()"); err != nil {
			return nil, err
		}
	}
	return rows, nil
}

type joinOp struct {
	kind   sql.JoinKind
	l, r   relOp
	on     eval.Expr
	equi   []planner.EquiCond
	lw, rw int
}

func (o *joinOp) run(env *eval.Env) ([]catalog.Row, error) {
	left, lHeld, err := input(o.l, env)
	if err != nil {
		return nil, err
	}
	right, rHeld, err := input(o.r, env)
	if err != nil {
		return nil, err
	}
	if o.kind == sql.JoinInner && len(o.equi) == 1 && len(left) < len(right) {
		rows, err := o.innerBuildLeft(env, left, right)
		release(env, lHeld+rHeld)
		return rows, err
	}
	// temp is the build side's hash table and the match flags, out the
	// joined rows.
	var temp, out int64
	if err := charge(env, &temp, int64(len(right))*9, "join"); err != nil {
		return nil, err
	}
	// candidates returns the right rows that may match l: those with the
	// same equi-join key, or all of them.
	var candidates func(catalog.Row) []int
	switch {
	case len(o.equi) == 1:
		// One key column, the usual join: its values are the hash
		// table's keys as they are, with no key text to build per row;
		// a key's rows are a chain through next, in order.
		li, ri := o.equi[0].LIdx, o.equi[0].RIdx
		first, next, err := chainIndex(env, &temp, right, ri)
		if err != nil {
			return nil, err
		}
		var buf []int
		candidates = func(l catalog.Row) []int {
			k := singleKey(l[li])
			if k == nil {
				return nil
			}
			i, ok := first[k]
			if !ok {
				return nil
			}
			buf = buf[:0]
			for ; i >= 0; i = next[i] {
				buf = append(buf, i)
			}
			return buf
		}
	case len(o.equi) > 1:
		hash := make(map[string][]int, len(right))
		for i, r := range right {
			k, ok := equiKey(r, o.equi, false)
			if ok {
				if err := charge(env, &temp, keyBytes(k)+8, "join"); err != nil {
					return nil, err
				}
				hash[k] = append(hash[k], i)
			}
		}
		candidates = func(l catalog.Row) []int {
			k, ok := equiKey(l, o.equi, true)
			if !ok {
				return nil
			}
			return hash[k]
		}
	default:
		all := make([]int, len(right))
		for i := range all {
			all[i] = i
		}
		candidates = func(catalog.Row) []int { return all }
	}
	var rows []catalog.Row
	var arena rowArena
	matchedRight := make([]bool, len(right))
	for _, l := range left {
		matched := false
		for _, i := range candidates(l) {
			row := arena.row(o.lw + o.rw)[:0]
			row = append(append(row, l...), right[i]...)
			if o.on != nil {
				ok, err := o.on(row, env)
				if err != nil {
					return nil, err
				}
				if !eval.Truthy(ok) {
					continue
				}
			}
			matched = true
			matchedRight[i] = true
			if err := charge(env, &out, eval.RowBytes(row), "join"); err != nil {
				return nil, err
			}
			rows = append(rows, row)
			if len(rows) > maxJoinRows {
				return nil, pgerr.New(pgerr.ProgramLimitExceeded, "a join in this catalog query produces more than %d rows", maxJoinRows).
					WithHint("Join the catalog relations on their keys (oid columns).")
			}
		}
		if !matched && (o.kind == sql.JoinLeft || o.kind == sql.JoinFull) {
			row := make(catalog.Row, o.lw+o.rw)
			copy(row, l)
			if err := charge(env, &out, eval.RowBytes(row), "join"); err != nil {
				return nil, err
			}
			rows = append(rows, row)
		}
	}
	if o.kind == sql.JoinRight || o.kind == sql.JoinFull {
		for i, r := range right {
			if !matchedRight[i] {
				row := make(catalog.Row, o.lw+o.rw)
				copy(row[o.lw:], r)
				if err := charge(env, &out, eval.RowBytes(row), "join"); err != nil {
					return nil, err
				}
				rows = append(rows, row)
			}
		}
	}
	release(env, lHeld+rHeld+temp)
	return rows, nil
}

// chainIndex is the hash table of a join on one key column, column c
// of rows: its values as they are (singleKey) map to the first row of
// each, and next chains a key's rows in order (-1 ends a chain). Rows
// whose value is NULL are in no chain.
func chainIndex(env *eval.Env, temp *int64, rows []catalog.Row, c int) (first map[any]int, next []int, err error) {
	first = make(map[any]int, len(rows))
	next = make([]int, len(rows))
	for i := len(rows) - 1; i >= 0; i-- {
		k := singleKey(rows[i][c])
		if k == nil {
			continue
		}
		n := int64(40) // the map entry and the chain link
		if str, ok := k.(string); ok {
			n += int64(len(str))
		}
		if err := charge(env, temp, n, "join"); err != nil {
			return nil, nil, err
		}
		next[i] = -1
		if j, ok := first[k]; ok {
			next[i] = j
		}
		first[k] = i
	}
	return first, next, nil
}

// innerBuildLeft is an inner join on one key column whose left side is
// the smaller: its hash table is of the left rows, and the right rows
// probe it, so the rows come out in the right side's order.
func (o *joinOp) innerBuildLeft(env *eval.Env, left, right []catalog.Row) ([]catalog.Row, error) {
	var temp, out int64
	defer func() { release(env, temp) }()
	li, ri := o.equi[0].LIdx, o.equi[0].RIdx
	first, next, err := chainIndex(env, &temp, left, li)
	if err != nil {
		return nil, err
	}
	size := make([]int64, len(left)) // of each left row
	if err := charge(env, &temp, int64(len(left))*8, "join"); err != nil {
		return nil, err
	}
	for i, l := range left {
		size[i] = eval.RowBytes(l)
	}
	var rows []catalog.Row
	var arena rowArena
	for _, r := range right {
		k := singleKey(r[ri])
		if k == nil {
			continue
		}
		i, ok := first[k]
		if !ok {
			continue
		}
		rsize := eval.RowBytes(r)
		for ; i >= 0; i = next[i] {
			row := arena.row(o.lw + o.rw)[:0]
			row = append(append(row, left[i]...), r...)
			if o.on != nil {
				ok, err := o.on(row, env)
				if err != nil {
					return nil, err
				}
				if !eval.Truthy(ok) {
					continue
				}
			}
			if err := charge(env, &out, size[i]+rsize, "join"); err != nil {
				return nil, err
			}
			rows = append(rows, row)
			if len(rows) > maxJoinRows {
				return nil, pgerr.New(pgerr.ProgramLimitExceeded, "a join in this catalog query produces more than %d rows", maxJoinRows).
					WithHint("Join the catalog relations on their keys (oid columns).")
			}
		}
	}
	return rows, nil
}

// singleKey is the hash key of a one-column equi-join's value: the
// value itself where Go's == is SQL's = (integers, strings, booleans),
// else its encoded key (appendKey) as an encodedKey, which no value of
// another type equals; nil for NULL, which matches nothing.
func singleKey(v any) any {
	switch x := v.(type) {
	case nil:
		return nil
	case int64, string, bool:
		return v
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return int64(x) // as appendKey: 2.0 joins 2
		}
	}
	var b strings.Builder
	appendKey(&b, v)
	return encodedKey(b.String())
}

// encodedKey is a join key in appendKey's encoding.
type encodedKey string

// rowArena hands out the rows of an operator's output from large
// blocks, rather than one allocation per row. A block lives as long as
// any row in it.
type rowArena struct{ free []any }

func (a *rowArena) row(n int) catalog.Row {
	if len(a.free) < n {
		a.free = make([]any, max(n*256, 4096))
	}
	r := a.free[:n:n]
	a.free = a.free[n:]
	return r
}

// equiKey is the hash key of a row's equi-join columns; ok is false
// when one is NULL (which matches nothing).
func equiKey(row catalog.Row, conds []planner.EquiCond, left bool) (string, bool) {
	var b strings.Builder
	for _, c := range conds {
		i := c.RIdx
		if left {
			i = c.LIdx
		}
		if row[i] == nil {
			return "", false
		}
		appendKey(&b, row[i])
	}
	return b.String(), true
}

// appendKey writes a value so that values that compare equal (an int
// and a float of the same number aside) write the same bytes.
func appendKey(b *strings.Builder, v any) {
	switch x := v.(type) {
	case nil:
		b.WriteString("n;")
	case int64:
		b.WriteString("i")
		b.WriteString(strconv.FormatInt(x, 10))
		b.WriteByte(';')
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			b.WriteString("i")
			b.WriteString(strconv.FormatInt(int64(x), 10))
		} else {
			b.WriteString("f")
			b.WriteString(strconv.FormatFloat(x, 'g', -1, 64))
		}
		b.WriteByte(';')
	case string:
		b.WriteString("s")
		b.WriteString(strconv.Itoa(len(x)))
		b.WriteByte(':')
		b.WriteString(x)
	case bool:
		if x {
			b.WriteString("t;")
		} else {
			b.WriteString("F;")
		}
	case time.Time:
		b.WriteString("T")
		b.WriteString(strconv.FormatInt(x.UnixNano(), 10))
		b.WriteByte(';')
	case *apd.Decimal:
		// The key encoding is canonical: 1.0 and 1.00 group together.
		b.WriteString("d")
		b.Write(numeric.AppendKey(nil, x))
	case []any:
		b.WriteString("a")
		b.WriteString(strconv.Itoa(len(x)))
		b.WriteByte('[')
		for _, e := range x {
			appendKey(b, e)
		}
		b.WriteByte(']')
	default:
		if !appendBlobKey(b, v) && !appendDatetimeKey(b, v) {
			b.WriteString("?")
		}
	}
}

func rowKey(vals []any) string {
	var b strings.Builder
	for _, v := range vals {
		appendKey(&b, v)
	}
	return b.String()
}

// blockOp runs one SELECT.
type blockOp struct {
	plan    *planner.BlockRel
	in      relOp
	filter  eval.Expr
	srfArgs [][]eval.Expr
	srfType [][]catalog.Type
	groups  []eval.Expr
	aggArgs []eval.Expr
	aggArg2 []eval.Expr
	// aggFilter and aggOrder are each aggregate's FILTER condition
	// (nil for none) and ORDER BY keys.
	aggFilter []eval.Expr
	aggOrder  [][]eval.Expr
	having    eval.Expr
	wins      []windowOp
	output    []eval.Expr
	order     []eval.Expr
	// distinctOn are DISTINCT ON's expressions.
	distinctOn []eval.Expr
	// keep is how many of the sorted rows are used (LIMIT + OFFSET, of
	// the block's or, for the query's root, the query's); -1: all.
	keep int64
	// plainOutput is set when the select list reads columns and
	// constants only, which cannot fail: a top-N may then skip a row
	// its sort keys rule out without evaluating it.
	plainOutput bool
}

// maxTopN is the largest LIMIT + OFFSET a sort keeps as a top-N.
const maxTopN = 1 << 24

func compileBlock(p *planner.BlockRel) *blockOp {
	o := &blockOp{plan: p, in: compileRel(p.In), keep: -1}
	if p.Limit >= 0 {
		o.keep = p.Limit + p.Offset
	}
	if p.Filter != nil {
		o.filter = eval.Compile(p.Filter)
	}
	for _, s := range p.SRFs {
		args := make([]eval.Expr, len(s.Args))
		types := make([]catalog.Type, len(s.Args))
		for i, a := range s.Args {
			args[i], types[i] = eval.Compile(a), a.Type()
		}
		o.srfArgs = append(o.srfArgs, args)
		o.srfType = append(o.srfType, types)
	}
	for _, g := range p.GroupBy {
		o.groups = append(o.groups, eval.Compile(g))
	}
	for _, a := range p.Aggs {
		var arg, arg2 eval.Expr
		if a.Arg != nil {
			arg = eval.Compile(a.Arg)
		}
		if a.Arg2 != nil {
			arg2 = eval.Compile(a.Arg2)
		}
		o.aggArgs = append(o.aggArgs, arg)
		o.aggArg2 = append(o.aggArg2, arg2)
		var filter eval.Expr
		if a.Filter != nil {
			filter = eval.Compile(a.Filter)
		}
		var keys []eval.Expr
		for _, k := range a.Order {
			keys = append(keys, eval.Compile(k.Expr))
		}
		o.aggFilter = append(o.aggFilter, filter)
		o.aggOrder = append(o.aggOrder, keys)
	}
	if p.Having != nil {
		o.having = eval.Compile(p.Having)
	}
	for _, w := range p.Windows {
		o.wins = append(o.wins, compileWindow(w))
	}
	o.plainOutput = true
	for _, e := range p.Output {
		o.output = append(o.output, eval.Compile(e))
		switch e.(type) {
		case *planner.ColRef, *planner.Const:
		default:
			o.plainOutput = false
		}
	}
	for _, k := range p.Order {
		o.order = append(o.order, eval.Compile(k.Expr))
	}
	for _, e := range p.DistinctOn {
		o.distinctOn = append(o.distinctOn, eval.Compile(e))
	}
	return o
}

func (o *blockOp) run(env *eval.Env) ([]catalog.Row, error) {
	p := o.plan
	a, start := analysisOf(env), time.Now()
	// held is what the rows of the latest stage that made new rows
	// hold: the input's, the SRFs', the groups' or the windows'.
	in, held, err := input(o.in, env)
	if err != nil {
		return nil, err
	}
	rows := in
	// next gives back the rows of the stage before once a stage has
	// made its own, which hold stageHeld.
	next := func(stageHeld int64) {
		release(env, held)
		held = stageHeld
	}
	if o.filter != nil {
		rows = make([]catalog.Row, 0, len(in))
		for _, r := range in {
			ok, err := o.filter(r, env)
			if err != nil {
				return nil, err
			}
			if eval.Truthy(ok) {
				rows = append(rows, r)
			}
		}
		a.record(p, "Filter", len(rows), start)
	}
	var stageHeld int64
	if len(o.srfArgs) > 0 {
		if rows, stageHeld, err = o.expandSRFs(rows, env); err != nil {
			return nil, err
		}
		next(stageHeld)
		a.record(p, "ProjectSet", len(rows), start)
	}
	if p.Grouped {
		if rows, stageHeld, err = o.aggregate(rows, env, a, start); err != nil {
			return nil, err
		}
		next(stageHeld)
	}
	if len(o.wins) > 0 {
		if rows, stageHeld, err = o.windows(rows, env, a, start); err != nil {
			return nil, err
		}
		next(stageHeld)
	}
	type outRow struct {
		out  catalog.Row
		keys []any
		size int64 // charged for it
		seq  int   // arrival order, which breaks ties
	}
	// A sort under a limit keeps the rows that can still be among the
	// first keep (top-N): past bound rows, it sorts them and drops the
	// rest. Rows that sort equal keep their arrival order, as a stable
	// sort of them all would.
	bound := -1
	if len(o.order) > 0 && !p.Distinct && o.distinctOn == nil && o.keep >= 0 && o.keep <= maxTopN {
		bound = max(2*int(o.keep), 1024)
	}
	// A stable sort: ties keep their arrival order. pdqsort on the
	// arrival number as the last key is much faster than
	// sort.SliceStable's reflective swaps and insertion sort runs.
	sortOuts := func(outs []outRow) {
		slices.SortFunc(outs, func(x, y outRow) int {
			if c := compareKeys(x.keys, y.keys, p.Order); c != 0 {
				return c
			}
			return cmp.Compare(x.seq, y.seq)
		})
	}
	capacity := len(rows)
	if bound >= 0 {
		capacity = min(capacity, bound)
	}
	outs := make([]outRow, 0, capacity)
	var seen map[string]bool
	if p.Distinct {
		seen = map[string]bool{}
	}
	// firstOf holds, for DISTINCT ON, the index in outs of the row kept
	// for each value of its expressions so far.
	var firstOf map[string]int
	if o.distinctOn != nil {
		firstOf = map[string]int{}
	}
	what := "result"
	switch {
	case len(o.order) > 0:
		what = "ORDER BY"
	case p.Distinct:
		what = "DISTINCT"
	case firstOf != nil:
		what = "DISTINCT ON"
	}
	// outHeld is what outs and seen hold.
	var outHeld int64
	// worst, once a top-N has cut outs to keep rows, is the sort keys of
	// the last one kept: a later row whose keys do not sort before them
	// cannot be among the first keep (ties keep their arrival order).
	// With a select list that cannot fail, such a row is skipped before
	// its output is evaluated, its keys evaluated into scratch.
	var worst []any
	var scratch []any
	if bound >= 0 && o.plainOutput {
		scratch = make([]any, len(o.order))
	}
	for seq, r := range rows {
		if worst != nil {
			for k, e := range o.order {
				if scratch[k], err = e(r, env); err != nil {
					return nil, err
				}
			}
			if compareKeys(scratch, worst, p.Order) >= 0 {
				continue
			}
		}
		out, err := eval.EvalAll(o.output, r, env)
		if err != nil {
			return nil, err
		}
		if seen != nil {
			k := rowKey(out)
			if seen[k] {
				continue
			}
			seen[k] = true
			if err := charge(env, &outHeld, keyBytes(k), "DISTINCT"); err != nil {
				return nil, err
			}
		}
		var keys []any
		switch {
		case worst != nil:
			keys = slices.Clone(scratch)
		case len(o.order) > 0:
			if keys, err = eval.EvalAll(o.order, r, env); err != nil {
				return nil, err
			}
		}
		size := 56 + eval.RowBytes(out)
		if keys != nil {
			size += eval.RowBytes(keys)
		}
		at := -1 // where the row goes in outs: -1 appends it
		if firstOf != nil {
			on, err := eval.EvalAll(o.distinctOn, r, env)
			if err != nil {
				return nil, err
			}
			k := rowKey(on)
			if i, ok := firstOf[k]; ok {
				if compareKeys(keys, outs[i].keys, p.Order) >= 0 {
					continue // the row kept sorts first, or arrived first
				}
				at = i
				release(env, outs[i].size)
				outHeld -= outs[i].size
			} else {
				firstOf[k] = len(outs)
				if err := charge(env, &outHeld, keyBytes(k), "DISTINCT ON"); err != nil {
					return nil, err
				}
			}
		}
		if err := charge(env, &outHeld, size, what); err != nil {
			return nil, err
		}
		if at >= 0 {
			outs[at] = outRow{out, keys, size, seq}
			continue
		}
		outs = append(outs, outRow{out, keys, size, seq})
		if bound >= 0 && len(outs) >= bound {
			sortOuts(outs)
			for _, r := range outs[o.keep:] {
				release(env, r.size)
				outHeld -= r.size
			}
			clear(outs[o.keep:])
			outs = outs[:o.keep]
			if scratch != nil && len(outs) > 0 {
				worst = outs[len(outs)-1].keys
			}
		}
	}
	a.record(p, "Project", len(rows), start)
	if p.Distinct || firstOf != nil {
		a.record(p, "Distinct", len(outs), start)
	}
	// The stage's rows are the outputs now.
	release(env, held)
	if len(o.order) > 0 {
		sortOuts(outs)
		a.record(p, "Sort", len(outs), start)
	}
	result := make([]catalog.Row, 0, len(outs))
	var resultHeld int64
	for i, r := range outs {
		if int64(i) < p.Offset {
			continue
		}
		if p.Limit >= 0 && int64(len(result)) >= p.Limit {
			break
		}
		resultHeld += eval.RowBytes(r.out)
		result = append(result, r.out)
	}
	// What the result rows hold stays charged, for the consumer to
	// release; the sort keys, the rows past the limit and seen go.
	release(env, outHeld-resultHeld)
	if p.Limit >= 0 || p.Offset > 0 {
		a.record(p, "Limit", len(result), start)
	}
	return result, nil
}

// compareKeys orders two rows by their sort keys.
func compareKeys(a, b []any, order []planner.SortKey) int {
	for k, o := range order {
		c := eval.CompareNullable(a[k], b[k], o.NullsFirst)
		if o.Desc && a[k] != nil && b[k] != nil {
			c = -c
		}
		if c != 0 {
			return c
		}
	}
	return 0
}

// expandSRFs appends the values of the select list's set-returning
// functions to each row: as many rows as the longest result, the
// shorter ones padded with NULL.
func (o *blockOp) expandSRFs(rows []catalog.Row, env *eval.Env) (out []catalog.Row, held int64, err error) {
	for _, r := range rows {
		results := make([][]any, len(o.srfArgs))
		n := 0
		for i, args := range o.srfArgs {
			vals, err := eval.EvalAll(args, r, env)
			if err != nil {
				return nil, 0, err
			}
			res, err := eval.RunSRF(o.plan.SRFs[i].Name, vals, o.srfType[i], env)
			if err != nil {
				return nil, 0, err
			}
			results[i] = res
			n = max(n, len(res))
		}
		for k := 0; k < n; k++ {
			row := make(catalog.Row, len(r), len(r)+len(results))
			copy(row, r)
			for _, res := range results {
				var v any
				if k < len(res) {
					v = res[k]
				}
				row = append(row, v)
			}
			if err := charge(env, &held, eval.RowBytes(row), "set-returning functions"); err != nil {
				return nil, 0, err
			}
			out = append(out, row)
		}
	}
	return out, held, nil
}

// aggregate groups rows and computes the aggregates: each result row
// is the group values, then the aggregate values. held is what the
// result rows hold; the groups' state is released.
// accumulate adds row r to the aggregate states of a group, charging
// what they grow by to temp.
func (o *blockOp) accumulate(states []*aggState, r catalog.Row, env *eval.Env, temp *int64) error {
	var err error
	for i, st := range states {
		if st.spec.Func == "grouping" {
			continue // its value is the group's, not its rows'
		}
		if f := o.aggFilter[i]; f != nil {
			ok, err := f(r, env)
			if err != nil {
				return err
			}
			if !eval.Truthy(ok) {
				continue
			}
		}
		var v, v2 any = true, nil
		if o.aggArgs[i] != nil {
			if v, err = o.aggArgs[i](r, env); err != nil {
				return err
			}
		}
		if o.aggArg2[i] != nil {
			if v2, err = o.aggArg2[i](r, env); err != nil {
				return err
			}
		}
		if len(o.aggOrder[i]) > 0 {
			keys, err := eval.EvalAll(o.aggOrder[i], r, env)
			if err != nil {
				return err
			}
			st.addOrdered(v, v2, keys)
			if err := charge(env, temp, aggBytes(st, v, v2)+eval.RowBytes(keys), "GROUP BY"); err != nil {
				return err
			}
			continue
		}
		n, kept := st.n, st.keptBytes()
		if err := st.add(v, v2); err != nil {
			return err
		}
		if st.n > n {
			if err := charge(env, temp, aggBytes(st, v, v2)+st.keptBytes()-kept, "GROUP BY"); err != nil {
				return err
			}
		}
	}
	return nil
}

func (o *blockOp) aggregate(rows []catalog.Row, env *eval.Env, a *Analysis, start time.Time) (_ []catalog.Row, held int64, err error) {
	p := o.plan
	var temp int64 // the groups and their states
	type group struct {
		vals   []any
		states []*aggState
	}
	var order []*group
	groups := map[string]*group{}
	newGroup := func(vals []any, keep []bool) *group {
		g := &group{vals: vals}
		for _, a := range p.Aggs {
			st := newAggState(a)
			if a.Func == "grouping" {
				st.sum = groupingMask(a.GroupingCols, keep)
			}
			g.states = append(g.states, st)
		}
		order = append(order, g)
		return g
	}
	// sets are the grouping sets, each a mask of the GROUP BY values it
	// keeps: one with all of them without GROUPING SETS.
	sets := [][]bool{nil}
	if p.GroupingSets != nil {
		sets = make([][]bool, len(p.GroupingSets))
		for k, set := range p.GroupingSets {
			sets[k] = make([]bool, len(p.GroupBy))
			for _, i := range set {
				sets[k][i] = true
			}
		}
	}
	seen := make([]bool, len(sets)) // whether a set has a group
	for _, r := range rows {
		all, err := eval.EvalAll(o.groups, r, env)
		if err != nil {
			return nil, 0, err
		}
		for si, keep := range sets {
			vals := all
			var k string
			if keep != nil {
				// A grouping set's row has NULL for the GROUP BY values
				// outside it; the set's number keeps sets that group
				// alike (GROUPING SETS ((a), (a))) apart, as Postgres
				// does.
				vals = make([]any, len(all))
				for i, in := range keep {
					if in {
						vals[i] = all[i]
					}
				}
				k = strconv.Itoa(si) + "|"
			}
			k += rowKey(vals)
			g, ok := groups[k]
			if !ok {
				if err := charge(env, &temp, keyBytes(k)+eval.RowBytes(vals)+int64(len(p.Aggs))*160, "GROUP BY"); err != nil {
					return nil, 0, err
				}
				g = newGroup(vals, keep)
				groups[k] = g
				seen[si] = true
			}
			if err := o.accumulate(g.states, r, env, &temp); err != nil {
				return nil, 0, err
			}
		}
	}
	if len(order) == 0 && len(p.GroupBy) == 0 {
		newGroup(nil, nil)
	}
	// The empty grouping set has its row over no rows too.
	for si, set := range p.GroupingSets {
		if len(set) == 0 && !seen[si] {
			newGroup(make([]any, len(p.GroupBy)), sets[si])
		}
	}
	a.record(p, "Aggregate", len(order), start)
	out := make([]catalog.Row, 0, len(order))
	for _, g := range order {
		row := make(catalog.Row, 0, len(g.vals)+len(g.states))
		row = append(row, g.vals...)
		for _, st := range g.states {
			res, err := st.finish()
			if err != nil {
				return nil, 0, err
			}
			row = append(row, res)
		}
		if o.having != nil {
			ok, err := o.having(row, env)
			if err != nil {
				return nil, 0, err
			}
			if !eval.Truthy(ok) {
				continue
			}
		}
		if err := charge(env, &held, eval.RowBytes(row), "GROUP BY"); err != nil {
			return nil, 0, err
		}
		out = append(out, row)
	}
	if o.having != nil {
		a.record(p, "Having", len(out), start)
	}
	release(env, temp)
	return out, held, nil
}

// aggState is one aggregate's running state in a catalog query.
type aggState struct {
	spec planner.AggSpec
	// entries are the rows of an aggregate with an ORDER BY, kept
	// until the group ends (aggfuncs.go).
	entries []orderedEntry
	// m, m2 are the running mean and sum of squared deviations of the
	// statistical aggregates.
	m, m2 float64
	n     int64
	sum   any
	fsum  float64
	best  any
	parts []string
	vals  []any
	b     any
	seen  map[string]bool
	// lib is the state of the aggregate library's functions
	// (aggfuncs.go); nil for the others.
	lib *libAgg
}

// groupingMask is GROUPING(...)'s value in a group of the grouping set
// that keeps the GROUP BY values keep (nil: all): a bit, from the
// highest, for each argument (cols, indexes of GROUP BY values), set
// when the set leaves it out.
func groupingMask(cols []int, keep []bool) int64 {
	var m int64
	for _, c := range cols {
		m <<= 1
		if keep != nil && !keep[c] {
			m |= 1
		}
	}
	return m
}

func newAggState(spec planner.AggSpec) *aggState {
	st := &aggState{spec: spec}
	if spec.Distinct {
		st.seen = map[string]bool{}
	}
	if libAggregate(spec.Func) {
		st.lib = &libAgg{}
		if spec.Func == "collect_set" || spec.Func == "histogram" {
			st.lib.idx = map[string]int{}
		}
	}
	return st
}

func (st *aggState) add(v, v2 any) error {
	if st.lib != nil {
		return st.addLib(v, v2)
	}
	if v == nil && !planner.AggKeepsNulls(st.spec.Func) {
		return nil
	}
	if st.seen != nil {
		k := rowKey([]any{v})
		if st.seen[k] {
			return nil
		}
		st.seen[k] = true
	}
	st.n++
	switch st.spec.Func {
	case "sum":
		switch x := v.(type) {
		case int64:
			if d, ok := st.sum.(*apd.Decimal); ok { // a numeric sum past bigint
				sum, err := numeric.Add(d, numeric.FromInt64(x))
				if err != nil {
					return err
				}
				st.sum = sum
				break
			}
			s, _ := st.sum.(int64)
			if (x > 0 && s > math.MaxInt64-x) || (x < 0 && s < math.MinInt64-x) {
				if st.spec.T != catalog.Decimal {
					return eval.ErrOutOfRange
				}
				// sum(bigint) is numeric: go on exactly past bigint.
				sum, err := numeric.Add(numeric.FromInt64(s), numeric.FromInt64(x))
				if err != nil {
					return err
				}
				st.sum = sum
				break
			}
			st.sum = s + x
		case float64:
			s, _ := st.sum.(float64)
			st.sum = s + x
		case *apd.Decimal:
			s, ok := st.sum.(*apd.Decimal)
			if !ok {
				st.sum = x
				break
			}
			sum, err := numeric.Add(s, x)
			if err != nil {
				return err
			}
			st.sum = sum
		case catalog.IntervalVal:
			return st.addInterval(x)
		}
	case "avg":
		if x, ok := v.(catalog.IntervalVal); ok {
			return st.addInterval(x)
		}
		if st.spec.T == catalog.Decimal {
			// Exact, as Postgres's avg of integers and numerics.
			x, err := planner.ConvertValue(v, catalog.Decimal)
			if err != nil {
				return err
			}
			s, ok := st.sum.(*apd.Decimal)
			if !ok {
				s = numeric.Zero
			}
			sum, err := numeric.Add(s, x.(*apd.Decimal))
			if err != nil {
				return err
			}
			st.sum = sum
			break
		}
		switch x := v.(type) {
		case int64:
			st.fsum += float64(x)
		case float64:
			st.fsum += x
		}
	case "min", "max":
		want := -1
		if st.spec.Func == "max" {
			want = 1
		}
		if st.best == nil || eval.Compare(v, st.best) == want {
			st.best = v
		}
	case "string_agg":
		if len(st.parts) > 0 {
			sep, _ := v2.(string)
			st.parts = append(st.parts, sep)
		}
		st.parts = append(st.parts, v.(string))
	case "array_agg":
		st.vals = append(st.vals, v)
	case "jsonb_agg", "json_agg", "jsonb_object_agg", "json_object_agg":
		return st.addJSON(v, v2)
	case "bool_and", "every":
		st.b = (st.b == nil || st.b == true) && v == true
	case "bool_or":
		st.b = st.b == true || v == true
	default:
		st.addStat(v)
	}
	return nil
}

func (st *aggState) result() any {
	if st.lib != nil {
		return st.libResult()
	}
	switch st.spec.Func {
	case "count":
		return st.n
	case "sum":
		if s, ok := st.sum.(int64); ok && st.spec.T == catalog.Decimal {
			return numeric.FromInt64(s)
		}
		return st.sum
	case "avg":
		if st.n == 0 {
			return nil
		}
		if st.spec.T == catalog.Decimal {
			s, ok := st.sum.(*apd.Decimal)
			if !ok {
				s = numeric.Zero
			}
			avg, err := numeric.Div(s, numeric.FromInt64(st.n))
			if err != nil {
				return nil
			}
			return avg
		}
		return st.fsum / float64(st.n)
	case "min", "max":
		return st.best
	case "string_agg":
		if st.n == 0 {
			return nil
		}
		return strings.Join(st.parts, "")
	case "array_agg":
		if st.n == 0 {
			return nil
		}
		return st.vals
	case "jsonb_agg", "json_agg", "jsonb_object_agg", "json_object_agg":
		return st.jsonResult()
	}
	return st.b
}

// setOp runs UNION, INTERSECT and EXCEPT.
type setOp struct {
	rel           *planner.SetRel
	op            string
	all           bool
	l, r          relOp
	order         []eval.Expr
	keys          []planner.SortKey
	limit, offset int64
}

// Its rows are its inputs' (which keep their charge); what it holds to
// find them (the sets, the sort keys) it releases.
func (o *setOp) run(env *eval.Env) ([]catalog.Row, error) {
	a, start := analysisOf(env), time.Now()
	left, err := o.l.run(env)
	if err != nil {
		return nil, err
	}
	right, err := o.r.run(env)
	if err != nil {
		return nil, err
	}
	var rows []catalog.Row
	var temp int64
	switch o.op {
	case "UNION":
		rows = append(append(rows, left...), right...)
		if !o.all {
			if rows, err = distinctRows(rows, env, &temp, o.op); err != nil {
				return nil, err
			}
		}
	case "INTERSECT", "EXCEPT":
		counts := map[string]int{}
		for _, r := range right {
			k := rowKey(r)
			if _, ok := counts[k]; !ok {
				if err := charge(env, &temp, keyBytes(k), o.op); err != nil {
					return nil, err
				}
			}
			counts[k]++
		}
		for _, l := range left {
			k := rowKey(l)
			in := counts[k] > 0
			if o.op == "INTERSECT" && in || o.op == "EXCEPT" && !in {
				rows = append(rows, l)
			}
			if in && o.all {
				counts[k]--
			}
		}
		if !o.all {
			if rows, err = distinctRows(rows, env, &temp, o.op); err != nil {
				return nil, err
			}
		}
	}
	a.record(o.rel, "Set", len(rows), start)
	if len(o.order) > 0 {
		keys := make([][]any, len(rows))
		for i, r := range rows {
			if keys[i], err = eval.EvalAll(o.order, r, env); err != nil {
				return nil, err
			}
			if err := charge(env, &temp, 32+eval.RowBytes(keys[i]), "ORDER BY"); err != nil {
				return nil, err
			}
		}
		idx := make([]int, len(rows))
		for i := range idx {
			idx[i] = i
		}
		slices.SortFunc(idx, func(a, b int) int {
			if c := compareKeys(keys[a], keys[b], o.keys); c != 0 {
				return c
			}
			return cmp.Compare(a, b) // stable
		})
		sorted := make([]catalog.Row, len(rows))
		for i, k := range idx {
			sorted[i] = rows[k]
		}
		rows = sorted
		a.record(o.rel, "Sort", len(rows), start)
	}
	var out []catalog.Row
	for i, r := range rows {
		if int64(i) < o.offset {
			continue
		}
		if o.limit >= 0 && int64(len(out)) >= o.limit {
			break
		}
		out = append(out, r)
	}
	if o.limit >= 0 || o.offset > 0 {
		a.record(o.rel, "Limit", len(out), start)
	}
	release(env, temp)
	return out, nil
}

// distinctRows returns rows without duplicates, charging the set it
// keeps to *held for what.
func distinctRows(rows []catalog.Row, env *eval.Env, held *int64, what string) ([]catalog.Row, error) {
	seen := map[string]bool{}
	out := rows[:0:0]
	for _, r := range rows {
		k := rowKey(r)
		if !seen[k] {
			if err := charge(env, held, keyBytes(k), what); err != nil {
				return nil, err
			}
			seen[k] = true
			out = append(out, r)
		}
	}
	return out, nil
}

// recursiveOp runs a recursive CTE: its base, then its step over the
// rows each round added, until a round adds none. Its rows keep their
// charge; with UNION, what it holds to find rows seen before it
// releases. A step that never ends meets basin.query_memory (UNION
// ALL) or the statement's cancel.
type recursiveOp struct {
	id         int
	all        bool
	base, step relOp
}

func (o *recursiveOp) run(env *eval.Env) ([]catalog.Row, error) {
	rows, err := o.base.run(env)
	if err != nil {
		return nil, err
	}
	var seen map[string]bool
	var temp int64
	defer func() { release(env, temp) }()
	// fresh keeps the rows of add not seen before (all of them with
	// UNION ALL).
	fresh := func(add []catalog.Row) ([]catalog.Row, error) {
		if o.all {
			return add, nil
		}
		if seen == nil {
			seen = map[string]bool{}
		}
		out := add[:0:0]
		for _, r := range add {
			k := rowKey(r)
			if seen[k] {
				continue
			}
			seen[k] = true
			if err := charge(env, &temp, keyBytes(k), "UNION"); err != nil {
				return nil, err
			}
			out = append(out, r)
		}
		return out, nil
	}
	if rows, err = fresh(rows); err != nil {
		return nil, err
	}
	if env.Scope.Work == nil {
		env.Scope.Work = map[int][]catalog.Row{}
	}
	saved, had := env.Scope.Work[o.id]
	defer func() {
		if had {
			env.Scope.Work[o.id] = saved
		} else {
			delete(env.Scope.Work, o.id)
		}
	}()
	out := rows
	for len(rows) > 0 {
		if err := env.Context().Err(); err != nil {
			return nil, pgerr.New(pgerr.QueryCanceled, "canceling statement due to user request")
		}
		env.Scope.Work[o.id] = rows
		next, err := o.step.run(env)
		if err != nil {
			return nil, err
		}
		if rows, err = fresh(next); err != nil {
			return nil, err
		}
		out = append(out, rows...)
	}
	return out, nil
}

// workTableOp reads the rows a recursive CTE's last round added.
type workTableOp struct{ id int }

func (o workTableOp) run(env *eval.Env) ([]catalog.Row, error) { return env.Scope.Work[o.id], nil }

// lateralJoinOp joins a LATERAL item r to the rows of l: r runs once per
// row of l, with it as r's outer row; an inner (or cross) join keeps the
// pairs on holds for, a LEFT join also each row of l no pair kept, with
// NULLs. The joined rows keep their charge; r's rows go once joined.
type lateralJoinOp struct {
	kind sql.JoinKind
	l, r relOp
	on   eval.Expr
	rw   int
}

func (o *lateralJoinOp) run(env *eval.Env) ([]catalog.Row, error) {
	left, lHeld, err := input(o.l, env)
	if err != nil {
		return nil, err
	}
	var out []catalog.Row
	var held int64
	// add keeps a joined row (l's columns, then r's or NULLs).
	add := func(row catalog.Row) error {
		if err := charge(env, &held, eval.RowBytes(row), "join"); err != nil {
			return err
		}
		out = append(out, row)
		return nil
	}
	for n, l := range left {
		if n%256 == 255 && env.Context().Err() != nil {
			return nil, pgerr.New(pgerr.QueryCanceled, "canceling statement due to user request")
		}
		right, rHeld, err := input(o.r, env.WithOuter(l))
		if err != nil {
			return nil, err
		}
		matched := false
		for _, r := range right {
			row := append(append(make(catalog.Row, 0, len(l)+o.rw), l...), r...)
			if o.on != nil {
				ok, err := o.on(row, env)
				if err != nil {
					return nil, err
				}
				if !eval.Truthy(ok) {
					continue
				}
			}
			matched = true
			if err := add(row); err != nil {
				return nil, err
			}
		}
		release(env, rHeld)
		if !matched && o.kind == sql.JoinLeft {
			row := make(catalog.Row, len(l)+o.rw) // r's columns NULL
			copy(row, l)
			if err := add(row); err != nil {
				return nil, err
			}
		}
	}
	release(env, lHeld)
	return out, nil
}

// addInterval adds x to an interval sum, as Postgres's interval_pl:
// each field on its own, out of range 22008.
func (st *aggState) addInterval(x catalog.IntervalVal) error {
	s, _ := st.sum.(catalog.IntervalVal)
	sum, err := eval.DatetimeOp("+", catalog.Interval, s, x, nil)
	if err != nil {
		return err
	}
	st.sum = sum
	return nil
}
