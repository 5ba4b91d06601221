package catalog

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
)

// PGType is one row of pg_type.
type PGType struct {
	OID       int64
	Name      string // typname
	Len       int64
	ByVal     bool
	Kind      string // typtype: b base, p pseudo
	Category  string // typcategory
	Preferred bool
	Elem      int64 // element type of an array or vector
	Array     int64 // the array type of this type
	Align     string
	Storage   string
	// SQLName is what format_type prints.
	SQLName string
	// Input names the input function (typinput).
	Input string
}

// pgTypeList is the types pg_type lists: basin's own, the system types
// of the catalog relations, the common types clients look up, and their
// arrays. Oids are Postgres's.
var pgTypeList = func() []PGType {
	base := []PGType{
		{OID: 16, Name: "bool", Len: 1, ByVal: true, Category: "B", Preferred: true, Array: 1000, Align: "c", SQLName: "boolean", Input: "boolin"},
		{OID: 17, Name: "bytea", Len: -1, Category: "U", Array: 1001, Align: "i", Storage: "x", SQLName: "bytea", Input: "byteain"},
		{OID: 18, Name: "char", Len: 1, ByVal: true, Category: "Z", Array: 1002, Align: "c", SQLName: `"char"`, Input: "charin"},
		{OID: 19, Name: "name", Len: 64, Category: "S", Elem: 18, Array: 1003, Align: "c", SQLName: "name", Input: "namein"},
		{OID: 20, Name: "int8", Len: 8, ByVal: true, Category: "N", Array: 1016, Align: "d", SQLName: "bigint", Input: "int8in"},
		{OID: 21, Name: "int2", Len: 2, ByVal: true, Category: "N", Array: 1005, Align: "s", SQLName: "smallint", Input: "int2in"},
		{OID: 22, Name: "int2vector", Len: -1, Category: "A", Elem: 21, Array: 1006, Align: "i", SQLName: "int2vector", Input: "int2vectorin"},
		{OID: 23, Name: "int4", Len: 4, ByVal: true, Category: "N", Array: 1007, Align: "i", SQLName: "integer", Input: "int4in"},
		{OID: 24, Name: "regproc", Len: 4, ByVal: true, Category: "N", Array: 1008, Align: "i", SQLName: "regproc", Input: "regprocin"},
		{OID: 25, Name: "text", Len: -1, Category: "S", Preferred: true, Array: 1009, Align: "i", Storage: "x", SQLName: "text", Input: "textin"},
		{OID: 26, Name: "oid", Len: 4, ByVal: true, Category: "N", Preferred: true, Array: 1028, Align: "i", SQLName: "oid", Input: "oidin"},
		{OID: 28, Name: "xid", Len: 4, ByVal: true, Category: "U", Array: 1011, Align: "i", SQLName: "xid", Input: "xidin"},
		{OID: 30, Name: "oidvector", Len: -1, Category: "A", Elem: 26, Array: 1013, Align: "i", SQLName: "oidvector", Input: "oidvectorin"},
		{OID: 114, Name: "json", Len: -1, Category: "U", Array: 199, Align: "i", Storage: "x", SQLName: "json", Input: "json_in"},
		{OID: 194, Name: "pg_node_tree", Len: -1, Category: "Z", Align: "i", Storage: "x", SQLName: "pg_node_tree", Input: "pg_node_tree_in"},
		{OID: 700, Name: "float4", Len: 4, ByVal: true, Category: "N", Array: 1021, Align: "i", SQLName: "real", Input: "float4in"},
		{OID: 701, Name: "float8", Len: 8, ByVal: true, Category: "N", Preferred: true, Array: 1022, Align: "d", SQLName: "double precision", Input: "float8in"},
		{OID: 705, Name: "unknown", Len: -2, Kind: "p", Category: "X", Align: "c", SQLName: "unknown", Input: "unknownin"},
		{OID: 1033, Name: "aclitem", Len: 12, Category: "U", Array: 1034, Align: "i", SQLName: "aclitem", Input: "aclitemin"},
		{OID: 1042, Name: "bpchar", Len: -1, Category: "S", Array: 1014, Align: "i", Storage: "x", SQLName: "character", Input: "bpcharin"},
		{OID: 1043, Name: "varchar", Len: -1, Category: "S", Array: 1015, Align: "i", Storage: "x", SQLName: "character varying", Input: "varcharin"},
		{OID: 1082, Name: "date", Len: 4, ByVal: true, Category: "D", Array: 1182, Align: "i", SQLName: "date", Input: "date_in"},
		{OID: 1083, Name: "time", Len: 8, ByVal: true, Category: "D", Array: 1183, Align: "d", SQLName: "time without time zone", Input: "time_in"},
		{OID: 1114, Name: "timestamp", Len: 8, ByVal: true, Category: "D", Array: 1115, Align: "d", SQLName: "timestamp without time zone", Input: "timestamp_in"},
		{OID: 1184, Name: "timestamptz", Len: 8, ByVal: true, Category: "D", Preferred: true, Array: 1185, Align: "d", SQLName: "timestamp with time zone", Input: "timestamptz_in"},
		{OID: 1186, Name: "interval", Len: 16, Category: "T", Preferred: true, Array: 1187, Align: "d", SQLName: "interval", Input: "interval_in"},
		{OID: 1700, Name: "numeric", Len: -1, Category: "N", Array: 1231, Align: "i", Storage: "m", SQLName: "numeric", Input: "numeric_in"},
		{OID: 2205, Name: "regclass", Len: 4, ByVal: true, Category: "N", Array: 2210, Align: "i", SQLName: "regclass", Input: "regclassin"},
		{OID: 2206, Name: "regtype", Len: 4, ByVal: true, Category: "N", Array: 2211, Align: "i", SQLName: "regtype", Input: "regtypein"},
		{OID: 2249, Name: "record", Len: -1, Kind: "p", Category: "P", Array: 2287, Align: "d", Storage: "x", SQLName: "record", Input: "record_in"},
		{OID: 2275, Name: "cstring", Len: -2, Kind: "p", Category: "P", Array: 1263, Align: "c", SQLName: "cstring", Input: "cstring_in"},
		{OID: 2276, Name: "any", Len: 4, ByVal: true, Kind: "p", Category: "P", Align: "i", SQLName: `"any"`, Input: "any_in"},
		{OID: 2277, Name: "anyarray", Len: -1, Kind: "p", Category: "P", Align: "d", Storage: "x", SQLName: "anyarray", Input: "anyarray_in"},
		{OID: 2278, Name: "void", Len: 4, ByVal: true, Kind: "p", Category: "P", Align: "i", SQLName: "void", Input: "void_in"},
		{OID: 2283, Name: "anyelement", Len: 4, ByVal: true, Kind: "p", Category: "P", Align: "i", SQLName: "anyelement", Input: "anyelement_in"},
		{OID: 2950, Name: "uuid", Len: 16, Category: "U", Array: 2951, Align: "c", SQLName: "uuid", Input: "uuid_in"},
		{OID: 3802, Name: "jsonb", Len: -1, Category: "U", Array: 3807, Align: "i", Storage: "x", SQLName: "jsonb", Input: "jsonb_in"},
		{OID: 4089, Name: "regnamespace", Len: 4, ByVal: true, Category: "N", Array: 4090, Align: "i", SQLName: "regnamespace", Input: "regnamespacein"},
	}
	out := make([]PGType, 0, 2*len(base))
	for _, t := range base {
		if t.Kind == "" {
			t.Kind = "b"
		}
		if t.Storage == "" {
			t.Storage = "p"
			if t.Len == -1 {
				t.Storage = "x"
			}
		}
		out = append(out, t)
	}
	for _, t := range base {
		if t.Array == 0 {
			continue
		}
		align := "i"
		if t.Align == "d" {
			align = "d"
		}
		sqlName := t.SQLName + "[]"
		if t.Name == "int2vector" || t.Name == "oidvector" {
			sqlName = t.Name + "[]"
		}
		out = append(out, PGType{OID: t.Array, Name: "_" + t.Name, Len: -1, Kind: "b", Category: "A", Elem: t.OID,
			Align: align, Storage: "x", SQLName: sqlName, Input: "array_in"})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].OID < out[j].OID })
	return out
}()

