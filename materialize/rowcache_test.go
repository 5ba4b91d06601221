package materialize

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/basindb/basin/internal/poll"
)

func openRowCache(t testing.TB, size int64) *DB {
	t.Helper()
	db := openTestOpts(t, Options{Dir: t.TempDir(), RowCacheSize: size, NoSync: true})
	t.Cleanup(func() { db.Close() })
	return db
}

func lookup(t testing.TB, s *StoreReader, k []byte) (string, bool) {
	t.Helper()
	v, ok, err := s.Lookup(k)
	if err != nil {
		t.Fatal(err)
	}
	return string(v), ok
}

// wantLookup checks that Lookup of k reads want ("" and !ok for absent)
// and that it agrees with Get.
func wantLookup(t testing.TB, s *StoreReader, k string, want string, wantOK bool) {
	t.Helper()
	v, ok := lookup(t, s, []byte(k))
	if v != want || ok != wantOK {
		t.Fatalf("Lookup(%q) = %q %v, want %q %v", k, v, ok, want, wantOK)
	}
	if gv, gok := get(t, s, []byte(k)); gv != v || gok != ok {
		t.Fatalf("Lookup(%q) = %q %v but Get = %q %v", k, v, ok, gv, gok)
	}
}

func TestRowCacheHitAndMiss(t *testing.T) {
	db := openRowCache(t, 1<<20)
	s := db.Store(StoreID{"v", 0})
	commit(t, s, Checkpoint{ChangelogOffset: 1}, "a", "1", "b", "2")

	wantLookup(t, &s.StoreReader, "a", "1", true)
	if st := db.RowCacheStats(); st.Hits != 0 || st.Misses != 1 || st.Entries != 1 || st.Bytes <= 0 {
		t.Fatalf("after a first Lookup: %+v", st)
	}
	// Another handle of the same store hits the same entry.
	wantLookup(t, &db.Store(StoreID{"v", 0}).StoreReader, "a", "1", true)
	if st := db.RowCacheStats(); st.Hits != 1 || st.Misses != 1 {
		t.Fatalf("after a second Lookup: %+v", st)
	}
	// Absent keys are read from Pebble every time and not cached.
	wantLookup(t, &s.StoreReader, "zz", "", false)
	wantLookup(t, &s.StoreReader, "zz", "", false)
	if st := db.RowCacheStats(); st.Misses != 3 || st.Entries != 1 {
		t.Fatalf("after Lookups of an absent key: %+v", st)
	}
	// Get neither reads nor fills the cache.
	get(t, &s.StoreReader, []byte("b"))
	if st := db.RowCacheStats(); st.Hits != 1 || st.Misses != 3 || st.Entries != 1 {
		t.Fatalf("after a Get: %+v", st)
	}
	// A store's entries are its own: the same key in another store.
	o := db.Store(StoreID{"v", 1})
	commit(t, o, Checkpoint{ChangelogOffset: 1}, "a", "other")
	wantLookup(t, &o.StoreReader, "a", "other", true)
	wantLookup(t, &s.StoreReader, "a", "1", true)
}

func TestRowCacheHitDoesNotAllocate(t *testing.T) {
	db := openRowCache(t, 1<<20)
	s := db.Store(StoreID{"v", 0})
	commit(t, s, Checkpoint{ChangelogOffset: 1}, "a", "1")
	k := []byte("a")
	lookup(t, &s.StoreReader, k)
	if n := testing.AllocsPerRun(100, func() { _, _, _ = s.Lookup(k) }); n != 0 {
		t.Fatalf("a hit allocates %v times", n)
	}
}

