package catalog

import (
	"fmt"
	"strings"
)

// Names of basin's internal Kafka resources. They are derived from the
// cluster name and a relation's Version, so a view dropped and created
// again under the same name never reads its predecessor's topics.

// CommandTopic is the cluster's catalog log.
func CommandTopic(cluster string) string { return "_basin-" + cluster + "-commands" }

// ProcessingLogTopic is where records that could not be processed are
// recorded.
func ProcessingLogTopic(cluster string) string { return "_basin-" + cluster + "-processing-log" }

// ProcessingLogName is the stream that reads ProcessingLogTopic.
const ProcessingLogName = "basin_processing_log"

func (r *Relation) internal(cluster, what string) string {
	return fmt.Sprintf("_basin-%s-%s-%d-%s", cluster, strings.ToLower(r.Name), r.Version, what)
}

// ChangelogTopic is the view's changelog; for a derived stream it holds
// only its tasks' markers (the input offsets each transaction reached).
func (r *Relation) ChangelogTopic(cluster string) string { return r.internal(cluster, "changelog") }

// RepartitionTopic carries a view's records re-keyed by its GROUP BY key,
// or, for a table or a view that does not re-key, the misplaced records
// forwarded to their key's partition (stream's placement).
func (r *Relation) RepartitionTopic(cluster string) string { return r.internal(cluster, "repartition") }

// ChangesTopic is the changelog of a view's change stage (a view grouped
// over a table by other than its key): the last row of each key of the
// table, as the stage last saw it, per table partition.
func (r *Relation) ChangesTopic(cluster string) string { return r.internal(cluster, "changes") }

// ChangesTransactionalID is the transactional id of a view's change
// stage for one partition of its table.
func (r *Relation) ChangesTransactionalID(cluster string, partition int32) string {
	return fmt.Sprintf("%s-%d", r.internal(cluster, "changes-task"), partition)
}

// ChangesStore is the name of the state of a view's change stage, next
// to its StoreName.
func (r *Relation) ChangesStore() string { return r.StoreName() + "#changes" }

// RegroupTopic is the changelog of the change stage of a view grouped
// over a view or a join by other columns: each source key's last row,
// per partition of the changelog it reads.
func (r *Relation) RegroupTopic(cluster string) string { return r.internal(cluster, "regroup") }

// RegroupTransactionalID is the transactional id of that change stage
// for one partition.
func (r *Relation) RegroupTransactionalID(cluster string, partition int32) string {
	return fmt.Sprintf("%s-%d", r.internal(cluster, "regroup-task"), partition)
}

// RegroupStore is the name of that change stage's state.
func (r *Relation) RegroupStore() string { return r.StoreName() + "#regroup" }

// RekeyGroup is the consumer group whose offsets record how far the
// re-keying stage has read each source partition.
func (r *Relation) RekeyGroup(cluster string) string { return r.internal(cluster, "rekey") }

// TransactionalID is the transactional id of the task for one partition
// of a view: one producer identity per task, so a zombie task on another
// node is fenced when the task starts elsewhere.
func (r *Relation) TransactionalID(cluster string, partition int32) string {
	return fmt.Sprintf("%s-%d", r.internal(cluster, "task"), partition)
}

// QueryName is the id of the persistent query that maintains a view,
// materializes a table or writes a derived stream, as SHOW QUERIES lists
// it.
func (r *Relation) QueryName() string {
	prefix := "CTAS"
	switch r.Kind {
	case KindInsert:
		return strings.ToUpper(r.Name)
	case KindTable:
		prefix = "CT"
	case KindStream:
		prefix = "CSAS"
	}
	return fmt.Sprintf("%s_%s_%d", prefix, strings.ToUpper(r.Name), r.Version)
}

// MembersTopic is the one-partition topic the nodes of a cluster
// subscribe to in their group; nothing is written to it. Kafka needs a
// subscribed topic to run a group's assignment.
func MembersTopic(cluster string) string { return "_basin-" + cluster + "-members" }

// NodesGroup is the consumer group the nodes of a cluster join to share
// the tasks.
func NodesGroup(cluster string) string { return "_basin-" + cluster + "-nodes" }

// InternalTopic reports whether a Kafka topic belongs to basin or to Kafka
// itself rather than to users: basin's own topics of any cluster (the
// "_basin-" prefix: commands, changelogs, repartition, members, processing
// log) and Kafka's ("__consumer_offsets", "__transaction_state", any
// "__" name). No user relation may be declared over one, and no INSERT
// may write to one: a forged record there stops a view partition, makes
// a view unreadable, or, in the command topic, rewrites the catalog. The
// comparison ignores case, so a name that differs only in case is refused
// too (harmless, and safe on brokers that fold case).
func InternalTopic(name string) bool {
	lower := strings.ToLower(name)
	return strings.HasPrefix(lower, internalPrefix) || strings.HasPrefix(lower, "__")
}

// internalPrefix starts every topic, group and transactional id basin
// derives (see the functions above).
const internalPrefix = "_basin-"

// StageName names join stage i (from 1) of derived stream r, a join of
// three or more relations: the intermediate stream the stage writes is
// a relation of that name and r's Version, which no catalog holds, so
// its internal topics and stores are named after it.
func (r *Relation) StageName(i int) string { return fmt.Sprintf("%s.stage%d", r.Name, i) }

// StageTopic is the internal topic of a join stage's intermediate
// stream, r being the stage's relation (StageName).
func (r *Relation) StageTopic(cluster string) string { return r.internal(cluster, "stream") }

// OwnsStageStore reports whether store is the state of one of derived
// stream r's join stages (StoreName, ChangesStore or RegroupStore of a
// StageName relation).
func (r *Relation) OwnsStageStore(store string) bool {
	rest, ok := strings.CutPrefix(store, r.Name+".stage")
	if !ok {
		return false
	}
	i := strings.IndexFunc(rest, func(c rune) bool { return c < '0' || c > '9' })
	if i <= 0 {
		return false
	}
	at, _, _ := strings.Cut(rest[i:], "#")
	return at == fmt.Sprintf("@%d", r.Version)
}
