// Package pull is the pull engine: it answers a pull query over a table,
// view or stream from the stores of the streaming runtime (package
// stream), on this node or, in a cluster, on the best replica anywhere.
//
// Engine.Pull reads a table or view from the local stores: a key lookup
// when the WHERE clause pins every key column (one partition, found with
// Kafka's partitioner over the key), else a scan of every partition; then
// filter, aggregate, sort and limit in memory, streaming rows to the
// client when no sort or aggregation is needed. A stream is read by a
// bounded scan of its topic up to the end offsets at the start of the
// query. Each row carries pseudo-columns saying which partition, node and
// role served it, with its lag and position.
//
// # Reads in a cluster
//
// With a Forwarder (the node's, in a cluster), each partition's read is
// routed: Forwarder.Route orders the partition's replicas on every node,
// this one's among them, by the session's bounds, and gives the
// ha.Attempts that say which to try next; the engine reads this node's
// replica in place and asks Forwarder.Remote for the others, reporting
// each answer back to the attempts until one serves or none is left
// (readPartition). A read another node forwarded here has NoForward set
// and is served by this node's replica alone, refused (55000) when that
// replica is restoring or outside the bound the forwarding node sent.
//
// # Read options
//
// Env (package eval) is what the query's expressions evaluate in;
// ReadOptions is how its reads may go: the position bound they must
// reflect (the session's writes, its earlier reads, basin.min_position:
// bounds.go), whether they may leave this node, and a RawRows writer
// that takes rows already encoded for the wire (wire.go: a
// scatter-gather then encodes each partition's rows on the goroutine
// that reads it, and passes a peer's rows on as they came).
//
// pull imports stream, eval, planner, catalog, materialize, serde (the
// key encoding of lookups), pgcodec (raw rows), kafka (stream scans), ha
// (routing) and the internal helpers pgerr and safe.
package pull
