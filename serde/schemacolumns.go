package serde

import (
	"bytes"
	"encoding/json"
	"slices"
	"sort"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
)

// ProtobufColumns returns the value columns of values of Protobuf
// message md, one per field in field order, named as the field (what
// CREATE STREAM with no columns takes from the registry):
//
//	bool                              BOOLEAN
//	int32, sint32, sfixed32           INTEGER
//	int64, sint64, sfixed64, uint32,  BIGINT
//	  fixed32
//	uint64, fixed64                   NUMERIC (a uint64 can exceed BIGINT)
//	float, double                     DOUBLE
//	string, enum                      VARCHAR
//	bytes                             BYTEA
//	google.protobuf.Timestamp         TIMESTAMP
//	google.type.Date                  DATE
//	google.type.TimeOfDay             TIME
//	confluent.type.Decimal            NUMERIC
//	google.protobuf.*Value            the wrapped type
//	repeated of a type above          that type's array
//	other messages                    STRUCT of their fields
//	map<string, V>                    MAP<VARCHAR, V's type>
//	repeated of repeated, maps of     JSONB: the value as protojson writes it
//	  other keys, recursive messages
func ProtobufColumns(md protoreflect.MessageDescriptor) ([]catalog.Column, error) {
	fields := md.Fields()
	cols := make([]catalog.Column, 0, fields.Len())
	for i := range fields.Len() {
		fd := fields.Get(i)
		cols = append(cols, catalog.Column{Name: string(fd.Name()), Type: protoFieldColumnType(fd, 0)})
	}
	return cols, nil
}

// protoFieldColumnType is the column type of field fd's values, lists and
// maps included; depth counts the messages it is in.
func protoFieldColumnType(fd protoreflect.FieldDescriptor, depth int) catalog.Type {
	if fd.IsMap() {
		if fd.MapKey().Kind() != protoreflect.StringKind {
			return catalog.JSONB // MAP keys are VARCHAR
		}
		mt, err := catalog.MapOf(catalog.Varchar, protoColumnType(fd.MapValue(), depth+1))
		if err != nil {
			return catalog.JSONB
		}
		return mt
	}
	t := protoColumnType(fd, depth)
	if fd.IsList() {
		if t.IsArray() {
			return catalog.JSONB
		}
		return catalog.ArrayOf(t)
	}
	return t
}

// protoColumnType is the column type of one value of field fd: a message
// other than the well-known ones is a STRUCT of its fields (JSONB when it
// nests deeper than types may, as a recursive message does).
func protoColumnType(fd protoreflect.FieldDescriptor, depth int) catalog.Type {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return catalog.Boolean
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return catalog.Int
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind, protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return catalog.BigInt
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return catalog.Decimal
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return catalog.Double
	case protoreflect.StringKind, protoreflect.EnumKind:
		return catalog.Varchar
	case protoreflect.BytesKind:
		return catalog.Bytea
	case protoreflect.MessageKind, protoreflect.GroupKind:
		md := fd.Message()
		switch string(md.FullName()) {
		case protoTimestamp:
			return catalog.Timestamp
		case protoDate:
			return catalog.Date
		case protoTimeOfDay:
			return catalog.Time
		case protoDecimal:
			return catalog.Decimal
		}
		if isProtoWrapper(md) {
			return protoColumnType(md.Fields().Get(0), depth)
		}
		if depth >= catalog.MaxNestingDepth {
			return catalog.JSONB
		}
		fields := make([]catalog.Field, md.Fields().Len())
		for i := range fields {
			f := md.Fields().Get(i)
			fields[i] = catalog.Field{Name: string(f.Name()), Type: protoFieldColumnType(f, depth+1)}
		}
		if st, err := catalog.StructOf(fields); err == nil {
			return st
		}
	}
	return catalog.JSONB
}

