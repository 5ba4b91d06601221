package eval

import (
	"fmt"
	"math"
	"math/bits"
	"strings"

	"github.com/cockroachdb/apd/v3"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/numeric"
	"github.com/basindb/basin/planner"
)

// Aggregator folds rows into the state of one group. The state is a flat
// list of values so that it can be stored next to the view row (in Pebble
// and in the changelog) and carried to standbys: a replica restored from
// the changelog can take over aggregation where the active left off.
//
// State layout per aggregate, over a stream (rows are only added):
//
//	count           [n int64]
//	count distinct  [values multiset]
//	sum             [sum int64|float64|nil]
//	avg             [sum float64, n int64]
//	min, max        [v]
//	stddev, var...  [n int64, Sx float64, Sxx float64]
//	bool_and/or     [trues int64, falses int64]
//
// The statistical aggregates (stddev, stddev_samp, stddev_pop,
// variance, var_samp, var_pop) keep Postgres's float8 state: the count,
// the sum and the sum of squared differences from the mean, updated by
// the Youngs–Cramer method as the pull queries' are (query/aggfuncs.go).
//
// A retracting aggregator (NewRetractingAggregator, over a table or a
// view, whose rows change and leave) keeps what taking a row back needs:
// first the group's row count, then
//
//	count           [n int64]
//	count distinct  [values multiset]
//	sum             [low int64|sum float64|nil, high int64, non-NULL n int64]
//	avg             [sum float64, n int64]
//	min, max        [values multiset]
//	stddev, var...  [n int64, Sx float64, Sxx float64], taken back by the
//	                inverse of the update (rounding may leave the last
//	                digits of a group that lost rows unlike a recompute's)
//	bool_and/or     [trues int64, falses int64]
//
// An integer sum is kept in 128 bits (low and high words), so that taking
// rows back in another order than they came never overflows on the way;
// a sum beyond BIGINT reads as NULL (Postgres's sum(bigint) is numeric).
//
// A multiset is a string holding the row encoding of its distinct values
// in order, each followed by its count (multiset.go).
//
// The aggregate library's states (array_agg, collect_list, topk,
// histogram, corr, ...) are in libagg.go.
type Aggregator struct {
	specs []planner.AggSpec
	args  []Expr
	// args2 are the second arguments the aggregator reads: ROWTIME of
	// latest_by_offset and earliest_by_offset, X of corr and the
	// covariances; nil elsewhere.
	args2 []Expr
	// pairs is set when an aggregate reads two arguments of a row
	// (corr and the covariances).
	pairs bool
	// offsets[i] is where aggregate i's state starts.
	offsets []int
	width   int
	// retract is set for an aggregator that can take rows back; its
	// state starts with the group's row count.
	retract bool
}

// NewAggregator compiles the aggregates of a plan.
func NewAggregator(specs []planner.AggSpec) *Aggregator { return newAggregator(specs, false) }

// NewRetractingAggregator compiles the aggregates of a view over a table
// or a view: its groups can take rows back (Retract), and a group with
// no rows left is Empty.
func NewRetractingAggregator(specs []planner.AggSpec) *Aggregator { return newAggregator(specs, true) }

func newAggregator(specs []planner.AggSpec, retract bool) *Aggregator {
	a := &Aggregator{specs: specs, retract: retract}
	if retract {
		a.width = 1
	}
	for _, s := range specs {
		a.offsets = append(a.offsets, a.width)
		if s.Arg != nil {
			a.args = append(a.args, Compile(s.Arg))
		} else {
			a.args = append(a.args, nil)
		}
		if offsetAgg(s.Func) || pairAgg(s.Func) {
			a.args2 = append(a.args2, Compile(s.Arg2))
			a.pairs = a.pairs || pairAgg(s.Func)
		} else {
			a.args2 = append(a.args2, nil)
		}
		a.width += a.stateWidth(s.Func)
	}
	return a
}

func (a *Aggregator) stateWidth(fn string) int {
	switch {
	case pairAgg(fn):
		return 6
	case fn == "sum" && a.retract, statAgg(fn), offsetAgg(fn):
		return 3
	case fn == "avg", boolAgg(fn):
		return 2
	}
	return 1
}

