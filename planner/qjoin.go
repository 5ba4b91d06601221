package planner

import (
	"sort"
	"strings"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/sql"
)

// Join ordering for catalog queries.
//
// Drivers write catalog queries as FROM lists with the join conditions
// in WHERE (pgjdbc's getImportedKeys joins nine relations that way).
// Joined in FROM order as cross products and filtered afterwards, such a
// query builds billions of rows. So a block's inner joins are flattened
// into leaves and conditions, and rebuilt:
//
//  1. WHERE and inner ON conditions are split into conjuncts; each knows
//     the leaves it reads.
//  2. A conjunct of one leaf filters that leaf before any join.
//  3. Leaves are joined greedily: first a leaf with a filter, then each
//     time a leaf that a conjunct connects to those already joined (an
//     equality first), so that every join has a condition and, for an
//     equality of columns, runs as a hash join.
//  4. Each conjunct is applied at the first join where all its leaves
//     are present; a permutation restores the row layout the block's
//     expressions were bound to.
//
// Conjuncts with subqueries read the whole row of the block (their
// OuterRefs index it), so they stay in the block's filter, as do outer
// joins, which are leaves of their own.

// FilterRel keeps the rows of In for which Cond is true.
type FilterRel struct {
	In   Rel
	Cond Scalar
}

// PermuteRel reorders columns: output column i is In's column Map[i].
type PermuteRel struct {
	In      Rel
	Map     []int
	Columns []catalog.Column
}

func (r *FilterRel) Cols() []catalog.Column  { return r.In.Cols() }
func (r *PermuteRel) Cols() []catalog.Column { return r.Columns }

func (r *FilterRel) explain(b *strings.Builder, in string, ann Annotator) {
	line(b, in, ann, r, "", "Filter %s", r.Cond)
	r.In.explain(b, in, ann)
}

func (r *PermuteRel) explain(b *strings.Builder, in string, ann Annotator) { r.In.explain(b, in, ann) }

// leaf is a relation joined as a unit, with its place in the block's
// row.
type leaf struct {
	rel   Rel
	start int
	n     int
}

// conjunct is one AND-ed condition over the block's row.
type conjunct struct {
	cond   Scalar
	leaves []int // indexes into the leaves it reads; nil for none
	late   bool  // must be evaluated over the block's own row
	equi   bool
	used   bool
}

// optimizeJoins reorders the inner joins of in (a block's FROM) and
// pushes filter's conjuncts into them. It returns the new input and
// what remains of the filter.
func optimizeJoins(in Rel, filter Scalar) (Rel, Scalar) {
	var leaves []leaf
	var conds []Scalar
	ok := true
	var flatten func(r Rel, base int)
	flatten = func(r Rel, base int) {
		j, isJoin := r.(*JoinRel)
		if !isJoin || j.Lateral || j.Kind == sql.JoinLeft || j.Kind == sql.JoinRight || j.Kind == sql.JoinFull {
			leaves = append(leaves, leaf{rel: r, start: base, n: len(r.Cols())})
			return
		}
		flatten(j.L, base)
		flatten(j.R, base+len(j.L.Cols()))
		if j.On != nil {
			if base != 0 && hasSubLink(j.On) {
				ok = false
			}
			conds = append(conds, shiftCols(j.On, base))
		}
	}
	flatten(in, 0)
	if !ok || len(leaves) < 2 {
		return in, filter
	}
	if filter != nil {
		conds = append(conds, filter)
	}
	var cs []*conjunct
	for _, c := range conds {
		for _, part := range splitAnd(c) {
			cs = append(cs, analyze(part, leaves))
		}
	}

	// Filters of one leaf go on the leaf.
	filtered := make([]bool, len(leaves))
	for _, c := range cs {
		if c.late || len(c.leaves) != 1 {
			continue
		}
		l := &leaves[c.leaves[0]]
		l.rel = &FilterRel{In: l.rel, Cond: shiftCols(c.cond, -l.start)}
		c.used = true
		filtered[c.leaves[0]] = true
	}

	// Greedy order.
	joined := make([]bool, len(leaves))
	var order []int
	first := 0
	for i := range leaves {
		if filtered[i] {
			first = i
			break
		}
	}
	order = append(order, first)
	joined[first] = true
	for len(order) < len(leaves) {
		best, bestScore := -1, -1
		for i := range leaves {
			if joined[i] {
				continue
			}
			score := 0
			for _, c := range cs {
				if c.used || c.late || !c.reads(i) || !c.onlyWith(i, joined) {
					continue
				}
				if c.equi {
					score += 4
				} else {
					score++
				}
			}
			if filtered[i] {
				score += 2
			}
			if score > bestScore {
				best, bestScore = i, score
			}
		}
		order = append(order, best)
		joined[best] = true
	}

	// Build the chain; colPos maps a block column to the chain's.
	colPos := map[int]int{}
	var chain Rel
	width := 0
	present := make([]bool, len(leaves))
	for _, li := range order {
		l := leaves[li]
		for k := 0; k < l.n; k++ {
			colPos[l.start+k] = width + k
		}
		present[li] = true
		if chain == nil {
			chain, width = l.rel, l.n
			continue
		}
		var on []Scalar
		for _, c := range cs {
			if c.used || c.late || !c.within(present) {
				continue
			}
			on = append(on, remapCols(c.cond, colPos))
			c.used = true
		}
		j := &JoinRel{Kind: sql.JoinCross, L: chain, R: l.rel, cols: concatCols(chain.Cols(), l.rel.Cols())}
		if len(on) > 0 {
			j.Kind, j.On = sql.JoinInner, andAll(on)
			j.Equi = equiConds(j.On, width)
		}
		chain, width = j, width+l.n
	}
	perm := make([]int, len(in.Cols()))
	for i := range perm {
		perm[i] = colPos[i]
	}
	var rest []Scalar
	for _, c := range cs {
		if !c.used {
			rest = append(rest, c.cond)
		}
	}
	var out Rel = &PermuteRel{In: chain, Map: perm, Columns: in.Cols()}
	if identity(perm) {
		out = chain
	}
	if len(rest) == 0 {
		return out, nil
	}
	return out, andAll(rest)
}

