package materialize

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
)

// DB is the one Pebble database of a node, holding every view partition
// ("store") the node replicates, as disjoint key ranges. It is safe for
// concurrent use. Close it only after every Store user (tasks, queries,
// iterators, snapshots) is done with it: the owner joins its tasks first.
type DB struct {
	opts Options
	dir  string // absolute, symlinks resolved
	log  *slog.Logger
	pdb  *pebble.DB
	// stalls counts the store's write stalls (storagestats.go).
	stalls *writeStalls
	// popts are the options pdb was opened with, defaults filled in (a
	// Loader writes sstables with them).
	popts *pebble.Options
	lock  *pebble.Lock
	// wo is the write options of every commit: Sync unless Options.NoSync.
	wo *pebble.WriteOptions
	// rows is the row cache; nil when Options.RowCacheSize is 0.
	rows *rowCache
	// scans is the scan cache; nil when Options.ScanCacheSize or
	// RowCacheSize is 0.
	scans  *scanCache
	closed atomic.Bool
	// health fails the DB when Pebble finds damage (corrupt.go) or its
	// disk full (diskfull.go).
	health *health
	// writeMu makes checking health.writeErr and entering Pebble's
	// commit pipeline one step for every write (see apply).
	writeMu sync.Mutex
}

// Open opens, creating if needed, the database in opts.Dir. The errors it
// returns say what is wrong with the directory and what to do: ErrLocked
// when another process (or another DB in this process) has it open,
// ErrCorrupt when Pebble finds corruption, ErrIncompatible when it holds
// another storage format.
func Open(opts Options) (*DB, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts.ensureDefaults()
	dir, err := prepareDir(opts.Dir)
	if err != nil {
		return nil, err
	}
	log := opts.Logger.With("component", "materialize", "dir", dir)

	// Take Pebble's directory lock ourselves rather than inside
	// pebble.Open, so that a lock failure is recognizable as one. The path
	// is absolute and resolved: Pebble's in-process lock table is keyed by
	// path, and POSIX locks do not conflict within one process, so two
	// spellings of one directory would otherwise both succeed.
	lock, err := pebble.LockDirectory(dir, opts.fs)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("materialize: cannot create the lock file in %q: %w; check the directory's permissions", dir, err)
		}
		return nil, fmt.Errorf("%w: %q is open in another basin process or another DB of this process (%v); stop it or use another data directory", ErrLocked, dir, err)
	}

	// A directory this DB found damaged before is not served again.
	if err := checkMarker(dir); err != nil {
		_ = lock.Close()
		return nil, err
	}
	h := &health{dir: dir, log: log}
	stalls := &writeStalls{}

	cache := pebble.NewCache(opts.CacheSize)
	defer cache.Unref() // the DB holds its own reference
	popts := &pebble.Options{
		Cache:              cache,
		Lock:               lock,
		Logger:             pebbleLogger{log, h},
		FormatMajorVersion: pebble.FormatNewest,
		// Damage found by a read or a compaction fails the DB instead
		// of Pebble's default, a Fatalf (corrupt.go).
		// Write stalls are counted for the metrics (storagestats.go).
		EventListener: &pebble.EventListener{DataCorruption: h.onCorruption, BackgroundError: h.onBackgroundError,
			WriteStallBegin: stalls.begin, WriteStallEnd: stalls.end},
	}
	// Bloom filters on every level (later levels inherit L0's): a key
	// lookup then reads only the sstables that may hold its key instead
	// of every overlapping one, which matters while views are loading and
	// L0 holds many small files.
	popts.Levels[0].FilterPolicy = bloom.FilterPolicy(10)
	// Memtables of 32 MiB rather than Pebble's 4 MiB: a view taking in
	// its input or a restore writes tens of MiB a second, and each flush
	// of a small memtable is another L0 file to compact. The first
	// memtable starts small and doubles, so an idle store stays small.
	popts.MemTableSize = memTableSize
	// Writes that find the disk full fail the DB's writes (diskfull.go);
	// a failed DB starts no compactions (scheduler.go).
	popts.FS = fullFS{FS: opts.fs, h: h}
	popts.Experimental.CompactionScheduler = newScheduler(h)
	if opts.tune != nil {
		opts.tune(popts)
	}
	popts.EnsureDefaults()
	// A Loader's table left by a crash before its ingestion.
	if left, err := filepath.Glob(filepath.Join(dir, "load-*.sst")); err == nil {
		for _, f := range left {
			_ = os.Remove(f)
		}
	}
	pdb, err := pebble.Open(dir, popts)
	if err != nil {
		_ = lock.Close()
		if pebble.IsCorruptionError(err) {
			return nil, fmt.Errorf("%w: the view store in %q is damaged (%v); move the directory aside and restart: views are restored from their changelogs", ErrCorrupt, dir, err)
		}
		if _, full := diskFullErrno(err); full {
			return nil, fmt.Errorf("materialize: cannot open the view store in %q: %w; free space on its file system and start again", dir, err)
		}
		return nil, fmt.Errorf("materialize: cannot open the view store in %q: %w; if the directory is damaged, move it aside and restart: views are restored from their changelogs", dir, err)
	}
	db := &DB{opts: opts, dir: dir, log: log, pdb: pdb, popts: popts, lock: lock, wo: pebble.Sync, health: h, stalls: stalls}
	if opts.NoSync {
		db.wo = pebble.NoSync
	}
	if opts.RowCacheSize > 0 {
		db.rows = newRowCache(opts.RowCacheSize)
		if opts.ScanCacheSize > 0 {
			db.scans = newScanCache(opts.ScanCacheSize)
		}
	}
	if err := db.checkFormat(); err != nil {
		_ = pdb.Close()
		_ = lock.Close()
		return nil, err
	}
	log.Debug("opened view store", "cache_size", opts.CacheSize, "row_cache_size", opts.RowCacheSize, "sync", !opts.NoSync)
	return db, nil
}

