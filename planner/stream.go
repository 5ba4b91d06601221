package planner

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/sql"
)

// StreamPlan is the topology of a derived stream (CREATE STREAM ... AS
// SELECT), one stateless task per source partition:
//
//	source ─► filter ─► project ─► [re-key by PARTITION BY] ─► the stream's topic
//
// Filter, Output and PartitionBy are bound over the source record
// (SourceInput: its columns, then ROWTIME, ROWPARTITION and ROWOFFSET).
type StreamPlan struct {
	Stream *catalog.Relation
	Source *catalog.Relation

	Filter Scalar
	Output []Scalar
	// PartitionBy is the new key, nil when the stream keeps its
	// source's; KeyColumn is the output column that holds it.
	PartitionBy Scalar
	KeyColumn   int
	// Join is the table a derived stream's records are joined with; nil
	// without a join. Filter and Output are then over its JoinedInput.
	Join *StreamJoin
	// Stages are the join stages of a join of three or more relations
	// (joinstage.go), innermost first: each writes the intermediate
	// stream the next one, and the last the plan itself, reads as its
	// Source. Their streams are named when the query starts
	// (catalog.Relation.StageOf).
	Stages []*StreamPlan
	// Coords is set when the input row has the source record's
	// coordinates, ROWPARTITION and ROWOFFSET, after ROWTIME
	// (SourceInput): the plan reads one stream, without a join.
	Coords bool
	// Rekey is set when a record goes to the partition its key's bytes
	// hash to (the stream's partitioner) rather than to the partition
	// of the source record: under PARTITION BY, with another partition
	// count than the source's, or when the key's bytes change (another
	// key_format, or renamed columns of a JSON key).
	Rekey bool
	// Positions are what each task of a join reflects, in the topics of
	// the sources beneath it (planPositions); nil for other plans, whose
	// tasks reflect their source's partition.
	Positions []PositionSource
	// Marked is set for a join stage, whose stream only the next stage
	// or a view reads: its tasks put their position markers on it
	// (Marks).
	Marked bool
	// Explode are the Output items that are EXPLODE(array) (explode.go):
	// a record becomes one record per element, the arrays zipped.
	Explode []int
}

// String renders the plan for EXPLAIN.
func (p *StreamPlan) String() string {
	var b strings.Builder
	sink := "Sink stream " + p.Stream.Name
	if p.Stream.Kind == catalog.KindInsert {
		sink = "Insert into stream " + p.Stream.Into
	}
	fmt.Fprintf(&b, "%s (topic %s, %d partitions, key %s, key_format %s, value_format %s; exactly once)\n",
		sink, p.Stream.Topic, p.Stream.Partitions, keyNames(p.Stream), p.Stream.KeyFormat, p.Stream.ValueFormat)
	if p.PartitionBy != nil {
		fmt.Fprintf(&b, "  Re-key by %s (to the partition murmur2 gives the new key)\n", p.PartitionBy)
	} else if p.Rekey {
		part := p.Stream.Partitioner
		if part == "" {
			part = "murmur2"
		}
		fmt.Fprintf(&b, "  Place by key (to the partition %s gives each key)\n", part)
	} else {
		fmt.Fprintf(&b, "  Keep partitions (a record goes to its source record's partition)\n")
	}
	var outs []string
	for _, o := range p.Output {
		outs = append(outs, o.String())
	}
	fmt.Fprintf(&b, "  Project [%s]\n", strings.Join(outs, ", "))
	if len(p.Explode) > 0 {
		fmt.Fprintf(&b, "  Explode (a record per array element, the arrays zipped)\n")
	}
	if p.Filter != nil {
		fmt.Fprintf(&b, "  Filter %s\n", p.Filter)
	}
	if j := p.Join; j != nil && j.Within != nil {
		fmt.Fprintf(&b, "  %s\n", j)
		for _, side := range []struct {
			rel   *catalog.Relation
			key   Scalar
			route bool
		}{{p.Source, j.Key, j.Route}, {j.Table, j.RightKey, j.RouteRight}} {
			if side.route {
				name := side.rel.Name
				if side.rel == p.Source && len(p.Stages) > 0 {
					name = fmt.Sprintf("of join stage %d", len(p.Stages))
				}
				fmt.Fprintf(&b, "  Repartition stream %s by %s (to the join's %d partitions: a routing task per stream partition)\n", name, side.key, j.Parts.Partitions)
			}
		}
		fmt.Fprintf(&b, "  Source streams %s and %s (topic %s, %d partitions; a join task per join partition)\n",
			p.sourceString(), j.Table.Name, j.Table.Topic, j.Table.Partitions)
		p.writeStages(&b)
		return b.String()
	}
	if j := p.Join; j != nil {
		fmt.Fprintf(&b, "  %s\n", j)
		if j.Route {
			name := p.Source.Name
			if len(p.Stages) > 0 {
				name = fmt.Sprintf("of join stage %d", len(p.Stages))
			}
			fmt.Fprintf(&b, "  Repartition stream %s by %s (to the %s's partitions: a routing task per stream partition)\n", name, j.Key, sideKind(j.Table))
		}
		fmt.Fprintf(&b, "  Source stream %s and %s %s (a join task per %s partition)\n", p.sourceString(), sideKind(j.Table), j.Table.Name, sideKind(j.Table))
		p.writeStages(&b)
		return b.String()
	}
	fmt.Fprintf(&b, "  Source stream %s (topic %s, %d partitions; a task per partition)\n", p.Source.Name, p.Source.Topic, p.Source.Partitions)
	return b.String()
}

