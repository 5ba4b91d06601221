package planner

import (
	"fmt"
	"slices"
	"strings"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/sql"
)

// TableJoin is the join stage of a view over two tables joined on the
// right table's key. Per partition of the left table the stage keeps
// the left rows of the partition's keys and the right rows they may
// join and, for each key whose joined row a batch changes, writes the
// joined row the key has now, or its removal, to a changelog of its own
// that the view reads as it reads a view's: the view's Source is
// Joined. Updates and deletes on either side so replace or remove the
// joined rows they touch, and the view holds what the join of the
// tables as they are now holds.
//
// On the tables' keys (a primary-key join: Foreign is nil), both tables
// are partitioned alike, a partition of the stage reads the same
// partition of both, and a key has a joined row if the join keeps it
// (any join kind). On an expression of the left table's columns equal
// to the right table's key (a foreign-key join: JOIN or LEFT JOIN), a
// partition of the stage reads its partition of the left table and all
// of the right one (as Kafka Streams' global tables are read), keeps an
// index of its left rows by the right key they look up, and a left row
// has a joined row with the right row its Foreign value names (inner)
// or with NULLs when there is none (LEFT JOIN); a right row that
// changes changes the joined rows of every left row that looks it up.
// Tables keyed alike but partitioned differently are joined so too.
type TableJoin struct {
	// Kind is sql.JoinInner, JoinLeft, JoinRight or JoinFull.
	Kind        sql.JoinKind
	Left, Right *catalog.Relation
	// Foreign is the right key a left row looks up, over the Joined
	// input (the left row's columns), of the right key's type; nil in
	// a primary-key join.
	Foreign Scalar
	// Joined is the relation the view reads: Left's columns, Right's,
	// then the key (hidden; never NULL): the join key of a primary-key
	// join (one side has the row), the left key of a foreign-key join;
	// keyed by it, partitioned as the left table is.
	Joined *catalog.Relation
	// Views holds, for a side that is a view (or, in a chain, the join
	// before), the topics its positions are in; nil for a table. Such a
	// side is read from its changelog, whose markers carry the positions
	// its rows reflect, and has no misplaced records to forward.
	Views [2][]PositionSource
	// Replaced is set for a RIGHT or FULL JOIN on the keys of relations
	// partitioned apart: each partition of the stage reads all of the
	// right one and keeps the rows of the keys its partition of the
	// left one holds, so it joins its keys on both sides as a
	// primary-key join of relations partitioned alike does.
	Replaced bool
	// Prev is, in a join of three or more tables or views, the join
	// stage before, whose Joined relation is Left: this stage reads its
	// changelog as a view's. The stages of a view are a left-deep chain.
	Prev *TableJoin
}

// Chain returns the join stages of a chain ending with j, first to j.
func (j *TableJoin) Chain() []*TableJoin {
	if j.Prev == nil {
		return []*TableJoin{j}
	}
	return append(j.Prev.Chain(), j)
}

// sources names the tables and views the chain joins, in order.
func (j *TableJoin) sources() []string {
	if j.Prev == nil {
		return []string{strings.ToLower(j.Left.Name), strings.ToLower(j.Right.Name)}
	}
	return append(j.Prev.sources(), strings.ToLower(j.Right.Name))
}

// JoinedKey is the index of the join key among the Joined columns.
func (j *TableJoin) JoinedKey() int { return len(j.Joined.Schema.Columns) - 1 }

// LeftKey and RightKey are the indexes of the tables' key columns among
// the Joined columns.
func (j *TableJoin) LeftKey() int { return j.Left.Schema.KeyIndexes()[0] }
func (j *TableJoin) RightKey() int {
	return len(j.Left.Schema.Columns) + j.Right.Schema.KeyIndexes()[0]
}

// Keeps reports whether the join has a row for a key whose left and
// right rows are present as given.
func (j *TableJoin) Keeps(left, right bool) bool {
	switch j.Kind {
	case sql.JoinLeft:
		return left
	case sql.JoinRight:
		return right
	case sql.JoinFull:
		return left || right
	}
	return left && right
}

// joinOf returns the join a persistent query's FROM is, nil if it is
// not one.
func joinOf(sel *sql.Select) *sql.Join {
	if len(sel.From) != 1 || len(sel.SetOps) > 0 {
		return nil
	}
	j, _ := sel.From[0].(*sql.Join)
	return j
}

