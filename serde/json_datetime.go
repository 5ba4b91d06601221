package serde

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/pgcodec"
)

// JSON forms of DATE, TIME, TIMESTAMPTZ and INTERVAL. Read: a DATE from
// "YYYY-MM-DD" (any form date input takes) or an integer of days since
// 1970-01-01; a TIME from "HH:MM:SS[.f]" or an integer of milliseconds
// since midnight; a TIMESTAMPTZ from ISO 8601 text (without an offset it
// is UTC) or epoch milliseconds, as TIMESTAMP; an INTERVAL from Postgres
// or ISO 8601 text ("1 day 02:00:00", "P1DT2H"). Written: ISO text,
// which every JSON consumer can read back and people can too: DATE
// "2024-01-02", TIME "13:04:05.5", TIMESTAMPTZ RFC 3339 in UTC
// ("2024-01-02T03:04:05.123Z"), INTERVAL an ISO 8601 duration
// ("P1Y2M3DT4H5M6.5S", "PT0S" for zero).

// decodeJSONDatetime is decodeJSONScalar for the four types; ok is false
// for another type.
func decodeJSONDatetime(raw []byte, t catalog.Type) (v any, ok bool, cerr *convError) {
	if !pgcodec.IsDatetime(t) {
		return nil, false, nil
	}
	bad := func(want string) (any, bool, *convError) {
		return nil, true, &convError{pgerr.InvalidDatetimeFormat, fmt.Sprintf("expected %s, found %s (want %s)", t, describeJSON(raw), want)}
	}
	if text, isNum := numberText(raw); isNum {
		n, err := strconv.ParseInt(string(text), 10, 64)
		switch t {
		case catalog.Date:
			if err != nil || n < -2440588 || n > 2145042905 {
				return bad("'YYYY-MM-DD' or days since 1970-01-01")
			}
			return catalog.DateVal(n), true, nil
		case catalog.Time:
			if err != nil || n < 0 || n > 86_400_000 {
				return bad("'HH:MM:SS[.ffffff]' or milliseconds since midnight")
			}
			return catalog.TimeOfDay(n * 1000), true, nil
		case catalog.TimestampTZ:
			v, cerr := parseEpochMillis(text, raw)
			return v, true, cerr
		}
		return bad("an interval as text: '1 day 02:00:00' or 'P1DT2H'")
	}
	if raw[0] != '"' {
		return nil, true, mismatch(t, raw)
	}
	s := strings.TrimSpace(jsonString(raw))
	out, _, err := pgcodec.ParseText(t, s, time.UTC)
	if err != nil {
		msg := err.Error()
		if pe, ok := pgerr.As(err); ok {
			msg = pe.Message
		}
		return nil, true, &convError{pgerr.CodeOf(err), fmt.Sprintf("expected %s, found %s: %s", t, describeJSON(raw), msg)}
	}
	return out, true, nil
}

// appendJSONDatetime is appendJSONValue for the four types; ok is false
// for another type or Go value.
func appendJSONDatetime(buf []byte, t catalog.Type, v any) ([]byte, bool) {
	switch x := v.(type) {
	case catalog.DateVal:
		if t == catalog.Date {
			buf = append(buf, '"')
			return append(pgcodec.AppendDate(buf, x), '"'), true
		}
	case catalog.TimeOfDay:
		if t == catalog.Time {
			buf = append(buf, '"')
			return append(pgcodec.AppendTimeOfDay(buf, x), '"'), true
		}
	case time.Time:
		if t == catalog.TimestampTZ {
			buf = append(buf, '"')
			return append(x.UTC().AppendFormat(buf, time.RFC3339Nano), '"'), true
		}
	case catalog.IntervalVal:
		if t == catalog.Interval {
			buf = append(buf, '"')
			return append(AppendISOInterval(buf, x), '"'), true
		}
	}
	return buf, false
}

// AppendISOInterval appends i as an ISO 8601 duration, each field with
// its own sign as Postgres's IntervalStyle iso_8601 writes it.
func AppendISOInterval(b []byte, i catalog.IntervalVal) []byte {
	if i == (catalog.IntervalVal{}) {
		return append(b, "PT0S"...)
	}
	b = append(b, 'P')
	field := func(n int64, unit byte) {
		if n != 0 {
			b = strconv.AppendInt(b, n, 10)
			b = append(b, unit)
		}
	}
	field(int64(i.Months/12), 'Y')
	field(int64(i.Months%12), 'M')
	field(int64(i.Days), 'D')
	if us := i.Micros; us != 0 {
		b = append(b, 'T')
		field(us/3_600_000_000, 'H')
		field(us/60_000_000%60, 'M')
		if s := us % 60_000_000; s != 0 {
			if s < 0 {
				b = append(b, '-')
				s = -s
			}
			b = strconv.AppendInt(b, s/1_000_000, 10)
			if f := s % 1_000_000; f != 0 {
				b = append(b, '.')
				b = append(b, strings.TrimRight(fmt.Sprintf("%06d", f), "0")...)
			}
			b = append(b, 'S')
		}
	}
	return b
}
