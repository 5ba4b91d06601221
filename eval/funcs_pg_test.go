package eval

import (
	"fmt"
	"testing"
	"time"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/planner"
)

// The expected values in these tables are PostgreSQL 15's.

func ts(s string) time.Time {
	t, err := time.Parse("2006-01-02 15:04:05.999999", s)
	if err != nil {
		panic(err)
	}
	return t
}

func ivl(months, days int32, micros int64) catalog.IntervalVal {
	return catalog.IntervalVal{Months: months, Days: days, Micros: micros}
}

const hour = int64(3_600_000_000)

func TestAge(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want catalog.IntervalVal
	}{
		{"2026-03-14 15:09:26.535", "2000-01-01 00:00:00", ivl(26*12+2, 13, 15*hour+9*60_000_000+26_535_000)},
		{"2026-01-01 00:00:00", "2026-03-14 00:00:00", ivl(-2, -13, 0)},
		{"2024-03-31 00:00:00", "2024-02-29 23:00:00", ivl(1, 1, hour)},
		{"2024-01-31 00:00:00", "2024-03-01 00:00:00", ivl(-1, -1, 0)},
		{"2026-03-01 00:00:00", "2026-01-31 12:00:00", ivl(1, 0, 12*hour)},
	} {
		if got := ageOf(ts(c.a), ts(c.b)); got != c.want {
			t.Errorf("age(%s, %s) = %+v, want %+v", c.a, c.b, got, c.want)
		}
	}
}

func TestJustify(t *testing.T) {
	for _, c := range []struct {
		fn       func(catalog.IntervalVal) catalog.IntervalVal
		in, want catalog.IntervalVal
	}{
		{justifyDays, ivl(0, 65, 0), ivl(2, 5, 0)},
		{justifyDays, ivl(0, -35, 0), ivl(-1, -5, 0)},
		{justifyDays, ivl(1, -35, 0), ivl(0, -5, 0)},
		{justifyHours, ivl(0, 0, 50*hour), ivl(0, 2, 2*hour)},
		{justifyHours, ivl(0, 0, -50*hour), ivl(0, -2, -2*hour)},
		{justifyHours, ivl(0, 1, -50*hour), ivl(0, -1, -2*hour)},
		{justifyInterval, ivl(1, 0, -hour), ivl(0, 29, 23*hour)},
		{justifyInterval, ivl(-1, 0, 50*hour), ivl(0, -27, -22*hour)},
	} {
		if got := c.fn(c.in); got != c.want {
			t.Errorf("justify(%+v) = %+v, want %+v", c.in, got, c.want)
		}
	}
}

func TestDateBin(t *testing.T) {
	call := &planner.Call{Name: "date_bin"}
	for _, c := range []struct {
		stride         catalog.IntervalVal
		src, org, want string
	}{
		{ivl(0, 0, 15*60_000_000), "2026-03-14 15:09:26", "2026-01-01 00:00:00", "2026-03-14 15:00:00"},
		{ivl(0, 0, hour), "1999-12-31 23:10:00", "2000-01-01 00:30:00", "1999-12-31 22:30:00"},
		{ivl(0, 7, 0), "2026-03-14 00:00:00", "2001-01-01 00:00:00", "2026-03-09 00:00:00"},
	} {
		got, err := dateBin(nil, call, []any{c.stride, ts(c.src), ts(c.org)})
		if err != nil || !got.(time.Time).Equal(ts(c.want)) {
			t.Errorf("date_bin(%+v, %s, %s) = %v, %v, want %s", c.stride, c.src, c.org, got, err, c.want)
		}
	}
	if _, err := dateBin(nil, call, []any{ivl(1, 0, 0), ts("2026-01-01 00:00:00"), ts("2026-01-01 00:00:00")}); code(err) != pgerr.FeatureNotSupported {
		t.Errorf("date_bin by a month: %v", err)
	}
	if _, err := dateBin(nil, call, []any{ivl(0, 0, 0), ts("2026-01-01 00:00:00"), ts("2026-01-01 00:00:00")}); code(err) != pgerr.InvalidParameterValue {
		t.Errorf("date_bin by zero: %v", err)
	}
}

func code(err error) pgerr.Code {
	if pe, ok := pgerr.As(err); ok {
		return pe.Code
	}
	return ""
}

