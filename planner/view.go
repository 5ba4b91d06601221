package planner

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/serde"
	"github.com/basindb/basin/sql"
)

// ViewPlan is the streaming topology of a CTAS view:
//
//	source ─► filter ─► [re-key through a repartition topic] ─► aggregate ─► project ─► view
//	source ─► filter ─► project ─► view            (no GROUP BY: keyed as the source)
//
// Expressions are bound over the source row (Filter, GroupBy, Aggs) or
// over the aggregated row of group values then aggregate results
// (Output and Having of a grouped view; Output of an ungrouped view is
// over the source row).
type ViewPlan struct {
	View   *catalog.Relation
	Source *catalog.Relation

	Filter  Scalar
	Grouped bool
	GroupBy []Scalar
	Aggs    []AggSpec
	Having  Scalar
	Output  []Scalar

	// Join is the join stage of a view over two tables joined on their
	// keys; Source is then its Joined relation, which the view reads as
	// a view (Source.Kind is KindView).
	Join *TableJoin
	// Stages, when the view reads a join whose first relation is a
	// stream (a stream–table or stream–stream join, or a chain of them),
	// are the join stages that derive the joined stream, as a derived
	// stream's (StreamPlan.Stages); Source is the last one's stream.
	Stages []*StreamPlan
	// Coords is set when the input row has the source stream's record
	// coordinates, ROWPARTITION and ROWOFFSET, after ROWTIME
	// (SourceInput): the view reads one stream. A re-keyed record's are
	// its source record's, which its repartition record's source header
	// carries.
	Coords bool

	// KeyGroup maps each key column of the view (in schema order) to its
	// GroupBy index (grouped views) or to its source column index
	// (ungrouped views).
	KeyGroup []int
	// Repartition is set when the view's key is not the source's key, so
	// records must be re-keyed through the repartition topic to reach the
	// task that owns their group.
	Repartition bool
	// Retract is set for a grouped view over a table, whose rows change
	// and leave: each change takes the row's old contribution back out
	// of its group (eval.NewRetractingAggregator) and adds the new one; a
	// group with no rows left leaves the view. A re-keyed one reads its
	// changes from the change stage (stream's changeTask), which keeps
	// each source key's last row.
	Retract bool
	// Positions are the topics the view's positions are in: its
	// source's, the two tables' of a join, or for a view over a view,
	// those that view's are in (positions compose). SourcePositions are
	// those of what a re-keyed view reads, partition by partition: a
	// view regrouping a view or a join (Regroups) takes the position of
	// each of the source's partitions from the change stage and
	// composes them.
	Positions       []PositionSource
	SourcePositions []PositionSource
	// Marks are, for a view of a stream's join, how the position
	// markers of the joined stream it reads compose.
	Marks *Marks

	// winNames names a windowed view's window bounds (window.go).
	winNames windowNames
}

// PositionSource is a topic a view's positions are in. All is set when
// each partition of the view reflects every partition of the topic
// (some view on the way re-keys, or a join reads all of a table), not
// only its own.
type PositionSource struct {
	Topic string
	All   bool
}

// Regroups reports whether the view groups a view or a join (a source
// read as a changelog of rows) by other than its key: a change stage per
// partition of that changelog keeps each key's last row and sends the
// old and new ones to their groups' partitions.
func (p *ViewPlan) Regroups() bool {
	return p.Retract && p.Repartition && p.Source.Kind == catalog.KindView
}

// PositionTopics are the topics of p.Positions.
func (p *ViewPlan) PositionTopics() []string { return positionTopics(p.Positions) }

func positionTopics(ps []PositionSource) []string {
	out := make([]string, len(ps))
	for i, s := range ps {
		out[i] = s.Topic
	}
	return out
}

// Partitions is the view's partition count.
func (p *ViewPlan) Partitions() int32 { return p.View.Partitions }

