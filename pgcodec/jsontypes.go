package pgcodec

import (
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/jsonb"
	"github.com/basindb/basin/internal/pgerr"
)

// The text and binary forms of uuid, jsonb, json and bytea. Their Go
// values are catalog.UUIDVal, catalog.JSONText (jsonb canonical, json
// as given) and []byte.

func init() {
	for _, t := range []catalog.Type{catalog.UUID, catalog.JSONB, catalog.JSON, catalog.Bytea} {
		pgParamTypes[t.OID()] = t
		pgParamTypes[catalog.ArrayOf(t).OID()] = catalog.ArrayOf(t)
	}
}

// isBlobType reports whether t is one of this file's types.
func isBlobType(t catalog.Type) bool {
	return t == catalog.UUID || t == catalog.JSONB || t == catalog.JSON || t == catalog.Bytea
}

// FormatUUID writes u as Postgres does: lower-case hex in 8-4-4-4-12
// groups.
func FormatUUID(u catalog.UUIDVal) string {
	return string(appendUUID(nil, u))
}

func appendUUID(b []byte, u catalog.UUIDVal) []byte {
	var buf [36]byte
	hex.Encode(buf[0:8], u[0:4])
	buf[8] = '-'
	hex.Encode(buf[9:13], u[4:6])
	buf[13] = '-'
	hex.Encode(buf[14:18], u[6:8])
	buf[18] = '-'
	hex.Encode(buf[19:23], u[8:10])
	buf[23] = '-'
	hex.Encode(buf[24:], u[10:])
	return append(b, buf[:]...)
}

// ParseUUID reads what Postgres's uuid_in accepts: 32 hex digits in
// either case, optionally in braces, with a hyphen allowed after any
// group of four digits.
func ParseUUID(s string) (catalog.UUIDVal, error) {
	var u catalog.UUIDVal
	bad := pgerr.New(pgerr.InvalidTextRepresentation, "invalid input syntax for type uuid: %q", s)
	t := s
	braces := strings.HasPrefix(t, "{")
	if braces {
		t = t[1:]
	}
	n := 0
	for i := 0; n < 32; {
		if i >= len(t) {
			return u, bad
		}
		hi, ok1 := unhex(t[i])
		if i+1 >= len(t) {
			return u, bad
		}
		lo, ok2 := unhex(t[i+1])
		if !ok1 || !ok2 {
			return u, bad
		}
		u[n/2] = hi<<4 | lo
		n += 2
		i += 2
		if n%4 == 0 && n < 32 && i < len(t) && t[i] == '-' {
			i++
		}
		if n == 32 {
			t = t[i:]
		}
	}
	if braces {
		if !strings.HasPrefix(t, "}") {
			return u, bad
		}
		t = t[1:]
	}
	if t != "" {
		return u, bad
	}
	return u, nil
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// FormatBytea writes b in bytea's hex output format: \x and two
// lower-case digits a byte.
func FormatBytea(b []byte) string { return string(appendBytea(nil, b)) }

func appendBytea(dst, b []byte) []byte {
	dst = append(dst, '\\', 'x')
	return hex.AppendEncode(dst, b)
}

// ParseBytea reads bytea's input formats: hex (\x then pairs of hex
// digits, whitespace allowed between pairs) and escape (bytes as they
// are, \\ for a backslash and \nnn octal for any byte).
func ParseBytea(s string) ([]byte, error) {
	if strings.HasPrefix(s, `\x`) {
		out := make([]byte, 0, (len(s)-2)/2)
		t := s[2:]
		for i := 0; i < len(t); {
			c := t[i]
			if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
				i++
				continue
			}
			hi, ok := unhex(c)
			if !ok {
				return nil, pgerr.New(pgerr.InvalidParameterValue, "invalid hexadecimal digit: %q", string(c))
			}
			if i+1 >= len(t) {
				return nil, pgerr.New(pgerr.InvalidParameterValue, "invalid hexadecimal data: odd number of digits")
			}
			lo, ok := unhex(t[i+1])
			if !ok {
				return nil, pgerr.New(pgerr.InvalidParameterValue, "invalid hexadecimal digit: %q", string(t[i+1]))
			}
			out = append(out, hi<<4|lo)
			i += 2
		}
		return out, nil
	}
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		c := s[i]
		if c != '\\' {
			out = append(out, c)
			i++
			continue
		}
		switch {
		case i+1 < len(s) && s[i+1] == '\\':
			out = append(out, '\\')
			i += 2
		case i+3 < len(s) && s[i+1] >= '0' && s[i+1] <= '3' && isOctal(s[i+2]) && isOctal(s[i+3]):
			out = append(out, (s[i+1]-'0')<<6|(s[i+2]-'0')<<3|(s[i+3]-'0'))
			i += 4
		default:
			return nil, pgerr.New(pgerr.InvalidTextRepresentation, "invalid input syntax for type bytea")
		}
	}
	return out, nil
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

