package pgcodec

import (
	"bytes"
	"encoding/hex"
	"testing"
	"time"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
)

// TestIntervalText holds interval input and output to what PostgreSQL
// 15 answers for SELECT 'in'::interval with IntervalStyle postgres.
func TestIntervalText(t *testing.T) {
	for _, c := range []struct{ in, out string }{
		{"1 day", "1 day"},
		{"2 hours 30 minutes", "02:30:00"},
		{"1 mon", "1 mon"},
		{"1 year 2 months", "1 year 2 mons"},
		{"01:02:03", "01:02:03"},
		{"3 days 04:05:06", "3 days 04:05:06"},
		{"-1 day +02:00", "-1 days +02:00:00"},
		{"@ 1 hour", "01:00:00"},
		{"P1DT2H", "1 day 02:00:00"},
		{"P1Y2M3DT4H5M6.5S", "1 year 2 mons 3 days 04:05:06.5"},
		{"PT1H30M", "01:30:00"},
		{"1 week", "7 days"},
		{"90 seconds", "00:01:30"},
		{"1.5 hours", "01:30:00"},
		{"1.5 days", "1 day 12:00:00"},
		{"1.5 months", "1 mon 15 days"},
		{"1.5 years", "1 year 6 mons"},
		{"0", "00:00:00"},
		{"5", "00:00:05"},
		{"1 year 2 mons 3 days 04:05:06.5", "1 year 2 mons 3 days 04:05:06.5"},
		{"-1 year -2 mons", "-1 years -2 mons"},
		{"1 day ago", "-1 days"},
		{"-00:00:01.5", "-00:00:01.5"},
		{"100 hours", "100:00:00"},
		{"1 day -1 hour", "1 day -01:00:00"},
		{"-1 day -1 hour", "-1 days -01:00:00"},
		{"1 millisecond", "00:00:00.001"},
		{"10 min", "00:10:00"},
		{"2 decades", "20 years"},
		{"1 century", "100 years"},
		{"1day", "1 day"},
		{"  1 DAY  ", "1 day"},
	} {
		v, err := ParseInterval(c.in)
		if err != nil {
			t.Errorf("ParseInterval(%q): %v", c.in, err)
			continue
		}
		if got := string(AppendInterval(nil, v)); got != c.out {
			t.Errorf("%q → %+v → %q, want %q", c.in, v, got, c.out)
		}
	}
	for _, c := range []struct{ in, code string }{
		{"", "22007"}, {"abc", "22007"}, {"1 fortnight", "22007"}, {"1:99", "22015"},
		{"P", "22007"}, {"PT1Y", "22007"}, {"infinity", "0A000"},
		{"3000000000 days", "22015"}, {"1 day day", "22007"}, {"1 day 2 days", "22007"}, {"1 hour 01:00", "22007"},
	} {
		if _, err := ParseInterval(c.in); string(pgerr.CodeOf(err)) != c.code {
			t.Errorf("ParseInterval(%q) = %v, want %s", c.in, err, c.code)
		}
	}
	if v, err := ParseIntervalField("3", "d"); err != nil || v != (catalog.IntervalVal{Days: 3}) {
		t.Errorf("INTERVAL '3' DAY = %+v, %v", v, err)
	}
}

