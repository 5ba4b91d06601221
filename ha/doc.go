// Package ha will own membership and task assignment across nodes (a
// custom kgo.GroupBalancer over Kafka's group protocol, static
// membership, standby and warm-up replicas), heartbeats, lag reports,
// cluster status and lag-aware routing of reads to the best live replica.
//
// In the single-node milestone a node runs every task itself and reads
// its own stores; exec.Runtime already reports, per partition, the role,
// offset lag, time lag and position that routing will compare. The
// cluster runtime issue fills this package in.
package ha