// EscapeBytea writes b in bytea's escape format (encode(b, 'escape')):
// a backslash doubled, NUL and bytes from 0x80 as \nnn, the rest as is.
func EscapeBytea(b []byte) string {
	var sb strings.Builder
	for _, c := range b {
		switch {
		case c == '\\':
			sb.WriteString(`\\`)
		case c == 0 || c >= 0x80:
			fmt.Fprintf(&sb, `\%03o`, c)
		default:
			sb.WriteByte(c)
		}
	}
	return sb.String()
}

// castTextBlob is CastText for this file's types.
func castTextBlob(s string, t catalog.Type) (any, error) {
	switch t {
	case catalog.UUID:
		return ParseUUID(s)
	case catalog.JSONB:
		c, err := jsonb.Canonical(s)
		if err != nil {
			return nil, err
		}
		return catalog.JSONText(c), nil
	case catalog.JSON:
		if err := jsonb.Validate(s); err != nil {
			return nil, err
		}
		return catalog.JSONText(s), nil
	case catalog.Bytea:
		return ParseBytea(s)
	}
	return nil, fmt.Errorf("pgcodec: %s is not a blob type", t)
}

// appendTextBlob is the output function of this file's types; ok is
// false for another type or a Go value not of t.
func appendTextBlob(b []byte, t catalog.Type, v any) ([]byte, bool) {
	switch x := v.(type) {
	case catalog.UUIDVal:
		if t == catalog.UUID {
			return appendUUID(b, x), true
		}
	case catalog.JSONText:
		if t == catalog.JSONB || t == catalog.JSON {
			return append(b, x...), true
		}
	case []byte:
		if t == catalog.Bytea {
			return appendBytea(b, x), true
		}
	}
	return b, false
}

// appendBinaryBlob is the send function of this file's types: a uuid's
// 16 bytes, jsonb's version 1 then its text, json's text, bytea's
// bytes.
func appendBinaryBlob(b []byte, t catalog.Type, v any) ([]byte, bool) {
	switch x := v.(type) {
	case catalog.UUIDVal:
		if t == catalog.UUID {
			return append(b, x[:]...), true
		}
	case catalog.JSONText:
		if t == catalog.JSONB {
			return append(append(b, 1), x...), true
		}
		if t == catalog.JSON {
			return append(b, x...), true
		}
	case []byte:
		if t == catalog.Bytea {
			return append(b, x...), true
		}
	}
	return b, false
}

// decodeBinaryBlob is the receive function of this file's types.
func decodeBinaryBlob(t catalog.Type, b []byte) (any, error) {
	switch t {
	case catalog.UUID:
		if len(b) != 16 {
			return nil, fmt.Errorf("a binary uuid is 16 bytes, this one is %d", len(b))
		}
		var u catalog.UUIDVal
		copy(u[:], b)
		return u, nil
	case catalog.JSONB:
		if len(b) == 0 || b[0] != 1 {
			return nil, fmt.Errorf("unsupported jsonb version number")
		}
		return castTextBlob(string(b[1:]), t)
	case catalog.JSON:
		return castTextBlob(string(b), t)
	}
	return append([]byte(nil), b...), nil
}

// decodePeerBlob is DecodePeer for this file's types, in either format:
// pgx would decode jsonb into a map, losing its text.
func decodePeerBlob(t catalog.Type, format int16, b []byte) (any, bool) {
	var v any
	var err error
	if format == FormatBinary {
		v, err = decodeBinaryBlob(t, b)
	} else {
		v, err = castTextBlob(string(b), t)
	}
	return v, err == nil
}

// AppendBlobWire appends the wire form of a stored uuid (its 16 bytes),
// json or jsonb (its text) or bytea (its bytes) value b of column type
// t, in binary (binFmt) or text format, without making its Go value:
// the pull engine's path from a stored row to a DataRow. ok is false for
// another type or a malformed uuid.
func AppendBlobWire(dst []byte, t catalog.Type, binFmt bool, b []byte) ([]byte, bool) {
	switch t {
	case catalog.UUID:
		if len(b) != 16 {
			return dst, false
		}
		if binFmt {
			return append(dst, b...), true
		}
		return appendUUID(dst, catalog.UUIDVal(b)), true
	case catalog.JSONB:
		if binFmt {
			dst = append(dst, 1)
		}
		return append(dst, b...), true
	case catalog.JSON:
		return append(dst, b...), true
	case catalog.Bytea:
		if binFmt {
			return append(dst, b...), true
		}
		return appendBytea(dst, b), true
	}
	return dst, false
}
