package eval

import (
	"bytes"
	"sort"
	"strconv"
	"strings"

	"github.com/cockroachdb/apd/v3"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/jsonb"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/materialize"
	"github.com/basindb/basin/pgcodec"
	"github.com/basindb/basin/planner"
)

// ksqlDB's functions over arrays, maps and JSON strings, its STRUCT and
// MAP constructors, and the lambda functions TRANSFORM, FILTER and
// REDUCE (planner/nestedfuncs.go and lambda.go type them). NULL handling
// is ksqlDB's, function by function: ARRAY_CONTAINS of a NULL array is
// false, ARRAY_CONCAT and MAP_UNION of one NULL are the other argument,
// the JSON-string functions answer NULL (or false) for text that is no
// JSON of the kind they take rather than failing. Elements compare as
// Compare orders them and are equal as their keys are (equalKey), so
// ARRAY_DISTINCT and its kin are linear, and 1.0 and 1.00 are one value.

// compileNestedCall compiles a call of one of these functions; nil for
// any other, and for the Postgres function of a shared name
// (array_length of two arguments, json_array_length of json).
func compileNestedCall(s *planner.Call, args []Expr) Expr {
	switch s.Name {
	case "array_length":
		if len(args) != 1 {
			return nil
		}
	case "json_array_length":
		if len(s.Args) != 1 || s.Args[0].Type() != catalog.Varchar {
			return nil
		}
	}
	if mk := nestedExprFuncs[s.Name]; mk != nil {
		return mk(s, args)
	}
	if fn := nestedStrictFuncs[s.Name]; fn != nil {
		return strictExpr(s, args, fn)
	}
	return nil
}

// strictExpr is a call of fn with NULL in, NULL out.
func strictExpr(s *planner.Call, args []Expr, fn func(s *planner.Call, a []any) (any, error)) Expr {
	return func(row catalog.Row, env *Env) (any, error) {
		vals, err := strictArgs(args, row, env)
		if vals == nil || err != nil {
			return nil, err
		}
		return fn(s, vals)
	}
}

// strictArgs evaluates the arguments of a strict function: nil when one
// of them is NULL, whose call is NULL.
func strictArgs(args []Expr, row catalog.Row, env *Env) ([]any, error) {
	vals := make([]any, len(args))
	for i, a := range args {
		v, err := a(row, env)
		if v == nil || err != nil {
			return nil, err
		}
		vals[i] = v
	}
	return vals, nil
}

// evalArgs evaluates every argument (a NULL one is nil).
func evalArgs(args []Expr, row catalog.Row, env *Env) ([]any, error) {
	vals := make([]any, len(args))
	for i, a := range args {
		v, err := a(row, env)
		if err != nil {
			return nil, err
		}
		vals[i] = v
	}
	return vals, nil
}

// equalKey is a text equal for values Compare calls equal (NULL
// included), for sets of elements.
func equalKey(v any) (string, error) {
	b, err := materialize.AppendKeyValue(nil, v)
	if err != nil {
		return "", pgerr.Wrap(err, pgerr.InternalError)
	}
	return string(b), nil
}

// keySet is the set of equalKeys of a's elements.
func keySet(a []any) (map[string]bool, error) {
	set := make(map[string]bool, len(a))
	for _, e := range a {
		k, err := equalKey(e)
		if err != nil {
			return nil, err
		}
		set[k] = true
	}
	return set, nil
}

// distinctOf is a's elements without repeats, in first-seen order,
// keeping those keep says (nil: all).
func distinctOf(a []any, keep func(k string) bool) ([]any, error) {
	seen := make(map[string]bool, len(a))
	out := []any{}
	for _, e := range a {
		k, err := equalKey(e)
		if err != nil {
			return nil, err
		}
		if seen[k] || keep != nil && !keep(k) {
			continue
		}
		seen[k] = true
		out = append(out, e)
	}
	return out, nil
}

