package pgcodec

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	// The IANA zone database, embedded: SET TIME ZONE 'Europe/Paris'
	// works on a machine without one (a slim container), as in Postgres,
	// which ships its own.
	_ "time/tzdata"
	"unicode/utf8"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
)

// The date and time types DATE, TIME, TIMESTAMPTZ and INTERVAL: their
// text forms (Postgres's DateStyle ISO, MDY and IntervalStyle postgres)
// and binary forms (integer datetimes). TIMESTAMPTZ is the one whose
// text depends on the session: it is written in, and read without an
// offset in, the session's TimeZone, which the ...In functions take.

const (
	usPerSec  = int64(1_000_000)
	usPerMin  = 60 * usPerSec
	usPerHour = 60 * usPerMin
	usPerDay  = 24 * usPerHour

	// epochDays is 2000-01-01 in days since 1970-01-01: the zero of
	// binary dates.
	epochDays = EpochUnix / 86400

	// maxDateVal and minDateVal bound DATE as Postgres does (4714-11-24
	// BC to 5874897-12-31), in days since 1970-01-01.
	minDateVal = -2440588
	// maxTimestampDays is 294277-01-01, past Postgres's last timestamp.
	maxTimestampDays = 106762940
	maxDateVal       = 2145042905
)

// datetimeOIDs are the OIDs of the four types, for parameters and peers.
var datetimeOIDs = map[uint32]catalog.Type{
	oidDate: catalog.Date, 1083: catalog.Time, oidTimestampTZ: catalog.TimestampTZ, 1186: catalog.Interval,
	1182: catalog.ArrayOf(catalog.Date), 1183: catalog.ArrayOf(catalog.Time),
	1185: catalog.ArrayOf(catalog.TimestampTZ), 1187: catalog.ArrayOf(catalog.Interval),
}

// IsDatetime reports whether t is one of DATE, TIME, TIMESTAMPTZ and
// INTERVAL.
func IsDatetime(t catalog.Type) bool {
	return t == catalog.Date || t == catalog.Time || t == catalog.TimestampTZ || t == catalog.Interval
}

// ParseText is the input function of type t over s, with loc the
// session's TimeZone (TIMESTAMPTZ text without an offset is read in it;
// nil is UTC). It covers the date and time types and otherwise does what
// CastText does; ok is false for a type neither knows.
func ParseText(t catalog.Type, s string, loc *time.Location) (v any, ok bool, err error) {
	switch t {
	case catalog.Date:
		v, err = ParseDate(s)
	case catalog.Time:
		v, err = ParseTime(s)
	case catalog.TimestampTZ:
		v, err = ParseTimestampTZ(s, loc)
	case catalog.Interval:
		v, err = ParseInterval(s)
	default:
		if t.IsArray() && IsDatetime(t.Elem()) {
			arr, err := ParseArray(s, t, func(x string, et catalog.Type) (any, error) {
				v, _, err := ParseText(et, x, loc)
				return v, err
			})
			if err != nil {
				return nil, true, err
			}
			return arr, true, nil
		}
		return CastText(s, t)
	}
	if err != nil {
		return nil, true, err
	}
	return v, true, nil
}

// AppendTextIn is AppendText with TIMESTAMPTZ values written in loc
// (nil is UTC), as a session whose TimeZone is loc sees them.
func AppendTextIn(b []byte, t catalog.Type, v any, loc *time.Location) ([]byte, error) {
	if t == catalog.TimestampTZ {
		if x, ok := v.(time.Time); ok {
			return AppendTimestampTZ(b, x, loc), nil
		}
	}
	if t.IsArray() && t.Elem() == catalog.TimestampTZ {
		if x, ok := v.([]any); ok {
			return append(b, catalog.FormatArray(t, x, func(e any) string {
				out, err := AppendTextIn(nil, catalog.TimestampTZ, e, loc)
				if err != nil {
					return fmt.Sprint(e)
				}
				return string(out)
			})...), nil
		}
	}
	return AppendText(b, t, v)
}

