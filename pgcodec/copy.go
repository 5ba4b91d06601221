package pgcodec

import (
	"strings"
	"time"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
)

// COPY's text and CSV formats.
//
// COPY TO writes each row as one line of text: the columns' text output
// (what AppendText writes, the same bytes a DataRow carries in text
// format) joined by a delimiter, with a format-specific way of keeping
// delimiters, newlines and NULLs apart from the data:
//
//   - text: a backslash escapes. A backslash, the delimiter, and the
//     control characters backspace, form feed, newline, carriage
//     return, tab and vertical tab are written as a backslash and a
//     letter (or the character itself); other characters pass as
//     they are. NULL is the null string (\N unless changed), written
//     unescaped, which is how a reader tells it from the text "\N"
//     (written \\N).
//   - csv: a value that contains the delimiter, the quote character, a
//     newline or a carriage return, or that equals the null string, or
//     is the lone "\." that ends a COPY stream, is quoted; inside the
//     quotes the quote and escape characters get the escape character
//     before them (by default the escape is the quote, which doubles
//     it). NULL is the null string unquoted ("" unless changed), so an
//     empty string and NULL differ: "" versus nothing.
//
// CopyFormat.Validate refuses the combinations a reader could not take
// apart again, with Postgres's codes, so AppendCopyRow can rely on them.

// CopyFormat is how COPY TO writes rows. The zero value is not valid:
// start from DefaultCopyFormat.
type CopyFormat struct {
	// CSV selects the csv format; false is text.
	CSV bool
	// Header writes the column names as a first line.
	Header bool
	// Delimiter separates columns: tab for text, comma for csv.
	Delimiter string
	// Null is written for NULL: \N for text, the empty string for csv.
	Null string
	// Quote and Escape are csv's quote character and the character
	// before a quote or escape inside quotes; both '"' by default.
	Quote, Escape string
	// ForceQuote quotes every non-NULL value of the columns it marks (csv
	// only); nil quotes none.
	ForceQuote []bool
}

// DefaultCopyFormat returns the defaults of the text format (csv false)
// or the csv format (csv true).
func DefaultCopyFormat(csv bool) CopyFormat {
	if csv {
		return CopyFormat{CSV: true, Delimiter: ",", Null: "", Quote: `"`, Escape: `"`}
	}
	return CopyFormat{Delimiter: "\t", Null: `\N`}
}

// Validate checks that rows written in f can be read back: one-byte
// delimiter, quote and escape, none of them a newline, the delimiter not
// in the null string, and for text no delimiter a backslash escape could
// be mistaken for. Errors are Postgres's (0A000 or 22023).
func (f *CopyFormat) Validate() error {
	oneByte := func(s, what string) error {
		if len(s) != 1 || s[0] >= 0x80 {
			return pgerr.New(pgerr.FeatureNotSupported, "COPY %s must be a single one-byte character", what)
		}
		return nil
	}
	if err := oneByte(f.Delimiter, "delimiter"); err != nil {
		return err
	}
	d := f.Delimiter[0]
	if d == '\n' || d == '\r' {
		return pgerr.New(pgerr.InvalidParameterValue, "COPY delimiter cannot be newline or carriage return")
	}
	if strings.ContainsAny(f.Null, "\n\r") {
		return pgerr.New(pgerr.InvalidParameterValue, "COPY null representation cannot use newline or carriage return")
	}
	if !f.CSV && strings.IndexByte(`\.abcdefghijklmnopqrstuvwxyz0123456789`, d) >= 0 {
		// A reader of the text format takes these after a backslash as
		// escapes, or the lone \. as the end of the data.
		return pgerr.New(pgerr.InvalidParameterValue, "COPY delimiter cannot be %q", f.Delimiter)
	}
	if f.CSV {
		if err := oneByte(f.Quote, "quote"); err != nil {
			return err
		}
		if err := oneByte(f.Escape, "escape"); err != nil {
			return err
		}
		if f.Delimiter == f.Quote {
			return pgerr.New(pgerr.InvalidParameterValue, "COPY delimiter and quote must be different")
		}
	}
	if strings.Contains(f.Null, f.Delimiter) {
		return pgerr.New(pgerr.FeatureNotSupported, "COPY delimiter must not appear in the NULL specification")
	}
	if f.CSV && strings.Contains(f.Null, f.Quote) {
		return pgerr.New(pgerr.FeatureNotSupported, "CSV quote character must not appear in the NULL specification")
	}
	return nil
}

// AppendCopyHeader appends the header line of names in f.
func AppendCopyHeader(dst []byte, names []string, f *CopyFormat) []byte {
	for i, n := range names {
		if i > 0 {
			dst = append(dst, f.Delimiter...)
		}
		if f.CSV {
			dst = appendCSV(dst, n, false, len(names) == 1, f)
		} else {
			dst = appendCopyText(dst, []byte(n), f.Delimiter[0])
		}
	}
	return append(dst, '\n')
}

// AppendCopyRow appends the line of vals, of types, in f: each value's
// text output (TIMESTAMPTZ in loc, nil for UTC), escaped or quoted as f
// says, and a newline. f must be valid (Validate). On an error dst is
// returned as it was.
func AppendCopyRow(dst []byte, types []catalog.Type, vals []any, f *CopyFormat, loc *time.Location) ([]byte, error) {
	start := len(dst)
	var scratch [64]byte
	for i, v := range vals {
		if i > 0 {
			dst = append(dst, f.Delimiter...)
		}
		if v == nil {
			dst = append(dst, f.Null...)
			continue
		}
		out, err := AppendTextIn(scratch[:0], types[i], v, loc)
		if err != nil {
			return dst[:start], err
		}
		if f.CSV {
			force := f.ForceQuote != nil && f.ForceQuote[i]
			dst = appendCSV(dst, string(out), force, len(vals) == 1, f)
		} else {
			dst = appendCopyText(dst, out, f.Delimiter[0])
		}
	}
	return append(dst, '\n'), nil
}

// appendCopyText appends s escaped for the text format.
func appendCopyText(dst, s []byte, delim byte) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		case '\v':
			dst = append(dst, '\\', 'v')
		case '\\':
			dst = append(dst, '\\', '\\')
		default:
			if c == delim {
				dst = append(dst, '\\')
			}
			dst = append(dst, c)
		}
	}
	return dst
}

// appendCSV appends s in the csv format: quoted when force says so or
// when a reader would otherwise misread it. alone is set when s is the
// line's only value, where "\." unquoted would end the data.
func appendCSV(dst []byte, s string, force, alone bool, f *CopyFormat) []byte {
	quote := force || s == f.Null || alone && s == `\.` ||
		strings.ContainsAny(s, "\n\r") || strings.Contains(s, f.Delimiter) || strings.Contains(s, f.Quote)
	if !quote {
		return append(dst, s...)
	}
	q, e := f.Quote[0], f.Escape[0]
	dst = append(dst, q)
	for i := 0; i < len(s); i++ {
		if s[i] == q || s[i] == e {
			dst = append(dst, e)
		}
		dst = append(dst, s[i])
	}
	return append(dst, q)
}
