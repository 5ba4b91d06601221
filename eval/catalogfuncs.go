package eval

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/planner"
	"github.com/basindb/basin/sql"
)

// Evaluation of the scalars of catalog queries and of the catalog
// functions (planner/qfuncs.go names them).

// startTime is when this process started: pg_postmaster_start_time.
var startTime = time.Now().UTC().Truncate(time.Microsecond)

// snapshotOf returns the catalog snapshot a catalog expression reads.
func snapshotOf(env *Env) *catalog.PGSnapshot {
	if env.Scope != nil {
		return env.Scope.Snap()
	}
	return env.SessionSnapshot()
}

// compileSystemExpr compiles the scalars of the system types and the
// catalog's functions; nil for any other.
func compileSystemExpr(s planner.Scalar) Expr {
	switch s := s.(type) {
	case *planner.ArrayLit:
		elems := make([]Expr, len(s.Elems))
		for i, e := range s.Elems {
			elems[i] = Compile(e)
		}
		return func(row catalog.Row, env *Env) (any, error) {
			vals, err := EvalAll(elems, row, env)
			if err != nil {
				return nil, err
			}
			return []any(vals), nil
		}
	case *planner.ArrayCmp:
		x, arr, op, all := Compile(s.X), Compile(s.Arr), s.Op, s.All
		return func(row catalog.Row, env *Env) (any, error) {
			v, err := x(row, env)
			if err != nil {
				return nil, err
			}
			a, err := arr(row, env)
			if a == nil || err != nil {
				return nil, err
			}
			return Quantify(v, a.([]any), op, all)
		}
	case *planner.SubscriptOp:
		x, idx := Compile(s.X), Compile(s.Idx)
		if s.X.Type().IsMap() {
			return func(row catalog.Row, env *Env) (any, error) {
				m, k, err := evalPair(x, idx, row, env)
				if m == nil || k == nil || err != nil {
					return nil, err
				}
				mv, ok := m.(catalog.Map)
				if !ok {
					return nil, pgerr.New(pgerr.InternalError, "a %T subscripted as a map", m)
				}
				v, _ := mv.Get(k.(string))
				return v, nil
			}
		}
		lower := int64(1)
		if t := s.X.Type(); t == catalog.Int2Vector || t == catalog.OidVector {
			lower = 0
		}
		return func(row catalog.Row, env *Env) (any, error) {
			a, err := x(row, env)
			if a == nil || err != nil {
				return nil, err
			}
			i, err := idx(row, env)
			if i == nil || err != nil {
				return nil, err
			}
			vals := a.([]any)
			k := i.(int64) - lower
			if k < 0 || k >= int64(len(vals)) {
				return nil, nil
			}
			return vals[k], nil
		}
	case *planner.FieldOp:
		x, idx := Compile(s.X), s.Idx
		return func(row catalog.Row, env *Env) (any, error) {
			v, err := x(row, env)
			if v == nil || err != nil {
				return nil, err
			}
			var rec []any
			switch x := v.(type) {
			case []any:
				rec = x
			case catalog.Struct:
				rec = x
			default:
				return nil, pgerr.New(pgerr.InternalError, "field %s of a %T", s.Name, v)
			}
			if idx >= len(rec) {
				return nil, nil
			}
			return rec[idx], nil
		}
	case *planner.RegexMatch:
		return compileRegexMatch(s)
	case *planner.OpCall:
		l, r, op := Compile(s.L), Compile(s.R), s.Op
		return func(row catalog.Row, env *Env) (any, error) {
			a, b, err := evalPair(l, r, row, env)
			if err != nil {
				return nil, err
			}
			switch op {
			case "IS DISTINCT FROM", "IS NOT DISTINCT FROM":
				same := a == nil && b == nil || a != nil && b != nil && Compare(a, b) == 0
				return same == (op == "IS NOT DISTINCT FROM"), nil
			}
			if op == "||" {
				// array || array: a NULL side is an empty array.
				if a == nil && b == nil {
					return nil, nil
				}
				x, _ := a.([]any)
				y, _ := b.([]any)
				return append(append([]any{}, x...), y...), nil
			}
			if a == nil || b == nil {
				return nil, nil
			}
			return a.(int64) & b.(int64), nil
		}
	case *planner.PGCast:
		return compilePGCast(s)
	}
	return nil
}

