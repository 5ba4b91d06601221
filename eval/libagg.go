package eval

import (
	"encoding/binary"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/jsonb"
	"github.com/basindb/basin/materialize"
	"github.com/basindb/basin/planner"
)

// The aggregate library's states (planner/libaggs.go):
//
//	array_agg, collect_list  over a stream [list]: every value, NULLs too,
//	                         in the order they came; over a table the
//	                         values' multiset, so the array is in value
//	                         order (NULLs last)
//	collect_set              over a stream [list] of the distinct values
//	                         in the order they first came; over a table
//	                         the multiset
//	topk, topkdistinct       over a stream [list] of the k greatest
//	                         values (distinct ones), greatest first; over
//	                         a table the multiset
//	histogram                [multiset]
//	corr, correlation,       [n int64, Sx, Sxx, Sy, Syy, Sxy float64]:
//	covar_pop, covar_samp    Postgres's float8_regr_accum state, updated
//	                         by the Youngs–Cramer method, taken back by
//	                         its inverse
//	latest_by_offset(x, n),  [list] of value, ROWTIME pairs: the last (or
//	earliest_by_offset(x, n) first) n, oldest first
//
// A list is a string holding the row encoding of its values, as a
// multiset's does (multiset.go) but in the values' order and without
// counts.

// listAgg reports whether aggregate s keeps a list of values.
func (a *Aggregator) listAgg(s planner.AggSpec) bool {
	switch s.Func {
	case "array_agg", "collect_list", "collect_set", "topk", "topkdistinct":
		return !a.retract && !s.Distinct
	case "latest_by_offset", "earliest_by_offset":
		return s.N > 0
	}
	return false
}

// libraryMultiset reports whether aggregate s of the library keeps a
// multiset of its values.
func (a *Aggregator) libraryMultiset(s planner.AggSpec) bool {
	switch s.Func {
	case "histogram":
		return true
	case "array_agg", "collect_list", "collect_set", "topk", "topkdistinct":
		return a.retract
	}
	return false
}

// pairAgg reports whether fn is corr, correlation, covar_pop or
// covar_samp, whose state is [n, Sx, Sxx, Sy, Syy, Sxy].
func pairAgg(fn string) bool {
	switch fn {
	case "corr", "correlation", "covar_pop", "covar_samp":
		return true
	}
	return false
}

// listValues decodes a list.
func listValues(list string) []any {
	if list == "" {
		return nil
	}
	vals, err := materialize.DecodeRow([]byte(list))
	if err != nil {
		panic(err) // written by setList, listAppend or multisetAdd
	}
	return vals
}

// setList encodes vals as a list.
func setList(vals []any) string {
	if len(vals) == 0 {
		return ""
	}
	b, err := materialize.EncodeRow(vals)
	if err != nil {
		panic(err) // the values are a column's, which the row encoding holds
	}
	return string(b)
}

// listLen is the number of values in list, read from its count
// without decoding them.
func listLen(list string) uint64 {
	n, _ := binary.Uvarint([]byte(list))
	return n
}

// listAppend returns list with v after its values, without decoding
// them: the count in front grows and v's encoding goes at the end.
func listAppend(list string, v any) string {
	one, err := materialize.EncodeRow([]any{v})
	if err != nil {
		panic(err)
	}
	if list == "" {
		return string(one)
	}
	n, k := binary.Uvarint([]byte(list))
	out := binary.AppendUvarint(make([]byte, 0, len(list)+len(one)+1), n+1)
	out = append(out, list[k:]...)
	return string(append(out, one[1:]...)) // one's count, 1, is a byte
}

