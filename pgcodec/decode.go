package pgcodec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/basindb/basin/internal/numeric"
	"github.com/basindb/basin/internal/pgerr"
)

// DecodeParam decodes the value of parameter n (1-based, for messages)
// of type oid, sent in format (text or binary), into the Go value of its
// basin type (see ParamType). A nil b is NULL. Errors are what Postgres
// reports for the same bytes: 22P02 and friends for text, 22P03 for
// binary. The value never aliases b, which is the read buffer of the
// Bind message and reused by the next one.
func DecodeParam(n int, oid uint32, format int16, b []byte) (any, error) {
	if b == nil {
		return nil, nil
	}
	if format == FormatBinary {
		v, err := decodeBinary(oid, b)
		if err != nil {
			return nil, pgerr.New(pgerr.InvalidBinaryRepresentation, "incorrect binary data format in bind parameter %d", n).
				WithDetail("%s", err.Error())
		}
		return v, nil
	}
	if !utf8.Valid(b) {
		return nil, pgerr.New(pgerr.CharacterNotInRepertoire, "invalid byte sequence for encoding \"UTF8\" in bind parameter %d", n)
	}
	if bytes.IndexByte(b, 0) >= 0 {
		// A text value is a C string to Postgres's input functions: a
		// NUL is refused whatever the type, an array's element too.
		return nil, pgerr.New(pgerr.CharacterNotInRepertoire, "invalid byte sequence for encoding \"UTF8\": 0x00")
	}
	return decodeText(oid, string(b))
}

// decodeText is the input function of type oid over s (bind parameters
// in text format).
func decodeText(oid uint32, s string) (any, error) {
	if t, ok := pgParamType(oid); ok {
		return decodeTextPG(t, s)
	}
	switch oid {
	case oidBool:
		return parseBool(s)
	case oidInt2, oidInt4, oidInt8:
		return parseInt(oid, s)
	case oidFloat4, oidFloat8:
		return parseFloat(oid, s)
	case oidNumeric:
		return numeric.Parse(s)
	case oidTimestamp:
		t, err := ParseTimestamp(s)
		if err != nil {
			return nil, err
		}
		return t, nil
	}
	// text, varchar, bpchar, name, unknown. A NUL cannot be in a text
	// value; Postgres refuses it the same way.
	if strings.IndexByte(s, 0) >= 0 {
		return nil, pgerr.New(pgerr.CharacterNotInRepertoire, "invalid byte sequence for encoding \"UTF8\": 0x00")
	}
	return s, nil
}

func invalidInput(oid uint32, s string) *pgerr.Error {
	return pgerr.New(pgerr.InvalidTextRepresentation, "invalid input syntax for type %s: %q", pgTypeName(oid), s)
}

// parseBool accepts what Postgres's boolin does: t/true/y/yes/on/1 and
// f/false/n/no/off/0, any unique prefix of those words, in any case,
// with surrounding whitespace.
func parseBool(s string) (any, error) {
	w := strings.ToLower(strings.TrimSpace(s))
	switch {
	case w == "":
	case w == "1", strings.HasPrefix("true", w), strings.HasPrefix("yes", w),
		len(w) >= 2 && strings.HasPrefix("on", w):
		return true, nil
	case w == "0", strings.HasPrefix("false", w), strings.HasPrefix("no", w),
		len(w) >= 2 && strings.HasPrefix("off", w):
		return false, nil
	}
	return nil, invalidInput(oidBool, s)
}

func parseInt(oid uint32, s string) (any, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) && ne.Err == strconv.ErrRange {
			return nil, pgerr.New(pgerr.NumericValueOutOfRange, "value %q is out of range for type %s", s, pgTypeName(oid))
		}
		return nil, invalidInput(oid, s)
	}
	lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
	switch oid {
	case oidInt2:
		lo, hi = math.MinInt16, math.MaxInt16
	case oidInt4:
		lo, hi = math.MinInt32, math.MaxInt32
	}
	if n < lo || n > hi {
		return nil, pgerr.New(pgerr.NumericValueOutOfRange, "value %q is out of range for type %s", s, pgTypeName(oid))
	}
	return n, nil
}