// String renders the plan for EXPLAIN.
func (p *ViewPlan) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Sink %s (%d partitions, key %s)\n", p.View.Name, p.View.Partitions, keyNames(p.View))
	if topic := PublishedTopic(p.View); topic != "" {
		windowed := ""
		if w := p.View.Window; w != nil {
			windowed = ", the key followed by the window's start (8 bytes, big-endian milliseconds) as ksqlDB's"
			if w.Kind == catalog.WindowSession {
				windowed = ", the key followed by the session's end and start (8 bytes each, big-endian milliseconds) as ksqlDB's"
			}
		}
		fmt.Fprintf(&b, "  Publish rows to topic %s (upserts and tombstones, key_format %s%s, value_format %s)\n", topic, p.View.KeyFormat, windowed, p.View.ValueFormat)
	}
	if p.Grouped {
		if p.Having != nil {
			fmt.Fprintf(&b, "  Filter (HAVING) %s\n", p.Having)
		}
		var aggs, groups []string
		for _, a := range p.Aggs {
			aggs = append(aggs, a.String())
		}
		for _, g := range p.GroupBy {
			groups = append(groups, g.String())
		}
		retract := ""
		if p.Retract {
			retract = "; retracting: a changed or deleted row is taken back, an empty group leaves"
		}
		fmt.Fprintf(&b, "  Aggregate group=[%s] aggs=[%s] (state in Pebble, changelog %s%s)\n", strings.Join(groups, ", "), strings.Join(aggs, ", "), "topic", retract)
		if w := p.View.Window; w != nil {
			fmt.Fprintf(&b, "  %s\n", describeWindow(w))
		}
		if p.Repartition {
			if by := groups[:p.UserGroups()]; len(by) > 0 {
				fmt.Fprintf(&b, "  Repartition by [%s]\n", strings.Join(by, ", "))
			} else {
				b.WriteString("  Repartition into one partition (the window's group has no other column)\n")
			}
			if p.Retract {
				fmt.Fprintf(&b, "  Changes of %s (each key's last row kept, old and new row sent)\n", p.Source.Name)
			}
		}
	} else {
		var outs []string
		for _, o := range p.Output {
			outs = append(outs, o.String())
		}
		fmt.Fprintf(&b, "  Project [%s]\n", strings.Join(outs, ", "))
	}
	if p.Filter != nil {
		fmt.Fprintf(&b, "  Filter %s\n", p.Filter)
	}
	if p.Join != nil {
		chain := p.Join.Chain()
		for n := len(chain); n > 0; n-- {
			j := chain[n-1]
			if len(chain) == 1 {
				fmt.Fprintf(&b, "  Join stage: %s\n", j)
			} else {
				fmt.Fprintf(&b, "  Join stage %d: %s\n", n, j)
			}
			for i, rel := range []*catalog.Relation{j.Left, j.Right} {
				switch {
				case i == 0 && j.Prev != nil:
					fmt.Fprintf(&b, "    Source join stage %d (its changelog, %d partitions)\n", n-1, rel.Partitions)
				case j.Views[i] != nil:
					fmt.Fprintf(&b, "    Source view %s (its changelog, %d partitions; positions in %s)\n", rel.Name, rel.Partitions, topicList(positionTopics(j.Views[i])))
				default:
					fmt.Fprintf(&b, "    Source %s %s (topic %s, %d partitions)\n", sideKind(rel), rel.Name, rel.Topic, rel.Partitions)
				}
			}
		}
		return b.String()
	}
	if p.Source.Kind == catalog.KindView {
		fmt.Fprintf(&b, "  Source view %s (its changelog, partition by partition; positions in %s)\n", p.Source.Name, topicList(p.PositionTopics()))
		return b.String()
	}
	if n := len(p.Stages); n > 0 {
		fmt.Fprintf(&b, "  Source stream of join stage %d (internal, %d partitions)\n", n, p.Source.Partitions)
		(&StreamPlan{Stages: p.Stages}).writeStages(&b)
		return b.String()
	}
	if !p.Repartition {
		part := p.View.Partitioner
		if part == "" {
			part = "murmur2"
		}
		fmt.Fprintf(&b, "  Forward misplaced records to their key's partition (partitioner %s)\n", part)
	}
	fmt.Fprintf(&b, "  Source %s %s (topic %s, %d partitions)\n", strings.ToLower(string(p.Source.Kind)), p.Source.Name, p.Source.Topic, p.Source.Partitions)
	return b.String()
}