// planTableJoin plans the join stage of view name over FROM join and
// returns it with the binder of the view's expressions over its Joined
// input (the columns, then ROWTIME: the later of the two rows' times).
func planTableJoin(cat *catalog.Catalog, name string, join *sql.Join) (*TableJoin, *binder, error) {
	inner, chained := join.Left.(*sql.Join)
	if !chained {
		return planTableJoinOf(cat, name, join, nil, nil)
	}
	prev, pb, err := planTableJoin(cat, name, inner)
	if err != nil {
		return nil, nil, err
	}
	return planTableJoinOf(cat, name, join, prev, pb)
}

// planTableJoinOf plans the join stage of join, whose left side is the
// join stage prev, with the binder pb of its input, in a chain.
func planTableJoinOf(cat *catalog.Catalog, name string, join *sql.Join, prev *TableJoin, pb *binder) (*TableJoin, *binder, error) {
	left, lok := join.Left.(*sql.TableRef)
	right, rok := join.Right.(*sql.TableRef)
	if prev != nil {
		left, lok = &sql.TableRef{Name: prev.Joined.Name, Pos: join.Pos}, true
	}
	if !lok || !rok {
		return nil, nil, pgerr.New(pgerr.FeatureNotSupported, "a view joins tables and views, not subqueries or functions").WithPosition(join.Pos).
			WithHint("Create a view of the subquery and join that view.")
	}
	if join.Within != nil {
		return nil, nil, pgerr.New(pgerr.FeatureNotSupported, "WITHIN bounds a stream–stream join, which derives a stream, not a view").WithPosition(join.Within.Pos).
			WithHint("Write CREATE STREAM ... AS SELECT ... JOIN ... WITHIN ..., and aggregate that stream in a view.")
	}
	if len(join.Using) > 0 || join.Natural {
		return nil, nil, pgerr.New(pgerr.FeatureNotSupported, "JOIN ... USING and NATURAL JOIN in a view are not supported").WithPosition(join.Pos).
			WithHint("Write the condition with ON %s.key = %s.key.", left.Name, right.Name)
	}
	if join.Kind == sql.JoinCross || join.On == nil {
		return nil, nil, pgerr.New(pgerr.FeatureNotSupported, "a join of two tables in a view needs ON").WithPosition(join.Pos).
			WithHint("Join on the tables' keys: ON %s.key = %s.key.", left.Name, right.Name)
	}
	var rels [2]*catalog.Relation
	var views [2][]PositionSource
	for i, ref := range []*sql.TableRef{left, right} {
		if i == 0 && prev != nil {
			rels[0], views[0] = prev.Joined, prev.positions()
			continue
		}
		r, err := cat.Resolve(ref.Name)
		if err != nil {
			return nil, nil, withPos(err, ref.Pos)
		}
		switch {
		case r.Kind == catalog.KindStream && i == 0:
			return nil, nil, pgerr.New(pgerr.WrongObjectType, "a join of stream %s is a stream, not a view", r.Name).WithPosition(ref.Pos).
				WithHint("Write it as a derived stream: CREATE STREAM %s AS SELECT ... FROM %s JOIN ...; a view may then aggregate it.", name, r.Name)
		case r.Kind == catalog.KindStream:
			return nil, nil, pgerr.New(pgerr.FeatureNotSupported, "joining a table to stream %s is not supported", r.Name).WithPosition(ref.Pos).
				WithHint("Put the stream on the left, in a derived stream: CREATE STREAM ... AS SELECT ... FROM %s JOIN %s ....", r.Name, rels[0].Name)
		case r.Kind == catalog.KindView:
			if views[i], err = viewPositions(cat, r); err != nil {
				return nil, nil, err
			}
		case r.Kind != catalog.KindTable:
			return nil, nil, pgerr.New(pgerr.WrongObjectType, "%s is not a table", r.Name).WithPosition(ref.Pos)
		}
		if n := len(r.Schema.KeyIndexes()); n != 1 {
			return nil, nil, pgerr.New(pgerr.FeatureNotSupported, "joining %s %s, whose key has %d columns, is not supported yet", strings.ToLower(string(r.Kind)), r.Name, n).
				WithPosition(ref.Pos)
		}
		rels[i] = r
	}
	if prev != nil && slices.Contains(prev.sources(), strings.ToLower(rels[1].Name)) {
		return nil, nil, pgerr.New(pgerr.FeatureNotSupported, "joining %s twice in a view is not supported", rels[1].Name).WithPosition(right.Pos).
			WithHint("Create a view of it and join the view the second time.")
	}
	if rels[0] == rels[1] {
		return nil, nil, pgerr.New(pgerr.FeatureNotSupported, "joining table %s with itself is not supported", rels[0].Name).WithPosition(right.Pos).
			WithHint("Create a view of it and join the table with the view's table, or read the self-join with SELECT.")
	}
	j := &TableJoin{Left: rels[0], Right: rels[1], Views: views, Prev: prev}
	switch join.Kind {
	case sql.JoinInner, sql.JoinLeft, sql.JoinRight, sql.JoinFull:
		j.Kind = join.Kind
	default:
		return nil, nil, pgerr.New(pgerr.FeatureNotSupported, "%s of two tables is not supported", join.Kind).WithPosition(join.Pos)
	}
	na, nb := len(j.Left.Schema.Columns), len(j.Right.Schema.Columns)
	cols := make([]catalog.Column, 0, na+nb+1)
	for _, t := range rels {
		for _, c := range t.Schema.Columns {
			c.Key = false
			cols = append(cols, c)
		}
	}
	lk := j.Left.Schema.Columns[j.Left.Schema.KeyIndexes()[0]]
	cols = append(cols, catalog.Column{Name: "join key", Type: lk.Type, Key: true, Hidden: true})
	j.Joined = &catalog.Relation{
		Name: fmt.Sprintf("%s %s %s", j.Left.Name, join.Kind, j.Right.Name), Kind: catalog.KindView,
		Schema: catalog.Schema{Columns: cols}, Partitions: j.Left.Partitions,
		KeyFormat: j.Left.KeyFormat, Partitioner: j.Left.Partitioner,
	}
	input := RecordInput(j.Joined)
	lrels := []boundRel{{name: j.Left.Name, alias: left.Alias, lo: 0, hi: na}}
	if prev != nil {
		// The names of the chain's relations, in the columns the stage
		// before writes (its ROWTIME, last, is this stage's to give).
		lrels = pb.rels[:len(pb.rels)-1]
	}
	b := &binder{cols: input, rels: append(slices.Clone(lrels),
		boundRel{name: j.Right.Name, alias: right.Alias, lo: na, hi: na + nb},
		boundRel{lo: na + nb + 1, hi: na + nb + 2}, // ROWTIME, unqualified
	)}
	b.clause = "JOIN conditions"
	if err := j.bindOn(b, join.On, right.Pos); err != nil {
		if join.Kind == sql.JoinRight && j.partitionedApart() && prev == nil {
			return planSwappedRightJoin(cat, name, join)
		}
		return nil, nil, err
	}
	b.clause = ""
	return j, b, nil
}

