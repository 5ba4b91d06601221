package materialize

import (
	"bytes"
	"errors"
	"fmt"
	"sync"

	"github.com/cockroachdb/pebble/v2"
)

// StoreReader reads one store, live (through a Store) or as of a snapshot.
// Keys are the caller's keys, without the store's internal prefix.
// It is safe for concurrent use.
type StoreReader struct {
	db     *DB
	r      pebble.Reader // the DB or a snapshot
	id     StoreID
	prefix []byte // data prefix of the store
	cpKey  []byte // checkpoint key of the store
	// cache is the store's row cache state, shared by all its live
	// handles; nil over a snapshot or with the row cache off.
	cache *storeCache
}

// Store is one view partition's state: a key range of the node's Pebble
// database plus its checkpoint. It reads like a StoreReader and is written
// only through Batch.Commit, which moves data and checkpoint together.
// A store has one writer (the task that owns the replica); readers may be
// many.
type Store struct {
	StoreReader
}

// ID returns the store's id.
func (s *StoreReader) ID() StoreID { return s.id }

// keyBufs holds scratch buffers for building full keys on the read path.
var keyBufs = sync.Pool{New: func() any { b := make([]byte, 0, 128); return &b }}

// Get returns a copy of the value of key, and whether it exists. It
// reads Pebble, never the row cache (see Lookup).
func (s *StoreReader) Get(key []byte) (value []byte, ok bool, err error) {
	if s.db.closed.Load() {
		return nil, false, ErrClosed
	}
	if err := s.db.health.err(); err != nil {
		return nil, false, err
	}
	bp := keyBufs.Get().(*[]byte)
	k := append(append((*bp)[:0], s.prefix...), key...)
	v, closer, err := s.r.Get(k)
	*bp = k[:0]
	keyBufs.Put(bp)
	if err == pebble.ErrNotFound {
		// Pebble returns the sentinel itself: a miss, the common case
		// of many callers, skips the corruption check's unwrapping.
		return nil, false, nil
	}
	err = s.db.health.readErr(err)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("materialize: get from store %s: %w", s.id, err)
	}
	value = bytes.Clone(v)
	_ = closer.Close()
	return value, true, nil
}

// Has reports whether key has a value: Get without the copy.
func (s *StoreReader) Has(key []byte) (bool, error) {
	if s.db.closed.Load() {
		return false, ErrClosed
	}
	if err := s.db.health.err(); err != nil {
		return false, err
	}
	bp := keyBufs.Get().(*[]byte)
	k := append(append((*bp)[:0], s.prefix...), key...)
	_, closer, err := s.r.Get(k)
	*bp = k[:0]
	keyBufs.Put(bp)
	if err == nil {
		return true, closer.Close()
	}
	if err == pebble.ErrNotFound {
		return false, nil
	}
	if err = s.db.health.readErr(err); errors.Is(err, pebble.ErrNotFound) {
		return false, nil
	}
	return false, fmt.Errorf("materialize: get from store %s: %w", s.id, err)
}

// Checkpoint returns the store's checkpoint: the zero Checkpoint when the
// store has never been committed to. It is consistent with the data that
// reads return at the same time only through a Snapshot; on a live store,
// read the checkpoint first: the data is then at least as new.
func (s *StoreReader) Checkpoint() (Checkpoint, error) {
	if s.db.closed.Load() {
		return Checkpoint{}, ErrClosed
	}
	if err := s.db.health.err(); err != nil {
		return Checkpoint{}, err
	}
	v, closer, err := s.r.Get(s.cpKey)
	err = s.db.health.readErr(err)
	if errors.Is(err, pebble.ErrNotFound) {
		return Checkpoint{}, nil
	}
	if err != nil {
		return Checkpoint{}, fmt.Errorf("materialize: reading checkpoint of store %s: %w", s.id, err)
	}
	defer closer.Close()
	cp, err := decodeCheckpoint(v)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("%w: checkpoint of store %s: %w; drop the store to restore it from the changelog", ErrCorrupt, s.id, err)
	}
	return cp, nil
}

// NewIter returns an iterator over the store's keys in [lower, upper),
// in byte order. A nil lower starts at the store's first key; a nil upper
// runs to its end. The iterator is unpositioned: call First, Last, SeekGE
// or SeekLT. Close it before closing the DB.
func (s *StoreReader) NewIter(lower, upper []byte) (*Iter, error) {
	if s.db.closed.Load() {
		return nil, ErrClosed
	}
	if err := s.db.health.err(); err != nil {
		return nil, err
	}
	lo := append(append(make([]byte, 0, len(s.prefix)+len(lower)), s.prefix...), lower...)
	var hi []byte
	if upper == nil {
		hi = PrefixEnd(s.prefix)
	} else {
		hi = append(append(make([]byte, 0, len(s.prefix)+len(upper)), s.prefix...), upper...)
	}
	it, err := s.r.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return nil, fmt.Errorf("materialize: iterating store %s: %w", s.id, s.db.health.readErr(err))
	}
	return &Iter{it: it, h: s.db.health, id: s.id, prefix: s.prefix}, nil
}

// Iter iterates over a key range of one store. Key and Value are valid
// until the next call that moves the iterator. Not safe for concurrent
// use.
type Iter struct {
	it     *pebble.Iterator
	h      *health
	id     StoreID
	prefix []byte
	seek   []byte // scratch for seek keys
	err    error  // first value error
}

// First moves to the first key in range and reports whether there is one.
func (i *Iter) First() bool { return i.it.First() }

// Last moves to the last key in range and reports whether there is one.
func (i *Iter) Last() bool { return i.it.Last() }

// Next moves to the next key and reports whether there is one.
func (i *Iter) Next() bool { return i.it.Next() }

// Prev moves to the previous key and reports whether there is one.
func (i *Iter) Prev() bool { return i.it.Prev() }

// SeekGE moves to the first key >= key (clamped to the range).
func (i *Iter) SeekGE(key []byte) bool {
	i.seek = append(append(i.seek[:0], i.prefix...), key...)
	return i.it.SeekGE(i.seek)
}

// SeekLT moves to the last key < key (clamped to the range).
func (i *Iter) SeekLT(key []byte) bool {
	i.seek = append(append(i.seek[:0], i.prefix...), key...)
	return i.it.SeekLT(i.seek)
}

// Valid reports whether the iterator is at a key.
func (i *Iter) Valid() bool { return i.it.Valid() }

// Key returns the current key, without the store prefix.
func (i *Iter) Key() []byte { return i.it.Key()[len(i.prefix):] }

// Value returns the current value. On a read error it returns nil and the
// error is reported by Error and Close.
func (i *Iter) Value() []byte {
	v, err := i.it.ValueAndErr()
	if err != nil && i.err == nil {
		i.err = err
	}
	return v
}

// Error returns the first error the iterator met, if any. An iterator
// that stops being Valid because of an error, rather than the end of the
// range, reports it here.
func (i *Iter) Error() error {
	err := i.err
	if err == nil {
		err = i.it.Error()
	}
	if err != nil {
		return fmt.Errorf("materialize: iterating store %s: %w", i.id, i.h.readErr(err))
	}
	return nil
}

// Close releases the iterator and returns its first error.
func (i *Iter) Close() error {
	err := i.err
	if cerr := i.it.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("materialize: iterating store %s: %w", i.id, i.h.readErr(err))
	}
	return nil
}
