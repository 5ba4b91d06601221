package materialize

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Internal key layout of the one Pebble database.
//
//	'm' name                           metadata ("mformat" = storage format)
//	'c' uvarint(len(view)) view part4  checkpoint of store (view, part)
//	'd' uvarint(len(view)) view part4  + key   data of store (view, part)
//
// part4 is the partition as 4 big-endian bytes with the sign bit flipped,
// so stores of a view sort by partition. The length prefix makes the store
// prefixes prefix-free: no store's prefix is a prefix of another's (view
// "a" partition 1, view "a" partition 10 and view "ab" are disjoint
// ranges), so a store's data is exactly the range [prefix,
// PrefixEnd(prefix)), and all partitions of a view are the range of
// 'd' uvarint(len(view)) view.
const (
	nsMeta       = 'm'
	nsCheckpoint = 'c'
	nsData       = 'd'
)

// formatKey holds the storage format version; Open refuses a directory
// whose version it does not know.
var formatKey = []byte("mformat")

const formatVersion = "1"

// StoreID names one partition of a table's or view's store. It is also
// the task of that partition: the unit the ha package assigns to nodes
// (one active replica, some standbys, warm-ups while a task moves) and
// the key of a node's roles in stream, so one name means one thing from
// the key layout to the wire.
type StoreID struct {
	// View is the store name, e.g. "revenue@42": unique for the lifetime
	// of the view, so a dropped and re-created view of the same name is a
	// different store and never inherits stale state.
	View string
	// Partition is the partition of the view (and of its changelog).
	Partition int32
}

// String returns "view/partition".
func (id StoreID) String() string {
	return id.View + "/" + strconv.FormatInt(int64(id.Partition), 10)
}

// Compare orders stores by view, then partition.
func (id StoreID) Compare(o StoreID) int {
	if c := strings.Compare(id.View, o.View); c != 0 {
		return c
	}
	return cmp.Compare(id.Partition, o.Partition)
}

// Less reports whether id sorts before o.
func (id StoreID) Less(o StoreID) bool { return id.Compare(o) < 0 }

// SortStoreIDs sorts ids in place by StoreID.Compare.
func SortStoreIDs(ids []StoreID) { slices.SortFunc(ids, StoreID.Compare) }

func appendViewPrefix(dst []byte, ns byte, view string) []byte {
	dst = append(dst, ns)
	dst = binary.AppendUvarint(dst, uint64(len(view)))
	return append(dst, view...)
}

func appendStorePrefix(dst []byte, ns byte, id StoreID) []byte {
	dst = appendViewPrefix(dst, ns, id.View)
	return binary.BigEndian.AppendUint32(dst, uint32(id.Partition)^(1<<31))
}

// parseStoreKey splits a checkpoint or data key into its namespace, store
// and the rest (the caller's key, for data keys).
func parseStoreKey(k []byte) (ns byte, id StoreID, rest []byte, err error) {
	if len(k) == 0 || (k[0] != nsData && k[0] != nsCheckpoint) {
		return 0, StoreID{}, nil, fmt.Errorf("%w: %q is not a store key", ErrCorrupt, k)
	}
	ns = k[0]
	l, n := binary.Uvarint(k[1:])
	if n <= 0 || l > uint64(len(k)-1-n) || uint64(len(k)-1-n)-l < 4 {
		return 0, StoreID{}, nil, fmt.Errorf("%w: %q is not a store key", ErrCorrupt, k)
	}
	k = k[1+n:]
	id.View = string(k[:l])
	id.Partition = int32(binary.BigEndian.Uint32(k[l:]) ^ (1 << 31))
	return ns, id, k[l+4:], nil
}

// FormatKey renders a raw key of the Pebble database for humans, for
// debugging with Pebble's tools or a key dump: "data orders_by_region/3
// ('eu', 42)", "checkpoint orders_by_region/3", "meta format". A caller
// key that is not in the key encoding is shown in hex.
func FormatKey(k []byte) string {
	if len(k) > 0 && k[0] == nsMeta {
		return "meta " + string(k[1:])
	}
	ns, id, rest, err := parseStoreKey(k)
	if err != nil {
		return fmt.Sprintf("unknown %x", k)
	}
	if ns == nsCheckpoint {
		if len(rest) != 0 {
			return fmt.Sprintf("checkpoint %s (trailing %x)", id, rest)
		}
		return "checkpoint " + id.String()
	}
	return "data " + id.String() + " " + formatUserKey(rest)
}

func formatUserKey(k []byte) string {
	vals, err := DecodeKey(k)
	if err != nil || len(k) == 0 {
		return fmt.Sprintf("%x", k)
	}
	return formatTuple(vals)
}

// formatRow renders a value in the row encoding, or its bytes in hex.
func formatRow(v []byte) string {
	vals, err := DecodeRow(v)
	if err != nil {
		return fmt.Sprintf("%x", v)
	}
	return formatTuple(vals)
}

func formatTuple(vals []any) string {
	var sb strings.Builder
	sb.WriteByte('(')
	for i, v := range vals {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(formatValue(v))
	}
	sb.WriteByte(')')
	return sb.String()
}

func formatValue(v any) string {
	switch v := v.(type) {
	case nil:
		return "NULL"
	case string:
		return "'" + strings.ReplaceAll(v, "'", "''") + "'"
	case time.Time:
		return "'" + v.Format("2006-01-02 15:04:05.999999999") + "'"
	}
	return fmt.Sprint(v)
}
