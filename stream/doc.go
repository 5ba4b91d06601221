// Package stream is the streaming runtime: it keeps every table and view
// current from Kafka, one task per partition, exactly once.
//
// # Streaming tasks
//
// Runtime runs one task per partition of every table and view (and per
// source partition of every derived stream), each under
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
//     A windowed view's task (window.go, windower) aggregates each
//     record into the windows of record time it falls in (a session
//     window merges the sessions it bridges), keeps its stream time in
//     the checkpoint, skips late records into the processing log,
//     deletes windows past their retention (tombstones in the
//     changelog) and, with EMIT FINAL, keeps a window's row hidden
//     until it closes.
//   - streamTask (streamtask.go) writes a derived stream (CREATE STREAM
//     ... AS SELECT), one per source partition (EXPLODE makes a source
//     record several: explode.go): per batch, in one
//     transaction, the derived records to the stream's topic, skipped
//     records to the processing log and a marker with the input offsets
//     to a changelog that holds only markers, whose restore gives the
//     offsets to read on from.
//   - joinTask (jointask.go) writes a derived stream that joins a stream
//     with a table, one per table partition: it keeps the table
//     partition's rows in its store and joins each stream record, in
//     record-time order, transactionally as streamTask does (a standby
//     keeps the table rows current); a streamTask in routing mode first
//     sends the stream's records to the partition of their join key when
//     the stream is keyed otherwise.
//   - streamJoinTask (streamjointask.go) writes a derived stream that
//     joins two streams WITHIN a window of record time, one per join
//     partition: it keeps both sides' records of the window in a store
//     that is a copy of its changelog (records, an index by time, stream
//     time in the markers), emits each matching pair once and an outer
//     side's unmatched record once no match can come, and expires what
//     stream time has passed; its standby follows the changelog.
//     streamTasks in routing mode bring each stream to the join's
//     partitions (the right's records marked) where it is not there.
//     A join of three or more relations runs join stages
//     (planner.StreamPlan.Stages), each a joinTask or streamJoinTask
//     writing an internal stream the next reads, with the query's task
//     of their number (active and standby where it is).
//     The tasks writing an internal stream (a join stage's, a join's
//     repartition topic) put a position marker on each of its
//     partitions per batch, and the tasks reading it compose them
//     (marks.go, planner.Marks), so a view of a stream's join has its
//     positions in the topics beneath the join.
//   - tableJoinTask (tablejointask.go) is the join stage of a view that
//     joins two tables or views (a view side read from its changelog,
//     its markers' positions composed; a chain of three or more has a
//     stage per join, each reading the one before's changelog), one per
//     left partition: it keeps the left
//     rows and the right rows they can join (the same partition's on the
//     keys, all of them on a foreign key, with an index of the left rows
//     by the right key they name) and writes, transactionally, each
//     changed key's joined row or its removal to a changelog the view
//     task reads as a view's; a standby keeps both tables' rows current.
//   - changeTask (changetask.go) re-keys a table partition for a view
//     grouped over the table by other columns: it keeps each key's last
//     row and sends, transactionally, the old row to be taken back from
//     its group and the new one to be added to its own.
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
// A task's partition is a materialize.StoreID; its role is an ha.Role.
// What a task reports (TaskState: role, lag, position, errors) is what
// the pull engine routes by and SHOW TASKS shows (Tasks). A source that
// lost records a task had applied halts its queries until RESUME
// (halts.go); a process that did not run for a while reports its lags
// unknown until it has fetched again (pause.go). WaitServing (serving.go)
// is CREATE's wait for a view's replicas to serve, counting those other
// nodes hold through Peers.
//
// stream imports catalog, planner, serde (the records' formats), eval
// (a view's expressions and aggregates), materialize (the stores), kafka,
// ha (roles) and the internal helpers backoff, pgerr and safe; none of
// the engines above it.
package stream
