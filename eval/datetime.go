package eval

// The date and time types' operations: comparison of DATE, TIME and
// INTERVAL values (TIMESTAMP and TIMESTAMPTZ are time.Time, compared as
// instants), casts that read the session's TimeZone, and the arithmetic
// operators planner.bindDatetimeArith types, as PostgreSQL 15 computes
// them (timestamp.c, date.c).

import (
	"math"
	"time"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/pgcodec"
	"github.com/basindb/basin/planner"
)

const (
	usPerDay = int64(24 * time.Hour / time.Microsecond)
	// maxYear and minYear bound timestamps as Postgres does (294276 AD
	// and 4713 BC, Go's year -4712).
	maxYear = 294276
	minYear = -4712
)

var (
	errTimestampRange = pgerr.New(pgerr.DatetimeFieldOverflow, "timestamp out of range")
	errDateRange      = pgerr.New(pgerr.DatetimeFieldOverflow, "date out of range")
	errIntervalRange  = pgerr.New(pgerr.DatetimeFieldOverflow, "interval out of range")
)

// Location is the session's TimeZone, UTC when none is set.
func (env *Env) Location() *time.Location {
	if env == nil || env.Loc == nil {
		return time.UTC
	}
	return env.Loc
}

// compareDatetime orders two values of one of DATE, TIME and INTERVAL;
// ok is false for other Go types.
func compareDatetime(a, b any) (int, bool) {
	switch x := a.(type) {
	case catalog.DateVal:
		if y, ok := b.(catalog.DateVal); ok {
			return cmp3(x < y, x > y), true
		}
	case catalog.TimeOfDay:
		if y, ok := b.(catalog.TimeOfDay); ok {
			return cmp3(x < y, x > y), true
		}
	case catalog.IntervalVal:
		if y, ok := b.(catalog.IntervalVal); ok {
			return compareInterval(x, y), true
		}
	}
	return 0, false
}

// compareInterval orders intervals by their span, a month as 30 days and
// a day as 24 hours, exactly (Postgres compares 128-bit spans).
func compareInterval(x, y catalog.IntervalVal) int {
	xd := int64(x.Months)*30 + int64(x.Days)
	yd := int64(y.Months)*30 + int64(y.Days)
	// span = days*usPerDay + micros; compare without overflow by
	// carrying micros' whole days over.
	xd += x.Micros / usPerDay
	yd += y.Micros / usPerDay
	xr, yr := x.Micros%usPerDay, y.Micros%usPerDay
	// Bring remainders into [0, usPerDay).
	if xr < 0 {
		xr, xd = xr+usPerDay, xd-1
	}
	if yr < 0 {
		yr, yd = yr+usPerDay, yd-1
	}
	if xd != yd {
		return cmp3(xd < yd, xd > yd)
	}
	return cmp3(xr < yr, xr > yr)
}

// compileCast compiles a cast whose source or target is a date or time
// type: it reads the session's zone.
func compileDatetimeCast(x Expr, from, to catalog.Type) Expr {
	return func(row catalog.Row, env *Env) (any, error) {
		v, err := x(row, env)
		if v == nil || err != nil {
			return nil, err
		}
		return planner.CastValue(v, from, to, env.Location())
	}
}

// compileDatetimeArith compiles a planner.IsDatetimeArith binary.
func compileDatetimeArith(s *planner.Binary) Expr {
	l, r := Compile(s.L), Compile(s.R)
	op, t := s.Op, s.T
	return func(row catalog.Row, env *Env) (any, error) {
		a, err := l(row, env)
		if err != nil {
			return nil, err
		}
		b, err := r(row, env)
		if err != nil || a == nil || b == nil {
			return nil, err
		}
		return DatetimeOp(op, t, a, b, env.Location())
	}
}

