package query

import (
	"cmp"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/eval"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/planner"
	"github.com/basindb/basin/sql"
)

// windowOp is one window function compiled: its arguments, partition and
// order keys over the row it runs on, and its frame's offsets.
type windowOp struct {
	call       planner.WindowCall
	args       []eval.Expr
	part, ord  []eval.Expr
	start, end eval.Expr // frame offsets, when the bounds have them
	// span is where the rows with a non-NULL ORDER BY value are in the
	// partition rangeBound last searched, found once per partition.
	span nonNullSpan
	// groupStart and groupOf are, for a GROUPS frame, where each peer
	// group of the partition being computed starts (and, last, its
	// length), and each row's group.
	groupStart, groupOf []int
}

// nonNullSpan is the span [lo, hi) of a sorted partition (its first
// row and length name it) outside the NULLs sorted first or last.
type nonNullSpan struct {
	first  *winItem
	n      int
	lo, hi int
}

func compileWindow(w planner.WindowCall) windowOp {
	op := windowOp{call: w}
	for _, a := range w.Args {
		op.args = append(op.args, eval.Compile(a))
	}
	for _, s := range w.PartitionBy {
		op.part = append(op.part, eval.Compile(s))
	}
	for _, k := range w.Order {
		op.ord = append(op.ord, eval.Compile(k.Expr))
	}
	if f := w.Frame; f != nil {
		if f.Start.Offset != nil {
			op.start = eval.Compile(f.Start.Offset)
		}
		if f.End.Offset != nil {
			op.end = eval.Compile(f.End.Offset)
		}
	}
	return op
}

// winItem is one row of a window partition.
type winItem struct {
	idx  int   // the row's place in the block's rows
	keys []any // ORDER BY values
	args []any
}

// windows computes the window functions and appends their values. held
// is what the result rows hold; the partitions are released.
func (o *blockOp) windows(rows []catalog.Row, env *eval.Env, a *Analysis, start time.Time) (_ []catalog.Row, held int64, err error) {
	nw := len(o.wins)
	vals := make([]any, len(rows)*nw) // row i's values at vals[i*nw:]
	var temp int64                    // the partitions and the values computed
	for w, op := range o.wins {
		// The rows' items, ORDER BY values and arguments, each in one
		// allocation for all the rows.
		items := make([]winItem, len(rows))
		nk, na := len(op.ord), len(op.args)
		keySlab := make([]any, len(rows)*nk)
		argSlab := make([]any, len(rows)*na)
		// A partition is keyed by its one value where Go's == is SQL's
		// (singleKey), else by the encoded values.
		parts := map[any][]*winItem{}
		var partOrder []any
		for i, r := range rows {
			var k any
			if len(op.part) == 1 {
				v, err := op.part[0](r, env)
				if err != nil {
					return nil, 0, err
				}
				if k = singleKey(v); k == nil {
					k = nullPartition{}
				}
			} else {
				pv, err := eval.EvalAll(op.part, r, env)
				if err != nil {
					return nil, 0, err
				}
				k = rowKey(pv)
			}
			it := &items[i]
			it.idx = i
			it.keys = keySlab[i*nk : (i+1)*nk : (i+1)*nk]
			for j, e := range op.ord {
				if it.keys[j], err = e(r, env); err != nil {
					return nil, 0, err
				}
			}
			it.args = argSlab[i*na : (i+1)*na : (i+1)*na]
			for j, e := range op.args {
				if it.args[j], err = e(r, env); err != nil {
					return nil, 0, err
				}
			}
			if err := charge(env, &temp, 80+eval.RowBytes(it.keys)+eval.RowBytes(it.args), "window functions"); err != nil {
				return nil, 0, err
			}
			part, ok := parts[k]
			if !ok {
				n := int64(16)
				if s, ok := k.(string); ok {
					n += keyBytes(s)
				}
				if err := charge(env, &temp, n, "window functions"); err != nil {
					return nil, 0, err
				}
				partOrder = append(partOrder, k)
			}
			parts[k] = append(part, it)
		}
		result := make([]any, len(rows))
		for _, k := range partOrder {
			items := parts[k]
			sortWindowItems(items, op.call.Order)
			if err := op.partition(items, rows, result, env); err != nil {
				return nil, 0, err
			}
		}
		for i := range rows {
			vals[i*nw+w] = result[i]
		}
		a.record(o.plan, "Window "+strconv.Itoa(w), len(rows), start)
	}
	out := make([]catalog.Row, len(rows))
	var arena rowArena
	for i, r := range rows {
		row := arena.row(len(r) + nw)[:0]
		out[i] = append(append(row, r...), vals[i*nw:(i+1)*nw]...)
		if err := charge(env, &held, eval.RowBytes(out[i]), "window functions"); err != nil {
			return nil, 0, err
		}
	}
	release(env, temp)
	return out, held, nil
}

