package pgcodec

import "github.com/basindb/basin/catalog"

// Format codes of Bind's parameter and result formats.
const (
	FormatText   int16 = 0
	FormatBinary int16 = 1
)

// EpochUnix is 2000-01-01 00:00:00 UTC in Unix seconds: the zero of
// binary timestamps (integer_datetimes on) and, in days, dates.
const EpochUnix = 946684800

// Type OIDs a client may declare for a parameter beyond basin's own
// types (catalog.Type.OID), and what basin takes each as. pg_type.dat is
// the reference.
const (
	oidBool        = 16
	oidName        = 19
	oidInt8        = 20
	oidInt2        = 21
	oidInt4        = 23
	oidText        = 25
	oidFloat4      = 700
	oidFloat8      = 701
	oidUnknown     = 705
	oidBPChar      = 1042
	oidVarchar     = 1043
	oidDate        = 1082
	oidTimestamp   = 1114
	oidTimestampTZ = 1184
	oidNumeric     = 1700
)

// OIDText is text's type OID, what a parameter whose type nothing
// decides is described as.
const OIDText = oidText

// TypeLen returns pg_type.typlen of t, as RowDescription reports it: the
// fixed size in bytes, -1 for variable-length types, -2 for unknown
// (a C string).
func TypeLen(t catalog.Type) int16 {
	switch t {
	case catalog.Boolean:
		return 1
	case catalog.Int:
		return 4
	case catalog.BigInt, catalog.Double, catalog.Timestamp:
		return 8
	case catalog.Varchar:
		return -1
	case catalog.Unknown:
		return -2
	}
	return pgTypeLen(t)
}

// ParamType maps a parameter type OID from Parse to the basin type its
// values become. 0 and unknown (705) leave the type to the server and
// map to catalog.Unknown. ok is false for a type basin cannot decode.
func ParamType(oid uint32) (t catalog.Type, ok bool) {
	switch oid {
	case 0, oidUnknown:
		return catalog.Unknown, true
	case oidBool:
		return catalog.Boolean, true
	case oidInt2, oidInt4:
		return catalog.Int, true
	case oidInt8:
		return catalog.BigInt, true
	case oidFloat4, oidFloat8:
		return catalog.Double, true
	case oidNumeric:
		return catalog.Decimal, true
	case oidText, oidVarchar, oidBPChar, oidName:
		return catalog.Varchar, true
	case oidTimestamp:
		return catalog.Timestamp, true
	}
	return pgParamType(oid)
}

// pgTypeName names an OID for error messages.
func pgTypeName(oid uint32) string {
	switch oid {
	case oidBool:
		return "boolean"
	case oidName:
		return "name"
	case oidInt2:
		return "smallint"
	case oidInt4:
		return "integer"
	case oidInt8:
		return "bigint"
	case oidText:
		return "text"
	case oidFloat4:
		return "real"
	case oidFloat8:
		return "double precision"
	case oidBPChar:
		return "character"
	case oidVarchar:
		return "character varying"
	case oidDate:
		return "date"
	case oidTimestamp:
		return "timestamp without time zone"
	case oidTimestampTZ:
		return "timestamp with time zone"
	case oidNumeric:
		return "numeric"
	}
	return "unknown"
}
