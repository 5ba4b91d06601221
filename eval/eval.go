package eval

import (
	"context"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cockroachdb/apd/v3"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/numeric"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/pgcodec"
	"github.com/basindb/basin/planner"
	"github.com/basindb/basin/sql"
)

// Env is the evaluation context: what expressions read besides the row
// (parameters, the session, the statement's start and context). How a
// pull query may read the stores is apart (the pull engine's
// ReadOptions).
type Env struct {
	Params   []any
	User     string
	Database string
	Version  string
	PID      int32
	// Now is the statement's start time (now() is stable in a statement).
	Now time.Time
	// Session reads and changes the session's settings for
	// current_setting() and set_config(); nil outside a session.
	Session Session
	// Backends signals other sessions; nil when there are none.
	Backends Backends
	// QueryMemory is basin.query_memory: the most a pull query may hold
	// in rows its operators buffer (sorts, groups, DISTINCT, joins,
	// windows, set operations, subqueries' results, rows read), 53200
	// past it; 0 is none.
	QueryMemory int64
	// Loc is the session's TimeZone, which casts to and from
	// TIMESTAMPTZ and its arithmetic read; nil is UTC (Location).
	Loc *time.Location

	// ctx is the context of the statement being evaluated, for
	// functions that wait (pg_sleep) and loops that check for a cancel.
	// The engine running the statement sets it from its ctx parameter
	// (withContext): callers never store one here.
	ctx context.Context
	// Scope is set while a catalog Scope runs (Scope.go): its catalog
	// snapshot and the rows of the queries enclosing a subquery.
	Scope *Scope
	// Init are the values of the subqueries a relation's read was given
	// (planner.InitRef reads them), set on the env of that read.
	Init []any
}

// Context is the context of the statement env evaluates; never nil.
func (env *Env) Context() context.Context {
	if env == nil || env.ctx == nil {
		return context.Background()
	}
	return env.ctx
}

// WithContext returns a copy of env evaluating under ctx (an empty Env
// when env is nil). The engines call it with the ctx they were given.
func (env *Env) WithContext(ctx context.Context) Env {
	var e Env
	if env != nil {
		e = *env
	}
	e.ctx = ctx
	return e
}

// Scope is what a catalog query's expressions see besides their row.
type Scope struct {
	// Snap returns the catalog snapshot the query reads, made when first
	// asked for: most queries never read the catalog.
	Snap func() *catalog.PGSnapshot
	// Outer holds the rows of the queries enclosing a subquery,
	// innermost last (planner.OuterRef counts from there).
	Outer []catalog.Row
	// Mem counts what the operators of the query (its subqueries'
	// included) hold, against basin.query_memory: each charges the rows
	// and state it buffers and releases them when its consumer is done
	// (query/memory.go).
	Mem *Memory
	// Read returns every row of a table, view or stream a query reads
	// (the pull plan of a planner.RelationRel, given as any), with init
	// the values of the RelationRel's Init; nil where none can be read.
	Read func(ctx context.Context, scan any, init []any) ([]catalog.Row, error)
	// Work holds, by planner.WorkTableRel.ID, the rows the last round of
	// each recursive CTE being run added (query.recursiveOp).
	Work map[int][]catalog.Row
}

// WithOuter returns env for a subquery run for row.
func (env *Env) WithOuter(row catalog.Row) *Env {
	e := *env
	q := *env.Scope
	q.Outer = append(slices.Clip(env.Scope.Outer), row)
	e.Scope = &q
	return &e
}

// Session is a session as expressions see it: its settings, for
// current_setting() and set_config(), and its catalog, for catalog
// queries.
type Session interface {
	// Setting returns a setting's value as SHOW shows it.
	Setting(name string) (string, bool)
	// SetConfig sets a setting (for the transaction when local) and
	// returns its new value.
	SetConfig(name, value string, local bool) (string, error)
	// Memo returns what MemoPut kept for key since the settings last
	// changed. A value kept is derived from the settings and from what
	// key names, which must not change.
	Memo(key any) (any, bool)
	MemoPut(key, value any)
	// Snapshot is the catalog as a statement that started at started
	// sees it, for catalog queries.
	Snapshot(started time.Time) *catalog.PGSnapshot
}

// Notifier is what a Session that has LISTEN/NOTIFY adds:
// pg_notify and pg_listening_channels.
type Notifier interface {
	// Notify queues a notification, sent when the session's
	// transaction commits.
	Notify(channel, payload string) error
	// ListeningChannels returns the channels the session listens on.
	ListeningChannels() []string
}

