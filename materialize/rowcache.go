package materialize

import (
	"bytes"
	"errors"
	"fmt"
	"hash/maphash"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
)

// The row cache keeps stored values of live stores in memory, keyed by
// their full Pebble key (store prefix + key), so that a repeated point
// read (StoreReader.Lookup, a query's `WHERE id = $1`) is a hash-map hit
// instead of a memtable and sstable seek. It is off unless
// Options.RowCacheSize is set. Only Lookup on a live store fills it and
// reads it; Get (the writing task reading its own state), iterators,
// checkpoints and snapshot readers never touch it. Absent keys are not
// cached.
//
// # Coherence
//
// The cache must never return a value older than Pebble's visible one at
// the moment a Lookup starts: a Lookup that starts after Batch.Commit
// returned, or after a Checkpoint read that saw the commit, sees that
// commit's writes. Every store has a storeCache shared by all its live
// handles, holding a write gate, an epoch and its number of entries; the
// cache has one more gate for drops (DropStore, DropView). A gate is one
// atomic word, a generation and the number of writes in progress (see
// writeGate).
//
// A write (Batch.Commit, a Loader's ingestion) enters the store's gate,
// then invalidates, then makes its data visible in Pebble, then exits
// the gate. Invalidating deletes each key the batch writes from the cache,
// or bumps the store's epoch (every entry stamped with an older epoch is
// stale: a hit removes it and reads Pebble), or does nothing when the
// store has no entries. Range deletions, ingestions and drops always bump
// the epoch; drops enter the drops gate and bump the epoch of every store
// they cover (a storeCache made after that has no entries, and cannot be
// filled before the drop exits).
//
// A Lookup that misses loads both gates, then the epoch, then reads
// Pebble, and inserts the value stamped with that epoch only if, under
// the shard's lock, after adding one to the store's entry count, both
// gates still hold the words it loaded and those had no write in
// progress. So no write began between its loads and its check, and its
// value is the visible one of an instant in that interval. Against a
// write W of the key:
//
//   - If the Lookup's check precedes W's entering (Go's atomics are
//     sequentially consistent), its insertion is under a lock it took
//     before the check, and W's invalidation comes after: W's load of the
//     entry count, after its entering, sees the Lookup's increment
//     (which precedes the check), so W does not skip; W deletes the key
//     under the same lock, after the insertion, or bumps the epoch after
//     the Lookup loaded its own.
//   - Otherwise the check sees W's entering (or its generation), unless W
//     had exited before the Lookup's first load, in which case the Lookup
//     read W's data or newer.
//
// Hence from the moment W's data is visible (after its invalidation), the
// cache holds for its keys only values read after W exited, or stale
// epochs; a hit checks the epoch, and loads it after the Lookup started,
// so it sees any bump made before. Two Lookups filling one key insert in
// the order of their reads, so the later insertion, which replaces the
// earlier, holds the newer value. A write that sees no entries for its
// store skips invalidating altogether: the ingest path of a store nobody
// reads costs two atomic additions and a load per commit.
type rowCache struct {
	seed   maphash.Seed
	shards []rowShard
	// drops is entered by DropStore and DropView, which cover stores that
	// may have no storeCache yet when they begin.
	drops writeGate
	// stores maps StoreID to *storeCache, written once per store and read
	// by every DB.Store call. Entries are never removed, so that every
	// handle of a store, whenever made, shares one storeCache; there is
	// one per store the node ever handled.
	stores sync.Map
}

// storeCache is the coherence state of one store's entries, shared by all
// its live handles.
type storeCache struct {
	// epoch stamps entries; bumping it makes all the store's entries
	// stale. Every hit reads it: it has a cache line of its own, away
	// from the counters that writes and fills change.
	epoch atomic.Uint64
	_     [56]byte
	gate  writeGate
	// entries counts the store's entries in the cache, stale ones
	// included, plus insertions being checked. A write that sees 0 may
	// skip invalidating.
	entries atomic.Int64
}

