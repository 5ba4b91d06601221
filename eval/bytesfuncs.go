package eval

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/basindb/basin/internal/pgerr"
)

// The functions between bytes and text: Postgres's convert_from and
// convert_to (by character encoding), and ksqlDB's from_bytes and
// to_bytes (by encoding name: hex, utf8, ascii, base64), which read a
// header column (BYTES) as text and back.

// encodingName is a character encoding's canonical name, as Postgres
// spells them, or "" for one basin does not know.
func encodingName(name string) string {
	switch strings.ToUpper(strings.NewReplacer("-", "", "_", "").Replace(name)) {
	case "UTF8", "UNICODE":
		return "UTF8"
	case "LATIN1", "ISO88591":
		return "LATIN1"
	case "SQLASCII":
		return "SQL_ASCII"
	}
	return ""
}

// convertFrom is convert_from(bytes, encoding): the text bytes encode in
// encoding.
func convertFrom(b []byte, encoding string) (any, error) {
	switch encodingName(encoding) {
	case "UTF8", "SQL_ASCII":
		if !utf8.Valid(b) {
			return nil, invalidUTF8(b)
		}
		return string(b), nil
	case "LATIN1":
		r := make([]rune, len(b))
		for i, c := range b {
			r[i] = rune(c)
		}
		return string(r), nil
	}
	return nil, pgerr.New(pgerr.InvalidParameterValue, "invalid source encoding name %q", encoding)
}

// convertTo is convert_to(text, encoding): text's bytes in encoding.
func convertTo(s, encoding string) (any, error) {
	switch encodingName(encoding) {
	case "UTF8", "SQL_ASCII":
		return []byte(s), nil
	case "LATIN1":
		out := make([]byte, 0, len(s))
		for _, r := range s {
			if r > 0xff {
				return nil, pgerr.New(pgerr.UntranslatableCharacter, "character with byte sequence %s in encoding \"UTF8\" has no equivalent in encoding \"LATIN1\"", byteList([]byte(string(r))))
			}
			out = append(out, byte(r))
		}
		return out, nil
	}
	return nil, pgerr.New(pgerr.InvalidParameterValue, "invalid destination encoding name %q", encoding)
}

// invalidUTF8 is Postgres's error for bytes that are not UTF-8.
func invalidUTF8(b []byte) error {
	at := 0
	for at < len(b) {
		r, n := utf8.DecodeRune(b[at:])
		if r == utf8.RuneError && n <= 1 {
			break
		}
		at += n
	}
	n := 1
	switch c := b[at]; {
	case c >= 0xc0 && c < 0xe0:
		n = 2
	case c >= 0xe0 && c < 0xf0:
		n = 3
	case c >= 0xf0 && c < 0xf8:
		n = 4
	}
	return pgerr.New(pgerr.CharacterNotInRepertoire, "invalid byte sequence for encoding \"UTF8\": %s", byteList(b[at:min(at+n, len(b))]))
}

// byteList writes bytes as Postgres's encoding errors do: 0xe2 0x82.
func byteList(b []byte) string {
	parts := make([]string, len(b))
	for i, c := range b {
		parts[i] = fmt.Sprintf("0x%02x", c)
	}
	return strings.Join(parts, " ")
}

// fromBytes is ksqlDB's from_bytes(bytes, encoding).
func fromBytes(b []byte, encoding string) (any, error) {
	switch strings.ToLower(encoding) {
	case "hex":
		return hex.EncodeToString(b), nil
	case "utf8":
		if !utf8.Valid(b) {
			return nil, invalidUTF8(b)
		}
		return string(b), nil
	case "ascii":
		for _, c := range b {
			if c > 0x7f {
				return nil, pgerr.New(pgerr.CharacterNotInRepertoire, "byte 0x%02x is not ASCII", c)
			}
		}
		return string(b), nil
	case "base64":
		return base64.StdEncoding.EncodeToString(b), nil
	}
	return nil, unknownBytesEncoding(encoding)
}

// toBytes is ksqlDB's to_bytes(text, encoding).
func toBytes(s, encoding string) (any, error) {
	switch strings.ToLower(encoding) {
	case "hex":
		b, err := hex.DecodeString(s)
		if err != nil {
			return nil, pgerr.New(pgerr.InvalidParameterValue, "%q is not hex: %v", s, err)
		}
		return b, nil
	case "utf8":
		return []byte(s), nil
	case "ascii":
		for i := 0; i < len(s); i++ {
			if s[i] > 0x7f {
				return nil, pgerr.New(pgerr.UntranslatableCharacter, "%q is not ASCII", s)
			}
		}
		return []byte(s), nil
	case "base64":
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, pgerr.New(pgerr.InvalidParameterValue, "%q is not base64: %v", s, err)
		}
		return b, nil
	}
	return nil, unknownBytesEncoding(encoding)
}

func unknownBytesEncoding(encoding string) error {
	return pgerr.New(pgerr.InvalidParameterValue, "%s", fmt.Sprintf("unknown encoding %q", encoding)).
		WithHint("Use 'hex', 'utf8', 'ascii' or 'base64'.")
}