func TestIntervalFields(t *testing.T) {
	for _, c := range []struct {
		unit string
		in   catalog.IntervalVal
		want catalog.IntervalVal
	}{
		{"quarter", ivl(17, 3, 0), ivl(15, 0, 0)},
		{"decade", ivl(25*12+3, 0, 0), ivl(240, 0, 0)},
		{"minute", ivl(0, -1, -(4*hour + 5*60_000_000 + 6_700_000)), ivl(0, -1, -(4*hour + 5*60_000_000))},
		{"millisecond", ivl(0, 0, 1_234_560), ivl(0, 0, 1_234_000)},
	} {
		got, err := truncInterval(c.unit, c.in)
		if err != nil || got != c.want {
			t.Errorf("date_trunc(%s, %+v) = %+v, %v, want %+v", c.unit, c.in, got, err, c.want)
		}
	}
	call := &planner.Call{Name: "date_part"}
	for _, c := range []struct {
		field string
		in    catalog.IntervalVal
		want  float64
	}{
		{"epoch", ivl(13, 1, hour), 34239600},
		{"second", ivl(0, 0, -(4*hour + 5*60_000_000 + 6_700_000)), -6.7},
		{"quarter", ivl(5, 0, 0), 2},
		{"microseconds", ivl(0, 0, 1_500_000), 1500000},
		{"hour", ivl(0, 3, 4*hour+5*60_000_000), 4},
	} {
		got, err := datePartAny(nil, call, []any{c.field, c.in})
		if err != nil || got != c.want {
			t.Errorf("date_part(%s, %+v) = %v, %v, want %v", c.field, c.in, got, err, c.want)
		}
	}
}

func TestToChar(t *testing.T) {
	for _, c := range []struct {
		v    any
		tmpl string
		want string
	}{
		{ts("2026-03-14 15:09:26.535"), "YYYY-MM-DD HH24:MI:SS.MS", "2026-03-14 15:09:26.535"},
		{ts("2026-03-14 15:09:26.535"), "Dy, DD Mon YYYY HH12:MI AM", "Sat, 14 Mar 2026 03:09 PM"},
		{ts("2026-03-14 15:09:26.535"), "FMMonth FMDDth, YYYY", "March 14th, 2026"},
		{ts("2026-03-14 15:09:26.535"), `Day|Month|"Q"Q|WW|IW|IYYY|DDD|D|US`, "Saturday |March    |Q1|11|11|2026|073|7|535000"},
		{ts("2000-12-31 23:59:59.999"), "YY YYY Y,YYY CC J am a.m. HH MI SS SSSS FF3 RM TZ", "00 000 2,000 20 2451910 pm p.m. 11 59 59 86399 999 XII  "},
		{ivl(14, 3, 4*hour+5*60_000_000+6_789_000), "YYYY MM DD HH24 HH12 MI SS MS US", "0001 02 03 04 04 05 06 789 789000"},
		{ivl(0, 0, 27*hour), "HH24:MI", "27:00"},
		{catalog.DateVal(20526), "YYYY-MM-DD Dy", "2026-03-14 Sat"},
		{12345.678, "99,999.99", " 12,345.68"},
		{-0.5, "9.99", " -.50"},
		{int64(7), "000", " 007"},
		{int64(7), "FM999", "7"},
		{1.5, "FM9.99", "1.5"},
		{int64(123), "99", " ##"},
		{int64(-12), "S999", " -12"},
		{int64(-12), "999PR", " <12>"},
		{int64(12), "999MI", " 12 "},
		{int64(0), "999", "   0"},
		{0.0, "9.99", "  .00"},
		{0.1, "FM0.00", "0.10"},
		{-1234567.891, "FM9,999,999.999", "-1,234,567.891"},
		{int64(5), "9PL", " 5+"},
		{int64(-5), "9PL", "-5 "},
		{int64(-12), "999MI", " 12-"},
		{int64(-5), "SG9", "-5"},
		{int64(485), "999S", "485+"},
		{9.999, "9.99", " #.##"},
	} {
		got, err := toChar(nil, &planner.Call{Name: "to_char"}, []any{c.v, c.tmpl})
		if err != nil || got != c.want {
			t.Errorf("to_char(%v, %q) = %q, %v, want %q", c.v, c.tmpl, got, err, c.want)
		}
	}
}

