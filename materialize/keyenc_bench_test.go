package materialize

import (
	"context"
	"strconv"
	"testing"
)

// Benchmarks of the storage hot paths that complement BenchmarkEncodeKey,
// BenchmarkGet, BenchmarkScan and BenchmarkCommit (keyenc_test.go,
// store_test.go): the key encoding per key shape, point reads of a store
// keyed by BIGINT, and a scan that decodes every row.
// Run with: go test -run '^$' -bench . -benchmem ./materialize/

func BenchmarkEncodeKeyShapes(b *testing.B) {
	for _, bc := range []struct {
		name string
		vals []any
	}{
		{"bigint", []any{int64(1234567)}},
		{"varchar", []any{"customer-000123"}},
		{"bigint+varchar", []any{int64(42), "eu-west"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			dst := make([]byte, 0, 64)
			enc, err := EncodeKey(nil, bc.vals)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(enc)))
			b.ReportAllocs()
			for b.Loop() {
				if dst, err = EncodeKey(dst[:0], bc.vals); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkDecodeKeyShapes(b *testing.B) {
	for _, bc := range []struct {
		name string
		vals []any
	}{
		{"bigint", []any{int64(1234567)}},
		{"varchar", []any{"customer-000123"}},
		{"bigint+varchar", []any{int64(42), "eu-west"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			enc, err := EncodeKey(nil, bc.vals)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(enc)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := DecodeKey(enc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// benchStoreRows is the size of the store the read benchmarks use.
const benchStoreRows = 100_000

// benchIntStore opens a DB in a temporary directory and fills one store with
// n rows keyed by BIGINT 0..n-1, each value a small encoded row, committed
// in batches of 10k, then compacts the store: reads then measure the
// steady state (one sorted level) rather than a stack of L0 files with a
// compaction running beside the timed loop.
func benchIntStore(b *testing.B, n int) *Store {
	b.Helper()
	db, err := Open(Options{Dir: b.TempDir(), NoSync: true, Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	s := db.Store(StoreID{"bench", 0})
	const perBatch = 10_000
	var k, v []byte
	for start := 0; start < n; start += perBatch {
		bt := s.NewBatch()
		for i := start; i < min(start+perBatch, n); i++ {
			if k, err = EncodeKey(k[:0], []any{int64(i)}); err != nil {
				b.Fatal(err)
			}
			row := []any{int64(i), "customer-" + strconv.Itoa(i%1000), float64(i) * 1.5}
			if v, err = AppendRow(v[:0], row); err != nil {
				b.Fatal(err)
			}
			bt.Set(k, v)
		}
		if err := bt.Commit(Checkpoint{ChangelogOffset: int64(start + perBatch)}); err != nil {
			b.Fatal(err)
		}
	}
	if err := db.pdb.Compact(context.Background(), s.prefix, PrefixEnd(s.prefix), true); err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkGetBigint is a point read of a present key from a 100k-row
// store, keys visited in a scattered order.
func BenchmarkGetBigint(b *testing.B) {
	s := benchIntStore(b, benchStoreRows)
	keys := make([][]byte, 1024)
	for i := range keys {
		k, err := EncodeKey(nil, []any{int64((i * 7919) % benchStoreRows)})
		if err != nil {
			b.Fatal(err)
		}
		keys[i] = k
	}
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		_, ok, err := s.Get(keys[i%len(keys)])
		if err != nil || !ok {
			b.Fatalf("get: ok=%v err=%v", ok, err)
		}
		i++
	}
}

// BenchmarkGetMissing is a point read of an absent key.
func BenchmarkGetMissing(b *testing.B) {
	s := benchIntStore(b, benchStoreRows)
	k, err := EncodeKey(nil, []any{int64(-5)})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, ok, err := s.Get(k); err != nil || ok {
			b.Fatalf("get: ok=%v err=%v", ok, err)
		}
	}
}

// BenchmarkScanBigint is one full scan of a 100k-row store (iterator
// creation, First, Next to the end, reading each key and value); SetBytes
// counts the bytes of keys and values read, so MB/s is scan throughput.
func BenchmarkScanBigint(b *testing.B) {
	s := benchIntStore(b, benchStoreRows)
	var total int64
	scanOnce := func() int {
		it, err := s.NewIter(nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		total = 0
		for valid := it.First(); valid; valid = it.Next() {
			total += int64(len(it.Key()) + len(it.Value()))
			n++
		}
		if err := it.Close(); err != nil {
			b.Fatal(err)
		}
		return n
	}
	if n := scanOnce(); n != benchStoreRows {
		b.Fatalf("scanned %d rows, want %d", n, benchStoreRows)
	}
	b.SetBytes(total)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		scanOnce()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchStoreRows, "ns/row")
}

// BenchmarkScanDecode is the full scan plus DecodeRowInto of every
// value, which is what a SELECT over the view does before encoding rows.
func BenchmarkScanDecode(b *testing.B) {
	s := benchIntStore(b, benchStoreRows)
	b.ReportAllocs()
	b.ResetTimer()
	var row []any
	for b.Loop() {
		it, err := s.NewIter(nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		for valid := it.First(); valid; valid = it.Next() {
			if row, err = DecodeRowInto(row, it.Value()); err != nil {
				b.Fatal(err)
			}
		}
		if err := it.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchStoreRows, "ns/row")
}