var nestedStrictFuncs = map[string]func(s *planner.Call, a []any) (any, error){
	"array_length": func(_ *planner.Call, a []any) (any, error) { return int64(len(a[0].([]any))), nil },
	"array_distinct": func(_ *planner.Call, a []any) (any, error) {
		return distinctOf(a[0].([]any), nil)
	},
	"array_except": func(_ *planner.Call, a []any) (any, error) {
		drop, err := keySet(a[1].([]any))
		if err != nil {
			return nil, err
		}
		return distinctOf(a[0].([]any), func(k string) bool { return !drop[k] })
	},
	"array_intersect": func(_ *planner.Call, a []any) (any, error) {
		keep, err := keySet(a[1].([]any))
		if err != nil {
			return nil, err
		}
		return distinctOf(a[0].([]any), func(k string) bool { return keep[k] })
	},
	"array_union": func(_ *planner.Call, a []any) (any, error) {
		both := append(append([]any{}, a[0].([]any)...), a[1].([]any)...)
		return distinctOf(both, nil)
	},
	"array_max": func(_ *planner.Call, a []any) (any, error) { return arrayExtreme(a[0].([]any), 1), nil },
	"array_min": func(_ *planner.Call, a []any) (any, error) { return arrayExtreme(a[0].([]any), -1), nil },
	"map_keys": func(_ *planner.Call, a []any) (any, error) {
		m := a[0].(catalog.Map)
		out := make([]any, len(m))
		for i, e := range m {
			out[i] = e.Key
		}
		return out, nil
	},
	"map_values": func(_ *planner.Call, a []any) (any, error) {
		m := a[0].(catalog.Map)
		out := make([]any, len(m))
		for i, e := range m {
			out[i] = e.Value
		}
		return out, nil
	},
	"as_map": func(_ *planner.Call, a []any) (any, error) {
		keys, vals := a[0].([]any), a[1].([]any)
		entries := make([]catalog.MapEntry, 0, min(len(keys), len(vals)))
		for i := 0; i < len(keys) && i < len(vals); i++ {
			if keys[i] == nil {
				continue // a map has no NULL key
			}
			entries = append(entries, catalog.MapEntry{Key: keys[i].(string), Value: vals[i]})
		}
		return catalog.NewMap(entries), nil
	},
	"entries": func(_ *planner.Call, a []any) (any, error) {
		// Map entries are in key order already, sorted or not.
		m := a[0].(catalog.Map)
		out := make([]any, len(m))
		for i, e := range m {
			out[i] = catalog.Struct{e.Key, e.Value}
		}
		return out, nil
	},
	"extractjsonfield": func(_ *planner.Call, a []any) (any, error) {
		path, err := parseJSONPath(a[1].(string))
		if err != nil {
			return nil, err
		}
		v, err := jsonb.ParseJSON(a[0].(string))
		if err != nil {
			return nil, nil
		}
		for _, step := range path {
			var ok bool
			if step.index >= 0 {
				v, ok = v.Index(int64(step.index))
			} else if v.Kind == jsonb.Object {
				v, ok = jsonField(v, step.key)
			}
			if !ok {
				return nil, nil
			}
		}
		switch v.Kind {
		case jsonb.Null:
			return nil, nil
		case jsonb.String:
			return v.Str, nil
		}
		return compactJSON(v), nil
	},
	"json_array_length": func(_ *planner.Call, a []any) (any, error) {
		v, err := jsonb.ParseJSON(a[0].(string))
		if err != nil || v.Kind != jsonb.Array {
			return nil, nil
		}
		return int64(len(v.Elems)), nil
	},
	"json_keys": func(_ *planner.Call, a []any) (any, error) {
		v, err := jsonb.ParseJSON(a[0].(string))
		if err != nil || v.Kind != jsonb.Object {
			return nil, nil
		}
		out := make([]any, 0, len(v.Keys))
		seen := map[string]bool{}
		for _, k := range v.Keys {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
		return out, nil
	},
	"json_records": func(_ *planner.Call, a []any) (any, error) {
		v, err := jsonb.ParseJSON(a[0].(string))
		if err != nil || v.Kind != jsonb.Object {
			return nil, nil
		}
		entries := make([]catalog.MapEntry, len(v.Keys))
		for i, k := range v.Keys {
			entries[i] = catalog.MapEntry{Key: k, Value: compactJSON(v.Vals[i])}
		}
		return catalog.NewMap(entries), nil
	},
	"json_items": func(_ *planner.Call, a []any) (any, error) {
		v, err := jsonb.ParseJSON(a[0].(string))
		if err != nil || v.Kind != jsonb.Array {
			return nil, nil
		}
		out := make([]any, len(v.Elems))
		for i, e := range v.Elems {
			out[i] = compactJSON(e)
		}
		return out, nil
	},
	"as_value": func(_ *planner.Call, a []any) (any, error) { return a[0], nil },
	// EXPLODE in a derived stream: the array, which the stream's task
	// explodes (planner/explode.go).
	planner.ExplodeFunc: func(_ *planner.Call, a []any) (any, error) { return a[0], nil },
}

var nestedExprFuncs = map[string]func(s *planner.Call, args []Expr) Expr{
	"array_contains": func(_ *planner.Call, args []Expr) Expr {
		return func(row catalog.Row, env *Env) (any, error) {
			a, x, err := evalPair(args[0], args[1], row, env)
			if a == nil || err != nil {
				return false, err
			}
			for _, e := range a.([]any) {
				if e == nil && x == nil || e != nil && x != nil && Compare(e, x) == 0 {
					return true, nil
				}
			}
			return false, nil
		}
	},
	"array_remove": func(_ *planner.Call, args []Expr) Expr {
		return func(row catalog.Row, env *Env) (any, error) {
			a, x, err := evalPair(args[0], args[1], row, env)
			if a == nil || err != nil {
				return nil, err
			}
			out := []any{}
			for _, e := range a.([]any) {
				if e == nil && x == nil || e != nil && x != nil && Compare(e, x) == 0 {
					continue
				}
				out = append(out, e)
			}
			return out, nil
		}
	},
	"array_concat": func(_ *planner.Call, args []Expr) Expr {
		return func(row catalog.Row, env *Env) (any, error) {
			a, b, err := evalPair(args[0], args[1], row, env)
			if err != nil || a == nil && b == nil {
				return nil, err
			}
			out := []any{}
			if a != nil {
				out = append(out, a.([]any)...)
			}
			if b != nil {
				out = append(out, b.([]any)...)
			}
			return out, nil
		}
	},
	"map_union": func(_ *planner.Call, args []Expr) Expr {
		return func(row catalog.Row, env *Env) (any, error) {
			a, b, err := evalPair(args[0], args[1], row, env)
			if err != nil || a == nil && b == nil {
				return nil, err
			}
			var entries []catalog.MapEntry
			if a != nil {
				entries = append(entries, a.(catalog.Map)...)
			}
			if b != nil {
				entries = append(entries, b.(catalog.Map)...) // the second map's values win
			}
			return catalog.NewMap(entries), nil
		}
	},
	"array_join": func(s *planner.Call, args []Expr) Expr {
		elem := s.Args[0].Type().Elem()
		return func(row catalog.Row, env *Env) (any, error) {
			vals, err := evalArgs(args, row, env)
			if err != nil || vals[0] == nil {
				return nil, err
			}
			sep := ","
			if len(vals) > 1 {
				sep, _ = vals[1].(string) // a NULL delimiter joins with nothing
			}
			parts := make([]string, len(vals[0].([]any)))
			for i, e := range vals[0].([]any) {
				if e == nil {
					parts[i] = "null" // as ksqlDB writes a NULL element
					continue
				}
				b, err := pgcodec.AppendText(nil, elem, e)
				if err != nil {
					return nil, err
				}
				parts[i] = string(b)
			}
			return strings.Join(parts, sep), nil
		}
	},
	"array_sort": func(_ *planner.Call, args []Expr) Expr {
		return func(row catalog.Row, env *Env) (any, error) {
			vals, err := evalArgs(args, row, env)
			if err != nil || vals[0] == nil {
				return nil, err
			}
			desc := false
			if len(vals) > 1 && vals[1] != nil {
				switch strings.ToUpper(strings.TrimSpace(vals[1].(string))) {
				case "ASC":
				case "DESC":
					desc = true
				default:
					return nil, pgerr.New(pgerr.InvalidParameterValue, "ARRAY_SORT sorts 'ASC' or 'DESC', not %q", vals[1])
				}
			}
			out := append([]any{}, vals[0].([]any)...)
			sort.SliceStable(out, func(i, j int) bool {
				a, b := out[i], out[j]
				switch {
				case a == nil:
					return false // NULLs at the end, either way
				case b == nil:
					return true
				case desc:
					return Compare(a, b) > 0
				}
				return Compare(a, b) < 0
			})
			return out, nil
		}
	},
	"slice": func(_ *planner.Call, args []Expr) Expr {
		return func(row catalog.Row, env *Env) (any, error) {
			vals, err := evalArgs(args, row, env)
			if err != nil || vals[0] == nil {
				return nil, err
			}
			a := vals[0].([]any)
			from, to := int64(1), int64(len(a))
			if vals[1] != nil {
				from = vals[1].(int64)
			}
			if vals[2] != nil {
				to = vals[2].(int64)
			}
			from, to = max(from, 1), min(to, int64(len(a)))
			if from > to {
				return []any{}, nil
			}
			return append([]any{}, a[from-1:to]...), nil
		}
	},
	"json_array_contains": func(_ *planner.Call, args []Expr) Expr {
		return func(row catalog.Row, env *Env) (any, error) {
			s, x, err := evalPair(args[0], args[1], row, env)
			if s == nil || err != nil {
				return false, err
			}
			v, perr := jsonb.ParseJSON(s.(string))
			if perr != nil || v.Kind != jsonb.Array {
				return false, nil
			}
			for _, e := range v.Elems {
				if jsonElemEquals(e, x) {
					return true, nil
				}
			}
			return false, nil
		}
	},
	"json_concat": func(_ *planner.Call, args []Expr) Expr {
		return func(row catalog.Row, env *Env) (any, error) {
			vals, err := evalArgs(args, row, env)
			if err != nil {
				return nil, err
			}
			docs := make([]jsonb.Value, len(vals))
			for i, v := range vals {
				if v == nil {
					return nil, nil
				}
				if docs[i], err = jsonb.ParseJSON(v.(string)); err != nil {
					return nil, nil
				}
			}
			return compactJSON(jsonConcat(docs)), nil
		}
	},
	"is_json_string": func(_ *planner.Call, args []Expr) Expr {
		return func(row catalog.Row, env *Env) (any, error) {
			v, err := args[0](row, env)
			if v == nil || err != nil {
				return false, err
			}
			_, perr := jsonb.ParseJSON(v.(string))
			return perr == nil, nil
		}
	},
	"to_json_string": func(s *planner.Call, args []Expr) Expr {
		t := s.Args[0].Type()
		return func(row catalog.Row, env *Env) (any, error) {
			v, err := args[0](row, env)
			if err != nil {
				return nil, err
			}
			j, err := pgcodec.NestedJSON(t, v)
			if err != nil {
				return nil, err
			}
			return compactJSON(j), nil
		}
	},
	planner.StructFunc: func(_ *planner.Call, args []Expr) Expr {
		return func(row catalog.Row, env *Env) (any, error) {
			vals, err := evalArgs(args, row, env)
			if err != nil {
				return nil, err
			}
			return catalog.Struct(vals), nil
		}
	},
	planner.MapFunc: func(_ *planner.Call, args []Expr) Expr {
		return func(row catalog.Row, env *Env) (any, error) {
			vals, err := evalArgs(args, row, env)
			if err != nil {
				return nil, err
			}
			entries := make([]catalog.MapEntry, 0, len(vals)/2)
			for i := 0; i+1 < len(vals); i += 2 {
				if vals[i] == nil {
					return nil, pgerr.New(pgerr.NullValueNotAllowedDataException, "a MAP key cannot be NULL")
				}
				entries = append(entries, catalog.MapEntry{Key: vals[i].(string), Value: vals[i+1]})
			}
			return catalog.NewMap(entries), nil
		}
	},
}

// arrayExtreme is ARRAY_MAX (dir 1) or ARRAY_MIN (-1): NULLs ignored,
// NULL when there is nothing else.
func arrayExtreme(a []any, dir int) any {
	var best any
	for _, e := range a {
		if e != nil && (best == nil || Compare(e, best)*dir > 0) {
			best = e
		}
	}
	return best
}

// jsonField is the last value of object v's key k (json keeps repeats;
// the last wins, as it does when read).
func jsonField(v jsonb.Value, k string) (jsonb.Value, bool) {
	for i := len(v.Keys) - 1; i >= 0; i-- {
		if v.Keys[i] == k {
			return v.Vals[i], true
		}
	}
	return jsonb.Value{}, false
}

// jsonElemEquals reports whether JSON_ARRAY_CONTAINS finds x in e: a
// number equal to a number, a string to a string, a boolean to a
// boolean, null to NULL.
func jsonElemEquals(e jsonb.Value, x any) bool {
	switch e.Kind {
	case jsonb.Null:
		return x == nil
	case jsonb.Bool:
		b, ok := x.(bool)
		return ok && b == e.Bool
	case jsonb.String:
		s, ok := x.(string)
		return ok && s == e.Str
	case jsonb.Number:
		switch x.(type) {
		case int64, float64, *apd.Decimal:
			n, ok := catalog.NewDecimal(e.Str)
			return ok && Compare(n, x) == 0
		}
	}
	return false
}

// jsonConcat is JSON_CONCAT: Postgres's || over jsonb, without jsonb's
// reordering: objects merged (the later values win, the keys in first
// appearance), else everything as arrays concatenated.
func jsonConcat(docs []jsonb.Value) jsonb.Value {
	objects := true
	for _, d := range docs {
		objects = objects && d.Kind == jsonb.Object
	}
	if objects {
		out := jsonb.Value{Kind: jsonb.Object}
		at := map[string]int{}
		for _, d := range docs {
			for i, k := range d.Keys {
				if j, ok := at[k]; ok {
					out.Vals[j] = d.Vals[i]
					continue
				}
				at[k] = len(out.Keys)
				out.Keys = append(out.Keys, k)
				out.Vals = append(out.Vals, d.Vals[i])
			}
		}
		return out
	}
	out := jsonb.Value{Kind: jsonb.Array, Elems: []jsonb.Value{}}
	for _, d := range docs {
		if d.Kind == jsonb.Array {
			out.Elems = append(out.Elems, d.Elems...)
		} else {
			out.Elems = append(out.Elems, d)
		}
	}
	return out
}

// compactJSON writes v as JSON without spaces, as ksqlDB's JSON
// functions do; a json value keeps its members as written.
func compactJSON(v jsonb.Value) string {
	var b bytes.Buffer
	writeCompact(&b, v)
	return b.String()
}

func writeCompact(b *bytes.Buffer, v jsonb.Value) {
	switch v.Kind {
	case jsonb.Null:
		b.WriteString("null")
	case jsonb.Bool:
		b.WriteString(strconv.FormatBool(v.Bool))
	case jsonb.Number:
		b.WriteString(v.Str)
	case jsonb.String:
		jsonb.WriteString(b, v.Str)
	case jsonb.Array:
		b.WriteByte('[')
		for i, e := range v.Elems {
			if i > 0 {
				b.WriteByte(',')
			}
			writeCompact(b, e)
		}
		b.WriteByte(']')
	case jsonb.Object:
		b.WriteByte('{')
		for i, k := range v.Keys {
			if i > 0 {
				b.WriteByte(',')
			}
			jsonb.WriteString(b, k)
			b.WriteByte(':')
			writeCompact(b, v.Vals[i])
		}
		b.WriteByte('}')
	}
}

// jsonPathStep is one step of a JSONPath: a key, or an index (>= 0).
type jsonPathStep struct {
	key   string
	index int
}

// parseJSONPath reads the JSONPath EXTRACTJSONFIELD takes: $ then .key,
// ['key'], ["key"] or [n] steps (wildcards and filters, which select
// several values, are not JSONPath EXTRACTJSONFIELD takes).
func parseJSONPath(p string) ([]jsonPathStep, error) {
	bad := func(why string) error {
		return pgerr.New(pgerr.InvalidParameterValue, "invalid JSONPath %q: %s", p, why).
			WithHint("EXTRACTJSONFIELD takes a path such as '$.a.b[0]' or '$[\"a key\"]'.")
	}
	s := strings.TrimSpace(p)
	if !strings.HasPrefix(s, "$") {
		return nil, bad("it does not start with $")
	}
	s = s[1:]
	var steps []jsonPathStep
	for s != "" {
		switch s[0] {
		case '.':
			s = s[1:]
			n := strings.IndexAny(s, ".[")
			if n < 0 {
				n = len(s)
			}
			key := s[:n]
			if key == "" || key == "*" {
				return nil, bad("an empty or wildcard key")
			}
			steps = append(steps, jsonPathStep{key: key, index: -1})
			s = s[n:]
		case '[':
			end := strings.IndexByte(s, ']')
			if end < 0 {
				return nil, bad("an unclosed [")
			}
			in := strings.TrimSpace(s[1:end])
			switch {
			case len(in) >= 2 && (in[0] == '\'' && in[len(in)-1] == '\'' || in[0] == '"' && in[len(in)-1] == '"'):
				steps = append(steps, jsonPathStep{key: in[1 : len(in)-1], index: -1})
			default:
				n, err := strconv.Atoi(in)
				if err != nil || n < 0 {
					return nil, bad("[" + in + "] is no key or index")
				}
				steps = append(steps, jsonPathStep{index: n})
			}
			s = s[end+1:]
		default:
			return nil, bad("unexpected " + strconv.Quote(s[:1]))
		}
	}
	return steps, nil
}

// lambdaValue is a compiled lambda with the row it runs over: call
// runs its body with the parameters' values appended to the row.
type lambdaValue struct {
	body Expr
	row  catalog.Row
	env  *Env
}

func (l *lambdaValue) call(params ...any) (any, error) {
	row := make(catalog.Row, 0, len(l.row)+len(params))
	row = append(append(row, l.row...), params...)
	return l.body(row, l.env)
}

// compileLambda compiles planner's Lambda and LambdaParam; nil for any
// other scalar.
func compileLambda(s planner.Scalar) Expr {
	switch s := s.(type) {
	case *planner.Lambda:
		body := Compile(s.Body)
		return func(row catalog.Row, env *Env) (any, error) {
			return &lambdaValue{body: body, row: row, env: env}, nil
		}
	case *planner.LambdaParam:
		back := s.Depth - s.Slot
		return func(row catalog.Row, _ *Env) (any, error) {
			i := len(row) - back
			if i < 0 {
				return nil, pgerr.New(pgerr.InternalError, "lambda parameter %s read outside its lambda", s.Name)
			}
			return row[i], nil
		}
	}
	return nil
}

func init() {
	nestedExprFuncs["transform"] = func(s *planner.Call, args []Expr) Expr {
		return lambdaCall(args, func(coll any, ls []*lambdaValue) (any, error) {
			if m, ok := coll.(catalog.Map); ok {
				entries := make([]catalog.MapEntry, len(m))
				for i, e := range m {
					k, err := ls[0].call(e.Key, e.Value)
					if err != nil {
						return nil, err
					}
					if k == nil {
						return nil, pgerr.New(pgerr.NullValueNotAllowedDataException, "TRANSFORM's key lambda gave a NULL key, which a MAP cannot hold")
					}
					v, err := ls[1].call(e.Key, e.Value)
					if err != nil {
						return nil, err
					}
					entries[i] = catalog.MapEntry{Key: k.(string), Value: v}
				}
				return catalog.NewMap(entries), nil
			}
			a := coll.([]any)
			out := make([]any, len(a))
			for i, e := range a {
				v, err := ls[0].call(e)
				if err != nil {
					return nil, err
				}
				out[i] = v
			}
			return out, nil
		})
	}
	nestedExprFuncs["filter"] = func(s *planner.Call, args []Expr) Expr {
		return lambdaCall(args, func(coll any, ls []*lambdaValue) (any, error) {
			if m, ok := coll.(catalog.Map); ok {
				out := catalog.Map{}
				for _, e := range m {
					keep, err := ls[0].call(e.Key, e.Value)
					if err != nil {
						return nil, err
					}
					if keep == true {
						out = append(out, e)
					}
				}
				return out, nil
			}
			out := []any{}
			for _, e := range coll.([]any) {
				keep, err := ls[0].call(e)
				if err != nil {
					return nil, err
				}
				if keep == true {
					out = append(out, e)
				}
			}
			return out, nil
		})
	}
	nestedExprFuncs["reduce"] = func(s *planner.Call, args []Expr) Expr {
		coll, init, fn := args[0], args[1], args[2]
		return func(row catalog.Row, env *Env) (any, error) {
			c, state, err := evalPair(coll, init, row, env)
			if c == nil || state == nil || err != nil {
				// ksqlDB: a NULL state reduces to NULL; so does a NULL
				// collection.
				return nil, err
			}
			lv, err := fn(row, env)
			if err != nil {
				return nil, err
			}
			l := lv.(*lambdaValue)
			if m, ok := c.(catalog.Map); ok {
				for _, e := range m {
					if state, err = l.call(state, e.Key, e.Value); err != nil {
						return nil, err
					}
				}
				return state, nil
			}
			for _, e := range c.([]any) {
				if state, err = l.call(state, e); err != nil {
					return nil, err
				}
			}
			return state, nil
		}
	}
}

// lambdaCall evaluates a collection (args[0]) and the lambdas after it,
// and runs fn over them; a NULL collection is NULL.
func lambdaCall(args []Expr, fn func(coll any, ls []*lambdaValue) (any, error)) Expr {
	return func(row catalog.Row, env *Env) (any, error) {
		c, err := args[0](row, env)
		if c == nil || err != nil {
			return nil, err
		}
		ls := make([]*lambdaValue, len(args)-1)
		for i, a := range args[1:] {
			v, err := a(row, env)
			if err != nil {
				return nil, err
			}
			ls[i] = v.(*lambdaValue)
		}
		return fn(c, ls)
	}
}