func TestToTimestamp(t *testing.T) {
	for _, c := range []struct {
		in, tmpl string
		want     time.Time
	}{
		{"2026-03-14 15:09:26", "YYYY-MM-DD HH24:MI:SS", ts("2026-03-14 15:09:26")},
		{"14 Mar 2026 03:09 PM", "DD Mon YYYY HH:MI AM", ts("2026-03-14 15:09:00")},
		{"20260314", "YYYYMMDD", ts("2026-03-14 00:00:00")},
		{"2026-075", "YYYY-DDD", ts("2026-03-16 00:00:00")},
		{"2026-03-14T15:09:26+05:30", `YYYY-MM-DD"T"HH24:MI:SSTZH:TZM`, ts("2026-03-14 09:39:26")},
		{"March 14, 2026", "Month DD, YYYY", ts("2026-03-14 00:00:00")},
		{"14/03/26", "DD/MM/YY", ts("2026-03-14 00:00:00")},
		{"12:30:45.123456 AM", "HH12:MI:SS.US AM", time.Date(0, 1, 1, 0, 30, 45, 123456000, time.UTC)},
	} {
		p, err := parseTemplate(c.in, c.tmpl)
		var got time.Time
		if err == nil {
			got, err = p.time(time.UTC)
		}
		if err != nil || !got.Equal(c.want) {
			t.Errorf("to_timestamp(%q, %q) = %v, %v, want %v", c.in, c.tmpl, got, err, c.want)
		}
	}
	for _, c := range []struct {
		in, tmpl string
		code     pgerr.Code
	}{
		{"2026-13-14", "YYYY-MM-DD", pgerr.DatetimeFieldOverflow},
		{"xx26", "YYYY", pgerr.InvalidDatetimeFormat},
		{"13:00", "HH:MI", pgerr.InvalidDatetimeFormat},
		{"2026", "YYYY-MM", pgerr.InvalidDatetimeFormat},
	} {
		p, err := parseTemplate(c.in, c.tmpl)
		if err == nil {
			_, err = p.time(time.UTC)
		}
		if code(err) != c.code {
			t.Errorf("to_timestamp(%q, %q): %v, want %s", c.in, c.tmpl, err, c.code)
		}
	}
	if got, _ := toTimestamp(nil, nil, []any{1773500966.535}); !got.(time.Time).Equal(ts("2026-03-14 15:09:26.535")) {
		t.Errorf("to_timestamp(1773500966.535) = %v", got)
	}
}

func TestMakeFuncs(t *testing.T) {
	got, err := makeInterval(0, []any{int64(1), int64(2), int64(3), int64(4), int64(5), int64(6), 7.5})
	if want := ivl(14, 25, 5*hour+6*60_000_000+7_500_000); err != nil || got != want {
		t.Errorf("make_interval = %+v, %v, want %+v", got, err, want)
	}
	if got, err := makeInterval(0, []any{int64(0), int64(0), int64(2)}); err != nil || got != ivl(0, 14, 0) {
		t.Errorf("make_interval(weeks => 2) = %+v, %v", got, err)
	}
	if got, err := makeDate(0, []any{int64(2026), int64(3), int64(14)}); err != nil || got != catalog.DateVal(20526) {
		t.Errorf("make_date = %v, %v", got, err)
	}
	if _, err := makeDate(0, []any{int64(2026), int64(2), int64(30)}); code(err) != pgerr.DatetimeFieldOverflow {
		t.Errorf("make_date(2026, 2, 30): %v", err)
	}
	if got, err := makeTime(0, []any{int64(23), int64(59), 59.999999}); err != nil || got != catalog.TimeOfDay(86399999999) {
		t.Errorf("make_time = %v, %v", got, err)
	}
	if got, err := makeTimestamp(0, []any{int64(-44), int64(3), int64(15), int64(12), int64(0), 0.0}); err != nil ||
		!got.(time.Time).Equal(time.Date(-43, 3, 15, 12, 0, 0, 0, time.UTC)) {
		t.Errorf("make_timestamp(-44, ...) = %v, %v", got, err)
	}
}

