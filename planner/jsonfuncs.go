package planner

import (
	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
)

// The functions over json, jsonb, uuid and bytea: typed here,
// evaluated in eval (jsonfuncs.go) and, for the set-returning ones, in
// query. They register themselves with the function tables, which keeps
// them apart from the tables' other entries.

// argsAs returns a result function that coerces args[i] to types[i]
// (the last type for the rest) and returns t. An argument that cannot
// become its type is an undefined function, as in Postgres.
func argsAs(t catalog.Type, types ...catalog.Type) func([]Scalar) (catalog.Type, error) {
	return func(args []Scalar) (catalog.Type, error) {
		// All are checked before any is coerced, so that the error names
		// the types as written.
		for i := range args {
			want := types[min(i, len(types)-1)]
			at := args[i].Type()
			if want != catalog.Unknown && at != want && !isUntyped(args[i]) && !(want.Numeric() && at.Numeric()) {
				return 0, pgerr.New(pgerr.UndefinedFunction, "no such function")
			}
		}
		b := &binder{}
		for i := range args {
			want := types[min(i, len(types)-1)]
			if want == catalog.Unknown {
				continue
			}
			c, err := b.coerce(args[i], want, 0, "argument")
			if err != nil {
				return 0, err
			}
			args[i] = c
		}
		return t, nil
	}
}

// anyArgs types a function of arguments of any type (to_jsonb,
// json_build_object): an untyped literal is text, as Postgres resolves
// an unknown argument of an "any" parameter.
func anyArgs(t catalog.Type) func([]Scalar) (catalog.Type, error) {
	return func(args []Scalar) (catalog.Type, error) {
		for i := range args {
			if c, ok := args[i].(*Const); ok && c.T == catalog.Unknown && c.V == nil {
				args[i] = &Const{T: catalog.Varchar}
			}
		}
		return t, nil
	}
}

func init() {
	var (
		jb, js, text = catalog.JSONB, catalog.JSON, catalog.Varchar
		bytea        = catalog.Bytea
		path         = catalog.ArrayOf(catalog.Varchar)
	)
	for name, sig := range map[string]funcSig{
		"jsonb_extract_path":      {2, -1, argsAs(jb, jb, text), catalog.Unknown, nil},
		"jsonb_extract_path_text": {2, -1, argsAs(text, jb, text), catalog.Unknown, nil},
		"json_extract_path":       {2, -1, argsAs(js, js, text), catalog.Unknown, nil},
		"json_extract_path_text":  {2, -1, argsAs(text, js, text), catalog.Unknown, nil},
		"jsonb_typeof":            {1, 1, argsAs(text, jb), catalog.Unknown, nil},
		"json_typeof":             {1, 1, argsAs(text, js), catalog.Unknown, nil},
		"jsonb_array_length":      {1, 1, argsAs(catalog.Int, jb), catalog.Unknown, nil},
		"json_array_length":       {1, 1, argsAs(catalog.Int, js), catalog.Unknown, nil},
		"jsonb_pretty":            {1, 1, argsAs(text, jb), catalog.Unknown, nil},
		"jsonb_set":               {3, 4, argsAs(jb, jb, path, jb, catalog.Boolean), catalog.Unknown, nil},
		"jsonb_insert":            {3, 4, argsAs(jb, jb, path, jb, catalog.Boolean), catalog.Unknown, nil},
		"jsonb_set_lax":           {3, 5, argsAs(jb, jb, path, jb, catalog.Boolean, text), catalog.Unknown, nil},
		"jsonb_strip_nulls":       {1, 1, argsAs(jb, jb), catalog.Unknown, nil},
		"json_strip_nulls":        {1, 1, argsAs(js, js), catalog.Unknown, nil},
		"to_jsonb":                {1, 1, anyArgs(jb), catalog.Unknown, nil},
		"to_json":                 {1, 1, anyArgs(js), catalog.Unknown, nil},
		"jsonb_build_object":      {0, -1, anyArgs(jb), catalog.Unknown, nil},
		"json_build_object":       {0, -1, anyArgs(js), catalog.Unknown, nil},
		"jsonb_build_array":       {0, -1, anyArgs(jb), catalog.Unknown, nil},
		"json_build_array":        {0, -1, anyArgs(js), catalog.Unknown, nil},
		"gen_random_uuid":         {0, 0, fixed(catalog.UUID), catalog.Unknown, nil},
		"md5":                     {1, 1, md5Sig, catalog.Unknown, nil},
		"encode":                  {2, 2, argsAs(text, bytea, text), catalog.Unknown, nil},
		"decode":                  {2, 2, argsAs(bytea, text, text), catalog.Unknown, nil},
		"convert_from":            {2, 2, argsAs(text, bytea, text), catalog.Unknown, nil},
		"convert_to":              {2, 2, argsAs(bytea, text, text), catalog.Unknown, nil},
		"from_bytes":              {2, 2, argsAs(text, bytea, text), catalog.Unknown, nil},
		"to_bytes":                {2, 2, argsAs(bytea, text, text), catalog.Unknown, nil},
		"octet_length":            {1, 1, octetLengthSig, catalog.Unknown, nil},
	} {
		scalarFuncs[name] = sig
	}
	for name, t := range map[string]catalog.Type{
		"jsonb_object_keys": text, "json_object_keys": text,
		"jsonb_array_elements": jb, "json_array_elements": js,
		"jsonb_array_elements_text": text, "json_array_elements_text": text,
		"jsonb_each": catalog.Record, "json_each": catalog.Record,
		"jsonb_each_text": catalog.Record, "json_each_text": catalog.Record,
	} {
		setReturningFuncs[name] = jsonSRF(name, t)
	}
}

