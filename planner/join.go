package planner

import (
	"fmt"
	"slices"
	"strings"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/sql"
)

// StreamJoin is the stream–table join of a derived stream: each record
// of the stream looks up, by Key, the row the table has for that key as
// the join task last saw it, and the derived record is computed over the
// record's columns and ROWTIME followed by the row's columns (NULLs
// when a LEFT JOIN finds none; an inner join drops such a record).
type StreamJoin struct {
	Table *catalog.Relation
	Alias string
	Left  bool
	// Key is the table key a record looks up, over the stream record;
	// it has the table key column's type.
	Key Scalar
	// Route is set when the stream's records are not in the table's
	// partitions by Key: a routing stage sends each to the partition of
	// its Key first (the stream is re-keyed for the join).
	Route bool

	// Within is set for a stream–stream join (streamjoin.go): Table is
	// then the right stream, RightKey its side of ON (over its record
	// input), Left set for LEFT and FULL joins and Full for FULL ones.
	// Parts is how the join places its keys: its partitions, and a key
	// column of the join key's type in its key_format and partitioner
	// (a side keyed by the join key, or a relation made up for it);
	// RouteRight is Route for the right stream.
	Within     *JoinWindow
	Full       bool
	RightKey   Scalar
	RouteRight bool
	Parts      *catalog.Relation

	// Marks are, per side, how the positions of the input the join's
	// tasks read compose: a join stage's stream or the join's
	// repartition topic carries its writers' position markers, and a
	// view's changelog partition its one writer's (the view's task);
	// nil for a source's own topic, whose offsets are the positions.
	// RouteMarks are those of the input a
	// side's routing tasks read (a stage's stream), nil for a source.
	Marks, RouteMarks [2]*Marks
}

// Marks says how the position markers of an internal stream compose. A
// join stage's stream and a join's repartition topic are written by
// Writers tasks (one per partition of what they read), and each puts,
// after every batch's records, a marker on each partition with its
// position, in the topics of Sources (what each of those tasks
// reflects). A task reading one partition has then seen everything a
// writer wrote there up to the position of its last marker read: the
// reader reflects, of each topic partition, what the one writer
// reading it reflects, or, for a topic each writer reads all of
// (PositionSource.All), the least of what they all do, once every one
// has said. So positions reach the sources beneath a join of streams,
// as they do beneath views.
type Marks struct {
	Sources []PositionSource
	Writers int32
}

// Reflects is what each partition of a marked stream reflects: every
// partition of every topic its writers reflect.
func (m *Marks) Reflects() []PositionSource { return reflectAll(m.Sources) }

// reflectAll returns ps with every topic's All set.
func reflectAll(ps []PositionSource) []PositionSource {
	out := slices.Clone(ps)
	for i := range out {
		out[i].All = true
	}
	return out
}

// addPosition adds p to ps, merging it into an entry of its topic.
func addPosition(ps []PositionSource, p PositionSource) []PositionSource {
	for i := range ps {
		if ps[i].Topic == p.Topic {
			ps[i].All = ps[i].All || p.All
			return ps
		}
	}
	return append(ps, p)
}

// planPositions sets the positions of the tasks of join stage p, whose
// left input is left (StreamPlan.Positions), and how the join's inputs'
// markers compose (StreamJoin.Marks, RouteMarks). A task reads, per
// side, a source's partition (reflecting that partition), a view's
// changelog partition (reflecting what that view partition does), or
// a marked stream's partition (reflecting what all its writers do); a
// routed side is read from the repartition topic, which the routing
// tasks of that side mark.
func (p *StreamPlan) planPositions(cat *catalog.Catalog, left *joinLeft) error {
	j := p.Join
	p.Positions = nil
	for i, rel := range []*catalog.Relation{left.src, j.Table} {
		var pos []PositionSource
		var marks *Marks
		switch {
		case i == 0 && len(left.stages) > 0:
			prev := left.stages[len(left.stages)-1]
			marks = &Marks{Sources: prev.Positions, Writers: prev.Stream.Partitions}
			pos = marks.Reflects()
		case rel.Kind == catalog.KindView:
			var err error
			if pos, err = viewPositions(cat, rel); err != nil {
				return err
			}
			marks = &Marks{Sources: pos, Writers: 1}
		default:
			pos = []PositionSource{{Topic: rel.Topic}}
		}
		if route := (i == 0 && j.Route) || (i == 1 && j.RouteRight); route {
			j.RouteMarks[i] = marks
			marks = &Marks{Sources: pos, Writers: rel.Partitions}
			pos = marks.Reflects()
		}
		j.Marks[i] = marks
		for _, ps := range pos {
			p.Positions = addPosition(p.Positions, ps)
		}
	}
	return nil
}