// writeStages writes the join stages of a join of three or more
// relations for EXPLAIN, the last first: what each joins, its
// repartitions and its sources.
func (p *StreamPlan) writeStages(b *strings.Builder) {
	for i := len(p.Stages) - 1; i >= 0; i-- {
		st := p.Stages[i]
		fmt.Fprintf(b, "  Join stage %d (%d partitions; every column of the relations it joins, to an internal stream keyed by %s, exactly once):\n",
			i+1, st.Stream.Partitions, st.Output[0])
		lines := strings.Split(strings.TrimSuffix(st.String(), "\n"), "\n")
		for _, line := range lines[1:] {
			if strings.Contains(line, "Project [") || strings.Contains(line, "Place by key") || strings.Contains(line, "Join stage") {
				continue
			}
			if strings.HasPrefix(line, "    ") {
				break // an earlier stage's, written next
			}
			fmt.Fprintf(b, "  %s\n", line)
		}
	}
}

// sourceString names a join's left stream for EXPLAIN: a stream and its
// topic, or the last join stage's internal stream.
func (p *StreamPlan) sourceString() string {
	if n := len(p.Stages); n > 0 {
		return fmt.Sprintf("of join stage %d (internal, %d partitions)", n, p.Source.Partitions)
	}
	return fmt.Sprintf("%s (topic %s, %d partitions)", p.Source.Name, p.Source.Topic, p.Source.Partitions)
}

// streamOptions are the WITH options of CREATE STREAM ... AS SELECT.
var streamOptions = map[string]option{
	"kafka_topic":       {},
	"partitions":        {check: positiveInt},
	"key_format":        {check: checkStreamKeyFormat},
	"value_format":      {check: checkValueFormat},
	"value_delimiter":   {check: checkDelimiter},
	"wrap_single_value": {check: checkBool},
	// value_schema_id names the registry schema an avro value is
	// written with; value_schema_full_name the name of the one basin
	// registers.
	"value_schema_id":        {check: checkSchemaID},
	"value_schema_full_name": {check: checkFullName},
	// The same for keys, in key_format 'delimited' and the registry's.
	"key_delimiter":        {check: checkDelimiter},
	"key_schema_id":        {check: checkSchemaID},
	"key_schema_full_name": {check: checkFullName},
}

