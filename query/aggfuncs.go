package query

// The aggregates beyond count, sum, avg, min and max that need more than
// one pass or more than a running value: an aggregate with ORDER BY
// keeps its rows until the group ends, sorts them and aggregates them in
// that order; the ordered-set aggregates (percentile_cont,
// percentile_disc, mode) sort their values; the statistical ones keep
// Postgres's float8 accumulators (N, Sx, Sxx with the Youngs–Cramer
// update), so their results match Postgres's to the last digit.

import (
	"math"
	"sort"
	"strconv"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/eval"
	"github.com/basindb/basin/internal/pgerr"
)

// orderedEntry is one row of an aggregate with ORDER BY.
type orderedEntry struct {
	v, v2 any
	keys  []any
}

func (st *aggState) addOrdered(v, v2 any, keys []any) {
	st.entries = append(st.entries, orderedEntry{v: v, v2: v2, keys: keys})
}

// addStat adds a value to a statistical aggregate (st.n already counts
// it): st.m is Sx, st.m2 Sxx.
func (st *aggState) addStat(v any) {
	x, ok := v.(float64)
	if !ok {
		return
	}
	n := float64(st.n)
	st.m += x
	if n > 1 {
		tmp := x*n - st.m
		st.m2 += tmp * tmp / (n * (n - 1))
	}
}

// finish returns the aggregate's value at the end of its group.
func (st *aggState) finish() (any, error) {
	spec := st.spec
	switch spec.Func {
	case "grouping":
		return st.sum, nil // its mask, set with the group
	case "percentile_cont", "percentile_disc", "mode":
		return st.orderedSet()
	case "stddev", "stddev_samp", "variance", "var_samp", "stddev_pop", "var_pop":
		return st.statResult(), nil
	}
	if len(spec.Order) == 0 {
		return st.result(), nil
	}
	sort.SliceStable(st.entries, func(i, j int) bool {
		return compareKeys(st.entries[i].keys, st.entries[j].keys, spec.Order) < 0
	})
	spec.Order = nil
	fresh := newAggState(spec)
	for _, e := range st.entries {
		if err := fresh.add(e.v, e.v2); err != nil {
			return nil, err
		}
	}
	return fresh.finish()
}

func (st *aggState) statResult() any {
	n := float64(st.n)
	pop := st.spec.Func == "stddev_pop" || st.spec.Func == "var_pop"
	if n == 0 || !pop && n == 1 {
		return nil
	}
	var v float64
	if pop {
		v = st.m2 / n
	} else {
		v = st.m2 / (n - 1)
	}
	if v < 0 {
		v = 0
	}
	switch st.spec.Func {
	case "stddev", "stddev_samp", "stddev_pop":
		return math.Sqrt(v)
	}
	return v
}

// orderedSet computes percentile_cont, percentile_disc or mode over the
// group's values in the WITHIN GROUP order.
func (st *aggState) orderedSet() (any, error) {
	var vals []orderedEntry
	for _, e := range st.entries {
		if e.v != nil {
			vals = append(vals, e)
		}
	}
	if len(vals) == 0 {
		return nil, nil
	}
	sort.SliceStable(vals, func(i, j int) bool { return compareKeys(vals[i].keys, vals[j].keys, st.spec.Order) < 0 })
	if st.spec.Func == "mode" {
		best, bestN, run := vals[0].v, 0, 0
		for i, e := range vals {
			if i > 0 && eval.Compare(e.v, vals[i-1].v) == 0 {
				run++
			} else {
				run = 1
			}
			if run > bestN {
				best, bestN = e.v, run
			}
		}
		return best, nil
	}
	fv := vals[0].v2
	if fv == nil {
		return nil, nil
	}
	f := fv.(float64)
	if f < 0 || f > 1 || math.IsNaN(f) {
		return nil, pgerr.New(pgerr.NumericValueOutOfRange, "percentile value %s is not between 0 and 1", strconv.FormatFloat(f, 'g', -1, 64))
	}
	n := len(vals)
	if st.spec.Func == "percentile_disc" {
		i := int(math.Ceil(f*float64(n))) - 1
		return vals[max(i, 0)].v, nil
	}
	pos := f * float64(n-1)
	lo, hi := int(math.Floor(pos)), int(math.Ceil(pos))
	a, b := vals[lo].v, vals[hi].v
	frac := pos - float64(lo)
	switch a := a.(type) {
	case float64:
		if lo == hi {
			return a, nil
		}
		return a + frac*(b.(float64)-a), nil
	case catalog.IntervalVal:
		if lo == hi {
			return a, nil
		}
		bi := b.(catalog.IntervalVal)
		lerp := func(x, y float64) float64 { return x + frac*(y-x) }
		return catalog.IntervalVal{Months: int32(math.Round(lerp(float64(a.Months), float64(bi.Months)))),
			Days:   int32(math.Round(lerp(float64(a.Days), float64(bi.Days)))),
			Micros: int64(math.Round(lerp(float64(a.Micros), float64(bi.Micros))))}, nil
	}
	return a, nil
}
