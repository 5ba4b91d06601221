package eval

// to_char: Postgres's template patterns for times and intervals, and its
// number patterns (9, 0, ., D, ,, G, S, MI, PL, SG, PR, FM) for
// integers and double precision. A template is scanned left to right;
// at each place the longest pattern that matches is used, anything
// else (and text in double quotes) is copied.

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/basindb/basin/catalog"
)

// tmFields are the fields a time template reads: of a timestamp in its
// zone, or of an interval (which has no weekday).
type tmFields struct {
	year, month, day, hour, min, sec, usec int
	yday, wday                             int // wday: Sunday 0
	isoYear, isoWeek                       int
	zone                                   string
	offset                                 int // seconds east of UTC
	interval                               bool
}

func tmOfTime(t time.Time, withZone bool) tmFields {
	f := tmFields{year: t.Year(), month: int(t.Month()), day: t.Day(), hour: t.Hour(), min: t.Minute(), sec: t.Second(),
		usec: t.Nanosecond() / 1000, yday: t.YearDay(), wday: int(t.Weekday())}
	f.isoYear, f.isoWeek = t.ISOWeek()
	if withZone {
		f.zone, f.offset = t.Zone()
		if f.zone == "" || f.zone[0] == '+' || f.zone[0] == '-' {
			f.zone = formatOffset(f.offset)
		}
	}
	return f
}

func tmOfInterval(i catalog.IntervalVal) tmFields {
	us := i.Micros
	f := tmFields{year: int(i.Months / 12), month: int(i.Months % 12), day: int(i.Days), interval: true}
	f.hour = int(us / 3_600_000_000)
	us -= int64(f.hour) * 3_600_000_000
	f.min = int(us / 60_000_000)
	us -= int64(f.min) * 60_000_000
	f.sec = int(us / 1_000_000)
	f.usec = int(us - int64(f.sec)*1_000_000)
	return f
}

func formatOffset(off int) string {
	sign := "+"
	if off < 0 {
		sign, off = "-", -off
	}
	s := fmt.Sprintf("%s%02d", sign, off/3600)
	if m := off % 3600 / 60; m != 0 {
		s += fmt.Sprintf(":%02d", m)
	}
	return s
}

var monthNames = []string{"January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"}
var dayNames = []string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"}
var romanMonths = []string{"I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX", "X", "XI", "XII"}

// timePatterns are the time template patterns, longest first where one
// is a prefix of another.
var timePatterns = []string{
	"HH24", "HH12", "HH", "MI", "SSSSS", "SSSS", "SS", "MS", "US", "FF1", "FF2", "FF3", "FF4", "FF5", "FF6",
	"A.M.", "a.m.", "P.M.", "p.m.", "AM", "am", "PM", "pm",
	"Y,YYY", "YYYY", "YYY", "YY", "Y", "IYYY", "IYY", "IY", "I",
	"A.D.", "a.d.", "B.C.", "b.c.", "AD", "ad", "BC", "bc",
	"MONTH", "Month", "month", "MON", "Mon", "mon", "MM",
	"DAY", "Day", "day", "DY", "Dy", "dy", "DDD", "IDDD", "DD", "D", "ID",
	"WW", "W", "IW", "CC", "J", "Q", "RM", "rm", "TZH", "TZM", "TZ", "tz", "OF",
}

// toCharTime formats f with a Postgres time template.
func toCharTime(f tmFields, tmpl string) string {
	var b strings.Builder
	for i := 0; i < len(tmpl); {
		// Modifiers before a pattern: FM (no padding), TM (names in the
		// locale, which is C), FX (exact matching, for parsing only).
		fm := false
		for {
			switch {
			case strings.HasPrefix(tmpl[i:], "FM") || strings.HasPrefix(tmpl[i:], "fm"):
				fm = true
				i += 2
				continue
			case strings.HasPrefix(tmpl[i:], "TM") || strings.HasPrefix(tmpl[i:], "tm") || strings.HasPrefix(tmpl[i:], "FX") || strings.HasPrefix(tmpl[i:], "fx"):
				i += 2
				continue
			}
			break
		}
		if i >= len(tmpl) {
			break
		}
		switch tmpl[i] {
		case '"':
			j := i + 1
			for ; j < len(tmpl) && tmpl[j] != '"'; j++ {
				if tmpl[j] == '\\' && j+1 < len(tmpl) {
					j++
				}
				b.WriteByte(tmpl[j])
			}
			i = j + 1
			continue
		case '\\':
			if i+1 < len(tmpl) && tmpl[i+1] == '"' {
				b.WriteByte('"')
				i += 2
				continue
			}
		}
		pat := ""
		for _, p := range timePatterns {
			if strings.HasPrefix(tmpl[i:], p) && len(p) > len(pat) {
				pat = p
			}
		}
		if pat == "" {
			b.WriteByte(tmpl[i])
			i++
			continue
		}
		i += len(pat)
		th := ""
		if strings.HasPrefix(tmpl[i:], "TH") || strings.HasPrefix(tmpl[i:], "th") {
			th = tmpl[i : i+2]
			i += 2
		}
		out, n, isNum := timeField(f, pat, fm)
		b.WriteString(out)
		if th != "" && isNum {
			b.WriteString(ordinal(n, th == "TH"))
		}
	}
	return b.String()
}

