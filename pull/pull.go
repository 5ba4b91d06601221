package pull

import (
	"container/heap"
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/eval"
	"github.com/basindb/basin/ha"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/internal/safe"
	"github.com/basindb/basin/kafka"
	"github.com/basindb/basin/materialize"
	"github.com/basindb/basin/pgcodec"
	"github.com/basindb/basin/planner"
	"github.com/basindb/basin/serde"
	"github.com/basindb/basin/stream"
)

// PartitionRead describes where one partition of a pull query was served
// from, for SHOW basin.last_read and freshness notices.
type PartitionRead struct {
	// Rel is the relation read, when a query read several (the
	// relational engine's); nil means the plan's.
	Rel       *catalog.Relation
	Partition int32
	ServedBy  string
	Role      string
	OffsetLag int64
	TimeLagMs int64
	Position  string
	// Parsed is Position parsed, when the reader had it at hand (a local
	// read: the task's published position, which nobody modifies).
	Parsed materialize.Position
}

// Query is the state of one executing pull query; a portal keeps one
// for its runs.
type Query struct {
	rt     *stream.Runtime
	e      *Engine
	plan   *planner.PullPlan
	code   *PullCode // plan's expressions
	env    *eval.Env // &envVal: the caller's Env under the query's context
	opts   *ReadOptions
	envVal eval.Env
	agg    *eval.Aggregator
	emit   func(catalog.Row) error

	// streaming state when neither sorting nor grouping
	skipped, emitted int64
	// collected rows (sorted or grouped queries)
	rows  []sortRow
	seen  map[string]bool // DISTINCT
	hash  map[string]*groupState
	horde []*groupState
	reads []PartitionRead
	// mem is what rows, seen and hash hold, against basin.query_memory.
	mem eval.Memory
	// sorted numbers the rows collected for sorting (sortRow.seq).
	sorted int64

	// A single-key lookup's partition and key, without allocations.
	onePart [1]int32
	oneKeys [1][][]any
	oneKey  [1][]any
	oneRead [1]PartitionRead
	// rawT is rawSinks' template, made once per query; the partitions
	// read one after the other on the query's goroutine use it as their
	// sink.
	rawT rawSink
	// seq is set while partitions are read one after the other (not by
	// gather): each read's request, local replica and served replica are
	// then in q.seqRead, instead of allocations.
	seq     bool
	seqRead struct {
		req   ReadRequest
		local LocalReplica
		route Route
		read  PartitionRead // what served the partition being read
	}
}

type sortRow struct {
	out  catalog.Row
	keys []any
	// seq is the row's place in arrival order, which breaks ties (the
	// sort is stable); size is what it counts in mem.
	seq, size int64
}

// sortLess orders rows by ORDER BY, then by arrival.
func (q *Query) sortLess(a, b *sortRow) bool {
	for k, o := range q.plan.Order {
		c := eval.CompareNullable(a.keys[k], b.keys[k], o.NullsFirst)
		if o.Desc && a.keys[k] != nil && b.keys[k] != nil {
			c = -c
		}
		if c != 0 {
			return c < 0
		}
	}
	return a.seq < b.seq
}

// topK keeps, for ORDER BY ... LIMIT, only the rows that can still be
// among the first LIMIT + OFFSET: q.rows is then a heap with the last
// of them on top, and a row past them is dropped at once, so memory
// stays with the LIMIT rather than the input.
type topK struct{ q *Query }

func (h topK) Len() int           { return len(h.q.rows) }
func (h topK) Less(i, j int) bool { return h.q.sortLess(&h.q.rows[j], &h.q.rows[i]) } // the last on top
func (h topK) Swap(i, j int)      { h.q.rows[i], h.q.rows[j] = h.q.rows[j], h.q.rows[i] }
func (h topK) Push(x any)         { h.q.rows = append(h.q.rows, x.(sortRow)) }
func (h topK) Pop() any {
	n := len(h.q.rows) - 1
	r := h.q.rows[n]
	h.q.rows[n] = sortRow{}
	h.q.rows = h.q.rows[:n]
	return r
}

type groupState struct {
	groups []any
	state  []any
}

// errLimitReached stops a scan early once LIMIT rows were sent.
var errLimitReached = fmt.Errorf("exec: limit reached")

// Engine runs pull queries over the stores of a Runtime: key lookups,
// scans of every partition and bounded scans of a stream's topic, read
// here or, in a cluster, wherever its Forwarder routes each partition.
type Engine struct {
	rt *stream.Runtime
	// fwd reads partitions held elsewhere; unset on a node alone. Every
	// read looks at it, without a lock.
	fwd atomic.Pointer[Forwarder]
}

// New returns the pull engine over rt's stores.
func New(rt *stream.Runtime) *Engine { return &Engine{rt: rt} }

// Pull runs a pull query, calling emit for each result row in order. It
// returns where each partition was read.
func (e *Engine) Pull(ctx context.Context, plan *planner.PullPlan, env *eval.Env, opts *ReadOptions, emit func(catalog.Row) error) (reads []PartitionRead, err error) {
	return e.PullCompiled(ctx, plan, nil, env, opts, emit)
}

// PullCode is a pull plan's compiled expressions. Compiled expressions
// keep no state between calls, so one PullCode serves every execution of
// its plan (a prepared statement's), concurrent ones included.
type PullCode struct {
	filter eval.Expr
	output []eval.Expr
	// passThrough is set when the output is the input row's first
	// columns in order (SELECT *, SELECT a, b of a relation (a, b, c)):
	// project slices the row instead of evaluating a copy.
	passThrough bool
	// cols, when every output column is one of the relation's stored
	// columns (SELECT b, a of a relation (a, b, c)), are their indexes:
	// rows can then go out encoded from the stored bytes (rawSinks).
	cols []int
	// enc is the last encoder of stored rows made for cols (rawSinks),
	// kept for the next execution in the same formats.
	enc       atomic.Pointer[wireEncoder]
	order     []eval.Expr
	groups    []eval.Expr
	having    eval.Expr
	partition eval.Expr
	lookups   [][]eval.Expr // Lookup, or the lists of LookupIn
	// prefix, lo and hi are a key range scan's (plan.Range): the
	// values of its leading key columns, and the bounds of the next,
	// nil when open.
	prefix []eval.Expr
	lo, hi eval.Expr
	// pseudo is set when the plan may read a pseudo-column (_partition,
	// _served_by, ...): reads fill them in only then.
	pseudo bool
}

// unreadPseudo reports whether output o, at position i, is a NULL in
// place of a pseudo-column the plan does not read
// (planner.RelationRel.ReadScan): reads leave that slot of the row
// NULL, so a row passes through as it is.
func (c *PullCode) unreadPseudo(plan *planner.PullPlan, o planner.Scalar, i int) bool {
	k, ok := o.(*planner.Const)
	if !ok || plan.Rel == nil {
		return false
	}
	ncols := len(plan.Rel.Schema.Columns)
	return k.V == nil && !c.pseudo && i >= ncols && i < ncols+len(planner.PseudoColumns)
}

