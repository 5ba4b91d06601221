package exec

import (
	"context"
	"strconv"
	"strings"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/planner"
	"github.com/basindb/basin/serde"
	"github.com/basindb/basin/sql"
)

// inferColumns gives a CREATE STREAM or TABLE whose value_format keeps
// its schemas in the schema registry, and that lists no value columns,
// those of the registry's schema: value_schema_id's, else the latest
// under the topic's value subject (serde.Registry.Columns), as ksqlDB
// infers them; and the same for the key columns when key_format is such
// a format and none are listed (a stream whose key subject has no
// schema then has none). The value schema's name becomes
// value_schema_full_name (and the key's key_schema_full_name), unless
// the statement names a schema, so that the schema INSERT registers for
// the columns is a version of the same record, which the registry's
// compatibility checks need.
func (s *Session) inferColumns(ctx context.Context, st *sql.CreateSource) error {
	opts := map[string]string{}
	for _, o := range st.With {
		opts[strings.ToLower(o.Key)] = o.Value
	}
	topic := opts["kafka_topic"]
	if topic == "" {
		topic = st.Name
	}
	var keys, values []sql.ColumnDef
	for _, c := range st.Columns {
		if c.Key {
			keys = append(keys, c)
		} else {
			values = append(values, c)
		}
	}
	what := strings.ToLower(st.Kind.String())
	infer := func(part string, listed bool) ([]sql.ColumnDef, error) {
		format := strings.ToLower(opts[part+"_format"])
		if listed || !serde.RegistryFormat(format) {
			return nil, nil
		}
		reg := s.e.Runtime.Registry()
		if reg == nil {
			return nil, serde.NoRegistryError(what, st.Name, part+"_format", format)
		}
		id, _ := strconv.Atoi(opts[part+"_schema_id"]) // not a number: 0, and the planner refuses it
		cols, name, err := reg.Columns(ctx, part, format, topic, id)
		if err != nil {
			if part == "key" && pgerr.CodeOf(err) == pgerr.UndefinedObject && id == 0 && st.Kind == sql.KindStream {
				return nil, nil // no key schema: a stream without key columns
			}
			return nil, err
		}
		_, hasID := opts[part+"_schema_id"]
		_, hasName := opts[part+"_schema_full_name"]
		if !hasID && !hasName && name != "" {
			st.With = append(st.With, sql.Option{Key: part + "_schema_full_name", Value: name})
		}
		out := make([]sql.ColumnDef, len(cols))
		for i, c := range cols {
			out[i] = sql.ColumnDef{Name: c.Name, Type: c.Type, Precision: c.Precision, Scale: c.Scale, Key: part == "key"}
		}
		return out, nil
	}
	inferredKeys, err := infer("key", len(keys) > 0)
	if err != nil {
		return err
	}
	inferredValues, err := infer("value", len(values) > 0)
	if err != nil {
		return err
	}
	if inferredKeys == nil && inferredValues == nil {
		return nil
	}
	cols := append(append([]sql.ColumnDef{}, keys...), inferredKeys...)
	cols = append(cols, values...)
	st.Columns = append(cols, inferredValues...)
	return nil
}

// checkRegistry refuses rel, about to be created, when its key or value
// format needs a schema registry and the node has none; a relation basin
// writes to (a derived stream, a view's kafka_topic) has its schemas
// registered now, so that a registry that refuses them fails the
// statement.
func (s *Session) checkRegistry(rel *catalog.Relation) error {
	what := strings.ToLower(string(rel.Kind))
	needs := false
	for _, f := range []struct{ option, format string }{{"key_format", rel.KeyFormat}, {"value_format", rel.ValueFormat}} {
		if serde.RegistryFormat(f.format) {
			needs = true
			if s.e.Runtime.Registry() == nil {
				return serde.NoRegistryError(what, rel.Name, f.option, f.format)
			}
		}
	}
	if !needs || len(rel.Sources) == 0 {
		return nil // declared over a topic: written by INSERT, checked then
	}
	if rel.Kind == catalog.KindView && rel.Options["kafka_topic"] == "" {
		return nil // publishes nothing
	}
	return serde.NewCodec(rel, s.e.Runtime.Registry()).PrepareWrite()
}

// pinKeySchema records, for a view keyed as its source (not re-keyed)
// whose key is in a registry format, the id of the schema the source's
// keys are written in as the view's key_schema_id: its rows are in the
// partitions of those bytes, which its key lookups hash and the records
// it publishes carry.
func (s *Session) pinKeySchema(ctx context.Context, plan *planner.ViewPlan) error {
	view, src := plan.View, plan.KeyedAs()
	if src == nil || !serde.RegistryFormat(view.KeyFormat) || view.Options["key_schema_id"] != "" {
		return nil
	}
	reg := s.e.Runtime.Registry()
	if reg == nil {
		return serde.NoRegistryError("table", view.Name, "key_format", view.KeyFormat)
	}
	id, err := serde.NewCodec(src, reg).KeySchemaID()
	if err != nil {
		return err
	}
	view.Options["key_schema_id"] = strconv.Itoa(id)
	delete(view.Options, "key_schema_full_name")
	if planner.PublishedTopic(view) == "" {
		return nil
	}
	return serde.NewCodec(view, reg).RegisterKeySchema(ctx)
}