// writeGate tells a reader whether a write began, or was in progress,
// between two of its loads. Its word is a generation, which every write
// adds one to as it enters, above the number of writes in progress.
// Unlike an odd/even sequence number it stays right when writes overlap
// (a DropStore during a commit). The generation wraps after 2^40 writes,
// far more than can start while one Lookup reads Pebble.
type writeGate struct{ w atomic.Uint64 }

const (
	gateGenShift   = 24
	gateActiveMask = 1<<gateGenShift - 1
)

func (g *writeGate) enter() { g.w.Add(1<<gateGenShift | 1) }
func (g *writeGate) exit()  { g.w.Add(^uint64(0)) }

// idle reports whether w, a loaded word, has no write in progress.
func idle(w uint64) bool { return w&gateActiveMask == 0 }

// rowShard is one shard of the cache, with its own lock and budget.
// Entries live in slots, evicted by CLOCK: a hit sets an entry's ref bit,
// and the hand, looking for a victim, clears set bits and evicts the
// first entry whose bit is clear.
type rowShard struct {
	budget int64 // bytes
	mu     struct {
		sync.Mutex
		// m indexes slots by the key's hash (rowCache.shard), which is
		// all a lookup hashes: it holds no pointers for the GC to scan.
		// Two keys of one hash share the index entry; the slot's key
		// tells them apart, and the later one replaces the earlier.
		m      map[uint64]uint32
		slots  []rowEntry
		free   []uint32 // emptied slots
		hand   int
		bytes  int64 // cost of the entries, at most budget
		hits   uint64
		misses uint64
	}
	_ [64]byte // keep shards' locks off each other's cache lines
}

type rowEntry struct {
	hash  uint64 // of key, its index in rowShard.mu.m
	key   string
	value []byte      // never modified; Lookup returns it
	st    *storeCache // nil: a free slot
	epoch uint64
	ref   bool
}

// rowEntryOverhead approximates the memory of an entry beyond its key
// and value: its slot, its map entry and allocation rounding.
const rowEntryOverhead = 128

func rowEntryCost(klen, vlen int) int64 { return int64(klen + vlen + rowEntryOverhead) }

// Shards are a power of two, at most maxRowShards, each of at least
// minRowShardBytes when the budget allows.
const (
	maxRowShards     = 64
	minRowShardBytes = 64 << 10
)

func newRowCache(size int64) *rowCache {
	n := maxRowShards
	for n > 1 && size/int64(n) < minRowShardBytes {
		n /= 2
	}
	c := &rowCache{seed: maphash.MakeSeed(), shards: make([]rowShard, n)}
	for i := range c.shards {
		c.shards[i].mu.m = make(map[uint64]uint32)
		c.shards[i].budget = size / int64(n)
	}
	return c
}

// store returns the storeCache of id, creating it on first use.
func (c *rowCache) store(id StoreID) *storeCache {
	if st, ok := c.stores.Load(id); ok {
		return st.(*storeCache)
	}
	st, _ := c.stores.LoadOrStore(id, new(storeCache))
	return st.(*storeCache)
}

// shard returns the shard of the full key k, and k's hash, which keys it
// in the shard.
func (c *rowCache) shard(k []byte) (*rowShard, uint64) {
	h := maphash.Bytes(c.seed, k)
	return &c.shards[h&uint64(len(c.shards)-1)], h
}

// invalidateBatch makes the entries that the writes of pb may change
// stale; st's gate must be entered. pb holds n writes, range deletions
// among them if ranged. Deleting key by key costs a lock per key, so a
// batch with more writes than the store has entries bumps the epoch
// instead.
func (c *rowCache) invalidateBatch(st *storeCache, pb *pebble.Batch, n int, ranged bool) {
	live := st.entries.Load()
	switch {
	case live == 0:
		return
	case ranged || int64(n) > live:
		st.epoch.Add(1)
		return
	}
	r := pb.Reader()
	for {
		_, k, _, ok, err := r.Next()
		if err != nil {
			st.epoch.Add(1) // cannot happen for a batch we built; be safe
			return
		}
		if !ok {
			return
		}
		sh, h := c.shard(k)
		sh.remove(h, k)
	}
}