// CompilePull compiles plan's expressions; nil for a plan the general
// query engine runs (plan.Query), which compiles its own every time.
func CompilePull(plan *planner.PullPlan) *PullCode {
	if plan.Query != nil {
		return nil
	}
	c := &PullCode{pseudo: usesPseudo(plan)}
	if plan.Filter != nil && !pinOnly(plan) && !lookupOnly(plan) {
		c.filter = eval.Compile(plan.Filter)
	}
	c.passThrough = len(plan.Output) > 0
	stored := plan.Rel != nil && len(plan.Output) > 0 // so far, every output a stored column
	for i, o := range plan.Output {
		c.output = append(c.output, eval.Compile(o))
		col, ok := o.(*planner.ColRef)
		if (!ok || col.Idx != i) && !c.unreadPseudo(plan, o, i) {
			c.passThrough = false
		}
		if stored = stored && ok && col.Idx < len(plan.Rel.Schema.Columns); stored {
			c.cols = append(c.cols, col.Idx)
		}
	}
	if !stored {
		c.cols = nil
	}
	for _, o := range plan.Order {
		c.order = append(c.order, eval.Compile(o.Expr))
	}
	for _, g := range plan.GroupBy {
		c.groups = append(c.groups, eval.Compile(g))
	}
	if plan.Having != nil {
		c.having = eval.Compile(plan.Having)
	}
	if plan.Partition != nil {
		c.partition = eval.Compile(plan.Partition)
	}
	if r := plan.Range; r != nil {
		for _, e := range r.Prefix {
			c.prefix = append(c.prefix, eval.Compile(e))
		}
		if r.Lo != nil {
			c.lo = eval.Compile(r.Lo)
		}
		if r.Hi != nil {
			c.hi = eval.Compile(r.Hi)
		}
	}
	lookups := plan.LookupIn
	if plan.Lookup != nil {
		lookups = [][]planner.Scalar{plan.Lookup}
	}
	if lookups != nil {
		c.lookups = make([][]eval.Expr, 0, len(lookups)) // IN () reads nothing, not everything
	}
	for _, l := range lookups {
		key := make([]eval.Expr, len(l))
		for i, e := range l {
			key[i] = eval.Compile(e)
		}
		c.lookups = append(c.lookups, key)
	}
	return c
}

// pinOnly reports whether plan's filter is nothing but its partition pin
// (_partition = N, as a forwarded read asks for a partition): reading
// only that partition is the whole filter, so rows need not be decoded
// to test it and can go out as stored (RawRows).
func pinOnly(plan *planner.PullPlan) bool {
	b, ok := plan.Filter.(*planner.Binary)
	return ok && plan.Partition != nil && b.Op == "="
}

// lookupOnly reports whether plan's filter is nothing but its key lookup:
// key = $n or key = constant, of the key column's own type, where the
// key is the relation's one column and of a type whose equality is that
// of its stored bytes (integers, text). Reading that key is the whole
// filter, so a row found need not be decoded to test it and can go out
// as stored (RawRows).
func lookupOnly(plan *planner.PullPlan) bool {
	if len(plan.Lookup) != 1 || plan.Rel == nil {
		return false
	}
	keys := plan.Rel.Schema.KeyIndexes()
	b, ok := plan.Filter.(*planner.Binary)
	if len(keys) != 1 || !ok || b.Op != "=" {
		return false
	}
	col, ok := b.L.(*planner.ColRef)
	v := b.R
	if !ok {
		col, ok = b.R.(*planner.ColRef)
		v = b.L
	}
	if !ok || col.Idx != keys[0] {
		return false
	}
	switch col.T {
	case catalog.Int, catalog.BigInt, catalog.Varchar:
	default:
		return false
	}
	switch v := v.(type) {
	case *planner.ParamRef:
		return v.T == col.T
	case *planner.Const:
		return v.T == col.T
	}
	return false
}

// usesPseudo reports whether any expression of plan may read a column
// past the relation's own, a pseudo-column. It errs on the side of yes:
// a grouped plan's output refers to its aggregated row, whose columns
// are counted the same way.
func usesPseudo(plan *planner.PullPlan) bool {
	if plan.Rel == nil {
		return true
	}
	ncols := len(plan.Rel.Schema.Columns)
	found := false
	plan.Walk(func(s planner.Scalar) {
		if c, ok := s.(*planner.ColRef); ok && c.Idx >= ncols {
			found = true
		}
	})
	return found
}

// PullCompiled is Pull with the plan's expressions compiled beforehand
// by CompilePull (nil compiles them now).
func (e *Engine) PullCompiled(ctx context.Context, plan *planner.PullPlan, code *PullCode, env *eval.Env, opts *ReadOptions, emit func(catalog.Row) error) (reads []PartitionRead, err error) {
	return e.Run(new(Query), ctx, plan, code, env, opts, emit)
}

// Run is PullCompiled with the query's state in q, which it resets
// first: a portal keeps one for its runs. The reads returned may be in
// q, and are good until q's next use.
func (e *Engine) Run(q *Query, ctx context.Context, plan *planner.PullPlan, code *PullCode, env *eval.Env, opts *ReadOptions, emit func(catalog.Row) error) (reads []PartitionRead, err error) {
	if plan.Query != nil {
		return nil, pgerr.New(pgerr.InternalError, "a catalog query given to the pull engine")
	}
	if code == nil {
		code = CompilePull(plan)
	}
	if opts == nil {
		opts = &ReadOptions{}
	}
	*q = Query{rt: e.rt, e: e, plan: plan, code: code, opts: opts, emit: emit}
	// The query's own copy of env, evaluating under ctx (in q, which a
	// portal keeps for its runs: no allocation).
	q.envVal = env.WithContext(ctx)
	q.env = &q.envVal
	q.mem.Limit = q.env.QueryMemory
	if plan.Grouped {
		q.agg = eval.NewAggregator(plan.Aggs)
		q.hash = make(map[string]*groupState)
	}
	if plan.Distinct {
		q.seen = make(map[string]bool)
	}
	switch {
	case plan.Rel == nil:
		err = q.input(ctx, nil)
	case plan.Rel.Kind == catalog.KindStream:
		err = q.scanStream(ctx)
	default:
		err = q.scanStores(ctx)
	}
	if err == errLimitReached {
		return q.reads, nil
	}
	if err != nil {
		return q.reads, err
	}
	return q.reads, q.finish()
}

// streaming reports whether rows can be sent as they are found.
func (q *Query) streaming() bool { return !q.plan.Grouped && len(q.plan.Order) == 0 }

// input takes one input row (the relation's columns then pseudo-columns).
func (q *Query) input(ctx context.Context, row catalog.Row) error {
	if q.code.filter != nil {
		ok, err := q.code.filter(row, q.env)
		if err != nil {
			return err
		}
		if !eval.Truthy(ok) {
			return nil
		}
	}
	if q.plan.Grouped {
		groups, err := eval.EvalAll(q.code.groups, row, q.env)
		if err != nil {
			return err
		}
		// The key encoding, unlike the row encoding, makes values that
		// compare equal (0 and -0, every NaN) the same bytes.
		k, err := materialize.EncodeKey(nil, groups)
		if err != nil {
			return err
		}
		gs, ok := q.hash[string(k)]
		if !ok {
			gs = &groupState{groups: groups, state: q.agg.Init()}
			if err := q.mem.Grow(64+int64(len(k))+eval.RowBytes(groups)+eval.RowBytes(gs.state), "GROUP BY"); err != nil {
				return err
			}
			q.hash[string(k)] = gs
			q.horde = append(q.horde, gs)
		}
		return q.agg.Add(gs.state, row, q.env)
	}
	return q.project(row)
}

