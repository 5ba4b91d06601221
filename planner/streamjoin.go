package planner

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/sql"
)

// JoinWindow bounds a stream–stream join in record time: a left record
// of time t joins the right records of times [t-Before, t+After], and
// records are taken up to Grace after the window they could still join
// in has passed stream time. All are milliseconds.
type JoinWindow struct {
	Before, After, Grace int64
	// GraceSet says GRACE PERIOD was written (else Grace is the default).
	GraceSet bool
}

// DefaultJoinGrace is the grace period of a stream–stream join written
// without GRACE PERIOD: 24 hours, ksqlDB's default.
const DefaultJoinGrace = 24 * time.Hour

// Retention is how far behind stream time a stored record of either
// side can still be joined by a record that is not late: the record is
// kept (and, unmatched in an outer join, held back) until stream time
// passes its time plus Retention.
func (w *JoinWindow) Retention() int64 { return w.Before + w.After + w.Grace }

// String renders the window for EXPLAIN.
func (w *JoinWindow) String() string {
	d := func(ms int64) string { return (time.Duration(ms) * time.Millisecond).String() }
	within := d(w.Before)
	if w.Before != w.After {
		within = fmt.Sprintf("(%s before, %s after)", d(w.Before), d(w.After))
	}
	grace := d(w.Grace)
	if !w.GraceSet {
		grace += ", the default"
	}
	return fmt.Sprintf("within %s, grace period %s", within, grace)
}

// RightInput is the right stream's record input of a stream–stream
// join (its columns, then its ROWTIME).
func (j *StreamJoin) RightInput() []catalog.Column { return RecordInput(j.Table) }

// bindStreamStreamJoin binds the join of left with stream right, FROM
// left [LEFT | FULL] JOIN right WITHIN ... ON <left expression> = <right
// expression>: a join task per join partition keeps each side's
// records of the window in a store with a changelog, and both sides are
// routed to the join's partitions by their join keys where they are not
// there already.
func bindStreamStreamJoin(join *sql.Join, left *joinLeft, right *catalog.Relation, rightRef *sql.TableRef) (*StreamJoin, *binder, error) {
	lname := left.name()
	if join.Within == nil {
		return nil, nil, pgerr.New(pgerr.FeatureNotSupported, "a join of streams %s and %s needs a WITHIN clause", lname, right.Name).WithPosition(join.Pos).
			WithHint("Bound the join in record time, e.g. JOIN %s WITHIN 1 HOUR GRACE PERIOD 10 MINUTES ON ...: streams never end, so each record can only wait so long for its match.", right.Name)
	}
	switch join.Kind {
	case sql.JoinInner, sql.JoinLeft, sql.JoinFull:
	case sql.JoinRight:
		return nil, nil, pgerr.New(pgerr.FeatureNotSupported, "RIGHT JOIN of streams is not supported").WithPosition(join.Pos).
			WithHint("Swap the streams and write LEFT JOIN.")
	default:
		return nil, nil, pgerr.New(pgerr.FeatureNotSupported, "%s of streams is not supported", join.Kind).WithPosition(join.Pos).
			WithHint("Streams join with JOIN, LEFT JOIN or FULL JOIN ... WITHIN ... ON left.expr = right.expr.")
	}
	for _, r := range left.reads {
		if strings.EqualFold(r.Name, right.Name) {
			return nil, nil, pgerr.New(pgerr.FeatureNotSupported, "stream %s is joined twice, which is not supported", right.Name).WithPosition(rightRef.Pos).
				WithHint("Derive a copy of the stream with CREATE STREAM ... AS SELECT and join the two.")
		}
	}
	if right.Name == catalog.ProcessingLogName {
		return nil, nil, pgerr.New(pgerr.InsufficientPrivilege, "a derived stream cannot read %s", right.Name).WithPosition(rightRef.Pos).
			WithHint("Read the processing log with SELECT.")
	}
	w := join.Within
	if w.Before < 0 || w.After < 0 || w.Grace < 0 {
		return nil, nil, pgerr.New(pgerr.InvalidParameterValue, "the durations of WITHIN and GRACE PERIOD cannot be negative").WithPosition(w.Pos)
	}
	j := &StreamJoin{Table: right, Alias: rightRef.Alias, Left: join.Kind == sql.JoinLeft || join.Kind == sql.JoinFull,
		Full:   join.Kind == sql.JoinFull,
		Within: &JoinWindow{Before: w.Before.Milliseconds(), After: w.After.Milliseconds(), Grace: DefaultJoinGrace.Milliseconds(), GraceSet: w.HasGrace}}
	if w.HasGrace {
		j.Within.Grace = w.Grace.Milliseconds()
	}
	if len(join.Using) > 0 || join.Natural {
		return nil, nil, pgerr.New(pgerr.FeatureNotSupported, "JOIN ... USING and NATURAL JOIN in a derived stream are not supported").WithPosition(join.Pos).
			WithHint("Write the condition with ON left.column = right.column.")
	}
	if join.On == nil {
		return nil, nil, pgerr.New(pgerr.FeatureNotSupported, "a join of streams needs ON").WithPosition(join.Pos)
	}
	nsrc := len(left.cols)
	input := append(slices.Clone(left.cols), RecordInput(right)...)
	b := &binder{cols: input, rels: append(slices.Clone(left.rels), boundRel{name: right.Name, alias: rightRef.Alias, lo: nsrc, hi: len(input)})}
	b.clause = "JOIN conditions"
	if err := j.bindStreamKeys(b, join.On, lname, nsrc); err != nil {
		return nil, nil, err
	}
	b.clause = ""
	j.Key = left.asStageKey(j.Key)
	j.partitioning(left.src)
	return j, b, nil
}