// statAgg reports whether fn is a statistical aggregate.
func statAgg(fn string) bool {
	switch fn {
	case "stddev", "stddev_samp", "stddev_pop", "variance", "var_samp", "var_pop":
		return true
	}
	return false
}

// offsetAgg reports whether fn is latest_by_offset or
// earliest_by_offset, whose state is [value, ROWTIME, seen int64].
func offsetAgg(fn string) bool { return fn == "latest_by_offset" || fn == "earliest_by_offset" }

// keepsNulls reports whether aggregate fn keeps NULL values (array_agg,
// collect_list and collect_set do, as Postgres's array_agg does).
func keepsNulls(fn string) bool {
	return fn == "array_agg" || fn == "collect_list" || fn == "collect_set"
}

// boolAgg reports whether fn is bool_and, bool_or or every.
func boolAgg(fn string) bool { return fn == "bool_and" || fn == "bool_or" || fn == "every" }

// addStat folds x into a statistical aggregate's state [n, Sx, Sxx], or
// with sign -1 takes it back out (the update's inverse).
func addStat(st []any, x float64, sign int64) {
	n, sx, sxx := st[0].(int64), st[1].(float64), st[2].(float64)
	if sign < 0 {
		// Sxx was Sxx' + tmp²/(n(n-1)) with tmp = x·n - Sx.
		if n <= 1 {
			st[0], st[1], st[2] = int64(0), float64(0), float64(0)
			return
		}
		tmp := x*float64(n) - sx
		sxx -= tmp * tmp / (float64(n) * float64(n-1))
		st[0], st[1], st[2] = n-1, sx-x, max(sxx, 0)
		return
	}
	n++
	sx += x
	if n > 1 {
		tmp := x*float64(n) - sx
		sxx += tmp * tmp / (float64(n) * float64(n-1))
	}
	st[0], st[1], st[2] = n, sx, sxx
}

// mergeStat folds the statistical state src into dst (Postgres's
// float8_combine).
func mergeStat(dst, src []any) {
	n1, sx1, sxx1 := dst[0].(int64), dst[1].(float64), dst[2].(float64)
	n2, sx2, sxx2 := src[0].(int64), src[1].(float64), src[2].(float64)
	switch {
	case n2 == 0:
		return
	case n1 == 0:
		copy(dst, src)
		return
	}
	n := float64(n1 + n2)
	tmp := sx1/float64(n1) - sx2/float64(n2)
	dst[0], dst[1], dst[2] = n1+n2, sx1+sx2, sxx1+sxx2+float64(n1)*float64(n2)*tmp*tmp/n
}

// statResult is a statistical aggregate's value from its state: NULL
// without rows (or with one, for the sample's).
func statResult(fn string, st []any) any {
	n, sxx := float64(st[0].(int64)), st[2].(float64)
	pop := fn == "stddev_pop" || fn == "var_pop"
	if n == 0 || !pop && n == 1 {
		return nil
	}
	v := sxx / (n - 1)
	if pop {
		v = sxx / n
	}
	v = max(v, 0)
	switch fn {
	case "stddev", "stddev_samp", "stddev_pop":
		return math.Sqrt(v)
	}
	return v
}

// boolResult is bool_and's (every's) or bool_or's value from its state
// [trues, falses]: NULL without a non-NULL value.
func boolResult(fn string, st []any) any {
	trues, falses := st[0].(int64), st[1].(int64)
	switch {
	case trues+falses == 0:
		return nil
	case fn == "bool_or":
		return trues > 0
	}
	return falses == 0
}

// multiset reports whether aggregate s keeps a multiset of its values.
func (a *Aggregator) multiset(s planner.AggSpec) bool {
	return s.Distinct || a.retract && (s.Func == "min" || s.Func == "max") || s.Func == "string_agg" || a.libraryMultiset(s)
}

// Width is the number of state values.
func (a *Aggregator) Width() int { return a.width }