// appendTextDatetime is AppendText for the four types; ok is false for
// any other type.
func appendTextDatetime(b []byte, t catalog.Type, v any) (out []byte, ok bool, err error) {
	switch t {
	case catalog.Date:
		if x, ok := v.(catalog.DateVal); ok {
			return AppendDate(b, x), true, nil
		}
	case catalog.Time:
		if x, ok := v.(catalog.TimeOfDay); ok {
			return AppendTimeOfDay(b, x), true, nil
		}
	case catalog.TimestampTZ:
		if x, ok := v.(time.Time); ok {
			return AppendTimestampTZ(b, x, time.UTC), true, nil
		}
	case catalog.Interval:
		if x, ok := v.(catalog.IntervalVal); ok {
			return AppendInterval(b, x), true, nil
		}
	default:
		return b, false, nil
	}
	return b, true, fmt.Errorf("cannot encode a Go %T as %s", v, t.PGName())
}

// AppendDate appends d as Postgres's ISO DateStyle writes a date:
// 2024-01-02, and 0044-03-15 BC before year 1.
func AppendDate(b []byte, d catalog.DateVal) []byte {
	y, m, day := d.Time().Date()
	return appendYMD(b, y, int(m), day, true)
}

func appendYMD(b []byte, y, m, d int, bcSuffix bool) []byte {
	bc := y <= 0
	if bc {
		y = 1 - y
	}
	b = appendPadded(b, int64(y), 4)
	b = append(b, '-')
	b = appendPadded(b, int64(m), 2)
	b = append(b, '-')
	b = appendPadded(b, int64(d), 2)
	if bc && bcSuffix {
		b = append(b, " BC"...)
	}
	return b
}

// AppendTimeOfDay appends t as HH:MM:SS with the fraction's trailing
// zeros dropped.
func AppendTimeOfDay(b []byte, t catalog.TimeOfDay) []byte {
	us := int64(t)
	b = appendPadded(b, us/usPerHour, 2)
	b = append(b, ':')
	b = appendPadded(b, us/usPerMin%60, 2)
	b = append(b, ':')
	return appendSeconds(b, us%usPerMin)
}

// appendPadded appends v, not negative, in decimal with leading zeros
// to width digits (fmt's %0*d, without its cost: rows of timestamps are
// encoded by the million).
func appendPadded(b []byte, v int64, width int) []byte {
	var buf [20]byte
	digits := strconv.AppendInt(buf[:0], v, 10)
	for i := len(digits); i < width; i++ {
		b = append(b, '0')
	}
	return append(b, digits...)
}

// appendSeconds appends us (under a minute, not negative) as SS[.ffffff]
// with trailing zeros dropped.
func appendSeconds(b []byte, us int64) []byte {
	b = appendPadded(b, us/usPerSec, 2)
	if f := us % usPerSec; f != 0 {
		b = append(b, '.')
		start := len(b)
		b = appendPadded(b, f, 6)
		for b[len(b)-1] == '0' && len(b) > start {
			b = b[:len(b)-1]
		}
	}
	return b
}

// AppendTimestampTZ appends t as Postgres writes a timestamptz in a
// session whose TimeZone is loc: 2024-01-02 03:04:05.123+00, the offset
// as +HH, +HH:MM or +HH:MM:SS as it needs, BC after it.
func AppendTimestampTZ(b []byte, t time.Time, loc *time.Location) []byte {
	if loc == nil {
		loc = time.UTC
	}
	t = t.In(loc)
	y, m, d := t.Date()
	b = appendYMD(b, y, int(m), d, false)
	b = append(b, ' ')
	us := int64(t.Hour())*usPerHour + int64(t.Minute())*usPerMin + int64(t.Second())*usPerSec + int64(t.Nanosecond()/1000)
	b = AppendTimeOfDay(b, catalog.TimeOfDay(us))
	_, off := t.Zone()
	b = appendOffset(b, off)
	if y <= 0 {
		b = append(b, " BC"...)
	}
	return b
}

func appendOffset(b []byte, off int) []byte {
	sign := byte('+')
	if off < 0 {
		sign, off = '-', -off
	}
	b = append(b, sign)
	b = appendPadded(b, int64(off/3600), 2)
	if off%3600 != 0 {
		b = append(b, ':')
		b = appendPadded(b, int64(off/60%60), 2)
		if off%60 != 0 {
			b = append(b, ':')
			b = appendPadded(b, int64(off%60), 2)
		}
	}
	return b
}