// topicList names topics for EXPLAIN: "topic t" or "topics t, u".
func topicList(topics []string) string {
	if len(topics) == 1 {
		return "topic " + topics[0]
	}
	return "topics " + strings.Join(topics, ", ")
}

func keyNames(r *catalog.Relation) string {
	var ks []string
	for _, i := range r.Schema.KeyIndexes() {
		ks = append(ks, r.Schema.Columns[i].Name)
	}
	return "(" + strings.Join(ks, ", ") + ")"
}

// streamJoin reports whether join's first relation is a stream.
func streamJoin(cat *catalog.Catalog, join *sql.Join) bool {
	var from sql.FromItem = join
	for {
		j, ok := from.(*sql.Join)
		if !ok {
			break
		}
		from = j.Left
	}
	ref, ok := from.(*sql.TableRef)
	if !ok {
		return false
	}
	rel, err := cat.Resolve(ref.Name)
	return err == nil && rel.Kind == catalog.KindStream
}

// PlanView plans CREATE TABLE ... AS SELECT against cat. The returned
// plan's View is the relation to record (Version unset until the command
// is applied).
func PlanView(cat *catalog.Catalog, s *sql.CreateTableAs, text string) (*ViewPlan, error) {
	p := planBucketView(cat, s, text) // windowed by a date bucket of its GROUP BY (datebucket.go)
	if p == nil {
		var err error
		if p, err = planView(cat, s, text, nil); err != nil {
			return nil, err
		}
	}
	// The value format the rows published to kafka_topic are written
	// in (formats.go), checked against the columns.
	view := p.View
	if f := strings.ToLower(view.Options["value_format"]); f != "" {
		view.ValueFormat = f
	}
	if err := checkFormats(view, view.Options, "table"); err != nil {
		return nil, err
	}
	return p, nil
}