func TestRowCacheEviction(t *testing.T) {
	const size = 32 << 10 // one shard
	db := openRowCache(t, size)
	s := db.Store(StoreID{"v", 0})
	b := s.NewBatch()
	for i := range 1000 {
		b.Set([]byte(fmt.Sprintf("k%04d", i)), []byte(fmt.Sprintf("value %d", i)))
	}
	if err := b.Commit(Checkpoint{ChangelogOffset: 1}); err != nil {
		t.Fatal(err)
	}
	// A hot key read between every cold one stays cached while the cold
	// ones go round the budget several times.
	for i := range 1000 {
		wantLookup(t, &s.StoreReader, "k0000", "value 0", true)
		k := fmt.Sprintf("k%04d", i)
		wantLookup(t, &s.StoreReader, k, fmt.Sprintf("value %d", i), true)
		if st := db.RowCacheStats(); st.Bytes > size {
			t.Fatalf("cache over its budget: %+v", st)
		}
	}
	st := db.RowCacheStats()
	if st.Entries >= 1000 || st.Entries < 50 {
		t.Fatalf("expected the budget to hold some but not all of 1000 entries: %+v", st)
	}
	// The hot key missed once, then hit every time (k0000 included).
	if st.Hits != 1000 || st.Misses != 1000 {
		t.Fatalf("the hot key was evicted: %+v", st)
	}
}

func TestRowCacheSnapshotBypasses(t *testing.T) {
	db := openRowCache(t, 1<<20)
	id := StoreID{"v", 0}
	s := db.Store(id)
	commit(t, s, Checkpoint{ChangelogOffset: 1}, "a", "old")
	snap, err := db.NewSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	commit(t, s, Checkpoint{ChangelogOffset: 2}, "a", "new")
	wantLookup(t, &s.StoreReader, "a", "new", true) // cached now
	before := db.RowCacheStats()
	wantLookup(t, snap.Store(id), "a", "old", true)
	if after := db.RowCacheStats(); after != before {
		t.Fatalf("a snapshot Lookup used the cache: %+v, then %+v", before, after)
	}
}

func TestRowCacheOff(t *testing.T) {
	db := openRowCache(t, 0)
	s := db.Store(StoreID{"v", 0})
	commit(t, s, Checkpoint{ChangelogOffset: 1}, "a", "1")
	for range 2 {
		wantLookup(t, &s.StoreReader, "a", "1", true)
		wantLookup(t, &s.StoreReader, "b", "", false)
	}
	// Off, Lookup is Get: the value is the caller's copy.
	v, _, _ := s.Lookup([]byte("a"))
	v[0] = 'x'
	wantLookup(t, &s.StoreReader, "a", "1", true)
	if st := db.RowCacheStats(); st != (RowCacheStats{}) {
		t.Fatalf("stats of a disabled cache: %+v", st)
	}
	if err := (&Options{Dir: "x", RowCacheSize: -1}).Validate(); err == nil {
		t.Fatal("a negative RowCacheSize validates")
	}
}

