package planner

import (
	"sort"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
)

// The functions that read the catalog or the system types (format_type,
// pg_get_viewdef, to_regclass, array_length, ...). They are declared
// here with their argument types and join the one function registry,
// scalarFuncs, from init, as the other families do; eval implements
// them (eval/catalogfuncs.go). A view cannot call them: its tasks have
// no catalog snapshot.

// qfuncSig types a catalog function.
type qfuncSig struct {
	min, max int // max -1: variadic
	// args gives the type argument i is converted to (the last entry
	// for the rest); Unknown takes any type.
	args     []catalog.Type
	result   catalog.Type
	resultOf func(args []Scalar) catalog.Type
	// fields names a record result's fields.
	fields []catalog.Column
}

func (s qfuncSig) argType(i int) catalog.Type {
	if len(s.args) == 0 {
		return catalog.Unknown
	}
	if i >= len(s.args) {
		i = len(s.args) - 1
	}
	return s.args[i]
}

var (
	tOid   = catalog.Oid
	tText  = catalog.Varchar
	tInt   = catalog.Int
	tBig   = catalog.BigInt
	tBool  = catalog.Boolean
	tAny   = catalog.Unknown
	tTexts = catalog.ArrayOf(catalog.Varchar)
)

func sig(min, max int, result catalog.Type, args ...catalog.Type) qfuncSig {
	return qfuncSig{min: min, max: max, args: args, result: result}
}

