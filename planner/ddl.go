package planner

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/serde"
	"github.com/basindb/basin/sql"
)

// Key and value formats.
const (
	FormatKafka = "kafka"
	FormatJSON  = "json"
)

// option describes a WITH option basin accepts.
type option struct {
	// check validates the value; nil accepts any text.
	check func(v string) error
}

func oneOf(vals ...string) func(string) error {
	return func(v string) error {
		for _, x := range vals {
			if strings.EqualFold(v, x) {
				return nil
			}
		}
		return fmt.Errorf("must be one of %s", strings.Join(vals, ", "))
	}
}

func nonNegativeInt(v string) error {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return fmt.Errorf("must be a non-negative integer")
	}
	return nil
}

func positiveInt(v string) error {
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil || n <= 0 {
		return fmt.Errorf("must be a positive integer")
	}
	return nil
}

var sourceOptions = map[string]option{
	"kafka_topic":  {},
	"value_format": {check: checkValueFormat},
	"key_format":   {check: checkKeyFormat},
	// value_delimiter separates a DELIMITED value's fields;
	// wrap_single_value = false makes a JSON value of one column the
	// column's value itself (formats.go).
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
	"partitions":           {check: positiveInt},
	"partitioner": {check: func(v string) error {
		_, err := catalog.PartitionerName(v)
		return err
	}},
	// timestamp names the column ROWTIME is taken from (checkTimestamp).
	"timestamp":        {},
	"timestamp_format": {},
}

var viewOptions = map[string]option{
	"partitions":   {check: positiveInt},
	"key_format":   {check: checkStreamKeyFormat},
	"value_format": {check: oneOf(FormatJSON, FormatDelimited, FormatKafka, FormatAvro, FormatProtobuf, FormatProtoNoSR, FormatJSONSR)},
	// How a published value is written (formats.go).
	"value_delimiter":        {check: checkDelimiter},
	"wrap_single_value":      {check: checkBool},
	"value_schema_id":        {check: checkSchemaID},
	"value_schema_full_name": {check: checkFullName},
	// How a published key is written, in key_format 'delimited' and
	// the registry's; a view keyed as its source takes its source's.
	"key_delimiter":         {check: checkDelimiter},
	"key_schema_id":         {check: checkSchemaID},
	"key_schema_full_name":  {check: checkFullName},
	"acceptable.offset.lag": {check: nonNegativeInt},
	// kafka_topic publishes the view's rows to a topic of the user's
	// (PublishedTopic), besides the changelog basin keeps.
	"kafka_topic":          {},
	"num.standby.replicas": {check: nonNegativeInt},
}

// checkOptions validates WITH options against the accepted set and
// returns them as a map with lower-case keys.
func checkOptions(with []sql.Option, accepted map[string]option, what string) (map[string]string, error) {
	out := make(map[string]string, len(with))
	for _, o := range with {
		k := strings.ToLower(o.Key)
		spec, ok := accepted[k]
		if !ok {
			names := make([]string, 0, len(accepted))
			for n := range accepted {
				names = append(names, n)
			}
			sort.Strings(names)
			return nil, pgerr.New(pgerr.InvalidParameterValue, "unrecognized %s option %q", what, o.Key).
				WithPosition(o.Pos).WithHint("Valid options are %s.", strings.Join(names, ", "))
		}
		if _, dup := out[k]; dup {
			return nil, pgerr.New(pgerr.SyntaxError, "option %q specified more than once", o.Key).WithPosition(o.Pos)
		}
		if spec.check != nil {
			if err := spec.check(o.Value); err != nil {
				return nil, pgerr.New(pgerr.InvalidParameterValue, "invalid value %q for option %s: %v", o.Value, k, err).WithPosition(o.Pos)
			}
		}
		out[k] = o.Value
	}
	return out, nil
}

