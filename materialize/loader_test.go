package materialize

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
)

// TestLoader loads random sets and deletes, with keys written more than
// once within a flush and across flushes, into one store with a Loader
// and into another with batches: the two stores must read the same, each
// with the checkpoint of its last commit, after a reopen too, and no
// loader file is left in the directory.
func TestLoader(t *testing.T) {
	dir := t.TempDir()
	db := openTest(t, dir)
	loaded, batched := db.Store(StoreID{"l", 0}), db.Store(StoreID{"b", 0})
	// A neighbour's rows around the loaded store's, which loading must
	// leave alone.
	other := db.Store(StoreID{"k", 0})
	ob := other.NewBatch()
	for i := range 100 {
		ob.Set(key(t, int64(i)), []byte("other"))
	}
	if err := ob.Commit(Checkpoint{ChangelogOffset: 1}); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	l := loaded.NewLoader()
	for flush := 0; flush < 5; flush++ {
		b := batched.NewBatch()
		for range 2000 {
			k := key(t, int64(rng.IntN(500)))
			if rng.IntN(5) == 0 {
				l.Delete(k)
				b.Delete(k)
				continue
			}
			v := []byte(fmt.Sprintf("v%d", rng.Int()))
			l.Set(k, v)
			b.Set(k, v)
		}
		cp := Checkpoint{ChangelogOffset: int64(flush+1) * 2000}
		if err := l.Flush(cp); err != nil {
			t.Fatal(err)
		}
		if err := b.Commit(cp); err != nil {
			t.Fatal(err)
		}
	}
	check := func(db *DB) {
		t.Helper()
		loaded, batched := db.Store(StoreID{"l", 0}), db.Store(StoreID{"b", 0})
		n := 0
		for i := range 500 {
			k := key(t, int64(i))
			lv, lok := get(t, &loaded.StoreReader, k)
			bv, bok := get(t, &batched.StoreReader, k)
			if lv != bv || lok != bok {
				t.Fatalf("key %d: loaded %q %v, batched %q %v", i, lv, lok, bv, bok)
			}
			if lok {
				n++
			}
		}
		if n == 0 || n == 500 {
			t.Fatalf("%d of 500 keys present: the test wrote too few deletes or sets", n)
		}
		lcp, err := loaded.Checkpoint()
		if err != nil || lcp.ChangelogOffset != 10000 {
			t.Fatalf("loaded checkpoint %+v, %v", lcp, err)
		}
		if v, ok := get(t, &db.Store(StoreID{"k", 0}).StoreReader, key(t, int64(7))); v != "other" || !ok {
			t.Fatalf("the neighbouring store reads %q %v", v, ok)
		}
	}
	check(db)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openTest(t, dir)
	defer db.Close()
	check(db)
	if left, _ := filepath.Glob(filepath.Join(dir, "load-*")); len(left) > 0 {
		t.Fatalf("loader files left: %v", left)
	}
}