// Init returns the state of an empty group.
func (a *Aggregator) Init() []any {
	st := make([]any, a.width)
	if a.retract {
		st[0] = int64(0)
	}
	for i, s := range a.specs {
		o := a.offsets[i]
		switch {
		case a.multiset(s), a.listAgg(s):
			st[o] = ""
			if offsetAgg(s.Func) {
				st[o+2] = int64(0)
			}
		case pairAgg(s.Func):
			st[o], st[o+1], st[o+2], st[o+3], st[o+4], st[o+5] = int64(0), 0.0, 0.0, 0.0, 0.0, 0.0
		case s.Func == "count":
			st[o] = int64(0)
		case s.Func == "avg" && s.T == catalog.Decimal:
			st[o], st[o+1] = numeric.Zero, int64(0)
		case s.Func == "avg":
			st[o], st[o+1] = float64(0), int64(0)
		case s.Func == "sum" && a.retract:
			st[o+1], st[o+2] = int64(0), int64(0)
		case statAgg(s.Func):
			st[o], st[o+1], st[o+2] = int64(0), float64(0), float64(0)
		case boolAgg(s.Func):
			st[o], st[o+1] = int64(0), int64(0)
		case offsetAgg(s.Func):
			st[o+2] = int64(0)
		}
	}
	return st
}

// Empty reports whether a retracting aggregator's group has no rows
// left, and so leaves the view.
func (a *Aggregator) Empty(st []any) bool {
	n, _ := st[0].(int64)
	return a.retract && n == 0
}

// args evaluates the aggregates' arguments over row into buf.
func (a *Aggregator) argValues(buf []any, row catalog.Row, env *Env) ([]any, error) {
	vals := buf[:0]
	for i := range a.specs {
		var v any
		if a.args[i] != nil { // not COUNT(*)
			var err error
			if v, err = a.args[i](row, env); err != nil {
				return nil, err
			}
		}
		vals = append(vals, v)
	}
	return vals, nil
}

// secondValues evaluates the second arguments of corr and the
// covariances over row into buf (nil for the other aggregates), so that
// an error leaves the state unchanged.
func (a *Aggregator) secondValues(buf []any, row catalog.Row, env *Env) ([]any, error) {
	if !a.pairs {
		return nil, nil
	}
	vals := buf[:0]
	for i, s := range a.specs {
		var v any
		if pairAgg(s.Func) {
			var err error
			if v, err = a.args2[i](row, env); err != nil {
				return nil, err
			}
		}
		vals = append(vals, v)
	}
	return vals, nil
}

// Add folds one input row into st. It is all or nothing: when an
// argument fails to evaluate or an aggregate fails (overflow), st is
// unchanged, so a record skipped for a data error leaves no trace.
//
// It allocates only to box the new values of counters and sums: the
// arguments are evaluated into a buffer on the stack, and what can fail
// (a BIGINT SUM's overflow) is checked before st is changed rather than
// on a copy of st.
func (a *Aggregator) Add(st []any, row catalog.Row, env *Env) error {
	var buf, buf2 [8]any
	vals, err := a.argValues(buf[:0:min(len(buf), len(a.specs))], row, env)
	if err != nil {
		return err
	}
	xs, err := a.secondValues(buf2[:0:min(len(buf2), len(a.specs))], row, env)
	if err != nil {
		return err
	}
	for i, s := range a.specs {
		if s.Func != "sum" || a.retract {
			continue
		}
		if s.T == catalog.Decimal {
			continue // sum(bigint) in a query: numeric past bigint's range
		}
		if x, ok := vals[i].(int64); ok && st[a.offsets[i]] != nil {
			if _, ok := addInt64(x, st[a.offsets[i]].(int64)); !ok {
				return ErrOutOfRange
			}
		}
	}
	if a.retract {
		st[0] = st[0].(int64) + 1
	}
	for i, s := range a.specs {
		o := a.offsets[i]
		if a.args[i] == nil { // COUNT(*)
			st[o] = st[o].(int64) + 1
			continue
		}
		v := vals[i]
		if offsetAgg(s.Func) {
			if v == nil && !s.KeepNulls {
				continue
			}
			if s.N > 0 {
				ts, err := a.args2[i](row, env)
				if err != nil {
					return err // before st changes: ROWTIME is a column
				}
				addLibrary(s, st[o:o+1], v, ts)
				continue
			}
			if s.Func == "latest_by_offset" || st[o+2].(int64) == 0 {
				ts, err := a.args2[i](row, env)
				if err != nil {
					return err // before st changes: ROWTIME is a column
				}
				st[o], st[o+1], st[o+2] = v, ts, int64(1)
			}
			continue
		}
		if v == nil && !keepsNulls(s.Func) {
			continue // aggregates skip NULLs
		}
		switch {
		case a.listAgg(s):
			addLibrary(s, st[o:o+1], v, nil)
			continue
		case a.multiset(s):
			st[o] = multisetAdd(st[o].(string), v, 1)
			continue
		case pairAgg(s.Func):
			if xs[i] != nil {
				addPair(st[o:o+6], toFloat(v), toFloat(xs[i]), 1)
			}
			continue
		}
		if s.Func == "sum" && a.retract {
			sum128(st[o:o+3], v, 1)
			continue
		}
		switch {
		case statAgg(s.Func):
			addStat(st[o:o+3], toFloat(v), 1)
			continue
		case boolAgg(s.Func):
			if v == true {
				st[o] = st[o].(int64) + 1
			} else {
				st[o+1] = st[o+1].(int64) + 1
			}
			continue
		}
		switch s.Func {
		case "count":
			st[o] = st[o].(int64) + 1
		case "sum":
			st[o] = sumAdd(st[o], v)
		case "avg":
			if s.T == catalog.Decimal {
				st[o] = decimalSum(st[o], toDecimal(v), 1)
			} else {
				st[o] = st[o].(float64) + toFloat(v)
			}
			st[o+1] = st[o+1].(int64) + 1
		case "min":
			if st[o] == nil || Compare(v, st[o]) < 0 {
				st[o] = v
			}
		case "max":
			if st[o] == nil || Compare(v, st[o]) > 0 {
				st[o] = v
			}
		}
	}
	return nil
}