// Backends signals other sessions of the node, for pg_cancel_backend and
// pg_terminate_backend. Each reports whether a session with that PID
// exists.
type Backends interface {
	Cancel(pid int32) bool
	Terminate(pid int32) bool
}

// SessionSnapshot makes the catalog snapshot of the statement env runs:
// its session's, or an empty catalog's outside a session.
func (env *Env) SessionSnapshot() *catalog.PGSnapshot {
	if env.Session == nil {
		return catalog.New().PGSnapshot(catalog.SessionInfo{User: env.User, Database: env.Database, PID: env.PID})
	}
	return env.Session.Snapshot(env.Now)
}

// Expr is a compiled expression.
type Expr func(row catalog.Row, env *Env) (any, error)

// Compile turns a bound expression into a closure. Compiling once per
// query keeps the per-row cost to the operations themselves.
func Compile(s planner.Scalar) Expr {
	switch s := s.(type) {
	case *planner.ColRef:
		i := s.Idx
		return func(row catalog.Row, _ *Env) (any, error) { return row[i], nil }
	case *planner.Const:
		v := s.V
		return func(catalog.Row, *Env) (any, error) { return v, nil }
	case *planner.ParamRef:
		n, t := s.N, s.T
		return func(_ catalog.Row, env *Env) (any, error) {
			if env == nil || n > len(env.Params) {
				return nil, pgerr.New(pgerr.UndefinedParameter, "there is no parameter $%d", n)
			}
			v := env.Params[n-1]
			if v == nil || t == catalog.Unknown {
				return v, nil
			}
			if s, ok := v.(string); ok && t == catalog.TimestampTZ {
				return pgcodec.ParseTimestampTZ(s, env.Location())
			}
			return planner.ConvertValue(v, t)
		}
	case *planner.Unary:
		x := Compile(s.X)
		if s.Op == "NOT" {
			return func(row catalog.Row, env *Env) (any, error) {
				v, err := x(row, env)
				if v == nil || err != nil {
					return nil, err
				}
				return !v.(bool), nil
			}
		}
		isInt := s.T == catalog.Int
		return func(row catalog.Row, env *Env) (any, error) {
			v, err := x(row, env)
			if v == nil || err != nil {
				return nil, err
			}
			switch v := v.(type) {
			case int64:
				if v == math.MinInt64 {
					return nil, ErrOutOfRange
				}
				if isInt && v == math.MinInt32 {
					return nil, ErrIntOutOfRange
				}
				return -v, nil
			case float64:
				return -v, nil
			case catalog.IntervalVal:
				return negateInterval(v)
			case *apd.Decimal:
				return numeric.Neg(v), nil
			}
			return nil, pgerr.New(pgerr.DatatypeMismatch, "cannot negate %T", v)
		}
	case *planner.Binary:
		if planner.IsDatetimeArith(s) {
			return compileDatetimeArith(s)
		}
		return compileBinary(s)
	case *planner.IsNull:
		x, not := Compile(s.X), s.Not
		return func(row catalog.Row, env *Env) (any, error) {
			v, err := x(row, env)
			if err != nil {
				return nil, err
			}
			return (v == nil) != not, nil
		}
	case *planner.In:
		x := Compile(s.X)
		set, constNull, rest := inSet(s.List)
		list := make([]Expr, len(rest))
		for i, l := range rest {
			list[i] = Compile(l)
		}
		not := s.Not
		return func(row catalog.Row, env *Env) (any, error) {
			v, err := x(row, env)
			if v == nil || err != nil {
				return nil, err
			}
			if set.has(v) {
				return !not, nil
			}
			sawNull := constNull
			for _, l := range list {
				w, err := l(row, env)
				if err != nil {
					return nil, err
				}
				if w == nil {
					sawNull = true
					continue
				}
				if Compare(v, w) == 0 {
					return !not, nil
				}
			}
			if sawNull {
				return nil, nil
			}
			return not, nil
		}
	case *planner.Cast:
		x, t := Compile(s.X), s.T
		if from := s.X.Type(); from.HasNested() || t.HasNested() {
			return func(row catalog.Row, env *Env) (any, error) {
				v, err := x(row, env)
				if v == nil || err != nil {
					return nil, err
				}
				return planner.ConvertNested(v, from, t)
			}
		}
		if from := s.X.Type(); planner.IsDatetime(from) || planner.IsDatetime(t) {
			return compileDatetimeCast(x, from, t)
		}
		if s.Precision > 0 {
			p, sc := s.Precision, s.Scale
			return func(row catalog.Row, env *Env) (any, error) {
				v, err := x(row, env)
				if v == nil || err != nil {
					return nil, err
				}
				return planner.ConvertTypmod(v, t, p, sc)
			}
		}
		return func(row catalog.Row, env *Env) (any, error) {
			v, err := x(row, env)
			if v == nil || err != nil {
				return nil, err
			}
			return planner.ConvertValue(v, t)
		}
	case *planner.Case:
		type arm struct{ cond, res Expr }
		arms := make([]arm, len(s.Arms))
		for i, a := range s.Arms {
			arms[i] = arm{Compile(a.Cond), Compile(a.Result)}
		}
		var els Expr
		if s.Else != nil {
			els = Compile(s.Else)
		}
		return func(row catalog.Row, env *Env) (any, error) {
			for _, a := range arms {
				c, err := a.cond(row, env)
				if err != nil {
					return nil, err
				}
				if c == true {
					return a.res(row, env)
				}
			}
			if els == nil {
				return nil, nil
			}
			return els(row, env)
		}
	case *planner.Call:
		return compileCall(s)
	case *planner.InitRef:
		i := s.I
		return func(_ catalog.Row, env *Env) (any, error) {
			if i >= len(env.Init) {
				return nil, pgerr.New(pgerr.InternalError, "%s read without its subquery's value", s)
			}
			return env.Init[i], nil
		}
	}
	if e := compileSystemExpr(s); e != nil {
		return e
	}
	if e := compileLambda(s); e != nil {
		return e
	}
	if extension != nil {
		if e := extension(s); e != nil {
			return e
		}
	}
	return func(catalog.Row, *Env) (any, error) {
		return nil, pgerr.New(pgerr.InternalError, "cannot evaluate %T", s)
	}
}

