package pgcodec

import (
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
)

// intervalUnits maps the unit words interval input takes to the field
// they add to. Postgres's DecodeUnits table is the reference.
var intervalUnits = map[string]string{
	"microsecond": "us", "microseconds": "us", "us": "us", "usec": "us", "usecs": "us", "useconds": "us", "usecond": "us",
	"millisecond": "ms", "milliseconds": "ms", "ms": "ms", "msec": "ms", "msecs": "ms", "mseconds": "ms", "msecond": "ms",
	"second": "s", "seconds": "s", "s": "s", "sec": "s", "secs": "s",
	"minute": "min", "minutes": "min", "m": "min", "min": "min", "mins": "min",
	"hour": "h", "hours": "h", "h": "h", "hr": "h", "hrs": "h",
	"day": "d", "days": "d", "d": "d",
	"week": "w", "weeks": "w", "w": "w",
	"month": "mon", "months": "mon", "mon": "mon", "mons": "mon",
	"year": "y", "years": "y", "y": "y", "yr": "y", "yrs": "y",
	"decade": "dec", "decades": "dec", "dec": "dec", "decs": "dec",
	"century": "c", "centuries": "c", "cent": "c", "c": "c",
	"millennium": "mil", "millennia": "mil", "millenniums": "mil", "mil": "mil", "mils": "mil",
}

// IntervalUnit returns the field an interval unit word names ("DAY" →
// "d"), for INTERVAL '3' DAY; ok is false for an unknown word.
func IntervalUnit(word string) (string, bool) {
	u, ok := intervalUnits[strings.ToLower(word)]
	return u, ok
}

// intervalAcc accumulates an interval's fields in big integers, so that
// overflow is found at the end, as Postgres finds it per field.
type intervalAcc struct {
	months, days, micros big.Int
}

func (a *intervalAcc) add(unit string, v float64) {
	whole, frac := math.Modf(v)
	w := new(big.Int)
	new(big.Float).SetFloat64(whole).Int(w)
	mul := func(dst *big.Int, n int64) { dst.Add(dst, new(big.Int).Mul(w, big.NewInt(n))) }
	fracMicros := func(unitMicros float64) {
		a.micros.Add(&a.micros, big.NewInt(int64(math.Round(frac*unitMicros))))
	}
	fracDays := func(days float64) {
		// Postgres's AdjustFractDays: whole days, the rest as time.
		d := frac * days
		wd, fd := math.Modf(d)
		a.days.Add(&a.days, big.NewInt(int64(wd)))
		a.micros.Add(&a.micros, big.NewInt(int64(math.Round(fd*float64(usPerDay)))))
	}
	switch unit {
	case "us":
		a.micros.Add(&a.micros, w)
		fracMicros(1)
	case "ms":
		mul(&a.micros, 1000)
		fracMicros(1000)
	case "s":
		mul(&a.micros, usPerSec)
		fracMicros(float64(usPerSec))
	case "min":
		mul(&a.micros, usPerMin)
		fracMicros(float64(usPerMin))
	case "h":
		mul(&a.micros, usPerHour)
		fracMicros(float64(usPerHour))
	case "d":
		a.days.Add(&a.days, w)
		fracMicros(float64(usPerDay))
	case "w":
		mul(&a.days, 7)
		fracDays(7)
	case "mon":
		a.months.Add(&a.months, w)
		fracDays(30)
	case "y":
		mul(&a.months, 12)
		a.months.Add(&a.months, big.NewInt(int64(math.Round(frac*12))))
	case "dec":
		mul(&a.months, 120)
		a.months.Add(&a.months, big.NewInt(int64(math.Round(frac*120))))
	case "c":
		mul(&a.months, 1200)
		a.months.Add(&a.months, big.NewInt(int64(math.Round(frac*1200))))
	case "mil":
		mul(&a.months, 12000)
		a.months.Add(&a.months, big.NewInt(int64(math.Round(frac*12000))))
	}
}