// Retract takes row, which Add folded into st before, back out of st:
// a row of a table or view that changed or left. Like Add it is all or
// nothing. Only a retracting aggregator can.
func (a *Aggregator) Retract(st []any, row catalog.Row, env *Env) error {
	if !a.retract {
		return fmt.Errorf("eval: retracting from an aggregator that cannot")
	}
	var buf, buf2 [8]any
	vals, err := a.argValues(buf[:0:min(len(buf), len(a.specs))], row, env)
	if err != nil {
		return err
	}
	xs, err := a.secondValues(buf2[:0:min(len(buf2), len(a.specs))], row, env)
	if err != nil {
		return err
	}
	st[0] = st[0].(int64) - 1
	for i, s := range a.specs {
		o := a.offsets[i]
		if a.args[i] == nil { // COUNT(*)
			st[o] = st[o].(int64) - 1
			continue
		}
		v := vals[i]
		if v == nil && !keepsNulls(s.Func) {
			continue
		}
		if a.multiset(s) {
			st[o] = multisetAdd(st[o].(string), v, -1)
			continue
		}
		switch {
		case pairAgg(s.Func):
			if xs[i] != nil {
				addPair(st[o:o+6], toFloat(v), toFloat(xs[i]), -1)
			}
			continue
		case statAgg(s.Func):
			addStat(st[o:o+3], toFloat(v), -1)
			continue
		case boolAgg(s.Func):
			if v == true {
				st[o] = st[o].(int64) - 1
			} else {
				st[o+1] = st[o+1].(int64) - 1
			}
			continue
		}
		switch s.Func {
		case "count":
			st[o] = st[o].(int64) - 1
		case "sum":
			sum128(st[o:o+3], v, -1)
		case "avg":
			n := st[o+1].(int64) - 1
			st[o+1] = n
			dec := s.T == catalog.Decimal
			switch {
			case n == 0 && dec:
				st[o] = numeric.Zero
			case n == 0:
				st[o] = float64(0)
			case dec:
				st[o] = decimalSum(st[o], toDecimal(v), -1)
			default:
				st[o] = st[o].(float64) - toFloat(v)
			}
		}
	}
	return nil
}