// md5Sig takes text or bytea and returns text.
func md5Sig(args []Scalar) (catalog.Type, error) {
	if args[0].Type() == catalog.Bytea {
		return catalog.Varchar, nil
	}
	return argsAs(catalog.Varchar, catalog.Varchar)(args)
}

func octetLengthSig(args []Scalar) (catalog.Type, error) {
	if _, err := md5Sig(args); err != nil {
		return 0, err
	}
	return catalog.Int, nil
}

// blobFuncName is the function a call of name over args runs:
// length(bytea) counts bytes, which octet_length does.
func blobFuncName(name string, args []Scalar) string {
	if name == "length" && len(args) == 1 && args[0].Type() == catalog.Bytea {
		return "octet_length"
	}
	return name
}

// jsonSRF types a json set-returning function: its one argument is the
// function's json type; t is its values' type, a record of key and
// value for the _each functions.
func jsonSRF(name string, t catalog.Type) srfSig {
	in := catalog.JSONB
	if name[:5] == "json_" {
		in = catalog.JSON
	}
	var fields []catalog.Column
	if t == catalog.Record {
		vt := in
		if name[len(name)-5:] == "_text" {
			vt = catalog.Varchar
		}
		fields = []catalog.Column{{Name: "key", Type: catalog.Varchar}, {Name: "value", Type: vt}}
	}
	return srfSig{func(args []Scalar, pos int) ([]Scalar, catalog.Type, []catalog.Column, error) {
		if len(args) != 1 {
			return nil, 0, nil, pgerr.New(pgerr.UndefinedFunction, "function %s(%s) does not exist", name, argTypes(args)).WithPosition(pos)
		}
		if _, err := argsAs(t, in)(args); err != nil {
			return nil, 0, nil, pgerr.New(pgerr.UndefinedFunction, "function %s(%s) does not exist", name, argTypes(args)).WithPosition(pos).
				WithHint("No function matches the given name and argument types. You might need to add explicit type casts.")
		}
		return args, t, fields, nil
	}}
}

// The json aggregates are the relational engine's (pull queries).
func init() {
	for _, name := range []string{"jsonb_agg", "json_agg", "jsonb_object_agg", "json_object_agg"} {
		queryAggregates[name] = true
	}
}

// isObjectAgg reports whether name is an aggregate of key and value.
func isObjectAgg(name string) bool { return name == "jsonb_object_agg" || name == "json_object_agg" }

// jsonAggType is the result type of a json aggregate; ok is false for
// other aggregates.
func jsonAggType(name string) (catalog.Type, bool) {
	switch name {
	case "jsonb_agg", "jsonb_object_agg":
		return catalog.JSONB, true
	case "json_agg", "json_object_agg":
		return catalog.JSON, true
	}
	return 0, false
}

// AggKeepsNulls reports whether an aggregate takes NULL arguments in:
// array_agg and the json aggregates (a NULL is a JSON null).
func AggKeepsNulls(name string) bool {
	_, isJSON := jsonAggType(name)
	return name == "array_agg" || isJSON
}