var catalogFuncs = map[string]qfuncSig{
	"format_type":                        sig(2, 2, tText, tOid, tInt),
	"pg_table_is_visible":                sig(1, 1, tBool, tOid),
	"pg_type_is_visible":                 sig(1, 1, tBool, tOid),
	"pg_function_is_visible":             sig(1, 1, tBool, tOid),
	"pg_collation_is_visible":            sig(1, 1, tBool, tOid),
	"pg_opfamily_is_visible":             sig(1, 1, tBool, tOid),
	"pg_operator_is_visible":             sig(1, 1, tBool, tOid),
	"pg_conversion_is_visible":           sig(1, 1, tBool, tOid),
	"pg_statistics_obj_is_visible":       sig(1, 1, tBool, tOid),
	"pg_ts_config_is_visible":            sig(1, 1, tBool, tOid),
	"pg_ts_dict_is_visible":              sig(1, 1, tBool, tOid),
	"pg_ts_parser_is_visible":            sig(1, 1, tBool, tOid),
	"pg_ts_template_is_visible":          sig(1, 1, tBool, tOid),
	"pg_opclass_is_visible":              sig(1, 1, tBool, tOid),
	"pg_get_userbyid":                    sig(1, 1, tText, tOid),
	"obj_description":                    sig(1, 2, tText, tOid, tText),
	"col_description":                    sig(2, 2, tText, tOid, tInt),
	"shobj_description":                  sig(2, 2, tText, tOid, tText),
	"pg_get_expr":                        sig(2, 3, tText, tText, tOid, tBool),
	"pg_get_indexdef":                    sig(1, 3, tText, tOid, tInt, tBool),
	"pg_get_constraintdef":               sig(1, 2, tText, tOid, tBool),
	"pg_get_viewdef":                     sig(1, 2, tText, tAny, tAny),
	"pg_get_function_result":             sig(1, 1, tText, tOid),
	"pg_get_function_arguments":          sig(1, 1, tText, tOid),
	"pg_get_function_identity_arguments": sig(1, 1, tText, tOid),
	"pg_get_serial_sequence":             sig(2, 2, tText, tText, tText),
	"pg_get_statisticsobjdef_columns":    sig(1, 1, tText, tOid),
	"pg_get_triggerdef":                  sig(1, 2, tText, tOid, tBool),
	"pg_get_ruledef":                     sig(1, 2, tText, tOid, tBool),
	"pg_get_partkeydef":                  sig(1, 1, tText, tOid),
	"pg_get_partition_constraintdef":     sig(1, 1, tText, tOid),
	"pg_relation_is_publishable":         sig(1, 1, tBool, tAny),
	"quote_ident":                        sig(1, 1, tText, tText),
	"quote_literal":                      sig(1, 1, tText, tText),
	"quote_nullable":                     sig(1, 1, tText, tText),
	"array_to_string":                    sig(2, 3, tText, tAny, tText, tText),
	"array_length":                       sig(2, 2, tInt, tAny, tInt),
	"array_upper":                        sig(2, 2, tInt, tAny, tInt),
	"array_lower":                        sig(2, 2, tInt, tAny, tInt),
	"cardinality":                        sig(1, 1, tInt, tAny),
	"string_to_array":                    sig(2, 3, tTexts, tText, tText, tText),
	"current_schemas":                    sig(1, 1, tTexts, tBool),
	"pg_encoding_to_char":                sig(1, 1, tText, tInt),
	"pg_char_to_encoding":                sig(1, 1, tInt, tText),
	"pg_relation_size":                   sig(1, 2, tBig, tAny, tText),
	"pg_total_relation_size":             sig(1, 1, tBig, tAny),
	"pg_table_size":                      sig(1, 1, tBig, tAny),
	"pg_indexes_size":                    sig(1, 1, tBig, tAny),
	"pg_database_size":                   sig(1, 1, tBig, tAny),
	"pg_size_pretty":                     sig(1, 1, tText, tBig),
	"pg_is_in_recovery":                  sig(0, 0, tBool),
	"pg_postmaster_start_time":           sig(0, 0, catalog.Timestamp),
	"pg_conf_load_time":                  sig(0, 0, catalog.Timestamp),
	"pg_tablespace_location":             sig(1, 1, tText, tOid),
	"to_regclass":                        sig(1, 1, catalog.RegClass, tText),
	"to_regtype":                         sig(1, 1, catalog.RegType, tText),
	"to_regproc":                         sig(1, 1, catalog.RegProc, tText),
	"to_regnamespace":                    sig(1, 1, catalog.RegNamespace, tText),
	"pg_typeof":                          sig(1, 1, catalog.RegType, tAny),
	"inet_server_addr":                   sig(0, 0, tText),
	"inet_server_port":                   sig(0, 0, tInt),
	"inet_client_addr":                   sig(0, 0, tText),
	"inet_client_port":                   sig(0, 0, tInt),
	"txid_current":                       sig(0, 0, tBig),
	"pg_current_xact_id":                 sig(0, 0, tBig),
	"pg_get_functiondef":                 sig(1, 1, tText, tOid),
	"pg_get_function_sqlbody":            sig(1, 1, tText, tOid),
	"getdatabaseencoding":                sig(0, 0, tText),
	"pg_stat_get_numscans":               sig(1, 1, tBig, tOid),
	"format":                             sig(1, -1, tText, tText, tAny),
	"parse_ident":                        sig(1, 2, tTexts, tText, tBool),
	"user":                               sig(0, 0, tText),
	"current_role":                       sig(0, 0, tText),
}

// queryAggregates are the aggregates catalog queries have besides
// count, sum, avg, min and max. ksqlDB's latest_by_offset and
// earliest_by_offset are among them over a stream only
// (checkOffsetAggs).
var queryAggregates = map[string]bool{
	"string_agg": true, "array_agg": true, "bool_and": true, "bool_or": true, "every": true,
	"latest_by_offset": true, "earliest_by_offset": true,
}

// srfSig binds a set-returning function: it converts the arguments and
// returns the type of the values (Record with fields for several
// columns).
type srfSig struct {
	bind func(args []Scalar, pos int) ([]Scalar, catalog.Type, []catalog.Column, error)
}

func arrayArg(name string, args []Scalar, pos int, n int) error {
	if len(args) != n {
		return pgerr.New(pgerr.UndefinedFunction, "function %s(%s) does not exist", name, argTypes(args)).WithPosition(pos)
	}
	if !args[0].Type().Subscriptable() {
		return pgerr.New(pgerr.UndefinedFunction, "function %s(%s) does not exist", name, argTypes(args)).WithPosition(pos).
			WithHint("%s takes an array.", name)
	}
	return nil
}

