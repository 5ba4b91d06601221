package materialize

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/internal/poll"
)

// writeFlushed writes n keys into store id of a new DB in dir, flushes
// them to an sstable, as many times as rounds (overlapping tables, which
// a compaction must read), and closes the DB; it returns the sstables.
func writeFlushed(t *testing.T, dir string, id StoreID, n, rounds int) []string {
	t.Helper()
	db := openTest(t, dir)
	s := db.Store(id)
	for r := 0; r < rounds; r++ {
		b := s.NewBatch()
		for i := 0; i < n; i++ {
			b.Set([]byte(fmt.Sprintf("k%06d", i)), []byte(fmt.Sprintf("value %d of key %06d, long enough to fill blocks", r, i)))
		}
		if err := b.Commit(Checkpoint{ChangelogOffset: int64((r + 1) * n)}); err != nil {
			t.Fatal(err)
		}
		if err := db.pdb.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	ssts, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
	if len(ssts) == 0 {
		t.Fatal("no sstable after a flush")
	}
	return ssts
}

// flip flips n bytes in the middle of the file at path.
func flip(t *testing.T, path string, n int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	mid := len(b)/2 - n/2
	for i := mid; i < mid+n; i++ {
		b[i] ^= 0xff
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCorruptSSTable flips bytes in the middle of a store's sstable and
// reads the store: the reads fail with ErrCorrupt naming the store and
// the file, nothing panics, and the DB is marked failed.
func TestCorruptSSTable(t *testing.T) {
	dir := t.TempDir()
	id := StoreID{"orders_by_region_3", 0}
	for _, f := range writeFlushed(t, dir, id, 20000, 1) {
		flip(t, f, 16)
	}
	db, err := Open(Options{Dir: dir, Logger: quietLogger()})
	if err != nil {
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("Open of a store with a corrupt sstable: %v, want nil or ErrCorrupt", err)
		}
		t.Logf("open: %v", err)
		return
	}
	defer db.Close()
	s := db.Store(id)
	var readErr error
	for i := 0; i < 20000 && readErr == nil; i += 97 {
		_, _, readErr = s.Get([]byte(fmt.Sprintf("k%06d", i)))
	}
	if readErr == nil {
		it, err := s.NewIter(nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		for valid := it.First(); valid; valid = it.Next() {
			_ = it.Value()
		}
		readErr = it.Close()
	}
	t.Logf("read: %v", readErr)
	checkCorrupt(t, readErr, dir)

	// The DB is failed: every read and commit reports the damage, even
	// of a store the damaged file does not hold.
	other := db.Store(StoreID{"other", 1})
	if _, _, err := other.Get([]byte("k")); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Get of another store after the damage: %v, want ErrCorrupt", err)
	}
	if _, _, err := s.Lookup([]byte("k000001")); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Lookup after the damage: %v, want ErrCorrupt", err)
	}
	b := other.NewBatch()
	b.Set([]byte("k"), []byte("v"))
	if err := b.Commit(Checkpoint{ChangelogOffset: 1}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Commit after the damage: %v, want ErrCorrupt", err)
	}
	if err := db.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	checkReopenRefused(t, dir)
}

// TestCorruptSSTableCompaction damages an sstable and lets Pebble's
// background compactions meet it: Pebble's default reports the damage
// through Fatalf, which killed the process (and, restarted, it compacted
// the same file again). Now the compaction fails, the DB is failed, and
// nothing panics.
func TestCorruptSSTableCompaction(t *testing.T) {
	dir := t.TempDir()
	id := StoreID{"v_7", 2}
	for _, f := range writeFlushed(t, dir, id, 20000, 1) {
		flip(t, f, 16)
	}
	db, err := Open(Options{Dir: dir, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	meetDamage(t, db, id)
	t.Logf("failed by: %v", db.health.err())
	_, _, err = db.Store(id).Get([]byte("k000001"))
	checkCorrupt(t, err, dir)
	_ = db.Close()
	checkReopenRefused(t, dir)
}

// meetDamage flushes new tables over the keys of store id, as a task's
// writes would, until Pebble compacts them in the background with the
// damaged one and meets the damage, failing the DB.
func meetDamage(t *testing.T, db *DB, id StoreID) {
	t.Helper()
	r := 0
	poll.Until(t, 30*time.Second, func() error {
		if db.health.err() != nil {
			return nil
		}
		if r < 8 {
			flushOver(t, db, id, r)
			r++
		}
		return errors.New("no compaction met the damaged sstable")
	})
}

// flushOver writes a tenth of the keys of writeFlushed into store id,
// straight to Pebble (a failed DB refuses commits), and flushes them to
// a new L0 table.
func flushOver(t *testing.T, db *DB, id StoreID, r int) {
	t.Helper()
	b := db.pdb.NewBatch()
	for i := r % 10; i < 20000; i += 10 {
		_ = b.Set(append(appendStorePrefix(nil, nsData, id), fmt.Sprintf("k%06d", i)...), []byte("new"), nil)
	}
	if err := b.Commit(nil); err != nil {
		t.Fatal(err)
	}
	if err := db.pdb.Flush(); err != nil {
		t.Fatal(err)
	}
}

// TestCorruptCompactionNotRetried: once the DB has recorded damage,
// Pebble starts no more compactions. Before, it retried the compaction
// that met the damaged file, about a hundred times a second, each
// reading the tables again, until the DB was closed. Each flush of a
// new table over the damaged one is a chance Pebble takes to schedule a
// compaction (L0 holds more tables than its compaction threshold); the
// test gives it ten, waits until no compaction runs, and counts the
// compactions begun since the damage was recorded: at most the one or
// two already granted then.
func TestCorruptCompactionNotRetried(t *testing.T) {
	dir := t.TempDir()
	id := StoreID{"v_7", 2}
	for _, f := range writeFlushed(t, dir, id, 20000, 1) {
		flip(t, f, 16)
	}
	var begun atomic.Int64
	db, err := Open(Options{Dir: dir, Logger: quietLogger(), tune: func(o *pebble.Options) {
		l := pebble.TeeEventListener(*o.EventListener, pebble.EventListener{
			CompactionBegin: func(pebble.CompactionInfo) { begun.Add(1) },
		})
		o.EventListener = &l
		// The flushes below pile tables up in L0 that no compaction
		// takes away: Pebble must not stall them.
		o.L0StopWritesThreshold = 1000
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	meetDamage(t, db, id)
	atDamage := begun.Load()
	for r := 0; r < 10; r++ {
		flushOver(t, db, id, r)
	}
	poll.Until(t, 10*time.Second, func() error {
		if n := begun.Load() - atDamage; n >= 5 {
			t.Fatalf("%d compactions begun after the DB recorded the damage, want at most the ones already granted", n)
		}
		if db.pdb.Metrics().Compact.NumInProgress > 0 {
			return fmt.Errorf("compactions still running after the damage; %d begun since it was recorded", begun.Load()-atDamage)
		}
		return nil
	})
	if n := begun.Load() - atDamage; n >= 5 {
		t.Fatalf("%d compactions begun after the DB recorded the damage, want at most the ones already granted", n)
	}
	t.Logf("%d compactions begun after the damage (%d before)", begun.Load()-atDamage, atDamage)
}

// checkCorrupt checks err is the damage of the DB in dir: ErrCorrupt
// with the remedy, and XX001 with a short message for a client.
func checkCorrupt(t *testing.T, err error, dir string) {
	t.Helper()
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "move") || !strings.Contains(err.Error(), ".sst") {
		t.Fatalf("read of a corrupt sstable: %v, want ErrCorrupt naming the file and the remedy", err)
	}
	pe, ok := pgerr.As(err)
	if !ok || pe.Code != pgerr.DataCorrupted {
		t.Fatalf("read of a corrupt sstable: SQLSTATE %v, want XX001", pgerr.CodeOf(err))
	}
	if len(pe.Message) > 200 || strings.Contains(pe.Message, dir) || strings.Contains(pe.Message, "goroutine") {
		t.Fatalf("client message %q: want a short one, without paths or stacks", pe.Message)
	}
}

// checkReopenRefused checks a DB found damaged is not served again.
func checkReopenRefused(t *testing.T, dir string) {
	t.Helper()
	db, err := Open(Options{Dir: dir, Logger: quietLogger()})
	if err == nil {
		_ = db.Close()
		t.Fatal("a DB found damaged opened again")
	}
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "move") {
		t.Fatalf("reopen: %v, want ErrCorrupt with the remedy", err)
	}
	t.Logf("reopen: %v", err)
}
