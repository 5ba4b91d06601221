// Package node wires one basin node together; it is what cmd/basin runs
// and what tests start in-process (Start, Options).
//
// A node runs in one of two modes. Without Options.Brokers it is alone:
// it starts an embedded Kafka-compatible broker under its data dir and
// holds every task of every table and view as the active. With Brokers
// it is a member of the cluster Options.Cluster names on that Kafka: the
// assignment the group agrees on says which tasks it runs and in which
// role, and reads of partitions it does not hold, or holds a worse
// replica of, go to the node that holds a better one.
//
// # Start-up
//
// Start does, in order (on an error, Close undoes what was done):
//
//  1. Check the options, the TLS files and the users, before anything
//     is opened: a typo costs no broker start.
//  2. Lock the data dir (lock.go: DataDir/LOCK, an OS file lock holding
//     the pid): a second node on the same dir fails at once, naming the
//     process that holds it. Read or generate the node id.
//  3. Without Brokers, start the embedded broker (franz-go's kfake) with
//     its log under DataDir/kafka, on Options.BrokerAddr or, when that
//     default port is taken, a free one (BrokerAddrFallback).
//  4. Open the Pebble database (DataDir/state) and the streaming runtime
//     (stream.Runtime); connect the INSERT producer, waiting up to 60 s
//     for Kafka.
//  5. Replay the command topic into the catalog. Changes during this
//     replay are not acted on one by one; afterwards the queries of the
//     final catalog start in creation order, and stores left by relations
//     dropped while the node was down are deleted. In a cluster nothing
//     starts yet: the runtime runs no task until the first assignment.
//  6. Declare the processing-log stream on first start.
//  7. Serve Postgres (pgwire, with the exec.Engine behind the backend
//     adapters at the end of node.go) and HTTP. Every field of the
//     engine is set before the Postgres server starts, since sessions
//     read them without a lock.
//  8. In a cluster: start the control plane (control.go) and join the
//     group (cluster.go), then send heartbeats and lag reports.
//
// The "basin node ready" log line ends it; cmd/basin prints its settings
// and ready lines after Start returns.
//
// # The cluster runtime
//
//   - cluster.go is the membership: a kgo client joins the group
//     _basin-<cluster>-nodes with ha.Balancer (ha/doc.go has the
//     protocol and the assignor). local reports the node's addresses and
//     the checkpoint of every store it has; tasks gives the leader every
//     partition of every table and view with its standby count and
//     changelog end; onAssignment hands each new assignment to the
//     runtime as roles (active, standby, warm-up) and keeps it, indexed by
//     task, for routing. The last join metadata is kept in
//     DataDir/cluster-join, so a node restarted within the session
//     timeout rejoins with the same bytes and keeps its tasks (static
//     membership). The leader asks for a rebalance when the catalog gains
//     or loses a table or view.
//   - control.go is the control plane between nodes (KLIP-12's
//     endpoints, on the HTTP address): POST /heartbeat to every peer every
//     HeartbeatInterval, feeding the receiver's ha.Liveness; POST /lag
//     with this node's tasks and their lags and positions every
//     LagReportInterval; GET /clusterStatus, what this node knows of every
//     node. SHOW CLUSTER and SHOW TASKS read the same (clusterInfo).
//   - forward.go is pull.Forwarder: for each partition a read needs,
//     ha.Route orders its replicas, this node's own among them, by the
//     session's bounds (lag, position, basin.read_from) and what
//     heartbeats and lag reports say, and ha.Attempts decides which to
//     try next from what the attempts so far answered (the next at once
//     when one fails before sending a row, then the restoring and
//     marked-down fallbacks) and when to give up. The pull engine makes
//     the attempts: this node's replica it reads in place, without
//     coming back here; a peer's goes through Remote, over the Postgres
//     wire, through a pgx pool
//     per peer whose connections set basin.forwarded, so the peer reads
//     only its own replicas and never forwards again. The forwarded
//     statement carries what can run there (the filter, the columns, the
//     LIMIT, the keys: at most maxForwardKeys a statement, a read of more
//     being several) and the session's position bound and
//     basin.max_statement_bytes; reads ahead of the
//     partition being consumed may use only aheadConns of a pool's
//     forwardConns connections, so nodes forwarding scans to each other
//     cannot deadlock. With authentication on, nodes forward as
//     ClusterUser with the cluster secret, which Start adds to the
//     users; peerPoolConfig accepts only SCRAM from the peer (never
//     sending the secret to one that asks for it in cleartext),
//     offers channel binding over TLS and, with Options.ClusterCA,
//     verifies the peer's certificate. Lag reports only choose whom to
//     ask: a forwarded read carries the session's lag bound (sendBound),
//     the serving node refuses one its replica does not meet, and remote
//     checks the lag and position the answer comes with (ha.CheckAnswer)
//     before passing a row on, so a forged or old report cannot make a
//     bounded read return stale rows.
//
// # Serving
//
// HTTP (startHTTP): the status page at / (statuspage.go: the cluster,
// every task, lag pictures from samples the node takes, behind the
// node's authentication), /healthz once started, /readyz when every
// partition can be read within its bounds (ready.go), /metrics
// (metrics.go: pull queries by plan and route, routing decisions,
// heartbeats, per-task lag, records, bytes and transactions read at
// scrape time, freshness, the processing log by reason, restores and
// rebalances, the row, scan and plan caches, Pebble's and the embedded
// broker's figures; kafkametrics.go: a hook on every Kafka client of
// the node for connections, requests and bytes), /debug/pprof (only with Options.Pprof), /tasks (this node's
// tasks), and the control plane's /heartbeat, /lag and /clusterStatus
// (a node alone answers as its one member). docs/operations.md lists
// them for operators.
// Over TLS when the node has a certificate; peers then call https. Its
// listener caps the open connections in total and per remote host and
// closes those past the caps at once, and the server bounds how long a
// request may take to arrive and a connection may idle (httplimits.go),
// so that silent connections cannot take the process's descriptors.
//
// The cluster endpoints (/heartbeat, /lag, /tasks, /clusterStatus) go
// through peerEndpoint (peerauth.go): a bounded body and, with a
// cluster secret, an HMAC signature over the request, its receiver, a
// timestamp and a nonce, so that a forged or replayed request cannot
// make a node believe a peer alive or fresh. control (control.go) signs
// what it sends, takes heartbeats and lag reports from members of the
// assignment only, and forgets a node when it leaves the assignment:
// what a node keeps of its peers is bounded by the cluster.
//
// # Shutdown
//
// Close stops the Postgres server first, so that sessions hear FATAL
// 57P01 at once and no new work arrives, then the HTTP server (bounded
// by httpGrace), the heartbeats and the membership loop, the catalog
// replay and the tasks (each commits or aborts its transaction); in a
// cluster the node then leaves the group, so that its tasks move to their
// standbys at once rather than after the session timeout; then the stores,
// the embedded broker and the lock. Every step is bounded, so a node stops
// in well under a second. A node that is killed instead keeps its tasks
// for the session timeout, and a restart within it moves nothing.
//
// # Testing and debugging
//
// Tests here run nodes in-process (harness_test.go), SQL logic files over
// the wire (logic_test.go, ../testdata/logic), real psql and pgx, and
// clusters of real processes through internal/testcluster (cluster_test.go,
// ha_test.go, chaos_test.go: SIGKILL, SIGSTOP, restarts). To see a
// cluster's state: SHOW CLUSTER and SHOW TASKS on any node, GET
// /clusterStatus, EXPLAIN SELECT (each partition's candidates, the chosen
// one and why the others were rejected), and the log lines "balanced
// group" (the leader) and the rebalances a node asks for.
//
// # Package map
//
// Lowest first:
//   - internal/pgerr (SQLSTATE errors), internal/safe (panic recovery),
//     internal/backoff (the one retry wait), internal/connlimit (capped
//     listeners), internal/poll (tests' waits for a condition);
//   - kafka (clients, admin, embedded broker), catalog (types,
//     relations, command log);
//   - pgcodec (the Postgres wire format of values and DataRows, for
//     pgwire, pull's raw rows and forwarded reads), serde (Kafka record
//     keys and values in their key_format and value_format);
//   - sql (Postgres-flavoured parsing), planner (plans), materialize
//     (Pebble stores);
//   - ha (cluster membership, failure detection, routing and replica
//     selection decisions; Role, the one type of a replica's role);
//   - eval (expression evaluation: Env, the evaluation context;
//     functions; aggregates);
//   - stream (the streaming runtime: Runtime, one task per partition,
//     a file per task kind);
//   - pull (the pull engine over stream's stores, reads routed by ha
//     through the node's Forwarder) and query (the catalog-query
//     engine), side by side;
//   - exec (the SQL session layer: sessions, settings, transactions,
//     prepared statements, the plan cache, positions; it hands each
//     read to pull or query);
//   - pgwire (the Postgres protocol), node (this package), cmd/basin
//     (flags).
package node
