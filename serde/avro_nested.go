package serde

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/hamba/avro/v2"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
)

// STRUCTs and MAPs in Avro. The decoder and encoder take a union's value
// as a map of the branch's name to the value (a record's full name,
// "map", "array"), and a record or map as a map[string]any of its own:
// so converting one needs the schema at hand, and both directions walk
// the column's Avro schema along with its value rather than guess from
// the shape of a map.

// avroNames names the records of one schema: each a path of column and
// field names, made a valid Avro name, and distinct.
type avroNames struct {
	used map[string]bool
}

var avroNameChars = regexp.MustCompile(`[^A-Za-z0-9_]`)

func (names *avroNames) name(path string) string {
	n := avroNameChars.ReplaceAllString(path, "_")
	if n == "" || n[0] >= '0' && n[0] <= '9' {
		n = "_" + n
	}
	base := n
	for i := 2; names.used[n]; i++ {
		n = base + "_" + strconv.Itoa(i)
	}
	names.used[n] = true
	return n
}

// nestedType is the Avro type of a STRUCT or MAP type t.
func (names *avroNames) nestedType(t catalog.Type, path string) (any, error) {
	if t.IsMap() {
		v, err := names.avroType(t.Value(), 0, 0, path)
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": "map", "values": []any{"null", v}}, nil
	}
	type field struct {
		Name    string `json:"name"`
		Type    any    `json:"type"`
		Default any    `json:"default"`
	}
	fields := []field{}
	for _, f := range t.Fields() {
		ft, err := names.avroType(f.Type, 0, 0, path+"_"+f.Name)
		if err != nil {
			return nil, err
		}
		fields = append(fields, field{Name: f.Name, Type: []any{"null", ft}})
	}
	return map[string]any{"type": "record", "name": names.name(path), "fields": fields}, nil
}

// avroFieldSchema is the schema of the field of record schema rec named
// name, or else the one of that name ignoring case; nil if there is none.
func avroFieldSchema(rec avro.Schema, name string) avro.Schema {
	rs, ok := rec.(*avro.RecordSchema)
	if !ok {
		return nil
	}
	for _, f := range rs.Fields() {
		if f.Name() == name {
			return f.Type()
		}
	}
	for _, f := range rs.Fields() {
		if strings.EqualFold(f.Name(), name) {
			return f.Type()
		}
	}
	return nil
}

// avroBranch is the non-null type of a union of null and one type, or s
// itself.
func avroBranch(s avro.Schema) avro.Schema {
	u, ok := s.(*avro.UnionSchema)
	if !ok {
		return s
	}
	for _, b := range u.Types() {
		if b.Type() != avro.Null {
			return b
		}
	}
	return s
}

// avroBranchName is the name the decoder and encoder give a union's
// branch of type s.
func avroBranchName(s avro.Schema) string {
	if n, ok := s.(avro.NamedSchema); ok {
		return n.FullName()
	}
	return string(s.Type())
}

// avroUnwrap is the value of a union decoded as a map of its branch's
// name to its value; v itself when s is no union or v no such map.
func avroUnwrap(s avro.Schema, v any) any {
	u, ok := s.(*avro.UnionSchema)
	m, isMap := v.(map[string]any)
	if !ok || !isMap || len(m) != 1 {
		return v
	}
	for _, b := range u.Types() {
		if x, ok := m[avroBranchName(b)]; ok && b.Type() != avro.Null {
			return x
		}
	}
	return v
}

// nestedToAvro is a STRUCT or MAP value of type t as the encoder takes it
// for schema s: a map of the fields or entries, inside a map of the
// branch's name when s is a union.
func nestedToAvro(t catalog.Type, s avro.Schema, v any) (any, error) {
	branch := avroBranch(s)
	out := map[string]any{}
	switch x := v.(type) {
	case catalog.Struct:
		rs, ok := branch.(*avro.RecordSchema)
		if !ok || !t.IsStruct() {
			return nil, pgerr.New(pgerr.DatatypeMismatch, "a STRUCT cannot be written as Avro %s", avroSchemaType(branch))
		}
		fields := t.Fields()
		for i, f := range fields {
			if i >= len(x) {
				break
			}
			fs := avroFieldSchema(rs, f.Name)
			if fs == nil {
				continue // the writer's schema has no such field
			}
			fv, err := toAvro(catalog.Column{Type: f.Type}, fs, x[i])
			if err != nil {
				return nil, fmt.Errorf("field %q: %w", f.Name, err)
			}
			out[avroFieldName(rs, f.Name)] = fv
		}
		// A field of the schema with no field of the type is written
		// NULL (its default).
		for _, f := range rs.Fields() {
			if _, ok := out[f.Name()]; !ok {
				out[f.Name()] = nil
			}
		}
	case catalog.Map:
		ms, ok := branch.(*avro.MapSchema)
		if !ok || !t.IsMap() {
			return nil, pgerr.New(pgerr.DatatypeMismatch, "a MAP cannot be written as Avro %s", avroSchemaType(branch))
		}
		for _, e := range x {
			ev, err := toAvro(catalog.Column{Type: t.Value()}, ms.Values(), e.Value)
			if err != nil {
				return nil, fmt.Errorf("key %q: %w", e.Key, err)
			}
			out[e.Key] = ev
		}
	}
	if _, ok := s.(*avro.UnionSchema); ok {
		return map[string]any{avroBranchName(branch): out}, nil
	}
	return out, nil
}

func avroSchemaType(s avro.Schema) string {
	if s == nil {
		return "of no known type"
	}
	return string(s.Type())
}

func avroFieldName(rs *avro.RecordSchema, name string) string {
	for _, f := range rs.Fields() {
		if f.Name() == name {
			return name
		}
	}
	for _, f := range rs.Fields() {
		if strings.EqualFold(f.Name(), name) {
			return f.Name()
		}
	}
	return name
}

// nestedFromAvro converts a decoded record or map, written with schema s
// (nil when not known), to a value of the STRUCT or MAP type t.
func nestedFromAvro(t catalog.Type, s avro.Schema, v any) (any, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("expected %s, found an Avro %T", t, v)
	}
	if t.IsMap() {
		var vs avro.Schema
		if ms, ok := s.(*avro.MapSchema); ok {
			vs = ms.Values()
		}
		entries := make([]catalog.MapEntry, 0, len(m))
		for k, x := range m {
			ev, err := fromAvro(catalog.Column{Type: t.Value()}, vs, x)
			if err != nil {
				return nil, fmt.Errorf("key %q: %w", k, err)
			}
			entries = append(entries, catalog.MapEntry{Key: k, Value: ev})
		}
		return catalog.NewMap(entries), nil
	}
	fields := t.Fields()
	out := make(catalog.Struct, len(fields))
	for i, f := range fields {
		x, ok := m[f.Name]
		if !ok {
			for k, kv := range m {
				if strings.EqualFold(k, f.Name) {
					x, ok = kv, true
					break
				}
			}
		}
		if !ok {
			continue
		}
		fv, err := fromAvro(catalog.Column{Type: f.Type}, avroFieldSchema(s, f.Name), x)
		if err != nil {
			return nil, fmt.Errorf("field %q: %w", f.Name, err)
		}
		out[i] = fv
	}
	return out, nil
}
