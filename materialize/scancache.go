package materialize

import (
	"container/list"
	"sync"
)

// The scan cache keeps, for whole-store scans, what a reader made of a
// store's rows (decoded rows, for pull queries) while the store is not
// written: a dashboard re-reading a quiet view then skips Pebble's
// iterators and the decoding, which are most of the cost of a scan. It
// is keyed by store and stamped with the store's write gate and the
// drops gate (see rowCache), so it shares the row cache's coherence and
// is off when the row cache is.
//
// A scan takes a ScanTicket before it reads (it must read a snapshot
// taken after), and offers what it made with CacheScan, which keeps it
// only if both gates still hold the words the ticket loaded, with no
// write in progress: no write entered the store between the ticket and
// the end of the scan, so what the scan read is the store's contents at
// the check. CachedScan returns a kept value only if the gates still
// hold the words it was kept with: no write has entered since, so it is
// the store's contents now, as of the checkpoint kept with it.
type scanCache struct {
	budget int64
	mu     struct {
		sync.Mutex
		m     map[StoreID]*list.Element // of *scanEntry
		lru   list.List                 // front: most recently used
		bytes int64
		hits  uint64
		fills uint64
	}
}

type scanEntry struct {
	id          StoreID
	gate, drops uint64
	value       any
	bytes       int64
}

// scanEntryOverhead approximates an entry's memory beyond its value.
const scanEntryOverhead = 256

func newScanCache(size int64) *scanCache {
	c := &scanCache{budget: size}
	c.mu.m = make(map[StoreID]*list.Element)
	return c
}

// ScanTicket is what a scan loads before it reads, to offer what it made
// of the store to the scan cache (CacheScan) or find it there
// (CachedScan).
type ScanTicket struct {
	s           *StoreReader
	gate, drops uint64
	ok          bool // the cache is on and no write was in progress
}

// MaxCachedScan is the most bytes one store's scan may keep in the scan
// cache: a scan larger than this is not worth collecting.
func (s *StoreReader) MaxCachedScan() int64 {
	if s.db.scans == nil || s.cache == nil {
		return 0
	}
	return s.db.scans.budget / 4
}

// ScanTicket returns a ticket for a scan of the live store s. Its ok is
// false when the scan cache is off or a write is in progress; CachedScan
// and CacheScan then do nothing.
func (s *StoreReader) ScanTicket() ScanTicket {
	if s.db.scans == nil || s.cache == nil {
		return ScanTicket{}
	}
	t := ScanTicket{s: s, gate: s.cache.gate.w.Load(), drops: s.db.rows.drops.w.Load()}
	t.ok = idle(t.gate) && idle(t.drops)
	return t
}

// CachedScan returns the value a scan of the store kept with CacheScan,
// if no write has entered the store since that scan read it and none is
// in progress now (t's words, loaded before this call, are the ones it
// was kept with). The value is shared: do not modify it.
func (t ScanTicket) CachedScan() (any, bool) {
	if !t.ok {
		return nil, false
	}
	c := t.s.db.scans
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.mu.m[t.s.id]
	if !ok {
		return nil, false
	}
	e := el.Value.(*scanEntry)
	if e.gate != t.gate || e.drops != t.drops {
		// Written since: the entry is stale for good.
		c.removeLocked(el)
		return nil, false
	}
	c.mu.lru.MoveToFront(el)
	c.mu.hits++
	return e.value, true
}

// CacheScan keeps value, made of a scan of the store that read a snapshot
// taken after t, if no write has entered the store since t. bytes is the
// value's estimated memory; a value over MaxCachedScan is not kept. The
// cache keeps value as it is: do not modify it afterwards.
func (t ScanTicket) CacheScan(value any, bytes int64) {
	if !t.ok {
		return
	}
	c := t.s.db.scans
	bytes += scanEntryOverhead
	if bytes > c.budget/4 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	// Under the lock, so that a later CachedScan that finds this entry
	// compares it with words loaded after this check.
	if t.s.cache.gate.w.Load() != t.gate || t.s.db.rows.drops.w.Load() != t.drops {
		return
	}
	if el, ok := c.mu.m[t.s.id]; ok {
		c.removeLocked(el)
	}
	for c.mu.bytes+bytes > c.budget && c.mu.lru.Len() > 0 {
		c.removeLocked(c.mu.lru.Back())
	}
	c.mu.m[t.s.id] = c.mu.lru.PushFront(&scanEntry{id: t.s.id, gate: t.gate, drops: t.drops, value: value, bytes: bytes})
	c.mu.bytes += bytes
	c.mu.fills++
}

func (c *scanCache) removeLocked(el *list.Element) {
	e := c.mu.lru.Remove(el).(*scanEntry)
	delete(c.mu.m, e.id)
	c.mu.bytes -= e.bytes
}

// ScanCacheStats describes the scan cache, for metrics.
type ScanCacheStats struct {
	// Hits counts scans served from the cache, Fills scans whose result
	// it kept, since Open.
	Hits, Fills uint64
	// Bytes is the estimated memory of the kept scans, at most
	// Options.ScanCacheSize; Entries how many stores they are of.
	Bytes   int64
	Entries int64
}

// ScanCacheStats returns the scan cache's counters; all zero when it is
// off.
func (db *DB) ScanCacheStats() ScanCacheStats {
	var s ScanCacheStats
	c := db.scans
	if c == nil {
		return s
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	s.Hits, s.Fills, s.Bytes, s.Entries = c.mu.hits, c.mu.fills, c.mu.bytes, int64(c.mu.lru.Len())
	return s
}