// Quantify is v op ANY|ALL (vals) with SQL's NULL logic.
func Quantify(v any, vals []any, op string, all bool) (any, error) {
	if v == nil {
		if len(vals) == 0 {
			return all, nil
		}
		return nil, nil
	}
	sawNull := false
	for _, w := range vals {
		if w == nil {
			sawNull = true
			continue
		}
		res, err := BinaryOp(op, catalog.Unknown, v, w)
		if err != nil {
			return nil, err
		}
		if res == true && !all {
			return true, nil
		}
		if res == false && all {
			return false, nil
		}
	}
	if sawNull {
		return nil, nil
	}
	return all, nil
}

// compileRegexMatch compiles ~ and friends, over the patterns
// compileRegex makes (and caches) for the regexp_ functions.
func compileRegexMatch(s *planner.RegexMatch) Expr {
	x, p := Compile(s.X), Compile(s.Pattern)
	ci, not := s.CI, s.Not
	return func(row catalog.Row, env *Env) (any, error) {
		v, err := x(row, env)
		if v == nil || err != nil {
			return nil, err
		}
		pat, err := p(row, env)
		if pat == nil || err != nil {
			return nil, err
		}
		flags := ""
		if ci {
			flags = "i"
		}
		re, _, err := compileRegex(pat.(string), flags, "~")
		if err != nil {
			return nil, err
		}
		return re.MatchString(v.(string)) != not, nil
	}
}

// compilePGCast compiles a cast involving a system type.
func compilePGCast(s *planner.PGCast) Expr {
	x, from, to := Compile(s.X), s.X.Type(), s.T
	return func(row catalog.Row, env *Env) (any, error) {
		v, err := x(row, env)
		if v == nil || err != nil {
			return nil, err
		}
		return castPGValue(v, from, to, env)
	}
}

func castPGValue(v any, from, to catalog.Type, env *Env) (any, error) {
	switch {
	case to.IsReg():
		if s, ok := v.(string); ok {
			return planner.RegByName(snapshotOf(env), s, to)
		}
		return v, nil
	case from.IsReg() && to == catalog.Varchar:
		return planner.RegName(snapshotOf(env), from, v.(int64)), nil
	case to.Subscriptable():
		switch x := v.(type) {
		case string:
			return planner.ParseArray(x, to)
		case []any:
			out := make([]any, len(x))
			for i, e := range x {
				if e == nil {
					continue
				}
				c, err := castPGValue(e, from.Elem(), to.Elem(), env)
				if err != nil {
					return nil, err
				}
				out[i] = c
			}
			return out, nil
		}
	case to == catalog.Varchar:
		switch x := v.(type) {
		case []any:
			if from == catalog.Record {
				return catalog.FormatRecord(x, planner.FormatValue), nil
			}
			return planner.FormatArrayValue(from, x), nil
		}
		return planner.FormatValue(v), nil
	case from == to || to == catalog.Unknown:
		return v, nil
	}
	if to.Storable() || to == catalog.Oid {
		return planner.ConvertValue(v, to)
	}
	return nil, pgerr.New(pgerr.CannotCoerce, "cannot cast %s to %s", from.SQLName(), to.SQLName())
}

// qfunc implements a catalog function over its evaluated arguments.
type qfunc func(args []any, env *Env) (any, error)

// nonStrictFuncs see NULL arguments; every other catalog function
// returns NULL when an argument is NULL.
var nonStrictFuncs = map[string]bool{
	"format_type": true, "quote_nullable": true, "format": true, "array_to_string": true,
	"pg_get_viewdef": true, "pg_get_indexdef": true, "pg_get_constraintdef": true, "pg_get_expr": true,
	"obj_description": true, "string_to_array": true,
}

// compileCatalogCall compiles a call of a catalog function; nil for
// any other function.
func compileCatalogCall(c *planner.Call, args []Expr) Expr {
	fn := catalogFuncImpl(c)
	if fn == nil {
		return nil
	}
	strict := !nonStrictFuncs[c.Name]
	return func(row catalog.Row, env *Env) (any, error) {
		vals, err := EvalAll(args, row, env)
		if err != nil {
			return nil, err
		}
		if strict {
			for _, v := range vals {
				if v == nil {
					return nil, nil
				}
			}
		}
		return fn(vals, env)
	}
}

