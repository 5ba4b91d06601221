package eval

// The time functions dashboards use besides date_trunc and date_part
// (timefuncs.go): to_char, to_timestamp, to_date, age, make_*, the
// justify family, date_bin and the current-time functions, over
// TIMESTAMP, DATE, TIMESTAMPTZ and INTERVAL as Postgres 15 computes
// them. A TIMESTAMPTZ is an instant; the functions that read its fields
// (to_char, date_trunc, date_part) read them in the session's TimeZone.

import (
	"math"
	"strconv"
	"time"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/pgcodec"
	"github.com/basindb/basin/planner"
)

func init() {
	exprFuncs["to_char"] = strictEnv(toChar)
	exprFuncs["to_timestamp"] = strictEnv(toTimestamp)
	exprFuncs["to_date"] = strictEnv(toDate)
	exprFuncs["age"] = strictEnv(age)
	exprFuncs["date_trunc"] = strictEnv(dateTruncAny)
	exprFuncs["date_part"] = strictEnv(datePartAny)
	exprFuncs["extract"] = strictEnv(extractNumeric)
	exprFuncs["date_bin"] = strictEnv(dateBin)
	strictFuncs["make_interval"] = makeInterval
	strictFuncs["make_date"] = makeDate
	strictFuncs["make_time"] = makeTime
	strictFuncs["make_timestamp"] = makeTimestamp
	exprFuncs["make_timestamptz"] = strictEnv(makeTimestampTZ)
	strictFuncs["justify_days"] = func(_ catalog.Type, a []any) (any, error) { return justifyDays(a[0].(catalog.IntervalVal)), nil }
	strictFuncs["justify_hours"] = func(_ catalog.Type, a []any) (any, error) { return justifyHours(a[0].(catalog.IntervalVal)), nil }
	strictFuncs["justify_interval"] = func(_ catalog.Type, a []any) (any, error) {
		return justifyInterval(a[0].(catalog.IntervalVal)), nil
	}
	// basin's times have no infinities.
	strictFuncs["isfinite"] = func(catalog.Type, []any) (any, error) { return true, nil }
	now := func(env *Env) time.Time { return env.Now }
	for name, f := range map[string]func(env *Env) any{
		"transaction_timestamp": func(env *Env) any { return now(env) },
		"statement_timestamp":   func(env *Env) any { return now(env) },
		"clock_timestamp":       func(*Env) any { return time.Now().UTC().Truncate(time.Microsecond) },
		"localtimestamp": func(env *Env) any {
			return wallClock(now(env).In(sessionZone(env)))
		},
		"current_date": func(env *Env) any { return catalog.DateOf(now(env).In(sessionZone(env))) },
		"localtime":    func(env *Env) any { return timeOfDay(now(env).In(sessionZone(env))) },
		"current_time": func(env *Env) any { return timeOfDay(now(env).In(sessionZone(env))) },
	} {
		exprFuncs[name] = func(*planner.Call, []Expr) Expr {
			return func(_ catalog.Row, env *Env) (any, error) { return f(env), nil }
		}
	}
}

// strictEnv compiles a strict function that reads the environment (the
// session's zone, the statement's time).
func strictEnv(fn func(env *Env, c *planner.Call, a []any) (any, error)) func(*planner.Call, []Expr) Expr {
	return func(s *planner.Call, args []Expr) Expr {
		return func(row catalog.Row, env *Env) (any, error) {
			vals, err := strictArgs(args, row, env)
			if vals == nil || err != nil {
				return nil, err
			}
			return fn(env, s, vals)
		}
	}
}

// sessionZone is the session's TimeZone; UTC outside a session.
func sessionZone(env *Env) *time.Location { return env.Location() }

