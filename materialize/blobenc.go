package materialize

import (
	"encoding/binary"
	"fmt"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/jsonb"
)

// Row and key encodings of uuid, json/jsonb and bytea values. Their tags
// start at 0x10 in rows, leaving the tags before for other types.
//
// Row:
//
//	uuid       0x10  16 bytes
//	json(b)    0x11  uvarint length, text (a jsonb column's canonical text)
//	bytea      0x12  uvarint length, bytes
//
// Key (order-preserving, as keyenc.go's):
//
//	uuid       0x60  16 bytes (bytewise, as Postgres orders uuids)
//	bytea      0x70  bytes escaped and terminated as strings are
//
//	json(b)    0x80  the value's jsonb.EqualityKey, escaped and
//	                 terminated: equal jsonb values (1.0 and 1) are the
//	                 same bytes. Only the pull engine's GROUP BY and
//	                 DISTINCT hash with it; the order is not jsonb's,
//	                 and no stored key has it (the planner refuses json
//	                 and jsonb key columns).
const (
	rowUUID  = 0x10
	rowJSON  = 0x11
	rowBytea = 0x12

	keyUUID  = 0x60
	keyBytea = 0x70
	keyJSON  = 0x80
)

// RowBlob is the RowKind of a uuid, json or bytea value: Bytes holds
// its bytes (a json value's text) and Tag says which.
const RowBlob RowKind = 0x40

// appendRowBlob appends v when it is one of this file's values.
func appendRowBlob(dst []byte, v any) ([]byte, bool) {
	switch v := v.(type) {
	case catalog.UUIDVal:
		return append(append(dst, rowUUID), v[:]...), true
	case catalog.JSONText:
		dst = append(dst, rowJSON)
		dst = binary.AppendUvarint(dst, uint64(len(v)))
		return append(dst, v...), true
	case []byte:
		dst = append(dst, rowBytea)
		dst = binary.AppendUvarint(dst, uint64(len(v)))
		return append(dst, v...), true
	}
	return dst, false
}

// blobSpan returns the payload of a value of tag at the start of b and
// its encoded length; ok is false for another tag.
func blobSpan(tag byte, b []byte, col uint64) (payload []byte, n int, ok bool, err error) {
	switch tag {
	case rowUUID:
		if len(b) < 16 {
			return nil, 0, true, fmt.Errorf("%w: truncated uuid at column %d", ErrBadEncoding, col)
		}
		return b[:16], 16, true, nil
	case rowJSON, rowBytea:
		l, k := binary.Uvarint(b)
		if k <= 0 || l > uint64(len(b)-k) {
			return nil, 0, true, fmt.Errorf("%w: bad value at column %d", ErrBadEncoding, col)
		}
		return b[k : k+int(l)], k + int(l), true, nil
	}
	return nil, 0, false, nil
}

// decodeRowBlob decodes a value of this file's tags; ok is false for
// another tag. The value never aliases b.
func decodeRowBlob(tag byte, b []byte, col uint64) (v any, n int, ok bool, err error) {
	p, n, ok, err := blobSpan(tag, b, col)
	if !ok || err != nil {
		return nil, 0, ok, err
	}
	switch tag {
	case rowUUID:
		var u catalog.UUIDVal
		copy(u[:], p)
		return u, n, true, nil
	case rowJSON:
		return catalog.JSONText(p), n, true, nil
	}
	return append([]byte{}, p...), n, true, nil
}

// appendKeyBlob appends the key encoding of v when it is a uuid or bytea.
func appendKeyBlob(dst []byte, v any) ([]byte, bool) {
	switch v := v.(type) {
	case catalog.UUIDVal:
		return append(append(dst, keyUUID), v[:]...), true
	case []byte:
		return appendEscaped(append(dst, keyBytea), string(v)), true
	case catalog.JSONText:
		return appendEscaped(append(dst, keyJSON), jsonb.EqualityKey(string(v))), true
	}
	return dst, false
}

// decodeKeyBlob decodes a key value of this file's tags; ok is false for
// another tag.
func decodeKeyBlob(tag byte, b []byte) (v any, rest []byte, ok bool, err error) {
	switch tag {
	case keyUUID:
		if len(b) < 16 {
			return nil, nil, true, fmt.Errorf("%w: truncated uuid", ErrBadEncoding)
		}
		var u catalog.UUIDVal
		copy(u[:], b)
		return u, b[16:], true, nil
	case keyBytea:
		s, rest, err := decodeEscaped(b)
		if err != nil {
			return nil, nil, true, err
		}
		return []byte(s.(string)), rest, true, nil
	case keyJSON:
		s, rest, err := decodeEscaped(b)
		if err != nil {
			return nil, nil, true, err
		}
		return catalog.JSONText(s.(string)), rest, true, nil
	}
	return nil, nil, false, nil
}