// bindStreamKeys binds ON of a stream–stream join, one equality between
// an expression of the left stream's columns and one of the right's,
// and sets Key and RightKey, both of the type they compare in.
func (j *StreamJoin) bindStreamKeys(b *binder, on sql.Expr, lname string, nsrc int) error {
	bin, ok := on.(*sql.Binary)
	if !ok || bin.Op != "=" {
		return pgerr.New(pgerr.FeatureNotSupported, "the join condition of streams %s and %s must be one equality, left expression = right expression", lname, j.Table.Name).
			WithPosition(on.Position()).
			WithHint("Records are matched by equal join keys; put other conditions in WHERE.")
	}
	l, err := b.bind(bin.L)
	if err != nil {
		return err
	}
	r, err := b.bind(bin.R)
	if err != nil {
		return err
	}
	side := func(s Scalar) int { // 1 left only, 2 right only, 3 both, 0 neither
		n := 0
		walkScalar(s, func(x Scalar) {
			if ref, isRef := x.(*ColRef); isRef {
				if ref.Idx < nsrc {
					n |= 1
				} else {
					n |= 2
				}
			}
		})
		return n
	}
	lpos, rpos := bin.L.Position(), bin.R.Position()
	switch {
	case side(l) == 1 && side(r) == 2:
	case side(l) == 2 && side(r) == 1:
		l, r, lpos, rpos = r, l, rpos, lpos
	default:
		return pgerr.New(pgerr.FeatureNotSupported, "the join condition of streams %s and %s must equal an expression of %s's columns to one of %s's", lname, j.Table.Name, lname, j.Table.Name).
			WithPosition(on.Position()).
			WithHint("Each side of = must read one side of the join, e.g. ON %s.id = %s.id.", lname, j.Table.Name)
	}
	t, ok := commonType(l, r)
	if !ok || t == catalog.Unknown {
		return pgerr.New(pgerr.DatatypeMismatch, "the join compares %s with %s", l.Type(), r.Type()).
			WithPosition(on.Position()).WithHint("Cast one side to the other's type.")
	}
	if j.Key, err = b.coerce(l, t, lpos, "join key"); err != nil {
		return err
	}
	if j.RightKey, err = b.coerce(r, t, rpos, "join key"); err != nil {
		return err
	}
	// RightKey is over the right stream's record alone.
	j.RightKey = shiftCols(j.RightKey, -nsrc)
	return nil
}

// partitioning chooses the join's partitions: those of a side keyed by
// its join key alone (records there are in place), the left's first;
// else the left's count of partitions, by the join key's Kafka bytes
// and murmur2. A side not in them is routed (Route, RouteRight).
func (j *StreamJoin) partitioning(src *catalog.Relation) {
	keyed := func(rel *catalog.Relation, k Scalar) bool {
		ref, ok := k.(*ColRef)
		keys := rel.Schema.KeyIndexes()
		return ok && len(keys) == 1 && ref.Idx == keys[0] && rel.Schema.Columns[ref.Idx].Type == k.Type()
	}
	same := func(a, b *catalog.Relation) bool {
		return a.KeyFormat == b.KeyFormat && a.Partitions == b.Partitions && a.Partitioner == b.Partitioner
	}
	lk, rk := keyed(src, j.Key), keyed(j.Table, j.RightKey)
	switch {
	case lk:
		j.Parts = src
	case rk:
		j.Parts = j.Table
	default:
		format := FormatKafka
		if !kafkaKeyType(j.Key.Type()) {
			format = FormatJSON
		}
		j.Parts = &catalog.Relation{Name: "join key", Kind: catalog.KindStream, KeyFormat: format, Partitions: src.Partitions,
			Schema: catalog.Schema{Columns: []catalog.Column{{Name: "key", Type: j.Key.Type(), Key: true}}}}
	}
	j.Route = !(lk && same(src, j.Parts))
	j.RouteRight = !(rk && same(j.Table, j.Parts))
}

// streamJoinKeyColumn marks the key of a stream–stream join's derived
// stream: the join key, selected as either side's expression (for a
// FULL JOIN, where either may be NULL, COALESCE of the two), as in
// ksqlDB.
func (p *StreamPlan) streamJoinKeyColumn(cols []catalog.Column) error {
	j := p.Join
	left, right := j.Key.String(), shiftCols(j.RightKey, len(RecordInput(p.Source))).String()
	isKey := func(o Scalar) bool {
		if !j.Full {
			return o.String() == left || o.String() == right
		}
		c, ok := o.(*Call)
		if !ok || c.Name != "coalesce" || len(c.Args) != 2 {
			return false
		}
		a, b := c.Args[0].String(), c.Args[1].String()
		return a == left && b == right || a == right && b == left
	}
	for i, o := range p.Output {
		if isKey(o) {
			cols[i].Key, p.KeyColumn = true, i
			return nil
		}
	}
	lname := p.Source.Name
	if len(p.Stages) > 0 {
		lname = "the relations joined before"
	}
	want := fmt.Sprintf("%s of %s or %s of %s", left, lname, right, j.Table.Name)
	if j.Full {
		want = fmt.Sprintf("COALESCE(%s, %s)", left, right)
	}
	return pgerr.New(pgerr.InvalidColumnReference, "stream %s must select its join key (%s)", p.Stream.Name, want).
		WithHint("A stream–stream join is keyed by the join key, as in ksqlDB; select it, or give the stream another key with PARTITION BY.")
}
