package serde

import (
	"fmt"
	"strings"
)

// TimeLayout turns a timestamp_format, a pattern of Java's
// DateTimeFormatter as ksqlDB takes it (yyyy-MM-dd'T'HH:mm:ss.SSSXXX),
// into a layout of Go's time package. It takes the letters a record's
// time is written with: years (yyyy, uuuu, yy), months (MM, M, MMM,
// MMMM), days (dd, d), hours (HH, H, hh, h), minutes (mm, m), seconds
// (ss, s), fractions (S to SSSSSSSSS, after a literal '.' or ','),
// AM/PM (a), zones (X, XX, XXX, Z, ZZ, ZZZ, and the literal 'Z'), day
// names (EEE, EEEE), quoted literals ('T', ” for a quote) and
// punctuation. Any other letter is an error naming it.
func TimeLayout(pattern string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(pattern); {
		c := pattern[i]
		if c == '\'' {
			j := strings.IndexByte(pattern[i+1:], '\'')
			if j < 0 {
				return "", fmt.Errorf("timestamp_format %q has an unclosed quote", pattern)
			}
			if j == 0 {
				b.WriteByte('\'')
			} else {
				b.WriteString(pattern[i+1 : i+1+j])
			}
			i += j + 2
			continue
		}
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			if c >= '0' && c <= '9' {
				// Go would read a digit in a layout as a field.
				return "", fmt.Errorf("timestamp_format %q has a digit outside quotes", pattern)
			}
			b.WriteByte(c)
			i++
			continue
		}
		n := 1
		for i+n < len(pattern) && pattern[i+n] == c {
			n++
		}
		layout, ok := timeLetters[string(c)+fmt.Sprint(n)]
		if c == 'S' && n <= 9 {
			layout, ok = strings.Repeat("0", n), true
			if out := b.String(); !strings.HasSuffix(out, ".") && !strings.HasSuffix(out, ",") {
				return "", fmt.Errorf("timestamp_format %q: fractions of a second (S) must follow a '.' or ','", pattern)
			}
		}
		if !ok {
			return "", fmt.Errorf("timestamp_format %q: %s is not a pattern basin reads", pattern, strings.Repeat(string(c), n))
		}
		b.WriteString(layout)
		i += n
	}
	return b.String(), nil
}

// timeLetters maps a pattern letter repeated n times ("y4") to Go's.
var timeLetters = map[string]string{
	"y4": "2006", "u4": "2006", "y2": "06", "u2": "06",
	"M1": "1", "M2": "01", "M3": "Jan", "M4": "January",
	"d1": "2", "d2": "02",
	"H1": "15", "H2": "15", "h1": "3", "h2": "03",
	"m1": "4", "m2": "04", "s1": "5", "s2": "05",
	"a1": "PM",
	"E3": "Mon", "E4": "Monday",
	"X1": "Z07", "X2": "Z0700", "X3": "Z07:00",
	"Z1": "-0700", "Z2": "-0700", "Z3": "-0700",
}