func identity(perm []int) bool {
	for i, p := range perm {
		if i != p {
			return false
		}
	}
	return true
}

func (c *conjunct) reads(i int) bool {
	for _, l := range c.leaves {
		if l == i {
			return true
		}
	}
	return false
}

// onlyWith reports whether every leaf c reads is i or joined.
func (c *conjunct) onlyWith(i int, joined []bool) bool {
	for _, l := range c.leaves {
		if l != i && !joined[l] {
			return false
		}
	}
	return len(c.leaves) > 1
}

func (c *conjunct) within(present []bool) bool {
	for _, l := range c.leaves {
		if !present[l] {
			return false
		}
	}
	return true
}

// analyze finds the leaves a conjunct reads.
func analyze(s Scalar, leaves []leaf) *conjunct {
	c := &conjunct{cond: s}
	seen := map[int]bool{}
	walkScalar(s, func(x Scalar) {
		switch x := x.(type) {
		case *ColRef:
			for i, l := range leaves {
				if x.Idx >= l.start && x.Idx < l.start+l.n && !seen[i] {
					seen[i] = true
					c.leaves = append(c.leaves, i)
				}
			}
		case *SubLink, *srfSlot, *winSlot, *aggSlot:
			c.late = true
		}
	})
	sort.Ints(c.leaves)
	if len(c.leaves) == 0 {
		c.late = true
	}
	if b, ok := s.(*Binary); ok && b.Op == "=" {
		_, l := b.L.(*ColRef)
		_, r := b.R.(*ColRef)
		c.equi = l && r
	}
	return c
}

// walkScalar calls fn for s and every scalar under it (not entering
// subqueries' plans).
func walkScalar(s Scalar, fn func(Scalar)) {
	if s == nil {
		return
	}
	fn(s)
	mapChildren(s, func(c Scalar) Scalar {
		walkScalar(c, fn)
		return c
	})
}

func hasSubLink(s Scalar) bool {
	found := false
	walkScalar(s, func(x Scalar) {
		if _, ok := x.(*SubLink); ok {
			found = true
		}
	})
	return found
}

// splitAnd splits a condition into its AND-ed conjuncts.
func splitAnd(s Scalar) []Scalar {
	if b, ok := s.(*Binary); ok && b.Op == "AND" {
		return append(splitAnd(b.L), splitAnd(b.R)...)
	}
	return []Scalar{s}
}

func andAll(ss []Scalar) Scalar {
	out := ss[0]
	for _, s := range ss[1:] {
		out = &Binary{Op: "AND", L: out, R: s, T: catalog.Boolean}
	}
	return out
}

// shiftCols adds d to every column index of s.
func shiftCols(s Scalar, d int) Scalar {
	if d == 0 {
		return s
	}
	return mapScalar(s, func(x Scalar) Scalar {
		if c, ok := x.(*ColRef); ok {
			return &ColRef{Idx: c.Idx + d, T: c.T, Name: c.Name}
		}
		return x
	})
}

// remapCols maps every column index of s through m.
func remapCols(s Scalar, m map[int]int) Scalar {
	return mapScalar(s, func(x Scalar) Scalar {
		if c, ok := x.(*ColRef); ok {
			return &ColRef{Idx: m[c.Idx], T: c.T, Name: c.Name}
		}
		return x
	})
}