// memTableSize is the size of a full Pebble memtable.
const memTableSize = 32 << 20

// prepareDir creates dir and returns its absolute, symlink-free path.
func prepareDir(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("materialize: cannot create the view store directory %q: %w; check the path and its permissions or choose another data directory", dir, err)
	}
	abs, err := filepath.Abs(dir)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return "", fmt.Errorf("materialize: cannot resolve the view store directory %q: %w", dir, err)
	}
	return abs, nil
}

// checkFormat stamps a new database with formatVersion and refuses one
// stamped with another.
func (db *DB) checkFormat() error {
	v, closer, err := db.pdb.Get(formatKey)
	err = db.health.readErr(err)
	switch {
	case errors.Is(err, ErrCorrupt):
		return err
	case errors.Is(err, pebble.ErrNotFound):
		err := db.pdb.Set(formatKey, []byte(formatVersion), pebble.Sync)
		if err == nil {
			err = db.health.writeErr() // a failed log write is reported through Fatalf
		}
		if err != nil {
			return fmt.Errorf("materialize: cannot write the storage format to %q: %w", db.dir, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("materialize: cannot read the storage format of %q: %w", db.dir, err)
	}
	got := string(v)
	_ = closer.Close()
	if got != formatVersion {
		return fmt.Errorf("%w: %q holds storage format %q, this basin reads %q; use the basin version that wrote it, or move the directory aside to restore views from their changelogs", ErrIncompatible, db.dir, got, formatVersion)
	}
	return nil
}

// Dir returns the absolute path of the database directory.
func (db *DB) Dir() string { return db.dir }

// Close closes the database and releases the directory. Every commit is
// already in the WAL, so there is nothing to flush. Iterators or snapshots
// still open are reported as an error; the DB is closed regardless.
func (db *DB) Close() error {
	if !db.closed.CompareAndSwap(false, true) {
		return ErrClosed
	}
	err := db.pdb.Close()
	if lerr := db.lock.Close(); err == nil {
		err = lerr
	}
	if err != nil {
		return fmt.Errorf("materialize: closing %q: %w", db.dir, err)
	}
	return nil
}

// Store returns a handle on the store of id. It is cheap (no I/O) and the
// store need not exist: an empty store has no keys and the zero
// Checkpoint.
func (db *DB) Store(id StoreID) *Store {
	s := &Store{StoreReader: db.reader(db.pdb, id)}
	if db.rows != nil {
		s.cache = db.rows.store(id)
	}
	return s
}

func (db *DB) reader(r pebble.Reader, id StoreID) StoreReader {
	return StoreReader{
		db:     db,
		r:      r,
		id:     id,
		prefix: appendStorePrefix(nil, nsData, id),
		cpKey:  appendStorePrefix(nil, nsCheckpoint, id),
	}
}

// Stores returns the stores that have data or a checkpoint on disk, sorted
// by view then partition. A node calls it at startup to report what it
// holds (and what it may resume instead of restoring).
func (db *DB) Stores() ([]StoreID, error) {
	if db.closed.Load() {
		return nil, ErrClosed
	}
	if err := db.health.err(); err != nil {
		return nil, err
	}
	seen := make(map[StoreID]struct{})
	for _, ns := range []byte{nsCheckpoint, nsData} {
		it, err := db.pdb.NewIter(&pebble.IterOptions{LowerBound: []byte{ns}, UpperBound: []byte{ns + 1}})
		if err != nil {
			return nil, fmt.Errorf("materialize: listing stores: %w", err)
		}
		for valid := it.First(); valid; {
			_, id, _, err := parseStoreKey(it.Key())
			if err != nil {
				_ = it.Close()
				return nil, fmt.Errorf("listing stores: %w", err)
			}
			seen[id] = struct{}{}
			// Skip the rest of this store's keys.
			valid = it.SeekGE(PrefixEnd(appendStorePrefix(nil, ns, id)))
		}
		if err := db.health.readErr(it.Close()); err != nil {
			return nil, fmt.Errorf("materialize: listing stores: %w", err)
		}
	}
	ids := make([]StoreID, 0, len(seen))
	for id := range seen {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, compareStoreIDs)
	return ids, nil
}

func compareStoreIDs(a, b StoreID) int {
	return cmp.Or(strings.Compare(a.View, b.View), cmp.Compare(a.Partition, b.Partition))
}

// DropView deletes the data and checkpoints of every partition of view, in
// one durable batch (range deletions: O(1) to write, the space comes back
// as Pebble compacts).
func (db *DB) DropView(view string) error {
	return db.dropRanges("view "+view, func(id StoreID) bool { return id.View == view },
		appendViewPrefix(nil, nsData, view), appendViewPrefix(nil, nsCheckpoint, view))
}

// DropStore deletes the data and checkpoint of one store, e.g. when the
// node is no longer assigned any replica of that partition.
func (db *DB) DropStore(id StoreID) error {
	return db.dropRanges("store "+id.String(), func(s StoreID) bool { return s == id },
		appendStorePrefix(nil, nsData, id), appendStorePrefix(nil, nsCheckpoint, id))
}

// dropRanges deletes the ranges of prefixes, which hold the stores that
// match, in one batch.
func (db *DB) dropRanges(what string, match func(StoreID) bool, prefixes ...[]byte) error {
	if db.closed.Load() {
		return ErrClosed
	}
	if c := db.rows; c != nil {
		c.drops.enter()
		defer c.drops.exit() // after the commit
		c.invalidateDropped(match)
	}
	b := db.pdb.NewBatch()
	defer b.Close()
	for _, p := range prefixes {
		if err := b.DeleteRange(p, PrefixEnd(p), nil); err != nil {
			return fmt.Errorf("materialize: dropping %s: %w", what, err)
		}
	}
	if err := db.apply(b, pebble.Sync); err != nil {
		return fmt.Errorf("materialize: dropping %s: %w", what, err)
	}
	db.log.Info("dropped", "what", what)
	return nil
}

// apply commits pb, durably if wo.Sync, unless the DB's writes have
// failed (health.writeErr), whose error it then returns.
//
// The check and the entry into Pebble's commit pipeline are one step,
// under writeMu. After a write to its log fails, Pebble panics on the
// next record that reaches the log writer once that writer has taken
// the failure in (its error is sticky), and the write's error reaches
// Pebble only after fullFS has recorded it. So a write that passes the
// check under writeMu, after the previous one entered the pipeline,
// never meets a failed log writer. The fsync is waited for outside
// writeMu (ApplyNoSyncWait, SyncWait): concurrent commits still share
// one.
//
// Pebble reports a failed log write of a commit it waited for through
// Fatalf, and returns nil; SyncWait returns it. Either way the commit
// then fails with the DB's failure. A commit that raced with another's
// failure may be reported failed though it is in the log: that is
// safe, its writer retries from the checkpoint it reads.
func (db *DB) apply(pb *pebble.Batch, wo *pebble.WriteOptions) error {
	db.writeMu.Lock()
	err := db.health.writeErr()
	if err == nil {
		if wo.Sync {
			err = db.pdb.ApplyNoSyncWait(pb, wo)
		} else {
			err = db.pdb.Apply(pb, wo)
		}
	}
	db.writeMu.Unlock()
	if err == nil && wo.Sync {
		err = pb.SyncWait()
	}
	if ferr := db.health.writeErr(); ferr != nil {
		return ferr
	}
	return err
}

// NewSnapshot returns a consistent, read-only view of every store as of
// now: reads through it see no commit made after it was taken. Close it
// when done; an open snapshot pins old data in Pebble.
func (db *DB) NewSnapshot() (*Snapshot, error) {
	if db.closed.Load() {
		return nil, ErrClosed
	}
	return &Snapshot{db: db, snap: db.pdb.NewSnapshot()}, nil
}

// Snapshot is a point-in-time view of the DB; see DB.NewSnapshot.
type Snapshot struct {
	db   *DB
	snap *pebble.Snapshot
}

// Store returns a read-only handle on store id as of the snapshot. Its
// data and Checkpoint are mutually consistent, as they are on disk.
func (s *Snapshot) Store(id StoreID) *StoreReader {
	r := s.db.reader(s.snap, id)
	return &r
}

// Close releases the snapshot.
func (s *Snapshot) Close() error {
	if err := s.snap.Close(); err != nil {
		return fmt.Errorf("materialize: closing snapshot: %w", err)
	}
	return nil
}

// pebbleLogger sends Pebble's log lines to slog. Pebble's info lines (WAL
// replay, and so on) are debug detail for a basin operator.
type pebbleLogger struct {
	l *slog.Logger
	h *health
}

func (p pebbleLogger) Infof(format string, args ...any) {
	p.l.Debug("pebble: " + fmt.Sprintf(format, args...))
}

func (p pebbleLogger) Errorf(format string, args ...any) {
	p.l.Error("pebble: " + fmt.Sprintf(format, args...))
}

// Fatalf is called by Pebble on a broken invariant, by default on
// corruption (the DB's event listener handles that instead), and on a
// failed write of its log or manifest. Pebble expects it not to return;
// exiting, though, would only restart the node into the same failure, a
// crash loop. So it fails the DB, which every read and commit then
// reports, and returns. A write that found the disk full is no damage:
// it fails the DB's writes (diskfull.go), and leaves no marker.
func (p pebbleLogger) Fatalf(format string, args ...any) {
	msg := "pebble: " + fmt.Sprintf(format, args...)
	if n, ok := diskFullErrno(errors.New(msg)); ok || p.h.full.Load() != nil {
		if !ok {
			n = p.h.full.Load().Errno
		}
		p.l.Error(msg)
		p.h.recordFull(&DiskFullError{Dir: p.h.dir, Op: "write", Errno: n})
		return
	}
	p.h.record(&CorruptError{Dir: p.h.dir, Detail: oneLine(errors.New(msg))})
}

// Dump writes a human-readable listing of the stores of view ("" for
// every view) to w, as of one snapshot: each store's checkpoint, then up
// to limit of its rows (limit <= 0: all), keys and values decoded when
// they are in the key and row encodings. It is for debugging a running
// node (the status page) and tests; it reads the whole store when limit
// is 0.
func (db *DB) Dump(w io.Writer, view string, limit int) error {
	ids, err := db.Stores()
	if err != nil {
		return err
	}
	snap, err := db.NewSnapshot()
	if err != nil {
		return err
	}
	defer snap.Close()
	for _, id := range ids {
		if view != "" && id.View != view {
			continue
		}
		r := snap.Store(id)
		cp, err := r.Checkpoint()
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "store %s: %s\n", id, cp)
		it, err := r.NewIter(nil, nil)
		if err != nil {
			return err
		}
		n := 0
		for valid := it.First(); valid; valid = it.Next() {
			if limit > 0 && n == limit {
				fmt.Fprintf(w, "  ...\n")
				break
			}
			fmt.Fprintf(w, "  %s = %s\n", formatUserKey(it.Key()), formatRow(it.Value()))
			n++
		}
		if err := it.Close(); err != nil {
			return err
		}
	}
	return nil
}
