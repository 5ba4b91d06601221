package catalog

import (
	"time"

	"github.com/cockroachdb/apd/v3"
)

// The types beyond the first six, in the order they were added. Their
// values continue Type's numbering after the system types (Type is
// recorded as a number in the command log, so existing numbers never
// change). Values travel through the engine as:
//
//	Date         DateVal    days since 1970-01-01
//	Time         TimeOfDay  microseconds since midnight
//	TimestampTZ  time.Time  the instant, in UTC (the session's TimeZone
//	                        only changes how it is written and read)
//	Interval     IntervalVal months, days and microseconds, kept apart
//	Decimal      *apd.Decimal, never mutated once made
//	UUID         UUIDVal
//	JSONB, JSON  JSONText: a JSONB value's canonical text (keys sorted
//	             and unique, Postgres's spacing), a JSON value's text as
//	             given
//	Bytea        []byte
//
// Arrays of each are []any, as for the first six.
const (
	Date Type = Record + 1 + iota
	Time
	TimestampTZ
	Interval
	Decimal
	UUID
	JSONB
	JSON
	Bytea
)

// lastStorable is the last Type a column may have.
const lastStorable = Bytea

// DateVal is a DATE value: the number of days since 1970-01-01.
type DateVal int32

// DateOf returns the date t falls on, in t's location.
func DateOf(t time.Time) DateVal {
	y, m, d := t.Date()
	return DateVal(time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix() / 86400)
}

// Time returns the midnight that starts d, in UTC.
func (d DateVal) Time() time.Time { return time.Unix(int64(d)*86400, 0).UTC() }

// TimeOfDay is a TIME value: microseconds since midnight, from 0 to
// 24h inclusive (Postgres accepts 24:00:00).
type TimeOfDay int64

// IntervalVal is an INTERVAL value. Postgres keeps months, days and time
// apart because their lengths vary: a month is not always 30 days, nor a
// day 24 hours across a daylight saving change. Comparison and hashing
// treat a month as 30 days and a day as 24 hours, as Postgres does, so
// '1 month' = '30 days'.
type IntervalVal struct {
	Months int32
	Days   int32
	Micros int64
}

// Span returns i in microseconds, a month counted as 30 days and a day
// as 24 hours: the measure Postgres compares intervals by. It is a
// 128-bit quantity in Postgres; the int64 here overflows only for
// intervals beyond ±292,000 years.
func (i IntervalVal) Span() int64 {
	const day = 24 * int64(time.Hour/time.Microsecond)
	return (int64(i.Months)*30+int64(i.Days))*day + i.Micros
}

// UUIDVal is a UUID value, its 16 bytes in order.
type UUIDVal [16]byte

// JSONText is a JSONB or JSON value as text.
type JSONText string

// NewDecimal returns the Decimal value of a string in SQL numeric
// syntax, or false.
func NewDecimal(s string) (*apd.Decimal, bool) {
	d, _, err := apd.NewFromString(s)
	return d, err == nil
}
