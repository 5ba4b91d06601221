package materialize

import (
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// StorageStats are the key figures of the node's Pebble store, for its
// metrics: how much disk and memory it takes, how far compactions are
// behind, and how often writes stalled waiting for them.
type StorageStats struct {
	// DiskBytes is the space the store's files take on disk (tables,
	// WAL, manifests, and files not yet deleted).
	DiskBytes uint64
	// MemtableBytes is the memory of the memtables; WALBytes the live
	// write-ahead log.
	MemtableBytes, WALBytes uint64
	// L0Files and L0Sublevels are level 0's tables and sublevels: many
	// sublevels mean compactions are behind and reads look at many
	// files. ReadAmp is the sublevels and non-empty levels a read may
	// visit.
	L0Files     int64
	L0Sublevels int32
	ReadAmp     int
	// CompactionDebtBytes estimates the bytes compactions must rewrite
	// to bring the levels into shape.
	CompactionDebtBytes uint64
	// Compactions and Flushes count those done since the store opened.
	Compactions, Flushes int64
	// BlockCacheBytes is the memory of the block cache; its hits and
	// misses count the blocks reads found and did not find there.
	BlockCacheBytes                  int64
	BlockCacheHits, BlockCacheMisses int64
	// WriteStalls counts the times writes were stopped waiting for
	// flushes or compactions, and WriteStallTime how long they were.
	WriteStalls    int64
	WriteStallTime time.Duration
}

// StorageStats returns the store's key figures now.
func (db *DB) StorageStats() StorageStats {
	m := db.pdb.Metrics()
	return StorageStats{
		DiskBytes:           m.DiskSpaceUsage(),
		MemtableBytes:       m.MemTable.Size,
		WALBytes:            m.WAL.Size,
		L0Files:             m.Levels[0].TablesCount,
		L0Sublevels:         m.Levels[0].Sublevels,
		ReadAmp:             m.ReadAmp(),
		CompactionDebtBytes: m.Compact.EstimatedDebt,
		Compactions:         m.Compact.Count,
		Flushes:             m.Flush.Count,
		BlockCacheBytes:     m.BlockCache.Size,
		BlockCacheHits:      m.BlockCache.Hits,
		BlockCacheMisses:    m.BlockCache.Misses,
		WriteStalls:         db.stalls.n.Load(),
		WriteStallTime:      time.Duration(db.stalls.nanos.Load()),
	}
}

// writeStalls counts Pebble's write stalls (its EventListener's
// WriteStallBegin and WriteStallEnd, which come in pairs from one
// goroutine at a time).
type writeStalls struct {
	n, nanos atomic.Int64
	began    atomic.Int64 // unix nanoseconds of the stall under way; 0 for none
}

func (s *writeStalls) begin(pebble.WriteStallBeginInfo) {
	s.n.Add(1)
	s.began.Store(time.Now().UnixNano())
}

func (s *writeStalls) end() {
	if b := s.began.Swap(0); b > 0 {
		s.nanos.Add(time.Now().UnixNano() - b)
	}
}