// nullPartition is the partition key of a NULL: NULLs are one partition,
// as PARTITION BY groups them.
type nullPartition struct{}

// sortWindowItems sorts a partition's rows by the window's ORDER BY,
// ties in the rows' order (a stable sort). One key whose values are all
// integers, the usual ORDER BY total DESC, sorts on them as they are.
func sortWindowItems(items []*winItem, order []planner.SortKey) {
	if len(order) == 1 {
		ints := true
		for _, it := range items {
			if _, ok := it.keys[0].(int64); !ok {
				ints = false
				break
			}
		}
		if ints {
			type intItem struct {
				k  int64
				it *winItem
			}
			s := make([]intItem, len(items))
			for j, it := range items {
				s[j] = intItem{it.keys[0].(int64), it}
			}
			desc := order[0].Desc
			slices.SortFunc(s, func(x, y intItem) int {
				c := cmp.Compare(x.k, y.k)
				if desc {
					c = -c
				}
				if c != 0 {
					return c
				}
				return cmp.Compare(x.it.idx, y.it.idx)
			})
			for j := range s {
				items[j] = s[j].it
			}
			return
		}
	}
	slices.SortFunc(items, func(x, y *winItem) int {
		if c := compareKeys(x.keys, y.keys, order); c != 0 {
			return c
		}
		return cmp.Compare(x.idx, y.idx) // stable: ties keep the rows' order
	})
}

// partition computes the function over one sorted partition, setting
// result[it.idx] for each of its rows.
func (op *windowOp) partition(items []*winItem, rows []catalog.Row, result []any, env *eval.Env) error {
	n := len(items)
	order := op.call.Order
	// peerEnd[i] is one past the last peer of row i (rows that sort
	// equal); without ORDER BY every row is a peer of every other.
	peerEnd := make([]int, n)
	for i := n - 1; i >= 0; i-- {
		switch {
		case i == n-1:
			peerEnd[i] = n
		case compareKeys(items[i].keys, items[i+1].keys, order) == 0:
			peerEnd[i] = peerEnd[i+1]
		default:
			peerEnd[i] = i + 1
		}
	}
	if f := op.call.Frame; f != nil && f.Groups {
		op.groupStart, op.groupOf = op.groupStart[:0], op.groupOf[:0]
		for i := range n {
			if i == 0 || peerEnd[i-1] != peerEnd[i] {
				op.groupStart = append(op.groupStart, i)
			}
			op.groupOf = append(op.groupOf, len(op.groupStart)-1)
		}
		op.groupStart = append(op.groupStart, n)
	}
	peerStart := 0
	rank, dense := int64(0), int64(0)
	// Aggregates over frames that start at the partition's first row
	// accumulate as the frame's end moves on; others recompute, except
	// when a row's frame is the previous row's.
	var cum *aggState
	cumEnd := 0
	lastS, lastE := -1, -1
	var last any
	for i, it := range items {
		if i == 0 || peerEnd[i-1] != peerEnd[i] {
			peerStart = i
			rank = int64(i) + 1
			dense++
		}
		var v any
		switch op.call.Func {
		case "row_number":
			v = int64(i) + 1
		case "rank":
			v = rank
		case "dense_rank":
			v = dense
		case "percent_rank":
			v = 0.0
			if n > 1 {
				v = float64(rank-1) / float64(n-1)
			}
		case "cume_dist":
			v = float64(peerEnd[i]) / float64(n)
		case "ntile":
			b, ok := it.args[0].(int64)
			if !ok || b <= 0 {
				if it.args[0] == nil {
					break
				}
				return pgerr.New(pgerr.InvalidArgumentForNtileFunction, "argument of ntile must be greater than zero")
			}
			v = ntile(int64(i), int64(n), b)
		case "lag", "lead":
			off := int64(1)
			if len(it.args) > 1 {
				x, ok := it.args[1].(int64)
				if !ok {
					break // a NULL offset gives NULL
				}
				off = x
			}
			j := int64(i) - off
			if op.call.Func == "lead" {
				j = int64(i) + off
			}
			switch {
			case j >= 0 && j < int64(n):
				v = items[j].args[0]
			case len(it.args) > 2:
				v = it.args[2]
			}
		default:
			s, e, err := op.frame(items, i, peerStart, peerEnd[i], env)
			if err != nil {
				return err
			}
			switch op.call.Func {
			case "first_value":
				if s < e {
					v = items[s].args[0]
				}
			case "last_value":
				if s < e {
					v = items[e-1].args[0]
				}
			case "nth_value":
				k, ok := it.args[1].(int64)
				if !ok {
					break
				}
				if k <= 0 {
					return pgerr.New(pgerr.InvalidArgumentForNthValueFunction, "argument of nth_value must be greater than zero")
				}
				if int64(e-s) >= k {
					v = items[s+int(k)-1].args[0]
				}
			default:
				switch {
				case s == lastS && e == lastE:
					v = last
				case s == 0 && e >= cumEnd:
					if cum == nil {
						cum = newAggState(*op.call.Agg)
					}
					if err := op.accumulate(cum, items[cumEnd:e]); err != nil {
						return err
					}
					cumEnd = e
					if v, err = cum.finish(); err != nil {
						return err
					}
				default:
					st := newAggState(*op.call.Agg)
					if s < e {
						if err := op.accumulate(st, items[s:e]); err != nil {
							return err
						}
					}
					if v, err = st.finish(); err != nil {
						return err
					}
				}
				lastS, lastE, last = s, e, v
			}
		}
		result[it.idx] = v
	}
	return nil
}