// project evaluates the select list (and sort keys) over a row and sends
// or collects the result.
func (q *Query) project(row catalog.Row) error {
	var out catalog.Row
	if n := len(q.code.output); q.code.passThrough && n <= len(row) {
		out = row[:n:n] // rows are never reused by their readers
	} else {
		var err error
		if out, err = eval.EvalAll(q.code.output, row, q.env); err != nil {
			return err
		}
	}
	if q.seen != nil {
		k, err := materialize.EncodeKey(nil, out)
		if err != nil {
			return err
		}
		if q.seen[string(k)] {
			return nil
		}
		if err := q.mem.Grow(48+int64(len(k)), "DISTINCT"); err != nil {
			return err
		}
		q.seen[string(k)] = true
	}
	if q.streaming() {
		return q.send(out)
	}
	keys, err := eval.EvalAll(q.code.order, row, q.env)
	if err != nil {
		return err
	}
	r := sortRow{out: out, keys: keys, seq: q.sorted, size: 64 + eval.RowBytes(out) + eval.RowBytes(keys)}
	q.sorted++
	if k := q.plan.Limit + q.plan.Offset; q.plan.Limit >= 0 && k >= 0 {
		h := topK{q}
		if int64(len(q.rows)) >= k {
			if k == 0 || !q.sortLess(&r, &q.rows[0]) {
				return nil // not among the first k
			}
			q.mem.Used -= q.rows[0].size
			heap.Pop(h)
		}
		if err := q.mem.Grow(r.size, "ORDER BY"); err != nil {
			return err
		}
		heap.Push(h, r)
		return nil
	}
	if err := q.mem.Grow(r.size, "ORDER BY"); err != nil {
		return err
	}
	q.rows = append(q.rows, r)
	return nil
}

func (q *Query) send(out catalog.Row) error {
	if q.skipped < q.plan.Offset {
		q.skipped++
		return nil
	}
	if q.plan.Limit >= 0 && q.emitted >= q.plan.Limit {
		return errLimitReached
	}
	q.emitted++
	if err := q.emit(out); err != nil {
		return err
	}
	if q.plan.Limit >= 0 && q.emitted >= q.plan.Limit {
		return errLimitReached
	}
	return nil
}

func (q *Query) finish() error {
	if q.plan.Grouped {
		if len(q.horde) == 0 && len(q.plan.GroupBy) == 0 {
			// An aggregate without GROUP BY returns one row even over no
			// input, as in SQL.
			q.horde = append(q.horde, &groupState{state: q.agg.Init()})
		}
		for _, gs := range q.horde {
			row := q.agg.Results(append(catalog.Row{}, gs.groups...), gs.state)
			if q.code.having != nil {
				ok, err := q.code.having(row, q.env)
				if err != nil {
					return err
				}
				if !eval.Truthy(ok) {
					continue
				}
			}
			if err := q.project(row); err != nil && err != errLimitReached {
				return err
			} else if err == errLimitReached {
				return nil
			}
		}
	}
	if q.streaming() {
		return nil
	}
	sort.Slice(q.rows, func(i, j int) bool { return q.sortLess(&q.rows[i], &q.rows[j]) })
	for _, r := range q.rows {
		if err := q.send(r.out); err != nil {
			if err == errLimitReached {
				return nil
			}
			return err
		}
	}
	return nil
}

// scanStores reads a table or view: one partition for a key lookup, the
// partitions its keys hash to for "key IN (...)", every partition
// otherwise. In a cluster each partition goes where the Forwarder routes
// it (this node's replica or another node's); the partitions are read in
// parallel, each a few batches ahead of the one being consumed, and
// merged in partition order.
func (q *Query) scanStores(ctx context.Context) error {
	rel := q.plan.Rel
	query, ok := q.rt.Query(rel.Name)
	if !ok {
		return pgerr.New(pgerr.ObjectNotInPrerequisiteState, "%s is not being materialized on this node", rel.Name).
			WithHint("The node is starting; try again in a moment.")
	}
	parts, keys, err := q.partitions(rel, query)
	if err != nil || len(parts) == 0 {
		return err
	}
	fwd := q.e.forwarder()
	if q.opts.NoForward {
		fwd = nil
	}
	if fwd == nil || len(parts) == 1 {
		// One partition at a time on this goroutine; raw rows go to the
		// client batch by batch.
		var sink *rawSink
		if t := q.rawSinks(); t != nil {
			// The template itself: its partitions go one at a time, each
			// sent (sendRaw writes it to the client) before the next.
			sink = t
			sink.fwd = keys == nil && (q.code.filter == nil || q.plan.Where != "") && t.fwdOK
			sink.to, sink.reuse = q, true
		}
		q.seq = true
		defer func() { q.seq = false }()
		served := func(r PartitionRead) { q.seqRead.read = r }
		input := func(row catalog.Row) error { return q.input(ctx, row) }
		if len(parts) == 1 {
			q.reads = q.oneRead[:0]
		}
		for i, p := range parts {
			q.seqRead.read = PartitionRead{}
			if err := q.readPartition(ctx, query, fwd, p, keysOf(keys, i), nil, served, input, sink); err != nil {
				return err
			}
			if sink != nil {
				if err := sink.send(); err != nil {
					return err
				}
			}
			q.reads = append(q.reads, q.seqRead.read)
		}
		return nil
	}
	return q.gather(ctx, query, fwd, parts, keys)
}

