package pull

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"
	"time"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/materialize"
	"github.com/basindb/basin/pgcodec"
)

// TestWireEncoder checks what the stored-row encoder does besides the
// bytes (those are checked against pgwire's end to end by
// node.TestClusterRawRows): rows HAVING dropped, rows of fewer values,
// values of another kind than the column's, and the types and formats it
// leaves to the ordinary path.
func TestWireEncoder(t *testing.T) {
	cols := []catalog.Column{{Name: "id", Type: catalog.BigInt}, {Name: "n", Type: catalog.Int}, {Name: "s", Type: catalog.Varchar},
		{Name: "ts", Type: catalog.Timestamp}}
	enc := newWireEncoder(cols, []int16{1, 0, 0, 1})
	if enc == nil {
		t.Fatal("no encoder for binary BIGINT, text INT, text VARCHAR, binary TIMESTAMP")
	}
	if newWireEncoder(cols, []int16{1, 0, 0, 0}) != nil {
		t.Error("an encoder for a text TIMESTAMP (pgwire's format alone)")
	}
	stored := func(vals ...any) []byte {
		b, err := materialize.EncodeRow(vals)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	ts := time.Date(2024, 1, 2, 3, 4, 5, 123456000, time.UTC)
	prefix := []byte("prefix")
	out, present, err := enc.AppendStored(prefix, stored(true, int64(-7), int64(42), "héllo", ts, int64(99)), new(materialize.RowValue))
	if err != nil || !present {
		t.Fatalf("AppendStored: present %v, %v", present, err)
	}
	want := append([]byte("prefixD"), 0, 0, 0, 0, 0, 4)
	want = binary.BigEndian.AppendUint32(want, 8)
	want = binary.BigEndian.AppendUint64(want, uint64(0xfffffffffffffff9))
	want = append(binary.BigEndian.AppendUint32(want, 2), "42"...)
	want = append(binary.BigEndian.AppendUint32(want, 6), "héllo"...)
	want = binary.BigEndian.AppendUint32(want, 8)
	want = binary.BigEndian.AppendUint64(want, uint64((ts.Unix()-pgcodec.EpochUnix)*1e6+123456))
	binary.BigEndian.PutUint32(want[len(prefix)+1:], uint32(len(want)-len(prefix)-1))
	if !bytes.Equal(out, want) {
		t.Fatalf("DataRow\n got %x\nwant %x", out, want)
	}
	// Binary INT checks the range, as pgwire does (its text form does
	// not need to).
	binInt := newWireEncoder(cols, []int16{1, 1, 0, 1})
	for _, c := range []struct {
		name   string
		enc    *wireEncoder
		stored []byte
		want   error
	}{
		{"dropped by HAVING", enc, stored(false, int64(1), int64(2), "x", ts), nil},
		{"fewer values", enc, stored(true, int64(1), int64(2)), errNotWire},
		{"INT out of range", binInt, stored(true, int64(1), int64(1)<<40, "x", ts), errNotWire},
		{"a string in a BIGINT column", enc, stored(true, "1", int64(2), "x", ts), errNotWire},
	} {
		out, present, err := c.enc.AppendStored(prefix, c.stored, new(materialize.RowValue))
		if err != c.want || present || !bytes.Equal(out, prefix) {
			t.Errorf("%s: %q, present %v, %v; want the prefix alone, not present, %v", c.name, out, present, err, c.want)
		}
	}
}

// TestWireEncoderColumns checks the encoder of some of the stored
// columns (SELECT n, s of a relation (id, n, s, ts)): only those go out,
// in order; columns out of stored order take the ordinary path.
func TestWireEncoderColumns(t *testing.T) {
	cols := []catalog.Column{{Name: "id", Type: catalog.BigInt}, {Name: "n", Type: catalog.Int}, {Name: "s", Type: catalog.Varchar},
		{Name: "ts", Type: catalog.Timestamp}}
	enc := newWireEncoderOf(cols, []int{1, 2}, []int16{1, 0})
	if enc == nil {
		t.Fatal("no encoder for columns n (binary), s (text)")
	}
	for _, idx := range [][]int{{2, 1}, {1, 1}, {0, 4}} {
		if newWireEncoderOf(cols, idx, []int16{0, 0}) != nil {
			t.Errorf("an encoder for columns %v", idx)
		}
	}
	b, err := materialize.EncodeRow([]any{true, int64(-7), int64(42), "héllo", time.Unix(0, 0), int64(99)})
	if err != nil {
		t.Fatal(err)
	}
	out, present, err := enc.AppendStored(nil, b, new(materialize.RowValue))
	if err != nil || !present {
		t.Fatalf("AppendStored: present %v, %v", present, err)
	}
	want := append([]byte("D"), 0, 0, 0, 0, 0, 2)
	want = binary.BigEndian.AppendUint32(want, 4)
	want = binary.BigEndian.AppendUint32(want, 42)
	want = append(binary.BigEndian.AppendUint32(want, 6), "héllo"...)
	binary.BigEndian.PutUint32(want[1:], uint32(len(want)-1))
	if !bytes.Equal(out, want) {
		t.Fatalf("DataRow\n got %x\nwant %x", out, want)
	}
	short, err := materialize.EncodeRow([]any{true, int64(1), int64(2)})
	if err != nil {
		t.Fatal(err)
	}
	if out, _, err := enc.AppendStored(nil, short, new(materialize.RowValue)); err != errNotWire || len(out) != 0 {
		t.Fatalf("a row without column s: %x, %v; want nothing, errNotWire", out, err)
	}
}

// TestWireEncoderMatchesAppendRow checks the stored-row encoder against
// pgcodec's encoders, byte for byte, for each type and format it takes.
func TestWireEncoderMatchesAppendRow(t *testing.T) {
	cols := []catalog.Column{{Name: "b", Type: catalog.Boolean}, {Name: "i", Type: catalog.Int}, {Name: "n", Type: catalog.BigInt},
		{Name: "s", Type: catalog.Varchar}, {Name: "f", Type: catalog.Double}, {Name: "ts", Type: catalog.Timestamp}}
	rows := [][]any{
		{true, int64(math.MinInt32), int64(math.MinInt64), "", math.Copysign(0, -1), time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)},
		{false, int64(math.MaxInt32), int64(math.MaxInt64), "héllo\x01", math.Inf(1), time.Date(2024, 2, 29, 23, 59, 59, 999999000, time.UTC)},
		{nil, int64(0), nil, "x", math.NaN(), time.Date(-4712, 1, 1, 0, 0, 0, 0, time.UTC)},
	}
	for _, formats := range [][]int16{{1, 1, 1, 1, 1, 1}, {0, 0, 0, 0, 1, 1}} {
		enc := newWireEncoder(cols, formats)
		if enc == nil {
			t.Fatalf("no encoder for formats %v", formats)
		}
		for _, row := range rows {
			stored, err := materialize.EncodeRow(append([]any{true}, row...))
			if err != nil {
				t.Fatal(err)
			}
			got, present, err := enc.AppendStored(nil, stored, new(materialize.RowValue))
			if err != nil || !present {
				t.Fatalf("%v in formats %v: present %v, %v", row, formats, present, err)
			}
			vals := make([][]byte, len(row))
			for i, v := range row {
				if v == nil {
					continue
				}
				appendValue := pgcodec.AppendText
				if formats[i] == pgcodec.FormatBinary {
					appendValue = pgcodec.AppendBinary
				}
				if vals[i], err = appendValue([]byte{}, cols[i].Type, v); err != nil {
					t.Fatal(err)
				}
			}
			if want := pgcodec.AppendDataRow(nil, vals); !bytes.Equal(got, want) {
				t.Errorf("%v in formats %v:\n got %x\nwant %x", row, formats, got, want)
			}
		}
	}
}