// AppendInterval appends i as IntervalStyle postgres writes it: "1 year
// 2 mons 3 days 04:05:06.5", "-1 days +02:00:00", "00:00:00".
func AppendInterval(b []byte, i catalog.IntervalVal) []byte {
	isZero, isBefore := true, false
	part := func(v int64, unit string) {
		if v == 0 {
			return
		}
		if !isZero {
			b = append(b, ' ')
		}
		if isBefore && v > 0 {
			b = append(b, '+')
		}
		b = strconv.AppendInt(b, v, 10)
		b = append(b, ' ')
		b = append(b, unit...)
		if v != 1 {
			b = append(b, 's')
		}
		isBefore, isZero = v < 0, false
	}
	part(int64(i.Months/12), "year")
	part(int64(i.Months%12), "mon")
	part(int64(i.Days), "day")
	us := i.Micros
	if isZero || us != 0 {
		if !isZero {
			b = append(b, ' ')
		}
		switch {
		case us < 0:
			b = append(b, '-')
		case isBefore:
			b = append(b, '+')
		}
		// The magnitude of the most negative int64 is one more than
		// the most positive: uint64 holds both.
		mag := uint64(us)
		if us < 0 {
			mag = uint64(-(us + 1)) + 1
		}
		b = fmt.Appendf(b, "%02d:%02d:", mag/uint64(usPerHour), mag/uint64(usPerMin)%60)
		b = appendSeconds(b, int64(mag%uint64(usPerMin)))
	}
	return b
}

// appendBinaryDatetime is AppendBinary for the four types.
func appendBinaryDatetime(b []byte, t catalog.Type, v any) (out []byte, ok bool, err error) {
	switch t {
	case catalog.Date:
		if x, ok := v.(catalog.DateVal); ok {
			return binary.BigEndian.AppendUint32(b, uint32(int32(int64(x)-epochDays))), true, nil
		}
	case catalog.Time:
		if x, ok := v.(catalog.TimeOfDay); ok {
			return binary.BigEndian.AppendUint64(b, uint64(x)), true, nil
		}
	case catalog.TimestampTZ:
		if x, ok := v.(time.Time); ok {
			us, ok := TimestampMicros(x)
			if !ok {
				return b, true, fmt.Errorf("timestamp %v out of range", x)
			}
			return binary.BigEndian.AppendUint64(b, uint64(us)), true, nil
		}
	case catalog.Interval:
		if x, ok := v.(catalog.IntervalVal); ok {
			b = binary.BigEndian.AppendUint64(b, uint64(x.Micros))
			b = binary.BigEndian.AppendUint32(b, uint32(x.Days))
			return binary.BigEndian.AppendUint32(b, uint32(x.Months)), true, nil
		}
	default:
		return b, false, nil
	}
	return b, true, fmt.Errorf("cannot encode a Go %T as %s", v, t.PGName())
}

// decodeBinaryDatetime is the receive function of the four types.
func decodeBinaryDatetime(t catalog.Type, b []byte) (any, error) {
	want := map[catalog.Type]int{catalog.Date: 4, catalog.Time: 8, catalog.TimestampTZ: 8, catalog.Interval: 16}[t]
	if len(b) != want {
		return nil, fmt.Errorf("a binary %s is %d bytes, this one is %d", t.SQLName(), want, len(b))
	}
	switch t {
	case catalog.Date:
		days := int32(binary.BigEndian.Uint32(b))
		if days == math.MaxInt32 || days == math.MinInt32 {
			return nil, fmt.Errorf("basin dates cannot be infinite")
		}
		d := int64(days) + epochDays
		if d < minDateVal || d > maxDateVal {
			return nil, fmt.Errorf("date out of range")
		}
		return catalog.DateVal(d), nil
	case catalog.Time:
		us := int64(binary.BigEndian.Uint64(b))
		if us < 0 || us > usPerDay {
			return nil, fmt.Errorf("time out of range")
		}
		return catalog.TimeOfDay(us), nil
	case catalog.TimestampTZ:
		us := int64(binary.BigEndian.Uint64(b))
		if us == math.MaxInt64 || us == math.MinInt64 {
			return nil, fmt.Errorf("basin timestamps cannot be infinite")
		}
		secs, frac := us/1e6, us%1e6
		if frac < 0 {
			secs, frac = secs-1, frac+1e6
		}
		return time.Unix(secs+EpochUnix, frac*1000).UTC(), nil
	default:
		return catalog.IntervalVal{
			Micros: int64(binary.BigEndian.Uint64(b)),
			Days:   int32(binary.BigEndian.Uint32(b[8:])),
			Months: int32(binary.BigEndian.Uint32(b[12:])),
		}, nil
	}
}

