package materialize

import (
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// NewBatch starts a batch of writes to the store. Nothing is visible until
// Commit, which writes the batch and a new checkpoint atomically.
func (s *Store) NewBatch() *Batch {
	return &Batch{s: s, b: s.db.pdb.NewBatch()}
}

// Batch collects writes to one store. It is not safe for concurrent use.
// Exactly one of Commit or Close ends it; using it afterwards panics (a
// pebble batch is recycled once closed).
type Batch struct {
	s   *Store
	b   *pebble.Batch // nil once ended
	ops int
	// ranged is set once the batch holds a range deletion, which the row
	// cache cannot invalidate key by key.
	ranged bool
}

var errBatchEnded = errors.New("materialize: batch already committed or closed")

func (b *Batch) live() *pebble.Batch {
	if b.b == nil {
		panic(errBatchEnded)
	}
	return b.b
}

// Set sets key to value. Both are copied.
func (b *Batch) Set(key, value []byte) {
	p := b.s.prefix
	op := b.live().SetDeferred(len(p)+len(key), len(value))
	copy(op.Key, p)
	copy(op.Key[len(p):], key)
	copy(op.Value, value)
	_ = op.Finish() // only fails for indexed batches
	b.ops++
}

// Delete deletes key (a no-op if it does not exist).
func (b *Batch) Delete(key []byte) {
	p := b.s.prefix
	op := b.live().DeleteDeferred(len(p) + len(key))
	copy(op.Key, p)
	copy(op.Key[len(p):], key)
	_ = op.Finish()
	b.ops++
}

// DeleteRange deletes the store's keys in [lower, upper); nil bounds are
// the store's start and end, so DeleteRange(nil, nil) clears the store
// (a restore that must start over commits that with the zero Checkpoint).
func (b *Batch) DeleteRange(lower, upper []byte) {
	p := b.s.prefix
	lo := append(append([]byte(nil), p...), lower...)
	var hi []byte
	if upper == nil {
		hi = PrefixEnd(p)
	} else {
		hi = append(append([]byte(nil), p...), upper...)
	}
	_ = b.live().DeleteRange(lo, hi, nil) // only fails for indexed batches
	b.ops++
	b.ranged = true
}

// Len returns the number of writes in the batch.
func (b *Batch) Len() int { return b.ops }

// Size returns the size in bytes of the batch's encoded writes, for
// bounding memory.
func (b *Batch) Size() int { return b.live().Len() }

// Commit writes the batch and cp as the store's checkpoint in one atomic
// Pebble batch, durably unless Options.NoSync: after a crash the store has
// either all of it or none of it. This is the invariant the engine rests
// on: a store's data is always exactly the changelog prefix its checkpoint
// names. A batch with no writes just moves the checkpoint (e.g. position
// markers that changed no row). The batch ends whether or not Commit
// succeeds.
func (b *Batch) Commit(cp Checkpoint) error {
	return b.commit(cp, b.s.db.wo)
}

// CommitNoSync is Commit without waiting for the write to reach the
// disk: after a crash the store holds some prefix of the batches
// committed (Pebble's write-ahead log is ordered), each with its own
// checkpoint, so whatever survives is still exactly the changelog prefix
// its checkpoint names; only how much must be replayed again differs.
// Restores use it for every batch but the last, which is the same data
// written with one fsync instead of one per batch.
func (b *Batch) CommitNoSync(cp Checkpoint) error {
	return b.commit(cp, pebble.NoSync)
}

func (b *Batch) commit(cp Checkpoint, wo *pebble.WriteOptions) error {
	if b.b == nil {
		return errBatchEnded
	}
	pb := b.b
	b.b = nil
	defer pb.Close()
	if b.s.db.closed.Load() {
		return ErrClosed
	}
	if err := b.s.db.health.writeErr(); err != nil {
		return err
	}
	if st := b.s.cache; st != nil {
		// Invalidate before the data becomes visible, and let no Lookup
		// fill the store until it is (see rowCache).
		st.gate.enter()
		defer st.gate.exit()
		b.s.db.rows.invalidateBatch(st, pb, b.ops, b.ranged)
	}
	enc := encodeCheckpoint(make([]byte, 0, 64), cp)
	if err := pb.Set(b.s.cpKey, enc, nil); err != nil {
		return fmt.Errorf("materialize: commit to store %s: %w", b.s.id, err)
	}
	if err := b.s.db.apply(pb, wo); err != nil {
		return fmt.Errorf("materialize: commit to store %s at changelog offset %d: %w", b.s.id, cp.ChangelogOffset, err)
	}
	return nil
}

// Close discards the batch if it was not committed. It is safe to call
// after Commit, so `defer b.Close()` is the idiom.
func (b *Batch) Close() {
	if b.b != nil {
		_ = b.b.Close()
		b.b = nil
	}
}