func TestDatetimeText(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal(err) // the zone database is embedded (pgcodec imports time/tzdata)
	}
	kolkata, _ := time.LoadLocation("Asia/Kolkata")
	for _, c := range []struct {
		typ     catalog.Type
		in      string
		loc     *time.Location
		out     string
		outLoc  *time.Location
		errCode string
	}{
		{typ: catalog.Date, in: "2024-01-02", out: "2024-01-02"},
		{typ: catalog.Date, in: "2024-01-02T10:00:00", out: "2024-01-02"},
		{typ: catalog.Date, in: "01/02/2024", out: "2024-01-02"},
		{typ: catalog.Date, in: "20240102", out: "2024-01-02"},
		{typ: catalog.Date, in: "0044-03-15 BC", out: "0044-03-15 BC"},
		{typ: catalog.Date, in: "1970-01-01", out: "1970-01-01"},
		{typ: catalog.Date, in: "2024-02-30", errCode: "22008"},
		{typ: catalog.Date, in: "2024-13-01", errCode: "22008"},
		{typ: catalog.Date, in: "bad", errCode: "22007"},
		{typ: catalog.Date, in: "infinity", errCode: "0A000"},
		{typ: catalog.Time, in: "13:04:05.5", out: "13:04:05.5"},
		{typ: catalog.Time, in: "13:04", out: "13:04:00"},
		{typ: catalog.Time, in: "24:00:00", out: "24:00:00"},
		{typ: catalog.Time, in: "2024-01-02 13:04:05", out: "13:04:05"},
		{typ: catalog.Time, in: "13:04:05+02", out: "13:04:05"},
		{typ: catalog.Time, in: "00:00:00.0000005", out: "00:00:00"},
		{typ: catalog.Time, in: "00:00:00.0000015", out: "00:00:00.000002"},
		{typ: catalog.Time, in: "25:00:00", errCode: "22008"},
		{typ: catalog.Time, in: "12:60:00", errCode: "22008"},
		{typ: catalog.Time, in: "noon", errCode: "22007"},
		{typ: catalog.TimestampTZ, in: "2024-01-02 03:04:05.123", out: "2024-01-02 03:04:05.123+00"},
		{typ: catalog.TimestampTZ, in: "2024-01-02T03:04:05Z", out: "2024-01-02 03:04:05+00"},
		{typ: catalog.TimestampTZ, in: "2024-01-02 03:04:05+02", out: "2024-01-02 01:04:05+00"},
		{typ: catalog.TimestampTZ, in: "2024-01-02 03:04:05-05:30", out: "2024-01-02 08:34:05+00"},
		{typ: catalog.TimestampTZ, in: "2024-01-02 03:04:05 Europe/Paris", out: "2024-01-02 02:04:05+00"},
		{typ: catalog.TimestampTZ, in: "2024-07-02 03:04:05", loc: paris, out: "2024-07-02 01:04:05+00"},
		{typ: catalog.TimestampTZ, in: "2024-07-02 03:04:05+00", outLoc: paris, out: "2024-07-02 05:04:05+02"},
		{typ: catalog.TimestampTZ, in: "2024-01-02 03:04:05+00", outLoc: kolkata, out: "2024-01-02 08:34:05+05:30"},
		{typ: catalog.TimestampTZ, in: "2024-01-02", out: "2024-01-02 00:00:00+00"},
		{typ: catalog.TimestampTZ, in: "2024-01-02 25:00", errCode: "22008"},
		{typ: catalog.TimestampTZ, in: "2024-01-02 03:04:05 Mars/Olympus", errCode: "22023"},
	} {
		v, _, err := ParseText(c.typ, c.in, c.loc)
		if c.errCode != "" {
			if string(pgerr.CodeOf(err)) != c.errCode {
				t.Errorf("%s %q = %v, %v; want %s", c.typ, c.in, v, err, c.errCode)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s %q: %v", c.typ, c.in, err)
			continue
		}
		out, err := AppendTextIn(nil, c.typ, v, c.outLoc)
		if err != nil || string(out) != c.out {
			t.Errorf("%s %q → %q, %v; want %q", c.typ, c.in, out, err, c.out)
		}
		// Binary round trip.
		bin, err := AppendBinary(nil, c.typ, v)
		if err != nil {
			t.Fatal(err)
		}
		back, err := decodeBinaryDatetime(c.typ, bin)
		if err != nil || back != v && !(c.typ == catalog.TimestampTZ && back.(time.Time).Equal(v.(time.Time))) {
			t.Errorf("%s %q binary round trip: %v, %v", c.typ, c.in, back, err)
		}
	}
}

// TestDatetimeBinary checks the send functions against the bytes
// PostgreSQL 15 sends.
func TestDatetimeBinary(t *testing.T) {
	ts := time.Date(2024, 1, 2, 3, 4, 5, 123000000, time.UTC)
	for _, c := range []struct {
		typ catalog.Type
		v   any
		hex string
	}{
		{catalog.Date, catalog.DateVal(19724), "0000223f"}, // 2024-01-02: 8767 days after 2000-01-01
		{catalog.Date, catalog.DateVal(10956), "ffffffff"}, // 1999-12-31
		{catalog.Time, catalog.TimeOfDay(47045500000), "0000000af4215c60"},
		{catalog.TimestampTZ, ts, "0002b0ec8517d3b8"},
		{catalog.Interval, catalog.IntervalVal{Months: 14, Days: 3, Micros: 14706500000}, "000000036c9361a000000003" + "0000000e"},
	} {
		b, err := AppendBinary(nil, c.typ, c.v)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := hex.DecodeString(c.hex)
		if !bytes.Equal(b, want) {
			t.Errorf("%s %v = %x, want %s", c.typ, c.v, b, c.hex)
		}
		got, err := DecodeParam(1, c.typ.OID(), FormatBinary, b)
		if err != nil || got != c.v && !(c.typ == catalog.TimestampTZ && got.(time.Time).Equal(ts)) {
			t.Errorf("%s decode %x = %v, %v", c.typ, b, got, err)
		}
	}
	// date[] in text, and as a parameter.
	got, err := DecodeParam(1, 1182, FormatText, []byte("{2024-01-02,NULL}"))
	if err != nil || len(got.([]any)) != 2 || got.([]any)[0] != catalog.DateVal(19724) || got.([]any)[1] != nil {
		t.Errorf("date[] = %v, %v", got, err)
	}
	out, err := AppendText(nil, catalog.ArrayOf(catalog.Interval), []any{catalog.IntervalVal{Days: 1}, nil})
	if err != nil || string(out) != `{"1 day",NULL}` {
		t.Errorf("interval[] text = %s, %v", out, err)
	}
	bin, err := AppendBinary(nil, catalog.ArrayOf(catalog.Date), []any{catalog.DateVal(19724)})
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeParam(1, 1182, FormatBinary, bin)
	if err != nil || back.([]any)[0] != catalog.DateVal(19724) {
		t.Errorf("date[] binary = %v, %v", back, err)
	}
	if v, ok := DecodePeer(1186, FormatBinary, bin[:0]); ok {
		t.Errorf("empty interval decoded as %v", v)
	}
}