// JoinedInput is the row a join's expressions are bound over: the
// stream's record input (its columns, then ROWTIME), then the table's
// columns.
func (j *StreamJoin) JoinedInput(stream *catalog.Relation) []catalog.Column {
	if j.Within != nil {
		return append(RecordInput(stream), RecordInput(j.Table)...)
	}
	return append(RecordInput(stream), j.Table.Schema.Columns...)
}

// planStreamJoin plans CREATE STREAM ... AS SELECT ... FROM stream [LEFT]
// JOIN table ON <stream expression> = <table key>, a join of two streams
// (streamjoin.go), or a chain of such joins (joinstage.go).
func planStreamJoin(cat *catalog.Catalog, s *sql.CreateStreamAs, join *sql.Join, opts map[string]string, text string) (*StreamPlan, error) {
	sel := s.Select
	n := 0
	left, err := planJoinLeft(cat, join.Left, &n)
	if err != nil {
		return nil, err
	}
	j, b, err := bindJoin(cat, join, left)
	if err != nil {
		return nil, err
	}
	p := &StreamPlan{Source: left.src, KeyColumn: -1, Join: j, Stages: left.stages}
	if err := p.planPositions(cat, left); err != nil {
		return nil, err
	}
	if sel.Where != nil {
		b.clause = "WHERE"
		f, err := b.bind(sel.Where)
		if err != nil {
			return nil, err
		}
		if p.Filter, err = b.coerce(f, catalog.Boolean, sel.Where.Position(), "argument of WHERE"); err != nil {
			return nil, err
		}
		b.clause = ""
	}
	items, err := expandJoinStar(sel.Items, b, b.cols)
	if err != nil {
		return nil, err
	}
	if p.Output, err = b.bindItems(items); err != nil {
		return nil, err
	}
	stream := &catalog.Relation{
		Name: s.Name, Kind: catalog.KindStream, Topic: opts["kafka_topic"], KeyFormat: strings.ToLower(opts["key_format"]),
		ValueFormat: FormatJSON, Options: opts, SQL: text,
		Sources:    append(slices.Clone(left.sources), strings.ToLower(j.Table.Name)),
		Partitions: j.partitions(), Tasks: j.partitions(),
	}
	p.Stream = stream
	if stream.Topic == "" {
		stream.Topic = s.Name
	}
	if err := checkStreamTopic(stream, append(slices.Clone(left.reads), j.Table)...); err != nil {
		return nil, err
	}
	key := p.streamJoinKeyColumn
	if j.Within == nil {
		key = func(cols []catalog.Column) error {
			return p.joinKeyColumn(cols, len(RecordInput(left.src))+j.Table.Schema.KeyIndexes()[0])
		}
	}
	cols, err := p.columns(b, s, opts, items, key)
	if err != nil {
		return nil, err
	}
	stream.Schema.Columns = cols
	if stream.KeyFormat == "" {
		stream.KeyFormat = FormatKafka
	}
	k := p.KeyColumn
	if stream.KeyFormat == FormatKafka && !kafkaKeyType(cols[k].Type) {
		return nil, pgerr.New(pgerr.DatatypeMismatch, "key column %s of stream %s is %s, which key_format 'kafka' cannot hold", cols[k].Name, s.Name, cols[k].Type).
			WithHint("Use WITH (key_format = 'json'), or cast the key.")
	}
	if len(cols) == 1 {
		return nil, pgerr.New(pgerr.InvalidTableDefinition, "stream %s needs at least one value column besides its key", s.Name).
			WithHint("Select another column.")
	}
	p.Rekey = true
	return p, nil
}

// partitions is the number of partitions the join runs in: the table's
// for a stream–table join, Parts' for a stream–stream join.
func (j *StreamJoin) partitions() int32 {
	if j.Within != nil {
		return j.Parts.Partitions
	}
	return j.Table.Partitions
}