// planView plans the view, windowed by bucket when it is set.
func planView(cat *catalog.Catalog, s *sql.CreateTableAs, text string, bucket *dateBucket) (*ViewPlan, error) {
	opts, err := checkOptions(s.With, viewOptions, "table")
	if err != nil {
		return nil, err
	}
	sel := s.Select
	names := ksqlWindowNames
	wf, err := windowTableFunc(cat, sel)
	if err != nil {
		return nil, err
	}
	if wf != nil {
		// TUMBLE or HOP: the same query over the stream, with WINDOW.
		if sel, err = wf.tableFuncSelect(sel); err != nil {
			return nil, err
		}
		names = windowNames{start: tableFuncStart, end: tableFuncEnd, bound: wf.bound}
	}
	if bucket != nil {
		sel, names = bucket.windowSelect(sel), bucket.names()
	}
	if err := refuseRenamedColumns(sel.From, "a view"); err != nil {
		return nil, err
	}
	var p *ViewPlan
	var b *binder
	var joined []string // the relations a stream's join reads
	if join := joinOf(sel); join != nil && streamJoin(cat, join) {
		// A join of a stream: its joined records are a stream, which
		// the view reads, as it would a derived stream of them.
		if err := checkPersistentClauses(sel, "view"); err != nil {
			return nil, err
		}
		n := 0
		left, err := planJoinLeft(cat, join, &n)
		if err != nil {
			return nil, err
		}
		// Its last stage marks the stream: each view partition
		// reflects what all that stage's tasks do.
		last := left.stages[len(left.stages)-1]
		p = &ViewPlan{Source: left.src, Stages: left.stages, Marks: &Marks{Sources: last.Positions, Writers: last.Stream.Partitions}}
		p.Positions = p.Marks.Reflects()
		b = &binder{cols: left.cols, rels: left.rels}
		joined = left.sources
	} else if join != nil {
		if err := checkPersistentClauses(sel, "view"); err != nil {
			return nil, err
		}
		j, jb, err := planTableJoin(cat, s.Name, join)
		if err != nil {
			return nil, err
		}
		// Each partition of the join stage reflects the same partition
		// of both tables.
		p = &ViewPlan{Source: j.Joined, Join: j, Positions: j.positions()}
		b = jb
	} else {
		from, src, err := persistentSource(cat, sel, "TABLE", "view", "stream or table")
		if err != nil {
			return nil, err
		}
		p = &ViewPlan{Source: src, Positions: []PositionSource{{Topic: src.Topic}}}
		if src.Kind == catalog.KindView {
			// A view over a view reads its changelog, whose markers
			// carry its positions: this view's are in the same
			// topics' offsets.
			if p.Positions, err = viewPositions(cat, src); err != nil {
				return nil, err
			}
		}
		b = &binder{cols: SourceInput(src), rel: src.Name, alias: from.Alias}
		p.Coords = src.Kind == catalog.KindStream
	}
	src := p.Source
	items, err := bindRecordFilter(b, sel, src, &p.Filter)
	if err != nil {
		return nil, err
	}
	view := &catalog.Relation{
		Name:        s.Name,
		Kind:        catalog.KindView,
		KeyFormat:   strings.ToLower(opts["key_format"]),
		ValueFormat: FormatJSON,
		Options:     opts,
		SQL:         text,
		Sources:     []string{strings.ToLower(src.Name)},
	}
	if p.Join != nil {
		view.Sources = p.Join.sources()
	}
	if joined != nil {
		view.Sources = joined
	}
	p.View = view
	p.winNames = names
	p.Grouped = len(sel.GroupBy) > 0 || sel.Having != nil || hasAggregate(sel)
	if view.Window, err = viewWindow(sel, src, s.Name); err != nil {
		return nil, err
	}
	if wf != nil {
		// No record is late and no window expires: the view is its
		// query's answer over every record.
		view.Window.Grace, view.Window.Retention = unboundedMs, unboundedMs
		view.Window.Bound = wf.bound
		view.Window.Names = [2]string{tableFuncStart, tableFuncEnd}
	}
	if bucket != nil {
		bucket.setWindow(view.Window)
	}
	groupBy := sel.GroupBy
	if view.Window != nil {
		if p.Join != nil {
			return nil, pgerr.New(pgerr.FeatureNotSupported, "WINDOW over a join of tables is not supported").WithPosition(sel.Window.Pos).
				WithHint("Window a stream, or a join whose first relation is a stream.")
		}
		if groupBy, err = windowGroups(b, groupBy, names, sel.Window.Pos); err != nil {
			return nil, err
		}
	}
	if p.Grouped {
		// Over a table or a view, rows change and leave: the
		// aggregates take them back.
		p.Retract = src.Kind == catalog.KindTable || src.Kind == catalog.KindView
		if len(sel.GroupBy) == 0 {
			return nil, pgerr.New(pgerr.FeatureNotSupported, "an aggregate view needs GROUP BY").
				WithHint("A view is a table keyed by its GROUP BY columns.")
		}
		g, err := bindGrouped(b, groupBy, items, sel.Having)
		if err != nil {
			return nil, err
		}
		p.GroupBy, p.Aggs, p.Having, p.Output = g.groupBy, g.aggs, g.having, g.output
		if p.Retract {
			if err := refuseRetractedAggs(p.Aggs, src); err != nil {
				return nil, err
			}
		}
		if view.Window != nil {
			if items, err = p.placeWindowColumns(items); err != nil {
				return nil, err
			}
		}
		if p.Join != nil {
			for i, g := range p.GroupBy {
				p.GroupBy[i] = p.Join.ChainKey(g)
			}
		}
	} else {
		if sel.Having != nil {
			return nil, pgerr.New(pgerr.GroupingError, "HAVING needs GROUP BY")
		}
		out, err := b.bindItems(items)
		if err != nil {
			return nil, err
		}
		p.Output = out
		if p.Join != nil {
			if err := p.joinKeyOutput(); err != nil {
				return nil, err
			}
		}
	}
	cols := outputColumns(items, p.Output)
	if err := markViewKeys(p, cols, items); err != nil {
		return nil, err
	}
	if view.Window != nil {
		p.markWindow(cols)
	}
	if err := checkKeyTypes(cols); err != nil {
		return nil, err
	}
	view.Schema.Columns = cols
	if view.KeyFormat == "" {
		view.KeyFormat = FormatKafka
		if len(p.PartitionKeyGroup()) > 1 || !kafkaKeys(cols) {
			// A key of a type the Kafka serializers lack (DATE,
			// INTERVAL, NUMERIC, ...) is written as JSON.
			view.KeyFormat = FormatJSON
		}
	}
	if serde.RegistryFormat(view.KeyFormat) && p.Grouped && opts["kafka_topic"] == "" {
		return nil, pgerr.New(pgerr.InvalidParameterValue, "key_format '%s' of view %s is the key of the records it publishes, and it publishes none", view.KeyFormat, s.Name).
			WithHint("Name the topic to publish to in kafka_topic, or leave key_format out.")
	}
	keys := view.PartitionKeyIndexes()
	if len(keys) == 1 && view.KeyFormat == FormatKafka && !kafkaKeyType(cols[keys[0]].Type) {
		return nil, pgerr.New(pgerr.FeatureNotSupported, "key column %s of view %s is %s, which key_format 'kafka' cannot hold", cols[keys[0]].Name, s.Name, cols[keys[0]].Type).
			WithHint("Use WITH (key_format = 'json'), or leave key_format out.")
	}
	if len(keys) > 1 && view.KeyFormat == FormatKafka {
		return nil, pgerr.New(pgerr.InvalidTableDefinition, "view %s has %d key columns, but key_format 'kafka' holds one", s.Name, len(keys)).
			WithHint("Use WITH (key_format = 'json'), or leave key_format out.")
	}
	if view.KeyFormat == FormatKafka && !kafkaKeys(cols) {
		return nil, pgerr.New(pgerr.DatatypeMismatch, "a key column of view %s has a type key_format 'kafka' cannot hold", s.Name).
			WithHint("Use WITH (key_format = 'json'), or leave key_format out.")
	}
	view.Partitions = src.Partitions
	if v, ok := opts["partitions"]; ok {
		n, _ := strconv.ParseInt(v, 10, 32)
		view.Partitions = int32(n)
	}
	p.Repartition = needsRepartition(p)
	if !p.Repartition && view.Partitions != src.Partitions {
		// Keyed as the source, the view can only be partitioned as the
		// source is, unless records are re-keyed.
		p.Repartition = p.Grouped
		if !p.Grouped {
			return nil, pgerr.New(pgerr.InvalidTableDefinition, "view %s keeps the key of %s and so its %d partitions", s.Name, src.Name, src.Partitions).
				WithHint("Leave out the partitions option.")
		}
	}
	if p.Repartition {
		// Each partition of a re-keyed view reflects every partition of
		// what it reads; a view regrouping a view or a join composes
		// its source's partitions' positions (SourcePositions).
		p.SourcePositions = slices.Clone(p.Positions)
		for i := range p.Positions {
			p.Positions[i].All = true
		}
	}
	if err := checkPublished(view, src); err != nil {
		return nil, err
	}
	if !p.Repartition {
		// Keyed and partitioned as its source, a view places its rows by
		// the source's partitioner: a record on the partition that rule
		// gives its key is processed where it is read, and only a
		// misplaced one is forwarded (stream's viewTask). A re-keyed view
		// places its rows by murmur2, as every repartition record is.
		view.Partitioner = src.Partitioner
	}
	return p, nil
}