// partitions returns the partitions a read of rel needs, in order, and
// for key lookups the keys to read in each (keys[i] those of parts[i];
// nil keys when every row is read).
func (q *Query) partitions(rel *catalog.Relation, query *stream.PersistentQuery) (parts []int32, keys [][][]any, err error) {
	// _partition = N pins the read to one partition (a read forwarded
	// here says which partition it wants this way).
	pin := int32(-1)
	if q.plan.Partition != nil {
		v, err := q.code.partition(nil, q.env)
		if err != nil {
			return nil, nil, err
		}
		n, ok := v.(int64)
		if !ok || n < 0 || n >= int64(rel.Partitions) {
			return nil, nil, nil // no such partition: no rows
		}
		pin = int32(n)
	}
	if lookups := q.code.lookups; lookups != nil {
		var codec *serde.Codec
		if query != nil && query.Rel == rel {
			codec, _ = query.Handles(q.rt.DB())
		} else {
			codec = serde.NewCodec(rel, q.rt.Registry())
		}
		// One key, the common case, needs no sets.
		var byPart map[int32][][]any
		var seen map[string]bool
		if len(lookups) > 1 {
			byPart, seen = map[int32][][]any{}, map[string]bool{}
		}
		var parts []int32
		var keys [][][]any
		part := rel.PartitionerOf()
	next:
		for n, l := range lookups {
			if n%1024 == 1023 && q.env.Context().Err() != nil {
				// A long IN list: statement_timeout, cancel and a client
				// gone stop it here too.
				return nil, nil, lookupCanceled()
			}
			key := make([]any, len(l))
			for i, e := range l {
				v, err := e(nil, q.env)
				if err != nil {
					return nil, nil, err
				}
				if v == nil {
					continue next // key = NULL matches nothing
				}
				key[i] = v
			}
			// A windowed view's window is no part of the record key
			// its partition is found by (catalog.Relation.
			// PartitionKeyIndexes): the partition key comes first.
			kb, err := codec.EncodeKey(key[:len(codec.KeyIndex())])
			everywhere := serde.Unavailable(err)
			if everywhere {
				// A key in a registry format whose schema cannot be
				// had now: its bytes, and so its partition, are
				// unknown, but it is in one of them.
				err = nil
			}
			if err != nil {
				return nil, nil, err
			}
			sk := string(kb)
			if rel.Window != nil || everywhere {
				wk, err := materialize.EncodeKey(nil, key)
				if err != nil {
					return nil, nil, err
				}
				sk = string(wk)
			}
			if seen[sk] {
				continue
			}
			if everywhere {
				if byPart == nil {
					byPart, seen = map[int32][][]any{}, map[string]bool{}
				}
				seen[sk] = true
				for p := range rel.Partitions {
					if pin >= 0 && p != pin {
						continue
					}
					if byPart[p] == nil {
						parts = append(parts, p)
					}
					byPart[p] = append(byPart[p], key)
				}
				continue
			}
			p := part.Partition(kb, rel.Partitions)
			if pin >= 0 && p != pin {
				continue // the filter's _partition = N would drop it
			}
			if byPart == nil {
				q.onePart[0], q.oneKeys[0], q.oneKey[0] = p, q.oneKey[:1], key
				return q.onePart[:], q.oneKeys[:], nil
			}
			seen[sk] = true
			if byPart[p] == nil {
				parts = append(parts, p)
			}
			byPart[p] = append(byPart[p], key)
		}
		slices.Sort(parts)
		keys = make([][][]any, len(parts))
		for i, p := range parts {
			keys[i] = byPart[p]
		}
		return parts, keys, nil
	}
	if r := q.plan.Range; r != nil && r.OnePartition(rel) {
		// A windowed view's group: its windows are in the partition of
		// the group's key.
		key := make([]any, len(rel.PartitionKeyIndexes()))
		for i := range key {
			v, err := q.code.prefix[i](nil, q.env)
			if err != nil {
				return nil, nil, err
			}
			if v == nil {
				return nil, nil, nil // key = NULL matches nothing
			}
			key[i] = v
		}
		kb, err := serde.NewCodec(rel, q.rt.Registry()).EncodeKey(key)
		if serde.Unavailable(err) {
			// Its schema cannot be had now: the group is in one of
			// the partitions, which are read in turn.
			return allPartitions(rel, pin), nil, nil
		}
		if err != nil {
			return nil, nil, err
		}
		p := rel.PartitionerOf().Partition(kb, rel.Partitions)
		if pin >= 0 && p != pin {
			return nil, nil, nil
		}
		return []int32{p}, nil, nil
	}
	return allPartitions(rel, pin), nil, nil
}

// allPartitions returns the partitions of rel a read reads, pin's alone
// when it is not -1.
func allPartitions(rel *catalog.Relation, pin int32) []int32 {
	if pin >= 0 {
		return []int32{pin}
	}
	parts := make([]int32, rel.Partitions)
	for p := range parts {
		parts[p] = int32(p)
	}
	return parts
}

// lookupCanceled stops the lookups of a long IN list whose statement
// was cancelled (statement_timeout, a cancel request, the client gone);
// the session reports a timeout as such.
// (A new error each time: a caller may add to it.)
func lookupCanceled() error {
	return pgerr.New(pgerr.QueryCanceled, "canceling statement due to user request")
}

// keysOf returns the keys to read in the i-th partition of a read: nil
// (every row) when keys is.
func keysOf(keys [][][]any, i int) [][]any {
	if keys == nil {
		return nil
	}
	return keys[i]
}

// readPartition reads partition p (only keys, when not nil): here when
// there is no Forwarder (a node alone, or a read forwarded to this node),
// else wherever the Forwarder routes it. turn, when not nil, is how a
// read ahead of the one being consumed waits for its turn.
func (q *Query) readPartition(ctx context.Context, query *stream.PersistentQuery, fwd Forwarder, p int32, keys [][]any, turn func(context.Context) error,
	served func(PartitionRead), emit func(catalog.Row) error, sink *rawSink) error {
	rel := query.Rel
	ts := query.Tasks[p]
	local := func(ctx context.Context) error { return q.readLocal(ctx, query, p, keys, served, emit, sink) }
	if fwd == nil {
		switch {
		case !ts.Held():
			return pgerr.New(pgerr.ObjectNotInPrerequisiteState, "partition %d of %s has no replica on node %s", p, rel.Name, q.rt.Node()).
				WithHint("SHOW TASKS lists the nodes that hold each partition; read it there.")
		case q.opts.NoForward && !q.opts.ServeRestoring && !ts.Restored():
			// A replica still restoring serves a forwarded read only when
			// it is nearly current (a standby that has just become the
			// active, replaying the changelog's tail); else the
			// forwarding node tries the next replica.
			// A replica that has seen nothing yet (an empty position) may
			// not know its lag at all: it refuses too.
			if lag, _ := ts.Lag(time.Now()); lag > q.rt.RecoveryLag() || len(ts.Position()) == 0 {
				return pgerr.New(pgerr.ObjectNotInPrerequisiteState, "partition %d of %s is restoring on node %s (offset lag %d)", p, rel.Name, q.rt.Node(), lag)
			}
		}
		if q.opts.NoForward {
			if err := q.withinBound(rel, p, ts); err != nil {
				return err
			}
		}
		return local(ctx)
	}
	var reqAt *ReadRequest
	var localAt *LocalReplica
	if q.seq {
		reqAt, localAt = &q.seqRead.req, &q.seqRead.local
	}
	req := q.request(query, p, keys, reqAt)
	req.Ahead, req.WaitTurn = turn != nil, turn
	if sink != nil && sink.fwd {
		req.RawFormats, req.RawRow = sink.formats, sink.wire
	}
	req.Local = localReplica(ts, localAt)
	r := &q.seqRead.route
	if !q.seq {
		r = new(Route)
	}
	if err := fwd.Route(req, q.opts, r); err != nil {
		return err
	}
	gaveUp := true
	defer func() { fwd.Done(r, gaveUp) }()
	for {
		at, ok := r.Attempts.Next()
		if !ok {
			break
		}
		var ans ha.Answer
		if at.Local {
			ri := at.Replica
			served(PartitionRead{Partition: p, ServedBy: ri.Node, Role: string(ri.Role), OffsetLag: ri.OffsetLag, TimeLagMs: ri.TimeLagMs})
			ans.Err = local(ctx)
		} else {
			ans = fwd.Remote(ctx, r, req, at, served, emit)
		}
		ans.Canceled = ctx.Err() != nil
		v := r.Attempts.Report(ans)
		fwd.Observe(r, at, v)
		if v == ha.Finish {
			gaveUp = false
			return ans.Err
		}
	}
	return r.Attempts.Err(rel.Name, p)
}

