package planner

import (
	"fmt"
	"strings"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
)

// funcSig types a scalar function's result from its arguments, or rejects
// them. exec implements the functions under the same names.
type funcSig struct {
	minArgs, maxArgs int // maxArgs -1: variadic
	result           func(args []Scalar) (catalog.Type, error)
	// argType, when set, is the type every argument is coerced to.
	argType catalog.Type
	// sys, for a catalog function (qfuncs.go), types it instead.
	sys *qfuncSig
}

func fixed(t catalog.Type) func([]Scalar) (catalog.Type, error) {
	return func([]Scalar) (catalog.Type, error) { return t, nil }
}

func firstArg(args []Scalar) (catalog.Type, error) { return args[0].Type(), nil }

func numericArg(args []Scalar) (catalog.Type, error) {
	t := args[0].Type()
	if t == catalog.Unknown {
		return catalog.Double, nil
	}
	if !t.Numeric() {
		return 0, pgerr.New(pgerr.UndefinedFunction, "function does not accept type %s", sqlName(t))
	}
	return t, nil
}

func commonArgs(args []Scalar) (catalog.Type, error) {
	t := catalog.Unknown
	for _, a := range args {
		nt, ok := commonType(&Const{T: t, V: 0}, a)
		if t == catalog.Unknown {
			nt, ok = a.Type(), true
		}
		if !ok {
			return 0, pgerr.New(pgerr.DatatypeMismatch, "arguments of types %s and %s cannot be matched", sqlName(t), sqlName(a.Type()))
		}
		t = nt
	}
	return t, nil
}

var scalarFuncs = map[string]funcSig{
	"lower":             {1, 1, fixed(catalog.Varchar), catalog.Varchar, nil},
	"upper":             {1, 1, fixed(catalog.Varchar), catalog.Varchar, nil},
	"length":            {1, 1, fixed(catalog.Int), catalog.Varchar, nil},
	"char_length":       {1, 1, fixed(catalog.Int), catalog.Varchar, nil},
	"trim":              {1, 1, fixed(catalog.Varchar), catalog.Varchar, nil},
	"ltrim":             {1, 1, fixed(catalog.Varchar), catalog.Varchar, nil},
	"rtrim":             {1, 1, fixed(catalog.Varchar), catalog.Varchar, nil},
	"replace":           {3, 3, fixed(catalog.Varchar), catalog.Varchar, nil},
	"substr":            {2, 3, fixed(catalog.Varchar), catalog.Unknown, nil},
	"substring":         {2, 3, fixed(catalog.Varchar), catalog.Unknown, nil},
	"concat":            {1, -1, fixed(catalog.Varchar), catalog.Varchar, nil},
	"abs":               {1, 1, numericArg, catalog.Unknown, nil},
	"round":             {1, 2, fixed(catalog.Double), catalog.Unknown, nil},
	"floor":             {1, 1, fixed(catalog.Double), catalog.Double, nil},
	"ceil":              {1, 1, fixed(catalog.Double), catalog.Double, nil},
	"ceiling":           {1, 1, fixed(catalog.Double), catalog.Double, nil},
	"sqrt":              {1, 1, fixed(catalog.Double), catalog.Double, nil},
	"coalesce":          {1, -1, commonArgs, catalog.Unknown, nil},
	"nullif":            {2, 2, firstArg, catalog.Unknown, nil},
	"greatest":          {1, -1, commonArgs, catalog.Unknown, nil},
	"least":             {1, -1, commonArgs, catalog.Unknown, nil},
	"now":               {0, 0, fixed(catalog.TimestampTZ), catalog.Unknown, nil},
	"date_trunc":        {2, 2, fixed(catalog.Timestamp), catalog.Unknown, nil},
	"date_part":         {2, 2, fixed(catalog.Double), catalog.Unknown, nil},
	"extract":           {2, 2, fixed(catalog.Double), catalog.Unknown, nil},
	"current_timestamp": {0, 0, fixed(catalog.TimestampTZ), catalog.Unknown, nil},
	"version":           {0, 0, fixed(catalog.Varchar), catalog.Unknown, nil},
	"current_database":  {0, 0, fixed(catalog.Varchar), catalog.Unknown, nil},
	"current_schema":    {0, 0, fixed(catalog.Varchar), catalog.Unknown, nil},
	"current_user":      {0, 0, fixed(catalog.Varchar), catalog.Unknown, nil},
	"session_user":      {0, 0, fixed(catalog.Varchar), catalog.Unknown, nil},
	"pg_backend_pid":    {0, 0, fixed(catalog.Int), catalog.Unknown, nil},
	// pg_cancel_backend and pg_terminate_backend signal a session of
	// the node the statement runs on.
	"pg_cancel_backend":    {1, 1, fixed(catalog.Boolean), catalog.Int, nil},
	"pg_terminate_backend": {1, 2, fixed(catalog.Boolean), catalog.BigInt, nil},
	"current_setting":      {1, 2, fixed(catalog.Varchar), catalog.Unknown, nil},
	"pg_sleep":             {1, 1, fixed(catalog.Unknown), catalog.Double, nil},
	// pg_notify queues a notification for the session's commit; void,
	// as pg_sleep.
	"pg_notify":  {2, 2, fixed(catalog.Unknown), catalog.Varchar, nil},
	"set_config": {3, 3, fixed(catalog.Varchar), catalog.Unknown, nil},
	// basin has no privileges: every role may do everything, so the
	// has_*_privilege family answers true for any arguments.
	"has_table_privilege":      {2, 3, fixed(catalog.Boolean), catalog.Unknown, nil},
	"has_column_privilege":     {3, 4, fixed(catalog.Boolean), catalog.Unknown, nil},
	"has_any_column_privilege": {2, 3, fixed(catalog.Boolean), catalog.Unknown, nil},
	"has_schema_privilege":     {2, 3, fixed(catalog.Boolean), catalog.Unknown, nil},
	"has_database_privilege":   {2, 3, fixed(catalog.Boolean), catalog.Unknown, nil},
	"has_function_privilege":   {2, 3, fixed(catalog.Boolean), catalog.Unknown, nil},
	"has_sequence_privilege":   {2, 3, fixed(catalog.Boolean), catalog.Unknown, nil},
	"has_type_privilege":       {2, 3, fixed(catalog.Boolean), catalog.Unknown, nil},
	"has_tablespace_privilege": {2, 3, fixed(catalog.Boolean), catalog.Unknown, nil},
	"pg_has_role":              {2, 3, fixed(catalog.Boolean), catalog.Unknown, nil},
}

