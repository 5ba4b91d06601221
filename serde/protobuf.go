package serde

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bufbuild/protocompile"
	"github.com/cockroachdb/apd/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/numeric"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/pgcodec"
)

// Protobuf values, in two formats:
//
//   - PROTOBUF, the schema registry's: a zero magic byte, the writer
//     schema's id (4 bytes, big-endian), the message indexes that say
//     which message of the schema's file the value is, then the message
//     in Protobuf's binary encoding. The indexes are a zigzag varint
//     count then as many zigzag varint indexes, the first into the
//     file's top-level messages, each next into the nested messages of
//     the one before; the single byte 0 stands for [0], the file's first
//     message, which is what most values are.
//   - PROTOBUF_NOSR: the message alone, no framing and no registry; its
//     schema is the one ProtobufSchema writes for the columns, which
//     producer and reader must agree on by other means.
//
// A reader takes each column from the message's field of its name (else
// the one of its name ignoring case), so a producer may add fields
// (ignored), renumber or reorder them, or leave some out (NULL): field
// numbers matter only between a message and its own schema.
//
// The schema basin writes for columns (ProtobufSchema) is a proto3 file
// of one message, a field per column numbered from 1 in column order,
// named as the column; the types are ksqlDB's where it has the column's
// type:
//
//	BOOLEAN       optional bool
//	INTEGER       optional int32
//	BIGINT        optional int64
//	DOUBLE        optional double
//	VARCHAR       optional string
//	NUMERIC(p,s)  confluent.type.Decimal with precision p and scale s in
//	              the field's (confluent.field_meta) params, as ksqlDB
//	              writes it; NaN and ±Infinity cannot be written
//	NUMERIC       confluent.type.Decimal, each value with its own scale
//	TIMESTAMP     google.protobuf.Timestamp (to the microsecond), and
//	              TIMESTAMPTZ the same; years 1 to 9999, the type's range
//	DATE          google.type.Date, years 1 to 9999
//	TIME          google.type.TimeOfDay
//	UUID          optional string (the UUID's text)
//	BYTEA         optional bytes
//	JSON, JSONB   optional string (the JSON text)
//	T[]           repeated T
//
// Nullability. A scalar field is proto3 `optional`, so that NULL (the
// field absent) differs from zero; ksqlDB writes wrapper types
// (google.protobuf.Int32Value, ...) when asked to, and reading takes
// them as well. A message-typed field is NULL when absent. A repeated
// field cannot be absent: a NULL array is written as no elements and no
// elements read back as an empty array, and an array with a NULL element
// cannot be written at all (22004). A proto3 scalar without `optional`
// in another producer's schema reads as its zero value when absent, as
// every Protobuf reader reads it.
//
// Reading is lenient as Avro's is (fromAvro): a field of another type
// converts when the JSON reader would convert its value (an int32 into a
// BIGINT, a string into most types, an enum as its name); a message of a
// type above is read as its value, a wrapper as its wrapped value, and
// any other message or a map as JSON (protojson's form, field names as
// in the schema), which a VARCHAR, JSON or JSONB column takes.

// protoSchemaFile is the file name a schema's text is compiled under.
// Only its own imports could name it, which would be a cycle.
const protoSchemaFile = "schema.proto"

