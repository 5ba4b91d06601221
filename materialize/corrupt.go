package materialize

// Corruption: what the DB does when Pebble finds its files damaged.
//
// Pebble verifies a block's checksum when it reads it, for a query, a
// task or a compaction. Its default on a mismatch is to call the
// logger's Fatalf, which must not return: the process dies, starts
// again, compacts the same file and dies again. basin instead records
// the first damage it hears of (from Pebble's DataCorruption event, from
// a read's corruption error, or from a Fatalf), logs it once per file
// with the store and the file, and fails the DB: from then on every
// read and every commit returns the same *CorruptError (ErrCorrupt to
// the engine, XX001 data_corrupted to a client), and nothing panics. It
// also leaves a marker file in the directory, so the next Open fails at
// once with the remedy instead of serving until it meets the damage
// again. The remedy is always the same: the changelog is the truth, so
// move the directory aside and let the node restore every store. Until
// then the DB starts no compactions (scheduler.go): Pebble would retry
// the one that met the damage at once, over and over.

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"

	"github.com/basindb/basin/internal/pgerr"
)

// corruptMarkerName is the file, in the database directory, that a DB
// found damaged leaves behind; Open refuses a directory holding it.
const corruptMarkerName = "BASIN-CORRUPT"

// CorruptError is the error every read and commit of a DB returns once
// Pebble found it damaged. It wraps ErrCorrupt and carries the SQLSTATE
// error a client sees: XX001 (data_corrupted), short, without paths.
type CorruptError struct {
	// Dir is the database directory.
	Dir string
	// File is the damaged file, "" when Pebble did not say (a broken
	// invariant reported through Fatalf).
	File string
	// Stores names the stores whose keys the file holds, as far as its
	// key bounds tell ("" when unknown).
	Stores string
	// Detail is what Pebble reported, one line.
	Detail string
}

func (e *CorruptError) what() string {
	var b strings.Builder
	if e.File != "" {
		fmt.Fprintf(&b, "file %s", filepath.Base(e.File))
	} else {
		b.WriteString("an internal check failed")
	}
	if e.Stores != "" {
		fmt.Fprintf(&b, " of %s", e.Stores)
	}
	return b.String()
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("%v: the view store in %q is damaged (%s: %s); %s", ErrCorrupt, e.Dir, e.what(), e.Detail, Remedy(e.Dir))
}

// Unwrap makes errors.Is(err, ErrCorrupt) hold and lets the wire find
// the client's XX001.
func (e *CorruptError) Unwrap() []error {
	pe := pgerr.New(pgerr.DataCorrupted, "data corrupted: this node's view store is damaged (%s); its reads fail until it is rebuilt", e.what()).
		WithHint("The operator must stop the node, move its state directory aside and start it: the stores are restored from the changelogs. The node's log names the file.")
	return []error{ErrCorrupt, pe}
}

// Remedy is what to do with a damaged database directory dir.
func Remedy(dir string) string {
	return fmt.Sprintf("stop the node, move %q aside and start it again: tables are re-read from their topics and views restored from their changelogs", dir)
}

// health is the failure state of one DB, shared with the Pebble logger
// and event listener, which exist before the DB does.
type health struct {
	dir    string
	log    *slog.Logger
	failed atomic.Pointer[CorruptError]
	// full is set once a write found the disk full (diskfull.go).
	full atomic.Pointer[DiskFullError]

	mu struct {
		sync.Mutex
		logged map[string]bool // files whose damage was logged
	}
}

// err returns the DB's damage, the error of every read, nil while it
// is healthy.
func (h *health) err() error {
	if e := h.failed.Load(); e != nil {
		return e
	}
	return nil
}

// writeErr returns the error of every write: the DB's damage, else its
// full disk, nil while it is healthy.
func (h *health) writeErr() error {
	if e := h.failed.Load(); e != nil {
		return e
	}
	if e := h.full.Load(); e != nil {
		return e
	}
	return nil
}

