// Package ha owns how basin nodes form a cluster and how a read finds a
// replica: membership and task assignment over Kafka's group protocol,
// static membership, standby and warm-up replicas (assign.go,
// balancer.go, protocol*.go); failure detection from heartbeats
// (liveness.go); and where each partition of a read goes (router.go) and
// which replica it tries next (attempts.go).
// Every decision here is a deterministic function or state machine with
// time passed in; the goroutines, HTTP endpoints and connections that
// feed them are package node's (node/cluster.go, control.go, forward.go).
//
// # Tasks and roles
//
// A task is one partition of one table or view (materialize.StoreID: the
// relation's store name and a partition, the same name the store has in
// Pebble and the node's roles have in stream). A view's re-keying stages
// are not tasks of their own: each runs with the active of a view
// partition. Its state lives in Pebble on the nodes that hold it, and its
// changelog partition in Kafka is the truth that state is a prefix of. A
// node holds a task in one of three roles:
//
//   - active: runs the task, consuming its inputs and writing its
//     changelog; exactly one per task;
//   - standby: replicates the changelog into its own store, readable
//     within its lag (KIP-535); num.standby.replicas of them (the view's
//     WITH, else the server default), on nodes other than the active's;
//   - warm-up: restores the changelog like a standby, so that a role can
//     move to this node once it has caught up (KIP-441). It does not count
//     as a standby.
//
// No node holds a task in two roles. Role (role.go) is the one type of a
// role in basin: the assignment's three, the restoring active reads
// report, and RoleNone for a task another node holds; exec runs its tasks
// by it and node reports it.
//
// # Layers
//
// Assign (assign.go) is the decision: a pure, deterministic function from
// members (node ids, addresses, checkpointed changelog offsets), tasks
// (standby counts, changelog end offsets), the previous assignment and a
// Config to the next Assignment. It knows nothing of Kafka and is tested
// by itself: property tests over random topologies (assign_test.go) and
// scripted scenarios (testdata/assign, regenerate with -rewrite).
//
// The wire format (protocol*.go) encodes the join metadata each node
// sends and the assignment the leader sends back.
//
// Balancer (balancer.go) is the glue: a kgo.GroupBalancer that a node's
// dedicated membership client joins the cluster's group with. Whichever
// member the broker makes leader decodes everyone's join metadata, calls
// Assign, and gives every member the same bytes: the whole map, so every
// node knows who holds what (and where to reach it: the map carries each
// node's Postgres and HTTP addresses). Balancer.Run is the thin goroutine
// around it: it hands each new assignment to the node (OnAssignment) and
// triggers the rebalances described below.
//
// # Lifecycle
//
// The node runtime (package node) creates the membership topic (one
// partition; nothing is ever written to or read from it) and a Balancer
// with callbacks into itself: Local (its addresses and the offsets of
// every task it has on disk), Tasks (from the catalog, with end offsets)
// and OnAssignment (start, stop and re-role its tasks). It creates a kgo
// client with Balancer.ClientOpts plus its brokers and timeouts, and runs
// Balancer.Run(ctx, client). On a clean shutdown (SIGTERM) it calls
// Balancer.Leave, so the tasks move to their standbys at once; a node
// that dies leaves nothing, and a restart within the session timeout gets
// its tasks back (see below).
//
// The group looks like an ordinary consumer group to brokers and tools:
// the metadata and assignment travel in the consumer protocol envelopes'
// UserData, as Kafka Streams does, subscribed to the membership topic,
// with no partitions assigned. kgo is fine with an empty assignment, but
// only starts managing a group once a subscribed topic exists with
// partitions, hence the topic. The protocol is eager: with nothing
// assigned, eager revocation costs nothing; what moves between nodes is
// decided by the map, and the node runtime applies moves as it likes
// (e.g. a new active starts only once it has restored).
//
// # The assignment
//
// A replica's lag is its task's changelog end offset minus the offset it
// has checkpointed ("next offset to read"); a node without state for the
// task has lag equal to the end offset, a full restore. A replica is
// caught up when its lag is at most AcceptableRecoveryLag (default 10000,
// as Kafka Streams' acceptable.recovery.lag). So a node with no state for
// a task whose changelog holds fewer records than the bound is caught up:
// restoring that much is exactly what the bound accepts.
//
// Assign first computes a balanced target ignoring lag, then lets lag
// decide what can move now:
//
//  1. Target actives. Each node gets a quota of ⌊T/n⌋ or ⌈T/n⌉ tasks, the
//     larger quotas going to the nodes already holding most. A task stays
//     with its previous active while that node is within quota. An
//     over-quota node releases first the tasks with a warm-up elsewhere
//     (the move the last assignment started), then tasks a node with room
//     is caught up on, then in task order; released and orphaned tasks go
//     to nodes with room, caught-up ones first. This makes the target a
//     function of where things are, so it holds still across the rounds
//     of a move instead of chasing itself.
//  2. Target standbys, likewise: previous standbys (and a previous active
//     that lost its role) are kept within a quota on active+standby
//     counts; empty slots go to nodes with room, caught-up ones first.
//     Since a task's replicas must be on distinct nodes the greedy fill
//     can leave totals uneven; a repair pass moves a standby, or an active
//     (swapping roles on another task where active counts require it),
//     from loaded to light nodes until totals differ by at most one. Each
//     move lowers the sum of squared loads, so it ends.
//  3. Actual roles. A target that is caught up gets its role. Otherwise
//     the role stays on a caught-up node (for an active: the previous
//     active, else a caught-up standby, which is promoted — this is
//     failover — else any caught-up node) and the target gets a warm-up.
//     When no node is caught up, the active goes to the one with the
//     least lag. Warm-ups are capped at MaxWarmups in the cluster
//     (default 2); ones already in progress keep their place first.
//
// Whenever the result differs from the target the assignment says
// NeedsFollowUp. As warm-ups catch up, follow-up assignments move their
// roles and start the next warm-ups, until the target is reached: then
// active counts differ by at most one across nodes, active+standby counts
// too, nothing needs to move, and re-running Assign changes nothing. The
// property tests check this fixed point, and that adding a node converges
// in about (its share of replicas) / MaxWarmups rounds. Throughout, every
// task keeps as many caught-up replicas as there are caught-up nodes (up
// to 1+standbys): adding a node never leaves a partition without one.
//
// Standbys that cannot be placed (num.standby.replicas ≥ nodes) are
// reported per task in Assignment.Shortfall and logged by the leader.
//
// Stickiness needs the previous map, which every node has (it came in the
// last assignment). A leader without one — a fresh process that became
// leader — falls back to the members' offsets: for each task no live
// member held, the member with the least lag counts as its previous
// active and the next ones as its standbys, so tasks stay where their
// state is.
//
// Assign sorts everything and never iterates a map to decide, so the same
// input gives the same output on every node and every run.
//
// # Follow-up rebalances
//
// Kafka rebalances a group when a member joins or leaves, when the leader
// rejoins, or when a member rejoins with changed metadata. A follower
// rejoining with the same metadata just gets the current assignment back.
// So:
//
//   - The leader of an assignment that NeedsFollowUp (Assignment.Leader
//     names it) calls RequestRebalance after ProbingInterval (default one
//     minute, like Kafka Streams' probing rebalances; tests use
//     milliseconds). The warm-ups' new offsets arrive with the rejoin.
//   - RequestRebalance, callable on any node (say when the catalog gains or
//     drops a view), bumps a RejoinEpoch in the join metadata and makes the
//     client rejoin (kgo's ForceRebalance): the metadata changed, so the
//     broker rebalances even when the node is a follower.
//
// # Static membership (KIP-345) and kfake
//
// The membership client uses the node id as group instance id. A static
// member's Close does not leave the group: the broker keeps its place for
// the session timeout, and a node restarted within it rejoins under the
// same instance id and is handed its previous assignment without a group
// rebalance, so it resumes its tasks from its checkpoints while the rest
// of the cluster carries on untouched. If the restarted node was the
// leader, the broker tells it to skip balancing (KIP-814); kgo does, and
// the node learns it still leads from the map's Leader field. A node that
// is going away calls Leave, which sends a LeaveGroup for its instance id
// so its tasks move at once; basin's nodes do on every clean shutdown, so
// keeping a place is what a crashed or killed node gets. A node that
// crashes and does not come back is dropped after the session timeout.
//
// Brokers differ on one point. Kafka does not rebalance when a static
// member rejoins with different metadata: it stores the new metadata and
// returns the old assignment. kfake rebalances unless the bytes are
// identical. Offsets keep moving, so a restarted node's fresh metadata
// almost never matches what its previous run sent. Both behaviours are
// made right:
//
//   - To avoid the rebalance under kfake, the node persists the join
//     metadata it sends (OnJoin) and passes it back after a restart
//     (LastJoin). The first join sends those exact bytes again, if they
//     still describe the node: same id and addresses, and no task's
//     offset above what the node now has. Stale offsets under-state the
//     node's state, which is safe: the leader would at worst give it a
//     warm-up it does not need. Every later join sends fresh metadata.
//     Leaving offsets out, or rounding them, would not do: the leader
//     needs them to judge catch-up, and any rounding boundary can be
//     crossed between two runs.
//   - Under Kafka, with or without LastJoin, the restarted node may get an
//     assignment computed from metadata its previous run sent. Each
//     assignment records a digest of the metadata the leader used for
//     each node (NodeTasks.JoinDigest). When the first assignment after a
//     start was computed from other metadata than the node sent, and
//     gives it an active it is not caught up on (its state was lost or
//     is far behind), the node asks for a rebalance; otherwise it keeps
//     the assignment, as static membership intends.
//
// Under both, when a rebalance does happen, stickiness gives every node
// its tasks back.
//
// # Compatibility
//
// Join metadata and assignments carry a version byte; decoders read any
// version ≥ 1 and ignore trailing bytes, so later versions may append
// fields. A member whose metadata the leader cannot read gets the map but
// no tasks; an assignment a member cannot read fails its sync, which kgo
// retries. An incompatible change needs a new ProtocolName.
//
// # Failure detection
//
// Liveness (liveness.go) decides which peers are up from the heartbeats
// this node receives (POST /heartbeat, every HeartbeatInterval from every
// peer): a peer silent for MissedThreshold intervals is down, one that
// sends ReceivedThreshold heartbeats within a Window is up again. It is
// much faster than the group's session timeout (500 ms against 6 s with
// the defaults): the group moves tasks, while Liveness only keeps reads
// away from a node that stopped answering. Its own comment has the rules
// and why the defaults are what they are.
//
// # Routing reads
//
// Route (router.go) takes one partition's replicas, as this node knows
// them (the assignment map; liveness; the lag and position of its own
// replica and the last lag report of every other), and the session's
// ReadBounds (basin.read_from, the lag bounds, a position bound), and
// returns the replicas to try in order, those worth waiting for to reach
// the position, and every rejected one with every reason. Attempts
// (attempts.go) takes it from there: given what each attempt answered,
// it says which replica to try next (in order, the next at once when one
// fails; then peers that refused for restoring, asked to serve anyway
// when no lag bound is set; then, when heartbeats ruled out everyone,
// the nodes marked down) and when the read ends. The caller
// (node/forward.go) only makes the attempts, over pgx or in place;
// NoReplicaError turns the rejections into the 55000 users see,
// with the bounds in DETAIL and what to relax in HINT. The rules are in
// router.go's comment; docs/consistency.md, "Reads across replicas",
// tells users the same.
//
// # Debugging
//
// EXPLAIN SELECT on any node prints Route's decision for every
// partition: the candidates in order, the chosen one, the rejected ones
// and why. GET /clusterStatus shows what Liveness says of each peer and
// the age of its last lag report. The leader logs "balanced group" with
// the generation, member, task and warm-up counts, whether a follow-up is
// due and how long balancing took (the leader must send its SyncGroup
// within its session timeout, or the broker drops it from the group); a
// shortfall is a warning. Nodes log the rebalances they request and why. The group is a
// consumer group named by the cluster: kadm or kafka-consumer-groups
// --describe --members shows its members and instance ids. To replay a
// decision, feed the members' offsets, the tasks and the previous map to
// Assign, or write it as a scenario in testdata/assign.
//
// ha imports materialize (StoreID, positions) and the internal helpers
// pgerr and safe; nothing of the engines, so its decisions are tested in
// process.
package ha
