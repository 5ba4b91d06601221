package serde

import (
	"testing"
	"time"

	"github.com/basindb/basin/catalog"
)

func TestJSONDatetime(t *testing.T) {
	for _, c := range []struct {
		typ  catalog.Type
		in   string
		want any
		out  string
	}{
		{catalog.Date, `"2024-01-02"`, catalog.DateVal(19724), `"2024-01-02"`},
		{catalog.Date, `19724`, catalog.DateVal(19724), `"2024-01-02"`},
		{catalog.Time, `"13:04:05.5"`, catalog.TimeOfDay(47045500000), `"13:04:05.5"`},
		{catalog.Time, `47045500`, catalog.TimeOfDay(47045500000), `"13:04:05.5"`},
		{catalog.TimestampTZ, `"2024-01-02T03:04:05.123+02:00"`, time.Date(2024, 1, 2, 1, 4, 5, 123000000, time.UTC), `"2024-01-02T01:04:05.123Z"`},
		{catalog.TimestampTZ, `1704164645123`, time.Date(2024, 1, 2, 3, 4, 5, 123000000, time.UTC), `"2024-01-02T03:04:05.123Z"`},
		{catalog.Interval, `"1 year 2 mons 3 days 04:05:06.5"`, catalog.IntervalVal{Months: 14, Days: 3, Micros: 14706500000}, `"P1Y2M3DT4H5M6.5S"`},
		{catalog.Interval, `"P1DT2H"`, catalog.IntervalVal{Days: 1, Micros: 7200000000}, `"P1DT2H"`},
		{catalog.Interval, `"-1 day +02:00"`, catalog.IntervalVal{Days: -1, Micros: 7200000000}, `"P-1DT2H"`},
		{catalog.Interval, `"00:00:00"`, catalog.IntervalVal{}, `"PT0S"`},
	} {
		v, cerr := decodeJSONScalar([]byte(c.in), c.typ)
		if cerr != nil {
			t.Errorf("%s %s: %s", c.typ, c.in, cerr.msg)
			continue
		}
		if v != c.want && !(c.typ == catalog.TimestampTZ && v.(time.Time).Equal(c.want.(time.Time))) {
			t.Errorf("%s %s = %v, want %v", c.typ, c.in, v, c.want)
		}
		out, err := appendJSONValue(nil, c.typ, "c", v)
		if err != nil || string(out) != c.out {
			t.Errorf("%s %v written as %s, %v; want %s", c.typ, v, out, err, c.out)
		}
		back, cerr := decodeJSONScalar(out, c.typ)
		if cerr != nil || back != v && !(c.typ == catalog.TimestampTZ && back.(time.Time).Equal(v.(time.Time))) {
			t.Errorf("%s %s does not read back: %v", c.typ, out, back)
		}
	}
	for _, c := range []struct {
		typ catalog.Type
		in  string
	}{
		{catalog.Date, `"2024-02-30"`}, {catalog.Date, `"x"`}, {catalog.Time, `-1`}, {catalog.Interval, `5`},
		{catalog.TimestampTZ, `true`}, {catalog.Interval, `"1 fortnight"`},
	} {
		if v, cerr := decodeJSONScalar([]byte(c.in), c.typ); cerr == nil {
			t.Errorf("%s %s = %v, want an error", c.typ, c.in, v)
		}
	}
}
