package pgcodec

import (
	"bytes"
	"testing"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
)

// The texts are Postgres 15's input and output.
func TestBlobText(t *testing.T) {
	for _, c := range []struct {
		t       catalog.Type
		in, out string
	}{
		{catalog.UUID, "{A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11}", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"},
		{catalog.UUID, "a0eebc999c0b4ef8bb6d6bb9bd380a11", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"},
		{catalog.UUID, "a0ee-bc99-9c0b-4ef8-bb6d-6bb9-bd38-0a11", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"},
		{catalog.Bytea, `\x01 02ff`, `\x0102ff`},
		{catalog.Bytea, `ab\\c\001`, `\x61625c6301`},
		{catalog.Bytea, ``, `\x`},
		{catalog.JSONB, `{"b":1,"a":[1, 2.50]}`, `{"a": [1, 2.50], "b": 1}`},
		{catalog.JSON, `{"b":1,  "b":[1, 2.50]}`, `{"b":1,  "b":[1, 2.50]}`},
	} {
		v, ok, err := CastText(c.in, c.t)
		if !ok || err != nil {
			t.Errorf("CastText(%q, %s): %v", c.in, c.t, err)
			continue
		}
		out, err := AppendText(nil, c.t, v)
		if err != nil || string(out) != c.out {
			t.Errorf("%s %q: text %q, %v; want %q", c.t, c.in, out, err, c.out)
		}
		bin, err := AppendBinary(nil, c.t, v)
		if err != nil {
			t.Errorf("%s %q: binary: %v", c.t, c.in, err)
			continue
		}
		if bin == nil {
			bin = []byte{} // an empty value, not NULL
		}
		back, err := DecodeParam(1, c.t.OID(), FormatBinary, bin)
		if err != nil {
			t.Errorf("%s %q: binary round trip: %v", c.t, c.in, err)
			continue
		}
		if again, _ := AppendText(nil, c.t, back); string(again) != c.out {
			t.Errorf("%s %q: binary round trip gave %q", c.t, c.in, again)
		}
	}
	for _, c := range []struct {
		t   catalog.Type
		in  string
		msg string
	}{
		{catalog.UUID, "a0eebc99-9c0b", `invalid input syntax for type uuid: "a0eebc99-9c0b"`},
		{catalog.UUID, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11x", `invalid input syntax for type uuid: "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11x"`},
		{catalog.Bytea, `\x0g`, `invalid hexadecimal digit: "g"`},
		{catalog.Bytea, `\x012`, `invalid hexadecimal data: odd number of digits`},
		{catalog.Bytea, `a\9`, `invalid input syntax for type bytea`},
		{catalog.JSONB, `{"a":`, `invalid input syntax for type json`},
		{catalog.JSON, `[1,]`, `invalid input syntax for type json`},
	} {
		_, _, err := CastText(c.in, c.t)
		if e, ok := pgerr.As(err); !ok || e.Message != c.msg {
			t.Errorf("CastText(%q, %s) = %v; want %s", c.in, c.t, err, c.msg)
		}
	}
	if got := EscapeBytea([]byte("\x00A\\\x7f\x80")); got != "\\000A\\\\\x7f\\200" {
		t.Errorf("EscapeBytea = %q", got)
	}
}

func TestBlobParams(t *testing.T) {
	for _, c := range []struct {
		oid    uint32
		format int16
		in     []byte
		want   any
	}{
		{2950, FormatText, []byte("A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11"), catalog.UUIDVal{0xa0, 0xee, 0xbc, 0x99, 0x9c, 0x0b, 0x4e, 0xf8, 0xbb, 0x6d, 0x6b, 0xb9, 0xbd, 0x38, 0x0a, 0x11}},
		{3802, FormatText, []byte(`{"b": 1, "a": 2}`), catalog.JSONText(`{"a": 2, "b": 1}`)},
		{3802, FormatBinary, []byte("\x01[1,2]"), catalog.JSONText(`[1, 2]`)},
		{114, FormatBinary, []byte(`[1,2]`), catalog.JSONText(`[1,2]`)},
		{17, FormatText, []byte(`\xdead`), []byte{0xde, 0xad}},
		{17, FormatBinary, []byte{0, 1}, []byte{0, 1}},
	} {
		typ, ok := ParamType(c.oid)
		if !ok || typ.OID() != c.oid {
			t.Errorf("ParamType(%d) = %v, %v", c.oid, typ, ok)
		}
		got, err := DecodeParam(1, c.oid, c.format, c.in)
		if err != nil {
			t.Errorf("DecodeParam(%d, %q): %v", c.oid, c.in, err)
			continue
		}
		if gb, ok := got.([]byte); ok {
			if !bytes.Equal(gb, c.want.([]byte)) {
				t.Errorf("DecodeParam(%d, %q) = %v", c.oid, c.in, got)
			}
		} else if got != c.want {
			t.Errorf("DecodeParam(%d, %q) = %v, want %v", c.oid, c.in, got, c.want)
		}
	}
	if _, err := DecodeParam(1, 3802, FormatBinary, []byte("\x02{}")); pgerr.CodeOf(err) != pgerr.InvalidBinaryRepresentation {
		t.Errorf("jsonb version 2: %v", err)
	}
	arr, err := DecodeParam(1, 2951, FormatText, []byte(`{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11,NULL}`))
	if err != nil {
		t.Fatal(err)
	}
	out, _ := AppendText(nil, catalog.ArrayOf(catalog.UUID), arr)
	if string(out) != `{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11,NULL}` {
		t.Errorf("uuid[] = %s", out)
	}
	out, _ = AppendText(nil, catalog.ArrayOf(catalog.JSONB), []any{catalog.JSONText(`{"a": 1}`)})
	if string(out) != `{"{\"a\": 1}"}` {
		t.Errorf("jsonb[] = %s", out)
	}
	if TypeLen(catalog.UUID) != 16 || TypeLen(catalog.JSONB) != -1 {
		t.Error("TypeLen")
	}
}

func TestBlobPeer(t *testing.T) {
	for _, c := range []struct {
		oid    uint32
		format int16
		in     string
		want   any
	}{
		{3802, FormatBinary, "\x01{\"a\": 1}", catalog.JSONText(`{"a": 1}`)},
		{3802, FormatText, `{"a": 1}`, catalog.JSONText(`{"a": 1}`)},
		{114, FormatText, `{"a" :1}`, catalog.JSONText(`{"a" :1}`)},
		{2950, FormatText, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", catalog.UUIDVal{0xa0, 0xee, 0xbc, 0x99, 0x9c, 0x0b, 0x4e, 0xf8, 0xbb, 0x6d, 0x6b, 0xb9, 0xbd, 0x38, 0x0a, 0x11}},
	} {
		got, ok := DecodePeer(c.oid, c.format, []byte(c.in))
		if !ok || got != c.want {
			t.Errorf("DecodePeer(%d, %q) = %v, %v", c.oid, c.in, got, ok)
		}
	}
	if got, ok := DecodePeer(17, FormatBinary, []byte{1, 2}); !ok || !bytes.Equal(got.([]byte), []byte{1, 2}) {
		t.Errorf("bytea peer value %v", got)
	}
}