// ProtobufSchema returns the .proto text of columns cols: a proto3 file
// with one message, named by the last dotted part of name, in the
// package named by the rest (none when name has no dot).
func ProtobufSchema(name string, cols []catalog.Column) (string, error) {
	pkg, short := "", name
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		pkg, short = name[:i], name[i+1:]
	}
	if !isProtoIdent(short) {
		return "", pgerr.New(pgerr.InvalidName, "%q cannot name a Protobuf message: a name is letters, digits and underscores, not starting with a digit", short)
	}
	if pkg != "" {
		for _, p := range strings.Split(pkg, ".") {
			if !isProtoIdent(p) {
				return "", pgerr.New(pgerr.InvalidName, "%q cannot name a Protobuf package: each dotted part is letters, digits and underscores, not starting with a digit", pkg)
			}
		}
	}
	imports := map[string]bool{}
	var body strings.Builder
	nested := &protoMessages{imports: imports}
	for i, c := range cols {
		if !isProtoIdent(c.Name) {
			return "", pgerr.New(pgerr.InvalidName, "column %q cannot be a Protobuf field: a field name is letters, digits and underscores, not starting with a digit", c.Name)
		}
		label, typ, imp, err := nested.fieldType(c.Type, c.Name)
		if err != nil {
			return "", fmt.Errorf("column %q: %w", c.Name, err)
		}
		if imp != "" {
			imports[imp] = true
		}
		fmt.Fprintf(&body, "  %s%s %s = %d", label, typ, c.Name, i+1)
		if (c.Type == catalog.Decimal || c.Type.Elem() == catalog.Decimal) && c.Precision > 0 {
			// ksqlDB's DECIMAL(p,s): the decimal message carries a scale
			// per value, the column's typmod is in the field's metadata.
			imports["confluent/meta.proto"] = true
			fmt.Fprintf(&body, ` [(.confluent.field_meta) = { params: [{ key: "precision", value: "%d" }, { key: "scale", value: "%d" }] }]`, c.Precision, c.Scale)
		}
		body.WriteString(";\n")
	}
	var b strings.Builder
	b.WriteString("syntax = \"proto3\";\n")
	if pkg != "" {
		fmt.Fprintf(&b, "\npackage %s;\n", pkg)
	}
	if len(imports) > 0 {
		b.WriteByte('\n')
		for _, imp := range slices.Sorted(maps.Keys(imports)) {
			fmt.Fprintf(&b, "import %q;\n", imp)
		}
	}
	fmt.Fprintf(&b, "\nmessage %s {\n%s%s}\n", short, nested.defs.String(), body.String())
	return b.String(), nil
}

// protoMessages collects the message types of a schema's STRUCT
// columns, defined in the schema's message (so that it stays the file's
// first message), each named after its column's path.
type protoMessages struct {
	defs    strings.Builder
	imports map[string]bool
	used    map[string]bool
}

// fieldType is protoFieldType, with STRUCT types as messages of their
// own (defined in m) and MAP<VARCHAR, V> as map<string, V>; path names
// the field, for the name of a message.
func (m *protoMessages) fieldType(t catalog.Type, path string) (label, typ, imp string, err error) {
	switch {
	case t.IsArray() && t.Elem().HasNested():
		_, typ, imp, err = m.fieldType(t.Elem(), path)
		return "repeated ", typ, imp, err
	case t.IsMap():
		v := t.Value()
		if v.IsArray() || v.IsMap() {
			return "", "", "", pgerr.New(pgerr.FeatureNotSupported, "a %s column cannot be written in Protobuf, whose map values cannot be lists or maps", t)
		}
		_, vt, vimp, err := m.fieldType(v, path+"_value")
		if err != nil {
			return "", "", "", err
		}
		if vimp != "" {
			m.imports[vimp] = true
		}
		return "", "map<string, " + vt + ">", "", nil
	case t.IsStruct():
		name := protoMessageName(path)
		if m.used == nil {
			m.used = map[string]bool{}
		}
		for n := 2; m.used[name]; n++ {
			name = fmt.Sprintf("%s%d", protoMessageName(path), n)
		}
		m.used[name] = true
		var body strings.Builder
		for i, f := range t.Fields() {
			if !isProtoIdent(f.Name) {
				return "", "", "", pgerr.New(pgerr.InvalidName, "field %q cannot be a Protobuf field: a field name is letters, digits and underscores, not starting with a digit", f.Name)
			}
			flabel, ftyp, fimp, err := m.fieldType(f.Type, path+"_"+f.Name)
			if err != nil {
				return "", "", "", err
			}
			if fimp != "" {
				m.imports[fimp] = true
			}
			fmt.Fprintf(&body, "    %s%s %s = %d;\n", flabel, ftyp, f.Name, i+1)
		}
		fmt.Fprintf(&m.defs, "  message %s {\n%s  }\n", name, body.String())
		return "optional ", name, "", nil
	}
	return protoFieldType(t)
}