func parseFloat(oid uint32, s string) (any, error) {
	w := strings.TrimSpace(s)
	switch strings.ToLower(w) {
	case "nan":
		return math.NaN(), nil
	case "infinity", "+infinity", "inf", "+inf":
		return math.Inf(1), nil
	case "-infinity", "-inf":
		return math.Inf(-1), nil
	}
	// strconv would also take Go's own spellings (hex floats, "1_000");
	// Postgres takes decimal only.
	for i := 0; i < len(w); i++ {
		if c := w[i]; !(c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') {
			return nil, invalidInput(oid, s)
		}
	}
	f, err := strconv.ParseFloat(w, 64)
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) && ne.Err == strconv.ErrRange {
			return nil, pgerr.New(pgerr.NumericValueOutOfRange, "%q is out of range for type %s", s, pgTypeName(oid))
		}
		return nil, invalidInput(oid, s)
	}
	return f, nil
}

// parseZone reads "Z", "+05", "-08:00", "+0530" or "+05:30:15" as
// seconds east of UTC.
func parseZone(z string) (int, error) {
	if z == "Z" || z == "z" {
		return 0, nil
	}
	sign := 1
	if z[0] == '-' {
		sign = -1
	}
	z = z[1:]
	var parts []string
	if strings.Contains(z, ":") {
		parts = strings.Split(z, ":")
	} else if len(z) == 4 {
		parts = []string{z[:2], z[2:]}
	} else {
		parts = []string{z}
	}
	if len(parts) > 3 {
		return 0, errors.New("bad zone")
	}
	secs := 0
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || len(p) > 2 || (i > 0 && n > 59) {
			return 0, errors.New("bad zone")
		}
		secs = secs*60 + n
	}
	for range 3 - len(parts) {
		secs *= 60
	}
	return sign * secs, nil
}

// decodeBinary is the receive function of type oid over b (bind
// parameters in binary format).
func decodeBinary(oid uint32, b []byte) (any, error) {
	wantLen := func(n int) error {
		if len(b) != n {
			return fmt.Errorf("a binary %s is %d bytes, this one is %d", pgTypeName(oid), n, len(b))
		}
		return nil
	}
	if t, ok := pgParamType(oid); ok {
		return decodeBinaryPG(t, b)
	}
	switch oid {
	case oidBool:
		if err := wantLen(1); err != nil {
			return nil, err
		}
		return b[0] != 0, nil
	case oidInt2:
		if err := wantLen(2); err != nil {
			return nil, err
		}
		return int64(int16(binary.BigEndian.Uint16(b))), nil
	case oidInt4:
		if err := wantLen(4); err != nil {
			return nil, err
		}
		return int64(int32(binary.BigEndian.Uint32(b))), nil
	case oidInt8:
		if err := wantLen(8); err != nil {
			return nil, err
		}
		return int64(binary.BigEndian.Uint64(b)), nil
	case oidFloat4:
		if err := wantLen(4); err != nil {
			return nil, err
		}
		return float64(math.Float32frombits(binary.BigEndian.Uint32(b))), nil
	case oidFloat8:
		if err := wantLen(8); err != nil {
			return nil, err
		}
		return math.Float64frombits(binary.BigEndian.Uint64(b)), nil
	case oidNumeric:
		return decodeNumeric(b)
	case oidTimestamp:
		if err := wantLen(8); err != nil {
			return nil, err
		}
		us := int64(binary.BigEndian.Uint64(b))
		if us == math.MaxInt64 || us == math.MinInt64 {
			return nil, errors.New("basin timestamps cannot be infinite")
		}
		secs, frac := us/1e6, us%1e6
		if frac < 0 {
			secs, frac = secs-1, frac+1e6
		}
		return time.Unix(secs+EpochUnix, frac*1000).UTC(), nil
	}
	// text, varchar, bpchar, name, unknown: the bytes themselves.
	if !utf8.Valid(b) || bytes.IndexByte(b, 0) >= 0 {
		return nil, errors.New("invalid byte sequence for encoding \"UTF8\"")
	}
	return string(b), nil
}

// decodeNumeric reads numeric's binary form (ndigits, weight, sign,
// dscale, then base-10000 digits, most significant first) exactly.
func decodeNumeric(b []byte) (any, error) {
	d, err := numeric.ParseBinary(b)
	if err != nil {
		return nil, fmt.Errorf("invalid binary numeric of %d bytes", len(b))
	}
	return d, nil
}
