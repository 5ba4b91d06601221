package eval

// The input side of the template patterns: to_timestamp(text, template)
// and to_date(text, template), as Postgres 15 reads them outside FX
// mode. Fields are read in template order; a number takes up to its
// pattern's width of digits (all the digits there are when nothing but
// a separator follows); a separator in the template skips one separator
// in the input, a space any run of spaces; quoted text skips as many
// characters. Missing fields default to 0001-01-01 BC 00:00:00.

import (
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/basindb/basin/internal/pgerr"
)

// parsedTime is what a template read from its input.
type parsedTime struct {
	input                               string
	year, month, day, hour, min, sec    int
	usec, doy                           int
	hasYear, bc, hour12, hasTZ, hasHour bool
	pm                                  int // -1 unset, 0 AM, 1 PM
	tzOffset                            int // seconds east of UTC
}

// inputPatterns are the patterns to_timestamp reads, longest first where
// one is a prefix of another.
var inputPatterns = []string{
	"HH24", "HH12", "HH", "MI", "SSSSS", "SSSS", "SS", "MS", "US", "FF1", "FF2", "FF3", "FF4", "FF5", "FF6",
	"A.M.", "P.M.", "AM", "PM", "Y,YYY", "YYYY", "YYY", "YY", "Y", "A.D.", "B.C.", "AD", "BC",
	"MONTH", "MON", "MM", "DAY", "DY", "DDD", "DD", "D", "ID", "IW", "WW", "W", "CC", "J", "Q", "TZH", "TZM", "TZ", "OF",
}

func parseTemplate(input, tmpl string) (*parsedTime, error) {
	// Postgres's default year is 0, which is 1 BC.
	p := &parsedTime{input: input, year: 0, month: 1, day: 1, pm: -1}
	in := input
	bad := func(format string, args ...any) *pgerr.Error {
		return pgerr.New(pgerr.InvalidDatetimeFormat, format, args...)
	}
	upperT := strings.ToUpper(tmpl)
	for i := 0; i < len(tmpl); {
		if strings.HasPrefix(upperT[i:], "FM") || strings.HasPrefix(upperT[i:], "FX") || strings.HasPrefix(upperT[i:], "TM") {
			i += 2
			continue
		}
		c := tmpl[i]
		if c == '"' {
			j := i + 1
			for ; j < len(tmpl) && tmpl[j] != '"'; j++ {
				if len(in) > 0 {
					_, n := firstRune(in)
					in = in[n:]
				}
			}
			i = j + 1
			continue
		}
		pat := ""
		for _, cand := range inputPatterns {
			if strings.HasPrefix(upperT[i:], cand) && len(cand) > len(pat) {
				pat = cand
			}
		}
		if pat == "" {
			i++
			switch {
			case c == ' ':
				in = strings.TrimLeft(in, " ")
			case len(in) > 0 && !isAlnum(in[0]) && in[0] != ' ':
				in = in[1:]
			case len(in) > 0 && in[0] == ' ':
				in = strings.TrimLeft(in, " ")
				if len(in) > 0 && !isAlnum(in[0]) {
					in = in[1:]
				}
			}
			continue
		}
		i += len(pat)
		if strings.HasPrefix(upperT[i:], "TH") {
			i += 2
		}
		in = strings.TrimLeft(in, " ")
		if len(in) == 0 {
			return nil, bad("source string too short for \"%s\" formatting field", pat)
		}
		// A number runs to its width when a field follows directly.
		nextIsField := i < len(tmpl) && (isAlnum(tmpl[i]))
		num := func(width int) (int, error) {
			n := 0
			neg := false
			if (pat == "YYYY" || pat == "TZH") && len(in) > 0 && (in[0] == '-' || in[0] == '+') {
				neg = in[0] == '-'
				in = in[1:]
			}
			for n < len(in) && in[n] >= '0' && in[n] <= '9' && (n < width || !nextIsField && width > 0) {
				n++
			}
			if n == 0 {
				end := len(in)
				if k := strings.IndexAny(in, " -/:.,"); k > 0 {
					end = k
				}
				return 0, bad("invalid value \"%s\" for \"%s\"", in[:min(end, max(width, 1))], pat).
					WithDetail("Value must be an integer.")
			}
			v, err := strconv.Atoi(in[:n])
			if err != nil {
				return 0, bad("value for \"%s\" in source string is out of range", pat)
			}
			in = in[n:]
			if neg {
				v = -v
			}
			return v, nil
		}
		var err error
		switch pat {
		case "YYYY", "Y,YYY":
			if pat == "Y,YYY" {
				var th, rest int
				if th, err = num(1); err == nil && len(in) > 0 && in[0] == ',' {
					in = in[1:]
					rest, err = num(3)
					p.year = th*1000 + rest
				}
			} else {
				p.year, err = num(4)
			}
			p.hasYear = true
		case "YYY":
			p.year, err = num(3)
			if p.year < 70 {
				p.year += 2000
			} else if p.year < 100 {
				p.year += 1900
			} else if p.year < 1000 {
				p.year += 1000
			}
			p.hasYear = true
		case "YY":
			p.year, err = num(2)
			if p.year < 70 {
				p.year += 2000
			} else if p.year < 100 {
				p.year += 1900
			}
			p.hasYear = true
		case "Y":
			p.year, err = num(1)
			p.year += 2000
			p.hasYear = true
		case "MM":
			p.month, err = num(2)
		case "DD":
			p.day, err = num(2)
		case "DDD":
			p.doy, err = num(3)
		case "HH24":
			p.hour, err = num(2)
			p.hasHour = true
		case "HH", "HH12":
			p.hour, err = num(2)
			p.hour12, p.hasHour = true, true
		case "MI":
			p.min, err = num(2)
		case "SS":
			p.sec, err = num(2)
		case "SSSS", "SSSSS":
			var s int
			s, err = num(0)
			p.hour, p.min, p.sec = s/3600, s%3600/60, s%60
		case "MS", "US", "FF1", "FF2", "FF3", "FF4", "FF5", "FF6":
			width := map[string]int{"MS": 3, "US": 6}[pat]
			if width == 0 {
				width = int(pat[2] - '0')
			}
			start := len(in)
			var v int
			v, err = num(width)
			digits := start - len(in)
			for ; digits < 6; digits++ {
				v *= 10
			}
			if pat == "MS" {
				// MS counts milliseconds however many digits it has.
				v = v / 1000 * 1000
			}
			p.usec = v
		case "AM", "PM", "A.M.", "P.M.":
			up := strings.ToUpper(in)
			switch {
			case strings.HasPrefix(up, "AM"), strings.HasPrefix(up, "A.M."):
				p.pm = 0
			case strings.HasPrefix(up, "PM"), strings.HasPrefix(up, "P.M."):
				p.pm = 1
			default:
				return nil, bad("invalid value \"%s\" for \"%s\"", in[:min(len(in), len(pat))], pat).
					WithDetail("The given value did not match any of the allowed values for this field.")
			}
			if strings.HasPrefix(up[1:], ".") {
				in = in[4:]
			} else {
				in = in[2:]
			}
		case "AD", "BC", "A.D.", "B.C.":
			up := strings.ToUpper(in)
			p.bc = strings.HasPrefix(up, "B")
			if len(in) > 1 && in[1] == '.' {
				in = in[min(4, len(in)):]
			} else {
				in = in[min(2, len(in)):]
			}
		case "MONTH", "MON":
			m, n := matchName(in, monthNames, pat == "MON")
			if m < 0 {
				return nil, bad("invalid value \"%s\" for \"%s\"", wordAt(in), strings.ToUpper(tmpl[i-len(pat):i])).
					WithDetail("The given value did not match any of the allowed values for this field.")
			}
			p.month = m + 1
			in = in[n:]
		case "DAY", "DY":
			d, n := matchName(in, dayNames, pat == "DY")
			if d < 0 {
				return nil, bad("invalid value \"%s\" for \"%s\"", wordAt(in), pat).
					WithDetail("The given value did not match any of the allowed values for this field.")
			}
			in = in[n:]
		case "TZH":
			var h int
			h, err = num(2)
			p.tzOffset += h * 3600
			p.hasTZ = true
		case "TZM":
			var m int
			m, err = num(2)
			if p.tzOffset < 0 {
				m = -m
			}
			p.tzOffset += m * 60
			p.hasTZ = true
		case "TZ", "OF":
			return nil, pgerr.New(pgerr.FeatureNotSupported, "formatting field \"%s\" is only supported in to_char", pat)
		default:
			// D, ID, IW, WW, W, CC, J, Q: read and, but for J, ignored.
			var v int
			v, err = num(0)
			if pat == "J" {
				t := time.Date(-4713, 11, 24, 12, 0, 0, 0, time.UTC).AddDate(0, 0, v)
				p.year, p.month, p.day, p.hasYear = t.Year(), int(t.Month()), t.Day(), true
			}
		}
		if err != nil {
			return nil, err
		}
	}
	return p, nil
}