func (a *intervalAcc) value(s string) (catalog.IntervalVal, error) {
	if !a.months.IsInt64() || !a.days.IsInt64() || !a.micros.IsInt64() {
		return catalog.IntervalVal{}, intervalOverflow(s)
	}
	m, d := a.months.Int64(), a.days.Int64()
	if m > math.MaxInt32 || m < math.MinInt32 || d > math.MaxInt32 || d < math.MinInt32 {
		return catalog.IntervalVal{}, intervalOverflow(s)
	}
	return catalog.IntervalVal{Months: int32(m), Days: int32(d), Micros: a.micros.Int64()}, nil
}

func (a *intervalAcc) negate() {
	a.months.Neg(&a.months)
	a.days.Neg(&a.days)
	a.micros.Neg(&a.micros)
}

func intervalOverflow(s string) *pgerr.Error {
	return pgerr.New(pgerr.IntervalFieldOverflow, "interval field value out of range: %q", s)
}

// ParseInterval is interval's input function: Postgres's own forms
// ("1 year 2 mons 3 days 04:05:06.5", "-1 day +02:00", "@ 1 hour ago",
// "1.5 hours", "90 seconds", "1 week", a bare number of seconds) and ISO
// 8601 durations ("P1Y2M3DT4H5M6S", "PT1H30M").
func ParseInterval(s string) (catalog.IntervalVal, error) {
	return ParseIntervalField(s, "")
}

// ParseIntervalField is ParseInterval for INTERVAL 'text' unit: a bare
// number counts units of unit (IntervalUnit's field; "" is seconds).
func ParseIntervalField(s, unit string) (catalog.IntervalVal, error) {
	bad := func() (catalog.IntervalVal, error) {
		return catalog.IntervalVal{}, badDatetime(catalog.Interval, s)
	}
	w := strings.ToLower(strings.TrimSpace(s))
	switch w {
	case "infinity", "+infinity", "-infinity":
		return catalog.IntervalVal{}, infinite(catalog.Interval, s)
	case "":
		return bad()
	}
	var acc intervalAcc
	if w[0] == 'p' {
		if !parseISOInterval(w[1:], &acc) {
			return bad()
		}
		return acc.value(s)
	}
	w = strings.TrimSpace(strings.TrimPrefix(w, "@"))
	toks := tokenizeInterval(w)
	if len(toks) == 0 {
		return bad()
	}
	ago := false
	if toks[len(toks)-1] == "ago" {
		ago, toks = true, toks[:len(toks)-1]
	}
	for i := 0; i < len(toks); i++ {
		tok := toks[i]
		if strings.Contains(tok, ":") {
			us, ok, inRange := parseIntervalClock(tok)
			if !ok {
				return bad()
			}
			if !inRange {
				return catalog.IntervalVal{}, intervalOverflow(s)
			}
			acc.micros.Add(&acc.micros, big.NewInt(us))
			continue
		}
		num, err := strconv.ParseFloat(tok, 64)
		if err != nil || !validNumber(tok) {
			return bad()
		}
		u := unit
		if u == "" {
			u = "s"
		}
		if i+1 < len(toks) {
			if f, ok := intervalUnits[toks[i+1]]; ok {
				u = f
				i++
			} else if _, err := strconv.ParseFloat(toks[i+1], 64); err != nil && !strings.Contains(toks[i+1], ":") {
				return bad()
			}
		}
		if math.IsInf(num, 0) || math.Abs(num) > 1e18 {
			return catalog.IntervalVal{}, intervalOverflow(s)
		}
		acc.add(u, num)
	}
	if ago {
		acc.negate()
	}
	return acc.value(s)
}

func validNumber(tok string) bool {
	for i := 0; i < len(tok); i++ {
		c := tok[i]
		if !(c >= '0' && c <= '9' || c == '.' || (i == 0 && (c == '+' || c == '-'))) {
			return false
		}
	}
	return tok != "" && tok != "+" && tok != "-" && tok != "."
}