// viewPositions returns the topics the positions of view are in
// (ViewPlan.Positions), from its plan.
func viewPositions(cat *catalog.Catalog, view *catalog.Relation) ([]PositionSource, error) {
	stmts, err := sql.ParseStatements(view.SQL)
	if err != nil {
		return nil, err
	}
	ctas, ok := stmts[0].Stmt.(*sql.CreateTableAs)
	if len(stmts) != 1 || !ok {
		return nil, pgerr.New(pgerr.InternalError, "view %s: its stored statement is not one CREATE TABLE ... AS", view.Name)
	}
	plan, err := PlanView(cat, ctas, view.SQL)
	if err != nil {
		return nil, err
	}
	return plan.Positions, nil
}

// joinKeyOutput makes the select list's expressions that always equal
// the join key (TableJoin.asKey) the key column of the view's Joined source,
// by which the view is keyed: one of them must be selected.
func (p *ViewPlan) joinKeyOutput() error {
	found := false
	for i, o := range p.Output {
		p.Output[i] = p.Join.ChainKey(o)
		ref, ok := p.Output[i].(*ColRef)
		found = found || ok && ref.Idx == p.Join.JoinedKey()
	}
	if !found {
		return pgerr.New(pgerr.InvalidTableDefinition, "view %s must select the join key: %s", p.View.Name, p.Join.keyChoices()).
			WithHint("A view of a join of two tables is keyed by their key, which no row lacks.")
	}
	return nil
}