// DatetimeOp computes a op b for the date and time operators, with t
// the result type and loc the session's zone (months and days added to
// a TIMESTAMPTZ are calendar months and days there).
func DatetimeOp(op string, t catalog.Type, a, b any, loc *time.Location) (any, error) {
	switch x := a.(type) {
	case catalog.DateVal:
		switch y := b.(type) {
		case int64:
			if op == "-" {
				y = -y
			}
			return addDays(x, y)
		case catalog.DateVal:
			return int64(x) - int64(y), nil
		case catalog.TimeOfDay:
			return checkTimestamp(x.Time().Add(time.Duration(y) * time.Microsecond))
		}
	case int64:
		if y, ok := b.(catalog.DateVal); ok {
			return addDays(y, x)
		}
	case time.Time:
		switch y := b.(type) {
		case catalog.IntervalVal:
			if op == "-" {
				var err error
				if y, err = negateInterval(y); err != nil {
					return nil, err
				}
			}
			return addInterval(x, y, t == catalog.TimestampTZ, loc)
		case time.Time:
			return subTimestamps(x, y)
		}
	case catalog.TimeOfDay:
		switch y := b.(type) {
		case catalog.IntervalVal:
			us := y.Micros % usPerDay
			if op == "-" {
				us = -us
			}
			return wrapTime(int64(x) + us), nil
		case catalog.TimeOfDay:
			return catalog.IntervalVal{Micros: int64(x) - int64(y)}, nil
		case catalog.DateVal:
			return checkTimestamp(y.Time().Add(time.Duration(x) * time.Microsecond))
		}
	case catalog.IntervalVal:
		switch y := b.(type) {
		case catalog.IntervalVal:
			if op == "-" {
				var err error
				if y, err = negateInterval(y); err != nil {
					return nil, err
				}
			}
			return addIntervals(x, y)
		case time.Time:
			return addInterval(y, x, t == catalog.TimestampTZ, loc)
		case catalog.TimeOfDay:
			return wrapTime(int64(y) + x.Micros%usPerDay), nil
		case float64:
			if op == "/" {
				return divInterval(x, y)
			}
			return mulInterval(x, y)
		}
	case float64:
		if y, ok := b.(catalog.IntervalVal); ok {
			return mulInterval(y, x)
		}
	}
	return nil, pgerr.New(pgerr.InternalError, "cannot compute %T %s %T", a, op, b)
}

func addDays(d catalog.DateVal, n int64) (any, error) {
	r := int64(d) + n
	if r < -2440588 || r > 2145042905 || (n > 0) != (r > int64(d)) && n != 0 {
		return nil, errDateRange
	}
	return catalog.DateVal(r), nil
}

func wrapTime(us int64) catalog.TimeOfDay {
	us %= usPerDay
	if us < 0 {
		us += usPerDay
	}
	return catalog.TimeOfDay(us)
}

func checkTimestamp(t time.Time) (any, error) {
	if y := t.Year(); y > maxYear || y < minYear {
		return nil, errTimestampRange
	}
	return t, nil
}

// addInterval is timestamp + interval: months first (the day of the
// month clamped to the new month's last), then days, on the wall clock
// (of loc for a timestamptz), then the time as elapsed time.
func addInterval(ts time.Time, iv catalog.IntervalVal, tz bool, loc *time.Location) (any, error) {
	if iv.Months != 0 || iv.Days != 0 {
		wall := ts
		if tz {
			wall = pgcodec.WallClock(ts, loc)
		}
		y, m, d := wall.Date()
		h, mi, s := wall.Clock()
		months := int64(y)*12 + int64(m-1) + int64(iv.Months)
		ny, nm := months/12, months%12
		if nm < 0 {
			ny, nm = ny-1, nm+12
		}
		if ny > maxYear || ny < minYear {
			return nil, errTimestampRange
		}
		if last := daysIn(int(ny), time.Month(nm+1)); d > last {
			d = last
		}
		wall = time.Date(int(ny), time.Month(nm+1), d+int(iv.Days), h, mi, s, wall.Nanosecond(), time.UTC)
		ts = wall
		if tz {
			ts = pgcodec.InZone(wall, loc)
		}
	}
	if iv.Micros != 0 {
		secs, us := iv.Micros/1e6, iv.Micros%1e6
		ts = ts.Add(time.Duration(secs) * time.Second).Add(time.Duration(us) * time.Microsecond)
	}
	return checkTimestamp(ts)
}