// extension compiles the scalars Compile does not know: subqueries and
// references to an enclosing query's row, which the relational engine
// compiles with its operators. nil for any other scalar.
var extension func(planner.Scalar) Expr

// Extend makes Compile hand the scalars it does not know to f; the
// relational engine calls it once, from its package's init.
func Extend(f func(planner.Scalar) Expr) { extension = f }

var (
	ErrOutOfRange    = pgerr.New(pgerr.NumericValueOutOfRange, "bigint out of range")
	ErrIntOutOfRange = pgerr.New(pgerr.NumericValueOutOfRange, "integer out of range")
	errDivByZero     = pgerr.New(pgerr.DivisionByZero, "division by zero")
)

// evalPair evaluates an operator's two operands over row.
func evalPair(l, r Expr, row catalog.Row, env *Env) (a, b any, err error) {
	if a, err = l(row, env); err != nil {
		return nil, nil, err
	}
	b, err = r(row, env)
	return a, b, err
}

func compileBinary(s *planner.Binary) Expr {
	l, r := Compile(s.L), Compile(s.R)
	if e := compileBlobBinary(s, l, r); e != nil {
		return e
	}
	switch s.Op {
	case "AND":
		return func(row catalog.Row, env *Env) (any, error) {
			a, err := l(row, env)
			if err != nil {
				return nil, err
			}
			if a == false {
				return false, nil
			}
			b, err := r(row, env)
			if err != nil {
				return nil, err
			}
			if b == false {
				return false, nil
			}
			if a == nil || b == nil {
				return nil, nil
			}
			return true, nil
		}
	case "OR":
		return func(row catalog.Row, env *Env) (any, error) {
			a, err := l(row, env)
			if err != nil {
				return nil, err
			}
			if a == true {
				return true, nil
			}
			b, err := r(row, env)
			if err != nil {
				return nil, err
			}
			if b == true {
				return true, nil
			}
			if a == nil || b == nil {
				return nil, nil
			}
			return false, nil
		}
	}
	op := s.Op
	t := s.T
	return func(row catalog.Row, env *Env) (any, error) {
		a, b, err := evalPair(l, r, row, env)
		if err != nil {
			return nil, err
		}
		if a == nil || b == nil {
			return nil, nil
		}
		return BinaryOp(op, t, a, b)
	}
}