// timeField formats one pattern; n and isNum give the number a TH
// suffix applies to.
func timeField(f tmFields, pat string, fm bool) (string, int, bool) {
	num := func(n, width int) (string, int, bool) {
		if fm {
			return strconv.Itoa(n), n, true
		}
		if n < 0 {
			return fmt.Sprintf("-%0*d", width, -n), n, true
		}
		return fmt.Sprintf("%0*d", width, n), n, true
	}
	name := func(full string, upper, lower bool, abbrev bool) (string, int, bool) {
		s := full
		if abbrev {
			s = full[:3]
		}
		switch {
		case upper:
			s = strings.ToUpper(s)
		case lower:
			s = strings.ToLower(s)
		}
		if !abbrev && !fm {
			s = fmt.Sprintf("%-9s", s)
		}
		return s, 0, false
	}
	hour12 := f.hour % 12
	if hour12 == 0 && !f.interval {
		hour12 = 12
	}
	year := f.year
	if year <= 0 && !f.interval {
		year = 1 - year // 1 BC is year 0
	}
	switch pat {
	case "HH24":
		return num(f.hour, 2)
	case "HH12", "HH":
		return num(hour12, 2)
	case "MI":
		return num(f.min, 2)
	case "SS":
		return num(f.sec, 2)
	case "SSSS", "SSSSS":
		return num(f.hour*3600+f.min*60+f.sec, 0)
	case "MS":
		return num(f.usec/1000, 3)
	case "US":
		return num(f.usec, 6)
	case "FF1", "FF2", "FF3", "FF4", "FF5", "FF6":
		d := int(pat[2] - '0')
		return num(f.usec/int(math.Pow10(6-d)), d)
	case "AM", "PM", "am", "pm", "A.M.", "P.M.", "a.m.", "p.m.":
		s := "AM"
		if f.hour >= 12 {
			s = "PM"
		}
		if strings.Contains(pat, ".") {
			s = s[:1] + "." + s[1:] + "."
		}
		if pat[0] >= 'a' {
			s = strings.ToLower(s)
		}
		return s, 0, false
	case "AD", "BC", "ad", "bc", "A.D.", "B.C.", "a.d.", "b.c.":
		s := "AD"
		if f.year <= 0 {
			s = "BC"
		}
		if strings.Contains(pat, ".") {
			s = s[:1] + "." + s[1:] + "."
		}
		if pat[0] >= 'a' {
			s = strings.ToLower(s)
		}
		return s, 0, false
	case "Y,YYY":
		return fmt.Sprintf("%d,%03d", year/1000, year%1000), year, true
	case "YYYY":
		return num(year, 4)
	case "YYY":
		return num(year%1000, 3)
	case "YY":
		return num(year%100, 2)
	case "Y":
		return num(year%10, 1)
	case "IYYY":
		return num(f.isoYear, 4)
	case "IYY":
		return num(f.isoYear%1000, 3)
	case "IY":
		return num(f.isoYear%100, 2)
	case "I":
		return num(f.isoYear%10, 1)
	case "MONTH", "Month", "month", "MON", "Mon", "mon":
		if f.month < 1 {
			return "", 0, false
		}
		return name(monthNames[f.month-1], pat[1] == 'O', pat[0] == 'm', len(pat) == 3)
	case "MM":
		return num(f.month, 2)
	case "DAY", "Day", "day", "DY", "Dy", "dy":
		if f.interval {
			return "", 0, false
		}
		return name(dayNames[f.wday], pat[1] == 'A' || pat[1] == 'Y', pat[0] == 'd', len(pat) == 2)
	case "DDD":
		return num(f.yday, 3)
	case "IDDD":
		return num((f.isoWeek-1)*7+(f.wday+6)%7+1, 3)
	case "DD":
		return num(f.day, 2)
	case "D":
		return num(f.wday+1, 1)
	case "ID":
		return num((f.wday+6)%7+1, 1)
	case "WW":
		return num((f.yday-1)/7+1, 2)
	case "W":
		return num((f.day-1)/7+1, 1)
	case "IW":
		return num(f.isoWeek, 2)
	case "CC":
		cc := (f.year + 99) / 100
		if f.year <= 0 {
			cc = -((99 - f.year) / 100)
		}
		return num(cc, 2)
	case "J":
		return num(julianDay(f.year, f.month, f.day), 0)
	case "Q":
		if f.month < 1 {
			return "", 0, false
		}
		return num((f.month-1)/3+1, 1)
	case "RM", "rm":
		if f.month < 1 {
			return "", 0, false
		}
		s := romanMonths[f.month-1]
		if pat == "rm" {
			s = strings.ToLower(s)
		}
		if !fm {
			s = fmt.Sprintf("%-4s", s)
		}
		return s, 0, false
	case "TZ":
		return strings.ToUpper(f.zone), 0, false
	case "tz":
		return strings.ToLower(f.zone), 0, false
	case "TZH":
		h := f.offset / 3600
		if f.offset < 0 {
			return fmt.Sprintf("-%02d", -h), 0, false
		}
		return fmt.Sprintf("+%02d", h), 0, false
	case "TZM":
		m := f.offset % 3600 / 60
		if m < 0 {
			m = -m
		}
		return fmt.Sprintf("%02d", m), 0, false
	case "OF":
		if f.zone == "" && !f.interval {
			return "", 0, false
		}
		return formatOffset(f.offset), 0, false
	}
	return pat, 0, false
}

