package eval

import (
	"strconv"

	"github.com/basindb/basin/internal/pgerr"
)

// Memory tracks what one pull query holds for sorting, grouping,
// DISTINCT, joins' build sides, windows, set operations, subqueries'
// results and rows read, against basin.query_memory. The sizes are
// estimates of the Go values held (RowBytes), not an accounting of the
// heap. An operator grows it as it buffers rows and releases what it
// charged once nothing holds those rows any more; Peak is the most it
// held at once (EXPLAIN ANALYZE shows it).
type Memory struct {
	Used, Limit int64 // Limit 0: none
	Peak        int64
	// Pinned is the part of Used held until the query ends: rows kept
	// for reuse (a relation read once per statement, an uncorrelated
	// subquery's result), which no operator's release gives back.
	Pinned int64
}

// Grow adds n bytes, failing with 53200 past the limit; what names the
// operator that needs them ("join", "ORDER BY", ...).
func (m *Memory) Grow(n int64, what string) error {
	if m == nil {
		return nil
	}
	m.Used += n
	m.Peak = max(m.Peak, m.Used)
	if m.Limit > 0 && m.Used > m.Limit {
		return pgerr.New(pgerr.OutOfMemory, "query needs more than basin.query_memory (%s) for its %s", FormatBytes(m.Limit), what).
			WithHint("basin does not spill to disk: add a WHERE or LIMIT that narrows what the query reads, or raise the limit for the session: SET basin.query_memory = '1GB'.")
	}
	return nil
}

// Release gives back n bytes an operator grew by and no longer holds.
func (m *Memory) Release(n int64) {
	if m == nil {
		return
	}
	m.Used = max(m.Used-n, 0)
}

// Pin keeps n bytes of Used until the query ends (Pinned).
func (m *Memory) Pin(n int64) {
	if m != nil {
		m.Pinned += n
	}
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