func BinaryOp(op string, t catalog.Type, a, b any) (any, error) {
	switch op {
	case "=":
		return Compare(a, b) == 0, nil
	case "<>":
		return Compare(a, b) != 0, nil
	case "<":
		return Compare(a, b) < 0, nil
	case "<=":
		return Compare(a, b) <= 0, nil
	case ">":
		return Compare(a, b) > 0, nil
	case ">=":
		return Compare(a, b) >= 0, nil
	case "||":
		return a.(string) + b.(string), nil
	case "LIKE":
		return Like(a.(string), b.(string), false), nil
	case "ILIKE":
		return Like(a.(string), b.(string), true), nil
	case "NOT LIKE":
		return !Like(a.(string), b.(string), false), nil
	case "NOT ILIKE":
		return !Like(a.(string), b.(string), true), nil
	}
	if t == catalog.Decimal {
		return decimalOp(op, a, b)
	}
	if t == catalog.Double {
		x, y := a.(float64), b.(float64)
		switch op {
		case "+":
			return checkFloat(x+y, x, y, false)
		case "-":
			return checkFloat(x-y, x, y, false)
		case "*":
			return checkFloat(x*y, x, y, x != 0 && y != 0)
		case "/":
			if y == 0 {
				return nil, errDivByZero
			}
			return checkFloat(x/y, x, y, x != 0)
		case "%":
			if y == 0 {
				return nil, errDivByZero
			}
			return math.Mod(x, y), nil
		}
	}
	x, y := a.(int64), b.(int64)
	var z int64
	switch op {
	case "+":
		z = x + y
		if (z > x) != (y > 0) {
			return nil, ErrOutOfRange
		}
	case "-":
		z = x - y
		if (z < x) != (y > 0) {
			return nil, ErrOutOfRange
		}
	case "*":
		if x != 0 && y != 0 {
			z = x * y
			if z/y != x || (x == -1 && y == math.MinInt64) || (y == -1 && x == math.MinInt64) {
				return nil, ErrOutOfRange
			}
		}
	case "/":
		if y == 0 {
			return nil, errDivByZero
		}
		if x == math.MinInt64 && y == -1 {
			return nil, ErrOutOfRange
		}
		z = x / y
	case "%":
		if y == 0 {
			return nil, errDivByZero
		}
		if y == -1 {
			return int64(0), nil
		}
		z = x % y
	default:
		return nil, pgerr.New(pgerr.UndefinedFunction, "operator does not exist: %s", op)
	}
	if t == catalog.Int && (z > math.MaxInt32 || z < math.MinInt32) {
		return nil, ErrIntOutOfRange
	}
	return z, nil
}

// checkFloat is Postgres's float8 overflow check: a result that is
// infinite from finite operands overflowed, and one that is zero when
// nonZero says it cannot be underflowed.
func checkFloat(z, x, y float64, nonZero bool) (any, error) {
	if math.IsInf(z, 0) && !math.IsInf(x, 0) && !math.IsInf(y, 0) {
		return nil, pgerr.New(pgerr.NumericValueOutOfRange, "value out of range: overflow")
	}
	if z == 0 && nonZero && !math.IsInf(x, 0) && !math.IsInf(y, 0) {
		return nil, pgerr.New(pgerr.NumericValueOutOfRange, "value out of range: underflow")
	}
	return z, nil
}

// Compare orders two non-NULL values of the same type: -1, 0 or 1. Mixed
// int64/float64 compare numerically. NaN sorts above every other double,
// as in Postgres.
func Compare(a, b any) int {
	if c, ok := compareDecimal(a, b); ok {
		return c
	}
	switch x := a.(type) {
	case int64:
		switch y := b.(type) {
		case int64:
			return cmp3(x < y, x > y)
		case float64:
			return compareFloat(float64(x), y)
		}
	case float64:
		switch y := b.(type) {
		case float64:
			return compareFloat(x, y)
		case int64:
			return compareFloat(x, float64(y))
		}
	case string:
		if y, ok := b.(string); ok {
			return strings.Compare(x, y)
		}
	case bool:
		if y, ok := b.(bool); ok {
			return cmp3(!x && y, x && !y)
		}
	case time.Time:
		if y, ok := b.(time.Time); ok {
			return x.Compare(y)
		}
	}
	if c, ok := compareDatetime(a, b); ok {
		return c
	}
	if c, ok := compareNested(a, b); ok {
		return c
	}
	return compareBlob(a, b)
}

// compareNested orders arrays, structs and maps as Postgres orders arrays
// and records: element by element (a struct's fields in order, a map's
// keys and then values in key order), a NULL element after every other,
// and a sequence before the longer ones it starts.
func compareNested(a, b any) (int, bool) {
	var x, y []any
	switch av := a.(type) {
	case []any:
		bv, ok := b.([]any)
		if !ok {
			return 0, false
		}
		x, y = av, bv
	case catalog.Struct:
		bv, ok := b.(catalog.Struct)
		if !ok {
			return 0, false
		}
		x, y = av, bv
	case catalog.Map:
		bv, ok := b.(catalog.Map)
		if !ok {
			return 0, false
		}
		for i := 0; i < len(av) && i < len(bv); i++ {
			if c := strings.Compare(av[i].Key, bv[i].Key); c != 0 {
				return c, true
			}
			if c := CompareNullable(av[i].Value, bv[i].Value, false); c != 0 {
				return c, true
			}
		}
		return cmp3(len(av) < len(bv), len(av) > len(bv)), true
	default:
		return 0, false
	}
	for i := 0; i < len(x) && i < len(y); i++ {
		if c := CompareNullable(x[i], y[i], false); c != 0 {
			return c, true
		}
	}
	return cmp3(len(x) < len(y), len(x) > len(y)), true
}