// bindJoin binds the join of left with join's right relation: a table
// (the record looks up its key) or a stream (WITHIN). It returns the
// join and the binder of its joined input, the left's record input
// followed by the right's.
func bindJoin(cat *catalog.Catalog, join *sql.Join, left *joinLeft) (*StreamJoin, *binder, error) {
	right, ok := join.Right.(*sql.TableRef)
	if !ok {
		return nil, nil, pgerr.New(pgerr.FeatureNotSupported, "a derived stream joins streams and tables, not subqueries or functions").WithPosition(join.Pos).
			WithHint("Derive the subquery's result as a stream or table first, and join that.")
	}
	if len(join.Using) > 0 || join.Natural {
		return nil, nil, pgerr.New(pgerr.FeatureNotSupported, "JOIN ... USING and NATURAL JOIN in a derived stream are not supported").WithPosition(join.Pos).
			WithHint("Write the condition with ON left.column = right.column.")
	}
	tbl, err := cat.Resolve(right.Name)
	if err != nil {
		return nil, nil, withPos(err, right.Pos)
	}
	if tbl.Kind == catalog.KindStream {
		return bindStreamStreamJoin(join, left, tbl, right)
	}
	switch join.Kind {
	case sql.JoinInner, sql.JoinLeft:
	default:
		return nil, nil, pgerr.New(pgerr.FeatureNotSupported, "%s of a stream and a table is not supported", join.Kind).WithPosition(join.Pos).
			WithHint("A stream joins a table with JOIN or LEFT JOIN: each record looks up the table's row for its key.")
	}
	if join.Within != nil {
		return nil, nil, pgerr.New(pgerr.FeatureNotSupported, "WITHIN bounds a join of two streams, and %s is a %s", tbl.Name, strings.ToLower(string(tbl.Kind))).
			WithPosition(join.Within.Pos).
			WithHint("Leave WITHIN out: a stream record joins the table's row as of its time.")
	}
	keys := tbl.Schema.KeyIndexes()
	if len(keys) != 1 {
		return nil, nil, pgerr.New(pgerr.FeatureNotSupported, "joining %s %s, whose key has %d columns, is not supported yet", strings.ToLower(string(tbl.Kind)), tbl.Name, len(keys)).WithPosition(right.Pos)
	}
	src := left.src
	j := &StreamJoin{Table: tbl, Alias: right.Alias, Left: join.Kind == sql.JoinLeft}
	nsrc := len(left.cols)
	input := append(slices.Clone(left.cols), tbl.Schema.Columns...)
	b := &binder{cols: input, rels: append(slices.Clone(left.rels), boundRel{name: tbl.Name, alias: right.Alias, lo: nsrc, hi: len(input)})}
	if join.On == nil {
		return nil, nil, pgerr.New(pgerr.FeatureNotSupported, "a join of a stream and a table needs ON").WithPosition(join.Pos)
	}
	b.clause = "JOIN conditions"
	if j.Key, err = joinKey(b, join.On, nsrc, nsrc+keys[0], tbl); err != nil {
		return nil, nil, err
	}
	b.clause = ""
	j.Key = left.asStageKey(j.Key)
	// The stream's records are where the join needs them only when it is
	// keyed by the very column the join looks up, in the table's key
	// bytes, partitions and partitioner.
	ref, direct := j.Key.(*ColRef)
	srcKeys := src.Schema.KeyIndexes()
	direct = direct && len(srcKeys) == 1 && ref.Idx == srcKeys[0] && src.Schema.Columns[ref.Idx].Type == tbl.Schema.Columns[keys[0]].Type &&
		sameKeyBytes(src, tbl) && src.Partitions == tbl.Partitions && src.Partitioner == tbl.Partitioner
	j.Route = !direct
	return j, b, nil
}

// joinKey binds ON, which must be one equality between an expression
// over the stream's record (columns below nsrc) and the table's key
// column (keyIdx), and returns the stream side, coerced to the key's
// type.
func joinKey(b *binder, on sql.Expr, nsrc, keyIdx int, tbl *catalog.Relation) (Scalar, error) {
	bin, ok := on.(*sql.Binary)
	if !ok || bin.Op != "=" {
		return nil, pgerr.New(pgerr.FeatureNotSupported, "the join condition of a stream and a table must be stream expression = %s.%s", tbl.Name, tbl.Schema.Columns[keyIdx-nsrc].Name).
			WithPosition(on.Position()).
			WithHint("The table is looked up by its key; put other conditions in WHERE.")
	}
	l, err := b.bind(bin.L)
	if err != nil {
		return nil, err
	}
	r, err := b.bind(bin.R)
	if err != nil {
		return nil, err
	}
	isKey := func(s Scalar) bool { ref, ok := s.(*ColRef); return ok && ref.Idx == keyIdx }
	onStream := func(s Scalar) bool {
		ok := true
		walkScalar(s, func(x Scalar) {
			if ref, isRef := x.(*ColRef); isRef && ref.Idx >= nsrc {
				ok = false
			}
		})
		return ok
	}
	side, pos := l, bin.L.Position()
	switch {
	case isKey(r) && onStream(l):
	case isKey(l) && onStream(r):
		side, pos = r, bin.R.Position()
	default:
		return nil, pgerr.New(pgerr.FeatureNotSupported, "the join condition of a stream and a table must equal the table's key %s.%s to an expression of the stream's columns", tbl.Name, tbl.Schema.Columns[keyIdx-nsrc].Name).
			WithPosition(on.Position()).
			WithHint("The table is looked up by its key; a join on other columns needs a table keyed by them.")
	}
	kt := b.cols[keyIdx].Type
	k, err := b.coerce(side, kt, pos, "join key")
	if err != nil {
		return nil, pgerr.New(pgerr.DatatypeMismatch, "the join compares %s with key %s.%s, which is %s", side.Type(), tbl.Name, b.cols[keyIdx].Name, kt).
			WithPosition(pos).WithHint("Cast the stream's side to %s.", kt)
	}
	return k, nil
}

