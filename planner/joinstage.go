package planner

import (
	"fmt"
	"slices"
	"strings"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/sql"
)

// A derived stream may join three or more relations: FROM a JOIN b ON
// ... JOIN c ON ..., left-deep. It runs as a chain of two-way joins, as
// ksqlDB's does: each join but the last is a join stage, a StreamPlan of
// its own (StreamPlan.Stages) that writes every column of the relations
// joined so far, keyed by its join key, to an internal stream the next
// join reads as its left stream. Names in ON, WHERE and the select list
// still resolve in the relations they name, through joinLeft's spans.

// joinLeft is the left input of a join in a derived stream: a stream,
// or the intermediate stream of the join stages before it.
type joinLeft struct {
	src *catalog.Relation
	// cols is src's record input as a join's binder sees it, and rels
	// the spans of the relations it holds, with their names and
	// aliases.
	cols []catalog.Column
	rels []boundRel
	// stages are the join stages that produce src, innermost first.
	stages []*StreamPlan
	// sources are the relations read so far, lowercased; reads the same
	// relations.
	sources []string
	reads   []*catalog.Relation
	// keyCopy is the column of cols that always equals a stage's key
	// (column 0), the same expression copied; 0 when there is none.
	keyCopy int
}

// name names the left input in messages.
func (l *joinLeft) name() string {
	if len(l.stages) == 0 {
		return l.src.Name
	}
	var names []string
	for _, r := range l.reads {
		names = append(names, r.Name)
	}
	return "(" + strings.Join(names, " JOIN ") + ")"
}

// stageKeyName is the name of an intermediate stream's key column in a
// binder, which no SQL name reaches.
const stageKeyName = "\x00join key"

// planJoinLeft plans the left side of a derived stream's join: a stream,
// or a join, planned as a stage (n counts the stages).
func planJoinLeft(cat *catalog.Catalog, from sql.FromItem, n *int) (*joinLeft, error) {
	switch f := from.(type) {
	case *sql.TableRef:
		src, err := cat.Resolve(f.Name)
		if err != nil {
			return nil, withPos(err, f.Pos)
		}
		if src.Kind != catalog.KindStream || src.Name == catalog.ProcessingLogName {
			return nil, pgerr.New(pgerr.WrongObjectType, "the left side of a derived stream's join is a stream, and %s is not", src.Name).WithPosition(f.Pos).
				WithHint("Write FROM stream JOIN table.")
		}
		cols := RecordInput(src)
		return &joinLeft{src: src, cols: cols, rels: []boundRel{{name: src.Name, alias: f.Alias, lo: 0, hi: len(cols)}},
			sources: []string{strings.ToLower(src.Name)}, reads: []*catalog.Relation{src}}, nil
	case *sql.Join:
		return planJoinStage(cat, f, n)
	}
	return nil, pgerr.New(pgerr.FeatureNotSupported, "a derived stream joins streams and tables, not subqueries or functions").
		WithHint("Derive the subquery's result as a stream or table first, and join that.")
}

// planJoinStage plans join, the left side of a later join, as a join
// stage: its intermediate stream holds the join key, then every column
// of every relation joined (ROWTIMEs included), and the record time of
// the joined record.
func planJoinStage(cat *catalog.Catalog, join *sql.Join, n *int) (*joinLeft, error) {
	left, err := planJoinLeft(cat, join.Left, n)
	if err != nil {
		return nil, err
	}
	j, b, err := bindJoin(cat, join, left)
	if err != nil {
		return nil, err
	}
	*n++
	key := j.Key
	if j.Full {
		key = &Call{Name: "coalesce", Args: []Scalar{j.Key, shiftCols(j.RightKey, len(left.cols))}, T: j.Key.Type()}
	}
	outs := []Scalar{key}
	view := []catalog.Column{{Name: stageKeyName, Type: key.Type(), Hidden: true}}
	var spans []boundRel
	for _, r := range b.rels {
		lo := len(view)
		for i := r.lo; i < r.hi; i++ {
			c := b.cols[i]
			outs = append(outs, &ColRef{Idx: i, T: c.Type, Name: c.Name})
			view = append(view, c)
		}
		spans = append(spans, boundRel{name: r.name, alias: r.alias, lo: lo, hi: len(view)})
	}
	cols := make([]catalog.Column, len(outs))
	for i, o := range outs {
		cols[i] = catalog.Column{Name: fmt.Sprintf("c%d", i), Type: o.Type()}
	}
	cols[0].Key = true
	keyCopy := 0
	if ref, ok := key.(*ColRef); ok {
		keyCopy = slices.IndexFunc(outs[1:], func(o Scalar) bool { r, ok := o.(*ColRef); return ok && r.Idx == ref.Idx }) + 1
	}
	reads := append(slices.Clone(left.reads), j.Table)
	sources := append(slices.Clone(left.sources), strings.ToLower(j.Table.Name))
	rel := &catalog.Relation{Name: fmt.Sprintf("stage%d", *n), Kind: catalog.KindStream, KeyFormat: FormatJSON, ValueFormat: FormatJSON,
		Partitions: j.partitions(), Tasks: j.partitions(), Sources: sources, Schema: catalog.Schema{Columns: cols}}
	stage := &StreamPlan{Stream: rel, Source: left.src, Join: j, Output: outs, KeyColumn: 0, Rekey: true, Marked: true}
	if err := stage.planPositions(cat, left); err != nil {
		return nil, err
	}
	return &joinLeft{src: rel, cols: append(view, RowtimeColumn), rels: spans, stages: append(left.stages, stage),
		sources: sources, reads: reads, keyCopy: keyCopy}, nil
}

// asStageKey returns k, a join key over l's record input, as l's key
// column when k is the column that copies it: the next join then reads
// the stage's records where they are, if it partitions as the stage.
func (l *joinLeft) asStageKey(k Scalar) Scalar {
	if ref, ok := k.(*ColRef); ok && l.keyCopy > 0 && ref.Idx == l.keyCopy {
		return &ColRef{Idx: 0, T: ref.T, Name: ref.Name}
	}
	return k
}
