package catalog

import (
	"strings"
	"time"
)

// Type is a basin SQL type. Values of each type travel through the engine
// as one Go type:
//
//	Boolean   bool
//	Int       int64 (range of int4)
//	BigInt    int64
//	Double    float64
//	Varchar   string
//	Timestamp time.Time (UTC, microsecond precision)
//
// (values.go lists the later types, nested.go STRUCT and MAP) and SQL
// NULL is a nil interface value. The numbers below 0x100 are
// recorded in the command log and never change; composite types
// (nested.go) are numbered per process and recorded as their text.
type Type uint32

// The types basin knows. Unknown is the type of an untyped NULL literal.
const (
	Unknown Type = iota
	Boolean
	Int
	BigInt
	Double
	Varchar
	Timestamp
)

var typeNames = [...]string{
	Unknown:   "UNKNOWN",
	Boolean:   "BOOLEAN",
	Int:       "INTEGER",
	BigInt:    "BIGINT",
	Double:    "DOUBLE",
	Varchar:   "VARCHAR",
	Timestamp: "TIMESTAMP",
}

// String returns the SQL name of t as DESCRIBE shows it.
func (t Type) String() string {
	if int(t) < len(typeNames) {
		return typeNames[t]
	}
	return t.pgString()
}

// PGName returns the Postgres name of t (pg_type.typname).
func (t Type) PGName() string {
	switch t {
	case Boolean:
		return "bool"
	case Int:
		return "int4"
	case BigInt:
		return "int8"
	case Double:
		return "float8"
	case Varchar:
		return "text"
	case Timestamp:
		return "timestamp"
	}
	return t.pgName()
}

// OID returns the Postgres type OID of t.
func (t Type) OID() uint32 {
	switch t {
	case Boolean:
		return 16
	case Int:
		return 23
	case BigInt:
		return 20
	case Double:
		return 701
	case Varchar:
		return 25
	case Timestamp:
		return 1114
	case Unknown:
		return 705
	}
	return t.pgOID()
}

// Numeric reports whether t is a number type: Int, BigInt, Decimal or
// Double.
func (t Type) Numeric() bool { return t == Int || t == BigInt || t == Double || t == Decimal }

// ParseType maps a SQL type name, in ksqlDB, Postgres or MySQL spelling, to
// a Type. Lengths and precisions ("VARCHAR(20)") are ignored.
func ParseType(name string) (Type, bool) {
	n := strings.ToUpper(strings.TrimSpace(name))
	if i := strings.IndexByte(n, '('); i >= 0 {
		n = strings.TrimSpace(n[:i])
	}
	switch n {
	case "BOOLEAN", "BOOL":
		return Boolean, true
	case "INT", "INTEGER", "INT4", "SMALLINT", "INT2", "TINYINT", "MEDIUMINT":
		return Int, true
	case "BIGINT", "INT8", "LONG":
		return BigInt, true
	case "DOUBLE", "DOUBLE PRECISION", "FLOAT", "FLOAT8", "REAL", "FLOAT4":
		return Double, true
	case "DECIMAL", "NUMERIC", "DEC":
		return Decimal, true
	case "DATE":
		return Date, true
	case "TIME", "TIME WITHOUT TIME ZONE":
		return Time, true
	case "TIMESTAMPTZ", "TIMESTAMP WITH TIME ZONE":
		return TimestampTZ, true
	case "INTERVAL":
		return Interval, true
	case "UUID":
		return UUID, true
	case "JSONB":
		return JSONB, true
	case "JSON":
		return JSON, true
	case "BYTEA", "BYTES":
		return Bytea, true
	case "VARCHAR", "STRING", "TEXT", "CHAR", "CHARACTER VARYING", "CHARACTER", "BPCHAR":
		return Varchar, true
	case "TIMESTAMP", "DATETIME", "TIMESTAMP WITHOUT TIME ZONE":
		return Timestamp, true
	}
	return Unknown, false
}

// TimestampLayout is how timestamps are written as text (Postgres ISO).
const TimestampLayout = "2006-01-02 15:04:05.999999"

// NormalizeTime returns t in UTC truncated to microseconds, the precision
// basin keeps.
func NormalizeTime(t time.Time) time.Time {
	return t.UTC().Truncate(time.Microsecond)
}

// Column is a named, typed column of a relation.
type Column struct {
	Name string
	Type Type
	// Key marks the column as part of the record key (the PRIMARY KEY of a
	// table or view, the KEY of a stream).
	Key bool
	// Hidden columns are pseudo-columns (_partition, _offset_lag, ...):
	// never part of SELECT *.
	Hidden bool
	// Precision and Scale are a NUMERIC(p,s) column's modifiers; 0
	// precision is an unconstrained NUMERIC.
	Precision int `json:",omitempty"`
	Scale     int `json:",omitempty"`
	// Fields names the fields of a Record column; only catalog queries
	// have those, and they are never recorded.
	Fields []Column `json:"-"`
	// Header is the key of the record header a HEADER('key') column of
	// a stream or table holds; Headers marks a HEADERS column, which
	// holds all of them. Such a column is neither in the record's key
	// nor in its value.
	Header  string `json:",omitempty"`
	Headers bool   `json:",omitempty"`
}

// FromHeaders reports whether column c is read from the record's
// headers.
func (c Column) FromHeaders() bool { return c.Headers || c.Header != "" }

// Schema is an ordered list of columns.
type Schema struct {
	Columns []Column
}

// Index returns the index of the column named name (case-insensitive), or
// -1.
func (s Schema) Index(name string) int {
	for i, c := range s.Columns {
		if strings.EqualFold(c.Name, name) {
			return i
		}
	}
	return -1
}

// KeyIndexes returns the indexes of the key columns, in column order.
func (s Schema) KeyIndexes() []int {
	var ks []int
	for i, c := range s.Columns {
		if c.Key {
			ks = append(ks, i)
		}
	}
	return ks
}

// Types returns the column types in order.
func (s Schema) Types() []Type {
	ts := make([]Type, len(s.Columns))
	for i, c := range s.Columns {
		ts[i] = c.Type
	}
	return ts
}

// Row is one row of values, in schema order; see Type for the Go type of
// each value.
type Row []any
