package planner

// Pulling up a derived table.
//
// BI tools wrap a dataset's SQL in a derived table and query that:
// Superset's SELECT ... FROM (SELECT * FROM v) AS virtual_table,
// Metabase's nested questions. When the derived table is a plain
// projection and filter of one relation, the SELECT over it is planned
// as a SELECT of that relation, as Postgres pulls up such subqueries:
// the outer query's expressions read the inner one's select list
// directly, its WHERE joins the inner WHERE in the relation's read (so
// a key lookup or a partition pin in the outer query reaches the
// partitions), and the read rule can then fold the whole into that
// read.
//
// The inner query must have no grouping, aggregates, window or
// set-returning functions, DISTINCT, ORDER BY, LIMIT or OFFSET, no
// reference to an enclosing query, and its select list nothing volatile
// (pulled up, an expression may run more than once per row). The outer
// query must have no window or set-returning functions and no
// subqueries (a subquery's references into the derived table's row would
// need rewriting too); anything else stays a derived table.

// volatileFuncs may give another value each time they are called.
var volatileFuncs = map[string]bool{
	"random": true, "gen_random_uuid": true, "clock_timestamp": true, "timeofday": true,
	"set_config": true, "pg_sleep": true, "pg_cancel_backend": true, "pg_terminate_backend": true,
	"pg_notify": true,
}

// pullUp makes blk read the relation under its derived table directly,
// reporting whether it did; it leaves blk as it was when the derived
// table must stay.
func pullUp(blk *BlockRel) bool {
	d, ok := blk.In.(*DerivedRel)
	if !ok || d.Query.Correlated || len(blk.SRFs) > 0 || len(blk.Windows) > 0 {
		return false
	}
	in, ok := d.Query.Root.(*BlockRel)
	if !ok || in.Grouped || len(in.SRFs) > 0 || len(in.Windows) > 0 || in.Distinct || len(in.DistinctOn) > 0 ||
		len(in.Order) > 0 || in.Limit >= 0 || in.Offset > 0 {
		return false
	}
	rel, ok := in.In.(*RelationRel)
	if !ok {
		return false
	}
	plain := func(e Scalar, inner bool) bool {
		ok := true
		walkScalar(e, func(x Scalar) {
			switch x := x.(type) {
			case *SubLink, *OuterRef, *srfSlot, *winSlot:
				ok = false
			case *aggSlot:
				ok = ok && !inner
			case *Call:
				ok = ok && !(inner && volatileFuncs[x.Name])
			}
		})
		return ok
	}
	for _, o := range in.Output {
		if !plain(o, true) {
			return false
		}
	}
	// The outer expressions over the derived table's row.
	var input []*Scalar
	input = append(input, &blk.Filter)
	for i := range blk.GroupBy {
		input = append(input, &blk.GroupBy[i])
	}
	for i := range blk.Aggs {
		a := &blk.Aggs[i]
		input = append(input, &a.Arg, &a.Arg2, &a.Filter)
		for j := range a.Order {
			input = append(input, &a.Order[j].Expr)
		}
		for j := range a.Grouping {
			input = append(input, &a.Grouping[j])
		}
	}
	// The select list, ordering and DISTINCT ON, over the input row
	// unless the block groups it.
	var post []*Scalar
	for i := range blk.Output {
		post = append(post, &blk.Output[i])
	}
	for i := range blk.Order {
		post = append(post, &blk.Order[i].Expr)
	}
	for i := range blk.DistinctOn {
		post = append(post, &blk.DistinctOn[i])
	}
	if !blk.Grouped {
		input = append(input, post...)
	}
	all := append(append([]*Scalar{&blk.Having}, input...), post...)
	for _, e := range all {
		if *e != nil && !plain(*e, false) {
			return false
		}
	}
	for _, e := range input {
		if *e != nil {
			*e = mapScalar(*e, func(x Scalar) Scalar {
				if c, ok := x.(*ColRef); ok && c.Idx < len(in.Output) {
					return in.Output[c.Idx]
				}
				return x
			})
		}
	}
	var conds []Scalar
	if in.Filter != nil {
		conds = append(conds, in.Filter)
	}
	if blk.Filter != nil {
		conds = append(conds, blk.Filter)
	}
	blk.In, blk.Filter = rel, nil
	if len(conds) > 0 {
		blk.In, blk.Filter = pushIntoReads(rel, andAll(conds))
	}
	return true
}