// sum128 adds v (times sign, 1 or -1) to a retracting sum's state [low
// or float sum, high, n]: an integer in 128 bits, two's complement, so
// that no order of adding and taking back overflows. With no value left
// the sum is NULL again, not a float's residue.
func sum128(st []any, v any, sign int64) {
	n := st[2].(int64) + sign
	st[2] = n
	if n == 0 {
		st[0], st[1] = nil, int64(0)
		return
	}
	switch x := v.(type) {
	case int64:
		lo, _ := st[0].(int64)
		hi := st[1].(int64)
		xhi := x >> 63 // sign extension
		if sign < 0 {
			// -x in 128 bits: invert and add one.
			x, xhi = ^x, ^xhi
			var c uint64
			ux, c := bits.Add64(uint64(x), 1, 0)
			x, xhi = int64(ux), xhi+int64(c)
		}
		l, c := bits.Add64(uint64(lo), uint64(x), 0)
		h, _ := bits.Add64(uint64(hi), uint64(xhi), c)
		st[0], st[1] = int64(l), int64(h)
	case float64:
		f, _ := st[0].(float64)
		st[0] = f + float64(sign)*x
	case *apd.Decimal:
		st[0] = decimalSum(st[0], x, sign)
	}
}

// sumResult is a retracting sum's value: NULL beyond BIGINT.
func sumResult(st []any) any {
	switch lo := st[0].(type) {
	case int64:
		if st[1].(int64) != lo>>63 {
			return nil
		}
		return lo
	default:
		return lo
	}
}

// addInt64 returns x + y and whether it did not overflow.
func addInt64(x, y int64) (int64, bool) {
	z := x + y
	return z, (z > y) == (x > 0)
}

// Results appends the aggregates' results for st to dst.
func (a *Aggregator) Results(dst []any, st []any) []any {
	for i, s := range a.specs {
		o := a.offsets[i]
		if a.multiset(s) {
			set := st[o].(string)
			switch s.Func {
			case "count":
				dst = append(dst, int64(multisetLen(set)))
			case "min":
				dst = append(dst, multisetEnd(set, false))
			case "max":
				dst = append(dst, multisetEnd(set, true))
			case "string_agg":
				dst = append(dst, stringAgg(set, s))
			default:
				dst = append(dst, multisetResult(s, set))
			}
			continue
		}
		if a.listAgg(s) {
			dst = append(dst, listResult(s, st[o].(string)))
			continue
		}
		if s.Func == "sum" && a.retract {
			dst = append(dst, sumResult(st[o:o+3]))
			continue
		}
		switch {
		case pairAgg(s.Func):
			dst = append(dst, pairResult(s.Func, st[o:o+6]))
			continue
		case statAgg(s.Func):
			dst = append(dst, statResult(s.Func, st[o:o+3]))
			continue
		case boolAgg(s.Func):
			dst = append(dst, boolResult(s.Func, st[o:o+2]))
			continue
		case offsetAgg(s.Func):
			dst = append(dst, st[o])
			continue
		}
		switch s.Func {
		case "sum":
			if x, ok := st[o].(int64); ok && s.T == catalog.Decimal {
				dst = append(dst, numeric.FromInt64(x))
			} else {
				dst = append(dst, st[o])
			}
		case "avg":
			n := st[o+1].(int64)
			switch {
			case n == 0:
				dst = append(dst, nil)
			case s.T == catalog.Decimal:
				dst = append(dst, decimalAvg(st[o], n))
			default:
				dst = append(dst, st[o].(float64)/float64(n))
			}
		default:
			dst = append(dst, st[o])
		}
	}
	return dst
}

func toFloat(v any) float64 {
	switch x := v.(type) {
	case int64:
		return float64(x)
	case float64:
		return x
	}
	return math.NaN()
}