// withinBound refuses (55000) a read forwarded here that this node's
// replica of partition p cannot serve within the lag bound the
// forwarding node sent with it (the session's basin.acceptable_offset_lag
// and basin.acceptable_time_lag): the forwarding node chose this replica
// by its last lag report, which may be old or forged, and tries the next
// one. The forwarding node checks the lag the rows come with as well.
func (q *Query) withinBound(rel *catalog.Relation, p int32, ts *stream.TaskState) error {
	if q.opts.Settings == nil {
		return nil
	}
	lag, tlag := ts.Lag(time.Now())
	if v, _ := q.opts.Settings.Setting("basin.acceptable_offset_lag"); v != "" {
		if bound, err := strconv.ParseInt(v, 10, 64); err == nil && lag > bound {
			return pgerr.New(pgerr.ObjectNotInPrerequisiteState, "partition %d of %s on node %s is behind the read's bound: offset lag %d > %d", p, rel.Name, q.rt.Node(), lag, bound)
		}
	}
	if v, _ := q.opts.Settings.Setting("basin.acceptable_time_lag"); v != "" {
		if bound, err := time.ParseDuration(v); err == nil && bound > 0 && time.Duration(tlag)*time.Millisecond > bound {
			return pgerr.New(pgerr.ObjectNotInPrerequisiteState, "partition %d of %s on node %s is behind the read's bound: time lag %v > %v", p, rel.Name, q.rt.Node(), time.Duration(tlag)*time.Millisecond, bound)
		}
	}
	return nil
}

// localReplica describes this node's replica of a partition for the
// router, read by read; nil when it may not serve reads: it is not held,
// or it has neither caught up with its changelog nor seen any input (a
// replica just given to this node does not know how far behind it is,
// and must not answer with no rows). It is made in at, when not nil.
func localReplica(ts *stream.TaskState, at *LocalReplica) *LocalReplica {
	if !ts.Held() || !ts.Restored() && len(ts.Position()) == 0 {
		return nil
	}
	if at == nil {
		at = new(LocalReplica)
	}
	lag, tlag := ts.Lag(time.Now())
	*at = LocalReplica{Role: ts.Role(), OffsetLag: lag, TimeLagMs: tlag, Position: ts.Position()}
	return at
}

// request is the ReadRequest for partition p: what of the query the
// serving node can do (keys, the filter when it is pushable, the columns
// needed, the LIMIT when rows go out in scan order) and the part of the
// position bound that p can show.
func (q *Query) request(query *stream.PersistentQuery, p int32, keys [][]any, at *ReadRequest) *ReadRequest {
	plan := q.plan
	if at == nil {
		at = new(ReadRequest)
	}
	req := at
	*req = ReadRequest{Rel: query.Rel, Partition: p, Keys: keys, Where: plan.Where, Alias: plan.Alias,
		Needed: plan.Needed, Limit: -1, PositionWait: q.opts.PositionWait}
	if plan.Limit >= 0 && q.streaming() && !plan.Distinct && (q.code.filter == nil || plan.Where != "") {
		req.Limit = plan.Limit + plan.Offset
	}
	if q.opts.Bounded() {
		if b := q.opts.Bound(query, query.Tasks[p]); len(b.Want) > 0 {
			req.MinPosition, req.MinPositionFrom = b.Want, b.Sources().String()
		}
	}
	req.NeedPosition = q.opts.Monotonic
	return req
}

// readLocal reads partition p (only keys, when not nil) from this node's
// replica, once it reflects the read's position bound.
func (q *Query) readLocal(ctx context.Context, query *stream.PersistentQuery, p int32, keys [][]any, served func(PartitionRead), emit func(catalog.Row) error, sink *rawSink) error {
	rel := query.Rel
	ts := query.Tasks[p]
	ncols := len(rel.Schema.Columns)
	if q.opts.Bounded() {
		if err := q.waitPosition(ctx, query, ts); err != nil {
			return err
		}
	}
	var store *materialize.Store
	if _, stores := query.Handles(q.rt.DB()); int(p) < len(stores) {
		store = stores[p]
	} else {
		store = q.rt.DB().Store(materialize.StoreID{View: rel.StoreName(), Partition: p})
	}
	// The read reports the position of the data it returns. A scan, a
	// read of a session with monotonic reads and a read forwarded from
	// another node (whose session may have them) read a snapshot of the
	// store with its checkpoint: the task publishes its position only
	// after it commits, and a live read between the two would return
	// rows past the position it reports. A monotonic session that kept
	// that position could then be served less by a replica between the
	// two. Other lookups read the live store (and its row cache) after
	// taking the published position, which the data is then at least as
	// new as: a bound for read-your-writes.
	reader := &store.StoreReader
	parsed, pos, published := ts.PositionAndToken()
	// A scan of the whole store, into Go rows without pseudo-columns
	// (which differ per read), may be served from the scan cache, or
	// offer it the rows it decodes: see materialize.ScanTicket. The
	// ticket is taken before the snapshot the scan reads.
	var (
		ticket  materialize.ScanTicket
		cached  *cachedScan
		collect *cachedScan
	)
	if keys == nil && sink == nil && !q.code.pseudo && q.plan.Range == nil {
		ticket = store.ScanTicket()
		if v, ok := ticket.CachedScan(); ok {
			cached = v.(*cachedScan)
			pos, parsed = cached.pos, cached.parsed
		} else if limit := store.MaxCachedScan(); limit > 0 {
			collect = &cachedScan{limit: limit}
		}
	}
	if cached == nil && (keys == nil || q.opts.Monotonic || q.opts.NoForward || !published) {
		snap, err := q.rt.DB().NewSnapshot()
		if err != nil {
			return err
		}
		defer snap.Close()
		reader = snap.Store(store.ID())
		cp, err := reader.Checkpoint()
		if err != nil {
			return err
		}
		if !published || !parsed.Equal(cp.Position) {
			pos, parsed = cp.Position.String(), cp.Position
		}
		if collect != nil {
			collect.pos, collect.parsed = pos, parsed
		}
	}
	lag, tlag := ts.Lag(time.Now())
	read := PartitionRead{Partition: p, ServedBy: q.rt.Node(), Role: ts.Role().String(), OffsetLag: lag, TimeLagMs: tlag, Position: pos, Parsed: parsed}
	served(read)
	// The pseudo-columns, when the query reads them.
	var pseudo catalog.Row
	if q.code.pseudo {
		pseudo = make(catalog.Row, len(planner.PseudoColumns))
		pseudo[planner.PseudoPartition] = int64(p)
		pseudo[planner.PseudoServedBy] = read.ServedBy
		pseudo[planner.PseudoRole] = read.Role
		pseudo[planner.PseudoOffsetLag] = read.OffsetLag
		pseudo[planner.PseudoTimeLag] = read.TimeLagMs
		pseudo[planner.PseudoPosition] = read.Position
	}
	width := ncols + len(planner.PseudoColumns)
	// A stored value is its presence flag, the columns, then aggregate
	// state (not decoded): it is decoded straight into a new row with
	// one slot before it for the flag, and the pseudo-columns are set
	// after the columns. A value whose flag is false (a group HAVING
	// drops) leaves its slots to the next.
	var rows RowAlloc
	var spare catalog.Row
	emitStored := func(v []byte) error {
		if sink != nil && sink.enc != nil {
			if ok, err := sink.stored(v); ok || err != nil {
				return err
			}
		}
		if sink != nil && spare == nil {
			// Raw mode: the rows are filtered and encoded here, so one
			// row is decoded into again and again.
			spare = make(catalog.Row, 1+width)
			copy(spare[1+ncols:], pseudo)
		}
		buf := spare
		if buf == nil {
			buf = rows.Next(1 + width)
		}
		vals, err := materialize.DecodeRowPrefix(buf[:0], v, 1+ncols)
		if err != nil {
			return err
		}
		if len(vals) < 1+ncols {
			return fmt.Errorf("exec: stored row of %s has %d values, want at least %d", rel.Name, len(vals), 1+ncols)
		}
		if present, _ := vals[0].(bool); !present {
			spare = buf
			return nil
		}
		if sink != nil {
			row := buf[1:]
			if q.code.filter != nil {
				ok, err := q.code.filter(row, q.env)
				if err != nil || !eval.Truthy(ok) {
					return err
				}
			}
			return sink.row(sink.project(row))
		}
		spare = nil
		row := buf[1:]
		copy(row[ncols:], pseudo)
		if collect != nil {
			collect.add(row, len(v))
		}
		return emit(row)
	}
	if cached != nil {
		for n, row := range cached.rows {
			if n%1024 == 1023 && ctx.Err() != nil {
				return pgerr.New(pgerr.QueryCanceled, "canceling statement due to user request")
			}
			if err := emit(row); err != nil {
				return err
			}
		}
		return nil
	}
	if keys != nil {
		for n, key := range keys {
			if n%1024 == 1023 && ctx.Err() != nil {
				return lookupCanceled()
			}
			sk, err := materialize.EncodeKey(nil, key)
			if err != nil {
				return err
			}
			// Lookup may answer from the row cache: v is shared, and
			// decoding it copies what the row keeps.
			var v []byte
			var ok bool
			if reader == &store.StoreReader {
				v, ok, err = store.Lookup(sk)
			} else {
				v, ok, err = reader.Get(sk)
			}
			if err != nil {
				return err
			}
			if ok {
				if err := emitStored(v); err != nil {
					return err
				}
			}
		}
		return nil
	}
	lower, upper, empty, err := q.keyBounds()
	if err != nil || empty {
		return err
	}
	it, err := reader.NewIter(lower, upper)
	if err != nil {
		return err
	}
	defer it.Close()
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		if n++; n%1024 == 0 && ctx.Err() != nil {
			return pgerr.New(pgerr.QueryCanceled, "canceling statement due to user request")
		}
		if err := emitStored(it.Value()); err != nil {
			return err
		}
	}
	if err := it.Error(); err != nil {
		return err
	}
	if collect != nil && !collect.over {
		ticket.CacheScan(collect, collect.bytes)
	}
	return nil
}

