/*
Package push streams the changes of a view, and the records of a stream,
to a client as they happen: SUBSCRIBE, SELECT ... EMIT CHANGES and
LISTEN on a view's name are its users.

# Where the changes come from

A view's changelog is its truth (DESIGN.md): every committed change of
every partition is a record of it, in order, in Kafka. A Subscription
reads the changelog's partitions straight from Kafka (see below), on
whichever node the client is connected to, so it needs no replica of the
view and is not moved or cut by a failover: the task that writes the changelog may
move between nodes, and the records stay where they are. Records of
aborted transactions are never read (read_committed), so a change is
seen once even when a task was fenced halfway through a batch.

Each changelog record of a row carries what it did to the view in a
header (stream.OpInsert, OpUpdate, OpDelete, or OpNone for a record that
changes no row: a delete of a key the view did not have, or a hidden
group's new state), which the view task knows from the store as it
writes the change and a reader of the record alone could not tell.

A stream's records are read from its topic; each is an insert.

# Snapshot, then changes

With snapshot (a view's default) the subscription first returns the
view's rows as of one changelog offset per partition, then every change
after those offsets. The rows come from a Pebble snapshot of the local
replica of the partition when the node has one (any replica, however far
behind: a store is a prefix of its changelog, and its checkpoint says
which offset it reflects); for a partition without one, from the
changelog itself, read from its start to its end at subscribe time and
folded by key in memory, which holds that partition's rows until they are
returned.

# Positions

The position of a subscription is, for each partition, the next offset
of the changelog (or stream topic) it has not returned: a
materialize.Position whose one topic is the changelog, written as the
same token `_position` and SET basin.min_position use. Every row carries
the position after it; AS OF a row's position continues with the change
after it, on any node, with no gap and no duplicate. A subscription
with a WHERE keeps the keys whose rows match it, since a row that stops
matching is a delete for the client; AS OF, it reads the changelog up to
the position first to know them. Snapshot rows share
the position of the snapshot's end.

# One reader per relation, and back-pressure

Subscriptions on one node to the same relation share a tail (Feeds): one
consumer of the changelog that decodes each record once and keeps the
latest changes of each partition (about 64 MiB of them over all
partitions, at least 1 MiB a partition) for every subscription to take
from. A
subscription takes the changes after its own position, evaluates its
WHERE and select list on them and makes only the rows its client asks
for, so the work per change and subscriber is that of its client's rows,
and the node reads each changelog once however many clients follow it.

A subscription whose position is behind what the tail keeps (one that
starts at a snapshot's offsets or AS OF an older position, or a client
too slow for the tail) reads with a consumer of its own, polled only when
the rows it holds are returned, with fetch sizes bounded, so it holds at
most one fetch per partition in the node's memory; once its position is
within what the tail keeps it closes that consumer and takes from the
tail. So a slow client costs the node bounded memory and never slows the
tail, the other subscriptions or the tasks that write the changelog,
which do not know subscriptions exist.

push imports stream (the runtime's consumers and stores, the changelog's
records), materialize (snapshots, positions), catalog, serde (a stream's
records), kafka (end offsets) and the internal helper pgerr.
*/
package push