// julianDay is the Julian day number of a proleptic Gregorian date.
func julianDay(y, m, d int) int {
	a := (14 - m) / 12
	y = y + 4800 - a
	m = m + 12*a - 3
	return d + (153*m+2)/5 + 365*y + y/4 - y/100 + y/400 - 32045
}

// ordinal is the English suffix of n: st, nd, rd or th.
func ordinal(n int, upper bool) string {
	if n < 0 {
		n = -n
	}
	s := "th"
	if n%100 < 11 || n%100 > 13 {
		switch n % 10 {
		case 1:
			s = "st"
		case 2:
			s = "nd"
		case 3:
			s = "rd"
		}
	}
	if upper {
		return strings.ToUpper(s)
	}
	return s
}

// toCharNumber formats a number with a Postgres number template.
func toCharNumber(v float64, tmpl string) string {
	upper := strings.ToUpper(tmpl)
	fm := strings.Contains(upper, "FM")
	// Digit positions before and after the decimal point.
	intDigits, fracDigits, seenPoint := 0, 0, false
	explicitSign := strings.Contains(upper, "S") && !strings.Contains(upper, "SG") || strings.Contains(upper, "MI") ||
		strings.Contains(upper, "PL") || strings.Contains(upper, "SG") || strings.Contains(upper, "PR")
	for i := 0; i < len(upper); i++ {
		switch c := upper[i]; {
		case c == '9' || c == '0':
			if seenPoint {
				fracDigits++
			} else {
				intDigits++
			}
		case c == '.' || c == 'D':
			seenPoint = true
		case c == '"':
			for i++; i < len(upper) && upper[i] != '"'; i++ {
			}
		}
	}
	neg := v < 0 || (v == 0 && math.Signbit(v) && false)
	abs := math.Abs(v)
	digits := strconv.FormatFloat(abs, 'f', fracDigits, 64)
	intPart, fracPart, _ := strings.Cut(digits, ".")
	overflow := len(intPart) > intDigits && !(intPart == "0" && intDigits == 0)
	if intPart == "0" && intDigits > 0 && fracDigits > 0 {
		intPart = "" // .5, not 0.5, unless a 0 position asks for it
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		overflow = true
	}
	// Pad the integer digits on the left to the positions.
	if !overflow {
		intPart = strings.Repeat(" ", intDigits-len(intPart)) + intPart
	}
	// The sign floats before the first digit written: '-' or a blank
	// by default, '-' or '+' for a leading S, '<' or a blank for PR.
	// MI, PL, SG and a trailing S write it where they stand.
	firstDigit := strings.IndexAny(upper, "09")
	sAt := strings.IndexByte(upper, 'S')
	leadingS := sAt >= 0 && sAt < firstDigit && !strings.Contains(upper, "SG")
	pr := strings.Contains(upper, "PR")
	// MI writes the minus itself but keeps the blank slot; PL writes
	// the plus and leaves the minus to the slot.
	blankSlot := strings.Contains(upper, "MI")
	pl := strings.Contains(upper, "PL")
	floating := !explicitSign && !blankSlot || leadingS || pr || pl
	var b strings.Builder
	signDone := false
	writeSign := func() {
		if signDone || !floating {
			return
		}
		signDone = true
		switch {
		case leadingS && neg:
			b.WriteByte('-')
		case leadingS:
			b.WriteByte('+')
		case pr && neg:
			b.WriteByte('<')
		case neg && !pr && !blankSlot:
			b.WriteByte('-')
		case !fm:
			b.WriteByte(' ')
		}
	}
	if overflow {
		writeSign()
	}
	started := false // a digit (or a 0 position) has been written
	ip, fp := 0, 0
	for i := 0; i < len(tmpl); i++ {
		c := upper[i]
		switch {
		case strings.HasPrefix(upper[i:], "FM"):
			i++
		case c == '9' || c == '0':
			if overflow {
				b.WriteByte('#')
				continue
			}
			if !seenPointAt(upper, i) {
				d := intPart[ip]
				ip++
				if d == ' ' {
					if c == '0' {
						writeSign()
						b.WriteByte('0')
						started = true
					} else if ip == len(intPart) && fracDigits == 0 {
						writeSign()
						b.WriteByte('0')
						started = true
					} else if !fm {
						b.WriteByte(' ')
					}
					continue
				}
				writeSign()
				b.WriteByte(d)
				started = true
				continue
			}
			d := byte('0')
			if fp < len(fracPart) {
				d = fracPart[fp]
			}
			fp++
			b.WriteByte(d)
		case c == '.' || c == 'D':
			if overflow {
				b.WriteByte('.')
				continue
			}
			writeSign()
			b.WriteByte('.')
		case c == ',' || c == 'G':
			if started || overflow {
				b.WriteByte(',')
			} else if !fm {
				b.WriteByte(' ')
			}
		case strings.HasPrefix(upper[i:], "PR"):
			i++
			if neg {
				b.WriteByte('>')
			} else if !fm {
				b.WriteByte(' ')
			}
		case strings.HasPrefix(upper[i:], "MI"):
			i++
			if neg {
				b.WriteByte('-')
			} else if !fm {
				b.WriteByte(' ')
			}
		case strings.HasPrefix(upper[i:], "PL"):
			i++
			if !neg {
				b.WriteByte('+')
			} else if !fm {
				b.WriteByte(' ')
			}
		case strings.HasPrefix(upper[i:], "SG"):
			i++
			if neg {
				b.WriteByte('-')
			} else {
				b.WriteByte('+')
			}
		case c == 'S':
			if leadingS {
				continue
			}
			if neg {
				b.WriteByte('-')
			} else {
				b.WriteByte('+')
			}
		case c == '"':
			for i++; i < len(tmpl) && tmpl[i] != '"'; i++ {
				b.WriteByte(tmpl[i])
			}
		default:
			b.WriteByte(tmpl[i])
		}
	}
	out := b.String()
	if fm {
		// Fill mode drops the trailing zeros of 9 positions after the
		// point and the leading blanks.
		out = trimFractionZeros(out, tmpl)
		out = strings.TrimLeft(out, " ")
	}
	return out
}

// seenPointAt reports whether the template has a decimal point before i.
func seenPointAt(upper string, i int) bool {
	for k := 0; k < i; k++ {
		switch upper[k] {
		case '.', 'D':
			return true
		case '"':
			for k++; k < i && upper[k] != '"'; k++ {
			}
		}
	}
	return false
}

// trimFractionZeros drops the trailing zeros a fill-mode template's 9
// positions after the point wrote (0 positions keep theirs).
func trimFractionZeros(out, tmpl string) string {
	dot := strings.LastIndexByte(out, '.')
	if dot < 0 || strings.Contains(strings.ToUpper(tmpl), ".0") {
		return out
	}
	end := len(out)
	for end > dot+1 && out[end-1] == '0' {
		end--
	}
	return out[:end] + out[len(out):]
}
