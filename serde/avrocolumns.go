package serde

import (
	"github.com/hamba/avro/v2"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
)

// AvroColumns returns the value columns of a relation whose records are
// written with the Avro record schema s: one per field, named as the
// field, of the type that holds its values (what CREATE STREAM with no
// columns takes from the registry):
//
//	boolean                        BOOLEAN
//	int                            INTEGER
//	long                           BIGINT
//	float, double                  DOUBLE
//	string, enum                   VARCHAR
//	bytes, fixed                   BYTEA
//	decimal (bytes or fixed)       NUMERIC(precision, scale)
//	date                           DATE
//	time-millis, time-micros       TIME
//	timestamp-millis, -micros      TIMESTAMP (and the local- ones)
//	uuid                           UUID
//	array of a type above          that type's array
//	record                         STRUCT of its fields' types (a
//	                               decimal field: an unconstrained NUMERIC)
//	map                            MAP<VARCHAR, its values' type>
//	arrays of arrays, unions of    JSONB: the value as a JSON document
//	  several types, nesting
//	  deeper than catalog's bound
//
// A union of null and one type is that type (every column is nullable).
func AvroColumns(s avro.Schema) ([]catalog.Column, error) {
	rec, ok := derefAvro(s).(*avro.RecordSchema)
	if !ok {
		return nil, pgerr.New(pgerr.FeatureNotSupported, "the registry's Avro schema is a %s, not a record: its fields would be the columns", s.Type()).
			WithHint("List the one value column, with wrap_single_value = false.")
	}
	cols := make([]catalog.Column, 0, len(rec.Fields()))
	for _, f := range rec.Fields() {
		c := catalog.Column{Name: f.Name()}
		c.Type, c.Precision, c.Scale = avroColumnType(f.Type(), 0)
		cols = append(cols, c)
	}
	return cols, nil
}

func derefAvro(s avro.Schema) avro.Schema {
	if r, ok := s.(*avro.RefSchema); ok {
		return r.Schema()
	}
	return s
}

// avroColumnType is the column type of values of Avro schema s; depth
// counts the arrays it is in.
func avroColumnType(s avro.Schema, depth int) (t catalog.Type, precision, scale int) {
	if depth > catalog.MaxNestingDepth {
		return catalog.JSONB, 0, 0 // a recursive record, or one too deep
	}
	s = derefAvro(s)
	if l, ok := s.(avro.LogicalTypeSchema); ok && l.Logical() != nil {
		switch lt := l.Logical(); lt.Type() {
		case avro.Decimal:
			if d, ok := lt.(*avro.DecimalLogicalSchema); ok {
				return catalog.Decimal, d.Precision(), d.Scale()
			}
		case avro.Date:
			return catalog.Date, 0, 0
		case avro.TimeMillis, avro.TimeMicros:
			return catalog.Time, 0, 0
		case avro.TimestampMillis, avro.TimestampMicros, avro.LocalTimestampMillis, avro.LocalTimestampMicros:
			return catalog.Timestamp, 0, 0
		case avro.UUID:
			return catalog.UUID, 0, 0
		}
	}
	switch x := s.(type) {
	case *avro.UnionSchema:
		if x.Nullable() && len(x.Types()) == 2 {
			_, i := x.Indices()
			return avroColumnType(x.Types()[i], depth)
		}
		return catalog.JSONB, 0, 0
	case *avro.ArraySchema:
		e, _, _ := avroColumnType(x.Items(), depth+1)
		if e.IsArray() {
			return catalog.JSONB, 0, 0
		}
		return catalog.ArrayOf(e), 0, 0
	case *avro.RecordSchema:
		fields := make([]catalog.Field, len(x.Fields()))
		for i, f := range x.Fields() {
			ft, _, _ := avroColumnType(f.Type(), depth+1)
			fields[i] = catalog.Field{Name: f.Name(), Type: ft}
		}
		st, err := catalog.StructOf(fields)
		if err != nil {
			return catalog.JSONB, 0, 0
		}
		return st, 0, 0
	case *avro.MapSchema:
		vt, _, _ := avroColumnType(x.Values(), depth+1)
		mt, err := catalog.MapOf(catalog.Varchar, vt)
		if err != nil {
			return catalog.JSONB, 0, 0
		}
		return mt, 0, 0
	case *avro.EnumSchema:
		return catalog.Varchar, 0, 0
	case *avro.FixedSchema:
		return catalog.Bytea, 0, 0
	}
	switch s.Type() {
	case avro.Boolean:
		return catalog.Boolean, 0, 0
	case avro.Int:
		return catalog.Int, 0, 0
	case avro.Long:
		return catalog.BigInt, 0, 0
	case avro.Float, avro.Double:
		return catalog.Double, 0, 0
	case avro.String:
		return catalog.Varchar, 0, 0
	case avro.Bytes:
		return catalog.Bytea, 0, 0
	}
	return catalog.JSONB, 0, 0
}