// TestRowCacheInvalidation caches keys of a store and of its neighbours,
// writes to the store in every way there is, through another handle, and
// checks that Lookup reads the write and the neighbours stay cached.
func TestRowCacheInvalidation(t *testing.T) {
	id := StoreID{"v", 0}
	for _, tc := range []struct {
		name  string
		write func(t *testing.T, db *DB)
		want  map[string]string // "k1".."k4" after the write; absent: deleted
	}{
		{"set", func(t *testing.T, db *DB) {
			commit(t, db.Store(id), Checkpoint{ChangelogOffset: 2}, "k1", "new")
		}, map[string]string{"k1": "new", "k2": "2", "k3": "3", "k4": "4"}},
		{"delete", func(t *testing.T, db *DB) {
			commit(t, db.Store(id), Checkpoint{ChangelogOffset: 2}, "k2", "<del>")
		}, map[string]string{"k1": "1", "k3": "3", "k4": "4"}},
		{"large batch", func(t *testing.T, db *DB) {
			// More writes than the store has entries: the epoch path.
			var kvs []string
			for i := range 100 {
				kvs = append(kvs, fmt.Sprintf("x%d", i), "x")
			}
			commit(t, db.Store(id), Checkpoint{ChangelogOffset: 2}, append(kvs, "k3", "new")...)
		}, map[string]string{"k1": "1", "k2": "2", "k3": "new", "k4": "4"}},
		{"delete range", func(t *testing.T, db *DB) {
			b := db.Store(id).NewBatch()
			b.DeleteRange([]byte("k2"), []byte("k4"))
			if err := b.Commit(Checkpoint{ChangelogOffset: 2}); err != nil {
				t.Fatal(err)
			}
		}, map[string]string{"k1": "1", "k4": "4"}},
		{"clear and rewrite", func(t *testing.T, db *DB) {
			b := db.Store(id).NewBatch()
			b.DeleteRange(nil, nil)
			b.Set([]byte("k4"), []byte("new"))
			if err := b.Commit(Checkpoint{}); err != nil {
				t.Fatal(err)
			}
		}, map[string]string{"k4": "new"}},
		{"drop store", func(t *testing.T, db *DB) {
			if err := db.DropStore(id); err != nil {
				t.Fatal(err)
			}
		}, map[string]string{}},
		{"drop view", func(t *testing.T, db *DB) {
			if err := db.DropView(id.View); err != nil {
				t.Fatal(err)
			}
		}, map[string]string{}},
		{"loader", func(t *testing.T, db *DB) {
			l := db.Store(id).NewLoader()
			l.Set([]byte("k1"), []byte("new"))
			l.Delete([]byte("k2"))
			if err := l.Flush(Checkpoint{ChangelogOffset: 2}); err != nil {
				t.Fatal(err)
			}
		}, map[string]string{"k1": "new", "k3": "3", "k4": "4"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := openRowCache(t, 1<<20)
			s := db.Store(id)
			commit(t, s, Checkpoint{ChangelogOffset: 1}, "k1", "1", "k2", "2", "k3", "3", "k4", "4")
			// Neighbours: another partition, and another view whose name
			// the dropped one prefixes.
			neighbours := []*Store{db.Store(StoreID{"v", 1}), db.Store(StoreID{"vv", 0})}
			for _, n := range neighbours {
				commit(t, n, Checkpoint{ChangelogOffset: 1}, "k1", "n")
			}
			for _, k := range []string{"k1", "k2", "k3", "k4"} {
				lookup(t, &s.StoreReader, []byte(k))
			}
			for _, n := range neighbours {
				lookup(t, &n.StoreReader, []byte("k1"))
			}
			tc.write(t, db)
			for _, k := range []string{"k1", "k2", "k3", "k4"} {
				want, ok := tc.want[k]
				wantLookup(t, &s.StoreReader, k, want, ok)
			}
			if tc.name == "drop view" {
				// Its other partition went too.
				wantLookup(t, &neighbours[0].StoreReader, "k1", "", false)
				neighbours = neighbours[1:]
			}
			hits := db.RowCacheStats().Hits
			for _, n := range neighbours {
				wantLookup(t, &n.StoreReader, "k1", "n", true)
			}
			if got := db.RowCacheStats().Hits; got != hits+uint64(len(neighbours)) {
				t.Fatalf("the write to %s invalidated its neighbours (%d hits, want %d)", id, got-hits, len(neighbours))
			}
		})
	}
}