// protoMessageName is the message name of a STRUCT at path: its parts
// capitalized, as Protobuf's style names messages.
func protoMessageName(path string) string {
	var b strings.Builder
	for _, part := range strings.Split(path, "_") {
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	if b.Len() == 0 {
		return "Struct"
	}
	return b.String()
}

// protoFieldType is the label, type and import of a field of a column
// of type t.
func protoFieldType(t catalog.Type) (label, typ, imp string, err error) {
	if t.IsArray() {
		_, typ, imp, err = protoFieldType(t.Elem())
		return "repeated ", typ, imp, err
	}
	switch t {
	case catalog.Boolean:
		typ = "bool"
	case catalog.Int:
		typ = "int32"
	case catalog.BigInt:
		typ = "int64"
	case catalog.Double:
		typ = "double"
	case catalog.Varchar, catalog.UUID, catalog.JSON, catalog.JSONB:
		typ = "string"
	case catalog.Bytea:
		typ = "bytes"
	// Message types by their full names, from the root: a package of the
	// schema's own (io.confluent.ksql...) would otherwise be searched
	// first for "confluent" or "google".
	case catalog.Decimal:
		return "", "." + protoDecimal, "confluent/type/decimal.proto", nil
	case catalog.Timestamp, catalog.TimestampTZ:
		return "", "." + protoTimestamp, "google/protobuf/timestamp.proto", nil
	case catalog.Date:
		return "", "." + protoDate, "google/type/date.proto", nil
	case catalog.Time:
		return "", "." + protoTimeOfDay, "google/type/timeofday.proto", nil
	default:
		return "", "", "", pgerr.New(pgerr.FeatureNotSupported, "a %s column cannot be written in Protobuf", t)
	}
	return "optional ", typ, "", nil
}

// isProtoIdent reports whether s is a Protobuf identifier.
func isProtoIdent(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// ParseProtobufSchema compiles a Protobuf schema's text, as the registry
// holds it, into its file's descriptors. The schema may import
// google/protobuf/*.proto and the files of builtinProtoSources; schema
// references (imports of other subjects' schemas) are not resolved yet,
// so a schema importing anything else is refused. Compiling is not
// cheap: a caller keeps the result by schema id.
func ParseProtobufSchema(text string) (fd protoreflect.FileDescriptor, err error) {
	defer func() {
		if r := recover(); r != nil {
			fd, err = nil, pgerr.New(pgerr.InvalidParameterValue, "Protobuf schema does not compile: the compiler failed: %v", r)
		}
	}()
	builtins, err := builtinProtoFiles()
	if err != nil {
		return nil, err
	}
	std := protocompile.WithStandardImports(protocompile.ResolverFunc(func(path string) (protocompile.SearchResult, error) {
		return protocompile.SearchResult{}, fmt.Errorf("import %q is not a file the registry provides; schema references are not supported", path)
	}))
	c := protocompile.Compiler{
		Resolver: protocompile.ResolverFunc(func(path string) (protocompile.SearchResult, error) {
			if path == protoSchemaFile {
				return protocompile.SearchResult{Source: io.NopCloser(strings.NewReader(text))}, nil
			}
			if f, ok := builtins[path]; ok {
				return protocompile.SearchResult{Desc: f}, nil
			}
			return std.FindFileByPath(path)
		}),
		MaxParallelism: 1,
	}
	files, err := c.Compile(context.Background(), protoSchemaFile)
	if err != nil {
		return nil, pgerr.New(pgerr.InvalidParameterValue, "Protobuf schema does not compile: %v", err)
	}
	return files[0], nil
}

// ProtobufDescriptor returns the message ProtobufSchema(name, cols)
// defines: what AppendProtobuf writes, and PROTOBUF_NOSR's schema.
func ProtobufDescriptor(name string, cols []catalog.Column) (protoreflect.MessageDescriptor, error) {
	text, err := ProtobufSchema(name, cols)
	if err != nil {
		return nil, err
	}
	fd, err := ParseProtobufSchema(text)
	if err != nil {
		return nil, err
	}
	return fd.Messages().Get(0), nil
}

// ---- writing ----

// AppendProtobuf appends the Confluent-framed Protobuf encoding of vals,
// the values of columns cols, as message md of the schema whose registry
// id is id; the message indexes are md's place in its file.
func AppendProtobuf(dst []byte, md protoreflect.MessageDescriptor, id uint32, cols []catalog.Column, vals []any) ([]byte, error) {
	body, err := marshalProto(md, cols, vals)
	if err != nil {
		return nil, err
	}
	dst = append(dst, avroMagic)
	dst = binary.BigEndian.AppendUint32(dst, id)
	dst = appendMessageIndexes(dst, md)
	return append(dst, body...), nil
}

// AppendProtobufNoSR appends the Protobuf encoding of vals, the values
// of columns cols, as message md: PROTOBUF_NOSR, the message alone.
func AppendProtobufNoSR(dst []byte, md protoreflect.MessageDescriptor, cols []catalog.Column, vals []any) ([]byte, error) {
	body, err := marshalProto(md, cols, vals)
	if err != nil {
		return nil, err
	}
	return append(dst, body...), nil
}

// appendMessageIndexes appends the message indexes of md.
func appendMessageIndexes(dst []byte, md protoreflect.MessageDescriptor) []byte {
	var path []int
	for d := protoreflect.Descriptor(md); ; {
		path = append(path, d.Index())
		p, ok := d.Parent().(protoreflect.MessageDescriptor)
		if !ok {
			break
		}
		d = p
	}
	if len(path) == 1 && path[0] == 0 {
		return append(dst, 0)
	}
	dst = binary.AppendVarint(dst, int64(len(path)))
	for i := len(path) - 1; i >= 0; i-- {
		dst = binary.AppendVarint(dst, int64(path[i]))
	}
	return dst
}

// marshalProto is the message md of the values vals of columns cols,
// encoded. A panic of the library (a value of another Go type than the
// field's, which protoValue should have made impossible) is an error
// rather than the process's end.
func marshalProto(md protoreflect.MessageDescriptor, cols []catalog.Column, vals []any) (b []byte, err error) {
	if len(cols) != len(vals) {
		return nil, fmt.Errorf("exec: encode value: %d columns and %d values", len(cols), len(vals))
	}
	defer func() {
		if r := recover(); r != nil {
			b, err = nil, fmt.Errorf("exec: Protobuf value: the encoder failed: %v", r)
		}
	}()
	m := dynamicpb.NewMessage(md)
	for i, c := range cols {
		fd := protoField(md, c.Name)
		if fd == nil {
			return nil, pgerr.New(pgerr.DatatypeMismatch, "Protobuf message %s has no field for column %q", md.FullName(), c.Name)
		}
		if vals[i] == nil {
			continue
		}
		if err := setProtoField(m, fd, c, vals[i]); err != nil {
			return nil, err
		}
	}
	b, err = proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("exec: Protobuf value: %w", err)
	}
	return b, nil
}

// protoField is md's field for column name: of that name, else of that
// name ignoring case (the first in field order).
func protoField(md protoreflect.MessageDescriptor, name string) protoreflect.FieldDescriptor {
	fields := md.Fields()
	if fd := fields.ByName(protoreflect.Name(name)); fd != nil {
		return fd
	}
	for i := 0; i < fields.Len(); i++ {
		if fd := fields.Get(i); strings.EqualFold(string(fd.Name()), name) {
			return fd
		}
	}
	return nil
}

// setProtoField sets field fd of m to v, a non-NULL value of column c.
func setProtoField(m protoreflect.Message, fd protoreflect.FieldDescriptor, c catalog.Column, v any) error {
	switch {
	case fd.IsMap():
		mv, ok := v.(catalog.Map)
		if !ok || !c.Type.IsMap() {
			return protoMismatch(c, v, "map")
		}
		pm := m.Mutable(fd).Map()
		vcol := catalog.Column{Name: c.Name, Type: c.Type.Value()}
		for _, e := range mv {
			if e.Value == nil {
				return pgerr.New(pgerr.NullValueNotAllowedDataException, "column %q: the value of key %q is NULL, which a Protobuf map cannot hold", c.Name, e.Key)
			}
			x, err := protoElement(pm.NewValue, fd.MapValue(), vcol, e.Value)
			if err != nil {
				return err
			}
			pm.Set(protoreflect.ValueOfString(e.Key).MapKey(), x)
		}
		return nil
	case fd.IsList():
		a, ok := v.([]any)
		if !ok {
			return protoMismatch(c, v, "repeated "+protoKindName(fd))
		}
		list := m.Mutable(fd).List()
		elem := catalog.Column{Name: c.Name, Type: c.Type.Elem(), Precision: c.Precision, Scale: c.Scale}
		for i, e := range a {
			if e == nil {
				return pgerr.New(pgerr.NullValueNotAllowedDataException, "column %q: element %d of the array is NULL, which a Protobuf repeated field cannot hold", c.Name, i+1).
					WithHint("Remove the NULLs from the array (array_remove) or write the value in another format.")
			}
			x, err := protoElement(list.NewElement, fd, elem, e)
			if err != nil {
				return err
			}
			list.Append(x)
		}
		return nil
	}
	x, err := protoElement(func() protoreflect.Value { return m.NewField(fd) }, fd, c, v)
	if err != nil {
		return err
	}
	m.Set(fd, x)
	return nil
}

// protoElement is v, a non-NULL value of column c, as a value of field
// fd's type (an element, for a repeated field); newMessage makes an
// empty message of it.
func protoElement(newMessage func() protoreflect.Value, fd protoreflect.FieldDescriptor, c catalog.Column, v any) (protoreflect.Value, error) {
	if fd.Kind() != protoreflect.MessageKind && fd.Kind() != protoreflect.GroupKind {
		return protoScalar(fd, c, v)
	}
	x := newMessage()
	if sv, isStruct := v.(catalog.Struct); isStruct && c.Type.IsStruct() {
		return x, setProtoStruct(x.Message(), c, sv)
	}
	ok, err := setProtoMessage(x.Message(), c, v)
	if err != nil {
		return protoreflect.Value{}, err
	}
	if !ok {
		return protoreflect.Value{}, protoMismatch(c, v, string(fd.Message().FullName()))
	}
	return x, nil
}

// setProtoStruct sets the fields of message m to those of v, a STRUCT
// value of column c, by name.
func setProtoStruct(m protoreflect.Message, c catalog.Column, v catalog.Struct) error {
	fields := c.Type.Fields()
	if len(v) != len(fields) {
		return fmt.Errorf("exec: a STRUCT value of %d fields for %s", len(v), c.Type)
	}
	for i, f := range fields {
		if v[i] == nil {
			continue
		}
		fd := protoField(m.Descriptor(), f.Name)
		if fd == nil {
			return pgerr.New(pgerr.DatatypeMismatch, "Protobuf message %s has no field for %s", m.Descriptor().FullName(), f.Name)
		}
		if err := setProtoField(m, fd, catalog.Column{Name: c.Name + "->" + f.Name, Type: f.Type}, v[i]); err != nil {
			return err
		}
	}
	return nil
}

// protoScalar is v, a non-NULL value of column c, as a value of scalar
// field fd.
func protoScalar(fd protoreflect.FieldDescriptor, c catalog.Column, v any) (protoreflect.Value, error) {
	k := fd.Kind()
	outOfRange := func(n int64) error {
		return pgerr.New(pgerr.NumericValueOutOfRange, "column %q: %d is out of range for Protobuf field %s of type %s", c.Name, n, fd.Name(), k)
	}
	switch x := v.(type) {
	case bool:
		if k == protoreflect.BoolKind {
			return protoreflect.ValueOfBool(x), nil
		}
	case int64:
		switch k {
		case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
			if x < math.MinInt32 || x > math.MaxInt32 {
				return protoreflect.Value{}, outOfRange(x)
			}
			return protoreflect.ValueOfInt32(int32(x)), nil
		case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
			return protoreflect.ValueOfInt64(x), nil
		case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
			if x < 0 || x > math.MaxUint32 {
				return protoreflect.Value{}, outOfRange(x)
			}
			return protoreflect.ValueOfUint32(uint32(x)), nil
		case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
			if x < 0 {
				return protoreflect.Value{}, outOfRange(x)
			}
			return protoreflect.ValueOfUint64(uint64(x)), nil
		case protoreflect.DoubleKind:
			return protoreflect.ValueOfFloat64(float64(x)), nil
		case protoreflect.EnumKind:
			if x >= math.MinInt32 && x <= math.MaxInt32 {
				return protoreflect.ValueOfEnum(protoreflect.EnumNumber(x)), nil
			}
		}
	case float64:
		switch k {
		case protoreflect.DoubleKind:
			return protoreflect.ValueOfFloat64(x), nil
		case protoreflect.FloatKind:
			return protoreflect.ValueOfFloat32(float32(x)), nil
		}
	case string:
		switch k {
		case protoreflect.StringKind:
			return protoreflect.ValueOfString(x), nil
		case protoreflect.BytesKind:
			return protoreflect.ValueOfBytes([]byte(x)), nil
		case protoreflect.EnumKind:
			if ev := fd.Enum().Values().ByName(protoreflect.Name(x)); ev != nil {
				return protoreflect.ValueOfEnum(ev.Number()), nil
			}
			return protoreflect.Value{}, pgerr.New(pgerr.InvalidParameterValue, "column %q: %q is not a value of Protobuf enum %s", c.Name, x, fd.Enum().FullName())
		}
	case []byte:
		if k == protoreflect.BytesKind {
			return protoreflect.ValueOfBytes(x), nil
		}
	}
	if k == protoreflect.StringKind {
		// Values with a text form into a string field: ProtobufSchema's
		// UUID, JSON and JSONB, and any column into another producer's
		// string.
		if s, ok := protoText(v); ok {
			return protoreflect.ValueOfString(s), nil
		}
	}
	return protoreflect.Value{}, protoMismatch(c, v, protoKindName(fd))
}

// protoText is v's text, for a string field.
func protoText(v any) (string, bool) {
	switch x := v.(type) {
	case catalog.UUIDVal:
		return pgcodec.FormatUUID(x), true
	case catalog.JSONText:
		return string(x), true
	case *apd.Decimal:
		return numeric.Text(x), true
	case int64:
		return strconv.FormatInt(x, 10), true
	case bool:
		return strconv.FormatBool(x), true
	case float64:
		return string(appendJSONFloat(nil, x)), true
	case catalog.DateVal:
		return string(pgcodec.AppendDate(nil, x)), true
	case catalog.TimeOfDay:
		return string(pgcodec.AppendTimeOfDay(nil, x)), true
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano), true
	}
	return "", false
}

