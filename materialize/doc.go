// Package materialize holds the materialized state of basin's views: one
// Pebble database per node, in which every view partition the node
// replicates (as active, standby or restoring replica) is a "store", a
// key-prefixed range with its own checkpoint.
//
// # The invariant
//
// The changelog is the truth; Pebble is its materialization. Each store's
// checkpoint says which prefix of its changelog, and which source offsets,
// the store's data reflects, and it is written in the same Pebble batch as
// that data (Batch.Commit). Pebble applies a batch atomically and, with
// Sync (the default), durably before Commit returns. Hence, at every
// instant, and after any crash:
//
//	data(store) == apply(changelog[0 : checkpoint.ChangelogOffset])
//
// There is no other write path: a Batch, which cannot be committed
// without a checkpoint, is the only way to change a store short of
// dropping it whole (data and checkpoint together). A replica is therefore
// always a prefix of the changelog, whatever its role, and a node that
// restarts resumes from its checkpoints instead of rebuilding.
//
// Every offset in a Checkpoint is the next offset to read (Kafka's
// committed-offset convention), never the last one applied: a store that
// applied changelog records 0..41 has ChangelogOffset 42; a fresh store
// has the zero Checkpoint and reads from 0. The same holds for Input (the
// task's direct inputs, possibly a repartition topic) and for Position
// (source topic -> partition -> next source offset not yet reflected,
// IQv2's position). Positions only advance (Position.Advance keeps the
// maximum); read-your-writes and monotonic reads are Position.Covers
// comparisons, and the token users see (SET basin.min_position, the
// _position pseudo-column) is Position.String / ParsePosition.
//
// # Why one Pebble per node
//
// One database instead of one per partition: one WAL and one fsync per
// commit whatever the number of stores, one block cache shared by all, no
// file-handle or memtable cost per partition, creating a store is free
// (it is just a key prefix), and dropping a view is two range deletions.
// What we give up, per-store engine tuning and per-store files, basin
// does not need. Stores never share a batch: each has one writer (the
// task owning that replica), and its checkpoint describes only its range.
//
// # Key layout
//
// Every key of the database starts with a namespace byte:
//
//	'm' name                               metadata: "mformat" = storage format ("1")
//	'c' uvarint(len(view)) view part       checkpoint of store (view, part)
//	'd' uvarint(len(view)) view part key   data of store (view, part)
//
// part is the partition as 4 big-endian bytes with the sign bit flipped.
// The length prefix makes store prefixes prefix-free, so the data of
// store (view "a", partition 1) can never run into that of ("a", 10) or
// ("ab", 1), and a store's data is exactly the range [prefix,
// PrefixEnd(prefix)). key is the caller's key, opaque to the store; views
// use EncodeKey, an order-preserving encoding of the key columns (so a
// range scan or an ORDER BY on the key is a Pebble range scan, and the
// rows with a given key prefix are a contiguous range), and EncodeRow for
// values. See keyenc.go and rowenc.go for both formats (arrays, structs
// and maps, values of nested columns, in arrayenc.go, nestedenc.go and
// nestedkey.go: a key of them only groups a pull query, views are never
// keyed by one). Checkpoints are encoded by encodeCheckpoint
// (checkpoint.go), the one place that format lives; it starts with a
// version byte.
//
// # Lifecycle
//
// A node opens the database at start (Open, under its data directory; the
// directory lock makes a second opener fail with ErrLocked), lists what it
// has on disk (Stores) to report it and to decide what can be resumed,
// and takes a Store handle (DB.Store, no I/O) for every replica it is
// assigned. Stores it no longer replicates are dropped with DropStore,
// dropped views with DropView. On shutdown every task commits its last
// batch, and the node closes the DB after joining its tasks (Close
// reports iterators or snapshots left open as an error, and closes
// regardless).
//
// How the replicas drive a store (stream/ and ha/ own the loops; this
// package owns the state they leave behind):
//
//   - Active task. Per Kafka transaction it consumes input, produces
//     changelog records and commits its input offsets. Only after the
//     transaction commits does it write the resulting rows to a Batch
//     and Commit it with ChangelogOffset = the offset after its last
//     changelog record, Input = the offsets it committed, Position = the
//     source offsets those inputs carry. Readers never see aborted data.
//     Pending state during a transaction lives in the task, not in
//     Pebble, so batches need no read-your-own-writes.
//   - Restart of an active task. A crash between the Kafka commit and the
//     Pebble commit leaves the store behind its own changelog. So a task
//     first restores: read Checkpoint, consume the changelog from
//     ChangelogOffset to its end, applying records in batches whose
//     checkpoint carries the positions recorded with the changelog
//     records, and only then consumes its inputs from the committed
//     offsets.
//   - Standby and restoring replicas. The same loop as restore, forever:
//     consume the changelog from Checkpoint().ChangelogOffset, apply a
//     batch of records, Commit with the offset after the last record and
//     the merged positions. Offset lag is the changelog end minus
//     ChangelogOffset; time lag is now minus UpdatedAt.
//   - Starting over. If the changelog no longer holds the checkpoint's
//     offset (the topic was recreated, or its log start moved past it),
//     the replica clears the store with Batch.DeleteRange(nil, nil)
//     committed with the zero Checkpoint, and restores from the start.
//     A compacted changelog restores to the same rows: compaction keeps the
//     latest record of every key.
//
// # Reads
//
// Get and NewIter read the live store; Iter.Key strips the store prefix.
// A reader that reports freshness reads Checkpoint first and the data
// after: the data is then at least as new as the checkpoint claims. For
// an exact pairing, or one consistent view across several local
// partitions (a scatter-gather over them), use DB.NewSnapshot, whose
// stores' data and checkpoints are consistent as of one instant.
//
// Queries' point reads use Lookup, which with Options.RowCacheSize set
// is served from the row cache (rowcache.go), a sharded hash map of
// values in front of Pebble: a hit skips the memtable and sstable seeks.
// It keeps both guarantees above: Lookup never returns a value older
// than Pebble's visible one when it starts, because every write
// invalidates the keys it changes before it becomes visible, and no
// value read before a write is cached once the write has begun (the
// argument is on rowCache). Writers read their state with Get, which
// bypasses the cache, and snapshot readers never use it. RowCacheStats
// counts hits and misses; a store that is written much and read little
// costs the writer one atomic load per commit while nothing of it is
// cached.
//
// Whole-store scans may keep what they made of a store (pull's decoded
// rows) in the scan cache (scancache.go, Options.ScanCacheSize), which
// rests on the same write gates: a scan takes a ScanTicket before its
// snapshot, offers its result with CacheScan, kept only if no write
// entered the store since the ticket, and a later scan's CachedScan
// returns it only while none has. So a cached scan is the store's
// contents at that instant, with the checkpoint the scan read.
//
// # Durability and errors
//
// Options.NoSync drops the fsync of commits (tests, benchmarks): a crash
// may then lose the last commits, but never splits data from its
// checkpoint. Errors wrap a sentinel tested with errors.Is: ErrClosed,
// ErrLocked, ErrCorrupt (the directory or a checkpoint is damaged: move
// the directory aside, or drop the store, and restore from the changelog),
// ErrDiskFull (free space and open the DB again), ErrIncompatible
// (another storage format), ErrBadEncoding (a key, row or position token
// this package did not write), ErrUnsupportedType.
//
// Damage Pebble finds while the DB runs (a block checksum that fails on a
// read or a compaction) fails the whole DB instead of the process:
// Pebble's DataCorruption event and its logger's Fatalf, whose defaults
// exit, record a *CorruptError, and every read and commit returns it
// from then on (ErrCorrupt to the engine, XX001 data_corrupted to a
// client). The DB leaves the file BASIN-CORRUPT in its directory, and
// Open refuses a directory holding it, with the remedy. corrupt.go has
// the details.
//
// A write that finds the file system full (ENOSPC, EDQUOT) is no
// damage, but Pebble cannot go on after a failed log write: every write
// of the DB (commits, loads, drops) returns the same *DiskFullError from
// then on (ErrDiskFull, 53100 disk_full naming the directory to a
// client) without reaching Pebble, reads go on, and no marker is left.
// The DB takes writes again once opened again with space freed, and has
// every commit that succeeded. diskfull.go has the details. A failed DB,
// damaged or full, starts no compactions (scheduler.go): they would
// fail, and be retried, over and over.
//
// # Debugging
//
// Start from the checkpoints: DB.Stores lists the stores on disk, and
// Store.Checkpoint().String() prints the changelog offset, input
// offsets, position and last record time of one, e.g.
// "changelog=42 input=[orders/0:17] position=[orders/0:17] updated=...".
// DB.Dump prints the checkpoints and decoded rows of a view's stores from
// a running node (meant for its status page). A store whose data
// disagrees with its changelog prefix is a bug in the code that built the
// batch, never a torn commit.
//
// To look at the raw database, stop the node (Pebble's LOCK file) and use
// Pebble's tool, installed outside the basin module with
// go install github.com/cockroachdb/pebble/v2/cmd/pebble@v2.1.7:
//
//	pebble db scan --key=quoted --value=size <data-dir>/views
//	pebble db lsm <data-dir>/views
//
// FormatKey renders the keys it prints: 'c' keys are checkpoints (one per
// store), 'd' keys data, 'm' keys metadata; for example
// 'd' 0x10 "orders_by_region" 0x80000003 0x40 "eu" 0x00 0x01 is
// "data orders_by_region/3 ('eu')". Within a store, keys sort like the
// view's key columns, NULL first.
//
// materialize imports internal/pgerr, catalog (the Go values of the
// types it encodes), internal/numeric and internal/jsonb (their
// encodings), besides Pebble.
package materialize
