package eval

import (
	"strconv"

	"github.com/basindb/basin/internal/pgerr"
)

// Memory tracks what one pull query holds for sorting, grouping
// and DISTINCT, against basin.query_memory. The sizes are estimates of
// the Go values held (RowBytes), not an accounting of the heap.
type Memory struct {
	Used, Limit int64 // Limit 0: none
}

// Grow adds n bytes, failing with 53200 past the limit.
func (m *Memory) Grow(n int64, what string) error {
	if m == nil {
		return nil
	}
	m.Used += n
	if m.Limit > 0 && m.Used > m.Limit {
		return pgerr.New(pgerr.OutOfMemory, "query needs more than basin.query_memory (%s) for its %s", FormatBytes(m.Limit), what).
			WithHint("basin does not spill to disk yet: narrow the query (WHERE, LIMIT after a key lookup), or raise the limit for the session: SET basin.query_memory = '1GB'.")
	}
	return nil
}

// RowBytes estimates the memory a held row takes: its slice, one
// interface per value and the bytes of strings and byte slices.
func RowBytes(row []any) int64 {
	n := int64(24 + 16*len(row))
	for _, v := range row {
		switch v := v.(type) {
		case string:
			n += int64(len(v))
		case []byte:
			n += int64(24 + len(v))
		case nil, bool, int64, float64:
		default:
			n += 24 // time.Time and the like, boxed
		}
	}
	return n
}

// FormatBytes shows a memory setting as SHOW does: in the largest unit
// that divides it.
func FormatBytes(n int64) string {
	for _, u := range []struct {
		name string
		size int64
	}{{"TB", 1 << 40}, {"GB", 1 << 30}, {"MB", 1 << 20}, {"kB", 1 << 10}} {
		if n != 0 && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}