// PlanCreateSource validates CREATE STREAM / CREATE TABLE and returns the
// relation to record. Partitions is 0 when the statement leaves it to the
// topic (existing topic's count, else the server default).
func PlanCreateSource(cat *catalog.Catalog, s *sql.CreateSource, text string) (*catalog.Relation, error) {
	if _, ok := cat.Lookup(s.Name); ok {
		return nil, pgerr.New(pgerr.DuplicateTable, "relation %q already exists", s.Name)
	}
	what := strings.ToLower(s.Kind.String())
	opts, err := checkOptions(s.With, sourceOptions, what)
	if err != nil {
		return nil, err
	}
	r := &catalog.Relation{
		Name:        s.Name,
		Kind:        catalog.KindStream,
		Topic:       opts["kafka_topic"],
		KeyFormat:   strings.ToLower(opts["key_format"]),
		ValueFormat: strings.ToLower(opts["value_format"]),
		Options:     opts,
		SQL:         text,
	}
	if s.Kind == sql.KindTable {
		r.Kind = catalog.KindTable
	}
	if r.Topic == "" {
		r.Topic = s.Name
	}
	if catalog.InternalTopic(r.Topic) {
		return nil, internalTopicError(what, s.Name, r.Topic)
	}
	if r.KeyFormat == "" {
		r.KeyFormat = FormatKafka
	}
	r.Partitioner, _ = catalog.PartitionerName(opts["partitioner"]) // checked above
	if r.ValueFormat == "" {
		r.ValueFormat = FormatJSON
	}
	if p, ok := opts["partitions"]; ok {
		n, _ := strconv.ParseInt(p, 10, 32)
		r.Partitions = int32(n)
	}
	if len(s.Columns) == 0 {
		return nil, pgerr.New(pgerr.InvalidTableDefinition, "%s %s needs at least one column", what, s.Name)
	}
	seen := make(map[string]bool)
	nkeys := 0
	for _, c := range s.Columns {
		lc := strings.ToLower(c.Name)
		if seen[lc] {
			return nil, pgerr.New(pgerr.DuplicateColumn, "column %q specified more than once", c.Name)
		}
		if strings.HasPrefix(lc, "_") && isPseudo(lc) || lc == RowtimeColumn.Name {
			return nil, pgerr.New(pgerr.InvalidTableDefinition, "column name %q is reserved for a pseudo-column", c.Name)
		}
		seen[lc] = true
		if c.Key {
			nkeys++
		}
		r.Schema.Columns = append(r.Schema.Columns, catalog.Column{Name: c.Name, Type: c.Type, Key: c.Key, Precision: c.Precision, Scale: c.Scale,
			Header: c.Header, Headers: c.Headers})
		if err := checkHeaderColumn(c, what, s.Name); err != nil {
			return nil, err
		}
	}
	if err := checkKeyTypes(r.Schema.Columns); err != nil {
		return nil, err
	}
	if r.Kind == catalog.KindTable && nkeys == 0 {
		return nil, pgerr.New(pgerr.InvalidTableDefinition, "table %s needs a PRIMARY KEY", s.Name).
			WithHint("A table is upserted by key: mark its key column with PRIMARY KEY.")
	}
	if err := checkKafkaKeyTypes(r); err != nil {
		return nil, err
	}
	if nkeys > 1 && r.KeyFormat == FormatKafka {
		return nil, pgerr.New(pgerr.InvalidTableDefinition, "%s %s has %d key columns, but key_format 'kafka' holds one", what, s.Name, nkeys).
			WithHint("Use WITH (key_format = 'json') for a multi-column key.")
	}
	if nkeys+headerColumns(r.Schema.Columns) == len(r.Schema.Columns) {
		return nil, pgerr.New(pgerr.InvalidTableDefinition, "%s %s needs at least one value column besides its key", what, s.Name)
	}
	for _, c := range r.Schema.Columns {
		if c.Key && c.Type == catalog.Interval {
			// Records are upserted by their key's bytes, and '1 mon' and
			// '30 days' are equal intervals with different texts.
			return nil, pgerr.New(pgerr.FeatureNotSupported, "key column %s of %s %s is INTERVAL, which cannot be a key", c.Name, what, s.Name).
				WithHint("Key by another column; a view may still GROUP BY an interval.")
		}
	}
	if nkeys == 1 && r.KeyFormat == FormatKafka {
		if k := r.Schema.KeyIndexes()[0]; !kafkaKeyType(r.Schema.Columns[k].Type) {
			c := r.Schema.Columns[k]
			return nil, pgerr.New(pgerr.FeatureNotSupported, "key column %s of %s %s is %s, which key_format 'kafka' cannot hold", c.Name, what, s.Name, c.Type).
				WithHint("Use WITH (key_format = 'json'), or a key of type VARCHAR, BIGINT, INTEGER, DOUBLE, BOOLEAN, TIMESTAMP, UUID or BYTEA.")
		}
	}
	if err := checkFormats(r, opts, what); err != nil {
		return nil, err
	}
	if err := checkTimestamp(r, what); err != nil {
		return nil, err
	}
	return r, nil
}