// partitionedApart reports whether the tables' keys are not in the same
// partitions of both (checkPartitioning fails).
func (j *TableJoin) partitionedApart() bool { return j.checkPartitioning(0) != nil }

// planSwappedRightJoin plans a RIGHT JOIN of tables partitioned apart as
// the LEFT JOIN of the right table with the left one, which runs as a
// foreign-key join of the right table's key (every right row, with the
// left row of its key or NULLs). The relations keep their order for *.
func planSwappedRightJoin(cat *catalog.Catalog, name string, join *sql.Join) (*TableJoin, *binder, error) {
	swapped := *join
	swapped.Kind, swapped.Left, swapped.Right = sql.JoinLeft, join.Right, join.Left
	j, b, err := planTableJoin(cat, name, &swapped)
	if err != nil {
		return nil, nil, err
	}
	b.rels[0], b.rels[1] = b.rels[1], b.rels[0]
	return j, b, nil
}

// bindOn binds ON, which must equal the right table's key to an
// expression of the left table's columns: the left key itself, where
// the tables are partitioned alike, makes a primary-key join; any other
// a foreign-key one (Foreign).
func (j *TableJoin) bindOn(b *binder, on sql.Expr, rightPos int) error {
	lk, rk := j.LeftKey(), j.RightKey()
	na := len(j.Left.Schema.Columns)
	lname, rname := j.Left.Name+"."+j.Joined.Schema.Columns[lk].Name, j.Right.Name+"."+j.Joined.Schema.Columns[rk].Name
	shape := func() error {
		return pgerr.New(pgerr.FeatureNotSupported, "a join of two tables in a view must equal the right table's key %s to an expression of the columns of %s", rname, j.Left.Name).
			WithPosition(on.Position()).
			WithHint("Join on the keys (ON %s = %s) or on a foreign key (ON %s.column = %s); filter on other conditions in WHERE.", lname, rname, j.Left.Name, rname)
	}
	bin, ok := on.(*sql.Binary)
	if !ok || bin.Op != "=" {
		return shape()
	}
	l, err := b.bind(bin.L)
	if err != nil {
		return err
	}
	r, err := b.bind(bin.R)
	if err != nil {
		return err
	}
	isRightKey := func(s Scalar) bool { ref, ok := s.(*ColRef); return ok && ref.Idx == rk }
	overLeft := func(s Scalar) bool {
		ok := true
		walkScalar(s, func(x Scalar) {
			if ref, isRef := x.(*ColRef); isRef && ref.Idx >= na {
				ok = false
			}
		})
		return ok
	}
	other, pos := l, bin.L.Position()
	switch {
	case isRightKey(r) && overLeft(l):
	case isRightKey(l) && overLeft(r):
		other, pos = r, bin.R.Position()
	default:
		return shape()
	}
	if j.Prev != nil {
		other = j.Prev.ChainKey(other) // the key of the rows joined so far
	}
	ref, onKey := other.(*ColRef)
	onKey = onKey && ref.Idx == lk
	outer := j.Kind == sql.JoinRight || j.Kind == sql.JoinFull
	rt := j.Joined.Schema.Columns[rk].Type
	if onKey {
		lt := j.Joined.Schema.Columns[lk].Type
		err := j.checkPartitioning(rightPos)
		if lt != rt {
			err = pgerr.New(pgerr.DatatypeMismatch, "the join compares key %s, which is %s, with key %s, which is %s", lname, lt, rname, rt).
				WithPosition(on.Position()).
				WithHint("Declare both tables' keys with one type for a %s: equal keys of two types are different bytes in Kafka, in different partitions.", j.Kind)
		}
		if err == nil {
			return nil // a primary-key join
		}
		if outer && lt == rt && (j.Kind == sql.JoinFull || j.Prev != nil) {
			j.Replaced = true
			return nil
		}
		if outer {
			return err
		}
	} else if outer {
		return pgerr.New(pgerr.FeatureNotSupported, "a foreign-key join of two tables is JOIN or LEFT JOIN, not %s", j.Kind).
			WithPosition(on.Position()).
			WithHint("A right row that no left row looks up has no key in the view; join on the tables' keys for a %s.", j.Kind)
	}
	fk, err := b.coerce(other, rt, pos, "join key")
	if err != nil {
		return pgerr.New(pgerr.DatatypeMismatch, "the join compares %s with key %s, which is %s", other.Type(), rname, rt).
			WithPosition(pos).WithHint("Cast %s's side to %s.", j.Left.Name, rt)
	}
	j.Foreign = fk
	return nil
}