// bindRecordFilter binds the WHERE of a persistent query over source
// records into filter, and returns its select list with * expanded.
func bindRecordFilter(b *binder, sel *sql.Select, src *catalog.Relation, filter *Scalar) ([]sql.SelectItem, error) {
	if sel.Where != nil {
		b.clause = "WHERE"
		f, err := b.bind(sel.Where)
		if err != nil {
			return nil, err
		}
		if *filter, err = b.coerce(f, catalog.Boolean, sel.Where.Position(), "argument of WHERE"); err != nil {
			return nil, err
		}
		b.clause = ""
	}
	if b.rels != nil {
		return expandJoinStar(sel.Items, b, b.cols)
	}
	return expandStar(sel.Items, src.Schema.Columns)
}

// persistentSource checks the FROM and the clauses of the SELECT of a
// persistent query (CREATE kind ... AS, writing a what that reads one
// sources) and resolves its source.
func persistentSource(cat *catalog.Catalog, sel *sql.Select, kind, what, sources string) (*sql.TableRef, *catalog.Relation, error) {
	if len(sel.From) == 0 {
		return nil, nil, pgerr.New(pgerr.FeatureNotSupported, "CREATE %s AS needs a FROM clause naming a %s", kind, sources)
	}
	from := sel.Table()
	if from == nil || len(sel.SetOps) > 0 {
		return nil, nil, pgerr.New(pgerr.FeatureNotSupported, "joins, subqueries in FROM and set operations are not supported in a persistent query").
			WithHint("A %s reads one %s.", what, sources)
	}
	if err := checkPersistentClauses(sel, what); err != nil {
		return nil, nil, err
	}
	src, err := cat.Resolve(from.Name)
	if err != nil {
		if pe, ok := pgerr.As(err); ok {
			pe.WithPosition(from.Pos)
		}
		return nil, nil, err
	}
	return from, src, nil
}

// checkPersistentClauses refuses the clauses of a SELECT that a
// persistent query writing a what cannot keep.
func checkPersistentClauses(sel *sql.Select, what string) error {
	if sel.GroupingSets != nil {
		return pgerr.New(pgerr.FeatureNotSupported, "ROLLUP, CUBE and GROUPING SETS are not supported in a persistent query").
			WithHint("Group the %s by every column, and apply them when reading it.", what)
	}
	if sel.Limit != nil || sel.Offset != nil || len(sel.OrderBy) > 0 || sel.Distinct || len(sel.DistinctOn) > 0 {
		return pgerr.New(pgerr.FeatureNotSupported, "ORDER BY, LIMIT, OFFSET and DISTINCT are not supported in a persistent query").
			WithHint("Apply them when reading the %s instead.", what)
	}
	return nil
}