// PGTypes returns the rows of pg_type.
func PGTypes() []PGType { return pgTypeList }

// TypeByOID finds a type.
func TypeByOID(oid int64) (PGType, bool) {
	i := sort.Search(len(pgTypeList), func(i int) bool { return pgTypeList[i].OID >= oid })
	if i < len(pgTypeList) && pgTypeList[i].OID == oid {
		return pgTypeList[i], true
	}
	return PGType{}, false
}

// FormatType is format_type(oid, typmod): the SQL name of a type, with
// a varchar's or numeric's modifier.
func FormatType(oid int64, typmod int64) string {
	t, ok := TypeByOID(oid)
	if !ok {
		return "???"
	}
	if typmod < 0 {
		return t.SQLName
	}
	switch t.Name {
	case "varchar", "bpchar":
		if typmod >= 4 {
			return fmt.Sprintf("%s(%d)", t.SQLName, typmod-4)
		}
	case "numeric":
		if typmod >= 4 {
			m := typmod - 4
			return fmt.Sprintf("numeric(%d,%d)", m>>16&0xffff, m&0xffff)
		}
	}
	return t.SQLName
}

// TypeOIDByName resolves a type name as regtype input does: SQL names
// ("integer", "character varying", "text[]"), internal names ("int4",
// "_text"), optionally qualified by pg_catalog.
func TypeOIDByName(name string) (int64, bool) {
	n := strings.ToLower(strings.TrimSpace(name))
	n = strings.TrimPrefix(n, "pg_catalog.")
	n = strings.Trim(n, `"`)
	array := false
	if strings.HasSuffix(n, "[]") {
		array, n = true, strings.TrimSpace(strings.TrimSuffix(n, "[]"))
	}
	if i := strings.IndexByte(n, '('); i >= 0 {
		n = strings.TrimSpace(n[:i])
	}
	aliases := map[string]string{
		"boolean": "bool", "integer": "int4", "int": "int4", "smallint": "int2", "bigint": "int8",
		"real": "float4", "double precision": "float8", "character varying": "varchar",
		"character": "bpchar", "char": "bpchar", "timestamp without time zone": "timestamp",
		"timestamp with time zone": "timestamptz", "time without time zone": "time", "decimal": "numeric",
		`"char"`: "char",
	}
	if a, ok := aliases[n]; ok {
		n = a
	}
	for _, t := range pgTypeList {
		if t.Name == n {
			if array {
				return t.Array, t.Array != 0
			}
			return t.OID, true
		}
	}
	return 0, false
}