// accumulate adds rows to an aggregate's state.
func (op *windowOp) accumulate(st *aggState, items []*winItem) error {
	for _, it := range items {
		var v, v2 any = true, nil
		if len(it.args) > 0 {
			v = it.args[0]
		}
		if len(it.args) > 1 {
			v2 = it.args[1]
		}
		if err := st.add(v, v2); err != nil {
			return err
		}
	}
	return nil
}

// ntile is the bucket (1 to b) of row i of n: the first n%b buckets
// have one row more than the rest.
func ntile(i, n, b int64) int64 {
	if b > n {
		return i + 1
	}
	size, extra := n/b, n%b
	big := extra * (size + 1) // rows in the larger buckets
	if i < big {
		return i/(size+1) + 1
	}
	return extra + (i-big)/size + 1
}

// frame returns the rows [s, e) of the frame of row i, whose peers are
// [peerStart, peerEnd).
func (op *windowOp) frame(items []*winItem, i, peerStart, peerEnd int, env *eval.Env) (s, e int, err error) {
	f := op.call.Frame
	n := len(items)
	if f == nil {
		if len(op.call.Order) == 0 {
			return 0, n, nil
		}
		return 0, peerEnd, nil
	}
	row := func(k int) int { return min(max(k, 0), n) }
	bound := func(b planner.FrameBound, x eval.Expr, isStart bool) (int, error) {
		switch b.Kind {
		case sql.UnboundedPreceding:
			return 0, nil
		case sql.UnboundedFollowing:
			return n, nil
		case sql.CurrentRow:
			switch {
			case !f.Range && !f.Groups:
				if isStart {
					return i, nil
				}
				return i + 1, nil
			case isStart:
				return peerStart, nil
			}
			return peerEnd, nil
		}
		which := "ending"
		if isStart {
			which = "starting"
		}
		off, err := x(nil, env)
		if err != nil {
			return 0, err
		}
		if off == nil {
			return 0, pgerr.New(pgerr.NullValueNotAllowedDataException, "frame %s offset must not be null", which)
		}
		var zero any = int64(0)
		if iv, ok := off.(catalog.IntervalVal); ok {
			zero = catalog.IntervalVal{}
			if f.Range && op.call.Order[0].Expr.Type() == catalog.Time {
				// A time's offset is its time part, as Postgres adds
				// an interval to a time: months and days do not count.
				off = catalog.IntervalVal{Micros: iv.Micros}
			}
		}
		if eval.Compare(off, zero) < 0 {
			if f.Range {
				return 0, pgerr.New(pgerr.InvalidPrecedingOrFollowingSize, "invalid preceding or following size in window function")
			}
			return 0, pgerr.New(pgerr.InvalidPrecedingOrFollowingSize, "frame %s offset must not be negative", which)
		}
		preceding := b.Kind == sql.OffsetPreceding
		if f.Groups {
			// The group off groups before or after row i's; for an end
			// bound, one past its last row.
			k := min(off.(int64), int64(n)) // no further than the partition
			if preceding {
				k = -k
			}
			g := int64(op.groupOf[i]) + k
			if !isStart {
				g++
			}
			last := int64(len(op.groupStart) - 1)
			return op.groupStart[min(max(g, 0), last)], nil
		}
		if !f.Range {
			k := min(off.(int64), int64(n)) // no further than the partition
			if preceding {
				k = -k
			}
			if isStart {
				return row(i + int(k)), nil
			}
			return row(i + int(k) + 1), nil
		}
		return op.rangeBound(items, i, peerStart, peerEnd, off, preceding, isStart, env)
	}
	if s, err = bound(f.Start, op.start, true); err != nil {
		return 0, 0, err
	}
	if e, err = bound(f.End, op.end, false); err != nil {
		return 0, 0, err
	}
	if e < s {
		e = s
	}
	return s, e, nil
}

