package exec

import (
	"context"
	"strconv"
	"strings"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/serde"
	"github.com/basindb/basin/sql"
)

// inferColumns gives a CREATE STREAM or TABLE of a schema registry's
// value format that lists no value columns those of the registry's
// schema: value_schema_id's, else the latest under the topic's value
// subject (serde.Registry.ValueColumns), as ksqlDB infers them. Key
// columns, if any, stay as listed, first. The schema's name becomes
// value_schema_full_name, unless value_schema_id is given, so that the
// schema INSERT registers for the columns is a version of the same
// record, which the registry's compatibility checks need.
func (s *Session) inferColumns(ctx context.Context, st *sql.CreateSource) error {
	var format, topic, id string
	named := false
	for _, o := range st.With {
		switch strings.ToLower(o.Key) {
		case "value_format":
			format = strings.ToLower(o.Value)
		case "kafka_topic":
			topic = o.Value
		case "value_schema_id":
			id = o.Value
			named = true
		case "value_schema_full_name":
			named = true
		}
	}
	if !serde.RegistryFormat(format) {
		return nil
	}
	for _, c := range st.Columns {
		if !c.Key {
			return nil // listed: the registry is asked when records come
		}
	}
	reg := s.e.Runtime.Registry()
	if reg == nil {
		return serde.NoRegistryError(strings.ToLower(st.Kind.String()), st.Name, format)
	}
	if topic == "" {
		topic = st.Name
	}
	n, _ := strconv.Atoi(id) // not a number: 0, and the planner refuses it
	cols, name, err := reg.ValueColumns(ctx, format, topic, n)
	if err != nil {
		return err
	}
	if !named && name != "" {
		st.With = append(st.With, sql.Option{Key: "value_schema_full_name", Value: name})
	}
	for _, c := range cols {
		st.Columns = append(st.Columns, sql.ColumnDef{Name: c.Name, Type: c.Type, Precision: c.Precision, Scale: c.Scale})
	}
	return nil
}

// checkRegistry refuses rel, about to be created, when its format needs a
// schema registry and the node has none; a relation basin writes to
// (a derived stream, a view's kafka_topic) has its schema registered
// now, so that a registry that refuses it fails the statement.
func (s *Session) checkRegistry(rel *catalog.Relation) error {
	if !serde.RegistryFormat(rel.ValueFormat) {
		return nil
	}
	reg := s.e.Runtime.Registry()
	if reg == nil {
		return serde.NoRegistryError(strings.ToLower(string(rel.Kind)), rel.Name, rel.ValueFormat)
	}
	if len(rel.Sources) == 0 {
		return nil // declared over a topic: written by INSERT, checked then
	}
	return serde.NewCodec(rel, reg).PrepareWrite()
}
