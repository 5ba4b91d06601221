package materialize

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// A Loader fills a store with many writes in no particular key order, as
// a restore from a changelog does, without the write path of a Batch:
// it collects the writes, and Flush sorts them into an sstable that
// Pebble ingests whole (no write-ahead log, no memtable, and no
// compaction of the rows just written when the table overlaps nothing,
// as the tables of different stores never do). The last write of a key
// wins, as in a batch; a later Flush's table wins over an earlier one's.
//
// After a crash between a Flush's ingestion and its checkpoint, the
// store may hold writes past its checkpoint. They are writes of the
// changelog after the checkpoint, in the changelog's order, which the
// next restore applies again over them: the store ends the same.
type Loader struct {
	s *Store
	// chunks hold the keys and values back to back, entries where each
	// is: no pointer per write for the collector to follow, and no
	// growing copy of one large buffer.
	chunks  [][]byte
	entries []loadEntry
	size    int
}

type loadEntry struct {
	chunk, off int32
	klen, vlen int32 // vlen < 0: a delete
}

// loadChunk is the size of a Loader's chunks (a larger write gets a
// chunk of its own).
const loadChunk = 1 << 20

func (l *Loader) key(e loadEntry) []byte {
	return l.chunks[e.chunk][e.off : e.off+e.klen]
}

func (l *Loader) value(e loadEntry) []byte {
	v := e.off + e.klen
	return l.chunks[e.chunk][v : v+e.vlen]
}

// add copies key and value (nil for a delete) into the chunks.
func (l *Loader) add(key, value []byte, del bool) {
	n := len(key) + len(value)
	c := len(l.chunks) - 1
	if c < 0 || cap(l.chunks[c])-len(l.chunks[c]) < n {
		l.chunks = append(l.chunks, make([]byte, 0, max(loadChunk, n)))
		c++
	}
	e := loadEntry{chunk: int32(c), off: int32(len(l.chunks[c])), klen: int32(len(key)), vlen: int32(len(value))}
	if del {
		e.vlen = -1
	}
	l.chunks[c] = append(append(l.chunks[c], key...), value...)
	if len(l.entries) == cap(l.entries) {
		// Doubling: append grows large slices by a quarter, copying a
		// long entries slice many times over.
		l.entries = slices.Grow(l.entries, max(1024, len(l.entries)))
	}
	l.entries = append(l.entries, e)
	l.size += n + 16
}

// Grow makes room for n more writes, so that the index of the writes
// does not grow, copying itself, as they come: a restore knows about how
// many changelog records it will read.
func (l *Loader) Grow(n int) { l.entries = slices.Grow(l.entries, n) }

// NewLoader starts a loader of s.
func (s *Store) NewLoader() *Loader { return &Loader{s: s} }

// Set sets key to value. Both are copied.
func (l *Loader) Set(key, value []byte) { l.add(key, value, false) }

// Delete deletes key.
func (l *Loader) Delete(key []byte) { l.add(key, nil, true) }

// Size is about how much memory the writes not yet flushed take.
func (l *Loader) Size() int { return l.size }

// loadSeq names the loaders' sstables apart.
var loadSeq atomic.Uint64

// Flush writes what was collected into the store and then cp as its
// checkpoint, durably.
func (l *Loader) Flush(cp Checkpoint) error {
	db := l.s.db
	if db.closed.Load() {
		return ErrClosed
	}
	if err := db.health.writeErr(); err != nil {
		return fmt.Errorf("materialize: loading store %s: %w", l.s.id, err)
	}
	if len(l.entries) > 0 {
		// Sort by key; of a key's writes the last is kept.
		slices.SortStableFunc(l.entries, func(a, b loadEntry) int { return bytes.Compare(l.key(a), l.key(b)) })
		path := filepath.Join(db.dir, fmt.Sprintf("load-%d-%d.sst", os.Getpid(), loadSeq.Add(1)))
		if err := l.write(path); err != nil {
			_ = os.Remove(path)
			return fmt.Errorf("materialize: loading store %s: %w", l.s.id, err)
		}
		err := l.ingest(path)
		_ = os.Remove(path) // Ingest links the file in; the name is ours to drop
		if err != nil {
			return fmt.Errorf("materialize: loading store %s: %w", l.s.id, err)
		}
	}
	l.entries, l.chunks, l.size = l.entries[:0], nil, 0
	b := l.s.NewBatch()
	return b.Commit(cp)
}

// ingest ingests the table at path into the store, invalidating the
// store's row cache entries before they can be stale (see rowCache).
func (l *Loader) ingest(path string) error {
	if st := l.s.cache; st != nil {
		st.gate.enter()
		defer st.gate.exit()
		invalidateStore(st)
	}
	// An ingestion goes through Pebble's commit pipeline, and may write
	// a log record: it is a write like a commit (DB.apply).
	db := l.s.db
	db.writeMu.Lock()
	defer db.writeMu.Unlock()
	if err := db.health.writeErr(); err != nil {
		return err
	}
	return db.pdb.Ingest(context.Background(), []string{path})
}

// write writes the sorted entries, the last of each key, to an sstable
// at path.
func (l *Loader) write(path string) error {
	f, err := l.s.db.popts.FS.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	db := l.s.db
	// L0's writer options, not the bottom level's: a table may be
	// ingested above an earlier one, and its deletes must shadow that
	// one's rows rather than be dropped as a bottom level's may be.
	w := sstable.NewWriter(objstorageprovider.NewFileWritable(f), db.popts.MakeWriterOptions(0, db.pdb.TableFormat()))
	var k []byte
	for i, e := range l.entries {
		key := l.key(e)
		if i+1 < len(l.entries) && bytes.Equal(key, l.key(l.entries[i+1])) {
			continue // a later write of the key follows
		}
		k = append(append(k[:0], l.s.prefix...), key...)
		if e.vlen < 0 {
			err = w.Delete(k)
		} else {
			err = w.Set(k, l.value(e))
		}
		if err != nil {
			_ = w.Close()
			return err
		}
	}
	return w.Close()
}