// cachedScan is what a scan of a whole store keeps in the scan cache:
// its rows, decoded and never modified (readers keep them as they are),
// and the position they are at.
type cachedScan struct {
	rows   []catalog.Row
	pos    string
	parsed materialize.Position
	// While collecting: the estimated memory of rows, and whether it
	// passed limit (the scan is then not kept).
	bytes, limit int64
	over         bool
}

// add collects row, decoded from a stored value of n bytes.
func (c *cachedScan) add(row catalog.Row, n int) {
	if c.over {
		return
	}
	// The values' share of the stored bytes (strings point into one copy
	// of it), the slots and a boxed value each.
	c.bytes += int64(n) + 24 + 32*int64(len(row))
	if c.bytes > c.limit {
		c.over, c.rows = true, nil
		return
	}
	c.rows = append(c.rows, row)
}

// keyBounds returns the store keys a scan of the plan's key range
// (plan.Range) reads from (inclusive) and to (exclusive), nil where
// open; empty when a bound is NULL, which no row is within.
func (q *Query) keyBounds() (lower, upper []byte, empty bool, err error) {
	r := q.plan.Range
	if r == nil {
		return nil, nil, false, nil
	}
	var prefix []byte
	for _, e := range q.code.prefix {
		v, err := e(nil, q.env)
		if v == nil || err != nil {
			return nil, nil, v == nil && err == nil, err
		}
		if prefix, err = materialize.AppendKeyValue(prefix, v); err != nil {
			return nil, nil, false, err
		}
	}
	bound := func(e eval.Expr, after bool) ([]byte, bool, error) {
		if e == nil {
			if prefix == nil {
				return nil, false, nil
			}
			if after {
				return materialize.PrefixEnd(prefix), false, nil
			}
			return prefix, false, nil
		}
		v, err := e(nil, q.env)
		if v == nil || err != nil {
			return nil, v == nil && err == nil, err
		}
		k, err := materialize.AppendKeyValue(slices.Clip(prefix), v)
		if err != nil {
			return nil, false, err
		}
		if after {
			// Past every key whose column there is v.
			k = materialize.PrefixEnd(k)
		}
		return k, false, nil
	}
	var none bool
	if lower, none, err = bound(q.code.lo, q.code.lo != nil && !r.LoIncl); err != nil || none {
		return nil, nil, none, err
	}
	if upper, none, err = bound(q.code.hi, r.HiIncl || q.code.hi == nil); err != nil || none {
		return nil, nil, none, err
	}
	return lower, upper, false, nil
}

// Scatter-gather: how far reads run ahead of the partition being
// consumed, and how much each may buffer.
const (
	gatherWindow = 8   // partitions read at once
	gatherBatch  = 256 // rows per batch
	// Batches a partition may buffer: 128 of DataRow messages (a few
	// MiB at most; a partition of a 100k-row view is read ahead whole
	// while the one before it goes to the client), 16 of Go rows.
	gatherBatchesRaw = 128
	gatherBatches    = 16
)

// prefetch is one partition's read in a scatter-gather.
type prefetch struct {
	rows chan prefetchBatch // closed when the read ends
	turn chan struct{}      // closed when the consumer reaches it
	// read and err are set before rows is closed.
	read PartitionRead
	err  error
}

// prefetchBatch is rows of a partition read ahead: Go rows, or (raw
// mode, see RawRows) DataRow messages with the end of each.
type prefetchBatch struct {
	rows []catalog.Row
	raw  []byte
	ends []int
	// buf, when set, is where raw and ends came from; the batch's
	// consumer gives them back (release) once it has written them.
	buf *rawBuf
}

// rawBuf holds a raw batch's buffers between uses. Partitions read ahead
// hand their batches to the query's goroutine, which writes them to the
// client: the same few buffers go round instead of a scan allocating
// (and the runtime zeroing, and returning to the system) a batch of
// fresh memory for every gatherBatch rows.
type rawBuf struct {
	raw  []byte
	ends []int
}

var rawBufs = sync.Pool{New: func() any { return new(rawBuf) }}

// maxPooledRaw bounds the raw buffers pooled: a batch of very wide rows
// is left to the collector.
const maxPooledRaw = 1 << 20

// newRawBatch returns an empty raw batch in pooled buffers.
func newRawBatch() prefetchBatch {
	buf := rawBufs.Get().(*rawBuf)
	return prefetchBatch{raw: buf.raw[:0], ends: buf.ends[:0], buf: buf}
}

// release gives a raw batch's buffers back once its rows were written.
func (b *prefetchBatch) release() {
	if b.buf == nil || cap(b.raw) > maxPooledRaw {
		return
	}
	b.buf.raw, b.buf.ends = b.raw[:0], b.ends[:0]
	rawBufs.Put(b.buf)
	*b = prefetchBatch{}
}

