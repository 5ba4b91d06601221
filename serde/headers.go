package serde

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/basindb/basin/catalog"
)

// Header columns: a stream's or table's column declared HEADER('key')
// holds the value of the record's header of that key (the last, when
// the record has several), NULL when it has none; they are BYTEA. A
// column declared HEADERS holds all of them, in order, as an
// ARRAY<STRUCT<KEY VARCHAR, VALUE BYTEA>> (empty for a record without
// headers). They
// are read only: INSERT leaves them out of the records it writes, and a
// record's headers are not part of its key or value.
//
// Headers whose key starts with "basin." are basin's own, on the records
// of its internal topics (a record forwarded to its partition keeps the
// producer's headers and adds one): they are never a column's.

// internalHeaderPrefix starts the keys of basin's own headers.
const internalHeaderPrefix = "basin."

// HasHeaders reports whether the relation has columns read from record
// headers, which DecodeRecordInto sets.
func (c *Codec) HasHeaders() bool { return len(c.hdrCols) > 0 }

// DecodeRecordInto is DecodeInto for record r, with the columns read
// from its headers.
func (c *Codec) DecodeRecordInto(row catalog.Row, r *kgo.Record) (tombstone bool, err error) {
	tombstone, err = c.DecodeInto(row, r.Key, r.Value)
	if err == nil && len(c.hdrCols) > 0 {
		c.decodeHeaders(row, r.Headers)
	}
	return tombstone, err
}

// DecodeRecord is Decode for record r, with the columns read from its
// headers.
func (c *Codec) DecodeRecord(r *kgo.Record) (row catalog.Row, keyVals []any, err error) {
	row, keyVals, err = c.Decode(r.Key, r.Value)
	if err == nil && row != nil && len(c.hdrCols) > 0 {
		c.decodeHeaders(row, r.Headers)
	}
	return row, keyVals, err
}

// decodeHeaders sets the header columns of row from headers hs.
func (c *Codec) decodeHeaders(row catalog.Row, hs []kgo.RecordHeader) {
	for i, col := range c.hdrCols {
		var v any
		if col.Headers {
			all := make([]any, 0, len(hs))
			for _, h := range hs {
				if !strings.HasPrefix(h.Key, internalHeaderPrefix) {
					all = append(all, catalog.Struct{h.Key, bytesOrNil(h.Value)})
				}
			}
			row[c.hdrIdx[i]] = all
			continue
		}
		for _, h := range hs {
			if h.Key == col.Header && !strings.HasPrefix(h.Key, internalHeaderPrefix) {
				v = bytesOrNil(h.Value)
			}
		}
		row[c.hdrIdx[i]] = v
	}
}

// bytesOrNil is a header's value: a copy of it, NULL for a null one.
func bytesOrNil(b []byte) any {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}
