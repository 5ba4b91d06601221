package materialize

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/basindb/basin/internal/pgerr"
)

// fillableFS is the OS's file system, whose writes fail with ENOSPC
// while full is set, as a full disk's do (creating, renaming and
// removing files still work, as they mostly do on one).
func fillableFS(full *atomic.Bool) vfs.FS {
	return errorfs.Wrap(vfs.Default, errorfs.InjectorFunc(func(op errorfs.Op) error {
		if !full.Load() {
			return nil
		}
		switch op.Kind {
		case errorfs.OpFileWrite, errorfs.OpFileWriteAt, errorfs.OpFilePreallocate:
			return &fs.PathError{Op: "write", Path: op.Path, Err: syscall.ENOSPC}
		}
		return nil
	}))
}

// TestDiskFullCommit fills the disk under a DB between commits. Pebble
// reports the failed write-ahead log write through Fatalf and returns
// success from the commit, and panics on the next commit that reaches
// the broken log; before, the DB took that Fatalf for damage: the
// commit that failed returned nil, the next ones XX001, and the marker
// kept the node from starting again. Now the commit that finds the disk
// full, and every later one, fails with 53100 naming the directory;
// reads go on; no marker is left; and once space is back, the DB opened
// again has every commit that succeeded and takes new ones.
func TestDiskFullCommit(t *testing.T) {
	for _, sync := range []bool{true, false} {
		t.Run(fmt.Sprintf("sync=%v", sync), func(t *testing.T) { testDiskFullCommit(t, sync) })
	}
}

func testDiskFullCommit(t *testing.T, sync bool) {
	dir := t.TempDir()
	var full atomic.Bool
	var bgErrors atomic.Int64
	opts := Options{Dir: dir, Logger: quietLogger(), fs: fillableFS(&full), tune: func(o *pebble.Options) {
		l := pebble.TeeEventListener(*o.EventListener, pebble.EventListener{
			BackgroundError: func(error) { bgErrors.Add(1) },
		})
		o.EventListener = &l
	}}
	db, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	id := StoreID{"orders_by_region", 3}
	s := db.Store(id)
	commitAs := func(i int, sync bool) error {
		b := s.NewBatch()
		b.Set([]byte(fmt.Sprintf("k%04d", i)), []byte(strings.Repeat("v", 1000)))
		if sync {
			return b.Commit(Checkpoint{ChangelogOffset: int64(i + 1)})
		}
		return b.CommitNoSync(Checkpoint{ChangelogOffset: int64(i + 1)})
	}
	commit := func(i int) error { return commitAs(i, sync) }
	for i := 0; i < 50; i++ {
		// The last one synced: every commit before is durable then.
		if err := commitAs(i, sync || i == 49); err != nil {
			t.Fatal(err)
		}
	}

	// The disk fills. A commit without fsync may still succeed (its
	// write to the log is not waited for, and the log's writer may not
	// have tried it yet: CommitNoSync's commits may be lost in a crash);
	// a synced commit waits for the writer, and fails.
	full.Store(true)
	next := 50
	for ; err == nil && next < 55; next++ {
		err = commit(next)
	}
	if err == nil {
		err = commitAs(next, true)
		next++
	}
	acked := next - 1 // commits that returned nil
	t.Logf("commit on a full disk: %v", err)
	checkDiskFull(t, err, dir)
	for i := 0; i < 3; i++ {
		checkDiskFull(t, commit(acked+1+i), dir)
	}
	if err := db.DropStore(id); !errors.Is(err, ErrDiskFull) {
		t.Errorf("DropStore on a full disk: %v, want ErrDiskFull", err)
	}
	l := s.NewLoader()
	l.Set([]byte("x"), []byte("y"))
	if err := l.Flush(Checkpoint{}); !errors.Is(err, ErrDiskFull) {
		t.Errorf("Loader.Flush on a full disk: %v, want ErrDiskFull", err)
	}
	// Reads go on.
	if v, ok, err := s.Get([]byte("k0007")); err != nil || !ok || len(v) != 1000 {
		t.Errorf("Get on a full disk: %d bytes, %v, %v; want the value", len(v), ok, err)
	}
	if _, err := os.Stat(filepath.Join(dir, corruptMarkerName)); err == nil {
		t.Errorf("a full disk left %s", corruptMarkerName)
	}

	// Space is back: the DB stays failed (Pebble's log writer does not
	// recover), until it is opened again.
	full.Store(false)
	checkDiskFull(t, commit(acked+10), dir)
	if err := db.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	t.Logf("background errors: %d", bgErrors.Load())

	db, err = Open(opts)
	if err != nil {
		t.Fatalf("reopen once space is back: %v", err)
	}
	defer db.Close()
	s = db.Store(id)
	cp, err := s.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	// Every acknowledged commit is back when it was synced; without
	// fsync, those up to the last synced one (CommitNoSync's promise).
	// Either way the data is exactly the commits the checkpoint counts.
	durable := acked
	if !sync {
		durable = 50
	}
	if got := int(cp.ChangelogOffset); got < durable || got > acked+1 {
		t.Fatalf("checkpoint after reopen: %d commits, want %d to %d", got, durable, acked)
	}
	for i := 0; i < acked+10; i++ {
		_, ok, err := s.Get([]byte(fmt.Sprintf("k%04d", i)))
		if err != nil {
			t.Fatal(err)
		}
		if want := i < int(cp.ChangelogOffset); ok != want {
			t.Fatalf("key of commit %d present: %v, want %v (checkpoint %d)", i, ok, want, cp.ChangelogOffset)
		}
	}
	if err := commit(int(cp.ChangelogOffset)); err != nil {
		t.Fatalf("commit after reopen: %v", err)
	}
	t.Logf("after reopen: %d of %d acknowledged commits", cp.ChangelogOffset, acked)
}