// markViewKeys decides the view's key columns. A grouped view is keyed by
// its GROUP BY expressions, each of which must be selected; an ungrouped
// view keeps the source's key, whose columns must be selected as they are.
func markViewKeys(p *ViewPlan, cols []catalog.Column, items []sql.SelectItem) error {
	if err := checkColumnNames(cols, items, "view"); err != nil {
		return err
	}
	if p.Grouped {
		used := make([]bool, len(p.GroupBy))
		ng := p.UserGroups()
		for i, o := range p.Output {
			ref, ok := o.(*ColRef)
			if !ok || ref.Idx >= len(p.GroupBy) || used[ref.Idx] {
				continue
			}
			switch {
			case ref.Idx == ng && p.View.Window != nil && cols[i].Name != p.winNames.start:
				continue // WINDOWSTART AS other: a value column
			case ref.Idx == ng+1 && p.View.Window != nil:
				// WINDOWEND is no key: WINDOWSTART decides it.
				used[ref.Idx] = used[ref.Idx] || cols[i].Name == p.winNames.end
				continue
			}
			used[ref.Idx] = true
			cols[i].Key = true
			p.KeyGroup = append(p.KeyGroup, ref.Idx)
		}
		if p.View.Window != nil && p.winNames.selectedOnly() {
			used[ng+1] = true // window_end need not be selected
		}
		for i, u := range used {
			if !u {
				return pgerr.New(pgerr.GroupingError, "GROUP BY expression %s must be in the select list of a view", p.GroupBy[i]).
					WithHint("A view is keyed by its GROUP BY columns; select each of them.")
			}
		}
		return nil
	}
	srcKeys := p.Source.Schema.KeyIndexes()
	if len(srcKeys) == 0 {
		return pgerr.New(pgerr.InvalidTableDefinition, "view %s has no key: stream %s has no KEY column and there is no GROUP BY", p.View.Name, p.Source.Name).
			WithHint("Aggregate with GROUP BY, or declare a KEY column on the stream.")
	}
	for _, k := range srcKeys {
		found := false
		for i, o := range p.Output {
			if ref, ok := o.(*ColRef); ok && ref.Idx == k && !cols[i].Key {
				cols[i].Key = true
				found = true
				break
			}
		}
		if !found {
			return pgerr.New(pgerr.InvalidTableDefinition, "view %s must select the key column %s of %s", p.View.Name, p.Source.Schema.Columns[k].Name, p.Source.Name).
				WithHint("A view without GROUP BY is keyed as its source.")
		}
	}
	// Key columns in view schema order map to source columns. They must
	// keep the source's order: the key bytes (a JSON object's fields are
	// in column order) decide the partition a row is in.
	for i, c := range cols {
		if c.Key {
			p.KeyGroup = append(p.KeyGroup, p.Output[i].(*ColRef).Idx)
		}
	}
	renamed := false
	// A JSON object's field names are in the key bytes too, and a key
	// in the source's registered schema is written by its field names.
	if len(srcKeys) > 1 || p.Source.KeyFormat == FormatProtobuf {
		for i, c := range cols {
			if c.Key && c.Name != p.Source.Schema.Columns[p.Output[i].(*ColRef).Idx].Name {
				renamed = true
			}
		}
	}
	if !slices.Equal(p.KeyGroup, srcKeys) || renamed {
		names := make([]string, len(srcKeys))
		for i, k := range srcKeys {
			names[i] = p.Source.Schema.Columns[k].Name
		}
		return pgerr.New(pgerr.InvalidTableDefinition, "view %s must select the key columns of %s as they are, in their order (%s)",
			p.View.Name, p.Source.Name, strings.Join(names, ", ")).
			WithHint("A view without GROUP BY is keyed as its source.")
	}
	switch p.View.KeyFormat {
	case "":
		p.View.KeyFormat = p.Source.KeyFormat
	case p.Source.KeyFormat:
	default:
		// Its rows stay in the partitions of the source's key bytes, so
		// a key lookup must hash those bytes.
		return pgerr.New(pgerr.InvalidTableDefinition, "view %s keeps the key of %s and so its key_format %s", p.View.Name, p.Source.Name, p.Source.KeyFormat).
			WithHint("Leave out the key_format option.")
	}
	// And so the options its key is written with: a lookup must hash
	// the bytes the source's key is, in the source's key schema
	// (exec pins the id of a registry's at CREATE).
	for _, k := range keyFormatOptions {
		if _, ok := p.View.Options[k]; ok {
			return pgerr.New(pgerr.InvalidTableDefinition, "view %s keeps the key of %s and so the options its key is written with: %s is not for it", p.View.Name, p.Source.Name, k).
				WithHint("Leave out the %s option.", k)
		}
		if v, ok := p.Source.Options[k]; ok {
			p.View.Options[k] = v
		}
	}
	return nil
}

