// Package node wires one basin node together; it is what cmd/basin runs
// and what tests start in-process.
//
// # Start-up
//
//  1. Lock the data dir (DataDir/LOCK): a second node on the same dir fails
//     at once with a message naming the process that holds it.
//  2. Without Brokers, start the embedded Kafka-compatible broker
//     (franz-go's kfake) with its log under DataDir/kafka, so one command
//     gives a working, persistent system.
//  3. Open the Pebble database (DataDir/state).
//  4. Replay the command topic into the catalog. Changes during this
//     replay are not acted on one by one; afterwards the queries of the
//     final catalog start in creation order, and stores left by relations
//     dropped while the node was down are deleted.
//  5. Declare the processing-log stream on first start.
//  6. Serve Postgres (pgwire) and HTTP (/metrics, /healthz).
//
// # Shutdown
//
// Close stops the servers first so no new work arrives, then the tasks
// (each finishes or aborts its transaction), the catalog replay, the
// stores and the broker.
//
// # Package map
//
// Lowest first: kafka (clients, admin, embedded broker), catalog (types,
// relations, command log), sql (Postgres-flavoured parsing), planner
// (plans), materialize (Pebble stores), exec (tasks and pull queries),
// ha (cluster membership and routing), pgwire (the Postgres protocol),
// node (this package), cmd/basin (flags).
package node
