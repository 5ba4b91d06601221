package planner

import (
	"time"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/pgcodec"
	"github.com/basindb/basin/sql"
)

// Typing of the date and time types DATE, TIME, TIMESTAMP, TIMESTAMPTZ
// and INTERVAL: which mix in comparisons, which cast to which, and the
// operators between them, as PostgreSQL 15's pg_operator and pg_cast
// have them. The operations themselves are eval's (eval/datetime.go);
// those whose result depends on the session's TimeZone (text to and from
// TIMESTAMPTZ, TIMESTAMP to TIMESTAMPTZ and back, adding months or days
// to a TIMESTAMPTZ) are never folded here, as the plan does not know the
// zone: they run with eval.Env's.

// IsDatetime reports whether t is one of the date and time types.
func IsDatetime(t catalog.Type) bool {
	switch t {
	case catalog.Date, catalog.Time, catalog.Timestamp, catalog.TimestampTZ, catalog.Interval:
		return true
	}
	return false
}

// isInstant reports whether t is a point on the time line: DATE,
// TIMESTAMP, TIMESTAMPTZ, which compare with each other.
func isInstant(t catalog.Type) bool {
	return t == catalog.Date || t == catalog.Timestamp || t == catalog.TimestampTZ
}

// datetimeCommon is commonType for two different date and time types:
// DATE < TIMESTAMP < TIMESTAMPTZ, each converting implicitly to the
// next, TIME to INTERVAL.
func datetimeCommon(lt, rt catalog.Type) (catalog.Type, bool) {
	switch {
	case isInstant(lt) && isInstant(rt):
		if lt == catalog.TimestampTZ || rt == catalog.TimestampTZ {
			return catalog.TimestampTZ, true
		}
		return catalog.Timestamp, true
	case lt == catalog.Time && rt == catalog.Interval, lt == catalog.Interval && rt == catalog.Time:
		return catalog.Interval, true
	}
	return catalog.Unknown, false
}

// datetimeImplicit reports whether a value of from converts to to
// without a cast being written (pg_cast's implicit casts).
func datetimeImplicit(from, to catalog.Type) bool {
	switch from {
	case catalog.Date:
		return to == catalog.Timestamp || to == catalog.TimestampTZ
	case catalog.Timestamp:
		return to == catalog.TimestampTZ
	case catalog.Time:
		return to == catalog.Interval
	}
	return false
}

// datetimeCastable reports whether from casts to to, either being a
// date or time type.
func datetimeCastable(from, to catalog.Type) bool {
	switch {
	case from == to, from == catalog.Varchar, to == catalog.Varchar, from == catalog.Unknown:
		return true
	case isInstant(from) && isInstant(to):
		return true
	case (from == catalog.Timestamp || from == catalog.TimestampTZ) && to == catalog.Time:
		return true
	case from == catalog.Interval && to == catalog.Time, from == catalog.Time && to == catalog.Interval:
		return true
	}
	return false
}

// zoneDependent reports whether a cast from from to to reads the
// session's TimeZone.
func zoneDependent(from, to catalog.Type) bool {
	if from == to {
		return false
	}
	switch {
	case to == catalog.TimestampTZ:
		return from != catalog.Interval
	case from == catalog.TimestampTZ:
		return to == catalog.Varchar || to == catalog.Date || to == catalog.Time || to == catalog.Timestamp
	}
	return false
}

// goType is the type a value's Go type stands for, a time.Time being
// a TIMESTAMP.
func goType(v any) catalog.Type {
	switch v.(type) {
	case string:
		return catalog.Varchar
	case catalog.DateVal:
		return catalog.Date
	case catalog.TimeOfDay:
		return catalog.Time
	case catalog.IntervalVal:
		return catalog.Interval
	case time.Time:
		return catalog.Timestamp
	case int64:
		return catalog.BigInt
	case float64:
		return catalog.Double
	case bool:
		return catalog.Boolean
	}
	return catalog.Unknown
}

// convertDatetime is ConvertValue for the date and time types: ok is
// false when neither v nor t is one of DATE, TIME, TIMESTAMPTZ and
// INTERVAL. TIMESTAMPTZ text is read in UTC; a cast at run time reads it
// in the session's zone (CastValue).
func convertDatetime(v any, t catalog.Type) (any, bool, error) {
	from := goType(v)
	if !pgcodec.IsDatetime(t) && !pgcodec.IsDatetime(from) {
		return nil, false, nil
	}
	out, err := CastValue(v, from, t, time.UTC)
	return out, true, err
}

