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
	"slices"
	"sort"
	"strconv"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/eval"
	"github.com/basindb/basin/internal/jsonb"
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
		if len(spec.Order) == 0 {
			return st.statResult(), nil
		}
	case "avg":
		if spec.T == catalog.Interval && st.n > 0 {
			// interval_div of the sum by the count, as Postgres.
			return eval.DatetimeOp("/", catalog.Interval, st.sum, float64(st.n), nil)
		}
		// With ORDER BY its rows were kept as entries: aggregate them
		// below.
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

// The aggregate library (planner/libaggs.go binds it for views and pull
// queries alike; eval.Aggregator keeps it in views): Postgres's corr,
// covar_pop and covar_samp and ksqlDB's correlation, over
// float8_regr_accum's state; ksqlDB's collect_list, collect_set, topk,
// topkdistinct and histogram; and latest_by_offset and
// earliest_by_offset, over the rows in the order the engine reads them.
// Each is NULL over no rows. A state's result is computed afresh each
// time: a window's running frame reads it, then adds more rows.

// libAgg is a library aggregate's state beyond aggState's: st.n counts
// the rows it took (those a NULL leaves out of the value too, so that
// topk of only NULLs is an empty array, not NULL), st.vals holds the
// values it keeps.
type libAgg struct {
	// regr is float8_regr_accum's N, Sx, Sxx, Sy, Syy, Sxy.
	regr [6]float64
	// idx maps a value's key to its index in st.vals (collect_set) or
	// in keys (histogram).
	idx    map[string]int
	keys   []string
	counts []int64
	// head is where latest_by_offset(x, n)'s ring of st.vals starts
	// once it holds n values; got is set once earliest_by_offset(x)
	// has its value.
	head int
	got  bool
	// kept is what the values kept take, for the query's memory.
	kept int64
}

// libAggregate reports whether fn is one of the library's aggregates.
func libAggregate(fn string) bool {
	switch fn {
	case "corr", "correlation", "covar_pop", "covar_samp", "collect_list", "collect_set", "topk", "topkdistinct", "histogram",
		"latest_by_offset", "earliest_by_offset":
		return true
	}
	return false
}

// keptBytes is what the state's kept values take.
func (st *aggState) keptBytes() int64 {
	if st.lib == nil {
		return 0
	}
	return st.lib.kept
}

// addLib adds a row to a library aggregate: v is its value, v2 the
// second number of corr and the covariances.
func (st *aggState) addLib(v, v2 any) error {
	l, spec := st.lib, st.spec
	pair := spec.Func == "corr" || spec.Func == "correlation" || spec.Func == "covar_pop" || spec.Func == "covar_samp"
	if pair && (v == nil || v2 == nil) {
		return nil // as Postgres: a pair with a NULL is not aggregated
	}
	if st.seen != nil {
		key := []any{v}
		if pair {
			key = append(key, v2)
		}
		k := rowKey(key)
		if st.seen[k] {
			return nil
		}
		st.seen[k] = true
	}
	st.n++
	switch spec.Func {
	case "corr", "correlation", "covar_pop", "covar_samp":
		y, _ := v.(float64)
		x, _ := v2.(float64)
		return l.regrAccum(y, x)
	case "collect_list":
		st.vals = append(st.vals, v)
		l.kept += eval.RowBytes([]any{v})
	case "collect_set":
		k := rowKey([]any{v})
		if _, ok := l.idx[k]; ok {
			return nil
		}
		l.idx[k] = len(st.vals)
		st.vals = append(st.vals, v)
		l.kept += keyBytes(k) + eval.RowBytes([]any{v})
	case "topk", "topkdistinct":
		if v == nil {
			return nil
		}
		// st.vals is the greatest values so far, greatest first, equal
		// ones in the order they came; a value goes after those not
		// less than it.
		i := sort.Search(len(st.vals), func(j int) bool { return eval.Compare(st.vals[j], v) < 0 })
		if spec.Func == "topkdistinct" && i > 0 && eval.Compare(st.vals[i-1], v) == 0 {
			return nil
		}
		if int64(i) >= spec.N {
			return nil
		}
		if int64(len(st.vals)) < spec.N {
			st.vals = append(st.vals, nil)
			l.kept += eval.RowBytes([]any{v})
		}
		copy(st.vals[i+1:], st.vals[i:])
		st.vals[i] = v
	case "histogram":
		if v == nil {
			return nil
		}
		s, _ := v.(string)
		if i, ok := l.idx[s]; ok {
			l.counts[i]++
			return nil
		}
		l.idx[s] = len(l.keys)
		l.keys = append(l.keys, s)
		l.counts = append(l.counts, 1)
		l.kept += keyBytes(s) + int64(len(s)) + 24
	case "latest_by_offset", "earliest_by_offset":
		if v == nil && !spec.KeepNulls {
			return nil
		}
		latest := spec.Func == "latest_by_offset"
		switch {
		case spec.N == 0 && latest:
			st.best = v
		case spec.N == 0:
			if !l.got {
				st.best, l.got = v, true
			}
		case int64(len(st.vals)) < spec.N:
			st.vals = append(st.vals, v)
			l.kept += eval.RowBytes([]any{v})
		case latest:
			// A ring of the last n values: the oldest, at head, makes
			// way.
			st.vals[l.head] = v
			l.head = (l.head + 1) % len(st.vals)
		}
	}
	return nil
}