// FuncNeedsSession reports whether a function reads the session (exec
// resolves these per statement).
func FuncNeedsSession(name string) bool {
	switch name {
	case "version", "current_database", "current_schema", "current_user", "session_user", "pg_backend_pid", "now", "current_timestamp":
		return true
	}
	return false
}

// bindScalarFunc binds a call of a function of the registry,
// scalarFuncs, which every family of functions adds to.
func (b *binder) bindScalarFunc(name string, args []Scalar, pos int) (Scalar, error) {
	name = blobFuncName(name, args)
	if name, args = atTimeZoneArgs(name, args); name == "timezone" && len(args) == 2 {
		return bindAtTimeZone(args, pos)
	}
	if s, ok, err := bindNumericFunc(name, args, pos); ok {
		return s, err
	}
	sig, ok := scalarFuncs[name]
	if !ok {
		return nil, pgerr.New(pgerr.UndefinedFunction, "function %s(%s) does not exist", name, argTypes(args)).WithPosition(pos).
			WithHint("docs/sql.md lists the functions basin has.")
	}
	if len(args) < sig.minArgs || (sig.maxArgs >= 0 && len(args) > sig.maxArgs) {
		return nil, pgerr.New(pgerr.UndefinedFunction, "function %s(%s) does not exist", name, argTypes(args)).WithPosition(pos).
			WithHint("No function matches the given name and argument types. You might need to add explicit type casts.")
	}
	if sig.sys != nil {
		return b.bindCatalogFunc(name, *sig.sys, args, pos)
	}
	if bind := funcBinders[name]; bind != nil {
		args, t, err := bind(args, pos)
		if err != nil {
			return nil, err
		}
		return &Call{Name: name, Args: args, T: t}, nil
	}
	var err error
	if sig.argType != catalog.Unknown {
		for i := range args {
			if args[i], err = castTo(args[i], sig.argType, pos); err != nil {
				return nil, err
			}
		}
	}
	switch name {
	case "current_setting", "set_config":
		for i := range args {
			want := catalog.Varchar
			if (name == "current_setting" && i == 1) || (name == "set_config" && i == 2) {
				want = catalog.Boolean
			}
			if args[i], err = castTo(args[i], want, pos); err != nil {
				return nil, err
			}
		}
	case "date_trunc", "date_part", "extract":
		// (unit or field, timestamp); EXTRACT(field FROM x) arrives as
		// extract('field', x).
		if t := args[1].Type(); t != catalog.Timestamp && t != catalog.Unknown {
			return nil, pgerr.New(pgerr.UndefinedFunction, "function %s(%s) does not exist", name, argTypes(args)).WithPosition(pos).
				WithHint("No function matches the given name and argument types. You might need to add explicit type casts.")
		}
		if args[0], err = castTo(args[0], catalog.Varchar, pos); err != nil {
			return nil, err
		}
		if args[1], err = castTo(args[1], catalog.Timestamp, pos); err != nil {
			return nil, err
		}
	case "substr", "substring":
		if args[0], err = castTo(args[0], catalog.Varchar, pos); err != nil {
			return nil, err
		}
		for i := 1; i < len(args); i++ {
			if args[i], err = castTo(args[i], catalog.BigInt, pos); err != nil {
				return nil, err
			}
		}
	case "round":
		if args[0], err = castTo(args[0], catalog.Double, pos); err != nil {
			return nil, err
		}
		if len(args) == 2 {
			if args[1], err = castTo(args[1], catalog.BigInt, pos); err != nil {
				return nil, err
			}
		}
	}
	t, err := sig.result(args)
	if err != nil {
		if pe, ok := pgerr.As(err); ok {
			pe.WithPosition(pos)
			if pe.Code == pgerr.UndefinedFunction {
				pe.Message = fmt.Sprintf("function %s(%s) does not exist", name, argTypes(args))
				pe.Hint = "No function matches the given name and argument types. You might need to add explicit type casts."
			} else {
				pe.Message = name + ": " + pe.Message
			}
		}
		return nil, err
	}
	switch name {
	case "coalesce", "greatest", "least", "nullif":
		for i := range args {
			if name == "nullif" && i == 1 && t.Numeric() && args[i].Type().Numeric() {
				// nullif returns its first argument's type but compares
				// numbers as numbers: nullif(n, 9.6) must not round 9.6.
				continue
			}
			if args[i], err = (&binder{}).coerce(args[i], t, pos, name); err != nil {
				return nil, err
			}
		}
	}
	return &Call{Name: name, Args: args, T: t}, nil
}

func argTypes(args []Scalar) string {
	types := make([]string, len(args))
	for i, a := range args {
		types[i] = sqlName(a.Type())
	}
	return strings.Join(types, ", ")
}
