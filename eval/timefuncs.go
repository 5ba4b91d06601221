package eval

// Time functions: date_trunc, and date_part with its SQL spelling
// EXTRACT(field FROM x), over TIMESTAMP values (time.Time in UTC), as
// PostgreSQL 15 computes them for timestamp without time zone.

import (
	"strings"
	"time"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/pgcodec"
	"github.com/basindb/basin/planner"
)

func init() {
	strictFuncs["date_trunc"] = dateTrunc
	strictFuncs["date_part"] = datePart
	strictFuncs["extract"] = datePart
}

// dateTrunc is date_trunc(unit, ts): ts with every field finer than
// unit zeroed (a week starts on Monday, as ISO's).
func dateTrunc(_ catalog.Type, a []any) (any, error) {
	unit, ts := strings.ToLower(a[0].(string)), a[1].(time.Time)
	y, mo, d := ts.Date()
	loc := ts.Location()
	switch unit {
	case "microseconds", "microsecond":
		return ts.Truncate(time.Microsecond), nil
	case "milliseconds", "millisecond":
		return ts.Truncate(time.Millisecond), nil
	case "second", "seconds":
		return time.Date(y, mo, d, ts.Hour(), ts.Minute(), ts.Second(), 0, loc), nil
	case "minute", "minutes":
		return time.Date(y, mo, d, ts.Hour(), ts.Minute(), 0, 0, loc), nil
	case "hour", "hours":
		return time.Date(y, mo, d, ts.Hour(), 0, 0, 0, loc), nil
	case "day", "days":
		return time.Date(y, mo, d, 0, 0, 0, 0, loc), nil
	case "week", "weeks":
		back := (int(ts.Weekday()) + 6) % 7 // days since Monday
		return time.Date(y, mo, d-back, 0, 0, 0, 0, loc), nil
	case "month", "months":
		return time.Date(y, mo, 1, 0, 0, 0, 0, loc), nil
	case "quarter":
		return time.Date(y, mo-(mo-1)%3, 1, 0, 0, 0, 0, loc), nil
	case "year", "years":
		return time.Date(y, 1, 1, 0, 0, 0, 0, loc), nil
	case "decade", "decades":
		return time.Date(floorTo(y, 10), 1, 1, 0, 0, 0, 0, loc), nil
	case "century", "centuries":
		return time.Date(floorTo(y-1, 100)+1, 1, 1, 0, 0, 0, 0, loc), nil
	case "millennium", "millennia":
		return time.Date(floorTo(y-1, 1000)+1, 1, 1, 0, 0, 0, 0, loc), nil
	}
	return nil, pgerr.New(pgerr.InvalidParameterValue, "unit %q not recognized for type timestamp without time zone", unit).
		WithHint("Use microseconds, milliseconds, second, minute, hour, day, week, month, quarter, year, decade, century or millennium.")
}

// datePart is date_part(field, ts) and EXTRACT(field FROM ts), as
// double precision (PostgreSQL's EXTRACT gives numeric, which basin
// does not have yet).
func datePart(_ catalog.Type, a []any) (any, error) {
	field, ts := strings.ToLower(a[0].(string)), a[1].(time.Time)
	sec := float64(ts.Second()) + float64(ts.Nanosecond())/1e9
	switch field {
	case "epoch":
		return float64(ts.UnixMicro()) / 1e6, nil
	case "microseconds", "microsecond":
		return float64(ts.Second()*1_000_000 + ts.Nanosecond()/1000), nil
	case "milliseconds", "millisecond":
		return sec * 1000, nil
	case "second", "seconds":
		return sec, nil
	case "minute", "minutes":
		return float64(ts.Minute()), nil
	case "hour", "hours":
		return float64(ts.Hour()), nil
	case "day", "days":
		return float64(ts.Day()), nil
	case "dow":
		return float64(ts.Weekday()), nil
	case "isodow":
		return float64((int(ts.Weekday())+6)%7 + 1), nil
	case "doy":
		return float64(ts.YearDay()), nil
	case "week":
		_, w := ts.ISOWeek()
		return float64(w), nil
	case "isoyear":
		y, _ := ts.ISOWeek()
		return float64(y), nil
	case "month", "months":
		return float64(ts.Month()), nil
	case "quarter":
		return float64((int(ts.Month())-1)/3 + 1), nil
	case "year", "years":
		return float64(ts.Year()), nil
	case "decade", "decades":
		return float64(floorTo(ts.Year(), 10) / 10), nil
	case "century", "centuries":
		return float64(floorTo(ts.Year()-1, 100)/100 + 1), nil
	case "millennium", "millennia":
		return float64(floorTo(ts.Year()-1, 1000)/1000 + 1), nil
	}
	return nil, pgerr.New(pgerr.InvalidParameterValue, "unit %q not recognized for type timestamp without time zone", field).
		WithHint("Use epoch, year, quarter, month, week, day, dow, isodow, doy, hour, minute, second, milliseconds or microseconds.")
}