// invalidateStore makes all of st's entries stale; st's gate or the
// drops gate must be entered.
func invalidateStore(st *storeCache) {
	if st.entries.Load() != 0 {
		st.epoch.Add(1)
	}
}

// invalidateDropped makes stale the entries of every store for which
// match is true; the drops gate must be entered.
func (c *rowCache) invalidateDropped(match func(StoreID) bool) {
	c.stores.Range(func(id, st any) bool {
		if match(id.(StoreID)) {
			st.(*storeCache).epoch.Add(1)
		}
		return true
	})
}

// get returns the value of k if it is cached with st's current epoch,
// and counts the hit or miss. A stale entry is removed.
func (sh *rowShard) get(h uint64, k []byte, st *storeCache) ([]byte, bool) {
	sh.mu.Lock()
	if i, ok := sh.mu.m[h]; ok && sh.mu.slots[i].key == string(k) {
		e := &sh.mu.slots[i]
		if e.epoch == st.epoch.Load() {
			if !e.ref {
				e.ref = true
			}
			sh.mu.hits++
			v := e.value
			sh.mu.Unlock()
			return v, true
		}
		sh.removeLocked(i)
	}
	sh.mu.misses++
	sh.mu.Unlock()
	return nil, false
}

// fillTicket is what a Lookup loads before reading Pebble, to insert what
// it read only if no write may have changed it since.
type fillTicket struct {
	st          *storeCache
	gate, drops uint64
	epoch       uint64
	gatesIdle   bool // no write in progress: the value may be cached
}

func (c *rowCache) ticket(st *storeCache) fillTicket {
	t := fillTicket{st: st, gate: st.gate.w.Load(), drops: c.drops.w.Load()}
	t.epoch = st.epoch.Load() // after the gates: see the package comment
	t.gatesIdle = idle(t.gate) && idle(t.drops)
	return t
}

// insert caches value, read from Pebble for the full key key after t was
// taken, if no write may have changed it since. It keeps value, which
// must not be modified afterwards.
func (c *rowCache) insert(sh *rowShard, h uint64, key, value []byte, t fillTicket) {
	cost := rowEntryCost(len(key), len(value))
	if !t.gatesIdle || cost > sh.budget {
		return
	}
	ks := string(key)
	st := t.st
	sh.mu.Lock()
	defer sh.mu.Unlock()
	// Count the entry before checking the gates, so that a write entering
	// after the check sees it (see the package comment).
	st.entries.Add(1)
	if st.gate.w.Load() != t.gate || c.drops.w.Load() != t.drops {
		st.entries.Add(-1)
		return
	}
	if i, ok := sh.mu.m[h]; ok && sh.mu.slots[i].key != ks {
		sh.removeLocked(i) // another key of the same hash
	} else if ok {
		// Another Lookup filled the key first, from an earlier read.
		e := &sh.mu.slots[i]
		sh.mu.bytes += cost - rowEntryCost(len(e.key), len(e.value))
		e.st.entries.Add(-1)
		e.value, e.st, e.epoch = value, st, t.epoch
		for sh.mu.bytes > sh.budget {
			sh.evictLocked()
		}
		return
	}
	for sh.mu.bytes+cost > sh.budget {
		sh.evictLocked()
	}
	var i uint32
	if n := len(sh.mu.free); n > 0 {
		i = sh.mu.free[n-1]
		sh.mu.free = sh.mu.free[:n-1]
	} else {
		i = uint32(len(sh.mu.slots))
		sh.mu.slots = append(sh.mu.slots, rowEntry{})
	}
	sh.mu.slots[i] = rowEntry{hash: h, key: ks, value: value, st: st, epoch: t.epoch}
	sh.mu.m[h] = i
	sh.mu.bytes += cost
}