// PlanStream plans CREATE STREAM ... AS SELECT against cat. The returned
// plan's Stream is the relation to record (Version unset until the
// command is applied).
func PlanStream(cat *catalog.Catalog, s *sql.CreateStreamAs, text string) (*StreamPlan, error) {
	p, err := planStream(cat, s, text)
	if err != nil {
		return nil, err
	}
	// The value format the stream's records are written in (formats.go),
	// checked against its columns once they are known.
	rel := p.Stream
	if f := strings.ToLower(rel.Options["value_format"]); f != "" {
		rel.ValueFormat = f
	}
	if err := checkFormats(rel, rel.Options, "stream"); err != nil {
		return nil, err
	}
	return p, nil
}

func planStream(cat *catalog.Catalog, s *sql.CreateStreamAs, text string) (*StreamPlan, error) {
	opts, err := checkOptions(s.With, streamOptions, "stream")
	if err != nil {
		return nil, err
	}
	sel := s.Select
	if err := refuseRenamedColumns(sel.From, "a derived stream"); err != nil {
		return nil, err
	}
	if err := refuseWindow(sel, "a derived stream", true); err != nil {
		return nil, err
	}
	if len(sel.GroupBy) > 0 || sel.Having != nil || hasAggregate(sel) {
		return nil, pgerr.New(pgerr.FeatureNotSupported, "a derived stream cannot aggregate").
			WithHint("Aggregate into a table: CREATE TABLE %s AS SELECT ... GROUP BY ....", s.Name)
	}
	if len(sel.From) == 1 && len(sel.SetOps) == 0 && sel.Limit == nil && sel.Offset == nil && len(sel.OrderBy) == 0 && !sel.Distinct && len(sel.DistinctOn) == 0 {
		if join, ok := sel.From[0].(*sql.Join); ok {
			return planStreamJoin(cat, s, join, opts, text)
		}
	}
	from, src, err := persistentSource(cat, sel, "STREAM", "derived stream", "stream")
	if err != nil {
		return nil, err
	}
	if src.Kind != catalog.KindStream {
		return nil, pgerr.New(pgerr.WrongObjectType, "a derived stream reads a stream, and %s is a %s", src.Name, strings.ToLower(string(src.Kind))).
			WithPosition(from.Pos).
			WithHint("Derive a table from it instead: CREATE TABLE %s AS SELECT ... FROM %s.", s.Name, src.Name)
	}
	if src.Name == catalog.ProcessingLogName {
		return nil, pgerr.New(pgerr.InsufficientPrivilege, "a derived stream cannot read %s", src.Name).WithPosition(from.Pos).
			WithHint("Read the processing log with SELECT.")
	}
	p := &StreamPlan{Source: src, KeyColumn: -1, Coords: true}
	b := &binder{cols: SourceInput(src), rel: src.Name, alias: from.Alias}
	items, err := bindRecordFilter(b, sel, src, &p.Filter)
	if err != nil {
		return nil, err
	}
	b.explode = true
	p.Output, err = b.bindItems(items)
	b.explode = false
	if err != nil {
		return nil, err
	}
	if p.Explode, err = explodeItems(p.Output, items); err != nil {
		return nil, err
	}
	stream := &catalog.Relation{
		Name:        s.Name,
		Kind:        catalog.KindStream,
		Topic:       opts["kafka_topic"],
		KeyFormat:   strings.ToLower(opts["key_format"]),
		ValueFormat: FormatJSON,
		Options:     opts,
		SQL:         text,
		Sources:     []string{strings.ToLower(src.Name)},
		Partitions:  src.Partitions,
		Tasks:       src.Partitions,
	}
	p.Stream = stream
	if stream.Topic == "" {
		stream.Topic = s.Name
	}
	if err := checkStreamTopic(stream, src); err != nil {
		return nil, err
	}
	cols, err := p.columns(b, s, opts, items, p.keepKey)
	if err != nil {
		return nil, err
	}
	stream.Schema.Columns = cols
	if stream.KeyFormat == "" {
		stream.KeyFormat = FormatKafka
		if p.PartitionBy == nil {
			stream.KeyFormat = src.KeyFormat
		}
	}
	keys := stream.Schema.KeyIndexes()
	if len(keys) > 1 && stream.KeyFormat == FormatKafka {
		return nil, pgerr.New(pgerr.InvalidTableDefinition, "stream %s has %d key columns, but key_format 'kafka' holds one", s.Name, len(keys)).
			WithHint("Use WITH (key_format = 'json'), or leave key_format out.")
	}
	if len(keys) == 1 && stream.KeyFormat == FormatKafka && !kafkaKeyType(cols[keys[0]].Type) {
		return nil, pgerr.New(pgerr.DatatypeMismatch, "key column %s of stream %s is %s, which key_format 'kafka' cannot hold", cols[keys[0]].Name, s.Name, cols[keys[0]].Type).
			WithHint("Use WITH (key_format = 'json'), or cast the key to VARCHAR, BIGINT, INTEGER, DOUBLE, BOOLEAN or TIMESTAMP.")
	}
	if len(keys) == len(cols) && len(keys) > 0 {
		return nil, pgerr.New(pgerr.InvalidTableDefinition, "stream %s needs at least one value column besides its key", s.Name).
			WithHint("Select another column.")
	}
	p.Rekey = p.PartitionBy != nil || stream.Partitions != src.Partitions || stream.KeyFormat != src.KeyFormat
	if !p.Rekey && len(keys) > 1 {
		// A JSON object key carries its column names: renamed, the same
		// values are other bytes, which hash to another partition.
		for i, k := range keys {
			if cols[k].Name != src.Schema.Columns[src.Schema.KeyIndexes()[i]].Name {
				p.Rekey = true
			}
		}
	}
	if !p.Rekey {
		// Records stay in their source partitions, placed by the
		// source's rule.
		stream.Partitioner = src.Partitioner
	}
	return p, nil
}