func protoKindName(fd protoreflect.FieldDescriptor) string {
	if fd.Message() != nil {
		return string(fd.Message().FullName())
	}
	if fd.Enum() != nil {
		return string(fd.Enum().FullName())
	}
	return fd.Kind().String()
}

// protoMismatch is the error for a value of column c that a field of
// type typ cannot hold: a schema from the registry that does not fit the
// columns.
func protoMismatch(c catalog.Column, v any, typ any) error {
	return pgerr.New(pgerr.DatatypeMismatch, "column %q of type %s cannot be written to a Protobuf field of type %s (a %T)", c.Name, c.Type, typ, v)
}

// ---- reading ----

// DecodeProtobuf decodes a Confluent-framed Protobuf value, written with
// the schema fd (the one its id names), into the columns cols: the
// message its indexes name in fd, each column from the field of its name
// (else of its name ignoring case), NULL when the message has none or
// leaves it unset (see decodeJSONValueInto for dst and idx).
func DecodeProtobuf(dst []any, idx []int, cols []catalog.Column, fd protoreflect.FileDescriptor, b []byte) error {
	if _, err := SchemaID(b); err != nil {
		return err
	}
	md, body, err := protoMessageAt(fd, b[5:])
	if err != nil {
		return err
	}
	return decodeProto(dst, idx, cols, md, body)
}