// TestWireEncoderBlobs checks the stored-row encoder of uuid, jsonb,
// json and bytea columns against pgcodec's encoders in both formats.
func TestWireEncoderBlobs(t *testing.T) {
	cols := []catalog.Column{{Name: "u", Type: catalog.UUID}, {Name: "jb", Type: catalog.JSONB},
		{Name: "j", Type: catalog.JSON}, {Name: "b", Type: catalog.Bytea}}
	rows := [][]any{
		{catalog.UUIDVal{1, 15: 0xff}, catalog.JSONText(`{"a": [1, 2]}`), catalog.JSONText(`[1,  2]`), []byte{0, 0xff}},
		{nil, nil, nil, []byte{}},
	}
	for _, formats := range [][]int16{{1, 1, 1, 1}, {0, 0, 0, 0}} {
		enc := newWireEncoder(cols, formats)
		if enc == nil {
			t.Fatalf("no encoder for formats %v", formats)
		}
		for _, row := range rows {
			stored, err := materialize.EncodeRow(append([]any{true}, row...))
			if err != nil {
				t.Fatal(err)
			}
			got, _, err := enc.AppendStored(nil, stored, new(materialize.RowValue))
			if err != nil {
				t.Fatal(err)
			}
			vals := make([][]byte, len(row))
			for i, v := range row {
				if v == nil {
					continue
				}
				appendValue := pgcodec.AppendText
				if formats[i] == pgcodec.FormatBinary {
					appendValue = pgcodec.AppendBinary
				}
				if vals[i], err = appendValue([]byte{}, cols[i].Type, v); err != nil {
					t.Fatal(err)
				}
			}
			if want := pgcodec.AppendDataRow(nil, vals); !bytes.Equal(got, want) {
				t.Errorf("%v in formats %v:\n got %x\nwant %x", row, formats, got, want)
			}
		}
	}
}