func badDatetime(t catalog.Type, s string) *pgerr.Error {
	name := t.SQLName()
	if t == catalog.Timestamp {
		name = "timestamp" // as Postgres's timestamp_in names it
	}
	return pgerr.New(pgerr.InvalidDatetimeFormat, "invalid input syntax for type %s: %q", name, s)
}

func badZone(z string) *pgerr.Error {
	return pgerr.New(pgerr.InvalidParameterValue, "time zone %q not recognized", z)
}

func outOfRange(s string) *pgerr.Error {
	return pgerr.New(pgerr.DatetimeFieldOverflow, "date/time field value out of range: %q", s)
}

func infinite(t catalog.Type, s string) *pgerr.Error {
	return pgerr.New(pgerr.FeatureNotSupported, "%s value %q is not supported", t.SQLName(), s).
		WithDetail("basin's dates and times are finite.")
}

// dtFields are the parts of a date/time text.
type dtFields struct {
	y, m, d        int
	hasDate        bool
	micros         int64 // time of day
	hasTime        bool
	off            int // seconds east of UTC, when hasOff
	hasOff         bool
	loc            *time.Location // a named zone, when not nil
	bc             bool
	timeOutOfRange bool
	// badZone is a zone name the zone database lacks.
	badZone string
}

// parseDatetime reads ISO date/time text: a date (YYYY-MM-DD, or
// MM/DD/YYYY as DateStyle MDY reads it), a time (HH:MM[:SS[.f]]) after a
// space or a T, an offset (Z, +HH, +HH:MM, +HHMM) or a zone name, and BC
// or AD. Fields out of range set ok and leave range checks to callers.
func parseDatetime(s string) (f dtFields, ok bool) {
	w := strings.TrimSpace(s)
	u := strings.ToUpper(w)
	if strings.HasSuffix(u, " BC") {
		f.bc, w = true, strings.TrimSpace(w[:len(w)-3])
	} else if strings.HasSuffix(u, " AD") {
		w = strings.TrimSpace(w[:len(w)-3])
	}
	// A trailing zone name: the last space-separated word, if it has a
	// letter and is not a lone T.
	if i := strings.LastIndexByte(w, ' '); i > 0 {
		word := w[i+1:]
		if hasLetter(word) && !(word[0] >= '0' && word[0] <= '9') && word[0] != '+' && word[0] != '-' {
			if strings.EqualFold(word, "UTC") || strings.EqualFold(word, "GMT") {
				f.loc = time.UTC
			} else if loc, ok := ParseZone(word); ok {
				f.loc = loc
			} else {
				f.badZone = strings.ToLower(word)
			}
			w = strings.TrimSpace(w[:i])
		}
	}
	date, clock := w, ""
	if i := strings.IndexAny(w, " Tt"); i >= 0 {
		date, clock = w[:i], strings.TrimSpace(w[i+1:])
	}
	if strings.Contains(date, ":") { // a time alone
		date, clock = "", w
	}
	if date != "" {
		var parts []string
		mdy := false
		switch {
		case strings.Count(date, "-") == 2:
			parts = strings.Split(date, "-")
		case strings.Count(date, "/") == 2:
			parts, mdy = strings.Split(date, "/"), true
		case len(date) == 8 && allDigits(date):
			parts = []string{date[:4], date[4:6], date[6:]}
		default:
			return f, false
		}
		n := make([]int, 3)
		for i, p := range parts {
			if p == "" || len(p) > 9 || !allDigits(p) {
				return f, false
			}
			n[i], _ = strconv.Atoi(p)
		}
		if mdy {
			if len(parts[2]) < 3 {
				return f, false
			}
			n[0], n[1], n[2] = n[2], n[0], n[1]
		} else if len(parts[0]) < 3 {
			return f, false
		}
		f.y, f.m, f.d, f.hasDate = n[0], n[1], n[2], true
		if f.y == 0 {
			return f, false
		}
	}
	if clock != "" {
		if i := strings.IndexAny(clock, "+-Zz"); i >= 0 {
			zone := clock[i:]
			clock = strings.TrimSpace(clock[:i])
			off, err := parseZone(zone)
			if err != nil {
				return f, false
			}
			f.off, f.hasOff = off, true
		}
		us, inRange, good := parseClock(clock)
		if !good {
			return f, false
		}
		f.micros, f.hasTime, f.timeOutOfRange = us, true, !inRange
	}
	return f, f.hasDate || f.hasTime
}