// columns returns the derived stream's columns, of the select list items,
// with its key marked: PARTITION BY's, else what key marks. It sets the
// stream's partitions from opts.
func (p *StreamPlan) columns(b *binder, s *sql.CreateStreamAs, opts map[string]string, items []sql.SelectItem,
	key func([]catalog.Column) error) ([]catalog.Column, error) {
	if v, ok := opts["partitions"]; ok {
		n, _ := strconv.ParseInt(v, 10, 32)
		p.Stream.Partitions = int32(n)
	}
	cols := outputColumns(items, p.Output)
	if err := checkColumnNames(cols, items, "stream"); err != nil {
		return nil, err
	}
	if s.PartitionBy != nil {
		return cols, p.partitionBy(b, s.PartitionBy, cols)
	}
	return cols, key(cols)
}

// keepKey marks the key of a stream without PARTITION BY: the source's
// key columns, each of which must be selected as it is, in order. A
// source without a key gives a stream without one.
func (p *StreamPlan) keepKey(cols []catalog.Column) error {
	for _, k := range p.Source.Schema.KeyIndexes() {
		found := false
		for i, o := range p.Output {
			if ref, ok := o.(*ColRef); ok && ref.Idx == k && !cols[i].Key {
				cols[i].Key, found = true, true
				break
			}
		}
		if !found {
			return pgerr.New(pgerr.InvalidTableDefinition, "stream %s must select the key column %s of %s", p.Stream.Name, p.Source.Schema.Columns[k].Name, p.Source.Name).
				WithHint("Select %s, or give the stream another key with PARTITION BY.", p.Source.Schema.Columns[k].Name)
		}
	}
	var last = -1
	for i, c := range cols {
		if c.Key {
			idx := p.Output[i].(*ColRef).Idx
			if idx < last {
				return pgerr.New(pgerr.InvalidTableDefinition, "stream %s must select the key columns of %s in their order", p.Stream.Name, p.Source.Name).
					WithHint("The key's bytes list its columns in order.")
			}
			last = idx
		}
	}
	return nil
}