// CastValue converts a non-NULL value of type from to type to, as a cast
// does in a session whose TimeZone is loc (nil is UTC).
func CastValue(v any, from, to catalog.Type, loc *time.Location) (any, error) {
	if loc == nil {
		loc = time.UTC
	}
	if from == to {
		return v, nil
	}
	cannot := func() (any, error) {
		return nil, pgerr.New(pgerr.CannotCoerce, "cannot cast type %s to %s", sqlName(from), sqlName(to))
	}
	if s, ok := v.(string); ok && pgcodec.IsDatetime(to) {
		out, _, err := pgcodec.ParseText(to, s, loc)
		return out, err
	}
	if to == catalog.Varchar && pgcodec.IsDatetime(from) {
		out, err := pgcodec.AppendTextIn(nil, from, v, loc)
		if err != nil {
			return nil, err
		}
		return string(out), nil
	}
	if !pgcodec.IsDatetime(from) && !pgcodec.IsDatetime(to) {
		return ConvertValue(v, to)
	}
	switch x := v.(type) {
	case catalog.DateVal:
		switch to {
		case catalog.Timestamp:
			return x.Time(), nil
		case catalog.TimestampTZ:
			return pgcodec.InZone(x.Time(), loc), nil
		}
	case catalog.TimeOfDay:
		if to == catalog.Interval {
			return catalog.IntervalVal{Micros: int64(x)}, nil
		}
	case catalog.IntervalVal:
		if to == catalog.Time {
			const day = int64(24 * time.Hour / time.Microsecond)
			us := x.Micros % day
			if us < 0 {
				us += day
			}
			return catalog.TimeOfDay(us), nil
		}
	case time.Time:
		wall := x
		switch from {
		case catalog.TimestampTZ:
			wall = pgcodec.WallClock(x, loc)
		case catalog.Timestamp:
			if to == catalog.TimestampTZ {
				return pgcodec.InZone(x, loc), nil
			}
		}
		switch to {
		case catalog.Timestamp:
			return wall, nil
		case catalog.Date:
			return catalog.DateOf(wall), nil
		case catalog.Time:
			h, m, s := wall.Clock()
			return catalog.TimeOfDay(int64(h)*3600e6 + int64(m)*60e6 + int64(s)*1e6 + int64(wall.Nanosecond()/1000)), nil
		}
	}
	return cannot()
}

// castDatetimeConst is castTo for a constant where a date or time type
// is involved: a cast that reads the session's zone is checked (so bad
// text fails at plan time) but left to run. ok is false when no such
// type is involved.
func castDatetimeConst(c *Const, t catalog.Type, pos int) (Scalar, bool, error) {
	from := c.T
	if from == catalog.Unknown {
		from = goType(c.V)
	}
	if !pgcodec.IsDatetime(t) && !pgcodec.IsDatetime(from) {
		return nil, false, nil
	}
	if !datetimeCastable(from, t) && !(from.Numeric() && t.Numeric()) {
		return nil, true, pgerr.New(pgerr.CannotCoerce, "cannot cast type %s to %s", sqlName(from), sqlName(t)).WithPosition(pos)
	}
	v, err := CastValue(c.V, from, t, time.UTC)
	if err != nil {
		return nil, true, pgerr.Wrap(err, pgerr.InvalidDatetimeFormat).WithPosition(pos)
	}
	if zoneDependent(from, t) {
		return &Cast{X: c, T: t}, true, nil
	}
	return &Const{V: v, T: t}, true, nil
}

// untypedFor is the type an untyped literal or parameter takes opposite
// a value of type other in op, as Postgres's operator resolution picks
// it (an unknown side first assumed of the other side's type, else the
// one operator that fits). ok is false when Postgres finds the operator
// ambiguous.
func untypedFor(op string, other catalog.Type) (catalog.Type, bool) {
	switch op {
	case "*", "/":
		if other == catalog.Interval {
			return catalog.Double, true
		}
		return catalog.Interval, true
	case "-":
		return other, true
	case "+":
		switch other {
		case catalog.Timestamp, catalog.TimestampTZ, catalog.Time, catalog.Interval:
			return catalog.Interval, true
		}
	}
	return catalog.Unknown, false
}