func argOr(args []any, i int, def any) any {
	if i < len(args) && args[i] != nil {
		return args[i]
	}
	return def
}

func constant(v any) qfunc { return func([]any, *Env) (any, error) { return v, nil } }

// catalogFuncImpl returns the implementation of a catalog function.
func catalogFuncImpl(c *planner.Call) qfunc {
	argType := func(i int) catalog.Type {
		if i < len(c.Args) {
			return c.Args[i].Type()
		}
		return catalog.Unknown
	}
	switch c.Name {
	case "format_type":
		return func(a []any, _ *Env) (any, error) {
			if a[0] == nil {
				return nil, nil
			}
			return catalog.FormatType(a[0].(int64), argOr(a, 1, int64(-1)).(int64)), nil
		}
	case "pg_table_is_visible":
		return func(a []any, env *Env) (any, error) {
			nsp, ok := snapshotOf(env).RelationNamespace(a[0].(int64))
			if !ok {
				return nil, nil
			}
			return nsp != catalog.NamespaceInformationSchema, nil
		}
	case "pg_type_is_visible", "pg_function_is_visible", "pg_collation_is_visible", "pg_opclass_is_visible",
		"pg_opfamily_is_visible", "pg_operator_is_visible", "pg_conversion_is_visible", "pg_statistics_obj_is_visible",
		"pg_ts_config_is_visible", "pg_ts_dict_is_visible", "pg_ts_parser_is_visible", "pg_ts_template_is_visible":
		return constant(true)
	case "pg_get_userbyid":
		return func(a []any, env *Env) (any, error) {
			if a[0].(int64) == catalog.RoleOID {
				return env.User, nil
			}
			return fmt.Sprintf("unknown (OID=%d)", a[0].(int64)), nil
		}
	case "obj_description":
		return func(a []any, env *Env) (any, error) {
			if a[0] == nil {
				return nil, nil
			}
			class := ""
			if len(a) > 1 {
				if a[1] == nil {
					return nil, nil
				}
				class = a[1].(string)
			}
			d, ok := snapshotOf(env).Description(a[0].(int64), class)
			if !ok {
				return nil, nil
			}
			return d, nil
		}
	case "col_description":
		return constant(nil)
	case "shobj_description":
		return func(a []any, env *Env) (any, error) {
			if a[0].(int64) == catalog.DatabaseOID && strings.EqualFold(a[1].(string), "pg_database") {
				return "basin streaming materialized views", nil
			}
			return nil, nil
		}
	case "pg_get_expr":
		return func(a []any, _ *Env) (any, error) { return a[0], nil }
	case "pg_get_indexdef":
		return func(a []any, env *Env) (any, error) {
			if a[0] == nil {
				return nil, nil
			}
			r, ok := snapshotOf(env).IndexRelation(a[0].(int64))
			if !ok {
				return nil, nil
			}
			col := argOr(a, 1, int64(0)).(int64)
			if col == 0 {
				return catalog.IndexDef(r), nil
			}
			keys := r.Schema.KeyIndexes()
			if col < 1 || int(col) > len(keys) {
				return "", nil
			}
			return catalog.QuoteIdent(r.Schema.Columns[keys[col-1]].Name), nil
		}
	case "pg_get_constraintdef":
		return func(a []any, env *Env) (any, error) {
			if a[0] == nil {
				return nil, nil
			}
			r, ok := snapshotOf(env).ConstraintRelation(a[0].(int64))
			if !ok {
				return nil, nil
			}
			return catalog.ConstraintDef(r), nil
		}
	case "pg_get_viewdef":
		return func(a []any, env *Env) (any, error) {
			if a[0] == nil {
				return nil, nil
			}
			snap := snapshotOf(env)
			var oid int64
			switch x := a[0].(type) {
			case int64:
				oid = x
			case string:
				o, err := planner.RegByName(snap, x, catalog.RegClass)
				if err != nil {
					return nil, err
				}
				oid = o
			}
			r, ok := snap.RelationByOID(oid)
			if !ok || r.Kind != catalog.KindView {
				return nil, nil
			}
			return " " + snap.ViewDefinition(r) + ";", nil
		}
	case "pg_get_function_result":
		return func(a []any, _ *Env) (any, error) {
			for _, p := range catalog.Procs() {
				if p.OID == a[0].(int64) {
					t := catalog.FormatType(p.RetType, -1)
					if p.RetSet {
						t = "SETOF " + t
					}
					return t, nil
				}
			}
			return nil, nil
		}
	case "pg_get_functiondef":
		return func(a []any, _ *Env) (any, error) {
			for _, p := range catalog.Procs() {
				if p.OID == a[0].(int64) {
					return fmt.Sprintf("-- %s is built into basin\n", p.Name), nil
				}
			}
			return nil, nil
		}
	case "pg_get_function_arguments", "pg_get_function_identity_arguments":
		return func(a []any, _ *Env) (any, error) {
			for _, p := range catalog.Procs() {
				if p.OID == a[0].(int64) {
					names := make([]string, len(p.Args))
					for i, t := range p.Args {
						names[i] = catalog.FormatType(t, -1)
					}
					return strings.Join(names, ", "), nil
				}
			}
			return nil, nil
		}
	case "pg_get_serial_sequence", "pg_get_statisticsobjdef_columns", "pg_get_function_sqlbody", "pg_get_triggerdef", "pg_get_ruledef",
		"pg_get_partkeydef", "pg_get_partition_constraintdef", "inet_server_addr", "inet_server_port",
		"inet_client_addr", "inet_client_port":
		return constant(nil)
	case "pg_relation_is_publishable", "pg_is_in_recovery":
		return constant(false)
	case "quote_ident":
		return func(a []any, _ *Env) (any, error) { return catalog.QuoteIdent(a[0].(string)), nil }
	case "quote_literal", "quote_nullable":
		return func(a []any, _ *Env) (any, error) {
			if a[0] == nil {
				return "NULL", nil
			}
			s := a[0].(string)
			q := "'" + strings.ReplaceAll(s, "'", "''") + "'"
			if strings.Contains(s, `\`) {
				q = "E'" + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), "'", "''") + "'"
			}
			return q, nil
		}
	case "array_to_string":
		t := argType(0)
		return func(a []any, _ *Env) (any, error) {
			if a[0] == nil || a[1] == nil {
				return nil, nil
			}
			var parts []string
			for _, e := range a[0].([]any) {
				if e == nil {
					if len(a) > 2 && a[2] != nil {
						parts = append(parts, a[2].(string))
					}
					continue
				}
				parts = append(parts, formatElem(t.Elem(), e))
			}
			return strings.Join(parts, a[1].(string)), nil
		}
	case "array_length", "array_upper", "array_lower", "cardinality":
		t := argType(0)
		lower := int64(1)
		if t == catalog.Int2Vector || t == catalog.OidVector {
			lower = 0
		}
		return func(a []any, _ *Env) (any, error) {
			n := int64(len(a[0].([]any)))
			if c.Name == "cardinality" {
				return n, nil
			}
			if a[1].(int64) != 1 || n == 0 {
				return nil, nil
			}
			switch c.Name {
			case "array_length":
				return n, nil
			case "array_lower":
				return lower, nil
			}
			return lower + n - 1, nil
		}
	case "string_to_array":
		return func(a []any, _ *Env) (any, error) {
			if a[0] == nil {
				return nil, nil
			}
			s := a[0].(string)
			var parts []string
			switch {
			case s == "":
				parts = nil
			case a[1] == nil:
				for _, r := range s {
					parts = append(parts, string(r))
				}
			case a[1].(string) == "":
				parts = []string{s}
			default:
				parts = strings.Split(s, a[1].(string))
			}
			out := make([]any, len(parts))
			for i, p := range parts {
				if len(a) > 2 && a[2] != nil && p == a[2].(string) {
					continue
				}
				out[i] = p
			}
			return out, nil
		}
	case "current_schemas":
		return func(a []any, env *Env) (any, error) {
			var out []any
			if a[0] == true {
				out = append(out, "pg_catalog")
			}
			path := "public"
			if env.Session != nil {
				if v, ok := env.Session.Setting("search_path"); ok {
					path = v
				}
			}
			for _, p := range strings.Split(path, ",") {
				p = strings.Trim(strings.TrimSpace(p), `"`)
				if _, ok := catalog.NamespaceOID(p); ok && p != "pg_catalog" {
					out = append(out, p)
				}
			}
			if out == nil {
				out = []any{}
			}
			return out, nil
		}
	case "pg_encoding_to_char":
		return func(a []any, _ *Env) (any, error) {
			switch a[0].(int64) {
			case 6:
				return "UTF8", nil
			case 0:
				return "SQL_ASCII", nil
			}
			return "", nil
		}
	case "pg_char_to_encoding":
		return func(a []any, _ *Env) (any, error) {
			switch strings.ToUpper(a[0].(string)) {
			case "UTF8", "UTF-8", "UNICODE":
				return int64(6), nil
			case "SQL_ASCII":
				return int64(0), nil
			}
			return int64(-1), nil
		}
	case "pg_relation_size", "pg_total_relation_size", "pg_table_size", "pg_indexes_size", "pg_database_size":
		return constant(int64(0))
	case "pg_size_pretty":
		return func(a []any, _ *Env) (any, error) { return sizePretty(a[0].(int64)), nil }
	case "pg_postmaster_start_time", "pg_conf_load_time":
		return constant(startTime)
	case "pg_tablespace_location":
		return constant("")
	case "to_regclass", "to_regtype", "to_regproc", "to_regnamespace":
		return func(a []any, env *Env) (any, error) {
			oid, err := planner.RegByName(snapshotOf(env), a[0].(string), c.T)
			if err != nil {
				return nil, nil
			}
			return oid, nil
		}
	case "pg_typeof":
		oid := int64(argType(0).OID())
		return func([]any, *Env) (any, error) { return oid, nil }
	case "txid_current", "pg_current_xact_id":
		return constant(int64(1))
	case "getdatabaseencoding":
		return constant("UTF8")
	case "pg_stat_get_numscans":
		return constant(int64(0))
	case "format":
		types := make([]catalog.Type, len(c.Args))
		for i := range c.Args {
			types[i] = argType(i)
		}
		return func(a []any, _ *Env) (any, error) { return formatFunc(a, types) }
	case "user", "current_role":
		return func(_ []any, env *Env) (any, error) { return env.User, nil }
	case "parse_ident":
		return func(a []any, _ *Env) (any, error) {
			parts := catalog.SplitQualifiedName(a[0].(string))
			out := make([]any, len(parts))
			for i, p := range parts {
				if p == "" {
					return nil, pgerr.New(pgerr.InvalidParameterValue, "string is not a valid identifier: %q", a[0])
				}
				out[i] = p
			}
			return out, nil
		}
	}
	if f := regexpQueryFuncs[c.Name]; f != nil {
		return f
	}
	return nil
}

