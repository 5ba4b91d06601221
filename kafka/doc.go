// Package kafka is basin's only door to Kafka: the embedded broker, the
// settings of every franz-go client basin creates, topic administration
// and Kafka's key partitioner. It imports no other basin package but the
// internal helpers backoff (retry waits) and connlimit (the broker's
// capped listener); the rest of basin talks to Kafka through it, so that
// what "a basin producer" or "a basin consumer" means is decided in one
// place.
//
// # The embedded broker
//
// `basin serve` without --brokers and `basin broker` run a single-node
// Kafka-compatible broker in process: franz-go's kfake, which speaks the
// real protocol (transactions, groups, static membership, compaction)
// and, given a data dir, persists its log as Kafka record batches plus
// its state (topics, producer ids, group offsets). Tests use the same
// broker over TCP, so nothing in basin knows it is not talking to Kafka.
//
// Lifecycle: StartBroker locks BrokerOptions.DataDir (an flock, released
// by the kernel if the process dies, so two brokers never share a log
// and a killed one leaves no stale lock), recovers what is on disk and
// listens; Close stops listening, has kfake save its state and records a
// clean shutdown in the data dir. A data dir without that record was left
// by a broker that died; StartBroker then writes the abort markers kfake
// omits for transactions open at the crash (recover.go explains why
// consumers need them and how they are written before anyone connects).
// Acknowledged writes are in the OS page cache, so they survive SIGKILL;
// BrokerOptions.SyncWrites makes them survive power loss too.
//
// Group sessions: kfake's coordinator ends sessions where Kafka's would
// not, and keeps some that Kafka's would end. It times out a member while
// it holds the member's JoinGroup or SyncGroup (Kafka counts a member
// waiting for an answer as alive) and then never answers that request,
// so the member's client hangs until its request timeout (30-40 s for a
// basin node) and rejoins as a new member, starting another rebalance;
// any join phase or leader's SyncGroup slower than a session timeout did
// it, and a leader that died took its followers with it. And it keeps a
// member that died before its JoinGroup was answered in the group for
// good, with the tasks its generation gave it. The broker's
// sessionKeeper (sessions.go) watches the group requests and the groups'
// state: it heartbeats on behalf of every member waiting for an answer,
// and removes a member dead since its JoinGroup once a newer generation
// has run for twice its session timeout, as Kafka's coordinator would
// have.
//
// The broker listens on BrokerOptions.Addr and advertises
// AdvertisedHost, because clients connect to the address in metadata
// responses, not to the one they bootstrapped from. Topics are never
// created automatically: basin creates each topic explicitly with
// EnsureTopic, with the partition count and configs the catalog says.
//
// kfake's accept loop returns for good on the first Accept error, so a
// moment out of file descriptors would stop the broker accepting until
// restart. The listener it is given (retryListener) retries every Accept
// error but a closed listener, with backoff, and Broker.Health reports
// an Accept that keeps failing or a listener closed before Close, which
// the node's /healthz turns into a 503. Under it, a connlimit.Listener
// caps the client connections open at once (BrokerOptions.MaxConnections,
// MaxConnectionsPerHost) and closes those past the caps as they are
// accepted, so that a flood of connections that never send a request
// cannot take every descriptor the process has: the node's stores and
// other ports draw on the same budget.
//
// # Clients
//
// NewClient gives every client the seed brokers, a client id and a slog
// adapter at warn level. Producers add ProducerOpts, which make
// partitioning manual: basin computes Record.Partition itself, because it
// must know where a key lives without producing it (to read a view key
// from the right partition, to keep a changelog partition aligned with its
// input partition).
//
// # Partitioners
//
// Partition is Kafka's default murmur2 partitioner. Producers in the wild
// follow other rules too: librdkafka's clients (kcat among them) hash with
// CRC32 by default and Sarama with FNV-1a. Partitioner holds each rule
// by name (ParsePartitioner takes the names librdkafka's partitioner
// setting takes), so that a relation can say which one its producers use
// and basin can tell a record that is where its key belongs from one
// that is not. partitioner_test.go checks each rule against kcat, the
// ground truth for librdkafka's.
//
// # Consumers
//
// Consumers add ConsumerOpts,
// which read committed data only: a task's output becomes visible when its
// transaction commits, never before and never if it aborts.
//
// # Admin
//
// EnsureTopic, TopicPartitions, EndOffsets and DeleteTopic wrap kadm.
// They ask the broker rather than kadm's metadata cache where a stale
// answer would matter (a topic created or deleted a moment ago), and
// report a missing topic as ErrUnknownTopic. EndOffsets returns last
// stable offsets, the end a read_committed consumer can reach, which is
// what lag is measured against.
//
// # Debugging
//
// The broker logs its requests at debug level through BrokerOptions.Logger
// and its failures at warn and error. Broker.Cluster exposes the kfake
// cluster for tests that inject faults. A data dir can be inspected with
// any Kafka tool by starting `basin broker --data-dir DIR` on it.
package kafka