// DecodeProtobufNoSR decodes a PROTOBUF_NOSR value, message md alone,
// into the columns cols as DecodeProtobuf does.
func DecodeProtobufNoSR(dst []any, idx []int, cols []catalog.Column, md protoreflect.MessageDescriptor, b []byte) error {
	return decodeProto(dst, idx, cols, md, b)
}

// protoMessageAt reads the message indexes at the start of b and
// returns the message of fd they name and the bytes after them.
func protoMessageAt(fd protoreflect.FileDescriptor, b []byte) (protoreflect.MessageDescriptor, []byte, error) {
	bad := func(format string, args ...any) error {
		return pgerr.New(pgerr.InvalidTextRepresentation, "Protobuf value's message indexes %s", fmt.Sprintf(format, args...)).
			WithHint("A Protobuf producer writes a zero byte, the schema id, the indexes of the message in the schema, then the message.")
	}
	n, k := binary.Varint(b)
	if k <= 0 {
		return nil, nil, bad("are cut short or malformed (%s)", snippet(b))
	}
	b = b[k:]
	path := []int{0}
	if n != 0 {
		// Each index is a byte at least.
		if n < 0 || n > int64(len(b)) {
			return nil, nil, bad("have a count of %d", n)
		}
		path = make([]int, n)
		for i := range path {
			x, k := binary.Varint(b)
			if k <= 0 || x < 0 || x > math.MaxInt32 {
				return nil, nil, bad("are cut short or malformed")
			}
			path[i], b = int(x), b[k:]
		}
	}
	msgs := fd.Messages()
	var md protoreflect.MessageDescriptor
	for _, i := range path {
		if i >= msgs.Len() {
			return nil, nil, bad("%v name no message of schema %s", path, fd.Path())
		}
		md = msgs.Get(i)
		msgs = md.Messages()
	}
	return md, b, nil
}