// parseClock reads HH:MM[:SS[.f]]; inRange is false for fields past
// their limits (24:00:00 exactly is in range).
func parseClock(c string) (us int64, inRange, ok bool) {
	parts := strings.Split(c, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return 0, false, false
	}
	if len(parts[0]) == 0 || len(parts[0]) > 2 || !allDigits(parts[0]) || len(parts[1]) != 2 || !allDigits(parts[1]) {
		return 0, false, false
	}
	h, _ := strconv.Atoi(parts[0])
	m, _ := strconv.Atoi(parts[1])
	var sec int
	var frac int64
	if len(parts) == 3 {
		whole, fr, hasFrac := strings.Cut(parts[2], ".")
		if len(whole) != 2 || !allDigits(whole) || hasFrac && !allDigits(fr) {
			return 0, false, false
		}
		sec, _ = strconv.Atoi(whole)
		if fr != "" {
			frac = roundFraction(fr)
		}
	}
	us = int64(h)*usPerHour + int64(m)*usPerMin + int64(sec)*usPerSec + frac
	inRange = m < 60 && sec < 60 && (h < 24 || us == usPerDay)
	return us, inRange, true
}

// roundFraction returns the decimal fraction digits fr as microseconds,
// rounded as Postgres rounds them (rint: half to even).
func roundFraction(fr string) int64 {
	f, _ := strconv.ParseFloat("0."+fr, 64)
	return int64(math.RoundToEven(f * 1e6))
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func hasLetter(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i] | 0x20; c >= 'a' && c <= 'z' {
			return true
		}
	}
	return false
}

func isSpecial(s string) bool {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "infinity", "+infinity", "-infinity", "epoch", "now", "today", "tomorrow", "yesterday", "allballs":
		return true
	}
	return false
}

// makeDate returns the days since 1970-01-01 of a checked y-m-d (bc
// counting years before 1 AD).
func makeDate(f dtFields) (int64, bool) {
	y := f.y
	if f.bc {
		y = 1 - y
	}
	if f.m < 1 || f.m > 12 || f.d < 1 || f.d > 31 || y > 5874897 || y < -4712 {
		return 0, false
	}
	t := time.Date(y, time.Month(f.m), f.d, 0, 0, 0, 0, time.UTC)
	if t.Day() != f.d {
		return 0, false
	}
	days := int64(catalog.DateOf(t))
	return days, days >= minDateVal && days <= maxDateVal
}

// ParseDate is date's input function: ISO dates (a time after one is
// ignored), MM/DD/YYYY, and YYYYMMDD.
func ParseDate(s string) (catalog.DateVal, error) {
	if isEpoch(s) {
		return 0, nil
	}
	if isSpecial(s) {
		return 0, specialDate(catalog.Date, s)
	}
	f, ok := parseDatetime(s)
	if !ok || !f.hasDate {
		return 0, badDatetime(catalog.Date, s)
	}
	if f.badZone != "" {
		return 0, badZone(f.badZone)
	}
	if f.timeOutOfRange {
		return 0, outOfRange(s)
	}
	d, ok := makeDate(f)
	if !ok {
		return 0, outOfRange(s)
	}
	return catalog.DateVal(d), nil
}

// isEpoch reports whether s is the special input 'epoch':
// 1970-01-01 00:00:00 (UTC for a TIMESTAMPTZ).
func isEpoch(s string) bool { return strings.EqualFold(strings.TrimSpace(s), "epoch") }

func specialDate(t catalog.Type, s string) error {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "infinity", "+infinity", "-infinity":
		return infinite(t, s)
	}
	return pgerr.New(pgerr.FeatureNotSupported, "%s input %q is not supported", t.SQLName(), s).
		WithHint("Use now(), current_date or an explicit value.")
}