// floorTo rounds y down to a multiple of n (toward minus infinity).
func floorTo(y, n int) int {
	if y < 0 {
		return -((-y + n - 1) / n) * n
	}
	return y / n * n
}

// dateTruncAny is date_trunc(unit, x [, zone]) over TIMESTAMP,
// TIMESTAMPTZ (truncated in the session's zone or the one given), DATE
// (as a TIMESTAMPTZ at its midnight) and INTERVAL.
func dateTruncAny(env *Env, c *planner.Call, a []any) (any, error) {
	switch v := a[1].(type) {
	case catalog.IntervalVal:
		return truncInterval(strings.ToLower(a[0].(string)), v)
	case catalog.DateVal:
		y, m, d := v.Time().Date()
		t, err := dateTrunc(0, []any{a[0], time.Date(y, m, d, 0, 0, 0, 0, sessionZone(env))})
		if err != nil {
			return nil, retype(err, "timestamp with time zone")
		}
		return t.(time.Time).UTC(), nil
	case time.Time:
		if !isTZ(c, 1) {
			return dateTrunc(0, a)
		}
		loc := sessionZone(env)
		if len(a) == 3 {
			z, ok := pgcodec.ParseZone(a[2].(string))
			if !ok {
				return nil, pgerr.New(pgerr.InvalidParameterValue, "time zone \"%s\" not recognized", a[2].(string))
			}
			loc = z
		}
		t, err := dateTrunc(0, []any{a[0], v.In(loc)})
		if err != nil {
			return nil, retype(err, "timestamp with time zone")
		}
		return t.(time.Time).UTC(), nil
	}
	return nil, nil
}

// retype names type t in a unit error about timestamps.
func retype(err error, t string) error {
	if pe, ok := pgerr.As(err); ok {
		pe.Message = strings.Replace(pe.Message, "timestamp without time zone", t, 1)
	}
	return err
}

// intervalFields breaks an interval into Postgres's fields; each has the
// sign of the part it comes from.
type intervalFields struct {
	years, months, days, hours, mins int64
	secs, usecs                      int64 // usecs: within the second
}

func fieldsOf(i catalog.IntervalVal) intervalFields {
	f := intervalFields{years: int64(i.Months / 12), months: int64(i.Months % 12), days: int64(i.Days)}
	us := i.Micros
	f.hours = us / 3_600_000_000
	us -= f.hours * 3_600_000_000
	f.mins = us / 60_000_000
	us -= f.mins * 60_000_000
	f.secs = us / 1_000_000
	f.usecs = us - f.secs*1_000_000
	return f
}

func (f intervalFields) interval() catalog.IntervalVal {
	return catalog.IntervalVal{Months: int32(f.years*12 + f.months), Days: int32(f.days),
		Micros: f.hours*3_600_000_000 + f.mins*60_000_000 + f.secs*1_000_000 + f.usecs}
}

// truncInterval is date_trunc over an interval: the fields finer than
// unit zeroed.
func truncInterval(unit string, i catalog.IntervalVal) (any, error) {
	f := fieldsOf(i)
	var out intervalFields
	switch unit {
	case "millennium", "millennia":
		out.years = f.years / 1000 * 1000
	case "century", "centuries":
		out.years = f.years / 100 * 100
	case "decade", "decades":
		out.years = f.years / 10 * 10
	case "year", "years":
		out.years = f.years
	case "quarter":
		out.years, out.months = f.years, f.months/3*3
	case "month", "months":
		out.years, out.months = f.years, f.months
	case "day", "days":
		out.years, out.months, out.days = f.years, f.months, f.days
	case "hour", "hours":
		out = f
		out.mins, out.secs, out.usecs = 0, 0, 0
	case "minute", "minutes":
		out = f
		out.secs, out.usecs = 0, 0
	case "second", "seconds":
		out = f
		out.usecs = 0
	case "millisecond", "milliseconds":
		out = f
		out.usecs = f.usecs / 1000 * 1000
	case "microsecond", "microseconds":
		out = f
	case "week", "weeks":
		return nil, pgerr.New(pgerr.FeatureNotSupported, "unit \"%s\" not supported for type interval", unit).
			WithDetail("Months usually have fractional weeks.")
	default:
		return nil, pgerr.New(pgerr.InvalidParameterValue, "unit \"%s\" not recognized for type interval", unit)
	}
	return out.interval(), nil
}

