package serde

import (
	"math"
	"testing"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
)

// recordRels are the relations whose records the codec tests decode: a
// Kafka-format BIGINT key first, a JSON key of two columns between value
// columns, no key at all, a JSON TIMESTAMP key, and a Kafka-format
// VARCHAR key last.
var recordRels = []*catalog.Relation{
	codecRel("kafka",
		catalog.Column{Name: "id", Type: catalog.BigInt, Key: true},
		col("name", catalog.Varchar), col("amount", catalog.Double), col("ts", catalog.Timestamp), col("ok", catalog.Boolean)),
	codecRel("json",
		col("region", catalog.Varchar), catalog.Column{Name: "id", Type: catalog.Int, Key: true},
		col("n", catalog.BigInt), catalog.Column{Name: "shard", Type: catalog.Varchar, Key: true}, col("at", catalog.Timestamp)),
	codecRel("kafka", col("a", catalog.Varchar), col("b", catalog.Int)),
	codecRel("json", catalog.Column{Name: "day", Type: catalog.Timestamp, Key: true}, col("total", catalog.Double)),
	codecRel("kafka", col("qty", catalog.Int), catalog.Column{Name: "sku", Type: catalog.Varchar, Key: true}),
	withFormats(codecRel("delimited", catalog.Column{Name: "a", Type: catalog.Varchar, Key: true}, catalog.Column{Name: "b", Type: catalog.BigInt, Key: true},
		col("v", catalog.Varchar), col("at", catalog.Timestamp), col("d", catalog.Decimal), col("tags", catalog.ArrayOf(catalog.BigInt))), "protobuf_nosr"),
	withFormats(codecRel("protobuf_nosr", catalog.Column{Name: "id", Type: catalog.BigInt, Key: true}, col("x", catalog.Double), col("day", catalog.Date)), "delimited"),
}

// withFormats sets rel's value format.
func withFormats(rel *catalog.Relation, valueFormat string) *catalog.Relation {
	rel.ValueFormat = valueFormat
	return rel
}

func codecRel(keyFormat string, cols ...catalog.Column) *catalog.Relation {
	return &catalog.Relation{Name: "r", Kind: catalog.KindTable, Topic: "r", Partitions: 1,
		KeyFormat: keyFormat, ValueFormat: "json", Schema: catalog.Schema{Columns: cols}}
}

func TestCodecRecords(t *testing.T) {
	for _, tc := range []struct {
		rel        *catalog.Relation
		key, value string
		row        catalog.Row
	}{
		{recordRels[0], "\x00\x00\x00\x00\x00\x00\x00\x07", `{"name":"x","amount":1.5,"ts":1704164645678,"ok":true}`,
			catalog.Row{int64(7), "x", 1.5, ts("2024-01-02 03:04:05.678"), true}},
		{recordRels[1], `{"id":3,"shard":"s1"}`, `{"region":"eu","n":9,"at":null}`,
			catalog.Row{"eu", int64(3), int64(9), "s1", nil}},
		{recordRels[2], "", `{"a":"y","b":2}`, catalog.Row{"y", int64(2)}},
		{recordRels[3], `1704164645678`, `{"total":"NaN"}`, catalog.Row{ts("2024-01-02 03:04:05.678"), math.NaN()}},
		{recordRels[4], `sku-1`, `{"qty":4}`, catalog.Row{int64(4), "sku-1"}},
	} {
		c := NewCodec(tc.rel, nil)
		var key []byte
		if tc.key != "" {
			key = []byte(tc.key)
		}
		row, keyVals, err := c.Decode(key, []byte(tc.value))
		if err != nil || !sameValues(row, tc.row) {
			t.Fatalf("Decode(%q, %s) = %#v, %v; want %#v", tc.key, tc.value, row, err, tc.row)
		}
		for i, k := range c.KeyIndex() {
			if !sameValues([]any{keyVals[i]}, []any{row[k]}) {
				t.Errorf("key value %d is %#v, the row's column %d %#v", i, keyVals[i], k, row[k])
			}
		}
		k2, v2, err := c.Encode(row)
		if err != nil {
			t.Fatal(err)
		}
		if string(k2) != tc.key || (key == nil) != (k2 == nil) {
			t.Errorf("Encode's key = %q, want %q", k2, tc.key)
		}
		if back, _, err := c.Decode(k2, v2); err != nil || !sameValues(back, row) {
			t.Errorf("re-encoded %q %s decodes to %#v, %v", k2, v2, back, err)
		}
		// A tombstone: only the key.
		tomb := make(catalog.Row, len(row))
		for i := range tomb {
			tomb[i] = "garbage"
		}
		if gone, err := c.DecodeInto(tomb, key, nil); err != nil || !gone {
			t.Fatalf("DecodeInto of a tombstone = %v, %v", gone, err)
		}
		keyRow := c.KeyRow(key)
		for _, k := range c.KeyIndex() {
			if !sameValues([]any{tomb[k], keyRow[k]}, []any{row[k], row[k]}) {
				t.Errorf("tombstone's key column %d: DecodeInto %#v, KeyRow %#v, want %#v", k, tomb[k], keyRow[k], row[k])
			}
		}
	}
}