// decodeProto decodes message md from b into the columns cols.
func decodeProto(dst []any, idx []int, cols []catalog.Column, md protoreflect.MessageDescriptor, b []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = pgerr.New(pgerr.InvalidTextRepresentation, "Protobuf value does not decode as message %s: the decoder failed: %v", md.FullName(), r)
		}
	}()
	m := dynamicpb.NewMessage(md)
	if err := (proto.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(b, m); err != nil {
		return pgerr.New(pgerr.InvalidTextRepresentation, "Protobuf value does not decode as message %s: %v", md.FullName(), err)
	}
	for i, c := range cols {
		fd := protoField(md, c.Name)
		var v any
		if fd != nil {
			if v, err = fromProto(c, m, fd); err != nil {
				return pgerr.New(pgerr.CodeOf(err), "field %q: %v", fd.Name(), err)
			}
		}
		setCol(dst, idx, i, v)
	}
	return nil
}

// fromProto is field fd of m as a value of column c.
func fromProto(c catalog.Column, m protoreflect.Message, fd protoreflect.FieldDescriptor) (any, error) {
	if fd.HasPresence() && !m.Has(fd) {
		return nil, nil
	}
	raw, err := protoFieldValue(fd, m.Get(fd), c.Type.HasNested())
	if err != nil || raw == nil {
		return nil, err
	}
	v, err := fromAvro(c, nil, raw)
	if err != nil {
		if _, ok := pgerr.As(err); ok {
			return nil, err
		}
		return nil, pgerr.New(pgerr.InvalidTextRepresentation, "%v", err)
	}
	return v, nil
}

