package eval

import (
	"math"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/planner"
)

// Aggregator folds rows into the state of one group. The state is a flat
// list of values so that it can be stored next to the view row (in Pebble
// and in the changelog) and carried to standbys: a replica restored from
// the changelog can take over aggregation where the active left off.
//
// State layout per aggregate:
//
//	count      [n int64]
//	sum        [sum int64|float64|nil]
//	avg        [sum float64, n int64]
//	min, max   [v]
type Aggregator struct {
	specs []planner.AggSpec
	args  []Expr
	// offsets[i] is where aggregate i's state starts.
	offsets []int
	width   int
}

// NewAggregator compiles the aggregates of a plan.
func NewAggregator(specs []planner.AggSpec) *Aggregator {
	a := &Aggregator{specs: specs}
	for _, s := range specs {
		a.offsets = append(a.offsets, a.width)
		if s.Arg != nil {
			a.args = append(a.args, Compile(s.Arg))
		} else {
			a.args = append(a.args, nil)
		}
		a.width += stateWidth(s.Func)
	}
	return a
}

func stateWidth(fn string) int {
	if fn == "avg" {
		return 2
	}
	return 1
}

// Width is the number of state values.
func (a *Aggregator) Width() int { return a.width }

// Init returns the state of an empty group.
func (a *Aggregator) Init() []any {
	st := make([]any, a.width)
	for i, s := range a.specs {
		o := a.offsets[i]
		switch s.Func {
		case "count":
			st[o] = int64(0)
		case "avg":
			st[o], st[o+1] = float64(0), int64(0)
		}
	}
	return st
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
	var buf [8]any
	vals := buf[:0]
	if len(a.specs) > len(buf) {
		vals = make([]any, 0, len(a.specs))
	}
	for i := range a.specs {
		var v any
		if a.args[i] != nil { // not COUNT(*)
			var err error
			if v, err = a.args[i](row, env); err != nil {
				return err
			}
		}
		vals = append(vals, v)
	}
	for i, s := range a.specs {
		if s.Func != "sum" {
			continue
		}
		if x, ok := vals[i].(int64); ok && st[a.offsets[i]] != nil {
			if _, ok := addInt64(x, st[a.offsets[i]].(int64)); !ok {
				return ErrOutOfRange
			}
		}
	}
	for i, s := range a.specs {
		o := a.offsets[i]
		if a.args[i] == nil { // COUNT(*)
			st[o] = st[o].(int64) + 1
			continue
		}
		v := vals[i]
		if v == nil {
			continue // aggregates skip NULLs
		}
		switch s.Func {
		case "count":
			st[o] = st[o].(int64) + 1
		case "sum":
			switch x := v.(type) {
			case int64:
				if st[o] == nil {
					st[o] = x
				} else {
					st[o], _ = addInt64(x, st[o].(int64))
				}
			case float64:
				if st[o] == nil {
					st[o] = x
				} else {
					st[o] = st[o].(float64) + x
				}
			}
		case "avg":
			st[o] = st[o].(float64) + toFloat(v)
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

// addInt64 returns x + y and whether it did not overflow.
func addInt64(x, y int64) (int64, bool) {
	z := x + y
	return z, (z > y) == (x > 0)
}

// Results appends the aggregates' results for st to dst.
func (a *Aggregator) Results(dst []any, st []any) []any {
	for i, s := range a.specs {
		o := a.offsets[i]
		switch s.Func {
		case "avg":
			n := st[o+1].(int64)
			if n == 0 {
				dst = append(dst, nil)
			} else {
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