// halted reports whether the DB has failed, for reads or for writes: it
// then needs no compactions (scheduler).
func (h *health) halted() bool { return h.failed.Load() != nil || h.full.Load() != nil }

// record notes damage: the first one fails the DB and leaves the marker;
// each file is logged once. It returns the DB's failure.
func (h *health) record(e *CorruptError) *CorruptError {
	if h.failed.CompareAndSwap(nil, e) {
		marker := filepath.Join(h.dir, corruptMarkerName)
		if err := os.WriteFile(marker, []byte(e.what()+": "+e.Detail+"\n"), 0o644); err != nil {
			h.log.Error("cannot leave the corruption marker; the next start serves until it meets the damage again", "file", marker, "err", err)
		}
	}
	h.mu.Lock()
	if h.mu.logged == nil {
		h.mu.logged = map[string]bool{}
	}
	first := !h.mu.logged[e.File]
	h.mu.logged[e.File] = true
	h.mu.Unlock()
	if first {
		h.log.Error("the view store is damaged; its reads and commits fail until it is rebuilt: "+Remedy(h.dir),
			"file", e.File, "stores", e.Stores, "detail", e.Detail)
	}
	return h.failed.Load()
}

// onCorruption is Pebble's DataCorruption event: it replaces Pebble's
// default, which calls Fatalf.
func (h *health) onCorruption(info pebble.DataCorruptionInfo) {
	h.record(h.fromInfo(&info, info.Details))
}

// onBackgroundError is Pebble's BackgroundError event (a failed flush or
// compaction). A compaction that meets damage fails again each time it
// is retried: the damage is recorded (and logged once per file) instead
// of logged on every attempt. So is a full disk, which fullFS has
// recorded already (a flush is retried too).
func (h *health) onBackgroundError(err error) {
	if pebble.IsCorruptionError(err) {
		h.record(h.fromInfo(pebble.ExtractDataCorruptionInfo(err), err))
		return
	}
	if n, ok := diskFullErrno(err); ok {
		h.recordFull(&DiskFullError{Dir: h.dir, Op: "write", Errno: n})
		return
	}
	h.log.Error("pebble: background error: " + oneLine(err))
}

func (h *health) fromInfo(info *pebble.DataCorruptionInfo, cause error) *CorruptError {
	e := &CorruptError{Dir: h.dir, Detail: oneLine(cause)}
	if info != nil {
		e.File = info.Path
		e.Stores = storesBetween(info.Bounds.Start, info.Bounds.End.Key)
	}
	return e
}

// readErr classifies err, an error of a Pebble read: a corruption fails
// the DB and becomes its *CorruptError; any other error is returned as
// it is.
func (h *health) readErr(err error) error {
	if err == nil || !pebble.IsCorruptionError(err) {
		return err
	}
	return h.record(h.fromInfo(pebble.ExtractDataCorruptionInfo(err), err))
}

// storesBetween names the stores of the keys from start to end.
func storesBetween(start, end []byte) string {
	name := func(k []byte) string {
		if len(k) == 0 {
			return ""
		}
		if _, id, _, err := parseStoreKey(k); err == nil {
			return id.String()
		}
		return ""
	}
	a, b := name(start), name(end)
	switch {
	case a == "" && b == "":
		return ""
	case a == b || b == "":
		return "store " + a
	case a == "":
		return "stores up to " + b
	}
	return "stores " + a + " to " + b
}

// oneLine is err's message, on one line and bounded: Pebble's errors
// carry stacks in their verbose form, never wanted here.
func oneLine(err error) string {
	if err == nil {
		return "unknown damage"
	}
	s := strings.Join(strings.Fields(err.Error()), " ")
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}

// checkMarker refuses a directory a DB found damaged before.
func checkMarker(dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, corruptMarkerName))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	what := strings.TrimSpace(string(b))
	if err != nil {
		what = err.Error()
	}
	return fmt.Errorf("%w: the view store in %q was found damaged while it ran and is not opened again (%s: %s); %s",
		ErrCorrupt, dir, corruptMarkerName, what, Remedy(dir))
}