// datePartAny is date_part(field, x) and EXTRACT(field FROM x) over
// TIMESTAMP, TIMESTAMPTZ (its fields in the session's zone), DATE, TIME
// and INTERVAL.
func datePartAny(env *Env, c *planner.Call, a []any) (any, error) {
	field := strings.ToLower(a[0].(string))
	switch v := a[1].(type) {
	case time.Time:
		if !isTZ(c, 1) {
			return datePart(0, a)
		}
		t := v.In(sessionZone(env))
		_, off := t.Zone()
		switch field {
		case "timezone":
			return float64(off), nil
		case "timezone_hour":
			return float64(off / 3600), nil
		case "timezone_minute":
			return float64(off % 3600 / 60), nil
		}
		r, err := datePart(0, []any{a[0], t})
		return r, retype(err, "timestamp with time zone")
	case catalog.DateVal:
		switch field {
		case "hour", "hours", "minute", "minutes", "second", "seconds", "millisecond", "milliseconds", "microsecond", "microseconds":
			if c.Name == "extract" {
				return nil, pgerr.New(pgerr.FeatureNotSupported, "unit \"%s\" not supported for type date", field)
			}
		}
		r, err := datePart(0, []any{a[0], v.Time()})
		return r, retype(err, "date")
	case catalog.TimeOfDay:
		us := int64(v)
		sec := float64(us%60_000_000) / 1e6
		switch field {
		case "epoch":
			return float64(us) / 1e6, nil
		case "hour", "hours":
			return float64(us / 3_600_000_000), nil
		case "minute", "minutes":
			return float64(us / 60_000_000 % 60), nil
		case "second", "seconds":
			return sec, nil
		case "millisecond", "milliseconds":
			return sec * 1000, nil
		case "microsecond", "microseconds":
			return float64(us % 60_000_000), nil
		}
		return nil, unitError(field, "time without time zone")
	case catalog.IntervalVal:
		f := fieldsOf(v)
		sec := float64(f.secs) + float64(f.usecs)/1e6
		switch field {
		case "epoch":
			return 365.25*86400*float64(f.years) + 30*86400*float64(f.months) + 86400*float64(f.days) + float64(v.Micros)/1e6, nil
		case "millennium", "millennia":
			return float64(f.years / 1000), nil
		case "century", "centuries":
			return float64(f.years / 100), nil
		case "decade", "decades":
			return float64(f.years / 10), nil
		case "year", "years":
			return float64(f.years), nil
		case "quarter":
			return float64(f.months/3 + 1), nil
		case "month", "months":
			return float64(f.months), nil
		case "day", "days":
			return float64(f.days), nil
		case "hour", "hours":
			return float64(f.hours), nil
		case "minute", "minutes":
			return float64(f.mins), nil
		case "second", "seconds":
			return sec, nil
		case "millisecond", "milliseconds":
			return sec * 1000, nil
		case "microsecond", "microseconds":
			return float64(f.secs*1_000_000 + f.usecs), nil
		}
		return nil, unitError(field, "interval")
	}
	return nil, nil
}

// unitError is the error for a field a type lacks: 0A000 for a known
// field, 22023 for an unknown one.
func unitError(field, typ string) error {
	switch field {
	case "epoch", "year", "years", "month", "months", "day", "days", "hour", "hours", "minute", "minutes", "second", "seconds",
		"millisecond", "milliseconds", "microsecond", "microseconds", "dow", "isodow", "doy", "week", "isoyear", "quarter",
		"decade", "century", "millennium", "timezone", "timezone_hour", "timezone_minute", "julian":
		return pgerr.New(pgerr.FeatureNotSupported, "unit \"%s\" not supported for type %s", field, typ)
	}
	return pgerr.New(pgerr.InvalidParameterValue, "unit \"%s\" not recognized for type %s", field, typ)
}