// keyFormatOptions are the options that say how a relation's record
// keys are written besides key_format.
var keyFormatOptions = []string{"key_delimiter", "key_schema_id", "key_schema_full_name"}

// KeyedAs returns, for a view whose rows stay in the partitions of its
// source's keys (not re-keyed), the relation whose record keys those
// are: its source, or the first left table of its join; nil for a
// re-keyed view.
func (p *ViewPlan) KeyedAs() *catalog.Relation {
	if p.Repartition {
		return nil
	}
	if p.Join == nil {
		return p.Source
	}
	j := p.Join
	for j.Prev != nil {
		j = j.Prev
	}
	return j.Left
}

// needsRepartition reports whether the view's key differs from the
// source's, so records must be re-keyed to reach their partition.
func needsRepartition(p *ViewPlan) bool {
	if !p.Grouped {
		return false
	}
	srcKeys := p.Source.Schema.KeyIndexes()
	keyGroup := p.PartitionKeyGroup()
	if len(keyGroup) == 0 {
		// A windowed view keyed by its window alone: its rows are in the
		// partition of the empty key, where every record must go.
		return p.View.Partitions > 1
	}
	if len(srcKeys) != len(keyGroup) || p.View.KeyFormat != p.Source.KeyFormat {
		return true
	}
	if sharedKeyFormat(p.View.KeyFormat) {
		// A key in a schema (or with a delimiter) of the view's own may
		// be other bytes than the source's: re-keyed, the view's keys
		// are in the partitions of its own bytes.
		return true
	}
	viewKeys := p.View.PartitionKeyIndexes()
	for i, g := range keyGroup {
		ref, ok := p.GroupBy[g].(*ColRef)
		if !ok || ref.Idx != srcKeys[i] {
			return true
		}
		// A JSON object key carries the column names: renamed, the same
		// values are other bytes in another partition.
		if len(srcKeys) > 1 && p.View.Schema.Columns[viewKeys[i]].Name != p.Source.Schema.Columns[srcKeys[i]].Name {
			return true
		}
	}
	return false
}

// PublishedTopic is the topic a view publishes its rows to, WITH
// (kafka_topic = ...): each changed row as an upsert keyed by the view's
// key in its key_format, its columns in the value_format, and a
// tombstone for a row that leaves; "" when the view publishes nothing.
func PublishedTopic(view *catalog.Relation) string { return view.Options["kafka_topic"] }

// checkPublished checks the topic a view publishes to: a topic of the
// user's, not one basin or Kafka keeps, and not the one the view reads.
func checkPublished(view, src *catalog.Relation) error {
	topic := PublishedTopic(view)
	switch {
	case topic == "":
		return nil
	case catalog.InternalTopic(topic):
		return internalTopicError("view", view.Name, topic)
	case topic == src.Topic:
		return pgerr.New(pgerr.InvalidObjectDefinition, "view %s cannot publish to topic %s, which it reads as %s", view.Name, topic, src.Name).
			WithHint("Name another topic in kafka_topic.")
	}
	return nil
}

// refuseRenamedColumns refuses FROM t AS x(a, b) in a persistent query,
// which reads its relations' columns by their names: 0A000.
func refuseRenamedColumns(from []sql.FromItem, what string) error {
	for _, it := range from {
		switch it := it.(type) {
		case *sql.TableRef:
			if len(it.Columns) > 0 {
				return pgerr.New(pgerr.FeatureNotSupported, "renaming a relation's columns in FROM is not supported in %s", what).WithPosition(it.Pos).
					WithHint("Rename them in the select list: SELECT col AS name.")
			}
		case *sql.Join:
			if err := refuseRenamedColumns([]sql.FromItem{it.Left, it.Right}, what); err != nil {
				return err
			}
		}
	}
	return nil
}
