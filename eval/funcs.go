package eval

import (
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/planner"
)

// compileCall compiles a scalar function; planner.bindScalarFunc has
// checked and coerced the arguments, so the implementations can assert
// types.
func compileCall(s *planner.Call) Expr {
	args := make([]Expr, len(s.Args))
	for i, a := range s.Args {
		args[i] = Compile(a)
	}
	t := s.T
	if e := compileNestedCall(s, args); e != nil {
		return e
	}
	switch s.Name {
	case "coalesce":
		return func(row catalog.Row, env *Env) (any, error) {
			for _, a := range args {
				v, err := a(row, env)
				if v != nil || err != nil {
					return v, err
				}
			}
			return nil, nil
		}
	case "concat":
		return func(row catalog.Row, env *Env) (any, error) {
			var b strings.Builder
			for _, a := range args {
				v, err := a(row, env)
				if err != nil {
					return nil, err
				}
				if v != nil {
					b.WriteString(v.(string))
				}
			}
			return b.String(), nil
		}
	case "greatest", "least":
		want := 1
		if s.Name == "least" {
			want = -1
		}
		return func(row catalog.Row, env *Env) (any, error) {
			var best any
			for _, a := range args {
				v, err := a(row, env)
				if err != nil {
					return nil, err
				}
				if v != nil && (best == nil || Compare(v, best) == want) {
					best = v
				}
			}
			return best, nil
		}
	case "nullif":
		return func(row catalog.Row, env *Env) (any, error) {
			a, err := args[0](row, env)
			if a == nil || err != nil {
				return a, err
			}
			b, err := args[1](row, env)
			if err != nil {
				return nil, err
			}
			if b != nil && Compare(a, b) == 0 {
				return nil, nil
			}
			return a, nil
		}
	case "now", "current_timestamp":
		return func(_ catalog.Row, env *Env) (any, error) { return env.Now, nil }
	case "version":
		return func(_ catalog.Row, env *Env) (any, error) { return env.Version, nil }
	case "current_database":
		return func(_ catalog.Row, env *Env) (any, error) { return env.Database, nil }
	case "current_schema":
		return func(catalog.Row, *Env) (any, error) { return "public", nil }
	case "current_user", "session_user":
		return func(_ catalog.Row, env *Env) (any, error) { return env.User, nil }
	case "current_setting":
		return func(row catalog.Row, env *Env) (any, error) {
			name, err := args[0](row, env)
			if name == nil || err != nil {
				return nil, err
			}
			missingOK := false
			if len(args) == 2 {
				m, err := args[1](row, env)
				if err != nil {
					return nil, err
				}
				missingOK = m == true
			}
			if env.Session != nil {
				if v, ok := env.Session.Setting(name.(string)); ok {
					return v, nil
				}
				if v, ok := ExtraSettings[strings.ToLower(name.(string))]; ok {
					return v, nil
				}
			}
			if missingOK {
				return nil, nil
			}
			return nil, pgerr.New(pgerr.UndefinedObject, "unrecognized configuration parameter %q", name)
		}
	case "set_config":
		return func(row catalog.Row, env *Env) (any, error) {
			vals := make([]any, 3)
			for i, a := range args {
				v, err := a(row, env)
				if err != nil {
					return nil, err
				}
				vals[i] = v
			}
			if vals[0] == nil {
				return nil, pgerr.New(pgerr.NullValueNotAllowedDataException, "SET requires parameter name")
			}
			if env.Session == nil {
				return nil, pgerr.New(pgerr.FeatureNotSupported, "set_config() needs a session")
			}
			value, _ := vals[1].(string)
			return env.Session.SetConfig(vals[0].(string), value, vals[2] == true)
		}
	case "has_table_privilege", "has_column_privilege", "has_any_column_privilege", "has_schema_privilege",
		"has_database_privilege", "has_function_privilege", "has_sequence_privilege", "has_type_privilege",
		"has_tablespace_privilege", "pg_has_role":
		return func(catalog.Row, *Env) (any, error) { return true, nil }
	case "pg_sleep":
		return func(row catalog.Row, env *Env) (any, error) {
			v, err := args[0](row, env)
			if v == nil || err != nil {
				return nil, err
			}
			t := time.NewTimer(time.Duration(v.(float64) * float64(time.Second)))
			defer t.Stop()
			ctx := env.Context()
			select {
			case <-t.C:
				return nil, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	case "pg_notify":
		// Not strict: a NULL channel is an empty one, which Notify
		// refuses; a NULL payload is an empty one.
		return func(row catalog.Row, env *Env) (any, error) {
			vals, err := EvalAll(args, row, env)
			if err != nil {
				return nil, err
			}
			n, ok := env.Session.(Notifier)
			if !ok {
				return nil, pgerr.New(pgerr.FeatureNotSupported, "pg_notify() needs a session")
			}
			channel, _ := vals[0].(string)
			payload, _ := vals[1].(string)
			return nil, n.Notify(channel, payload)
		}
	case "pg_backend_pid":
		return func(_ catalog.Row, env *Env) (any, error) { return int64(env.PID), nil }
	case "pg_cancel_backend", "pg_terminate_backend":
		return func(row catalog.Row, env *Env) (any, error) {
			v, err := args[0](row, env)
			if v == nil || err != nil {
				return nil, err
			}
			return signalBackend(env, s.Name, v.(int64))
		}
	}
	// The json, uuid and bytea functions first: md5 and octet_length
	// take bytea as well as text.
	if e := compileBlobCall(s, args); e != nil {
		return e
	}
	if mk := exprFuncs[s.Name]; mk != nil {
		return mk(s, args)
	}
	if e := compileCatalogCall(s, args); e != nil {
		return e
	}
	fn := strictFuncs[s.Name]
	if fn == nil {
		return func(catalog.Row, *Env) (any, error) {
			return nil, pgerr.New(pgerr.UndefinedFunction, "function %s does not exist", s.Name)
		}
	}
	// Strict functions return NULL when any argument is NULL.
	return func(row catalog.Row, env *Env) (any, error) {
		vals, err := strictArgs(args, row, env)
		if vals == nil || err != nil {
			return nil, err
		}
		return fn(t, vals)
	}
}

// exprFuncs compile the functions that are not strict or read the
// environment, from the call and its compiled arguments.
var exprFuncs = map[string]func(s *planner.Call, args []Expr) Expr{}

var strictFuncs = map[string]func(t catalog.Type, a []any) (any, error){
	"lower":       func(_ catalog.Type, a []any) (any, error) { return strings.ToLower(a[0].(string)), nil },
	"upper":       func(_ catalog.Type, a []any) (any, error) { return strings.ToUpper(a[0].(string)), nil },
	"length":      func(_ catalog.Type, a []any) (any, error) { return int64(utf8.RuneCountInString(a[0].(string))), nil },
	"char_length": func(_ catalog.Type, a []any) (any, error) { return int64(utf8.RuneCountInString(a[0].(string))), nil },
	"trim":        func(_ catalog.Type, a []any) (any, error) { return strings.Trim(a[0].(string), " "), nil },
	"ltrim":       func(_ catalog.Type, a []any) (any, error) { return strings.TrimLeft(a[0].(string), " "), nil },
	"rtrim":       func(_ catalog.Type, a []any) (any, error) { return strings.TrimRight(a[0].(string), " "), nil },
	"replace": func(_ catalog.Type, a []any) (any, error) {
		return strings.ReplaceAll(a[0].(string), a[1].(string), a[2].(string)), nil
	},
	"substr":    substr,
	"substring": substr,
	"abs": func(t catalog.Type, a []any) (any, error) {
		switch v := a[0].(type) {
		case int64:
			if v == math.MinInt64 {
				return nil, ErrOutOfRange
			}
			if t == catalog.Int && v == math.MinInt32 {
				return nil, ErrIntOutOfRange
			}
			if v < 0 {
				return -v, nil
			}
			return v, nil
		case float64:
			return math.Abs(v), nil
		}
		return nil, nil
	},
	"round": func(_ catalog.Type, a []any) (any, error) {
		f := a[0].(float64)
		if len(a) == 1 {
			return math.Round(f), nil
		}
		p := math.Pow(10, float64(a[1].(int64)))
		return math.Round(f*p) / p, nil
	},
	"floor":   func(_ catalog.Type, a []any) (any, error) { return math.Floor(a[0].(float64)), nil },
	"ceil":    func(_ catalog.Type, a []any) (any, error) { return math.Ceil(a[0].(float64)), nil },
	"ceiling": func(_ catalog.Type, a []any) (any, error) { return math.Ceil(a[0].(float64)), nil },
	"sqrt": func(_ catalog.Type, a []any) (any, error) {
		f := a[0].(float64)
		if f < 0 {
			return nil, pgerr.New(pgerr.InvalidArgumentForPowerFunction, "cannot take square root of a negative number")
		}
		return math.Sqrt(f), nil
	},
}

// substr is Postgres's substr(s, from [, count]) with 1-based from: the
// characters at positions from .. from+count-1 that exist. The end is
// computed with saturation, so huge counts do not wrap around.
func substr(_ catalog.Type, a []any) (any, error) {
	r := []rune(a[0].(string))
	from := a[1].(int64)
	end := int64(len(r)) + 1 // exclusive, 1-based
	if len(a) == 3 {
		n := a[2].(int64)
		if n < 0 {
			return nil, pgerr.New(pgerr.SubstringError, "negative substring length not allowed")
		}
		if from <= 0 || n <= math.MaxInt64-from {
			end = min(end, from+n)
		}
	}
	from = max(from, 1)
	if from >= end {
		return "", nil
	}
	return string(r[from-1 : end-1]), nil
}

// ExtraSettings are read-only server settings current_setting() knows
// besides the session's own (Grafana and others probe them).
var ExtraSettings = map[string]string{
	"server_version_num":    "150000",
	"max_identifier_length": "63",
	"block_size":            "8192",
	"max_connections":       "100",
	"lc_collate":            "C.UTF-8",
	"lc_ctype":              "C.UTF-8",
	"data_directory_mode":   "0700",
}

// signalBackend runs pg_cancel_backend or pg_terminate_backend: true when
// a session with that PID was signalled, false when there is none.
func signalBackend(env *Env, name string, pid int64) (any, error) {
	if env.Backends == nil || pid <= 0 || pid > math.MaxInt32 {
		return false, nil
	}
	if name == "pg_cancel_backend" {
		return env.Backends.Cancel(int32(pid)), nil
	}
	return env.Backends.Terminate(int32(pid)), nil
}