// ParseTime is time's input function: HH:MM[:SS[.f]], after a date or
// before a zone, both ignored, as Postgres ignores them for time.
func ParseTime(s string) (catalog.TimeOfDay, error) {
	if strings.EqualFold(strings.TrimSpace(s), "allballs") {
		return 0, nil
	}
	f, ok := parseDatetime(s)
	if !ok || !f.hasTime {
		return 0, badDatetime(catalog.Time, s)
	}
	if f.badZone != "" {
		return 0, badZone(f.badZone)
	}
	if f.timeOutOfRange {
		return 0, outOfRange(s)
	}
	return catalog.TimeOfDay(f.micros), nil
}

// ParseTimestampTZ is timestamptz's input function: an ISO date and
// time with an offset or zone name, or without one read in loc (nil is
// UTC).
func ParseTimestampTZ(s string, loc *time.Location) (time.Time, error) {
	wall, f, err := parseWall(catalog.TimestampTZ, s)
	if err != nil || f == nil {
		return wall, err
	}
	switch {
	case f.hasOff:
		return wall.Add(-time.Duration(f.off) * time.Second), nil
	case f.loc != nil:
		loc = f.loc
	case loc == nil:
		loc = time.UTC
	}
	return InZone(wall, loc), nil
}

// ParseTimestamp is timestamp's input function: the text
// ParseTimestampTZ reads, whose zone, if any, is checked and then
// ignored, as Postgres ignores it for timestamp.
func ParseTimestamp(s string) (time.Time, error) {
	wall, _, err := parseWall(catalog.Timestamp, s)
	return wall, err
}

// parseWall reads the date and time of timestamp or timestamptz text t
// as a UTC wall clock, with its fields (nil for 'epoch', whose instant
// wall is).
func parseWall(t catalog.Type, s string) (time.Time, *dtFields, error) {
	if isEpoch(s) {
		return time.Unix(0, 0).UTC(), nil, nil
	}
	if isSpecial(s) {
		return time.Time{}, nil, specialDate(t, s)
	}
	f, ok := parseDatetime(s)
	if !ok || !f.hasDate {
		return time.Time{}, nil, badDatetime(t, s)
	}
	if f.badZone != "" {
		return time.Time{}, nil, badZone(f.badZone)
	}
	if f.timeOutOfRange {
		return time.Time{}, nil, outOfRange(s)
	}
	days, ok := makeDate(f)
	if !ok || days >= maxTimestampDays {
		return time.Time{}, nil, outOfRange(s)
	}
	return time.Unix(days*86400, 0).UTC().Add(time.Duration(f.micros) * time.Microsecond), &f, nil
}

// InZone returns the instant whose wall clock in loc is wall's in UTC:
// timestamp → timestamptz. As in Postgres, a wall time a change of
// offset skips (spring forward) is read with the offset before the
// change, and one it repeats (fall back) with the offset after it: in
// both cases the smaller offset.
func InZone(wall time.Time, loc *time.Location) time.Time {
	if loc == nil || loc == time.UTC {
		return wall
	}
	offAt := func(t time.Time) int { _, off := t.In(loc).Zone(); return off }
	before, after := offAt(wall.Add(-24*time.Hour)), offAt(wall.Add(24*time.Hour))
	var valid []int
	for _, off := range []int{before, after} {
		if offAt(wall.Add(-time.Duration(off)*time.Second)) == off {
			valid = append(valid, off)
		}
	}
	off := before
	switch {
	case len(valid) == 1:
		off = valid[0]
	case len(valid) == 2:
		off = min(valid[0], valid[1])
	}
	if len(valid) == 0 {
		// Neither side's offset holds: the offset changed twice within
		// a day, or the time is skipped. Go's reading, then.
		if before == after {
			y, m, d := wall.Date()
			h, mi, sec := wall.Clock()
			return time.Date(y, m, d, h, mi, sec, wall.Nanosecond(), loc).UTC()
		}
	}
	return wall.Add(-time.Duration(off) * time.Second)
}

// WallClock returns t's wall clock in loc as a UTC time: timestamptz →
// timestamp.
func WallClock(t time.Time, loc *time.Location) time.Time {
	if loc == nil {
		loc = time.UTC
	}
	l := t.In(loc)
	y, m, d := l.Date()
	h, mi, sec := l.Clock()
	return time.Date(y, m, d, h, mi, sec, l.Nanosecond(), time.UTC)
}

