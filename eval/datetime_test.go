package eval

import (
	"testing"
	"time"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/pgcodec"
)

func iv(t *testing.T, s string) catalog.IntervalVal {
	t.Helper()
	v, err := pgcodec.ParseInterval(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestCompareInterval holds interval comparison to Postgres's: a month
// is 30 days and a day 24 hours, whatever the fields.
func TestCompareInterval(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"1 mon", "30 days", 0},
		{"1 day", "24 hours", 0},
		{"1 year", "360 days", 0},
		{"1 year", "364 days", -1},
		{"-1 day +02:00", "-22 hours", 0},
		{"1 mon 1 microsecond", "30 days", 1},
		{"-1 microsecond", "0", -1},
		{"178000000 years", "-178000000 years", 1},
	} {
		if got := Compare(iv(t, c.a), iv(t, c.b)); got != c.want {
			t.Errorf("Compare(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
		if got := Compare(iv(t, c.b), iv(t, c.a)); got != -c.want {
			t.Errorf("Compare(%q, %q) = %d, want %d", c.b, c.a, got, -c.want)
		}
	}
	if Compare(catalog.DateVal(1), catalog.DateVal(2)) != -1 || Compare(catalog.TimeOfDay(5), catalog.TimeOfDay(5)) != 0 {
		t.Error("DATE or TIME compares wrongly")
	}
}

// TestDatetimeOp checks the operators against PostgreSQL 15's answers.
func TestDatetimeOp(t *testing.T) {
	ts := func(s string) time.Time {
		v, err := time.Parse("2006-01-02 15:04:05", s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err) // the zone database is embedded (pgcodec imports time/tzdata)
	}
	text := func(typ catalog.Type, v any, loc *time.Location) string {
		b, err := pgcodec.AppendTextIn(nil, typ, v, loc)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, c := range []struct {
		op   string
		t    catalog.Type
		a, b any
		loc  *time.Location
		want string
	}{
		{"+", catalog.Date, catalog.DateVal(19782), int64(1), nil, "2024-03-01"}, // 2024-02-29 + 1
		{"-", catalog.Int, catalog.DateVal(19782), catalog.DateVal(19723), nil, "59"},
		{"+", catalog.Timestamp, ts("2024-01-31 10:00:00"), iv(t, "1 mon"), nil, "2024-02-29 10:00:00"},
		{"-", catalog.Timestamp, ts("2024-03-31 10:00:00"), iv(t, "1 mon 1 day"), nil, "2024-02-28 10:00:00"},
		{"-", catalog.Interval, ts("2024-01-01 00:00:00"), ts("2023-12-30 12:00:00"), nil, "1 day 12:00:00"},
		{"-", catalog.Interval, ts("2023-12-30 12:00:00"), ts("2024-01-01 00:00:00"), nil, "-1 days -12:00:00"},
		{"+", catalog.TimestampTZ, ts("2024-03-09 17:00:00"), iv(t, "1 day"), ny, "2024-03-10 12:00:00-04"},
		{"+", catalog.TimestampTZ, ts("2024-03-09 17:00:00"), iv(t, "24 hours"), ny, "2024-03-10 13:00:00-04"},
		{"+", catalog.Time, catalog.TimeOfDay(36000000000), iv(t, "-11 hours"), nil, "23:00:00"},
		{"*", catalog.Interval, iv(t, "1 day"), 1.5, nil, "1 day 12:00:00"},
		{"/", catalog.Interval, iv(t, "1 mon"), 3.0, nil, "10 days"},
		{"/", catalog.Interval, iv(t, "3 days 04:00"), 7.0, nil, "10:51:25.714286"},
		{"-", catalog.Interval, iv(t, "1 day"), iv(t, "25 hours"), nil, "1 day -25:00:00"},
	} {
		got, err := DatetimeOp(c.op, c.t, c.a, c.b, c.loc)
		if err != nil {
			t.Errorf("%v %s %v: %v", c.a, c.op, c.b, err)
			continue
		}
		if s := text(c.t, got, c.loc); s != c.want {
			t.Errorf("%v %s %v = %s, want %s", c.a, c.op, c.b, s, c.want)
		}
	}
	for _, c := range []struct {
		op   string
		t    catalog.Type
		a, b any
		code pgerr.Code
	}{
		{"+", catalog.Date, catalog.DateVal(2145042905), int64(1), pgerr.DatetimeFieldOverflow},
		{"+", catalog.Timestamp, ts("2024-01-01 00:00:00"), iv(t, "300000 years"), pgerr.DatetimeFieldOverflow},
		{"+", catalog.Interval, catalog.IntervalVal{Months: 1 << 30}, catalog.IntervalVal{Months: 1 << 30}, pgerr.DatetimeFieldOverflow},
		{"/", catalog.Interval, iv(t, "1 day"), 0.0, pgerr.DivisionByZero},
	} {
		if _, err := DatetimeOp(c.op, c.t, c.a, c.b, nil); pgerr.CodeOf(err) != c.code {
			t.Errorf("%v %s %v: %v, want %s", c.a, c.op, c.b, err, c.code)
		}
	}
}
