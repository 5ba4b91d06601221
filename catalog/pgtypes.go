package catalog

import "strings"

// Postgres system types. The virtual pg_catalog and information_schema
// relations and the functions over them use these; streams, tables and
// views never store them (Storable), so nothing on disk or in Kafka is
// ever of one of them. Values travel as:
//
//	Oid, RegClass, RegType, RegProc, RegNamespace   int64 (uint32 range)
//	Int2Vector, OidVector, arrays                   []any of the element type
//	Record                                          []any, one value per field
//
// The reg* types are oids that print as names: casting a name to
// regclass looks the relation up, and a regclass shown to a client is
// its name. They keep their numeric value through comparisons, so
// 'orders'::regclass = c.oid works as in Postgres.
//
// The values continue Type's numbering: Type is recorded as a number in
// the command log, so existing numbers never change.
const (
	Oid Type = Timestamp + 1 + iota
	RegClass
	RegType
	RegProc
	RegNamespace
	// Int2Vector and OidVector are Postgres's 0-based vectors
	// (pg_index.indkey); their elements are Int and Oid.
	Int2Vector
	OidVector
	// Record is an anonymous row (what information_schema._pg_expandarray
	// returns); its fields are known from the expression that made it.
	Record
)

// arrayFlag marks an array type: ArrayOf(Varchar) is text[].
const arrayFlag Type = 0x80

// ArrayOf returns the type of arrays of t.
func ArrayOf(t Type) Type { return t | arrayFlag }

// IsArray reports whether t is an array type (not a vector).
func (t Type) IsArray() bool { return t&arrayFlag != 0 }

// Elem returns the element type of an array or vector type, Unknown for
// any other type.
func (t Type) Elem() Type {
	switch {
	case t.IsArray():
		return t &^ arrayFlag
	case t == Int2Vector:
		return Int
	case t == OidVector:
		return Oid
	}
	return Unknown
}

// Subscriptable reports whether t[n] is defined: arrays and vectors.
func (t Type) Subscriptable() bool { return t.IsArray() || t == Int2Vector || t == OidVector }

// IsReg reports whether t is one of the reg* oid types.
func (t Type) IsReg() bool {
	return t == RegClass || t == RegType || t == RegProc || t == RegNamespace
}

// OidLike reports whether values of t are oids: Oid and the reg* types.
func (t Type) OidLike() bool { return t == Oid || t.IsReg() }

// Storable reports whether streams, tables and views may have columns
// of type t.
func (t Type) Storable() bool {
	if c := t.composite(); c != nil {
		if c.kind == kindMap {
			return c.key == Varchar && c.value.Storable()
		}
		for _, f := range c.fields {
			if !f.Type.Storable() {
				return false
			}
		}
		return true
	}
	if t.IsArray() {
		e := t.Elem()
		return !e.IsArray() && e.Storable()
	}
	return t >= Boolean && t <= Timestamp || t >= Date && t <= lastStorable
}

// pgTypeOIDs are the type OIDs of the system types; arrays are in
// arrayOIDs, by element type.
var pgTypeOIDs = map[Type]uint32{
	Oid: 26, RegClass: 2205, RegType: 2206, RegProc: 24, RegNamespace: 4089,
	Int2Vector: 22, OidVector: 30, Record: 2249,
	Date: 1082, Time: 1083, TimestampTZ: 1184, Interval: 1186, Decimal: 1700,
	UUID: 2950, JSONB: 3802, JSON: 114, Bytea: 17,
}

var arrayOIDs = map[Type]uint32{
	Boolean: 1000, Int: 1007, BigInt: 1016, Double: 1022, Varchar: 1009, Timestamp: 1115,
	Oid: 1028, RegClass: 2210, RegType: 2211, RegProc: 1008, RegNamespace: 4090,
	Int2Vector: 1006, OidVector: 1013, Record: 2287, Unknown: 1009,
	Date: 1182, Time: 1183, TimestampTZ: 1185, Interval: 1187, Decimal: 1231,
	UUID: 2951, JSONB: 3807, JSON: 199, Bytea: 1001,
}

var pgTypeNames = map[Type]string{
	Oid: "oid", RegClass: "regclass", RegType: "regtype", RegProc: "regproc", RegNamespace: "regnamespace",
	Int2Vector: "int2vector", OidVector: "oidvector", Record: "record",
	Date: "date", Time: "time", TimestampTZ: "timestamptz", Interval: "interval", Decimal: "numeric",
	UUID: "uuid", JSONB: "jsonb", JSON: "json", Bytea: "bytea",
}