// wallClock is t's wall-clock reading as a TIMESTAMP (a time.Time in
// UTC with those fields).
func wallClock(t time.Time) time.Time {
	y, mo, d := t.Date()
	return time.Date(y, mo, d, t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
}

func timeOfDay(t time.Time) catalog.TimeOfDay {
	return catalog.TimeOfDay(int64(t.Hour())*3_600_000_000 + int64(t.Minute())*60_000_000 + int64(t.Second())*1_000_000 + int64(t.Nanosecond()/1000))
}

// toChar is to_char(value, template) over times, intervals and numbers.
func toChar(env *Env, c *planner.Call, a []any) (any, error) {
	tmpl := a[1].(string)
	switch v := a[0].(type) {
	case time.Time:
		if isTZ(c, 0) {
			return toCharTime(tmOfTime(v.In(sessionZone(env)), true), tmpl), nil
		}
		return toCharTime(tmOfTime(v, false), tmpl), nil
	case catalog.DateVal:
		return toCharTime(tmOfTime(v.Time(), false), tmpl), nil
	case catalog.IntervalVal:
		return toCharTime(tmOfInterval(v), tmpl), nil
	case int64:
		return toCharNumber(float64(v), tmpl), nil
	case float64:
		return toCharNumber(v, tmpl), nil
	}
	return nil, pgerr.New(pgerr.UndefinedFunction, "function to_char(%T, text) does not exist", a[0])
}

// isTZ reports whether argument i of c is a TIMESTAMPTZ: its value is a
// time.Time as a TIMESTAMP's is, but names an instant, whose fields are
// read in the session's zone.
func isTZ(c *planner.Call, i int) bool {
	return i < len(c.Args) && c.Args[i].Type() == catalog.TimestampTZ
}

// toTimestamp is to_timestamp(epoch seconds) and to_timestamp(text,
// template).
func toTimestamp(env *Env, _ *planner.Call, a []any) (any, error) {
	if len(a) == 1 {
		f := a[0].(float64)
		if math.IsNaN(f) {
			return nil, pgerr.New(pgerr.DatetimeFieldOverflow, "timestamp cannot be NaN")
		}
		if math.IsInf(f, 0) || math.Abs(f) > 9.2e12 {
			return nil, pgerr.New(pgerr.DatetimeFieldOverflow, "timestamp out of range: \"%g\"", f)
		}
		us := math.Round(f * 1e6)
		return time.UnixMicro(int64(us)).UTC(), nil
	}
	p, err := parseTemplate(a[0].(string), a[1].(string))
	if err != nil {
		return nil, err
	}
	return p.time(sessionZone(env))
}

func toDate(_ *Env, _ *planner.Call, a []any) (any, error) {
	p, err := parseTemplate(a[0].(string), a[1].(string))
	if err != nil {
		return nil, err
	}
	t, err := p.time(time.UTC)
	if err != nil {
		return nil, err
	}
	return catalog.DateOf(t), nil
}

// asTime reads a TIMESTAMP, TIMESTAMPTZ (in the session's zone) or DATE
// argument as wall-clock fields.
func asTime(env *Env, c *planner.Call, i int, v any) time.Time {
	switch v := v.(type) {
	case time.Time:
		if isTZ(c, i) {
			return v.In(sessionZone(env))
		}
		return v
	case catalog.DateVal:
		return v.Time()
	}
	return time.Time{}
}

// age is age(a, b), a - b in years, months and days field by field as
// Postgres computes it, and age(a), from midnight of today.
func age(env *Env, c *planner.Call, a []any) (any, error) {
	t1 := asTime(env, c, 0, a[0])
	if len(a) == 2 {
		return ageOf(t1, asTime(env, c, 1, a[1])), nil
	}
	// age(t) is age(current_date, t): from t to this midnight.
	y, m, d := env.Now.In(sessionZone(env)).Date()
	midnight := time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	if isTZ(c, 0) {
		midnight = time.Date(y, m, d, 0, 0, 0, 0, sessionZone(env))
	}
	return ageOf(midnight, t1), nil
}

func monthDays(y, m int) int { return daysIn(y, time.Month(m)) }

// ageOf is Postgres's timestamp_age.
func ageOf(t1, t2 time.Time) catalog.IntervalVal {
	type tm struct{ usec, sec, min, hour, mday, mon, year int }
	f := func(t time.Time) tm {
		return tm{t.Nanosecond() / 1000, t.Second(), t.Minute(), t.Hour(), t.Day(), int(t.Month()), t.Year()}
	}
	a, b := f(t1), f(t2)
	r := tm{a.usec - b.usec, a.sec - b.sec, a.min - b.min, a.hour - b.hour, a.mday - b.mday, a.mon - b.mon, a.year - b.year}
	flip := t1.Before(t2)
	if flip {
		r = tm{-r.usec, -r.sec, -r.min, -r.hour, -r.mday, -r.mon, -r.year}
	}
	for r.usec < 0 {
		r.usec += 1_000_000
		r.sec--
	}
	for r.sec < 0 {
		r.sec += 60
		r.min--
	}
	for r.min < 0 {
		r.min += 60
		r.hour--
	}
	for r.hour < 0 {
		r.hour += 24
		r.mday--
	}
	for r.mday < 0 {
		if flip {
			r.mday += monthDays(a.year, a.mon)
		} else {
			r.mday += monthDays(b.year, b.mon)
		}
		r.mon--
	}
	for r.mon < 0 {
		r.mon += 12
		r.year--
	}
	if flip {
		r = tm{-r.usec, -r.sec, -r.min, -r.hour, -r.mday, -r.mon, -r.year}
	}
	return catalog.IntervalVal{Months: int32(r.year*12 + r.mon), Days: int32(r.mday),
		Micros: int64(r.hour)*3_600_000_000 + int64(r.min)*60_000_000 + int64(r.sec)*1_000_000 + int64(r.usec)}
}

func justifyDays(i catalog.IntervalVal) catalog.IntervalVal {
	i.Months += i.Days / 30
	i.Days %= 30
	if i.Days > 0 && i.Months < 0 {
		i.Days -= 30
		i.Months++
	} else if i.Days < 0 && i.Months > 0 {
		i.Days += 30
		i.Months--
	}
	return i
}

func justifyHours(i catalog.IntervalVal) catalog.IntervalVal {
	i.Days += int32(i.Micros / usPerDay)
	i.Micros %= usPerDay
	if i.Days > 0 && i.Micros < 0 {
		i.Micros += usPerDay
		i.Days--
	} else if i.Days < 0 && i.Micros > 0 {
		i.Micros -= usPerDay
		i.Days++
	}
	return i
}

func justifyInterval(i catalog.IntervalVal) catalog.IntervalVal {
	i.Days += int32(i.Micros / usPerDay)
	i.Micros %= usPerDay
	i.Months += i.Days / 30
	i.Days %= 30
	if i.Months > 0 && (i.Days < 0 || i.Days == 0 && i.Micros < 0) {
		i.Days += 30
		i.Months--
	} else if i.Months < 0 && (i.Days > 0 || i.Days == 0 && i.Micros > 0) {
		i.Days -= 30
		i.Months++
	}
	if i.Days > 0 && i.Micros < 0 {
		i.Micros += usPerDay
		i.Days--
	} else if i.Days < 0 && i.Micros > 0 {
		i.Micros -= usPerDay
		i.Days++
	}
	return i
}

// makeInterval is make_interval(years, months, weeks, days, hours, mins,
// secs), every argument defaulting to 0.
func makeInterval(_ catalog.Type, a []any) (any, error) {
	n := func(i int) int64 {
		if i < len(a) {
			return a[i].(int64)
		}
		return 0
	}
	secs := 0.0
	if len(a) > 6 {
		secs = a[6].(float64)
	}
	if math.IsNaN(secs) || math.IsInf(secs, 0) {
		return nil, pgerr.New(pgerr.DatetimeFieldOverflow, "interval out of range")
	}
	months := n(0)*12 + n(1)
	days := n(2)*7 + n(3)
	us := float64(n(4))*3.6e9 + float64(n(5))*6e7 + math.Round(secs*1e6)
	if months > math.MaxInt32 || months < math.MinInt32 || days > math.MaxInt32 || days < math.MinInt32 || math.Abs(us) > 9.2e18 {
		return nil, pgerr.New(pgerr.DatetimeFieldOverflow, "interval out of range")
	}
	return catalog.IntervalVal{Months: int32(months), Days: int32(days), Micros: int64(us)}, nil
}

func dateFields(y, m, d int64) (time.Time, error) {
	if y == 0 || m < 1 || m > 12 || d < 1 || y > 5874897 || y < -4713 || d > int64(monthDays(int(yearOf(y)), int(m))) {
		return time.Time{}, pgerr.New(pgerr.DatetimeFieldOverflow, "date field value out of range: %d-%02d-%02d", y, m, d)
	}
	return time.Date(int(yearOf(y)), time.Month(m), int(d), 0, 0, 0, 0, time.UTC), nil
}

// yearOf maps a year as written (negative for BC) to the proleptic
// year (1 BC is 0).
func yearOf(y int64) int64 {
	if y < 0 {
		return y + 1
	}
	return y
}

func makeDate(_ catalog.Type, a []any) (any, error) {
	t, err := dateFields(a[0].(int64), a[1].(int64), a[2].(int64))
	if err != nil {
		return nil, err
	}
	return catalog.DateOf(t), nil
}

func clockMicros(h, m int64, s float64) (int64, bool) {
	if h < 0 || m < 0 || m > 59 || s < 0 || s > 60 || math.IsNaN(s) || h > 24 {
		return 0, false
	}
	us := h*3_600_000_000 + m*60_000_000 + int64(math.Round(s*1e6))
	return us, us <= usPerDay
}

func makeTime(_ catalog.Type, a []any) (any, error) {
	h, m, s := a[0].(int64), a[1].(int64), a[2].(float64)
	us, ok := clockMicros(h, m, s)
	if !ok {
		return nil, pgerr.New(pgerr.DatetimeFieldOverflow, "time field value out of range: %d:%02d:%s", h, m, formatSecs(s))
	}
	return catalog.TimeOfDay(us), nil
}

// formatSecs writes seconds as Postgres's errors do (%02g).
func formatSecs(s float64) string {
	str := strconv.FormatFloat(s, 'g', -1, 64)
	if s < 10 && s >= 0 {
		return "0" + str
	}
	return str
}

func makeTimestamp(_ catalog.Type, a []any) (any, error) {
	return timestampFields(a, time.UTC)
}

func makeTimestampTZ(env *Env, _ *planner.Call, a []any) (any, error) {
	loc := sessionZone(env)
	if len(a) == 7 {
		z, ok := pgcodec.ParseZone(a[6].(string))
		if !ok {
			return nil, pgerr.New(pgerr.InvalidParameterValue, "time zone %q not recognized", a[6].(string))
		}
		loc = z
	}
	t, err := timestampFields(a[:6], loc)
	if err != nil {
		return nil, err
	}
	return t.(time.Time).UTC(), nil
}

func timestampFields(a []any, loc *time.Location) (any, error) {
	d, err := dateFields(a[0].(int64), a[1].(int64), a[2].(int64))
	if err != nil {
		return nil, err
	}
	h, m, s := a[3].(int64), a[4].(int64), a[5].(float64)
	us, ok := clockMicros(h, m, s)
	if !ok {
		return nil, pgerr.New(pgerr.DatetimeFieldOverflow, "time field value out of range: %d:%02d:%s", h, m, formatSecs(s))
	}
	y, mo, dd := d.Date()
	return time.Date(y, mo, dd, 0, 0, 0, 0, loc).Add(time.Duration(us) * time.Microsecond), nil
}

// dateBin is date_bin(stride, source, origin): the start of the bin of
// width stride, counted from origin, that source falls in.
func dateBin(_ *Env, _ *planner.Call, a []any) (any, error) {
	stride := a[0].(catalog.IntervalVal)
	if stride.Months != 0 {
		return nil, pgerr.New(pgerr.FeatureNotSupported, "timestamps cannot be binned into intervals containing months or years")
	}
	step := int64(stride.Days)*usPerDay + stride.Micros
	if step <= 0 {
		return nil, pgerr.New(pgerr.InvalidParameterValue, "stride must be greater than zero")
	}
	src, org := a[1].(time.Time), a[2].(time.Time)
	diff := src.UnixMicro() - org.UnixMicro()
	delta := diff - diff%step
	if diff < 0 && diff%step != 0 {
		delta -= step
	}
	return time.UnixMicro(org.UnixMicro() + delta).UTC(), nil
}