func cmp3(less, greater bool) int {
	switch {
	case less:
		return -1
	case greater:
		return 1
	}
	return 0
}

func compareFloat(x, y float64) int {
	xn, yn := x != x, y != y
	switch {
	case xn && yn:
		return 0
	case xn:
		return 1
	case yn:
		return -1
	}
	return cmp3(x < y, x > y)
}

// CompareNullable orders values with NULL placement: nullsFirst puts NULL
// before every value.
func CompareNullable(a, b any, nullsFirst bool) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		if nullsFirst {
			return -1
		}
		return 1
	case b == nil:
		if nullsFirst {
			return 1
		}
		return -1
	}
	return Compare(a, b)
}

// Like matches s against a SQL LIKE pattern (% and _, backslash escapes).
func Like(s, pattern string, fold bool) bool {
	if fold {
		s, pattern = strings.ToLower(s), strings.ToLower(pattern)
	}
	return likeMatch(s, pattern)
}

func likeMatch(s, p string) bool {
	for len(p) > 0 {
		c, n := utf8.DecodeRuneInString(p)
		switch c {
		case '%':
			p = p[n:]
			for len(p) > 0 && p[0] == '%' {
				p = p[1:]
			}
			if p == "" {
				return true
			}
			for i := 0; i <= len(s); {
				if likeMatch(s[i:], p) {
					return true
				}
				if i == len(s) {
					break
				}
				_, m := utf8.DecodeRuneInString(s[i:])
				i += m
			}
			return false
		case '_':
			if s == "" {
				return false
			}
			_, m := utf8.DecodeRuneInString(s)
			s, p = s[m:], p[n:]
		default:
			if c == '\\' && len(p) > n {
				p = p[n:]
				c, n = utf8.DecodeRuneInString(p)
			}
			sc, m := utf8.DecodeRuneInString(s)
			if s == "" || sc != c {
				return false
			}
			s, p = s[m:], p[n:]
		}
	}
	return s == ""
}

// EvalValue evaluates an INSERT value as type t.
func EvalValue(e sql.Expr, t catalog.Type, env *Env) (any, error) {
	s, err := planner.BindValue(e, t)
	if err != nil {
		return nil, err
	}
	return Compile(s)(nil, env)
}

// Truthy reports whether a filter result keeps the row (NULL does not).
func Truthy(v any) bool { return v == true }

// EvalAll evaluates each expression over row, in order.
func EvalAll(exprs []Expr, row catalog.Row, env *Env) (catalog.Row, error) {
	out := make(catalog.Row, len(exprs))
	for i, e := range exprs {
		v, err := e(row, env)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// inValues is the constants of an IN list whose equality is Go's (all
// integers, or all strings), as a set: a long list costs one look-up per
// row, not one comparison per value (60k keys in a WHERE once cost the
// square of that).
type inValues struct {
	ints map[int64]struct{}
	strs map[string]struct{}
}

// has reports whether v is one of the set's values.
func (s inValues) has(v any) bool {
	switch v := v.(type) {
	case int64:
		_, ok := s.ints[v]
		return ok
	case string:
		_, ok := s.strs[v]
		return ok
	case float64:
		// Compare's equality of a float and an integer is not the map's
		// (rare: the list's type is the common one).
		for w := range s.ints {
			if Compare(v, w) == 0 {
				return true
			}
		}
	}
	return false
}

// inSet splits an IN list into the set of its integer and string
// constants, whether it holds a NULL constant, and the rest, compared
// one by one. A short list is all rest: a set pays only past a few
// values.
func inSet(list []planner.Scalar) (set inValues, null bool, rest []planner.Scalar) {
	if len(list) < 8 {
		return set, false, list
	}
	for _, l := range list {
		c, ok := l.(*planner.Const)
		if !ok {
			rest = append(rest, l)
			continue
		}
		switch v := c.V.(type) {
		case nil:
			null = true
		case int64:
			if set.ints == nil {
				set.ints = make(map[int64]struct{})
			}
			set.ints[v] = struct{}{}
		case string:
			if set.strs == nil {
				set.strs = make(map[string]struct{})
			}
			set.strs[v] = struct{}{}
		default:
			rest = append(rest, l)
		}
	}
	return set, null, rest
}