// newTypeNames are the names DESCRIBE shows for the types after the
// system types.
var newTypeNames = map[Type]string{
	Date: "DATE", Time: "TIME", TimestampTZ: "TIMESTAMPTZ", Interval: "INTERVAL", Decimal: "NUMERIC",
	UUID: "UUID", JSONB: "JSONB", JSON: "JSON", Bytea: "BYTEA",
}

// newSQLNames are format_type's names for them.
var newSQLNames = map[Type]string{
	Time: "time without time zone", TimestampTZ: "timestamp with time zone",
}

// pgString is String for the system and array types.
func (t Type) pgString() string {
	if s, ok := t.nestedString(); ok {
		return s
	}
	if t.IsArray() {
		return t.Elem().String() + "[]"
	}
	if n, ok := newTypeNames[t]; ok {
		return n
	}
	if n, ok := pgTypeNames[t]; ok {
		return strings.ToUpper(n)
	}
	return "UNKNOWN"
}

// pgName is PGName for the system and array types.
func (t Type) pgName() string {
	if t.IsNested() {
		return "jsonb"
	}
	if t.IsArray() {
		return "_" + t.Elem().PGName()
	}
	if n, ok := pgTypeNames[t]; ok {
		return n
	}
	return "unknown"
}

// pgOID is OID for the system and array types.
func (t Type) pgOID() uint32 {
	if t.IsNested() {
		return pgTypeOIDs[JSONB]
	}
	if t.IsArray() {
		if t.Elem().IsNested() {
			return arrayOIDs[JSONB]
		}
		if o, ok := arrayOIDs[t.Elem()]; ok {
			return o
		}
		return 1009
	}
	if o, ok := pgTypeOIDs[t]; ok {
		return o
	}
	return 705
}

// SQLName is the name Postgres's format_type gives t: "bigint",
// "timestamp without time zone", "text[]".
func (t Type) SQLName() string {
	if t.IsNested() {
		return "jsonb"
	}
	if t.IsArray() {
		return t.Elem().SQLName() + "[]"
	}
	switch t {
	case Boolean:
		return "boolean"
	case Int:
		return "integer"
	case BigInt:
		return "bigint"
	case Double:
		return "double precision"
	case Varchar:
		return "text"
	case Timestamp:
		return "timestamp without time zone"
	}
	if n, ok := newSQLNames[t]; ok {
		return n
	}
	if n, ok := pgTypeNames[t]; ok {
		return n
	}
	return "unknown"
}

// FormatArray renders an array or vector value as Postgres's text output
// does: {a,b,"c d",NULL} for arrays, "1 2" for vectors. format renders
// one non-NULL element.
func FormatArray(t Type, v []any, format func(any) string) string {
	if t == Int2Vector || t == OidVector {
		parts := make([]string, len(v))
		for i, x := range v {
			parts[i] = format(x)
		}
		return strings.Join(parts, " ")
	}
	var b strings.Builder
	b.WriteByte('{')
	for i, x := range v {
		if i > 0 {
			b.WriteByte(',')
		}
		if x == nil {
			b.WriteString("NULL")
			continue
		}
		if inner, ok := x.([]any); ok {
			b.WriteString(FormatArray(ArrayOf(Unknown), inner, format))
			continue
		}
		s := format(x)
		if arrayNeedsQuotes(s) {
			b.WriteByte('"')
			for _, r := range s {
				if r == '"' || r == '\\' {
					b.WriteByte('\\')
				}
				b.WriteRune(r)
			}
			b.WriteByte('"')
		} else {
			b.WriteString(s)
		}
	}
	b.WriteByte('}')
	return b.String()
}

func arrayNeedsQuotes(s string) bool {
	if s == "" || strings.EqualFold(s, "null") {
		return true
	}
	for _, r := range s {
		switch r {
		case '{', '}', ',', '"', '\\', ' ', '\t', '\n', '\r', '\v', '\f':
			return true
		}
	}
	return false
}

// FormatRecord renders a record value as Postgres does: (1,"a b",).
func FormatRecord(v []any, format func(any) string) string {
	var b strings.Builder
	b.WriteByte('(')
	for i, x := range v {
		if i > 0 {
			b.WriteByte(',')
		}
		if x == nil {
			continue
		}
		s := format(x)
		if s == "" || strings.ContainsAny(s, "(),\" \\") {
			b.WriteString(`"` + strings.NewReplacer(`"`, `""`, `\`, `\\`).Replace(s) + `"`)
		} else {
			b.WriteString(s)
		}
	}
	b.WriteByte(')')
	return b.String()
}