func TestHoursZone(t *testing.T) {
	for in, want := range map[string]string{"+02": "<+02>-02", "-5": "<-05>+05", "5.5": "<+05:30>-05:30", "0": "<+00>-00"} {
		if got, ok := HoursZone(in); !ok || got != want {
			t.Errorf("HoursZone(%q) = %q, %v; want %q", in, got, ok, want)
		}
		if _, ok := ParseZone(want); !ok {
			t.Errorf("ParseZone(%q) fails", want)
		}
	}
	for _, in := range []string{"UTC+2", "-05:30", "inf", "1e3", ""} {
		if got, ok := HoursZone(in); ok {
			t.Errorf("HoursZone(%q) = %q", in, got)
		}
	}
}

func TestParseZone(t *testing.T) {
	for _, c := range []struct {
		in  string
		off int
		ok  bool
	}{
		{"UTC", 0, true}, {"utc", 0, true}, {"Europe/Paris", 3600, true}, {"europe/paris", 3600, true},
		{"+02", -7200, true}, {"UTC+2", -7200, true}, {"-05:30", 5*3600 + 1800, true}, {"Mars/Olympus", 0, false},
	} {
		loc, ok := ParseZone(c.in)
		if ok != c.ok {
			t.Errorf("ParseZone(%q) ok = %v", c.in, ok)
			continue
		}
		if ok {
			if _, off := time.Date(2024, 1, 1, 0, 0, 0, 0, loc).Zone(); off != c.off {
				t.Errorf("ParseZone(%q) offset %d, want %d", c.in, off, c.off)
			}
		}
	}
}

func TestDecodeParamIn(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal(err) // the zone database is embedded (pgcodec imports time/tzdata)
	}
	v, err := DecodeParamIn(1, oidTimestampTZ, FormatText, []byte("2024-07-01 12:00"), paris)
	if err != nil || !v.(time.Time).Equal(time.Date(2024, 7, 1, 10, 0, 0, 0, time.UTC)) {
		t.Errorf("timestamptz in Europe/Paris = %v, %v", v, err)
	}
	v, err = DecodeParamIn(1, oidTimestampTZ, FormatText, []byte("2024-07-01 12:00+00"), paris)
	if err != nil || !v.(time.Time).Equal(time.Date(2024, 7, 1, 12, 0, 0, 0, time.UTC)) {
		t.Errorf("timestamptz with an offset = %v, %v", v, err)
	}
	if _, err := DecodeParamIn(1, oidTimestampTZ, FormatText, []byte("x\x00"), paris); pgerr.CodeOf(err) != pgerr.CharacterNotInRepertoire {
		t.Errorf("NUL: %v", err)
	}
}

// TestDecodePeerDatetime decodes what another node sends for the four
// types, in both formats.
func TestDecodePeerDatetime(t *testing.T) {
	iv := catalog.IntervalVal{Months: 1, Days: -2, Micros: 3}
	for _, c := range []struct {
		typ catalog.Type
		v   any
	}{
		{catalog.Date, catalog.DateVal(19724)}, {catalog.Time, catalog.TimeOfDay(1)},
		{catalog.TimestampTZ, time.Date(2024, 1, 2, 3, 4, 5, 6000, time.UTC)}, {catalog.Interval, iv},
	} {
		for _, format := range []int16{FormatText, FormatBinary} {
			b, err := AppendText(nil, c.typ, c.v)
			if format == FormatBinary {
				b, err = AppendBinary(nil, c.typ, c.v)
			}
			if err != nil {
				t.Fatal(err)
			}
			got, ok := DecodePeer(c.typ.OID(), format, b)
			if !ok || got != c.v && !(c.typ == catalog.TimestampTZ && got.(time.Time).Equal(c.v.(time.Time))) {
				t.Errorf("%s format %d: %v, %v", c.typ, format, got, ok)
			}
		}
	}
}