// checkDiskFull checks err is the full disk of the DB in dir: ErrDiskFull,
// not damage, and 53100 naming the directory for a client.
func checkDiskFull(t *testing.T, err error, dir string) {
	t.Helper()
	if !errors.Is(err, ErrDiskFull) || !errors.Is(err, syscall.ENOSPC) || errors.Is(err, ErrCorrupt) {
		t.Fatalf("commit on a full disk: %v, want ErrDiskFull (ENOSPC), not ErrCorrupt", err)
	}
	pe, ok := pgerr.As(err)
	if !ok || pe.Code != pgerr.DiskFull || !strings.Contains(pe.Message, dir) || !strings.Contains(pe.Message, "no space left") {
		t.Fatalf("commit on a full disk: %+v (SQLSTATE %v), want 53100 naming %s", pe, pgerr.CodeOf(err), dir)
	}
}

// TestDiskFullOpen opens a new DB on a full disk: Open fails with the
// full disk (53100 for a client), not damage and no marker, and
// succeeds once there is space.
func TestDiskFullOpen(t *testing.T) {
	dir := t.TempDir()
	var full atomic.Bool
	full.Store(true)
	opts := Options{Dir: dir, Logger: quietLogger(), fs: fillableFS(&full)}
	db, err := Open(opts)
	if err == nil {
		_ = db.Close()
		t.Fatal("Open on a full disk succeeded")
	}
	t.Logf("open on a full disk: %v", err)
	if pe, ok := pgerr.FromDiskFull(err, dir); !ok || errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "free space") {
		t.Fatalf("Open on a full disk: %v (%+v), want ENOSPC and the remedy, not ErrCorrupt", err, pe)
	}
	if _, err := os.Stat(filepath.Join(dir, corruptMarkerName)); err == nil {
		t.Errorf("a full disk left %s", corruptMarkerName)
	}
	full.Store(false)
	db, err = Open(opts)
	if err != nil {
		t.Fatalf("Open once space is back: %v", err)
	}
	b := db.Store(StoreID{"v", 0}).NewBatch()
	b.Set([]byte("k"), []byte("v"))
	if err := b.Commit(Checkpoint{ChangelogOffset: 1}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestDiskFullConcurrentCommits fills the disk under sixteen stores
// committing at once, in batches larger than a log block. Pebble panics
// on a record that reaches its log writer once the writer has taken in
// a failed write; a commit that had checked the DB's health before the
// failure and entered Pebble after it was such a record, and killed the
// process. Now every committer ends with ErrDiskFull, and the DB opened
// again has each store's synced commits.
func TestDiskFullConcurrentCommits(t *testing.T) {
	for round := 0; round < 20; round++ {
		dir := t.TempDir()
		var full atomic.Bool
		opts := Options{Dir: dir, Logger: quietLogger(), fs: fillableFS(&full)}
		db, err := Open(opts)
		if err != nil {
			t.Fatal(err)
		}
		const stores = 16
		var synced [stores]int64 // per store, the last synced commit's offset
		var commits atomic.Int64
		errs := make(chan error, stores)
		for g := 0; g < stores; g++ {
			go func() {
				s := db.Store(StoreID{"v", int32(g)})
				for i := 0; ; i++ {
					b := s.NewBatch()
					for j := 0; j < 10; j++ {
						b.Set([]byte(fmt.Sprintf("k%06d-%d", i, j)), []byte(strings.Repeat("v", 5000)))
					}
					cp := Checkpoint{ChangelogOffset: int64(i + 1)}
					var err error
					if i%5 == 4 {
						err = b.Commit(cp)
						if err == nil {
							synced[g] = cp.ChangelogOffset
						}
					} else {
						err = b.CommitNoSync(cp)
					}
					if commits.Add(1) == 200 {
						full.Store(true)
					}
					if err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		for g := 0; g < stores; g++ {
			if err := <-errs; !errors.Is(err, ErrDiskFull) {
				t.Fatalf("commit on a full disk: %v, want ErrDiskFull", err)
			}
		}
		_ = db.Close()

		full.Store(false)
		db, err = Open(opts)
		if err != nil {
			t.Fatalf("reopen: %v", err)
		}
		for g := 0; g < stores; g++ {
			s := db.Store(StoreID{"v", int32(g)})
			cp, err := s.Checkpoint()
			if err != nil {
				t.Fatal(err)
			}
			if cp.ChangelogOffset < synced[g] {
				t.Fatalf("store %d after reopen: checkpoint %d, but commit %d was synced", g, cp.ChangelogOffset, synced[g])
			}
			for _, i := range []int64{cp.ChangelogOffset - 1, cp.ChangelogOffset} {
				_, ok, err := s.Get([]byte(fmt.Sprintf("k%06d-9", i)))
				if err != nil {
					t.Fatal(err)
				}
				if want := i >= 0 && i < cp.ChangelogOffset; ok != want {
					t.Fatalf("store %d after reopen: commit %d present %v, checkpoint %d", g, i, ok, cp.ChangelogOffset)
				}
			}
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