// remove deletes k, of hash h, from the shard if it is there.
func (sh *rowShard) remove(h uint64, k []byte) {
	sh.mu.Lock()
	if i, ok := sh.mu.m[h]; ok && sh.mu.slots[i].key == string(k) {
		sh.removeLocked(i)
	}
	sh.mu.Unlock()
}

// removeLocked removes the entry in slot i.
func (sh *rowShard) removeLocked(i uint32) {
	e := &sh.mu.slots[i]
	delete(sh.mu.m, e.hash)
	sh.mu.bytes -= rowEntryCost(len(e.key), len(e.value))
	e.st.entries.Add(-1)
	*e = rowEntry{}
	sh.mu.free = append(sh.mu.free, i)
}

// evictLocked evicts one entry; the shard must hold one. The hand passes
// each slot at most twice.
func (sh *rowShard) evictLocked() {
	for {
		if sh.mu.hand >= len(sh.mu.slots) {
			sh.mu.hand = 0
		}
		i := sh.mu.hand
		sh.mu.hand++
		e := &sh.mu.slots[i]
		switch {
		case e.st == nil:
		case e.ref:
			e.ref = false
		default:
			sh.removeLocked(uint32(i))
			return
		}
	}
}

// RowCacheStats describes the row cache, for metrics.
type RowCacheStats struct {
	// Hits and Misses count Lookups served from the cache and read from
	// Pebble (found or not) since Open.
	Hits, Misses uint64
	// Bytes is the estimated memory of the entries (keys, values and a
	// fixed overhead each), at most Options.RowCacheSize.
	Bytes int64
	// Entries is the number of values cached, stale ones included until a
	// hit or an eviction removes them.
	Entries int64
}

// RowCacheStats returns the row cache's counters; all zero when the cache
// is off.
func (db *DB) RowCacheStats() RowCacheStats {
	var s RowCacheStats
	if db.rows == nil {
		return s
	}
	for i := range db.rows.shards {
		sh := &db.rows.shards[i]
		sh.mu.Lock()
		s.Hits += sh.mu.hits
		s.Misses += sh.mu.misses
		s.Bytes += sh.mu.bytes
		s.Entries += int64(len(sh.mu.m))
		sh.mu.Unlock()
	}
	return s
}

// Lookup is Get for queries: it returns the value of key, and whether it
// exists, from the row cache when it holds it (Options.RowCacheSize), and
// fills the cache on a miss. The value is shared with the cache and other
// callers: do not modify it. It is never older than the data visible in
// Pebble when Lookup is called: after Batch.Commit returns, or after a
// Checkpoint read sees that commit, Lookup sees its writes. Over a
// Snapshot, or with the cache off, Lookup is Get.
//
// Writers read their own state with Get, which neither reads nor fills
// the cache: a task's reads would otherwise push the queries' rows out.
func (s *StoreReader) Lookup(key []byte) (value []byte, ok bool, err error) {
	st := s.cache
	if st == nil {
		return s.Get(key)
	}
	if s.db.closed.Load() {
		return nil, false, ErrClosed
	}
	if err := s.db.health.err(); err != nil {
		return nil, false, err
	}
	// Build the full key on the stack: the hit path must not allocate.
	var buf [128]byte
	k := append(append(buf[:0], s.prefix...), key...)
	sh, h := s.db.rows.shard(k)
	if v, ok := sh.get(h, k, st); ok {
		return v, true, nil
	}
	return s.fill(sh, h, k)
}

// fill reads k, a full key of hash h, from Pebble and caches its value.
func (s *StoreReader) fill(sh *rowShard, h uint64, key []byte) ([]byte, bool, error) {
	c := s.db.rows
	t := c.ticket(s.cache)
	bp := keyBufs.Get().(*[]byte)
	k := append((*bp)[:0], key...)
	defer func() { *bp = k[:0]; keyBufs.Put(bp) }()
	v, closer, err := s.r.Get(k)
	err = s.db.health.readErr(err)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("materialize: get from store %s: %w", s.id, err)
	}
	value := bytes.Clone(v)
	_ = closer.Close()
	c.insert(sh, h, k, value, t)
	return value, true, nil
}
