// Package exec runs plans: expression evaluation, the streaming tasks that
// keep views current, and pull queries over the stores.
//
// # Streaming tasks
//
// Runtime runs one task per partition of every table and view, each under
// a supervisor that restarts it from its checkpoint with backoff
// (backoff.go: jittered, doubling, reset by a healthy run); a panic in a
// task is a failure of that task, logged with its stack (internal/safe).
//
// Each kind of task has a file: a task is a run(ctx) error that a slot
// starts in the role the node has for its partition (roles.go), reading
// its input with the helpers of tasks.go (consumers that never reset an
// offset, the resume offset and its truncation checks, polling with the
// input's end, restore from the changelog, the record limits) and
// leaving its checkpoint in its store; the batches it produces come from
// arenas (arena.go). A new operator is a new file of that shape.
//
//   - tableTask (tabletask.go) materializes a source table: it reads the
//     table's topic into the store; the topic is its own changelog.
//   - viewTask (viewtask.go, with its group cache in groupcache.go)
//     maintains a view partition. Per batch of input records it
//     opens a Kafka transaction, writes every changed row to the view's
//     changelog, skipped records to the processing log and a marker
//     record carrying the input offsets and position, and commits. Only
//     after the commit does it apply the same rows, the changelog offset
//     and the position to Pebble in one batch. Readers therefore never see
//     aborted data, and a crash at any point neither loses nor double-counts:
//     on restart the task fences older instances of itself (a new
//     transactional epoch), replays the changelog from its checkpoint to
//     the end (restore), and resumes its input from the offsets of the
//     last committed marker.
//   - rekeyTask (rekeytask.go) re-keys a source partition into the
//     repartition topic for views grouped by something other than the
//     source key. It is not transactional: each record carries its source
//     partition and offset,
//     and a view task drops a record whose offset its position already
//     covers, so records re-sent after a crash are counted once. After each
//     batch it writes a position marker to every repartition partition,
//     so each view partition knows how far every source partition has been
//     seen even when none of its records reached it.
//
// # Stored values
//
// A store maps the order-preserving encoding of a row's key to
// [present, columns..., aggregate state...] (see EncodeStored). The same
// bytes are the changelog record's value, so restoring a replica is a
// copy, and a replica restored from the changelog can take over
// aggregation.
//
// # Pull queries
//
// Runtime.Pull reads a table or view from the local stores: a key lookup
// when the WHERE clause pins every key column (one partition, found with
// Kafka's partitioner over the key), else a scan of every partition; then
// filter, aggregate, sort and limit in memory, streaming rows to the
// client when no sort or aggregation is needed. A stream is read by a
// bounded scan of its topic up to the end offsets at the start of the
// query. Each row carries pseudo-columns saying which partition, node and
// role served it, with its lag and position.
//
// # Catalog queries
//
// A PullPlan with a Query (planner/query.go) runs in query.go instead:
// a catalog.PGSnapshot is made for the statement from the catalog and
// the session, each relational operator materializes its rows (scans of
// virtual relations, hash or nested-loop joins, filters, set-returning
// functions, grouping, windows, sorting), and subqueries run per outer
// row with the enclosing rows on a stack in Env (once per statement
// when uncorrelated). The catalog functions are in qfuncs.go.
//
// # Sessions
//
// Session dispatches statements: DDL is validated here and appended to the
// command log, INSERT produces records, SELECT runs a pull query, SHOW and
// DESCRIBE read the catalog and runtime.
//
// For the extended query protocol, Session.Prepare parses one statement
// and plans a SELECT once, inferring each $n's type from the plan, and
// Prepared.Bind makes a Portal that runs it (prepared.go). A portal read
// with a row limit runs its pull query on a goroutine it owns, feeding a
// small channel, so it can stop after N rows and resume; Close stops it.
//
// # Limits
//
// What one statement or session may take is bounded by session settings
// with documented defaults (limits.go): basin.max_statement_bytes is
// checked before a Query or Parse is lexed (sql then refuses expressions
// too deep to parse in bounded memory), statement_timeout and cancel run
// from before the parse (a parse cannot be interrupted, so one that
// outlasts them fails when it ends), basin.max_prepared_statements
// counts the client's prepared statements (Prepare to Prepared.Close; the
// plan cache's are not counted), and basin.query_memory is checked as a
// pull query collects rows to sort, groups or DISTINCT keys, and as a
// catalog query's joins and blocks make rows. Loops over many keys or
// rows check the statement's context every thousand or so, so a cancel
// or timeout stops a long IN list's lookups as it does a scan.
package exec