// bindDatetimeArith binds + - * / where a side is a date or time type;
// ok is false when neither is.
func (b *binder) bindDatetimeArith(op string, l, r Scalar, pos int) (Scalar, bool, error) {
	switch op {
	case "+", "-", "*", "/":
	default:
		return nil, false, nil
	}
	lt, rt := l.Type(), r.Type()
	if !IsDatetime(lt) && !IsDatetime(rt) {
		return nil, false, nil
	}
	if !IsDatetime(lt) && (lt == catalog.Unknown || isUntypedLiteral(l)) {
		t, ok := untypedFor(op, rt)
		if !ok {
			return nil, true, ambiguous(op, l, r, pos)
		}
		lt = t
	}
	if !IsDatetime(rt) && (rt == catalog.Unknown || isUntypedLiteral(r)) {
		t, ok := untypedFor(op, lt)
		if !ok {
			return nil, true, ambiguous(op, l, r, pos)
		}
		rt = t
	}
	integer := func(t catalog.Type) bool { return t == catalog.Int || t == catalog.BigInt }
	var result catalog.Type
	switch {
	case op == "+" && lt == catalog.Date && integer(rt), op == "-" && lt == catalog.Date && integer(rt):
		result = catalog.Date
	case op == "+" && integer(lt) && rt == catalog.Date:
		result = catalog.Date
	case op == "-" && lt == catalog.Date && rt == catalog.Date:
		result = catalog.Int
	case op == "+" && (lt == catalog.Date && rt == catalog.Time || lt == catalog.Time && rt == catalog.Date):
		result = catalog.Timestamp
	case (op == "+" || op == "-") && isInstant(lt) && rt == catalog.Interval:
		result = lt
		if lt == catalog.Date {
			result, lt = catalog.Timestamp, catalog.Timestamp
		}
	case op == "+" && lt == catalog.Interval && isInstant(rt):
		result = rt
		if rt == catalog.Date {
			result, rt = catalog.Timestamp, catalog.Timestamp
		}
	case op == "-" && isInstant(lt) && isInstant(rt):
		t, _ := datetimeCommon(lt, rt)
		lt, rt, result = t, t, catalog.Interval
	case (op == "+" || op == "-") && lt == catalog.Interval && rt == catalog.Interval:
		result = catalog.Interval
	case (op == "+" || op == "-") && lt == catalog.Time && rt == catalog.Interval, op == "+" && lt == catalog.Interval && rt == catalog.Time:
		result = catalog.Time
	case op == "-" && lt == catalog.Time && rt == catalog.Time:
		result = catalog.Interval
	case (op == "*" || op == "/") && lt == catalog.Interval && rt.Numeric():
		rt, result = catalog.Double, catalog.Interval
	case op == "*" && lt.Numeric() && rt == catalog.Interval:
		lt, result = catalog.Double, catalog.Interval
	default:
		return nil, true, opError(op, l, r, pos)
	}
	var err error
	if l, err = b.coerce(l, lt, pos, op); err != nil {
		return nil, true, err
	}
	if r, err = b.coerce(r, rt, pos, op); err != nil {
		return nil, true, err
	}
	return &Binary{Op: op, L: l, R: r, T: result}, true, nil
}

func ambiguous(op string, l, r Scalar, pos int) error {
	return pgerr.New(pgerr.AmbiguousFunction, "operator is not unique: %s %s %s", sqlName(l.Type()), op, sqlName(r.Type())).
		WithPosition(pos).WithHint("Could not choose a best candidate operator. You might need to add explicit type casts.")
}

// IsDatetimeArith reports whether s is arithmetic over a date or time
// type, which eval computes apart from numbers.
func IsDatetimeArith(s *Binary) bool {
	switch s.Op {
	case "+", "-", "*", "/":
		return IsDatetime(s.L.Type()) || IsDatetime(s.R.Type())
	}
	return false
}

// bindAtTimeZone binds timezone(zone, x) and x AT TIME ZONE zone:
// TIMESTAMPTZ to the wall clock of zone (a TIMESTAMP), and a TIMESTAMP
// read as a wall clock of zone (a TIMESTAMPTZ).
func bindAtTimeZone(args []Scalar, pos int) (Scalar, error) {
	zone, x := args[0], args[1]
	var err error
	if zone, err = castTo(zone, catalog.Varchar, pos); err != nil {
		return nil, err
	}
	var t catalog.Type
	switch xt := x.Type(); {
	case xt == catalog.TimestampTZ:
		t = catalog.Timestamp
	case xt == catalog.Timestamp:
		t = catalog.TimestampTZ
	case xt == catalog.Date:
		if x, err = castTo(x, catalog.TimestampTZ, pos); err != nil {
			return nil, err
		}
		t = catalog.Timestamp
	case xt == catalog.Unknown || isUntypedLiteral(x):
		if x, err = castTo(x, catalog.TimestampTZ, pos); err != nil {
			return nil, err
		}
		t = catalog.Timestamp
	default:
		return nil, pgerr.New(pgerr.UndefinedFunction, "function timezone(text, %s) does not exist", sqlName(xt)).WithPosition(pos).
			WithHint("No function matches the given name and argument types. You might need to add explicit type casts.")
	}
	if c, ok := zone.(*Const); ok && c.V != nil {
		if _, ok := pgcodec.ParseZone(c.V.(string)); !ok {
			return nil, badZone(c.V.(string)).WithPosition(pos)
		}
	}
	return &Call{Name: "timezone", Args: []Scalar{zone, x}, T: t}, nil
}

func badZone(z string) *pgerr.Error {
	return pgerr.New(pgerr.InvalidParameterValue, "time zone %q not recognized", z)
}

// atTimeZoneArgs puts the operands of sql.AtTimeZoneFunc in timezone's
// order.
func atTimeZoneArgs(name string, args []Scalar) (string, []Scalar) {
	if name == sql.AtTimeZoneFunc && len(args) == 2 {
		return "timezone", []Scalar{args[1], args[0]}
	}
	return name, args
}