// partitionBy binds PARTITION BY e: the new key, which must be selected
// (as ksqlDB requires); its column is the stream's one key column.
func (p *StreamPlan) partitionBy(b *binder, e sql.Expr, cols []catalog.Column) error {
	b.clause = "PARTITION BY"
	defer func() { b.clause = "" }()
	by, err := b.bind(e)
	if err != nil {
		return err
	}
	if _, ok := by.(*Const); ok {
		return pgerr.New(pgerr.InvalidColumnReference, "PARTITION BY a constant gives every record one key").
			WithPosition(e.Position()).WithHint("Partition by a column or an expression of columns.")
	}
	want := by.String()
	for i, o := range p.Output {
		if o.String() == want {
			p.PartitionBy, p.KeyColumn = by, i
			cols[i].Key = true
			return checkKeyTypes(cols)
		}
	}
	return pgerr.New(pgerr.InvalidColumnReference, "stream %s must select its PARTITION BY expression %s", p.Stream.Name, want).
		WithPosition(e.Position()).
		WithHint("The expression is the stream's key: add it to the select list, named with AS if need be.")
}

// checkColumnNames checks the column names of a derived relation (what:
// "view", "stream"): unique, not a pseudo-column's, and given to every
// expression that has none of its own.
func checkColumnNames(cols []catalog.Column, items []sql.SelectItem, what string) error {
	seen := make(map[string]bool)
	for i, c := range cols {
		lc := strings.ToLower(c.Name)
		if seen[lc] {
			return pgerr.New(pgerr.DuplicateColumn, "column %q specified more than once", c.Name).
				WithHint("Name the columns of a %s with AS.", what)
		}
		if isPseudo(lc) || lc == RowtimeColumn.Name {
			return pgerr.New(pgerr.InvalidTableDefinition, "column name %q is reserved for a pseudo-column", c.Name).
				WithHint("Name the column otherwise with AS.")
		}
		if c.Name == "?column?" || c.Name == "case" {
			return pgerr.New(pgerr.InvalidTableDefinition, "the expression %q of a %s needs a name", items[i].Text, what).
				WithHint("Name it with AS.")
		}
		seen[lc] = true
	}
	return nil
}

// kafkaKeyType reports whether key_format 'kafka' can hold a key of type
// t (serde's Kafka serializers).
func kafkaKeyType(t catalog.Type) bool {
	switch t {
	case catalog.Varchar, catalog.Int, catalog.BigInt, catalog.Double, catalog.Boolean, catalog.Timestamp,
		catalog.UUID, catalog.Bytea: // the UUID as its text, as Kafka's UUIDSerializer writes it
		return true
	}
	return false
}