// checkTimestamp checks WITH (timestamp = 'col' [, timestamp_format =
// 'pattern']): ROWTIME is then col's value rather than the record's
// Kafka timestamp, so col must be a time: BIGINT milliseconds since the
// epoch, TIMESTAMP, or VARCHAR written in pattern (serde.TimeLayout).
// The option keeps the column's declared name.
func checkTimestamp(r *catalog.Relation, what string) error {
	format, hasFormat := r.Options["timestamp_format"]
	name, ok := r.Options["timestamp"]
	if !ok {
		if hasFormat {
			return pgerr.New(pgerr.InvalidParameterValue, "option timestamp_format of %s %s needs the timestamp option", what, r.Name).
				WithHint("Name the VARCHAR column the time is written in: WITH (timestamp = 'col', timestamp_format = '%s').", format)
		}
		return nil
	}
	i := r.Schema.Index(name)
	if i < 0 {
		return pgerr.New(pgerr.UndefinedColumn, "timestamp column %q of %s %s does not exist", name, what, r.Name).
			WithHint("%s has columns %s.", r.Name, columnList(r.Schema.Columns))
	}
	c := r.Schema.Columns[i]
	switch {
	case c.Type == catalog.Varchar && !hasFormat:
		return pgerr.New(pgerr.InvalidParameterValue, "timestamp column %s of %s %s is VARCHAR, and there is no timestamp_format", c.Name, what, r.Name).
			WithHint("Say how the time is written: WITH (timestamp_format = 'yyyy-MM-dd HH:mm:ss'), a pattern of Java's DateTimeFormatter as in ksqlDB.")
	case c.Type == catalog.Varchar:
		if _, err := serde.TimeLayout(format); err != nil {
			return pgerr.New(pgerr.InvalidParameterValue, "%s %s: %v", what, r.Name, err).
				WithHint("docs/sql.md lists the pattern letters basin reads (Record time).")
		}
	case hasFormat:
		return pgerr.New(pgerr.InvalidParameterValue, "timestamp column %s of %s %s is %s: timestamp_format is for a VARCHAR column", c.Name, what, r.Name, c.Type).
			WithHint("Leave timestamp_format out.")
	case c.Type != catalog.BigInt && c.Type != catalog.Timestamp && c.Type != catalog.TimestampTZ:
		return pgerr.New(pgerr.DatatypeMismatch, "timestamp column %s of %s %s is %s, not BIGINT, TIMESTAMP or VARCHAR", c.Name, what, r.Name, c.Type).
			WithHint("ROWTIME is milliseconds since the epoch: name a BIGINT column of them, a TIMESTAMP column, or a VARCHAR column with timestamp_format.")
	}
	r.Options["timestamp"] = c.Name
	return nil
}

// internalTopicError refuses a relation over one of basin's or Kafka's own
// topics (catalog.InternalTopic).
func internalTopicError(what, name, topic string) error {
	return pgerr.New(pgerr.InsufficientPrivilege, "%s %s cannot read topic %s: it is an internal topic of basin or Kafka", what, name, topic).
		WithDetail("Topics named _basin-* hold basin's catalog, changelogs and repartition records, and __* topics are Kafka's; records written there by anyone but basin or Kafka corrupt views and the catalog.").
		WithHint("Declare the %s over a topic of your own; read the processing log through basin_processing_log.", what)
}

func isPseudo(name string) bool {
	for _, c := range PseudoColumns {
		if c.Name == name {
			return true
		}
	}
	return false
}

// checkHeaderColumn checks a HEADER('key') or HEADERS column c of a
// stream or table being declared: a header's value is bytes, so a
// HEADER column is BYTEA (ksqlDB's BYTES), and a HEADERS column an array
// of key and value structs, as in ksqlDB.
func checkHeaderColumn(c sql.ColumnDef, what, name string) error {
	switch {
	case c.Headers && !isHeadersType(c.Type):
		return pgerr.New(pgerr.DatatypeMismatch, "HEADERS column %s of %s %s is %s, and the headers are an ARRAY<STRUCT<KEY STRING, VALUE BYTES>>", c.Name, what, name, c.Type).
			WithHint("Declare it %s ARRAY<STRUCT<KEY STRING, VALUE BYTES>> HEADERS.", c.Name)
	case c.Header != "" && c.Type != catalog.Bytea:
		return pgerr.New(pgerr.DatatypeMismatch, "header column %s of %s %s is %s, and a header's value is bytes: declare it BYTES", c.Name, what, name, c.Type).
			WithHint("Read it as text with convert_from(%s, 'UTF8').", c.Name)
	}
	return nil
}

// isHeadersType reports whether t is the type of a HEADERS column:
// ARRAY<STRUCT<KEY VARCHAR, VALUE BYTEA>> (the field names in any case).
func isHeadersType(t catalog.Type) bool {
	if !t.IsArray() || !t.Elem().IsStruct() {
		return false
	}
	fs := t.Elem().Fields()
	return len(fs) == 2 && strings.EqualFold(fs[0].Name, "key") && fs[0].Type == catalog.Varchar &&
		strings.EqualFold(fs[1].Name, "value") && fs[1].Type == catalog.Bytea
}

// headerColumns counts the columns read from record headers.
func headerColumns(cols []catalog.Column) int {
	n := 0
	for _, c := range cols {
		if c.FromHeaders() {
			n++
		}
	}
	return n
}