// protoFieldValue is a field's value as fromAvro takes it: a list as
// []any, a map as map[string]any, a scalar or message by protoValue;
// nested is set for a column of a nested type, whose messages are maps of
// their fields.
func protoFieldValue(fd protoreflect.FieldDescriptor, v protoreflect.Value, nested bool) (any, error) {
	switch {
	case fd.IsList():
		l := v.List()
		out := make([]any, l.Len())
		for i := range out {
			x, err := protoValue(fd, l.Get(i), nested)
			if err != nil {
				return nil, err
			}
			out[i] = x
		}
		return out, nil
	case fd.IsMap():
		out := make(map[string]any, v.Map().Len())
		var err error
		v.Map().Range(func(k protoreflect.MapKey, x protoreflect.Value) bool {
			var e any
			if e, err = protoValue(fd.MapValue(), x, nested); err != nil {
				return false
			}
			if b, ok := e.([]byte); ok && !nested {
				e = string(b) // as JSON would have it, not base64
			}
			out[k.String()] = e
			return true
		})
		return out, err
	}
	return protoValue(fd, v, nested)
}

// protoValue is a single value of field fd's type as fromAvro takes it:
// a scalar as its Go value, a message of protobuf_types.go's types as
// its value, another message as its JSON or, nested, as a map of its
// fields' values.
func protoValue(fd protoreflect.FieldDescriptor, v protoreflect.Value, nested bool) (any, error) {
	if fd.Kind() != protoreflect.MessageKind && fd.Kind() != protoreflect.GroupKind {
		return protoScalarValue(fd, v)
	}
	msg := v.Message()
	x, ok, err := protoMessageValue(msg)
	if ok || err != nil {
		return x, err
	}
	if nested {
		return protoFields(msg)
	}
	return protoJSON(msg)
}