// Merge folds the state src of other rows into dst, as if Add had
// folded them into dst too: the state of a session window that joins
// two sessions (stream's windower). It is all or nothing, as Add is.
// Merging is for an aggregator over a stream (NewAggregator).
func (a *Aggregator) Merge(dst, src []any) error {
	if a.retract {
		return fmt.Errorf("merging the states of a retracting aggregator")
	}
	for i, s := range a.specs {
		o := a.offsets[i]
		if s.Func == "sum" && !a.multiset(s) && s.T != catalog.Decimal {
			x, xok := dst[o].(int64)
			y, yok := src[o].(int64)
			if xok && yok {
				if _, ok := addInt64(x, y); !ok {
					return ErrOutOfRange
				}
			}
		}
	}
	for i, s := range a.specs {
		o := a.offsets[i]
		if a.multiset(s) {
			pairs := multisetPairs(src[o].(string))
			set := dst[o].(string)
			for k := 0; k < len(pairs); k += 2 {
				set = multisetAdd(set, pairs[k], pairs[k+1].(int64))
			}
			dst[o] = set
			continue
		}
		switch {
		case a.listAgg(s):
			mergeLibrary(s, dst[o:o+1], src[o:o+1])
			continue
		case pairAgg(s.Func):
			mergePair(dst[o:o+6], src[o:o+6])
			continue
		case statAgg(s.Func):
			mergeStat(dst[o:o+3], src[o:o+3])
			continue
		case boolAgg(s.Func):
			dst[o], dst[o+1] = dst[o].(int64)+src[o].(int64), dst[o+1].(int64)+src[o+1].(int64)
			continue
		case offsetAgg(s.Func):
			// Of two sessions' values, the later record's (latest) or
			// the earlier's (earliest), by ROWTIME: offsets of records
			// that may come from several partitions do not compare.
			if src[o+2].(int64) == 0 {
				continue
			}
			later := timeOf(src[o+1]) >= timeOf(dst[o+1])
			if dst[o+2].(int64) == 0 || later == (s.Func == "latest_by_offset") {
				copy(dst[o:o+3], src[o:o+3])
			}
			continue
		}
		switch s.Func {
		case "count":
			dst[o] = dst[o].(int64) + src[o].(int64)
		case "sum":
			dst[o] = sumAdd(dst[o], src[o])
		case "avg":
			if s.T == catalog.Decimal {
				dst[o] = decimalSum(dst[o], toDecimal(src[o]), 1)
			} else {
				dst[o] = dst[o].(float64) + toFloat(src[o])
			}
			dst[o+1] = dst[o+1].(int64) + src[o+1].(int64)
		case "min":
			if src[o] != nil && (dst[o] == nil || Compare(src[o], dst[o]) < 0) {
				dst[o] = src[o]
			}
		case "max":
			if src[o] != nil && (dst[o] == nil || Compare(src[o], dst[o]) > 0) {
				dst[o] = src[o]
			}
		}
	}
	return nil
}

// timeOf is a ROWTIME of an offset aggregate's state, the least time for
// NULL.
func timeOf(v any) int64 {
	if t, ok := v.(int64); ok {
		return t
	}
	return math.MinInt64
}

// sumAdd returns a sum's state plus v, a value or another sum of the
// same aggregate (nil: none). An integer sum past BIGINT goes on as a
// numeric, where the aggregate's type is numeric; a view's BIGINT sum
// has been checked not to overflow before.
func sumAdd(sum, v any) any {
	switch x := v.(type) {
	case int64:
		switch s := sum.(type) {
		case nil:
			return x
		case int64:
			if r, ok := addInt64(x, s); ok {
				return r
			}
			return decimalSum(numeric.FromInt64(s), numeric.FromInt64(x), 1)
		case *apd.Decimal:
			return decimalSum(s, numeric.FromInt64(x), 1)
		}
	case float64:
		if s, ok := sum.(float64); ok {
			return s + x
		}
		return x
	case *apd.Decimal:
		if s, ok := sum.(int64); ok {
			return decimalSum(numeric.FromInt64(s), x, 1)
		}
		return decimalSum(sum, x, 1)
	}
	return sum
}

// stringAgg is a view's string_agg of the multiset set: its values in
// their order, each as often as it came, joined by the aggregate's
// constant delimiter (the planner allows no other in a view); NULL when
// there are none.
func stringAgg(set string, s planner.AggSpec) any {
	pairs := multisetPairs(set)
	if len(pairs) == 0 {
		return nil
	}
	sep := ""
	if k, ok := s.Arg2.(*planner.Const); ok {
		sep, _ = k.V.(string)
	}
	var b strings.Builder
	first := true
	for i := 0; i < len(pairs); i += 2 {
		v, _ := pairs[i].(string)
		for n := pairs[i+1].(int64); n > 0; n-- {
			if !first {
				b.WriteString(sep)
			}
			first = false
			b.WriteString(v)
		}
	}
	return b.String()
}
