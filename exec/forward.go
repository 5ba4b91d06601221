package exec

import (
	"context"
	"time"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/ha"
	"github.com/basindb/basin/materialize"
	"github.com/basindb/basin/planner"
)

// Forwarder routes the read of one partition in a cluster: it chooses,
// among the partition's replicas on every node (this one included), the
// best one that meets the session's freshness bounds, and reads there,
// moving to the next at once when one fails. The node provides it; a
// node alone has none and reads its own replicas.
type Forwarder interface {
	// ReadPartition reads req.Partition of req.Rel from the best replica
	// and calls emit for each row: rel's columns, then the
	// pseudo-columns (planner.PseudoColumns) as the serving replica
	// reports them. served is called with where the read went before
	// each attempt and may be called again; the last call before
	// ReadPartition returns nil is the replica that answered.
	ReadPartition(ctx context.Context, req *ReadRequest, env *Env, served func(PartitionRead), emit func(catalog.Row) error) error
	// Explain describes how a read of req.Partition would be routed now:
	// one line per replica, in the order they would be tried, then the
	// rejected ones with their reasons.
	Explain(req *ReadRequest, env *Env) []string
	// Replicas describes partition p of rel's replicas on the other
	// nodes as this node knows them, for CREATE's wait for serving
	// replicas (serving.go); assigned is false while the cluster's
	// assignment does not hold the partition.
	Replicas(rel *catalog.Relation, p int32) (replicas []ReplicaState, assigned bool)
}

// ReadRequest is the read of one partition that a Forwarder routes.
type ReadRequest struct {
	Rel       *catalog.Relation
	Partition int32
	// Keys, when set, are the keys to read (values of the key columns in
	// schema order); nil reads the whole partition.
	Keys [][]any
	// Where and Alias are the query's WHERE clause as SQL and its FROM
	// alias when the filter may run on the serving node (empty
	// otherwise: see planner.PushableFilter).
	Where, Alias string
	// Needed marks the columns the query reads; the others may come back
	// NULL. nil reads every column.
	Needed []bool
	// Limit, when not negative, is how many rows the query can use from
	// this partition (LIMIT plus OFFSET of a query that sends rows in
	// scan order with the whole filter pushed).
	Limit int64
	// MinPosition is the part of the session's position bound that this
	// partition can show (see needs); empty for none. MinPositionFrom
	// names where it came from, for messages (positions.go).
	MinPosition     materialize.Position
	MinPositionFrom string
	PositionWait    time.Duration
	// NeedPosition is set when the session records where the partition
	// was served (basin.monotonic_reads): a peer that answers is asked
	// for the position it read at, which rows sent raw, or no rows,
	// do not carry.
	NeedPosition bool
	// ServeRestoring asks a peer to serve the read even from a replica
	// that is still restoring (the Forwarder's last resort).
	ServeRestoring bool
	// Local is this node's replica of the partition; nil when it holds
	// none.
	Local *LocalReplica
	// Ahead is set when the read runs ahead of the one the query is
	// consuming (a scatter-gather prefetch). A read ahead must not wait
	// for a connection to a peer: it calls WaitTurn first, so that reads
	// blocked on a full buffer can never hold every connection the
	// current one needs.
	Ahead    bool
	WaitTurn func(context.Context) error
	// RawFormats, when set, asks for the relation's first
	// len(RawFormats) columns as wire values in these formats (0 text,
	// 1 binary), each row handed to RawRow instead of the row callback:
	// the gathering node passes them to its client as they are. Only
	// for a read of a whole partition (no Keys) whose filter, if any,
	// is all in Where.
	RawFormats []int16
	RawRow     func(vals [][]byte) error
}

// LocalReplica is this node's replica of a partition as the router sees
// it, and how to read it.
type LocalReplica struct {
	// Role is ha.RoleActive, ha.RoleRestoring, ha.RoleStandby or
	// ha.RoleWarmup.
	Role      ha.Role
	OffsetLag int64
	TimeLagMs int64
	Position  materialize.Position
	// Read reads the partition here (waiting for MinPosition up to
	// PositionWait), calling served and emit as ReadPartition does.
	Read func(ctx context.Context) error
}

// SetForwarder makes reads of partitions in a cluster go through f.
func (rt *Runtime) SetForwarder(f Forwarder) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.mu.fwd = f
}

func (rt *Runtime) forwarder() Forwarder {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.mu.fwd
}

// ReadFromRow is where a forwarded row says it was served: the
// pseudo-columns after the relation's ncols columns.
func ReadFromRow(p int32, row catalog.Row, ncols int) PartitionRead {
	read := PartitionRead{Partition: p}
	read.ServedBy, _ = row[ncols+planner.PseudoServedBy].(string)
	read.Role, _ = row[ncols+planner.PseudoRole].(string)
	read.OffsetLag, _ = row[ncols+planner.PseudoOffsetLag].(int64)
	read.TimeLagMs, _ = row[ncols+planner.PseudoTimeLag].(int64)
	read.Position, _ = row[ncols+planner.PseudoPosition].(string)
	return read
}

// RawRows is implemented by a ResultWriter that takes rows already
// encoded for the wire (pgwire's). A read whose rows go out as read
// (stored columns in stored order, no sorting, grouping, DISTINCT or
// OFFSET) then encodes each partition's rows in the goroutine reading
// it, and a scatter-gather of leading columns passes rows a peer sent in
// the client's formats on without decoding them.
type RawRows interface {
	// WireFormats is each result column's format: 0 text, 1 binary.
	WireFormats() []int16
	// AppendRow appends the DataRow message of vals to dst; it may be
	// called from several goroutines at once.
	AppendRow(dst []byte, vals []any) ([]byte, error)
	// WriteRows writes DataRow messages, rows of them; b is not kept
	// past the call.
	WriteRows(b []byte, rows int) error
}
