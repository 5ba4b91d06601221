package pgcodec

import (
	"encoding/binary"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/cockroachdb/apd/v3"

	"github.com/basindb/basin/catalog"
	num "github.com/basindb/basin/internal/numeric"
	"github.com/basindb/basin/internal/pgerr"
)

// TestDecodeText checks the input functions bind parameters in text
// format go through, against what PostgreSQL 15 accepts and answers.
func TestDecodeText(t *testing.T) {
	ts := func(s string) time.Time {
		v, err := time.Parse("2006-01-02 15:04:05.999999", s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, c := range []struct {
		oid  uint32
		in   string
		want any    // nil: an error is expected
		code string // the error's SQLSTATE
	}{
		{oidBool, "t", true, ""},
		{oidBool, " TRUE ", true, ""},
		{oidBool, "tr", true, ""},
		{oidBool, "yes", true, ""},
		{oidBool, "on", true, ""},
		{oidBool, "1", true, ""},
		{oidBool, "f", false, ""},
		{oidBool, "No", false, ""},
		{oidBool, "of", false, ""},
		{oidBool, "0", false, ""},
		{oidBool, "o", nil, "22P02"},
		{oidBool, "", nil, "22P02"},
		{oidBool, "maybe", nil, "22P02"},
		{oidInt2, "-32768", int64(-32768), ""},
		{oidInt2, "32768", nil, "22003"},
		{oidInt4, " 2147483647 ", int64(math.MaxInt32), ""},
		{oidInt4, "-2147483649", nil, "22003"},
		{oidInt8, "-9223372036854775808", int64(math.MinInt64), ""},
		{oidInt8, "9223372036854775808", nil, "22003"},
		{oidInt8, "1.5", nil, "22P02"},
		{oidInt8, "0x10", nil, "22P02"},
		{oidFloat8, "-2.5e-3", -0.0025, ""},
		{oidFloat8, "-Infinity", math.Inf(-1), ""},
		{oidFloat8, "inf", math.Inf(1), ""},
		{oidFloat8, "1e400", nil, "22003"},
		{oidFloat8, "0x1p-2", nil, "22P02"},
		{oidFloat8, "1_000", nil, "22P02"},
		{oidFloat4, "0.5", 0.5, ""},
		{oidNumeric, " 12345.6780 ", "12345.6780", ""},
		{oidNumeric, "1e3", "1000", ""},
		{oidNumeric, "-Infinity", "-Infinity", ""},
		{oidNumeric, "1.2.3", nil, "22P02"},
		{oidText, "héllo", "héllo", ""},
		{oidVarchar, "", "", ""},
		{oidText, "a\x00b", nil, "22021"},
		{1009, "{a,\"b\x00c\"}", nil, "22021"}, // text[]: an element's NUL too
		{oidInt8, "1\x00", nil, "22021"},
		{oidTimestamp, "2024-02-29 13:04:05.123456", ts("2024-02-29 13:04:05.123456"), ""},
		{oidTimestamp, "2024-02-29T13:04:05", ts("2024-02-29 13:04:05"), ""},
		{oidTimestamp, "2024-02-29 13:04", ts("2024-02-29 13:04:00"), ""},
		{oidTimestamp, "2024-02-29", ts("2024-02-29 00:00:00"), ""},
		{oidTimestamp, "2024-02-29 13:04:05.1234567", ts("2024-02-29 13:04:05.123457"), ""},
		// A plain timestamp ignores a zone; timestamptz converts to UTC.
		{oidTimestamp, "2024-02-29 13:04:05+05:30", ts("2024-02-29 13:04:05"), ""},
		{oidTimestampTZ, "2024-02-29 13:04:05+05:30", ts("2024-02-29 07:34:05"), ""},
		{oidTimestampTZ, "2024-02-29 13:04:05.5-08", ts("2024-02-29 21:04:05.5"), ""},
		{oidTimestampTZ, "2024-02-29 13:04:05Z", ts("2024-02-29 13:04:05"), ""},
		{oidTimestampTZ, "2024-02-29 13:04:05+0100", ts("2024-02-29 12:04:05"), ""},
		{oidTimestamp, "0044-03-15 12:00:00 BC", time.Date(-43, 3, 15, 12, 0, 0, 0, time.UTC), ""},
		{oidDate, "2000-01-01", catalog.DateVal(10957), ""},
		{oidDate, "2000-01-01 10:00", catalog.DateVal(10957), ""},
		{oidDate, "2000-02-30", nil, "22008"},
		{oidDate, "x", nil, "22007"},
		{oidTimestamp, "2023-02-29 00:00:00", nil, "22008"},
		{oidTimestamp, "2024-13-01", nil, "22008"},
		{oidTimestamp, "2024-01-01 10:60:00", nil, "22008"},
		{oidTimestamp, "yesterday", nil, "0A000"}, // special values other than epoch are refused,
		{oidTimestamp, "0000-01-01", nil, "22007"},
		{oidTimestamp, "infinity", nil, "0A000"},
		{oidTimestampTZ, "2024-01-01 10:00:00+5x", nil, "22007"},
	} {
		t.Run(fmt.Sprintf("%s/%q", pgTypeName(c.oid), c.in), func(t *testing.T) {
			got, err := DecodeParam(1, c.oid, FormatText, []byte(c.in))
			if c.want == nil {
				if pgerr.CodeOf(err) != pgerr.Code(c.code) {
					t.Fatalf("got %v, %v; want error %s", got, err, c.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if w, ok := c.want.(time.Time); ok {
				if g, ok := got.(time.Time); !ok || !g.Equal(w) || g.Location() != time.UTC {
					t.Fatalf("got %v, want %v", got, w)
				}
				return
			}
			if d, ok := got.(*apd.Decimal); ok {
				got = num.Text(d)
			}
			if got != c.want {
				t.Fatalf("got %#v, want %#v", got, c.want)
			}
		})
	}
}

// TestBinaryRoundTrip encodes a value of each basin type as a result
// column would and decodes it as a bind parameter of the same type.
func TestBinaryRoundTrip(t *testing.T) {
	for _, c := range []struct {
		t catalog.Type
		v any
	}{
		{catalog.Boolean, true},
		{catalog.Boolean, false},
		{catalog.Int, int64(math.MinInt32)},
		{catalog.Int, int64(math.MaxInt32)},
		{catalog.BigInt, int64(math.MinInt64)},
		{catalog.BigInt, int64(-1)},
		{catalog.Double, math.Inf(-1)},
		{catalog.Double, math.Copysign(0, -1)},
		{catalog.Double, 5e-324},
		{catalog.Varchar, "héllo"},
		{catalog.Varchar, ""},
		{catalog.Timestamp, time.Date(2024, 2, 29, 13, 4, 5, 123456000, time.UTC)},
		{catalog.Timestamp, time.Date(1969, 12, 31, 23, 59, 59, 999999000, time.UTC)},
		{catalog.Timestamp, time.Date(-4712, 1, 1, 0, 0, 0, 0, time.UTC)},
		{catalog.Timestamp, time.Date(294276, 12, 31, 23, 59, 59, 999999000, time.UTC)},
	} {
		b, err := AppendBinary([]byte{}, c.t, c.v) // non-nil: nil is NULL
		if err != nil {
			t.Fatalf("%s %v: %v", c.t, c.v, err)
		}
		got, err := DecodeParam(1, c.t.OID(), FormatBinary, b)
		if err != nil {
			t.Fatalf("%s %v: %v", c.t, c.v, err)
		}
		switch w := c.v.(type) {
		case time.Time:
			if !got.(time.Time).Equal(w) {
				t.Errorf("%v came back as %v", w, got)
			}
		case float64:
			if math.Float64bits(got.(float64)) != math.Float64bits(w) {
				t.Errorf("%v came back as %v", w, got)
			}
		default:
			if got != c.v {
				t.Errorf("%s %v came back as %v", c.t, c.v, got)
			}
		}
	}
	// The epoch is 2000-01-01: zero microseconds.
	b, _ := AppendBinary(nil, catalog.Timestamp, time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC))
	if binary.BigEndian.Uint64(b) != 0 {
		t.Errorf("2000-01-01 encodes as %x", b)
	}
	if _, err := AppendBinary(nil, catalog.Int, int64(math.MaxInt32+1)); err == nil {
		t.Error("an int4 column took 2^31")
	}
}

// TestDecodeBinaryOthers covers the binary forms of types clients declare
// that basin maps onto its own.
func TestDecodeBinaryOthers(t *testing.T) {
	numeric := func(dscale uint16, weight int16, sign uint16, digits ...uint16) []byte {
		b := binary.BigEndian.AppendUint16(nil, uint16(len(digits)))
		b = binary.BigEndian.AppendUint16(b, uint16(weight))
		b = binary.BigEndian.AppendUint16(b, sign)
		b = binary.BigEndian.AppendUint16(b, dscale)
		for _, d := range digits {
			b = binary.BigEndian.AppendUint16(b, d)
		}
		return b
	}
	for _, c := range []struct {
		oid  uint32
		b    []byte
		want any
	}{
		{oidInt2, []byte{0xff, 0xfe}, int64(-2)},
		{oidFloat4, binary.BigEndian.AppendUint32(nil, math.Float32bits(0.5)), 0.5},
		{oidNumeric, numeric(3, 1, 0, 1, 2345, 6780), "12345.678"},
		{oidNumeric, numeric(1, -1, 0x4000, 5000), "-0.5"},
		{oidNumeric, numeric(2, -1, 0x4000, 5000), "-0.50"},
		// Digits beyond dscale are truncated, as numeric_recv does.
		{oidNumeric, numeric(0, 1, 0, 1, 2345, 6780), "12345"},
		{oidNumeric, numeric(0, 0, 0), "0"},
		{oidDate, binary.BigEndian.AppendUint32(nil, math.MaxUint32), catalog.DateVal(10956)},
		{oidTimestampTZ, binary.BigEndian.AppendUint64(nil, 1), time.Date(2000, 1, 1, 0, 0, 0, 1000, time.UTC)},
		{oidVarchar, []byte("v"), "v"},
	} {
		got, err := DecodeParam(1, c.oid, FormatBinary, c.b)
		if err != nil {
			t.Errorf("%s %x: %v", pgTypeName(c.oid), c.b, err)
			continue
		}
		if d, ok := got.(*apd.Decimal); ok {
			got = num.Text(d)
		}
		if w, ok := c.want.(time.Time); ok {
			if !got.(time.Time).Equal(w) {
				t.Errorf("%s %x = %v, want %v", pgTypeName(c.oid), c.b, got, w)
			}
		} else if got != c.want {
			t.Errorf("%s %x = %#v, want %#v", pgTypeName(c.oid), c.b, got, c.want)
		}
	}
	got, err := DecodeParam(1, oidNumeric, FormatBinary, numeric(0, 0, 0xC000))
	if d, ok := got.(*apd.Decimal); err != nil || !ok || d.Form != apd.NaN {
		t.Errorf("numeric NaN = %v, %v", got, err)
	}
	for _, bad := range []struct {
		oid uint32
		b   []byte
	}{
		{oidBool, nil},
		{oidInt8, []byte{1, 2, 3}},
		{oidTimestamp, binary.BigEndian.AppendUint64(nil, math.MaxInt64)},
		{oidNumeric, numeric(0, 0, 0, 10000)},
		{oidNumeric, []byte{0, 1, 0, 0, 0, 0, 0, 0}},
		{oidText, []byte{0xff}},
	} {
		b := bad.b
		if b == nil {
			b = []byte{}
		}
		if _, err := DecodeParam(3, bad.oid, FormatBinary, b); pgerr.CodeOf(err) != pgerr.InvalidBinaryRepresentation {
			t.Errorf("%s %x: %v, want 22P03", pgTypeName(bad.oid), bad.b, err)
		}
	}
}