// FunctionInfo describes a SQL function for pg_proc.
type FunctionInfo struct {
	Name string
	// Kind is prokind: f (function), a (aggregate), w (window).
	Kind string
	// Args are the argument type oids; RetType the result type oid.
	Args    []int64
	RetType int64
	RetSet  bool
	// Variadic functions take any number of arguments of Args' last
	// type.
	Variadic bool
}

// ProcInfo is one row of pg_proc.
type ProcInfo struct {
	FunctionInfo
	OID int64
}

var funcRegistry struct {
	sync.Mutex
	fns     []FunctionInfo
	sources []func() []FunctionInfo
	procs   []ProcInfo // built on first use
}

// RegisterFunctions adds SQL functions to pg_proc. The planner registers
// the functions it can bind at init, before any snapshot is read.
func RegisterFunctions(fns ...FunctionInfo) {
	funcRegistry.Lock()
	defer funcRegistry.Unlock()
	funcRegistry.fns = append(funcRegistry.fns, fns...)
	funcRegistry.procs = nil
}

// RegisterFunctionSource adds the functions src lists to pg_proc. src
// is called once, when pg_proc is first read: after every package's
// init, so it sees every function registered from any of them.
func RegisterFunctionSource(src func() []FunctionInfo) {
	funcRegistry.Lock()
	defer funcRegistry.Unlock()
	funcRegistry.sources = append(funcRegistry.sources, src)
	funcRegistry.procs = nil
}

// arrayProcs are the array I/O functions, with Postgres's oids.
var arrayProcs = []ProcInfo{
	{OID: 750, FunctionInfo: FunctionInfo{Name: "array_in", Kind: "f", Args: []int64{2275, 26, 23}, RetType: 2277}},
	{OID: 751, FunctionInfo: FunctionInfo{Name: "array_out", Kind: "f", Args: []int64{2277}, RetType: 2275}},
}

// Procs returns the rows of pg_proc: the types' input functions and the
// registered SQL functions, with oids stable across nodes (assigned in
// name order).
func Procs() []ProcInfo {
	funcRegistry.Lock()
	defer funcRegistry.Unlock()
	if funcRegistry.procs != nil {
		return funcRegistry.procs
	}
	out := append([]ProcInfo{}, arrayProcs...)
	seen := map[string]bool{"array_in": true, "array_out": true}
	next := int64(8000)
	for _, t := range pgTypeList {
		if seen[t.Input] {
			continue
		}
		seen[t.Input] = true
		out = append(out, ProcInfo{OID: next, FunctionInfo: FunctionInfo{Name: t.Input, Kind: "f", Args: []int64{2275}, RetType: t.OID}})
		next++
	}
	fns := append([]FunctionInfo{}, funcRegistry.fns...)
	for _, src := range funcRegistry.sources {
		fns = append(fns, src()...)
	}
	// A total order, so that every node gives each function one oid.
	sort.SliceStable(fns, func(i, j int) bool {
		a, b := fns[i], fns[j]
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		if len(a.Args) != len(b.Args) {
			return len(a.Args) < len(b.Args)
		}
		if c := slices.Compare(a.Args, b.Args); c != 0 {
			return c < 0
		}
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		return a.RetType < b.RetType
	})
	next = 9000
	for _, f := range fns {
		out = append(out, ProcInfo{OID: next, FunctionInfo: f})
		next++
	}
	funcRegistry.procs = out
	return out
}

// ProcName returns a function's name by oid, as regproc output gives it.
func ProcName(oid int64) (string, bool) {
	for _, p := range Procs() {
		if p.OID == oid {
			return p.Name, true
		}
	}
	return "", false
}

// ProcOIDByName resolves a function name as regproc input does.
func ProcOIDByName(name string) (int64, bool) {
	n := strings.ToLower(strings.TrimSpace(name))
	n = strings.TrimPrefix(n, "pg_catalog.")
	for _, p := range Procs() {
		if p.Name == n {
			return p.OID, true
		}
	}
	return 0, false
}

// procByInput finds the oid of a type's input function.
func procByInput(name string) int64 {
	oid, _ := ProcOIDByName(name)
	return oid
}
