package materialize

import (
	"errors"
	"log/slog"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Options configures a DB. The zero value of every field except Dir is a
// usable default; defaults are filled in by ensureDefaults, the one place
// they live.
type Options struct {
	// Dir is the directory of the Pebble database (created if missing).
	// Required; for example <data-dir>/views.
	Dir string

	// Logger receives Pebble's log messages and this package's. Default
	// slog.Default().
	Logger *slog.Logger

	// CacheSize is the size in bytes of Pebble's block cache, shared by all
	// stores. Default 64 MiB.
	CacheSize int64

	// RowCacheSize is the size in bytes of the row cache, which keeps
	// values of live stores in memory for StoreReader.Lookup (a query's
	// point reads): a hit is a hash-map lookup instead of a seek in
	// Pebble. Sizes count keys, values and about 128 bytes per entry.
	// Default 0: no row cache, and Lookup is Get.
	RowCacheSize int64

	// ScanCacheSize is the size in bytes of the scan cache, which keeps
	// what scans of a whole store made of its rows (pull's decoded rows)
	// while the store is not written: see StoreReader.ScanTicket. It
	// shares the row cache's coherence, so it is off when the row cache
	// is. Default 0: off.
	ScanCacheSize int64

	// NoSync turns off the fsync of every batch commit. Default false:
	// commits are durable when Commit returns, which is what lets a node
	// killed with SIGKILL or a power cut resume from its checkpoints. With
	// NoSync a crash can lose the last commits (never tear one: data and
	// checkpoint still move together), and the node re-reads a little more
	// of the changelog. For tests and benchmarks.
	NoSync bool

	// Test hooks, unset in production. fs, when set, is the file system
	// the DB writes through instead of the operating system's (a test
	// fills the disk with it); tune, when set, adjusts Pebble's options
	// last (a test adds an event listener, or lowers a threshold).
	fs   vfs.FS
	tune func(*pebble.Options)
}

// DefaultCacheSize is the default Options.CacheSize.
const DefaultCacheSize = 64 << 20

// Validate reports whether o can be used to Open a DB.
func (o *Options) Validate() error {
	if o.Dir == "" {
		return errors.New("materialize: Options.Dir is required")
	}
	if o.CacheSize < 0 {
		return errors.New("materialize: Options.CacheSize must not be negative")
	}
	if o.RowCacheSize < 0 {
		return errors.New("materialize: Options.RowCacheSize must not be negative")
	}
	if o.ScanCacheSize < 0 {
		return errors.New("materialize: Options.ScanCacheSize must not be negative")
	}
	return nil
}

func (o *Options) ensureDefaults() {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.CacheSize == 0 {
		o.CacheSize = DefaultCacheSize
	}
	if o.fs == nil {
		o.fs = vfs.Default
	}
}