func TestStringFuncs(t *testing.T) {
	for _, c := range []struct {
		fn   string
		args []any
		want any
	}{
		{"split_part", []any{"a,b,c", ",", int64(-1)}, "c"},
		{"split_part", []any{"a,b,c", ",", int64(4)}, ""},
		{"split_part", []any{"abc", "", int64(1)}, "abc"},
		{"strpos", []any{"héllo", "llo"}, int64(3)},
		{"strpos", []any{"abc", ""}, int64(1)},
		{"left", []any{"héllo", int64(-2)}, "hél"},
		{"right", []any{"héllo", int64(2)}, "lo"},
		{"lpad", []any{"hi", int64(5), "xy"}, "xyxhi"},
		{"lpad", []any{"hello", int64(2), "xy"}, "he"},
		{"rpad", []any{"hi", int64(5), ""}, "hi"},
		{"repeat", []any{"ab", int64(-1)}, ""},
		{"initcap", []any{"hi THOMAS o'neil x2y"}, "Hi Thomas O'Neil X2y"},
		{"translate", []any{"12345", "143", "ax"}, "a2x5"},
		{"ascii", []any{""}, int64(0)},
		{"chr", []any{int64(233)}, "é"},
		{"overlay", []any{"Txxxxas", "hom", int64(2), int64(4)}, "Thomas"},
		{"regexp_replace", []any{"foobarbaz", "b(..)", `X\1Y`, "g"}, "fooXarYXazY"},
		{"regexp_replace", []any{"a$b", `\$`, "$"}, "a$b"},
		{"regexp_count", []any{"ABCABC", "b", int64(3), "i"}, int64(1)},
	} {
		got, err := strictFuncs[c.fn](catalog.Varchar, c.args)
		if err != nil || got != c.want {
			t.Errorf("%s%v = %v, %v, want %v", c.fn, c.args, got, err, c.want)
		}
	}
	for _, c := range []struct {
		fn   string
		args []any
		code pgerr.Code
	}{
		{"chr", []any{int64(0)}, pgerr.ProgramLimitExceeded},
		{"chr", []any{int64(0x110000)}, pgerr.ProgramLimitExceeded},
		{"split_part", []any{"a", ",", int64(0)}, pgerr.InvalidParameterValue},
		{"repeat", []any{"ab", int64(1 << 40)}, pgerr.ProgramLimitExceeded},
		{"regexp_replace", []any{"a", "(", "b"}, pgerr.InvalidRegularExpression},
		{"regexp_replace", []any{"a", "a", "b", "q"}, pgerr.InvalidParameterValue},
	} {
		if _, err := strictFuncs[c.fn](catalog.Varchar, c.args); code(err) != c.code {
			t.Errorf("%s%v: %v, want %s", c.fn, c.args, err, c.code)
		}
	}
}

func TestMathFuncs(t *testing.T) {
	for _, c := range []struct {
		fn   string
		t    catalog.Type
		args []any
		want any
	}{
		{"mod", catalog.Int, []any{int64(-7), int64(3)}, int64(-1)},
		{"mod", catalog.BigInt, []any{int64(-9223372036854775808), int64(-1)}, int64(0)},
		{"div", catalog.Double, []any{-7.0, 2.0}, -3.0},
		{"gcd", catalog.Int, []any{int64(-12), int64(18)}, int64(6)},
		{"lcm", catalog.Int, []any{int64(-4), int64(6)}, int64(12)},
		{"width_bucket", catalog.Int, []any{5.35, 0.024, 10.06, int64(5)}, int64(3)},
		{"width_bucket", catalog.Int, []any{10.06, 0.024, 10.06, int64(5)}, int64(6)},
		{"trunc", catalog.Double, []any{-2.567, int64(2)}, -2.56},
		{"log", catalog.Double, []any{2.0, 8.0}, 3.0},
		{"power", catalog.Double, []any{-2.0, 3.0}, -8.0},
		{"sind", catalog.Double, []any{30.0}, 0.5},
		{"cbrt", catalog.Double, []any{-27.0}, -3.0},
	} {
		got, err := strictFuncs[c.fn](c.t, c.args)
		if err != nil || fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s%v = %v, %v, want %v", c.fn, c.args, got, err, c.want)
		}
	}
	for _, c := range []struct {
		fn   string
		t    catalog.Type
		args []any
		code pgerr.Code
	}{
		{"ln", catalog.Double, []any{0.0}, pgerr.InvalidArgumentForLogarithm},
		{"log", catalog.Double, []any{1.0, 8.0}, pgerr.DivisionByZero},
		{"mod", catalog.Int, []any{int64(1), int64(0)}, pgerr.DivisionByZero},
		{"div", catalog.BigInt, []any{int64(-9223372036854775808), int64(-1)}, pgerr.NumericValueOutOfRange},
		{"gcd", catalog.Int, []any{int64(-2147483648), int64(0)}, pgerr.NumericValueOutOfRange},
		{"gcd", catalog.BigInt, []any{int64(-9223372036854775808), int64(0)}, pgerr.NumericValueOutOfRange},
		{"lcm", catalog.Int, []any{int64(2147483647), int64(2)}, pgerr.NumericValueOutOfRange},
		{"power", catalog.Double, []any{10.0, 400.0}, pgerr.NumericValueOutOfRange},
		{"exp", catalog.Double, []any{-1000.0}, pgerr.NumericValueOutOfRange},
		{"asin", catalog.Double, []any{1.5}, pgerr.NumericValueOutOfRange},
		{"width_bucket", catalog.Int, []any{1.0, 0.0, 1.0, int64(0)}, pgerr.InvalidArgumentForWidthBucketFunction},
	} {
		if _, err := strictFuncs[c.fn](c.t, c.args); code(err) != c.code {
			t.Errorf("%s%v: %v, want %s", c.fn, c.args, err, c.code)
		}
	}
}