// joinKeyColumn marks the key of a join's derived stream: the join key,
// selected as the stream's expression or the table's key column, as in
// ksqlDB.
func (p *StreamPlan) joinKeyColumn(cols []catalog.Column, tableKey int) error {
	want := p.Join.Key.String()
	for i, o := range p.Output {
		if ref, ok := o.(*ColRef); ok && ref.Idx == tableKey || o.String() == want {
			cols[i].Key, p.KeyColumn = true, i
			return nil
		}
	}
	return pgerr.New(pgerr.InvalidColumnReference, "stream %s must select its join key (%s or %s.%s)", p.Stream.Name, want,
		p.Join.Table.Name, p.Join.Table.Schema.Columns[tableKey-len(RecordInput(p.Source))].Name).
		WithHint("A stream–table join is keyed by the join key, as in ksqlDB; select it, or give the stream another key with PARTITION BY.")
}

// expandJoinStar expands * (every column of both relations, the
// stream's first) and rel.* in a join's select list.
func expandJoinStar(items []sql.SelectItem, b *binder, input []catalog.Column) ([]sql.SelectItem, error) {
	var out []sql.SelectItem
	for _, it := range items {
		if !it.Star {
			out = append(out, it)
			continue
		}
		found := false
		for _, r := range b.rels {
			if it.Table != "" && !strings.EqualFold(it.Table, r.visible()) {
				continue
			}
			found = true
			for _, c := range input[r.lo:r.hi] {
				if !c.Hidden {
					out = append(out, sql.SelectItem{Expr: &sql.ColumnRef{Table: r.visible(), Name: c.Name}, Text: c.Name})
				}
			}
		}
		if !found {
			return nil, pgerr.New(pgerr.UndefinedTable, "missing FROM-clause entry for table %q", it.Table)
		}
	}
	return out, nil
}

// checkStreamTopic checks the topic a derived stream writes: a user's,
// not one it reads.
func checkStreamTopic(stream *catalog.Relation, reads ...*catalog.Relation) error {
	if catalog.InternalTopic(stream.Topic) {
		return pgerr.New(pgerr.InsufficientPrivilege, "stream %s cannot write to topic %s: it is an internal topic of basin or Kafka", stream.Name, stream.Topic).
			WithHint("Name a topic of your own in kafka_topic.")
	}
	for _, r := range reads {
		if strings.EqualFold(stream.Topic, r.Topic) {
			return pgerr.New(pgerr.InvalidObjectDefinition, "stream %s cannot write to topic %s, which it reads as %s", stream.Name, stream.Topic, r.Name).
				WithHint("Name another topic in kafka_topic.")
		}
	}
	return nil
}

// withPos sets the position of a coded error.
func withPos(err error, pos int) error {
	if pe, ok := pgerr.As(err); ok {
		pe.WithPosition(pos)
	}
	return err
}

// joinString renders a join for EXPLAIN.
func (j *StreamJoin) String() string {
	if j.Within != nil {
		kind := "Join"
		switch {
		case j.Full:
			kind = "Full join"
		case j.Left:
			kind = "Left join"
		}
		return fmt.Sprintf("%s stream %s on %s = %s, %s (both streams' records of the window kept in Pebble with a changelog; an unmatched record of an outer side emitted once no match can come)",
			kind, j.Table.Name, j.Key, j.RightKey, j.Within)
	}
	kind := "Join"
	if j.Left {
		kind = "Left join"
	}
	if j.Table.Kind == catalog.KindView {
		return fmt.Sprintf("%s view %s on key = %s (the view's rows as the join task has read them from its changelog; %d partitions)",
			kind, j.Table.Name, j.Key, j.Table.Partitions)
	}
	return fmt.Sprintf("%s table %s on key = %s (the table's rows as the join task has read them; topic %s, %d partitions)",
		kind, j.Table.Name, j.Key, j.Table.Topic, j.Table.Partitions)
}