// formatElem formats an array element as its text output.
func formatElem(t catalog.Type, v any) string {
	if x, ok := v.([]any); ok {
		return planner.FormatArrayValue(t, x)
	}
	return planner.FormatValue(v)
}

// sizePretty is pg_size_pretty(bigint).
func sizePretty(size int64) string {
	abs := func(x int64) int64 {
		if x < 0 {
			return -x
		}
		return x
	}
	half := func(x int64) int64 {
		if x < 0 {
			return (x - 1) / 2
		}
		return (x + 1) / 2
	}
	const limit = 10 * 1024
	const limit2 = limit*2 - 1
	if abs(size) < limit {
		return fmt.Sprintf("%d bytes", size)
	}
	size >>= 9 // one extra bit for rounding
	for _, unit := range []string{"kB", "MB", "GB", "TB"} {
		if abs(size) < limit2 {
			return fmt.Sprintf("%d %s", half(size), unit)
		}
		size >>= 10
	}
	return fmt.Sprintf("%d PB", half(size))
}

// maxSRFRows bounds what one set-returning function call may produce.
const maxSRFRows = 1_000_000

// RunSRF runs a set-returning function; each value is one row (a []any
// record for functions of several columns).
func RunSRF(name string, args []any, types []catalog.Type, env *Env) ([]any, error) {
	loc := env.Location()
	if name == "pg_listening_channels" {
		n, ok := env.Session.(Notifier)
		if !ok {
			return nil, nil
		}
		var out []any
		for _, ch := range n.ListeningChannels() {
			out = append(out, ch)
		}
		return out, nil
	}
	for _, a := range args {
		if a == nil {
			return nil, nil
		}
	}
	switch name {
	case "generate_series":
		if _, ok := args[0].(time.Time); ok {
			return timeSeries(args, types, loc)
		}
		from, to := args[0].(int64), args[1].(int64)
		step := int64(1)
		if len(args) > 2 {
			step = args[2].(int64)
		}
		if step == 0 {
			return nil, pgerr.New(pgerr.InvalidParameterValue, "step size cannot equal zero")
		}
		var out []any
		for v := from; step > 0 && v <= to || step < 0 && v >= to; v += step {
			if len(out) >= maxSRFRows {
				return nil, pgerr.New(pgerr.ProgramLimitExceeded, "generate_series over catalog queries is limited to %d rows", maxSRFRows)
			}
			out = append(out, v)
			if step > 0 && v > 1<<62 || step < 0 && v < -(1<<62) {
				break
			}
		}
		return out, nil
	case "regexp_matches", "regexp_split_to_table":
		return regexpSRF(name, args)
	case "unnest", planner.ExplodeFunc:
		return append([]any{}, args[0].([]any)...), nil
	case "generate_subscripts":
		vals := args[0].([]any)
		if args[1].(int64) != 1 {
			return nil, nil
		}
		lower := int64(1)
		if types[0] == catalog.Int2Vector || types[0] == catalog.OidVector {
			lower = 0
		}
		out := make([]any, len(vals))
		for i := range vals {
			out[i] = lower + int64(i)
		}
		return out, nil
	case "_pg_expandarray":
		vals := args[0].([]any)
		out := make([]any, len(vals))
		for i, v := range vals {
			out[i] = []any{v, int64(i + 1)}
		}
		return out, nil
	case "pg_get_keywords":
		var out []any
		for _, w := range catalog.ReservedKeywords() {
			out = append(out, []any{w, "R", true, "reserved", "can be bare label"})
		}
		return out, nil
	case "pg_options_to_table":
		var out []any
		for _, v := range args[0].([]any) {
			s, _ := v.(string)
			k, val, _ := strings.Cut(s, "=")
			out = append(out, []any{k, val})
		}
		return out, nil
	}
	if out, ok, err := runJSONSRF(name, args); ok {
		return out, err
	}
	return nil, pgerr.New(pgerr.UndefinedFunction, "function %s is not a set-returning function basin has", name)
}

