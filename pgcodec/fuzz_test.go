package pgcodec

import (
	"bytes"
	"strings"
	"testing"

	"github.com/basindb/basin/internal/pgerr"
)

// FuzzDecodeParam feeds arbitrary bytes as a bind parameter of each
// type a client may declare, in text and binary: decoding never panics,
// every error carries a SQLSTATE, and a value that decodes encodes in
// binary to bytes that decode to a value encoding the same again.
func FuzzDecodeParam(f *testing.F) {
	for _, s := range []string{"t", "-32768", "1.5e300", "NaN", "2024-02-29 13:04:05.123456+05:30", "0044-03-15 BC",
		"{1,2,NULL}", `{"a b",c}`, "{t,f}", "{{1}}", "héllo", "\x00", "1 year 2 mons -3 days 04:05:06.5", "P1Y2M3DT4H5M6.5S",
		"24:00:00", "2024-01-02 03:04 Europe/Paris", "{2024-01-02,NULL}", "@ 1 hour ago"} {
		for _, oid := range []uint32{oidBool, oidInt2, oidInt8, oidFloat8, oidTimestampTZ, oidDate, 1083, 1186, 1182, 1187, 1007, 1009, 1000, 26} {
			f.Add(oid, FormatText, []byte(s))
		}
	}
	f.Add(uint32(oidNumeric), FormatBinary, []byte{0, 2, 0, 1, 0, 0, 0, 2, 0x04, 0xd2, 0x1a, 0x85})
	f.Add(uint32(1007), FormatBinary, []byte{0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 23, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 4, 0, 0, 0, 7, 0xff, 0xff, 0xff, 0xff})
	f.Add(uint32(oidTimestamp), FormatBinary, []byte{0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, oid uint32, format int16, b []byte) {
		typ, ok := ParamType(oid)
		if !ok {
			return
		}
		format &= 1
		v, err := DecodeParam(1, oid, format, b)
		if err != nil {
			if pgerr.CodeOf(err) == pgerr.InternalError {
				t.Fatalf("oid %d format %d %q: an error without a SQLSTATE: %v", oid, format, b, err)
			}
			return
		}
		if hasNUL(v) {
			t.Fatalf("oid %d format %d %q: decoded to %#v, which holds a NUL byte", oid, format, b, v)
		}
		if v == nil || typ.OID() == 0 {
			return
		}
		b1, err := AppendBinary([]byte{}, typ, v)
		if err != nil {
			return // a value basin holds but cannot send in binary (out of range)
		}
		v2, err := DecodeParam(1, typ.OID(), FormatBinary, b1)
		if err != nil {
			t.Fatalf("oid %d %q: %#v encodes to %x, which does not decode: %v", oid, b, v, b1, err)
		}
		b2, err := AppendBinary([]byte{}, typ, v2)
		if err != nil || !bytes.Equal(b1, b2) {
			t.Fatalf("oid %d %q: %#v encodes to %x, decodes to %#v, encodes to %x (%v)", oid, b, v, b1, v2, b2, err)
		}
	})
}

// hasNUL reports whether v, or an element of it, is a string with a NUL
// byte.
func hasNUL(v any) bool {
	switch x := v.(type) {
	case string:
		return strings.IndexByte(x, 0) >= 0
	case []any:
		for _, e := range x {
			if hasNUL(e) {
				return true
			}
		}
	}
	return false
}
