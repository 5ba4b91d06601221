package planner

import "github.com/basindb/basin/catalog"

// Pushdown into the reads of relations.
//
// A stream, table or view a query of the relational engine names is read
// as a pull query (RelationRel.Scan). The conditions on that relation
// alone go into that pull query, where they become what a SELECT of the
// relation makes of them: a key lookup, key lookups of an IN list, a
// pin to one partition (_partition = N), or a filter applied where each
// partition is read. So a subquery or a join that names one key of a
// view reads one partition of it, not all of them. A condition reads
// only the relation's row, constants and parameters: one that reads an
// enclosing query's row (a correlated subquery) or holds a subquery
// stays where it is, and the relation is then read whole, once per
// statement. An uncorrelated scalar subquery is a value known before the
// read: it is run first and handed to the read (RelationRel.Init, as
// Postgres's InitPlan), so "k = (SELECT ...)" is a key lookup too.

// pushIntoReads pushes the conditions of a block's filter and of the
// leaf filters optimizeJoins made into the reads of the relations they
// are on, returning the block's input and what remains of its filter.
func pushIntoReads(in Rel, filter Scalar) (Rel, Scalar) {
	if r, ok := in.(*RelationRel); ok && filter != nil {
		pushed, rest := r.push(filter)
		return pushed, rest
	}
	return pushLeaves(in), filter
}

// pushLeaves pushes the filters on relations in the joins of in.
func pushLeaves(in Rel) Rel {
	switch r := in.(type) {
	case *FilterRel:
		if rel, ok := r.In.(*RelationRel); ok {
			pushed, rest := rel.push(r.Cond)
			if rest == nil {
				return pushed
			}
			return &FilterRel{In: pushed, Cond: rest}
		}
		r.In = pushLeaves(r.In)
	case *JoinRel:
		r.L, r.R = pushLeaves(r.L), pushLeaves(r.R)
	case *PermuteRel:
		r.In = pushLeaves(r.In)
	}
	return in
}

// push returns r reading only the rows that the conjuncts of cond (over
// r's row) it can take keep, and the conjuncts left (nil: none).
func (r *RelationRel) push(cond Scalar) (*RelationRel, Scalar) {
	var in, rest []Scalar
	init := r.Init
	for _, c := range splitAnd(cond) {
		switch {
		case readsRowOnly(c):
			in = append(in, c)
		case initOnly(c):
			// Each subquery becomes a value the read is given.
			c = mapScalar(c, func(x Scalar) Scalar {
				if sub, ok := x.(*SubLink); ok {
					init = append(init[:len(init):len(init)], sub)
					return &InitRef{I: len(init) - 1, T: sub.T}
				}
				return x
			})
			in = append(in, c)
		default:
			rest = append(rest, c)
		}
	}
	var left Scalar
	if len(rest) > 0 {
		left = andAll(rest)
	}
	if len(in) == 0 {
		return r, left
	}
	scan := *r.Scan
	if scan.Filter != nil {
		in = append([]Scalar{scan.Filter}, in...)
	}
	f := andAll(in)
	scan.Filter = f
	if r.Rel.Materialized() {
		scan.Lookup = keyLookup(r.Rel, f)
		if scan.Lookup == nil {
			scan.LookupIn = keyIn(r.Rel, f)
		}
		scan.Range = nil
		if scan.Lookup == nil && scan.LookupIn == nil {
			scan.Range = keyRange(r.Rel, f)
		}
		scan.Partition = partitionPin(r.Rel, f)
	}
	return &RelationRel{Rel: r.Rel, Scan: &scan, Init: init, Pseudo: r.Pseudo, Used: r.Used}, left
}

// initOnly reports whether c reads nothing but its row, constants,
// parameters and uncorrelated scalar subqueries (which the read can be
// given as values) and holds at least one such subquery.
func initOnly(c Scalar) bool {
	ok, subs := true, 0
	walkScalar(c, func(x Scalar) {
		switch x := x.(type) {
		case *SubLink:
			// Its query is its own: a correlated one reads this row.
			if x.Kind != SubLinkScalar || x.Query.Correlated {
				ok = false
			}
			subs++
		case *OuterRef, *srfSlot, *winSlot, *aggSlot:
			ok = false
		}
	})
	return ok && subs > 0 && c.Type() == catalog.Boolean
}

// readsRowOnly reports whether c reads nothing but its row, constants
// and parameters: no enclosing query's row, no subquery, no aggregate,
// window or set-returning function's result.
func readsRowOnly(c Scalar) bool {
	ok := true
	walkScalar(c, func(x Scalar) {
		switch x.(type) {
		case *OuterRef, *SubLink, *srfSlot, *winSlot, *aggSlot:
			ok = false
		}
	})
	return ok && c.Type() == catalog.Boolean
}
