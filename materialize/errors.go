package materialize

import "errors"

// Error categories. Errors returned by this package wrap one of these (or a
// Pebble error) with context; test them with errors.Is.
var (
	// ErrClosed is returned by every operation on a DB after Close.
	ErrClosed = errors.New("materialize: db closed")

	// ErrLocked is returned by Open when another DB, in this process or
	// another, holds the data directory.
	ErrLocked = errors.New("materialize: data directory in use")

	// ErrCorrupt marks on-disk state that cannot be read: a Pebble
	// corruption error at Open, or a checkpoint or internal key that does
	// not decode. The changelog is the truth, so the remedy is always to
	// move the directory (or drop the store) and restore from the changelog.
	ErrCorrupt = errors.New("materialize: corrupt data")

	// ErrDiskFull is returned by every write of a DB (commits, loads,
	// drops) once one of its writes found the file system full: Pebble
	// cannot go on after a failed log write, so the DB takes writes again
	// only once opened again, with space freed. Nothing is lost: every
	// commit that succeeded is in the log.
	ErrDiskFull = errors.New("materialize: disk full")

	// ErrIncompatible is returned by Open when the data directory was
	// written by a basin with a different storage layout.
	ErrIncompatible = errors.New("materialize: incompatible storage format")

	// ErrBadEncoding is returned by the key and row decoders and by
	// ParsePosition for input they did not produce.
	ErrBadEncoding = errors.New("materialize: malformed encoding")

	// ErrUnsupportedType is returned by the key and row encoders for a value
	// whose Go type is not one of basin's value types (nil, bool, int64,
	// float64, string, time.Time).
	ErrUnsupportedType = errors.New("materialize: unsupported value type")
)
