package materialize

import (
	"fmt"
	"testing"
)

// Benchmarks of the row cache: point reads of a 100k-row store written
// through batches and still in Pebble's memtables, as in a view that
// keeps taking input, through Get (Pebble) and Lookup (the cache, warm).
// Run with: go test -run '^$' -bench 'Lookup|Get$' -benchmem ./materialize/

// BenchmarkLookup reads every key of the store in turn, from a warm cache
// (every row fits), next to the same reads through Get.
func BenchmarkLookup(b *testing.B) {
	s := benchStore(b, benchKeys, 64<<20)
	keys := make([][]byte, benchKeys)
	for i := range keys {
		keys[i] = mustKey(b, fmt.Sprintf("customer-%06d", (i*7919)%benchKeys))
	}
	for _, k := range keys {
		if _, ok, err := s.Lookup(k); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
	m := s.db.pdb.Metrics()
	b.Logf("memtables: %d (%d bytes); L0 files: %d; cache %+v", m.MemTable.Count, m.MemTable.Size, m.Levels[0].TablesCount, s.db.RowCacheStats())
	for _, bc := range []struct {
		name string
		read func([]byte) ([]byte, bool, error)
	}{
		{"Get", s.Get},
		{"Lookup", s.Lookup},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, ok, err := bc.read(keys[i%len(keys)]); !ok || err != nil {
					b.Fatal(ok, err)
				}
				i++
			}
		})
		b.Run(bc.name+"/parallel", func(b *testing.B) {
			b.ReportAllocs()
			b.SetParallelism(4) // 8 readers on 2 cores, like the profiled load
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					if _, ok, err := bc.read(keys[i%len(keys)]); !ok || err != nil {
						b.Error(ok, err)
						return
					}
					i += 7
				}
			})
		})
	}
}

// BenchmarkCommitRowCache commits batches of 10,000 new keys, as a view
// taking in its input does, with the row cache off, on with nothing of
// the store cached (the write path checks one counter), and on with 1,000
// of the store's rows cached (each batch outnumbers them: one epoch bump).
func BenchmarkCommitRowCache(b *testing.B) {
	for _, bc := range []struct {
		name   string
		size   int64
		cached int
	}{{"off", 0, 0}, {"empty", 64 << 20, 0}, {"cached", 64 << 20, 1000}} {
		b.Run(bc.name, func(b *testing.B) {
			db, err := Open(Options{Dir: b.TempDir(), Logger: quietLogger(), NoSync: true, RowCacheSize: bc.size})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			s := db.Store(StoreID{"bench", 0})
			row, _ := EncodeRow(benchRow)
			var off int64
			write := func() {
				batch := s.NewBatch()
				for range 10_000 {
					batch.Set(mustKey(b, off), row)
					off++
				}
				if err := batch.Commit(Checkpoint{ChangelogOffset: off}); err != nil {
					b.Fatal(err)
				}
			}
			write()
			for i := range bc.cached {
				if _, ok, err := s.Lookup(mustKey(b, int64(i))); !ok || err != nil {
					b.Fatal(ok, err)
				}
			}
			for b.Loop() {
				write()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*10_000), "ns/record")
		})
	}
}
