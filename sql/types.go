package sql

import (
	"strconv"
	"strings"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/numeric"
	"github.com/basindb/basin/internal/pgerr"
)

// typeRef is a type name read from the token stream.
type typeRef struct {
	typ catalog.Type
	// precision and scale are NUMERIC(p,s)'s modifiers (precision 0:
	// none); other types' modifiers are read and ignored.
	precision, scale int
	// end is the index of the first token after the name and its
	// modifiers.
	end int
}

// unsupportedTypes are type names Postgres (or ksqlDB) knows and basin
// does not; naming one is a 0A000, not a 42704.
var unsupportedTypes = map[string]bool{
	"time with time zone": true, "timetz": true, "money": true,
	"inet": true, "cidr": true, "macaddr": true, "bit": true, "bit varying": true, "varbit": true,
	"serial": true, "serial2": true, "serial4": true, "serial8": true, "bigserial": true,
	"smallserial": true, "xml": true, "point": true, "line": true, "box": true, "polygon": true,
	"circle": true, "path": true, "lseg": true, "tsvector": true, "tsquery": true, "record": true,
	"jsonpath": true, "pg_lsn": true,
}

// parseType reads a type name at toks[i]: ksqlDB, Postgres or MySQL
// spellings, multi-word names (DOUBLE PRECISION, CHARACTER VARYING,
// TIMESTAMP WITHOUT TIME ZONE), an optional pg_catalog. prefix and
// ignored modifiers (VARCHAR(20), NUMERIC(10,2)).
//
// When the words are not a type basin supports it returns an error that
// callers raise only in a position where a type is required: a known
// but unsupported type is 0A000, an unknown name 42704 as in Postgres,
// and a non-word a syntax error. ref.end is meaningful with the 42704
// error too (one past the unknown word), which lets the typed-literal
// check (foo 'x') tell "not a type" from "not a typed literal".
func (sp *stmtParser) parseType(i int) (typeRef, *pgerr.Error) {
	toks := sp.toks
	j := i
	schema := ""
	if (toks[j].isWord("pg_catalog") || toks[j].is(tokQuotedIdent, "pg_catalog") ||
		toks[j].isWord("information_schema")) && toks[j+1].isOp(".") {
		schema = toks[j].val
		j += 2
	}
	first := toks[j]
	if first.kind != tokIdent && first.kind != tokQuotedIdent {
		return typeRef{end: j}, sp.syntaxErr(first)
	}
	if nestedTypeWords[first.val] && first.kind == tokIdent && schema == "" {
		return sp.parseNestedType(j)
	}
	name := first.val
	j++
	if first.kind == tokIdent {
		switch name {
		case "double":
			if toks[j].isWord("precision") {
				name += " precision"
				j++
			}
		case "character", "char", "national":
			if name == "national" && toks[j].isWord("character") {
				name = "character"
				j++
			}
			if toks[j].isWord("varying") {
				name = "character varying"
				j++
			}
		case "bit":
			if toks[j].isWord("varying") {
				name += " varying"
				j++
			}
		case "timestamp", "time":
			// The precision comes before the zone: timestamp(3) with time zone.
			var err *pgerr.Error
			if j, _, err = sp.typeModifiers(j); err != nil {
				return typeRef{end: j}, err
			}
			if (toks[j].isWord("with") || toks[j].isWord("without")) && toks[j+1].isWord("time") && toks[j+2].isWord("zone") {
				name += " " + toks[j].val + " time zone"
				j += 3
			}
		}
	}
	j, mods, err := sp.typeModifiers(j)
	if err != nil {
		return typeRef{end: j}, err
	}
	array := false
	for toks[j].isOp("[") {
		// text[] and text[3] are the same type in Postgres.
		k := j + 1
		if toks[k].kind == tokNumber {
			k++
		}
		if !toks[k].isOp("]") {
			return typeRef{end: j}, sp.syntaxErr(toks[k])
		}
		if array {
			return typeRef{end: j}, unsupported(sp.charPos(toks[j].pos), "multidimensional array types are not supported")
		}
		array, j = true, k+1
	}
	wrap := func(t catalog.Type) (typeRef, *pgerr.Error) {
		ref := typeRef{typ: t, end: j}
		if t == catalog.Decimal && len(mods) > 0 {
			if ref, err = sp.numericModifiers(ref, mods, first); err != nil {
				return typeRef{end: j}, err
			}
		}
		if array {
			ref.typ = catalog.ArrayOf(t)
		}
		return ref, nil
	}
	if schema == "information_schema" {
		if t, ok := informationSchemaTypes[name]; ok {
			return wrap(t)
		}
	}
	if first.kind == tokIdent || name == strings.ToLower(name) {
		if t, ok := catalog.ParseType(name); ok {
			return wrap(t)
		}
		if t, ok := systemTypes[name]; ok {
			return wrap(t)
		}
	}
	pos := sp.charPos(first.pos)
	if unsupportedTypes[name] {
		return typeRef{end: j}, unsupported(pos, "type %s is not supported", name).
			WithHint("%s", SupportedTypesHint)
	}
	return typeRef{end: j}, &pgerr.Error{Code: pgerr.UndefinedObject,
		Message: "type \"" + name + "\" does not exist", Position: pos}
}

