package serde

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
)

// Codec turns Kafka records of a stream or table into rows of the
// relation and back: the key columns from and to the record key in the
// relation's key_format, the others from and to the value in its
// value_format. A Codec is made once per relation and is safe for
// concurrent use; what it keeps between calls is the schemas it writes
// with (codecparts.go).
type Codec struct {
	rel     *catalog.Relation
	keyCols []catalog.Column
	keyIdx  []int
	// keyTypes and keyNames are keyCols' types and names, for AppendKey.
	keyTypes []catalog.Type
	keyNames []string
	valCols  []catalog.Column
	valIdx   []int
	// hdrCols are the columns read from the record's headers
	// (headers.go), at hdrIdx.
	hdrCols []catalog.Column
	hdrIdx  []int
	// timeIdx is the column of WITH (timestamp = ...), -1 for none;
	// timeLayout the Go layout of its timestamp_format, for a VARCHAR.
	timeIdx    int
	timeLayout string
	// valueFormat is the relation's value_format (valueformats.go);
	// unwrapped is set for a JSON value that is its single value
	// column's value (wrap_single_value = false).
	valueFormat string
	unwrapped   bool
	// key and value are the record's two parts as the formats that
	// both may be written in (delimited and the registry's) see them.
	key, value part
	// reg is the schema registry of the registry formats (nil without
	// one).
	reg *Registry
}

// NewCodec returns the codec of rel's records. reg is the schema
// registry the registry formats (avro, protobuf, json_sr) read and
// write schemas in; nil when the node has none, which makes each of
// their records an error.
func NewCodec(rel *catalog.Relation, reg *Registry) *Codec {
	c := &Codec{rel: rel, timeIdx: -1, reg: reg}
	if name, ok := rel.Options["timestamp"]; ok {
		c.timeIdx = rel.Schema.Index(name)
		if f, ok := rel.Options["timestamp_format"]; ok {
			c.timeLayout, _ = TimeLayout(f) // checked at CREATE
		}
	}
	c.valueFormat = strings.ToLower(rel.ValueFormat)
	if c.valueFormat == "" {
		c.valueFormat = valueFormatJSON
	}
	c.unwrapped = c.valueFormat == valueFormatJSON && strings.EqualFold(rel.Options["wrap_single_value"], "false")
	for i, col := range rel.Schema.Columns {
		if rel.WindowBound(i) {
			// In a windowed view's record key, after the group's
			// (WindowedKey), as ksqlDB writes them; never in the value.
			continue
		}
		if col.FromHeaders() {
			c.hdrCols = append(c.hdrCols, col)
			c.hdrIdx = append(c.hdrIdx, i)
			continue
		}
		if col.Key {
			c.keyCols = append(c.keyCols, col)
			c.keyIdx = append(c.keyIdx, i)
			c.keyTypes = append(c.keyTypes, col.Type)
			c.keyNames = append(c.keyNames, col.Name)
		} else {
			c.valCols = append(c.valCols, col)
			c.valIdx = append(c.valIdx, i)
		}
	}
	c.value.init("value", c.valueFormat, c.valCols, c.valIdx, rel.Options)
	c.key.init("key", strings.ToLower(rel.KeyFormat), c.keyCols, c.keyIdx, rel.Options)
	return c
}

// KeyIndex returns the positions in a row of the relation's key columns,
// in key order. The slice is the codec's own: callers must not modify it.
func (c *Codec) KeyIndex() []int { return c.keyIdx }

// Decode builds a row from a record. A nil value is a tombstone: the row
// is nil (the key is still decoded).
func (c *Codec) Decode(key, value []byte) (row catalog.Row, keyVals []any, err error) {
	if len(c.keyCols) > 0 {
		keyVals = make([]any, len(c.keyCols))
		if err = c.decodeKey(keyVals, nil, key); err != nil {
			return nil, nil, fmt.Errorf("key: %w", err)
		}
	}
	if value == nil {
		return nil, keyVals, nil
	}
	row = make(catalog.Row, len(c.rel.Schema.Columns))
	if err := c.decodeValue(row, value); err != nil {
		return nil, keyVals, err
	}
	for i, k := range c.keyIdx {
		row[k] = keyVals[i]
	}
	return row, keyVals, nil
}

// DecodeInto is Decode into row, which it overwrites (a row of the
// relation's width): a task that is done with a row before the next
// record reuses it. For a tombstone only the key columns are set. The
// key values are row's at KeyIndex.
func (c *Codec) DecodeInto(row catalog.Row, key, value []byte) (tombstone bool, err error) {
	if len(c.keyCols) > 0 {
		if err := c.decodeKey(row, c.keyIdx, key); err != nil {
			return false, fmt.Errorf("key: %w", err)
		}
	}
	if value == nil {
		return true, nil
	}
	return false, c.decodeValue(row, value)
}

// decodeKey decodes a record key into the key columns: dst[idx[i]] (or
// dst[i] when idx is nil) for key column i.
func (c *Codec) decodeKey(dst []any, idx []int, key []byte) error {
	if c.key.shared() {
		for i := range c.keyCols {
			setCol(dst, idx, i, nil)
		}
		if key == nil {
			return nil
		}
		return c.decodePart(&c.key, dst, idx, key)
	}
	return decodeKeyInto(dst, idx, c.rel.KeyFormat, c.keyCols, key)
}