// PlanInsertSelect plans INSERT INTO stream [(columns)] SELECT ...: a
// persistent query like a derived stream's that writes into an existing
// stream, named name (its query id, lower case). The select list gives
// the listed columns (all, in order, without a list), by position, each
// coerced to its column's type; the others are NULL. A record goes to
// the partition the target's partitioner gives its key, as the target's
// producers place theirs.
func PlanInsertSelect(cat *catalog.Catalog, s *sql.InsertSelect, name, text string) (*StreamPlan, error) {
	target, err := cat.Resolve(s.Table)
	if err != nil {
		if pe, ok := pgerr.As(err); ok {
			pe.WithPosition(s.Pos)
		}
		return nil, err
	}
	switch {
	case target.Kind != catalog.KindStream:
		return nil, pgerr.New(pgerr.WrongObjectType, "INSERT ... SELECT writes into a stream, and %s is a %s", target.Name, strings.ToLower(string(target.Kind))).
			WithPosition(s.Pos).
			WithHint("Write rows of a table with INSERT ... VALUES; derive a view with CREATE TABLE ... AS SELECT.")
	case target.Name == catalog.ProcessingLogName:
		return nil, pgerr.New(pgerr.InsufficientPrivilege, "cannot write into %s: basin writes it", target.Name).WithPosition(s.Pos)
	}
	sel := s.Select
	if err := refuseRenamedColumns(sel.From, "a derived stream"); err != nil {
		return nil, err
	}
	if err := refuseWindow(sel, "INSERT ... SELECT", true); err != nil {
		return nil, err
	}
	if len(sel.GroupBy) > 0 || sel.Having != nil || hasAggregate(sel) {
		return nil, pgerr.New(pgerr.FeatureNotSupported, "INSERT ... SELECT cannot aggregate").
			WithHint("Aggregate into a table: CREATE TABLE name AS SELECT ... GROUP BY ....")
	}
	from, src, err := persistentSource(cat, sel, "STREAM", "query of INSERT ... SELECT", "stream")
	if err != nil {
		return nil, err
	}
	if src.Kind != catalog.KindStream {
		return nil, pgerr.New(pgerr.WrongObjectType, "INSERT ... SELECT reads a stream, and %s is a %s", src.Name, strings.ToLower(string(src.Kind))).
			WithPosition(from.Pos)
	}
	if src.Name == catalog.ProcessingLogName {
		return nil, pgerr.New(pgerr.InsufficientPrivilege, "INSERT ... SELECT cannot read %s", src.Name).WithPosition(from.Pos).
			WithHint("Read the processing log with SELECT.")
	}
	if cat.Reaches(target.Name, src.Name) {
		return nil, pgerr.New(pgerr.InvalidObjectDefinition, "INSERT INTO %s SELECT ... FROM %s would feed %s its own records", target.Name, src.Name, target.Name).
			WithPosition(from.Pos).
			WithHint("The records of %s flow into %s: read a stream they do not reach.", target.Name, src.Name)
	}
	p := &StreamPlan{Source: src, KeyColumn: -1, Rekey: true, Coords: true}
	b := &binder{cols: SourceInput(src), rel: src.Name, alias: from.Alias}
	items, err := bindRecordFilter(b, sel, src, &p.Filter)
	if err != nil {
		return nil, err
	}
	outs, err := b.bindItems(items)
	if err != nil {
		return nil, err
	}
	cols := target.Schema.Columns
	idx := make([]int, 0, len(cols))
	if len(s.Columns) == 0 {
		for i := range cols {
			idx = append(idx, i)
		}
	}
	seen := map[int]bool{}
	for _, c := range s.Columns {
		i := target.Schema.Index(c)
		if i < 0 {
			return nil, pgerr.New(pgerr.UndefinedColumn, "column %q of relation %q does not exist", c, target.Name).WithPosition(s.Pos)
		}
		if seen[i] {
			return nil, pgerr.New(pgerr.DuplicateColumn, "column %q specified more than once", c).WithPosition(s.Pos)
		}
		seen[i] = true
		idx = append(idx, i)
	}
	switch {
	case len(outs) > len(idx):
		return nil, pgerr.New(pgerr.SyntaxError, "INSERT has more expressions than target columns").WithPosition(sel.Items[len(idx)].Expr.Position())
	case len(outs) < len(idx):
		return nil, pgerr.New(pgerr.SyntaxError, "INSERT has more target columns than expressions").WithPosition(s.Pos)
	}
	p.Output = make([]Scalar, len(cols))
	for i, c := range cols {
		p.Output[i] = &Const{T: c.Type}
	}
	for j, i := range idx {
		c := cols[i]
		o, err := b.coerce(outs[j], c.Type, items[j].Expr.Position(), "column "+c.Name)
		if pgerr.CodeOf(err) == pgerr.DatatypeMismatch {
			return nil, pgerr.New(pgerr.DatatypeMismatch, "column %q is of type %s but expression is of type %s", c.Name, c.Type, outs[j].Type()).
				WithPosition(items[j].Expr.Position()).
				WithHint("Rewrite or cast the expression.")
		}
		if err != nil {
			return nil, err
		}
		p.Output[i] = o
	}
	p.Stream = &catalog.Relation{
		Name: name, Kind: catalog.KindInsert, Schema: target.Schema, Topic: target.Topic, Partitions: target.Partitions,
		KeyFormat: target.KeyFormat, ValueFormat: target.ValueFormat, Partitioner: target.Partitioner,
		SQL: text, Sources: []string{strings.ToLower(src.Name)}, Tasks: src.Partitions, Into: strings.ToLower(target.Name),
		Options: formatOptions(target),
	}
	return p, nil
}