// checkPartitioning checks that each key's rows are in the same
// partition of both tables, which a primary-key join reads side by side.
func (j *TableJoin) checkPartitioning(pos int) error {
	a, b := j.Left, j.Right
	part := func(r *catalog.Relation) string {
		if r.Partitioner == "" {
			return "murmur2"
		}
		return r.Partitioner
	}
	var diffs []string
	if a.Partitions != b.Partitions {
		diffs = append(diffs, fmt.Sprintf("%d partitions and %d", a.Partitions, b.Partitions))
	}
	switch {
	case a.KeyFormat != b.KeyFormat:
		diffs = append(diffs, fmt.Sprintf("key_format %s and %s", a.KeyFormat, b.KeyFormat))
	case !sameKeyBytes(a, b):
		diffs = append(diffs, fmt.Sprintf("keys in key_format %s written with other options or schemas", a.KeyFormat))
	}
	if part(a) != part(b) {
		diffs = append(diffs, fmt.Sprintf("partitioner %s and %s", part(a), part(b)))
	}
	if len(diffs) == 0 {
		return nil
	}
	return pgerr.New(pgerr.FeatureNotSupported, "a %s of tables %s and %s, which have %s, is not supported", j.Kind, a.Name, b.Name, pgerr.JoinAnd(diffs)).
		WithPosition(pos).
		WithHint("A RIGHT or FULL JOIN joins tables whose topics are partitioned alike (the same partitions, key_format and partitioner); JOIN and LEFT JOIN join any two.")
}