var errRegrOverflow = pgerr.New(pgerr.NumericValueOutOfRange, "value out of range: overflow")

// regrAccum is Postgres's float8_regr_accum: the Youngs–Cramer update
// of N, Sx, Sxx, Sy, Syy and Sxy with the pair (y, x), failing as it
// does when finite values overflow, and making the sums an infinite or
// NaN value reaches NaN.
func (l *libAgg) regrAccum(y, x float64) error {
	r := &l.regr
	n0, sx0, sy0 := r[0], r[1], r[3]
	n := n0 + 1
	sx, sxx, sy, syy, sxy := sx0+x, r[2], sy0+y, r[4], r[5]
	inf := func(f float64) bool { return math.IsInf(f, 0) }
	if n0 > 0 {
		tmpX, tmpY := x*n-sx, y*n-sy
		scale := 1.0 / (n * n0)
		sxx += tmpX * tmpX * scale
		syy += tmpY * tmpY * scale
		sxy += tmpX * tmpY * scale
		if inf(sx) || inf(sxx) {
			if !inf(sx0) && !inf(x) {
				return errRegrOverflow
			}
			sxx = math.NaN()
		}
		if inf(sy) || inf(syy) {
			if !inf(sy0) && !inf(y) {
				return errRegrOverflow
			}
			syy = math.NaN()
		}
		if inf(sxy) {
			if !inf(sx0) && !inf(x) && !inf(sy0) && !inf(y) {
				return errRegrOverflow
			}
			sxy = math.NaN()
		}
	} else {
		// The first pair leaves the sums of squares 0, unless it is
		// not finite: then they are NaN, not a variance of zero.
		if math.IsNaN(x) || inf(x) {
			sxx, sxy = math.NaN(), math.NaN()
		}
		if math.IsNaN(y) || inf(y) {
			syy, sxy = math.NaN(), math.NaN()
		}
	}
	*r = [6]float64{n, sx, sxx, sy, syy, sxy}
	return nil
}

// libResult is a library aggregate's value: NULL over no rows.
func (st *aggState) libResult() any {
	if st.n == 0 {
		return nil
	}
	l, spec := st.lib, st.spec
	switch spec.Func {
	case "corr", "correlation":
		// float8_corr; Sxx and Syy are never negative.
		n, sxx, syy, sxy := l.regr[0], l.regr[2], l.regr[4], l.regr[5]
		if n < 1 || sxx == 0 || syy == 0 {
			return nil
		}
		return sxy / math.Sqrt(sxx*syy)
	case "covar_pop":
		return l.regr[5] / l.regr[0]
	case "covar_samp":
		if l.regr[0] < 2 {
			return nil
		}
		return l.regr[5] / (l.regr[0] - 1)
	case "histogram":
		vals := make([]jsonb.Value, len(l.counts))
		for i, c := range l.counts {
			vals[i] = jsonb.Value{Kind: jsonb.Number, Str: strconv.FormatInt(c, 10)}
		}
		return catalog.JSONText(jsonb.NewObject(slices.Clone(l.keys), vals, true).Canon().Text())
	case "latest_by_offset", "earliest_by_offset":
		if spec.N == 0 {
			return st.best
		}
		// Oldest first: the ring from its head.
		return append(append(make([]any, 0, len(st.vals)), st.vals[l.head:]...), st.vals[:l.head]...)
	}
	// A copy: topk shifts its values in place, and a window's frame
	// reads the value before more rows come. Empty, not NULL, when
	// every row was NULL.
	return append(make([]any, 0, len(st.vals)), st.vals...)
}