// TestRowCacheCoherence runs one writer per store, committing versions of
// a small set of keys (each commit writes some of them, and now and then
// clears the store first), against readers that Lookup those keys through
// the cache. Each reader first learns a version that Lookup must not go
// below, either as the writer's last completed Commit (Commit returned:
// requirement 1 of Lookup) or from the store's checkpoint (read the
// checkpoint first: requirement 2), and checks the value it gets.
func TestRowCacheCoherence(t *testing.T) {
	const (
		stores  = 2
		keys    = 8
		readers = 3 // per store and kind of bound
	)
	commits := 3000
	if testing.Short() {
		commits = 500
	}
	// writes reports whether commit v (1-based) writes key k; every 50th
	// commit clears the store and writes every key.
	clears := func(v int) bool { return v%50 == 0 }
	writes := func(v, k int) bool { return clears(v) || (v*7+k*13)%3 != 0 }
	// latest returns the version of key k after commit v (0: never
	// written).
	latest := func(v, k int) int {
		for ; v > 0; v-- {
			if writes(v, k) {
				return v
			}
		}
		return 0
	}
	keyOf := func(k int) []byte { return []byte{'k', byte(k)} }

	db := openRowCache(t, 1<<20)
	var (
		wg     sync.WaitGroup
		done   [stores]atomic.Int64 // last version whose Commit returned
		failed atomic.Bool
		stop   = make(chan struct{})
	)
	fail := func(format string, args ...any) {
		if failed.CompareAndSwap(false, true) {
			t.Errorf(format, args...)
		}
	}
	var writers sync.WaitGroup
	for si := range stores {
		id := StoreID{"coherence", int32(si)}
		writers.Add(1)
		go func() {
			defer writers.Done()
			s := db.Store(id)
			val := make([]byte, 8)
			for v := 1; v <= commits && !failed.Load(); v++ {
				b := s.NewBatch()
				if clears(v) {
					b.DeleteRange(nil, nil)
				}
				binary.BigEndian.PutUint64(val, uint64(v))
				for k := range keys {
					if writes(v, k) {
						b.Set(keyOf(k), val)
					}
				}
				if err := b.Commit(Checkpoint{ChangelogOffset: int64(v)}); err != nil {
					fail("commit %d to %s: %v", v, id, err)
					return
				}
				done[si].Store(int64(v))
			}
		}()
		for r := range 2 * readers {
			fromCheckpoint := r%2 == 1
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(si), uint64(r)))
				s := db.Store(id)
				for {
					select {
					case <-stop:
						return
					default:
					}
					if rng.IntN(16) == 0 {
						s = db.Store(id) // handles share the cache
					}
					k := rng.IntN(keys)
					var bound int
					if fromCheckpoint {
						cp, err := s.Checkpoint()
						if err != nil {
							fail("checkpoint: %v", err)
							return
						}
						bound = int(cp.ChangelogOffset)
					} else {
						bound = int(done[si].Load())
					}
					want := latest(bound, k)
					v, ok, err := s.Lookup(keyOf(k))
					if err != nil {
						fail("lookup: %v", err)
						return
					}
					got := 0
					if ok {
						got = int(binary.BigEndian.Uint64(v))
						if len(v) != 8 || !writes(got, k) {
							fail("%s key %d: Lookup read %x, which no commit wrote", id, k, v)
							return
						}
					}
					if got < want {
						fail("%s key %d: Lookup read version %d after %s showed version %d (commit %d)",
							id, k, got, map[bool]string{true: "the checkpoint", false: "Commit"}[fromCheckpoint], want, bound)
						return
					}
				}
			}()
		}
	}
	writers.Wait()
	// With the writes done, the readers' lookups find what they cached
	// (while commits invalidate nearly every key, a loaded machine can
	// see none of them hit).
	hit := poll.Cond(30*time.Second, func() bool { return db.RowCacheStats().Hits > 0 })
	close(stop)
	wg.Wait()
	st := db.RowCacheStats()
	t.Logf("%+v", st)
	if !hit || st.Misses == 0 {
		t.Fatalf("the readers did not exercise the cache: %+v", st)
	}
}