var setReturningFuncs = map[string]srfSig{
	"generate_series": {func(args []Scalar, pos int) ([]Scalar, catalog.Type, []catalog.Column, error) {
		if len(args) < 2 || len(args) > 3 {
			return nil, 0, nil, pgerr.New(pgerr.UndefinedFunction, "function generate_series(%s) does not exist", argTypes(args)).WithPosition(pos)
		}
		if isTimeSeries(args) {
			return bindTimeSeries(args, pos)
		}
		b := &binder{}
		for i := range args {
			var err error
			if args[i], err = b.coerce(args[i], catalog.BigInt, pos, "generate_series"); err != nil {
				return nil, 0, nil, err
			}
		}
		return args, catalog.BigInt, nil, nil
	}},
	"unnest": {func(args []Scalar, pos int) ([]Scalar, catalog.Type, []catalog.Column, error) {
		if err := arrayArg("unnest", args, pos, 1); err != nil {
			return nil, 0, nil, err
		}
		return args, args[0].Type().Elem(), nil, nil
	}},
	// ksqlDB's EXPLODE is unnest in a query (explode.go).
	ExplodeFunc: {func(args []Scalar, pos int) ([]Scalar, catalog.Type, []catalog.Column, error) {
		if err := arrayArg("explode", args, pos, 1); err != nil {
			return nil, 0, nil, err
		}
		return args, args[0].Type().Elem(), nil, nil
	}},
	"generate_subscripts": {func(args []Scalar, pos int) ([]Scalar, catalog.Type, []catalog.Column, error) {
		if len(args) == 3 {
			args = args[:2] // reverse order is not supported; the flag is ignored
		}
		if err := arrayArg("generate_subscripts", args, pos, 2); err != nil {
			return nil, 0, nil, err
		}
		b := &binder{}
		var err error
		if args[1], err = b.coerce(args[1], catalog.BigInt, pos, "generate_subscripts"); err != nil {
			return nil, 0, nil, err
		}
		return args, catalog.Int, nil, nil
	}},
	"_pg_expandarray": {func(args []Scalar, pos int) ([]Scalar, catalog.Type, []catalog.Column, error) {
		if err := arrayArg("_pg_expandarray", args, pos, 1); err != nil {
			return nil, 0, nil, err
		}
		return args, catalog.Record, []catalog.Column{{Name: "x", Type: args[0].Type().Elem()}, {Name: "n", Type: catalog.Int}}, nil
	}},
	"pg_listening_channels": {func(args []Scalar, pos int) ([]Scalar, catalog.Type, []catalog.Column, error) {
		if len(args) != 0 {
			return nil, 0, nil, pgerr.New(pgerr.UndefinedFunction, "function pg_listening_channels(%s) does not exist", argTypes(args)).WithPosition(pos)
		}
		return args, catalog.Varchar, nil, nil
	}},
	"pg_get_keywords": {func(args []Scalar, pos int) ([]Scalar, catalog.Type, []catalog.Column, error) {
		if len(args) != 0 {
			return nil, 0, nil, pgerr.New(pgerr.UndefinedFunction, "function pg_get_keywords(%s) does not exist", argTypes(args)).WithPosition(pos)
		}
		return args, catalog.Record, []catalog.Column{{Name: "word", Type: catalog.Varchar}, {Name: "catcode", Type: catalog.Varchar},
			{Name: "barelabel", Type: catalog.Boolean}, {Name: "catdesc", Type: catalog.Varchar}, {Name: "baredesc", Type: catalog.Varchar}}, nil
	}},
	"pg_options_to_table": {func(args []Scalar, pos int) ([]Scalar, catalog.Type, []catalog.Column, error) {
		if err := arrayArg("pg_options_to_table", args, pos, 1); err != nil {
			return nil, 0, nil, err
		}
		return args, catalog.Record, []catalog.Column{{Name: "option_name", Type: catalog.Varchar}, {Name: "option_value", Type: catalog.Varchar}}, nil
	}},
}

// registerCatalogFunc adds a catalog function to the registry; a name
// the registry has already keeps its entry.
func registerCatalogFunc(name string, s qfuncSig) {
	catalogFuncs[name] = s
	if _, ok := scalarFuncs[name]; !ok {
		scalarFuncs[name] = funcSig{minArgs: s.min, maxArgs: s.max, sys: &s}
	}
}

func init() {
	for name, s := range catalogFuncs {
		registerCatalogFunc(name, s)
	}
	catalog.RegisterFunctionSource(procList)
}

