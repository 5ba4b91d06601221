// Package catalog owns what basin knows about relations: SQL types and
// schemas, streams, tables and views, and the command log they are
// recorded in.
//
// # The command log
//
// DDL is validated by the session that receives it, then appended as a
// Command to a single-partition Kafka topic (CommandTopic). Every node
// replays that topic from the beginning, in order, and applies each
// command to its Catalog with Apply. Because Apply is deterministic and
// the topic is totally ordered, every node builds the same catalog, and a
// restarted node rebuilds exactly the catalog it had, then restarts the
// same persistent queries. Kafka is the only coordinator: there is no
// basin-level consensus.
//
// A command records the resolved definition (schema, topic, partitions,
// formats), not only the SQL text, so replay does not depend on the
// parser of the node that replays it. A view also keeps its SQL: the
// planner re-plans it on every node from the same text.
//
// Two nodes may validate conflicting DDL at the same time (both create
// "t"). Both commands are appended; the one later in the log is rejected
// by Apply identically on every node, and Log.Submit returns that
// rejection to the session that sent it.
//
// # A topic that lost commands
//
// A replay is only as good as the topic: a broker that truncates a
// corrupt segment, or a leader election that loses the tail, leaves a
// shorter log that replays into a smaller catalog, and a node that acted
// on it would stop relations' queries and delete their state. So each
// node records the offset and CRC-32C of the last command it applied in
// a mark file (LogOptions.MarkFile), and OpenLog fails with ErrLogLost
// when the topic ends before that offset or holds another command there.
// The replay also stops for good (ErrLogLost, XX001 to clients) when the
// topic moves backwards under it: Sync and Submit fail from then on.
// Submit reports a command done only when the replay applied a record
// with the same checksum at the offset the broker gave it
// (ErrNotApplied otherwise); while the replay has failed to fetch for
// longer than fetchFailGrace, Submit, Sync and OpenLog fail with
// ErrLogUnreadable instead of waiting forever. Deleting the state of a dropped relation is
// the node's business, and it does so only for DROPs a complete replay
// applied.
//
// # Versions and names
//
// A relation's Version is the offset of the command that created it. State
// on disk (StoreName) and internal topics (ChangelogTopic,
// RepartitionTopic) carry it, so a relation dropped and created again
// under the same name never reads its predecessor's data.
//
// # Nested types
//
// STRUCT and MAP types (nested.go) are interned in a process-wide
// table: a composite Type is a number only within one process, so the
// command log records it as its text and a replaying node interns it
// again. Every other Type keeps the number the log has always held.
// Their values are Struct and Map, never a plain []any, which is an
// array.
//
// # The Postgres catalog
//
// Clients learn what basin holds from pg_catalog and information_schema.
// Those relations are virtual (pgcatalog.go explains the mapping): a
// PGSnapshot generates their rows from the relations of the Catalog and
// the reading session, once per statement, with oids derived from each
// relation's Version so that they are the same on every node. The
// Postgres system types the catalog columns have (oid, regclass, arrays,
// ...) are in pgtypes.go; no stream, table or view stores them.
//
// # Debugging
//
// The command topic is plain JSON: consume _basin-<cluster>-commands with
// any Kafka client to see every DDL statement the cluster has accepted.
//
// catalog imports kafka (the command log's client) and internal/pgerr.
package catalog