// protoFields is message msg as a map of its fields' values by name,
// an unset field with presence NULL.
func protoFields(msg protoreflect.Message) (map[string]any, error) {
	fields := msg.Descriptor().Fields()
	out := make(map[string]any, fields.Len())
	for i := range fields.Len() {
		fd := fields.Get(i)
		if fd.HasPresence() && !msg.Has(fd) {
			out[string(fd.Name())] = nil
			continue
		}
		v, err := protoFieldValue(fd, msg.Get(fd), true)
		if err != nil {
			return nil, err
		}
		out[string(fd.Name())] = v
	}
	return out, nil
}

// protoScalarValue is a scalar field's value as fromAvro takes it.
func protoScalarValue(fd protoreflect.FieldDescriptor, v protoreflect.Value) (any, error) {
	switch k := fd.Kind(); k {
	case protoreflect.BoolKind:
		return v.Bool(), nil
	case protoreflect.FloatKind:
		return float32(v.Float()), nil
	case protoreflect.DoubleKind:
		return v.Float(), nil
	case protoreflect.StringKind:
		s := v.String()
		if !utf8.ValidString(s) {
			// proto3 checks its strings; proto2 does not.
			return nil, pgerr.New(pgerr.CharacterNotInRepertoire, "string %s is not valid UTF-8", snippet([]byte(s)))
		}
		return s, nil
	case protoreflect.BytesKind:
		return v.Bytes(), nil
	case protoreflect.EnumKind:
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			return string(ev.Name()), nil
		}
		return int64(v.Enum()), nil
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return v.Uint(), nil
	default:
		if isProtoInteger(k) {
			return protoInt(v, k), nil
		}
	}
	return nil, pgerr.New(pgerr.FeatureNotSupported, "Protobuf field %s of kind %s cannot be read", fd.Name(), fd.Kind())
}

// isProtoInteger reports whether k is an integer kind that fits an
// int64.
func isProtoInteger(k protoreflect.Kind) bool {
	switch k {
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind,
		protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return true
	}
	return false
}

// protoInt is v, of integer kind k (isProtoInteger), as an int64.
func protoInt(v protoreflect.Value, k protoreflect.Kind) int64 {
	if k == protoreflect.Uint32Kind || k == protoreflect.Fixed32Kind {
		return int64(v.Uint())
	}
	return v.Int()
}