// FuzzDecodeRecord decodes arbitrary record keys and values for each of
// recordRels: it never panics, every error carries a SQLSTATE, DecodeInto
// and KeyRow agree with Decode, and what decodes encodes to a record that
// decodes to the same row.
func FuzzDecodeRecord(f *testing.F) {
	seeds := []struct {
		rel        uint8
		key, value string
		tombstone  bool
	}{
		{0, "\x00\x00\x00\x00\x00\x00\x00\x07", `{"name":"x","amount":1.5,"ts":1704164645678,"ok":true}`, false},
		{0, "\x00\x00\x00\x07", `{"NAME":"x","amount":"-Infinity","ts":"2024-01-02T03:04:05Z"}`, false},
		{0, "\x00\x00\x00\x00\x00\x00\x00\x07", ``, true},
		{1, `{"id":3,"shard":"s1"}`, `{"region":"eu","n":9,"at":-1.5}`, false},
		{1, `{"ID":3,"Shard":null}`, `{"region":{"x":[1]},"n":"9"}`, false},
		{1, `[1,2]`, `{}`, false},
		{1, `null`, ``, true},
		{2, ``, `{"a":"y","b":2}`, false},
		{2, `ignored`, `[1]`, false},
		{3, `1704164645678.5`, `{"total":"NaN"}`, false},
		{3, `{"day":"2024-01-02 03:04"}`, `{"total":1e400}`, false},
		{4, `sku-1`, `{"qty":4}`, false},
		{4, "\xff", `{"qty":4}`, false},
	}
	for _, s := range seeds {
		f.Add(s.rel, []byte(s.key), []byte(s.value), s.tombstone)
	}
	codecs := make([]*Codec, len(recordRels))
	for i, rel := range recordRels {
		codecs[i] = NewCodec(rel, nil)
	}
	// Records the codecs of the other formats write.
	for i, row := range map[int]catalog.Row{
		5: {"x|y", int64(2), "hé", ts("2024-01-02 03:04:05.678"), nil, []any{int64(1), int64(-2)}},
		6: {int64(7), 2.5, nil},
	} {
		k, v, err := codecs[i].Encode(row)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(i), k, v, false)
	}
	f.Fuzz(func(t *testing.T, rel uint8, key, value []byte, tombstone bool) {
		c := codecs[int(rel)%len(codecs)]
		width := len(c.rel.Schema.Columns)
		if len(key) == 0 {
			key = nil // a null key; an empty one is a key format's to take
		}
		if tombstone {
			value = nil
		}
		row, keyVals, err := c.Decode(key, value)
		into := make(catalog.Row, width)
		for i := range into {
			into[i] = "garbage" // every column DecodeInto sets must be set
		}
		gone, ierr := c.DecodeInto(into, key, value)
		if err != nil {
			if _, ok := pgerr.As(err); !ok {
				t.Fatalf("error without a SQLSTATE: %v", err)
			}
			if ierr == nil || ierr.Error() != err.Error() {
				t.Fatalf("Decode fails with %v, DecodeInto with %v", err, ierr)
			}
			return
		}
		if ierr != nil || gone != (value == nil) {
			t.Fatalf("Decode succeeds, DecodeInto = %v, %v", gone, ierr)
		}
		keyRow := c.KeyRow(key)
		for i, k := range c.KeyIndex() {
			if !sameValues([]any{into[k], keyRow[k]}, []any{keyVals[i], keyVals[i]}) {
				t.Fatalf("key column %d: Decode %#v, DecodeInto %#v, KeyRow %#v", k, keyVals[i], into[k], keyRow[k])
			}
		}
		if value == nil {
			if row != nil {
				t.Fatalf("a tombstone decodes to row %#v", row)
			}
			return
		}
		if !sameValues(into, row) {
			t.Fatalf("Decode %#v, DecodeInto %#v", row, into)
		}
		k2, v2, err := c.Encode(row)
		if err != nil {
			t.Fatalf("encode %#v: %v", row, err)
		}
		back, _, err := c.Decode(k2, v2)
		if err != nil || !sameValues(back, row) {
			t.Fatalf("%q %q decodes to %#v; re-encoded %q %s decodes to %#v, %v", key, value, row, k2, v2, back, err)
		}
		if k3, _ := c.EncodeKey(keyVals); string(k3) != string(k2) {
			t.Fatalf("EncodeKey(%#v) = %q, Encode's key %q", keyVals, k3, k2)
		}
	})
}