// decodeValue decodes a record value in the relation's value format into
// row's value columns.
func (c *Codec) decodeValue(row catalog.Row, value []byte) error {
	switch {
	case c.value.shared():
		return c.decodePart(&c.value, row, c.valIdx, value)
	case c.valueFormat == valueFormatKafka && len(c.valCols) == 1:
		v, err := decodeKafkaScalar(c.valCols[0], "value", value)
		row[c.valIdx[0]] = v
		return err
	case c.unwrapped && len(c.valCols) == 1:
		return decodeUnwrapped(row, c.valIdx, c.valCols[0], value)
	case c.valueFormat != valueFormatJSON:
		return fmt.Errorf("exec: value format %q of %s %s with %d value columns", c.valueFormat, strings.ToLower(string(c.rel.Kind)), c.rel.Name, len(c.valCols))
	}
	return decodeJSONValueInto(row, c.valIdx, c.valCols, value)
}

// encodeValue encodes the values of the value columns in the relation's
// value format.
func (c *Codec) encodeValue(vals []any) ([]byte, error) {
	switch {
	case c.value.shared():
		return c.encodePart(&c.value, vals)
	case c.valueFormat == valueFormatKafka && len(c.valCols) == 1:
		if vals[0] == nil {
			// Kafka's serializers write a null as a null value, which
			// is a tombstone: an empty value is as near as a row can be.
			return nil, pgerr.New(pgerr.NotNullViolation, "value column %q of %s is NULL, which value_format 'kafka' cannot write (a null value is a tombstone)", c.valCols[0].Name, c.rel.Name)
		}
		return appendKafkaScalar(nil, "value", c.valCols[0].Type, c.valCols[0].Name, vals[0])
	case c.unwrapped && len(c.valCols) == 1:
		return appendJSONValue(nil, c.valCols[0].Type, c.valCols[0].Name, vals[0])
	case c.valueFormat != valueFormatJSON:
		return nil, fmt.Errorf("exec: value format %q of %s %s with %d value columns", c.valueFormat, strings.ToLower(string(c.rel.Kind)), c.rel.Name, len(c.valCols))
	}
	return encodeJSONValue(c.valCols, vals)
}

// KeyRow returns a row of the relation with only its key columns set,
// from record key key (nil where it does not decode): what placement
// hashes for a tombstone.
func (c *Codec) KeyRow(key []byte) catalog.Row {
	row := make(catalog.Row, len(c.rel.Schema.Columns))
	if len(c.keyCols) > 0 {
		if err := c.decodeKey(row, c.keyIdx, key); err != nil {
			return make(catalog.Row, len(c.rel.Schema.Columns))
		}
	}
	return row
}

// Encode returns the record key and value of a row.
func (c *Codec) Encode(row catalog.Row) (key, value []byte, err error) {
	if len(c.keyCols) > 0 {
		kv := make([]any, len(c.keyIdx))
		for i, k := range c.keyIdx {
			kv[i] = row[k]
		}
		if key, err = c.EncodeKey(kv); err != nil {
			return nil, nil, err
		}
	}
	vv := make([]any, len(c.valIdx))
	for i, v := range c.valIdx {
		vv[i] = row[v]
	}
	value, err = c.encodeValue(vv)
	return key, value, err
}

// EncodeKey returns the record key of the key column values vals (in key
// order), as EncodeKey does for the relation's key format; nil when every
// one is NULL.
func (c *Codec) EncodeKey(vals []any) ([]byte, error) {
	b, null, err := c.AppendKey(nil, vals)
	if err != nil || null {
		return nil, err
	}
	if b == nil {
		b = []byte{} // an empty key, not a null one
	}
	return b, nil
}

// AppendKey appends the record key of the key column values vals to dst,
// as EncodeKey returns it; null reports a key of NULLs, a null record
// key, for which nothing is appended. A key in a registry format is
// written with the schema PrepareKey readies.
func (c *Codec) AppendKey(dst []byte, vals []any) (_ []byte, null bool, err error) {
	if !c.key.shared() {
		return AppendKey(dst, c.rel.KeyFormat, c.keyTypes, c.keyNames, vals)
	}
	if len(vals) != len(c.keyCols) {
		return dst, false, fmt.Errorf("exec: encode key: %d key columns and %d values", len(c.keyCols), len(vals))
	}
	if !slices.ContainsFunc(vals, func(v any) bool { return v != nil }) {
		return dst, true, nil
	}
	b, err := c.appendPart(&c.key, vals)
	return append(dst, b...), false, err
}

// Rowtime is ROWTIME of a record decoded into row: milliseconds since the
// epoch of its Kafka timestamp ts or, with WITH (timestamp = 'col'), of
// col's value (NULL when col is NULL); a VARCHAR col is read with the
// timestamp_format, in UTC unless the format has a zone, and one that
// does not match is an error (22007).
func (c *Codec) Rowtime(row catalog.Row, ts time.Time) (any, error) {
	if c.timeIdx < 0 {
		return ts.UnixMilli(), nil
	}
	switch v := row[c.timeIdx].(type) {
	case int64:
		return v, nil
	case time.Time:
		return v.UnixMilli(), nil
	case string:
		t, err := time.Parse(c.timeLayout, v)
		if err != nil {
			return nil, pgerr.New(pgerr.InvalidDatetimeFormat, "timestamp column %s: %q does not match timestamp_format %q", c.rel.Schema.Columns[c.timeIdx].Name, v, c.rel.Options["timestamp_format"])
		}
		return t.UnixMilli(), nil
	}
	return nil, nil
}