func daysIn(y int, m time.Month) int {
	return time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// subTimestamps is timestamp - timestamp: the elapsed time, whole days of
// 24 hours taken out as days (justify_hours).
func subTimestamps(a, b time.Time) (any, error) {
	secs := a.Unix() - b.Unix()
	ns := int64(a.Nanosecond() - b.Nanosecond())
	if secs > math.MaxInt64/1_000_000-1 || secs < math.MinInt64/1_000_000+1 {
		return nil, errIntervalRange
	}
	us := secs*1e6 + ns/1000
	days := us / usPerDay
	if days > math.MaxInt32 || days < math.MinInt32 {
		return nil, errIntervalRange
	}
	return catalog.IntervalVal{Days: int32(days), Micros: us - days*usPerDay}, nil
}

func negateInterval(i catalog.IntervalVal) (catalog.IntervalVal, error) {
	if i.Months == math.MinInt32 || i.Days == math.MinInt32 || i.Micros == math.MinInt64 {
		return i, errIntervalRange
	}
	return catalog.IntervalVal{Months: -i.Months, Days: -i.Days, Micros: -i.Micros}, nil
}

func addIntervals(x, y catalog.IntervalVal) (any, error) {
	m := int64(x.Months) + int64(y.Months)
	d := int64(x.Days) + int64(y.Days)
	us := x.Micros + y.Micros
	if m != int64(int32(m)) || d != int64(int32(d)) || (us > x.Micros) != (y.Micros > 0) && y.Micros != 0 {
		return nil, errIntervalRange
	}
	return catalog.IntervalVal{Months: int32(m), Days: int32(d), Micros: us}, nil
}

// mulInterval is interval_mul: each field times f, the fractions of
// months carried into days (30 a month) and of days into time.
func mulInterval(x catalog.IntervalVal, f float64) (any, error) {
	return scaleInterval(float64(x.Months)*f, float64(x.Days)*f, float64(x.Micros)*f)
}

// divInterval is interval_div.
func divInterval(x catalog.IntervalVal, f float64) (any, error) {
	if f == 0 {
		return nil, errDivByZero
	}
	return scaleInterval(float64(x.Months)/f, float64(x.Days)/f, float64(x.Micros)/f)
}

func scaleInterval(months, days, micros float64) (any, error) {
	if math.IsNaN(months) || math.IsNaN(days) || math.IsNaN(micros) ||
		math.Abs(months) > math.MaxInt32 || math.Abs(days) > math.MaxInt32 || math.Abs(micros) > math.MaxInt64/2 {
		return nil, errIntervalRange
	}
	m := math.Trunc(months)
	monthRemDays := (months - m) * 30
	d := math.Trunc(days)
	secRem := (days - d + monthRemDays - math.Trunc(monthRemDays)) * 86400
	secRem = math.Round(secRem*1e6) / 1e6
	if math.Abs(secRem) >= 86400 {
		d += math.Trunc(secRem / 86400)
		secRem -= math.Trunc(secRem/86400) * 86400
	}
	d += math.Trunc(monthRemDays)
	us := math.RoundToEven(micros + secRem*1e6)
	if math.Abs(d) > math.MaxInt32 || math.Abs(us) >= math.MaxInt64 {
		return nil, errIntervalRange
	}
	return catalog.IntervalVal{Months: int32(m), Days: int32(d), Micros: int64(us)}, nil
}

// atTimeZone is timezone(zone, x): a timestamptz's wall clock in zone,
// or a timestamp's wall clock read in zone (t, the result type, says
// which).
func atTimeZone(t catalog.Type, a []any) (any, error) {
	z := a[0].(string)
	loc, ok := pgcodec.ParseZone(z)
	if !ok {
		return nil, pgerr.New(pgerr.InvalidParameterValue, "time zone %q not recognized", z)
	}
	ts := a[1].(time.Time)
	if t == catalog.Timestamp {
		return pgcodec.WallClock(ts, loc), nil
	}
	return pgcodec.InZone(ts, loc), nil
}

func init() {
	strictFuncs["timezone"] = atTimeZone
}