// addLibrary folds v, aggregate s's argument of a row (ts its ROWTIME
// for the offset aggregates), into its state st, a stream's.
func addLibrary(s planner.AggSpec, st []any, v, ts any) {
	list, _ := st[0].(string)
	switch s.Func {
	case "array_agg", "collect_list":
		st[0] = listAppend(list, v)
	case "collect_set":
		vals := listValues(list)
		if !slices.ContainsFunc(vals, func(x any) bool { return CompareNullable(x, v, false) == 0 }) {
			st[0] = listAppend(list, v)
		}
	case "topk", "topkdistinct":
		st[0] = setList(topInsert(listValues(list), []any{v}, s))
	case "latest_by_offset":
		vals := append(listValues(list), v, ts)
		if len(vals) > 2*int(s.N) {
			vals = vals[len(vals)-2*int(s.N):]
		}
		st[0] = setList(vals)
	case "earliest_by_offset":
		if listLen(list) < 2*uint64(s.N) {
			st[0] = listAppend(listAppend(list, v), ts)
		}
	}
}

// topInsert returns top, a topk's values (greatest first), with more
// inserted and only the k greatest kept.
func topInsert(top, more []any, s planner.AggSpec) []any {
	for _, v := range more {
		i, found := slices.BinarySearchFunc(top, v, func(x, v any) int { return Compare(v, x) })
		if found && s.Func == "topkdistinct" {
			continue
		}
		if i >= int(s.N) {
			continue
		}
		top = slices.Insert(top, i, v)
		if len(top) > int(s.N) {
			top = top[:s.N]
		}
	}
	return top
}

// mergeLibrary folds the state src of a later session into dst, a
// stream's (Aggregator.Merge).
func mergeLibrary(s planner.AggSpec, dst, src []any) {
	a, b := listValues(dst[0].(string)), listValues(src[0].(string))
	switch s.Func {
	case "array_agg", "collect_list":
		dst[0] = setList(append(a, b...))
	case "collect_set":
		for _, v := range b {
			if !slices.ContainsFunc(a, func(x any) bool { return CompareNullable(x, v, false) == 0 }) {
				a = append(a, v)
			}
		}
		dst[0] = setList(a)
	case "topk", "topkdistinct":
		dst[0] = setList(topInsert(a, b, s))
	case "latest_by_offset", "earliest_by_offset":
		// The pairs of both by ROWTIME, the earlier session's first
		// among equals; then the last (first) n.
		pairs := make([][2]any, 0, (len(a)+len(b))/2)
		for _, l := range [][]any{a, b} {
			for i := 0; i+1 < len(l); i += 2 {
				pairs = append(pairs, [2]any{l[i], l[i+1]})
			}
		}
		slices.SortStableFunc(pairs, func(x, y [2]any) int {
			tx, ty := timeOf(x[1]), timeOf(y[1])
			return cmp3(tx < ty, tx > ty)
		})
		if n := int(s.N); len(pairs) > n {
			if s.Func == "latest_by_offset" {
				pairs = pairs[len(pairs)-n:]
			} else {
				pairs = pairs[:n]
			}
		}
		out := make([]any, 0, 2*len(pairs))
		for _, p := range pairs {
			out = append(out, p[0], p[1])
		}
		dst[0] = setList(out)
	}
}

// listResult is the value of a list aggregate: an array.
func listResult(s planner.AggSpec, list string) any {
	vals := listValues(list)
	switch s.Func {
	case "latest_by_offset", "earliest_by_offset":
		out := make([]any, 0, len(vals)/2)
		for i := 0; i < len(vals); i += 2 {
			out = append(out, vals[i])
		}
		return out
	case "array_agg":
		if len(vals) == 0 {
			return nil
		}
	}
	if vals == nil {
		vals = []any{}
	}
	return vals
}

// multisetResult is the value of a library aggregate that keeps a
// multiset (histogram; the array aggregates over a table).
func multisetResult(s planner.AggSpec, set string) any {
	pairs := multisetPairs(set)
	switch s.Func {
	case "histogram":
		return histogram(pairs)
	case "array_agg":
		if len(pairs) == 0 {
			return nil
		}
	}
	out := []any{}
	switch s.Func {
	case "collect_set":
		for i := 0; i < len(pairs); i += 2 {
			out = append(out, pairs[i])
		}
	case "topk", "topkdistinct":
		for i := len(pairs) - 2; i >= 0 && len(out) < int(s.N); i -= 2 {
			for n := pairs[i+1].(int64); n > 0 && len(out) < int(s.N); n-- {
				out = append(out, pairs[i])
				if s.Func == "topkdistinct" {
					break
				}
			}
		}
	default: // array_agg, collect_list
		for i := 0; i < len(pairs); i += 2 {
			for n := pairs[i+1].(int64); n > 0; n-- {
				out = append(out, pairs[i])
			}
		}
	}
	return out
}