// asKey returns the join key column for a scalar that always equals it
// in the join's rows (a key column of a side that is never NULL-
// extended, or COALESCE of both key columns), else s.
func (j *TableJoin) asKey(s Scalar) Scalar {
	key := j.Joined.Schema.Columns[j.JoinedKey()]
	ref := &ColRef{Idx: j.JoinedKey(), T: key.Type, Name: key.Name}
	switch s := s.(type) {
	case *ColRef:
		if j.Foreign != nil {
			if s.Idx == j.LeftKey() {
				return ref
			}
			return s
		}
		if s.Idx == j.LeftKey() && (j.Kind == sql.JoinInner || j.Kind == sql.JoinLeft) ||
			s.Idx == j.RightKey() && (j.Kind == sql.JoinInner || j.Kind == sql.JoinRight) {
			return ref
		}
	case *Call:
		if s.Name == "coalesce" && len(s.Args) == 2 && j.Foreign == nil {
			a, b := s.Args[0], s.Args[1]
			ai, aok := a.(*ColRef)
			bi, bok := b.(*ColRef)
			if aok && bok && (ai.Idx == j.LeftKey() && bi.Idx == j.RightKey() || ai.Idx == j.RightKey() && bi.Idx == j.LeftKey()) {
				return ref
			}
		}
	}
	return s
}

// ChainKey is asKey through a chain: an expression that always equals
// the join key of the rows the chain's stages join, that key.
func (j *TableJoin) ChainKey(s Scalar) Scalar {
	if j.Prev == nil {
		return j.asKey(s)
	}
	if c, ok := s.(*Call); ok && c.Name == "coalesce" && len(c.Args) == 2 {
		mapped := *c
		mapped.Args = []Scalar{j.Prev.ChainKey(c.Args[0]), j.Prev.ChainKey(c.Args[1])}
		return j.asKey(&mapped)
	}
	return j.asKey(j.Prev.ChainKey(s))
}

// leftKeyName names the left key for messages: in a chain, the first
// table's, which the rows joined so far are keyed by.
func (j *TableJoin) leftKeyName() string {
	if j.Prev != nil {
		return j.Prev.leftKeyName()
	}
	return j.Left.Name + "." + j.Left.Schema.Columns[j.LeftKey()].Name
}

// keyChoices names what a view over the join may select as its key.
func (j *TableJoin) keyChoices() string {
	l, r := j.leftKeyName(), j.Right.Name+"."+j.Joined.Schema.Columns[j.RightKey()].Name
	co := fmt.Sprintf("COALESCE(%s, %s)", l, r)
	if j.Foreign != nil {
		return l + ", the left table's key (a foreign-key join is keyed by it)"
	}
	switch j.Kind {
	case sql.JoinInner:
		return fmt.Sprintf("%s, %s or %s", l, r, co)
	case sql.JoinLeft:
		return fmt.Sprintf("%s or %s", l, co)
	case sql.JoinRight:
		return fmt.Sprintf("%s or %s", r, co)
	}
	return co
}

// positions are the topics a partition of the join stage reflects: the
// same partition of both tables' topics, all of the right one's in a
// foreign-key join; a view side's positions' topics, all partitions of
// them when the view is read in full.
func (j *TableJoin) positions() []PositionSource {
	var out []PositionSource
	add := func(p PositionSource) { out = addPosition(out, p) }
	for i, rel := range []*catalog.Relation{j.Left, j.Right} {
		full := i == 1 && (j.Foreign != nil || j.Replaced)
		if j.Views[i] == nil {
			add(PositionSource{Topic: rel.Topic, All: full})
			continue
		}
		for _, p := range j.Views[i] {
			add(PositionSource{Topic: p.Topic, All: p.All || full})
		}
	}
	return out
}

// sideKind names a side for EXPLAIN and errors: "table" or "view".
func sideKind(r *catalog.Relation) string { return strings.ToLower(string(r.Kind)) }

// String renders the join stage for EXPLAIN.
func (j *TableJoin) String() string {
	left := j.Left.Name
	if j.Prev != nil {
		left = fmt.Sprintf("join stage %d", len(j.Prev.Chain()))
	}
	if j.Foreign != nil {
		return fmt.Sprintf("%s of %s and %s on %s.%s = %s, a foreign key (the rows of each partition of %s and all rows of %s kept in Pebble, the left rows indexed by it; each changed left key's joined row, or its removal, to the join stage's changelog)",
			j.Kind, left, j.Right.Name, j.Right.Name, j.Joined.Schema.Columns[j.RightKey()].Name, j.Foreign, left, j.Right.Name)
	}
	kept := "both sides' rows of each partition kept in Pebble"
	if j.Replaced {
		kept = fmt.Sprintf("the rows of each partition of %s and, read from all partitions of %s, the rows of that partition's keys kept in Pebble", left, j.Right.Name)
	}
	return fmt.Sprintf("%s of %s and %s on %s = %s.%s (%s; each changed key's joined row, or its removal, to the join stage's changelog)",
		j.Kind, left, j.Right.Name, j.leftKeyName(), j.Right.Name, j.Joined.Schema.Columns[j.RightKey()].Name, kept)
}