// procList lists what basin can call, for pg_proc: each function of the
// registry (an overloaded one once per signature), the aggregates, the
// window and the set-returning functions.
func procList() []catalog.FunctionInfo {
	var fns []catalog.FunctionInfo
	oids := func(ts []catalog.Type, n int) []int64 {
		out := make([]int64, n)
		for i := range out {
			t := catalog.Unknown
			if len(ts) > 0 {
				t = ts[min(i, len(ts)-1)]
			}
			if t == catalog.Unknown {
				out[i] = 2276 // "any"
			} else {
				out[i] = int64(t.OID())
			}
		}
		return out
	}
	for name, s := range catalogFuncs {
		fns = append(fns, catalog.FunctionInfo{Name: name, Kind: "f", Args: oids(s.args, s.min), RetType: int64(s.result.OID()), Variadic: s.max < 0})
	}
	for name, ovs := range overloads {
		for _, o := range ovs {
			n := len(o.args)
			if o.variadic {
				n--
			}
			ret := o.result
			if o.resultArg >= 0 {
				ret = o.args[o.resultArg]
			}
			fns = append(fns, catalog.FunctionInfo{Name: name, Kind: "f", Args: oids(o.args, n), RetType: int64(ret.OID()), Variadic: o.variadic})
		}
	}
	for name, s := range scalarFuncs {
		if s.result == nil || s.sys != nil {
			continue
		}
		args := make([]Scalar, s.minArgs)
		for i := range args {
			args[i] = &Const{T: catalog.Varchar, V: ""}
			if s.argType != catalog.Unknown {
				args[i] = &Const{T: s.argType}
			}
		}
		ret := catalog.Varchar
		func() {
			defer func() { _ = recover() }()
			if t, err := s.result(args); err == nil && t != catalog.Unknown {
				ret = t
			}
		}()
		fns = append(fns, catalog.FunctionInfo{Name: name, Kind: "f", Args: oids([]catalog.Type{s.argType}, s.minArgs),
			RetType: int64(ret.OID()), Variadic: s.maxArgs < 0})
	}
	agg := func(name string, ret int64, args ...int64) {
		fns = append(fns, catalog.FunctionInfo{Name: name, Kind: "a", Args: args, RetType: ret})
	}
	agg("count", 20, 2276)
	agg("count", 20)
	for _, t := range []int64{20, 23, 701, 1700} {
		agg("sum", t, t)
		ret := int64(1700) // avg of integers and numerics is numeric
		if t == 701 {
			ret = 701
		}
		agg("avg", ret, t)
	}
	for _, t := range []int64{20, 23, 701, 1700, 25, 1114} {
		agg("min", t, t)
		agg("max", t, t)
	}
	agg("string_agg", 25, 25, 25)
	agg("array_agg", 2277, 2283)
	agg("bool_and", 16, 16)
	agg("bool_or", 16, 16)
	agg("every", 16, 16)
	// The aggregate library (libaggs.go): anyelement in, anyarray out.
	for _, name := range []string{"corr", "covar_pop", "covar_samp", "correlation"} {
		agg(name, 701, 701, 701)
	}
	agg("collect_list", 2277, 2283)
	agg("collect_set", 2277, 2283)
	agg("topk", 2277, 2283, 23)
	agg("topkdistinct", 2277, 2283, 23)
	agg("histogram", 3802, 25)
	agg("count_distinct", 20, 2276)
	for _, name := range []string{"latest_by_offset", "earliest_by_offset"} {
		agg(name, 2283, 2283)
		agg(name, 2283, 2283, 16)
		agg(name, 2277, 2283, 23)
		agg(name, 2277, 2283, 23, 16)
	}
	for _, name := range []string{"row_number", "rank", "dense_rank"} {
		fns = append(fns, catalog.FunctionInfo{Name: name, Kind: "w", RetType: 20})
	}
	for name := range setReturningFuncs {
		fns = append(fns, catalog.FunctionInfo{Name: name, Kind: "f", Args: []int64{2277}, RetType: 2283, RetSet: true})
	}
	sort.Slice(fns, func(i, j int) bool { return fns[i].Name < fns[j].Name })
	return fns
}