// rangeBound finds a RANGE offset bound of row i: the first row whose
// ORDER BY value is at or past the current value less (PRECEDING) or
// plus (FOLLOWING) the offset, in the sort's direction; for an end
// bound, the first row past it. A NULL current value's frame is its
// peers (the other NULLs), and NULLs are outside every other frame.
func (op *windowOp) rangeBound(items []*winItem, i, peerStart, peerEnd int, off any, preceding, isStart bool, env *eval.Env) (int, error) {
	key := op.call.Order[0]
	cur := items[i].keys[0]
	if cur == nil {
		if isStart {
			return peerStart, nil
		}
		return peerEnd, nil
	}
	// The non-NULL rows, which the search is over.
	if sp := op.span; sp.first != items[0] || sp.n != len(items) {
		lo, hi := 0, len(items)
		for lo < hi && items[lo].keys[0] == nil {
			lo++
		}
		for hi > lo && items[hi-1].keys[0] == nil {
			hi--
		}
		op.span = nonNullSpan{first: items[0], n: len(items), lo: lo, hi: hi}
	}
	lo, hi := op.span.lo, op.span.hi
	// In sort order, PRECEDING moves toward the first rows: down for
	// an ascending key, up for a descending one.
	op2 := "+"
	if preceding != key.Desc {
		op2 = "-"
	}
	t := key.Expr.Type()
	// asKey is what a key compares as: a date as the timestamp of its
	// midnight, as Postgres adds an interval to a date.
	asKey := func(v any) any { return v }
	var target any
	var err error
	switch {
	case t == catalog.Date:
		asKey = func(v any) any {
			if d, ok := v.(catalog.DateVal); ok {
				return d.Time()
			}
			return v
		}
		target, err = eval.DatetimeOp(op2, catalog.Timestamp, asKey(cur), off, env.Location())
	case t == catalog.Timestamp || t == catalog.TimestampTZ:
		target, err = eval.DatetimeOp(op2, t, cur, off, env.Location())
	case t == catalog.Time:
		// Without wrapping around midnight, as Postgres's RANGE does.
		asKey = func(v any) any { return int64(v.(catalog.TimeOfDay)) }
		d := min(off.(catalog.IntervalVal).Micros, 1<<40) // a day is under 2^37
		if op2 == "-" {
			d = -d
		}
		target = asKey(cur).(int64) + d
	default:
		target, err = eval.BinaryOp(op2, t, cur, off)
	}
	if err != nil {
		// Past the type's range: every row is on the near side.
		if preceding {
			return lo, nil
		}
		return hi, nil
	}
	before := func(v any) bool { // v sorts before target
		c := eval.Compare(asKey(v), target)
		if key.Desc {
			c = -c
		}
		if isStart {
			return c < 0
		}
		return c <= 0
	}
	return lo + sort.Search(hi-lo, func(k int) bool { return !before(items[lo+k].keys[0]) }), nil
}