// tokenizeInterval splits interval text into numbers (with their sign),
// unit words and clock times: "1day -2:00" → 1, day, -2:00.
func tokenizeInterval(w string) []string {
	var toks []string
	i := 0
	for i < len(w) {
		c := w[i]
		switch {
		case c == ' ' || c == '\t' || c == ',':
			i++
		case c >= 'a' && c <= 'z':
			j := i
			for j < len(w) && w[j] >= 'a' && w[j] <= 'z' {
				j++
			}
			toks = append(toks, w[i:j])
			i = j
		default:
			j := i + 1
			for j < len(w) && (w[j] >= '0' && w[j] <= '9' || w[j] == '.' || w[j] == ':') {
				j++
			}
			toks = append(toks, w[i:j])
			i = j
		}
	}
	return toks
}

// parseIntervalClock reads [+-]H:MM[:SS[.f]] (hours unbounded) or
// MM:SS.f, as microseconds; inRange is false for minutes or seconds
// past 59.
func parseIntervalClock(tok string) (us int64, ok, inRange bool) {
	neg := false
	if tok[0] == '-' || tok[0] == '+' {
		neg, tok = tok[0] == '-', tok[1:]
	}
	parts := strings.Split(tok, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return 0, false, false
	}
	var h, m, sec int64
	var frac int64
	last := parts[len(parts)-1]
	whole, fr, hasFrac := strings.Cut(last, ".")
	if hasFrac && !allDigits(fr) {
		return 0, false, false
	}
	if hasFrac && fr != "" {
		frac = roundFraction(fr)
	}
	nums := append(append([]string{}, parts[:len(parts)-1]...), whole)
	for _, n := range nums {
		if n == "" || !allDigits(n) || len(n) > 12 {
			return 0, false, false
		}
	}
	if len(parts) == 2 && hasFrac {
		// MM:SS.f
		m, _ = strconv.ParseInt(nums[0], 10, 64)
		sec, _ = strconv.ParseInt(nums[1], 10, 64)
	} else {
		h, _ = strconv.ParseInt(nums[0], 10, 64)
		m, _ = strconv.ParseInt(nums[1], 10, 64)
		if len(nums) == 3 {
			sec, _ = strconv.ParseInt(nums[2], 10, 64)
		}
	}
	if m > 59 || sec > 59 || h > math.MaxInt64/usPerHour-1 {
		return 0, true, false
	}
	us = h*usPerHour + m*usPerMin + sec*usPerSec + frac
	if neg {
		us = -us
	}
	return us, true, true
}

// parseISOInterval reads an ISO 8601 duration after its P: nY nM nW nD,
// then T and nH nM nS, each number possibly fractional.
func parseISOInterval(w string, acc *intervalAcc) bool {
	if w == "" {
		return false
	}
	inTime := false
	for w != "" {
		if w[0] == 't' {
			if inTime {
				return false
			}
			inTime, w = true, w[1:]
			continue
		}
		j := 0
		for j < len(w) && (w[j] >= '0' && w[j] <= '9' || w[j] == '.' || j == 0 && (w[j] == '-' || w[j] == '+')) {
			j++
		}
		if j == 0 || j == len(w) || !validNumber(w[:j]) {
			return false
		}
		n, err := strconv.ParseFloat(w[:j], 64)
		if err != nil {
			return false
		}
		var u string
		switch c := w[j]; {
		case !inTime && c == 'y':
			u = "y"
		case !inTime && c == 'm':
			u = "mon"
		case !inTime && c == 'w':
			u = "w"
		case !inTime && c == 'd':
			u = "d"
		case inTime && c == 'h':
			u = "h"
		case inTime && c == 'm':
			u = "min"
		case inTime && c == 's':
			u = "s"
		default:
			return false
		}
		acc.add(u, n)
		w = w[j+1:]
	}
	return true
}
