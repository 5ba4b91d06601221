package query

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/basindb/basin/planner"
)

// TestLibAggsRecompute checks topk, topkdistinct, latest_by_offset and
// earliest_by_offset with a count, on random values with NULLs, against
// their values recomputed from scratch, after every row: a window's
// running frame reads the value and then adds more rows, so reading it
// must not disturb the state.
func TestLibAggsRecompute(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for round := range 200 {
		n := int64(1 + rng.IntN(6))
		keep := rng.IntN(2) == 0
		specs := []planner.AggSpec{
			{Func: "topk", N: n}, {Func: "topkdistinct", N: n},
			{Func: "latest_by_offset", N: n, KeepNulls: keep}, {Func: "earliest_by_offset", N: n, KeepNulls: keep},
			{Func: "collect_set"},
		}
		states := make([]*aggState, len(specs))
		for i, s := range specs {
			states[i] = newAggState(s)
		}
		var seen []any
		for range rng.IntN(30) {
			var v any
			if rng.IntN(4) > 0 {
				v = int64(rng.IntN(10))
			}
			seen = append(seen, v)
			for i, st := range states {
				if err := st.add(v, nil); err != nil {
					t.Fatal(err)
				}
				got, _ := st.result().([]any)
				if want := recompute(specs[i], seen); !slices.Equal(got, want) {
					t.Fatalf("round %d: %s over %v: got %v, want %v", round, specs[i], seen, got, want)
				}
			}
		}
	}
}

// recompute is an aggregate's value over vals from scratch.
func recompute(spec planner.AggSpec, vals []any) []any {
	var nonNull []any
	for _, v := range vals {
		if v != nil {
			nonNull = append(nonNull, v)
		}
	}
	out := []any{}
	switch spec.Func {
	case "topk", "topkdistinct":
		s := slices.Clone(nonNull)
		slices.SortFunc(s, func(a, b any) int { return int(b.(int64) - a.(int64)) })
		if spec.Func == "topkdistinct" {
			s = slices.Compact(s)
		}
		out = append(out, s[:min(len(s), int(spec.N))]...)
	case "latest_by_offset", "earliest_by_offset":
		s := nonNull
		if spec.KeepNulls {
			s = vals
		}
		if spec.Func == "latest_by_offset" {
			out = append(out, s[max(0, len(s)-int(spec.N)):]...)
		} else {
			out = append(out, s[:min(len(s), int(spec.N))]...)
		}
	case "collect_set":
		for _, v := range vals {
			if !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
	}
	return out
}
