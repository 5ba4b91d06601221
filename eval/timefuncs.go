package eval

// Time functions: date_trunc, and date_part with its SQL spelling
// EXTRACT(field FROM x), over TIMESTAMP values (time.Time in UTC), as
// PostgreSQL 15 computes them for timestamp without time zone.

import (
	"strings"
	"time"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
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