// rawSinks returns the template of the query's raw sinks (see RawRows),
// or nil when its rows may not go to the client encoded by the
// partitions' readers: that needs a writer taking raw rows, and rows
// that go out as read, each some of the stored columns of the relation's
// row. Peers send raw rows too only when the columns are the leading
// ones (ReadRequest.RawFormats).
func (q *Query) rawSinks() *rawSink {
	p := q.plan
	if q.opts.Raw == nil || !q.streaming() || p.Distinct || p.Offset != 0 ||
		q.code.cols == nil || p.Rel == nil {
		return nil
	}
	formats := q.opts.Raw.WireFormats()
	if len(formats) != len(q.code.cols) {
		return nil
	}
	s := &q.rawT
	*s = rawSink{w: q.opts.Raw, formats: formats, n: len(formats), fwdOK: q.code.passThrough, cols: q.code.colMap()}
	if q.code.filter == nil {
		s.enc = q.code.encoder(p.Rel.Schema.Columns, formats)
	}
	return s
}

// colMap is cols when the output columns are not simply the leading
// ones, nil when they are (or are not stored columns at all).
func (c *PullCode) colMap() []int {
	if c.passThrough {
		return nil
	}
	return c.cols
}

// encoder returns the wire encoder of the stored columns c.cols of a row
// of all in formats, made once for as long as executions ask for the
// same formats.
func (c *PullCode) encoder(all []catalog.Column, formats []int16) *wireEncoder {
	if e := c.enc.Load(); e != nil && slices.Equal(e.formats, formats) {
		return e
	}
	e := newWireEncoderOf(all, c.colMap(), slices.Clone(formats))
	if e != nil {
		c.enc.Store(e)
	}
	return e
}

// rawSink collects one partition's rows as DataRow messages, in batches
// of gatherBatch rows handed to flush.
type rawSink struct {
	w       RawRows
	formats []int16
	n       int  // columns
	fwd     bool // a peer may send its rows raw (ReadRequest.RawFormats)
	// fwdOK is set in a template whose columns are the leading ones,
	// which is what peers can send raw.
	fwdOK bool
	// cols are the stored columns sent, in order, when they are not the
	// first n; vals is project's buffer.
	cols []int
	vals []any
	// reuse is set when flush is done with a batch once it returns (it
	// writes it to the client): send then keeps the batch's buffers for
	// the next rows.
	reuse bool
	// v is the stored-row visitor's value (wireEncoder.AppendStored).
	v materialize.RowValue
	// to, when set, takes each batch instead of flush (q.sendRaw).
	to *Query
	// enc encodes stored rows without decoding them first; nil when a
	// column is of a type it does not know, or the query has a filter
	// (that needs the values).
	enc   *wireEncoder
	b     prefetchBatch
	flush func(prefetchBatch) error
}

// sink is a sink like template t (shared: its encoder keeps no state)
// for one partition read; fwd says whether a peer may send its rows raw.
func (t *rawSink) sink(fwd bool, flush func(prefetchBatch) error) *rawSink {
	s := *t
	s.fwd, s.flush = fwd && t.fwdOK, flush
	s.vals = nil
	s.b = newRawBatch()
	return &s
}

// project returns the columns row sends, in a buffer of s's when they
// are not the first n.
func (s *rawSink) project(row catalog.Row) catalog.Row {
	if s.cols == nil {
		return row[:s.n]
	}
	s.vals = s.vals[:0]
	for _, c := range s.cols {
		s.vals = append(s.vals, row[c])
	}
	return s.vals
}

// stored adds a stored value (see wireEncoder.AppendStored); ok is false
// when it must take the ordinary path.
func (s *rawSink) stored(v []byte) (ok bool, err error) {
	out, present, err := s.enc.AppendStored(s.b.raw, v, &s.v)
	switch {
	case err == errNotWire:
		return false, nil
	case err != nil:
		return false, err
	case !present:
		return true, nil
	}
	s.b.raw = out
	return true, s.added()
}

// row adds a row of Go values.
func (s *rawSink) row(vals []any) error {
	var err error
	if s.b.raw, err = s.w.AppendRow(s.b.raw, vals); err != nil {
		return err
	}
	return s.added()
}

// wire adds a row of wire values a peer sent in s.formats.
func (s *rawSink) wire(vals [][]byte) error {
	if len(vals) != s.n {
		return fmt.Errorf("exec: a forwarded row has %d columns, want %d", len(vals), s.n)
	}
	s.b.raw = pgcodec.AppendDataRow(s.b.raw, vals)
	return s.added()
}

func (s *rawSink) added() error {
	if s.b.ends = append(s.b.ends, len(s.b.raw)); len(s.b.ends) >= gatherBatch {
		return s.send()
	}
	return nil
}

// send hands on the rows collected so far.
func (s *rawSink) send() error {
	if len(s.b.ends) == 0 {
		return nil
	}
	b := s.b
	if s.reuse {
		err := s.hand(b)
		s.b.raw, s.b.ends = b.raw[:0], b.ends[:0]
		return err
	}
	// The next rows, if any, go in other buffers.
	s.b = newRawBatch()
	return s.hand(b)
}

// hand gives b to whoever takes s's batches.
func (s *rawSink) hand(b prefetchBatch) error {
	if s.to != nil {
		return s.to.sendRaw(b)
	}
	return s.flush(b)
}

// sendRaw writes a raw batch to the client, as far as LIMIT allows.
func (q *Query) sendRaw(b prefetchBatch) error {
	k := len(b.ends)
	if q.plan.Limit >= 0 {
		k = int(min(int64(k), q.plan.Limit-q.emitted))
	}
	if k > 0 {
		if err := q.opts.Raw.WriteRows(b.raw[:b.ends[k-1]], k); err != nil {
			return err
		}
		q.emitted += int64(k)
	}
	if q.plan.Limit >= 0 && q.emitted >= q.plan.Limit {
		return errLimitReached
	}
	return nil
}