// JSONSchemaColumns returns the value columns of values of the JSON
// Schema text, an object schema: one per property, in the order of
// their connect.index where the schema gives every one (as Kafka Connect's
// and ksqlDB's do), else as written, of the type its "type" says:
//
//	boolean                  BOOLEAN
//	integer                  BIGINT (INTEGER with connect.type int32,
//	                         int16 or int8)
//	number                   DOUBLE
//	string                   VARCHAR; with format date-time, date,
//	                         time, duration or uuid: TIMESTAMPTZ, DATE,
//	                         TIME, INTERVAL or UUID
//	Kafka Connect's logical types (title org.apache.kafka.connect.data.X):
//	Timestamp TIMESTAMP, Date DATE, Time TIME, Decimal NUMERIC
//	array of a type above    that type's array
//	object with properties   STRUCT of them
//	object of                MAP<VARCHAR, V's type>
//	  additionalProperties V
//	anything else            JSONB
//
// A oneOf or a type list of null and one type is that type.
func JSONSchemaColumns(text string) ([]catalog.Column, error) {
	var top struct {
		Type       any             `json:"type"`
		Properties json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal([]byte(text), &top); err != nil {
		return nil, pgerr.New(pgerr.InvalidSchemaDefinition, "the registry's JSON schema does not parse: %v", err)
	}
	names, err := objectKeys(top.Properties)
	if err != nil || len(names) == 0 {
		return nil, pgerr.New(pgerr.FeatureNotSupported, "the registry's JSON schema has no properties: it is not an object whose properties would be the columns").
			WithHint("List the columns.")
	}
	var props map[string]json.RawMessage
	if err := json.Unmarshal(top.Properties, &props); err != nil {
		return nil, pgerr.New(pgerr.InvalidSchemaDefinition, "the registry's JSON schema's properties do not parse: %v", err)
	}
	type indexed struct {
		col catalog.Column
		idx int
		has bool
	}
	cols := make([]indexed, len(names))
	for i, n := range names {
		var p struct {
			Index *int `json:"connect.index"`
		}
		_ = json.Unmarshal(props[n], &p)
		cols[i] = indexed{col: catalog.Column{Name: n, Type: jsonSchemaColumnType(props[n], 0)}, idx: i}
		if p.Index != nil {
			cols[i].idx, cols[i].has = *p.Index, true
		}
	}
	if !slices.ContainsFunc(cols, func(c indexed) bool { return !c.has }) {
		sort.SliceStable(cols, func(i, j int) bool { return cols[i].idx < cols[j].idx })
	}
	out := make([]catalog.Column, len(cols))
	for i, c := range cols {
		out[i] = c.col
	}
	return out, nil
}

// jsonSchemaColumnType is the column type of the values of JSON Schema
// s; depth counts the arrays it is in.
func jsonSchemaColumnType(s json.RawMessage, depth int) catalog.Type {
	var p struct {
		Type        any               `json:"type"`
		OneOf       []json.RawMessage `json:"oneOf"`
		AnyOf       []json.RawMessage `json:"anyOf"`
		Items       json.RawMessage   `json:"items"`
		ConnectType string            `json:"connect.type"`
		Format      string            `json:"format"`
		Title       string            `json:"title"`
	}
	if json.Unmarshal(s, &p) != nil {
		return catalog.JSONB
	}
	alts := p.OneOf
	if alts == nil {
		alts = p.AnyOf
	}
	if alts != nil {
		var other []json.RawMessage
		for _, a := range alts {
			var n struct {
				Type any `json:"type"`
			}
			if json.Unmarshal(a, &n) == nil && n.Type == "null" {
				continue
			}
			other = append(other, a)
		}
		if len(other) == 1 {
			return jsonSchemaColumnType(other[0], depth)
		}
		return catalog.JSONB
	}
	typ, _ := p.Type.(string)
	if list, ok := p.Type.([]any); ok {
		for _, x := range list {
			if x != "null" {
				if typ != "" {
					return catalog.JSONB
				}
				typ, _ = x.(string)
			}
		}
	}
	switch p.Title {
	case "org.apache.kafka.connect.data.Timestamp":
		return catalog.Timestamp
	case "org.apache.kafka.connect.data.Date":
		return catalog.Date
	case "org.apache.kafka.connect.data.Time":
		return catalog.Time
	case "org.apache.kafka.connect.data.Decimal":
		return catalog.Decimal
	}
	switch typ {
	case "boolean":
		return catalog.Boolean
	case "integer":
		switch p.ConnectType {
		case "int32", "int16", "int8":
			return catalog.Int
		}
		return catalog.BigInt
	case "number":
		return catalog.Double
	case "string":
		switch p.Format {
		case "date-time":
			return catalog.TimestampTZ
		case "date":
			return catalog.Date
		case "time":
			return catalog.Time
		case "duration":
			return catalog.Interval
		case "uuid":
			return catalog.UUID
		}
		return catalog.Varchar
	case "array":
		if p.Items == nil || depth >= catalog.MaxNestingDepth {
			return catalog.JSONB
		}
		if e := jsonSchemaColumnType(p.Items, depth+1); e != catalog.JSONB && !e.IsArray() {
			return catalog.ArrayOf(e)
		}
	case "object":
		if depth >= catalog.MaxNestingDepth {
			return catalog.JSONB
		}
		return jsonObjectType(s, depth)
	}
	return catalog.JSONB
}

// objectKeys returns the keys of JSON object b in the order written.
func objectKeys(b json.RawMessage) ([]string, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return nil, pgerr.New(pgerr.InvalidSchemaDefinition, "not an object")
	}
	var keys []string
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return nil, err
		}
		keys = append(keys, t.(string))
		var skip json.RawMessage
		if err := d.Decode(&skip); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

// jsonObjectType is the column type of an object schema: a STRUCT of its
// properties, in the order written, or a MAP<VARCHAR, V> of an object
// with no properties whose additionalProperties say what the values
// are; JSONB for anything else.
func jsonObjectType(s json.RawMessage, depth int) catalog.Type {
	var o struct {
		Properties           json.RawMessage `json:"properties"`
		AdditionalProperties json.RawMessage `json:"additionalProperties"`
	}
	if json.Unmarshal(s, &o) != nil {
		return catalog.JSONB
	}
	if len(o.Properties) == 0 {
		if len(o.AdditionalProperties) == 0 || o.AdditionalProperties[0] != '{' {
			return catalog.JSONB
		}
		mt, err := catalog.MapOf(catalog.Varchar, jsonSchemaColumnType(o.AdditionalProperties, depth+1))
		if err != nil {
			return catalog.JSONB
		}
		return mt
	}
	names, err := objectKeys(o.Properties)
	if err != nil || len(names) == 0 {
		return catalog.JSONB
	}
	var props map[string]json.RawMessage
	if json.Unmarshal(o.Properties, &props) != nil {
		return catalog.JSONB
	}
	fields := make([]catalog.Field, len(names))
	for i, n := range names {
		fields[i] = catalog.Field{Name: n, Type: jsonSchemaColumnType(props[n], depth+1)}
	}
	st, err := catalog.StructOf(fields)
	if err != nil {
		return catalog.JSONB
	}
	return st
}