// histogram is a JSONB object of each value (as text) and its count.
func histogram(pairs []any) any {
	var b strings.Builder
	b.WriteByte('{')
	for i := 0; i < len(pairs); i += 2 {
		if i > 0 {
			b.WriteString(", ")
		}
		v, _ := pairs[i].(string)
		b.WriteString(jsonb.Quote(v))
		b.WriteString(": ")
		b.WriteString(strconv.FormatInt(pairs[i+1].(int64), 10))
	}
	b.WriteByte('}')
	text, err := jsonb.Canonical(b.String())
	if err != nil {
		panic(err) // quoted strings and integers
	}
	return catalog.JSONText(text)
}

// addPair folds the pair (y, x) into the state [n, Sx, Sxx, Sy, Syy,
// Sxy] of corr and the covariances, or with sign -1 takes it back out.
// As Postgres's float8_regr_accum: X is the second argument.
func addPair(st []any, y, x float64, sign int64) {
	n := st[0].(int64)
	sx, sxx, sy, syy, sxy := st[1].(float64), st[2].(float64), st[3].(float64), st[4].(float64), st[5].(float64)
	if sign < 0 {
		if n <= 1 {
			st[0], st[1], st[2], st[3], st[4], st[5] = int64(0), 0.0, 0.0, 0.0, 0.0, 0.0
			return
		}
		tx, ty := x*float64(n)-sx, y*float64(n)-sy
		scale := 1 / (float64(n) * float64(n-1))
		st[0], st[1], st[3] = n-1, sx-x, sy-y
		st[2], st[4], st[5] = max(sxx-tx*tx*scale, 0), max(syy-ty*ty*scale, 0), sxy-tx*ty*scale
		return
	}
	n++
	sx += x
	sy += y
	if n > 1 {
		tx, ty := x*float64(n)-sx, y*float64(n)-sy
		scale := 1 / (float64(n) * float64(n-1))
		sxx += tx * tx * scale
		syy += ty * ty * scale
		sxy += tx * ty * scale
	}
	st[0], st[1], st[2], st[3], st[4], st[5] = n, sx, sxx, sy, syy, sxy
}

// mergePair folds the pair state src into dst (float8_regr_combine).
func mergePair(dst, src []any) {
	n1, n2 := dst[0].(int64), src[0].(int64)
	switch {
	case n2 == 0:
		return
	case n1 == 0:
		copy(dst, src)
		return
	}
	f1, f2, n := float64(n1), float64(n2), float64(n1+n2)
	sx1, sx2, sy1, sy2 := dst[1].(float64), src[1].(float64), dst[3].(float64), src[3].(float64)
	tx, ty := sx1/f1-sx2/f2, sy1/f1-sy2/f2
	dst[0], dst[1], dst[3] = n1+n2, sx1+sx2, sy1+sy2
	dst[2] = dst[2].(float64) + src[2].(float64) + f1*f2*tx*tx/n
	dst[4] = dst[4].(float64) + src[4].(float64) + f1*f2*ty*ty/n
	dst[5] = dst[5].(float64) + src[5].(float64) + f1*f2*tx*ty/n
}

// pairResult is corr's or a covariance's value from its state, NULL
// where Postgres's is.
func pairResult(fn string, st []any) any {
	n := st[0].(int64)
	sxx, syy, sxy := st[2].(float64), st[4].(float64), st[5].(float64)
	switch fn {
	case "covar_pop":
		if n < 1 {
			return nil
		}
		return sxy / float64(n)
	case "covar_samp":
		if n < 2 {
			return nil
		}
		return sxy / float64(n-1)
	}
	if n < 1 || sxx == 0 || syy == 0 {
		return nil
	}
	return sxy / math.Sqrt(sxx*syy)
}