// ParseZone reads a time zone as SET TIME ZONE and AT TIME ZONE take
// one as text: a zone name (Europe/Paris, utc, in any case), or a
// POSIX-style offset ("+02", "UTC+2", "-05:30"), which, as in Postgres,
// counts hours *west* of Greenwich: '+02' is two hours behind UTC. ok is
// false for a name the zone database lacks.
func ParseZone(z string) (*time.Location, bool) {
	w := strings.TrimSpace(z)
	switch strings.ToUpper(w) {
	case "UTC", "GMT", "Z", "ZULU", "UCT", "ETC/UTC", "UNIVERSAL":
		return time.UTC, true
	case "":
		return nil, false
	}
	posix := w
	if w[0] == '<' {
		// <+05:30>-05:30: a name in brackets, then the POSIX offset.
		i := strings.IndexByte(w, '>')
		if i < 0 || i == len(w)-1 {
			return nil, false
		}
		posix = w[i+1:]
	}
	if u := strings.ToUpper(w); len(w) > 3 && (strings.HasPrefix(u, "UTC") || strings.HasPrefix(u, "GMT")) &&
		(w[3] == '+' || w[3] == '-') {
		posix = w[3:]
	}
	if c := posix[0]; c == '+' || c == '-' || c >= '0' && c <= '9' {
		if off, err := parseZone(signed(posix)); err == nil && off > -15*3600-1 && off < 15*3600+1 {
			return time.FixedZone(w, -off), true
		}
		return nil, false
	}
	if loc, err := time.LoadLocation(w); err == nil {
		return loc, true
	}
	// Zone names are case-insensitive in Postgres.
	for _, cand := range []string{strings.ToUpper(w), titleZone(w)} {
		if loc, err := time.LoadLocation(cand); err == nil {
			return loc, true
		}
	}
	return nil, false
}

// FixedZone is a zone of off seconds east of UTC, named as Postgres
// names one given as an interval or a number of hours.
func FixedZone(off int) *time.Location {
	return time.FixedZone(string(appendOffset(nil, off)), off)
}

func signed(s string) string {
	if s[0] == '+' || s[0] == '-' {
		return s
	}
	return "+" + s
}

// titleZone capitalises each part of a zone name: europe/paris →
// Europe/Paris.
func titleZone(s string) string {
	b := []byte(strings.ToLower(s))
	up := true
	for i, c := range b {
		if up && c >= 'a' && c <= 'z' {
			b[i] = c - 32
		}
		up = c == '/' || c == '_' || c == '-'
	}
	return string(b)
}

// DecodeParamIn is DecodeParam in a session whose TimeZone is loc: a
// TIMESTAMPTZ parameter in text without an offset is read in loc, as
// Postgres reads it.
func DecodeParamIn(n int, oid uint32, format int16, b []byte, loc *time.Location) (any, error) {
	if t, ok := datetimeOIDs[oid]; ok && format == FormatText && b != nil && loc != nil && loc != time.UTC &&
		(t == catalog.TimestampTZ || t.IsArray() && t.Elem() == catalog.TimestampTZ) &&
		utf8.Valid(b) && bytes.IndexByte(b, 0) < 0 {
		v, _, err := ParseText(t, string(b), loc)
		return v, err
	}
	return DecodeParam(n, oid, format, b)
}

// ZoneParam reports whether a parameter of type oid in format is read
// in the session's TimeZone (DecodeParamIn).
func ZoneParam(oid uint32, format int16) bool {
	t, ok := datetimeOIDs[oid]
	return ok && format == FormatText && (t == catalog.TimestampTZ || t.IsArray() && t.Elem() == catalog.TimestampTZ)
}

// HoursZone reads a TimeZone setting that is a plain number of hours
// east of UTC ('+02', '-5', '5.5'), which Postgres reads so rather than
// as a POSIX zone, and returns the name Postgres gives it: <+02>-02,
// <+05:30>-05:30. ok is false for any other text.
func HoursZone(s string) (string, bool) {
	w := strings.TrimSpace(s)
	if !validNumber(w) {
		return "", false
	}
	h, err := strconv.ParseFloat(w, 64)
	if err != nil || math.Abs(h) > 24*7 {
		return "", false
	}
	secs := int(math.Round(h * 3600))
	posix := string(appendOffset(nil, -secs))
	if secs == 0 {
		posix = "-00" // Postgres negates the hours: -0
	}
	return "<" + string(appendOffset(nil, secs)) + ">" + posix, true
}