// SupportedTypesHint is the hint of an error naming a type basin does not
// support.
const SupportedTypesHint = "basin supports BOOLEAN, INTEGER, BIGINT, DOUBLE, NUMERIC, VARCHAR, TIMESTAMP, TIMESTAMPTZ, DATE, TIME, INTERVAL, UUID, JSONB, JSON and BYTEA, arrays of them, STRUCT<name type, ...> and MAP<VARCHAR, type>."

// systemTypes are the Postgres system types basin knows in casts (x::oid,
// 'orders'::regclass, x::text[]), but which no stream, table or view
// may store.
var systemTypes = map[string]catalog.Type{
	"oid": catalog.Oid, "regclass": catalog.RegClass, "regtype": catalog.RegType,
	"regproc": catalog.RegProc, "regprocedure": catalog.RegProc, "regnamespace": catalog.RegNamespace,
	"name": catalog.Varchar, "int2vector": catalog.Int2Vector, "oidvector": catalog.OidVector,
	"xid": catalog.Oid, "pg_node_tree": catalog.Varchar, "record": catalog.Record, "cstring": catalog.Varchar,
}

// informationSchemaTypes are information_schema's domains.
var informationSchemaTypes = map[string]catalog.Type{
	"sql_identifier": catalog.Varchar, "character_data": catalog.Varchar, "yes_or_no": catalog.Varchar,
	"cardinal_number": catalog.Int, "time_stamp": catalog.Timestamp,
}

// typeModifiers reads (n) or (n, m) after a type name, returning the
// index after them and the numbers. A minus sign is allowed for
// NUMERIC's negative scales.
func (sp *stmtParser) typeModifiers(j int) (int, []int, *pgerr.Error) {
	toks := sp.toks
	if !toks[j].isOp("(") {
		return j, nil, nil
	}
	j++
	var mods []int
	for {
		neg := false
		if toks[j].isOp("-") {
			neg = true
			j++
		}
		if toks[j].kind != tokNumber || !toks[j].isInt {
			return j, nil, sp.syntaxErr(toks[j])
		}
		n, err := strconv.Atoi(toks[j].val)
		if err != nil || n > 1<<20 {
			n = 1 << 20 // out of every type's range; reported by its check
		}
		if neg {
			n = -n
		}
		mods = append(mods, n)
		j++
		if toks[j].isOp(")") {
			return j + 1, mods, nil
		}
		if !toks[j].isOp(",") {
			return j, nil, sp.syntaxErr(toks[j])
		}
		j++
	}
}

// numericModifiers records NUMERIC(p) or NUMERIC(p, s) in ref, checked
// as Postgres checks them.
func (sp *stmtParser) numericModifiers(ref typeRef, mods []int, name token) (typeRef, *pgerr.Error) {
	pos := sp.charPos(name.pos)
	if len(mods) > 2 {
		return ref, &pgerr.Error{Code: pgerr.InvalidParameterValue, Message: "invalid NUMERIC type modifier", Position: pos}
	}
	ref.precision = mods[0]
	if len(mods) == 2 {
		ref.scale = mods[1]
	}
	if err := numeric.CheckTypmod(ref.precision, ref.scale); err != nil {
		e, _ := pgerr.As(err)
		return ref, e.WithPosition(pos)
	}
	return ref, nil
}

// tidbTypeName is how a basin type is spelled for TiDB in a column
// definition. Only the spelling's validity matters: the converter takes
// the type from the side table, not from TiDB.
func tidbTypeName(t catalog.Type) string {
	switch t {
	case catalog.Boolean:
		return "BOOLEAN"
	case catalog.Int:
		return "INT"
	case catalog.BigInt:
		return "BIGINT"
	case catalog.Double:
		return "DOUBLE"
	case catalog.Timestamp:
		return "DATETIME"
	}
	return "TEXT"
}
