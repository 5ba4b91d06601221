package exec

import (
	"fmt"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/materialize"
)

// relCodec turns Kafka records of a stream or table into rows and back.
type relCodec struct {
	rel     *catalog.Relation
	keyCols []catalog.Column
	keyIdx  []int
	valCols []catalog.Column
	valIdx  []int
}

func newRelCodec(rel *catalog.Relation) *relCodec {
	c := &relCodec{rel: rel}
	for i, col := range rel.Schema.Columns {
		if col.Key {
			c.keyCols = append(c.keyCols, col)
			c.keyIdx = append(c.keyIdx, i)
		} else {
			c.valCols = append(c.valCols, col)
			c.valIdx = append(c.valIdx, i)
		}
	}
	return c
}

// decode builds a row from a record. A nil value is a tombstone: the row
// is nil (the key is still decoded).
func (c *relCodec) decode(key, value []byte) (row catalog.Row, keyVals []any, err error) {
	if len(c.keyCols) > 0 {
		keyVals = make([]any, len(c.keyCols))
		if err = decodeKeyInto(keyVals, nil, c.rel.KeyFormat, c.keyCols, key); err != nil {
			return nil, nil, fmt.Errorf("key: %w", err)
		}
	}
	if value == nil {
		return nil, keyVals, nil
	}
	row = make(catalog.Row, len(c.rel.Schema.Columns))
	if err := decodeJSONValueInto(row, c.valIdx, c.valCols, value); err != nil {
		return nil, keyVals, err
	}
	for i, k := range c.keyIdx {
		row[k] = keyVals[i]
	}
	return row, keyVals, nil
}

// decodeInto is decode into row, which it overwrites (a row of the
// relation's width): a task that is done with a row before the next
// record reuses it. For a tombstone only the key columns are set. The
// key values are row's at c.keyIdx.
func (c *relCodec) decodeInto(row catalog.Row, key, value []byte) (tombstone bool, err error) {
	if len(c.keyCols) > 0 {
		if err := decodeKeyInto(row, c.keyIdx, c.rel.KeyFormat, c.keyCols, key); err != nil {
			return false, fmt.Errorf("key: %w", err)
		}
	}
	if value == nil {
		return true, nil
	}
	return false, decodeJSONValueInto(row, c.valIdx, c.valCols, value)
}

// keyRow returns a row of the relation with only its key columns set,
// from record key key (nil where it does not decode): what placement
// hashes for a tombstone.
func (c *relCodec) keyRow(key []byte) catalog.Row {
	row := make(catalog.Row, len(c.rel.Schema.Columns))
	if len(c.keyCols) > 0 {
		if err := decodeKeyInto(row, c.keyIdx, c.rel.KeyFormat, c.keyCols, key); err != nil {
			return make(catalog.Row, len(c.rel.Schema.Columns))
		}
	}
	return row
}

// encode returns the record key and value of a row.
func (c *relCodec) encode(row catalog.Row) (key, value []byte, err error) {
	if len(c.keyCols) > 0 {
		kv := make([]any, len(c.keyIdx))
		for i, k := range c.keyIdx {
			kv[i] = row[k]
		}
		if key, err = c.encodeKey(kv); err != nil {
			return nil, nil, err
		}
	}
	vv := make([]any, len(c.valIdx))
	for i, v := range c.valIdx {
		vv[i] = row[v]
	}
	value, err = EncodeJSONValue(c.valCols, vv)
	return key, value, err
}

func (c *relCodec) encodeKey(vals []any) ([]byte, error) {
	types := make([]catalog.Type, len(c.keyCols))
	names := make([]string, len(c.keyCols))
	for i, k := range c.keyCols {
		types[i], names[i] = k.Type, k.Name
	}
	return EncodeKey(c.rel.KeyFormat, types, names, vals)
}

// Stored values. Each value in a store is an encoded row:
//
//	[present bool, column values..., aggregate state...]
//
// present is false for a group whose HAVING is false: its state is kept
// so aggregation can go on, but reads skip it.
func encodeStored(present bool, row catalog.Row, state []any) ([]byte, error) {
	vals := make([]any, 0, 1+len(row)+len(state))
	vals = append(vals, present)
	vals = append(vals, row...)
	vals = append(vals, state...)
	return materialize.EncodeRow(vals)
}

// appendStored appends what encodeStored returns to dst; scratch is
// storage for the values to encode, returned for the next call.
func appendStored(dst []byte, scratch []any, present bool, row catalog.Row, state []any) (_ []byte, _ []any, err error) {
	vals := append(append(append(scratch[:0], present), row...), state...)
	dst, err = materialize.AppendRow(dst, vals)
	clear(vals) // keep no values alive
	return dst, vals[:0], err
}

// decodeStored splits a stored value into presence, the row (ncols values)
// and the rest (aggregate state).
func decodeStored(b []byte, ncols int) (present bool, row catalog.Row, state []any, err error) {
	vals, err := materialize.DecodeRow(b)
	if err != nil {
		return false, nil, nil, err
	}
	if len(vals) < 1+ncols {
		return false, nil, nil, fmt.Errorf("exec: stored row has %d values, want at least %d", len(vals), 1+ncols)
	}
	present, _ = vals[0].(bool)
	return present, vals[1 : 1+ncols], vals[1+ncols:], nil
}