var viewQueries sync.Map // Relation.SQL → its SELECT

// ViewQuery returns the SELECT of a view's CREATE TABLE ... AS.
func ViewQuery(r *catalog.Relation) string {
	if q, ok := viewQueries.Load(r.SQL); ok {
		return q.(string)
	}
	q := r.SQL
	if stmts, err := sql.ParseStatements(r.SQL); err == nil && len(stmts) == 1 {
		if ct, ok := stmts[0].Stmt.(*sql.CreateTableAs); ok && ct.SelectText != "" {
			q = ct.SelectText
		}
	}
	viewQueries.Store(r.SQL, q)
	return q
}

// formatFunc is format(fmt, args...) with %s, %I, %L and %%.
func formatFunc(a []any, types []catalog.Type) (any, error) {
	if a[0] == nil {
		return nil, nil
	}
	f := a[0].(string)
	var b strings.Builder
	next := 1
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			b.WriteByte(f[i])
			continue
		}
		i++
		if i >= len(f) {
			return nil, pgerr.New(pgerr.InvalidParameterValue, "unterminated format() type specifier")
		}
		if f[i] == '%' {
			b.WriteByte('%')
			continue
		}
		if next >= len(a) {
			return nil, pgerr.New(pgerr.InvalidParameterValue, "too few arguments for format()")
		}
		v := a[next]
		text := ""
		if v != nil {
			text = formatElem(types[next], v)
			if x, ok := v.([]any); ok {
				text = planner.FormatArrayValue(types[next], x)
			}
		}
		next++
		switch f[i] {
		case 's':
			b.WriteString(text)
		case 'I':
			if v == nil {
				return nil, pgerr.New(pgerr.NullValueNotAllowedDataException, "null values cannot be formatted as an SQL identifier")
			}
			b.WriteString(catalog.QuoteIdent(text))
		case 'L':
			if v == nil {
				b.WriteString("NULL")
			} else {
				b.WriteString("'" + strings.ReplaceAll(text, "'", "''") + "'")
			}
		default:
			return nil, pgerr.New(pgerr.InvalidParameterValue, "unrecognized format() type specifier %q", string(f[i]))
		}
	}
	return b.String(), nil
}
