package materialize

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/basindb/basin/internal/poll"
)

func openScanCache(t testing.TB, rowCache, scanCache int64) *DB {
	t.Helper()
	db := openTestOpts(t, Options{Dir: t.TempDir(), RowCacheSize: rowCache, ScanCacheSize: scanCache, NoSync: true})
	t.Cleanup(func() { db.Close() })
	return db
}

// scanned is what cachedScan makes of a store: its checkpoint offset and
// its pairs, "k=v" joined by spaces.
type scanned struct {
	offset int64
	pairs  string
}

// cachedScan scans s as pull does: a ticket, then the cache or a
// snapshot, whose contents it offers the cache. hit reports whether the
// cache answered.
func cachedScan(t testing.TB, s *Store) (v scanned, hit bool) {
	t.Helper()
	ticket := s.ScanTicket()
	if c, ok := ticket.CachedScan(); ok {
		return *c.(*scanned), true
	}
	snap, err := s.db.NewSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	r := snap.Store(s.id)
	cp, err := r.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	it, err := r.NewIter(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var pairs []string
	for ok := it.First(); ok; ok = it.Next() {
		pairs = append(pairs, string(it.Key())+"="+string(it.Value()))
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	v = scanned{offset: cp.ChangelogOffset, pairs: strings.Join(pairs, " ")}
	ticket.CacheScan(&v, int64(len(v.pairs)))
	return v, false
}

func wantScan(t testing.TB, s *Store, pairs string, hit bool) {
	t.Helper()
	v, h := cachedScan(t, s)
	if v.pairs != pairs || h != hit {
		t.Fatalf("scan of %s = %q (from the cache: %v), want %q (from the cache: %v)", s.id, v.pairs, h, pairs, hit)
	}
}

func TestScanCacheHitAndInvalidation(t *testing.T) {
	db := openScanCache(t, 1<<20, 1<<20)
	s := db.Store(StoreID{"v", 0})
	commit(t, s, Checkpoint{ChangelogOffset: 1}, "a", "1", "b", "2")
	wantScan(t, s, "a=1 b=2", false)
	wantScan(t, s, "a=1 b=2", true)
	// Another handle of the store shares its entry; another store does not.
	wantScan(t, db.Store(StoreID{"v", 0}), "a=1 b=2", true)
	o := db.Store(StoreID{"v", 1})
	wantScan(t, o, "", false)
	if st := db.ScanCacheStats(); st.Hits != 2 || st.Fills != 2 || st.Entries != 2 || st.Bytes <= 0 {
		t.Fatalf("stats: %+v", st)
	}
	// A commit makes the entry stale, a range deletion too.
	commit(t, s, Checkpoint{ChangelogOffset: 2}, "c", "3")
	wantScan(t, s, "a=1 b=2 c=3", false)
	wantScan(t, s, "a=1 b=2 c=3", true)
	b := s.NewBatch()
	b.DeleteRange([]byte("b"), []byte("c"))
	if err := b.Commit(Checkpoint{ChangelogOffset: 3}); err != nil {
		t.Fatal(err)
	}
	wantScan(t, s, "a=1 c=3", false)
	// A drop of any store makes every entry stale.
	wantScan(t, o, "", true)
	if err := db.DropStore(StoreID{"w", 0}); err != nil {
		t.Fatal(err)
	}
	wantScan(t, o, "", false)
	wantScan(t, s, "a=1 c=3", false)
	if err := db.DropStore(s.id); err != nil {
		t.Fatal(err)
	}
	wantScan(t, s, "", false)
	if v, _ := cachedScan(t, s); v.offset != 0 {
		t.Fatalf("a dropped store's scan has checkpoint offset %d", v.offset)
	}
}

// A write that enters the store between a scan's ticket and its offer
// keeps the offer out, and while one is in progress nothing is served.
func TestScanCacheWriteDuringScan(t *testing.T) {
	db := openScanCache(t, 1<<20, 1<<20)
	s := db.Store(StoreID{"v", 0})
	commit(t, s, Checkpoint{ChangelogOffset: 1}, "a", "1")
	ticket := s.ScanTicket()
	commit(t, s, Checkpoint{ChangelogOffset: 2}, "a", "2")
	ticket.CacheScan(&scanned{offset: 1, pairs: "a=1"}, 3)
	if st := db.ScanCacheStats(); st.Fills != 0 || st.Entries != 0 {
		t.Fatalf("a scan a commit overtook was kept: %+v", st)
	}
	wantScan(t, s, "a=2", false)
	s.cache.gate.enter()
	if s.ScanTicket().ok {
		t.Fatal("a ticket taken during a write may be used")
	}
	wantScan(t, s, "a=2", false) // read, not served and not kept
	s.cache.gate.exit()
	wantScan(t, s, "a=2", false)
	wantScan(t, s, "a=2", true)
}

func TestScanCacheBudget(t *testing.T) {
	const budget = 64 << 10
	db := openScanCache(t, 1<<20, budget)
	if got := db.Store(StoreID{"v", 0}).MaxCachedScan(); got != budget/4 {
		t.Fatalf("MaxCachedScan = %d, want %d", got, budget/4)
	}
	value := strings.Repeat("x", 6<<10)
	for p := range int32(40) {
		s := db.Store(StoreID{"v", p})
		commit(t, s, Checkpoint{ChangelogOffset: 1}, "k", value)
		wantScan(t, s, "k="+value, false)
		if st := db.ScanCacheStats(); st.Bytes > budget {
			t.Fatalf("over budget: %+v", st)
		}
	}
	// The most recently used are kept; the least, evicted.
	wantScan(t, db.Store(StoreID{"v", 39}), "k="+value, true)
	wantScan(t, db.Store(StoreID{"v", 0}), "k="+value, false)
	// A scan over a quarter of the budget is not kept.
	big := db.Store(StoreID{"big", 0})
	commit(t, big, Checkpoint{ChangelogOffset: 1}, "k", strings.Repeat("y", budget/4))
	cachedScan(t, big)
	if _, hit := cachedScan(t, big); hit {
		t.Fatal("a scan over a quarter of the budget was kept")
	}
}

func TestScanCacheOff(t *testing.T) {
	for _, c := range []struct{ rows, scans int64 }{{0, 1 << 20}, {1 << 20, 0}} {
		db := openScanCache(t, c.rows, c.scans)
		s := db.Store(StoreID{"v", 0})
		commit(t, s, Checkpoint{ChangelogOffset: 1}, "a", "1")
		wantScan(t, s, "a=1", false)
		wantScan(t, s, "a=1", false)
		if s.MaxCachedScan() != 0 || db.ScanCacheStats() != (ScanCacheStats{}) {
			t.Fatalf("row cache %d, scan cache %d: the scan cache is on", c.rows, c.scans)
		}
	}
}

// Readers scanning with the cache while a writer commits never see a
// store older than the last commit that returned before their scan
// began, and always see the data of the checkpoint they report.
func TestScanCacheCoherence(t *testing.T) {
	commits := 2000
	if testing.Short() {
		commits = 300
	}
	db := openScanCache(t, 1<<20, 1<<20)
	id := StoreID{"coherence", 0}
	var (
		done   atomic.Int64
		failed atomic.Bool
		wg     sync.WaitGroup
		hits   atomic.Int64
	)
	fail := func(format string, args ...any) {
		if failed.CompareAndSwap(false, true) {
			t.Errorf(format, args...)
		}
	}
	stop := make(chan struct{})
	for r := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := db.Store(id)
			for {
				select {
				case <-stop:
					return
				default:
				}
				before := done.Load()
				v, hit := cachedScan(t, s)
				if hit {
					hits.Add(1)
				}
				if v.offset < before {
					fail("reader %d: scan at offset %d after commit %d returned", r, v.offset, before)
					return
				}
				// Each commit v sets two keys to v: their values are the
				// checkpoint's.
				want := fmt.Sprintf("a=%08d b=%08d", v.offset, v.offset)
				if v.offset > 0 && v.pairs != want {
					fail("reader %d: checkpoint %d with data %q", r, v.offset, v.pairs)
					return
				}
			}
		}()
	}
	s := db.Store(id)
	for v := 1; v <= commits && !failed.Load(); v++ {
		val := fmt.Sprintf("%08d", v)
		b := s.NewBatch()
		b.Set([]byte("a"), []byte(val))
		b.Set([]byte("b"), []byte(val))
		if err := b.Commit(Checkpoint{ChangelogOffset: int64(v)}); err != nil {
			t.Fatal(err)
		}
		done.Store(int64(v))
		if v%100 == 0 {
			// Let the readers hit a quiet store for a while.
			h := hits.Load()
			if !poll.Cond(10*time.Second, func() bool { return hits.Load() >= h+10 || failed.Load() }) {
				t.Fatalf("readers hit the cache of a quiet store %d times in 10 s", hits.Load()-h)
			}
		}
	}
	close(stop)
	wg.Wait()
	if hits.Load() == 0 {
		t.Fatal("no scan was served from the cache")
	}
}
