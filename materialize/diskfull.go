package materialize

// A full disk: what the DB does when a write of its directory finds the
// file system full (ENOSPC, or EDQUOT for a quota).
//
// Pebble cannot go on after a write-ahead log write fails: it reports a
// failed commit through its logger's Fatalf and returns success from
// the commit (the process was meant to be dead), and the next commit
// that reaches the broken log panics. So the DB writes through fullFS,
// which notes the first write that finds the disk full, and from then
// on every commit (Batch.Commit, Loader.Flush, DropStore, DropView)
// returns the same *DiskFullError (ErrDiskFull, and 53100 disk_full
// naming the directory to a client) before it reaches Pebble, and
// compactions stop (scheduler). The check and the entry into Pebble are
// one step (DB.apply), so that no write of one committer meets the log
// writer another's failed write broke. Reads go on: what they see was
// committed, and data and checkpoints still move together. Nothing is
// damaged, so no marker is left, and the DB is opened again as usual
// once there is space: that is the remedy, restarting the node, because
// the DB does not recover by itself (the log writer's failure is
// sticky). Every commit that returned nil is in the log, and comes back.

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/basindb/basin/internal/pgerr"
)

// DiskFullError is the error every commit of a DB returns once a write
// of its directory found the file system full. It wraps ErrDiskFull,
// the errno, and the 53100 error a client sees.
type DiskFullError struct {
	// Dir is the database directory.
	Dir string
	// Op and Path are the write that failed first ("write" of a log
	// file, say); Path is "" when only Pebble's report of it is known.
	Op, Path string
	// Errno is syscall.ENOSPC or syscall.EDQUOT.
	Errno syscall.Errno
}

func (e *DiskFullError) Error() string {
	what := ""
	if e.Path != "" {
		what = fmt.Sprintf(" (%s %s)", e.Op, e.Path)
	}
	return fmt.Sprintf("%v: the view store in %q could not write%s: %v; it takes no writes until the node restarts: free space on its file system and restart the node", ErrDiskFull, e.Dir, what, e.Errno)
}

// Unwrap makes errors.Is(err, ErrDiskFull) and errors.Is(err,
// syscall.ENOSPC) hold and lets the wire find the client's 53100.
func (e *DiskFullError) Unwrap() []error {
	pe, _ := pgerr.FromDiskFull(&fs.PathError{Op: "write", Path: e.Dir, Err: e.Errno}, e.Dir)
	pe.Hint = "Free space on the file system that holds it, then restart the node: this node's view store takes no writes until it is opened again, and keeps every one it acknowledged."
	return []error{ErrDiskFull, e.Errno, pe}
}

// diskFullErrno returns the errno of err if it says the file system is
// full. Pebble's Fatalf reports arrive as text, hence the message test.
func diskFullErrno(err error) (syscall.Errno, bool) {
	for _, n := range []syscall.Errno{syscall.ENOSPC, syscall.EDQUOT} {
		if errors.Is(err, n) || strings.Contains(err.Error(), n.Error()) {
			return n, true
		}
	}
	return 0, false
}

// recordFull notes that a write found the disk full: the first one
// fails the DB's writes, and is logged. It returns the DB's failure.
func (h *health) recordFull(e *DiskFullError) *DiskFullError {
	if h.full.CompareAndSwap(nil, e) {
		h.log.Error("the view store's file system is full; its commits fail until the node restarts: free space and restart the node",
			"op", e.Op, "file", e.Path, "err", e.Errno)
	}
	return h.full.Load()
}

// noteWrite returns err, a write's error, having recorded it when it
// says the disk is full.
func (h *health) noteWrite(op, path string, err error) error {
	if err != nil {
		if n, ok := diskFullErrno(err); ok {
			h.recordFull(&DiskFullError{Dir: h.dir, Op: op, Path: path, Errno: n})
		}
	}
	return err
}

// fullFS is the file system a DB writes through: the one it was given,
// with every write that finds the disk full noted (health.noteWrite).
type fullFS struct {
	vfs.FS
	h *health
}

func (f fullFS) Unwrap() vfs.FS { return f.FS }

func (f fullFS) file(name string, file vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	return fullFile{File: file, name: name, h: f.h}, nil
}

func (f fullFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	file, err := f.FS.Create(name, category)
	return f.file(name, file, f.h.noteWrite("create", name, err))
}

func (f fullFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	file, err := f.FS.Open(name, opts...)
	return f.file(name, file, err)
}

func (f fullFS) OpenReadWrite(name string, category vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	file, err := f.FS.OpenReadWrite(name, category, opts...)
	return f.file(name, file, f.h.noteWrite("open", name, err))
}

func (f fullFS) OpenDir(name string) (vfs.File, error) {
	file, err := f.FS.OpenDir(name)
	return f.file(name, file, err)
}

func (f fullFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	file, err := f.FS.ReuseForWrite(oldname, newname, category)
	return f.file(newname, file, f.h.noteWrite("reuse", newname, err))
}

func (f fullFS) Link(oldname, newname string) error {
	return f.h.noteWrite("link", newname, f.FS.Link(oldname, newname))
}

func (f fullFS) Rename(oldname, newname string) error {
	return f.h.noteWrite("rename", newname, f.FS.Rename(oldname, newname))
}

func (f fullFS) MkdirAll(dir string, perm fs.FileMode) error {
	return f.h.noteWrite("mkdir", dir, f.FS.MkdirAll(dir, perm))
}

// fullFile is a file of fullFS. Preallocate is not noted: Pebble
// ignores its failure, and the write after it is what fails.
type fullFile struct {
	vfs.File
	name string
	h    *health
}

func (f fullFile) Write(p []byte) (int, error) {
	n, err := f.File.Write(p)
	return n, f.h.noteWrite("write", f.name, err)
}

func (f fullFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.File.WriteAt(p, off)
	return n, f.h.noteWrite("write", f.name, err)
}

func (f fullFile) Sync() error { return f.h.noteWrite("sync", f.name, f.File.Sync()) }

func (f fullFile) SyncData() error { return f.h.noteWrite("sync", f.name, f.File.SyncData()) }

func (f fullFile) SyncTo(length int64) (bool, error) {
	full, err := f.File.SyncTo(length)
	return full, f.h.noteWrite("sync", f.name, err)
}