// gather reads parts in parallel (gatherWindow at a time, each at most
// gatherBatchesRaw or gatherBatches batches ahead) and feeds their rows
// to the query in partition order, so memory stays bounded however
// large the partitions. A read ahead of the one being consumed never waits for a
// connection to a peer before its turn (ReadRequest.Ahead): reads
// blocked on full buffers cannot hold every connection the consumed one
// needs, so nodes forwarding scans to each other cannot deadlock.
func (q *Query) gather(ctx context.Context, query *stream.PersistentQuery, fwd Forwarder, parts []int32, keys [][][]any) error {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	raw := q.rawSinks()
	// Peers may send rows raw when they filter them all.
	fwdRaw := raw != nil && keys == nil && (q.code.filter == nil || q.plan.Where != "")
	pfs := make([]*prefetch, len(parts))
	start := func(i int) {
		ahead := gatherBatches
		if raw != nil {
			ahead = gatherBatchesRaw
		}
		pf := &prefetch{rows: make(chan prefetchBatch, ahead), turn: make(chan struct{})}
		pfs[i] = pf
		var turn func(context.Context) error
		if i > 0 {
			turn = func(ctx context.Context) error {
				select {
				case <-pf.turn:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(pf.rows)
			defer safe.Recover(&pf.err) // a panic is the read's error
			safe.Fault(safe.FaultGather)
			hand := func(b prefetchBatch) error {
				select {
				case pf.rows <- b:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			var batch []catalog.Row
			flush := func() error {
				err := hand(prefetchBatch{rows: batch})
				batch = nil
				return err
			}
			var sink *rawSink
			if raw != nil {
				sink = raw.sink(fwdRaw, hand)
			}
			err := q.readPartition(ctx, query, fwd, parts[i], keysOf(keys, i), turn,
				func(r PartitionRead) { pf.read = r },
				func(row catalog.Row) error {
					if batch = append(batch, row); len(batch) >= gatherBatch {
						return flush()
					}
					return nil
				}, sink)
			if err == nil && len(batch) > 0 {
				err = flush()
			}
			if err == nil && sink != nil {
				err = sink.send()
			}
			pf.err = err
		}()
	}
	for i := range parts {
		for j := i; j < min(len(parts), i+gatherWindow); j++ {
			if pfs[j] == nil {
				start(j)
			}
		}
		pf := pfs[i]
		close(pf.turn)
		for b := range pf.rows {
			if b.raw != nil {
				if err := q.sendRaw(b); err != nil {
					return err
				}
				b.release() // sendRaw keeps nothing of it
				continue
			}
			for _, row := range b.rows {
				if err := q.input(ctx, row); err != nil {
					return err
				}
			}
		}
		if pf.err != nil {
			if ctx.Err() != nil && q.env.Context().Err() != nil {
				return pgerr.New(pgerr.QueryCanceled, "canceling statement due to user request")
			}
			return pf.err
		}
		q.reads = append(q.reads, pf.read)
	}
	return nil
}

// scanStream reads a stream's topic from its start to the end offsets
// seen when the query began: a bounded scan of what the stream holds now.
func (q *Query) scanStream(ctx context.Context) error {
	rel := q.plan.Rel
	ends, err := kafka.EndOffsets(ctx, q.rt.Admin(), rel.Topic)
	if err != nil {
		return err
	}
	// A partition whose records retention has deleted up to its end has
	// nothing to read; waiting for offset end-1 would wait forever.
	starts, err := q.rt.Admin().ListStartOffsets(ctx, rel.Topic)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return fmt.Errorf("exec: start offsets of %s: %w", rel.Topic, err)
	}
	parts := make(map[int32]kgo.Offset)
	remaining := 0
	for p, end := range ends {
		start, ok := starts.Lookup(rel.Topic, p)
		if end > 0 && (!ok || start.Offset < end) {
			parts[p] = kgo.NewOffset().AtStart()
			remaining++
		}
	}
	if remaining == 0 {
		return nil
	}
	cl, err := q.rt.Client("scan-"+rel.Name,
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{rel.Topic: parts}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
	)
	if err != nil {
		return err
	}
	defer cl.Close()
	codec := serde.NewCodec(rel, q.rt.Registry())
	ncols := len(rel.Schema.Columns)
	done := make(map[int32]bool)
	for remaining > 0 {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return pgerr.New(pgerr.QueryCanceled, "canceling statement due to user request")
		}
		if err := stream.FetchErr(fetches); err != nil {
			return err
		}
		var ierr error
		fetches.EachRecord(func(r *kgo.Record) {
			if ierr != nil || done[r.Partition] || r.Offset >= ends[r.Partition] {
				return
			}
			if r.Offset+1 >= ends[r.Partition] {
				done[r.Partition] = true
				remaining--
			}
			if r.Attrs.IsControl() {
				return
			}
			row, _, err := codec.DecodeRecord(r)
			if serde.Unavailable(err) {
				// Not a bad record: one the scan cannot read now.
				ierr = err
				return
			}
			if err != nil || row == nil {
				return // bad records are the processing log's business
			}
			// The columns, the pseudo-columns, then ROWTIME, ROWPARTITION
			// and ROWOFFSET (planner.relationShape).
			full := make(catalog.Row, len(q.plan.Input))
			copy(full, row)
			rec := ncols + len(planner.PseudoColumns)
			// A time that does not match the stream's timestamp_format
			// reads as NULL here; persistent queries log the record.
			full[rec], _ = codec.Rowtime(row, r.Timestamp)
			full[rec+1], full[rec+2] = int64(r.Partition), r.Offset
			full[ncols+planner.PseudoPartition] = int64(r.Partition)
			full[ncols+planner.PseudoServedBy] = q.rt.Node()
			full[ncols+planner.PseudoRole] = ha.RoleActive.String()
			full[ncols+planner.PseudoOffsetLag] = int64(0)
			full[ncols+planner.PseudoTimeLag] = int64(0)
			full[ncols+planner.PseudoPosition] = ""
			ierr = q.input(ctx, full)
		})
		if ierr != nil {
			return ierr
		}
	}
	return nil
}

// waitPosition waits until the task's partition reflects the read's
// minimum position, up to the read's position wait.
func (q *Query) waitPosition(ctx context.Context, query *stream.PersistentQuery, ts *stream.TaskState) error {
	b := q.opts.Bound(query, ts)
	want := b.Want
	if len(want) == 0 {
		return nil
	}
	behind := func() (string, int32, int64, int64, bool) {
		pos := ts.Position()
		for topic, parts := range want {
			for sp, off := range parts {
				if have, _ := pos.Get(topic, sp); have < off {
					return topic, sp, have, off, true
				}
			}
		}
		return "", 0, 0, 0, false
	}
	timer := time.NewTimer(q.opts.PositionWait)
	defer timer.Stop()
	for {
		changed := ts.PositionChanged()
		topic, sp, have, off, late := behind()
		if !late {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
			return pgerr.New(pgerr.ObjectNotInPrerequisiteState,
				"partition %d of %s has not reached the position this read needs within %s", ts.Partition, query.Rel.Name, q.opts.PositionWait).
				WithDetail("It reflects %s partition %d up to offset %d; the read needs offset %d (%s).", topic, sp, have, off, b.From(topic, sp, off)).
				WithHint("%s", b.From(topic, sp, off).Hint())
		}
	}
}

// RowAlloc hands out rows carved from larger blocks, for readers that
// emit many rows nobody reuses: the blocks double from one row up to
// rowAllocBlock rows, so a key lookup allocates its one row and a scan
// one block per rowAllocBlock rows. A row handed out is the caller's: it
// never overlaps another.
type RowAlloc struct {
	buf  []any
	rows int // rows in the next block
}

// rowAllocBlock is the most rows one block holds.
const rowAllocBlock = 128

// Next returns a new row of n nil values.
func (a *RowAlloc) Next(n int) catalog.Row {
	if len(a.buf) < n {
		a.rows = min(max(2*a.rows, 1), rowAllocBlock)
		a.buf = make([]any, n*a.rows)
	}
	r := a.buf[:n:n]
	a.buf = a.buf[n:]
	return r
}

// Holds reports whether q still holds anything of its last run (rows it
// sorted or grouped, where it read, its environment): a portal clears
// its Query when a run ends.
func (q *Query) Holds() bool { return q.rows != nil || q.reads != nil || q.env != nil }

// LocalReplicaOf describes this node's replica of a partition, whose
// task state is ts, as a read routes by it: nil when it may not serve
// reads (localReplica).
func LocalReplicaOf(ts *stream.TaskState) *LocalReplica { return localReplica(ts, nil) }