func firstRune(s string) (rune, int) {
	for _, r := range s {
		return r, len(string(r))
	}
	return 0, 0
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func wordAt(s string) string {
	end := strings.IndexFunc(s, func(r rune) bool { return !unicode.IsLetter(r) })
	if end < 0 {
		return s
	}
	return s[:end]
}

// matchName finds which of names s starts with (case-insensitively),
// in full or, with abbrev, by its first three letters.
func matchName(s string, names []string, abbrev bool) (int, int) {
	up := strings.ToUpper(s)
	for i, n := range names {
		n = strings.ToUpper(n)
		if abbrev {
			n = n[:3]
		}
		if strings.HasPrefix(up, n) {
			return i, len(n)
		}
	}
	return -1, 0
}

// time assembles the fields as a wall-clock time in loc (or at the
// offset the input gave), checking each against its range.
func (p *parsedTime) time(loc *time.Location) (time.Time, error) {
	rangeErr := func() error {
		return pgerr.New(pgerr.DatetimeFieldOverflow, "date/time field value out of range: \"%s\"", p.input)
	}
	if p.hour12 {
		if p.hour < 1 || p.hour > 12 {
			return time.Time{}, pgerr.New(pgerr.InvalidDatetimeFormat, "hour \"%d\" is invalid for the 12-hour clock", p.hour).
				WithHint("Use the 24-hour clock, or give an hour between 1 and 12.")
		}
	}
	if p.pm == 1 && p.hour < 12 {
		p.hour += 12
	} else if p.pm == 0 && p.hour == 12 {
		p.hour = 0
	}
	year := p.year
	if p.bc && year > 0 {
		year = 1 - year
	}
	if p.doy > 0 {
		if p.doy > 366 {
			return time.Time{}, rangeErr()
		}
		t := time.Date(year, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, p.doy-1)
		p.month, p.day = int(t.Month()), t.Day()
	}
	if p.month < 1 || p.month > 12 || p.day < 1 || p.day > monthDays(year, p.month) ||
		p.hour > 24 || p.min > 59 || p.sec > 60 || p.hour < 0 {
		return time.Time{}, rangeErr()
	}
	if p.hasTZ {
		loc = time.FixedZone("", p.tzOffset)
	}
	t := time.Date(year, time.Month(p.month), p.day, p.hour, p.min, p.sec, p.usec*1000, loc)
	return t.UTC(), nil
}