// TestRowCacheFillRacesWrite steps a Lookup's fill by hand (take the
// ticket, read Pebble, insert) around a write that overlaps it, which the
// concurrent test only hits by chance: the value read before the write
// must not be cached once the write is visible.
func TestRowCacheFillRacesWrite(t *testing.T) {
	id := StoreID{"v", 0}
	for _, tc := range []struct {
		name string
		// write commits "new" for k1 (or deletes it: deleted).
		write   func(t *testing.T, db *DB)
		deleted bool
	}{
		{name: "set", write: func(t *testing.T, db *DB) {
			commit(t, db.Store(id), Checkpoint{ChangelogOffset: 2}, "k1", "new")
		}},
		{name: "set, store not cached", write: func(t *testing.T, db *DB) {
			commit(t, db.Store(id), Checkpoint{ChangelogOffset: 2}, "k1", "new")
		}},
		{name: "clear", deleted: true, write: func(t *testing.T, db *DB) {
			b := db.Store(id).NewBatch()
			b.DeleteRange(nil, nil)
			if err := b.Commit(Checkpoint{}); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "drop store", deleted: true, write: func(t *testing.T, db *DB) {
			if err := db.DropStore(id); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "drop view", deleted: true, write: func(t *testing.T, db *DB) {
			if err := db.DropView(id.View); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "loader", write: func(t *testing.T, db *DB) {
			l := db.Store(id).NewLoader()
			l.Set([]byte("k1"), []byte("new"))
			if err := l.Flush(Checkpoint{ChangelogOffset: 2}); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := openRowCache(t, 1<<20)
			s := db.Store(id)
			commit(t, s, Checkpoint{ChangelogOffset: 1}, "k1", "old", "k2", "2")
			if tc.name != "set, store not cached" {
				// Another entry of the store, so that writes cannot skip
				// invalidating.
				lookup(t, &s.StoreReader, []byte("k2"))
			}
			c := db.rows
			k := append(append([]byte(nil), s.prefix...), "k1"...)
			ticket := c.ticket(s.cache)
			old, _ := get(t, &s.StoreReader, []byte("k1"))
			tc.write(t, db)
			sh, h := c.shard(k)
			c.insert(sh, h, k, []byte(old), ticket)
			want, wantOK := "new", true
			if tc.deleted {
				want, wantOK = "", false
			}
			wantLookup(t, &s.StoreReader, "k1", want, wantOK)
		})
	}
}

// TestRowCacheFillDuringWrite steps a Lookup's fill by hand inside a
// write that has invalidated and not yet made its data visible: what the
// fill read must not be cached.
func TestRowCacheFillDuringWrite(t *testing.T) {
	for _, drop := range []bool{false, true} {
		t.Run(fmt.Sprintf("drop=%v", drop), func(t *testing.T) {
			db := openRowCache(t, 1<<20)
			s := db.Store(StoreID{"v", 0})
			commit(t, s, Checkpoint{ChangelogOffset: 1}, "k1", "old")
			c, st := db.rows, s.cache
			k := append(append([]byte(nil), s.prefix...), "k1"...)
			// The write enters its gate and invalidates (nothing is
			// cached), as Batch.commit and dropRanges do.
			gate := &st.gate
			if drop {
				gate = &c.drops
			}
			gate.enter()
			ticket := c.ticket(st)
			old, _ := get(t, &s.StoreReader, []byte("k1"))
			sh, h := c.shard(k)
			c.insert(sh, h, k, []byte(old), ticket)
			// Its data becomes visible, then it exits.
			if err := db.pdb.Set(k, []byte("new"), nil); err != nil {
				t.Fatal(err)
			}
			gate.exit()
			wantLookup(t, &s.StoreReader, "k1", "new", true)
		})
	}
}

// TestRowCacheHashCollision gives two keys the same hash by hand (a shard
// indexes its entries by the key's 64-bit hash): each lookup must find
// only its own key, the later fill replaces the earlier, and removing
// one key leaves the other.
func TestRowCacheHashCollision(t *testing.T) {
	db := openRowCache(t, 1<<20)
	s := db.Store(StoreID{"v", 0})
	c, st := db.rows, s.cache
	a, b := []byte("key-a"), []byte("key-b")
	sh, _ := c.shard(a)
	const h = 42
	c.insert(sh, h, a, []byte("A"), c.ticket(st))
	if v, ok := sh.get(h, a, st); !ok || string(v) != "A" {
		t.Fatalf("get(a) = %q %v, want A", v, ok)
	}
	if v, ok := sh.get(h, b, st); ok {
		t.Fatalf("get(b) = %q from a's entry, want a miss", v)
	}
	sh.remove(h, b) // not cached: must not remove a
	if _, ok := sh.get(h, a, st); !ok {
		t.Fatal("removing b removed a")
	}
	c.insert(sh, h, b, []byte("B"), c.ticket(st))
	if _, ok := sh.get(h, a, st); ok {
		t.Fatal("a is still found after b, of the same hash, replaced it")
	}
	if v, ok := sh.get(h, b, st); !ok || string(v) != "B" {
		t.Fatalf("get(b) = %q %v, want B", v, ok)
	}
	if n := st.entries.Load(); n != 1 {
		t.Fatalf("the store counts %d entries, want 1", n)
	}
	sh.remove(h, b)
	if _, ok := sh.get(h, b, st); ok {
		t.Fatal("b is found after its removal")
	}
	if n := st.entries.Load(); n != 0 {
		t.Fatalf("the store counts %d entries after removing all, want 0", n)
	}
	if got := db.RowCacheStats(); got.Entries != 0 || got.Bytes != 0 {
		t.Fatalf("stats after removing all: %+v", got)
	}
}
