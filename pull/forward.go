package pull

import (
	"context"
	"time"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/eval"
	"github.com/basindb/basin/ha"
	"github.com/basindb/basin/materialize"
	"github.com/basindb/basin/planner"
	"github.com/basindb/basin/stream"
)

// Forwarder routes the read of one partition in a cluster: it orders,
// among the partition's replicas on every node (this one included), the
// ones that meet the session's freshness bounds, best first, and reads
// those on other nodes. The pull engine makes the attempts Route's
// ha.Attempts gives, this node's replica in place and the others through
// Remote (readPartition). The node provides it; a node alone has none
// and reads its own replicas.
type Forwarder interface {
	// Route routes the read of req.Partition of req.Rel into r: the
	// attempts to make, and the Forwarder's own state for them.
	Route(req *ReadRequest, opts *ReadOptions, r *Route) error
	// Remote makes attempt at, at a replica on another node, of the
	// read r routed, calling emit for each row: rel's columns, then the
	// pseudo-columns (planner.PseudoColumns) as the serving replica
	// reports them. served is called with where the read went and may
	// be called again as rows say more.
	Remote(ctx context.Context, r *Route, req *ReadRequest, at ha.Attempt, served func(PartitionRead), emit func(catalog.Row) error) ha.Answer
	// Observe is told what r's attempts made of each answer.
	Observe(r *Route, at ha.Attempt, v ha.Verdict)
	// Done ends the read r routed; gaveUp is set when no replica served
	// it.
	Done(r *Route, gaveUp bool)
	// Explain describes how a read of req.Partition would be routed now:
	// one line per replica, in the order they would be tried, then the
	// rejected ones with their reasons.
	Explain(req *ReadRequest, opts *ReadOptions) []string
	// The replicas on other nodes, for CREATE's wait for serving
	// replicas.
	stream.Peers
}

// Route is one partition's read as a Forwarder routed it.
type Route struct {
	// Attempts says which replica to try next and when to give up.
	Attempts ha.Attempts
	// State is the Forwarder's, for Remote, Observe and Done.
	State any
}

// ReadOptions are how a pull query may read the stores, apart from what
// its expressions evaluate in (Env): the position its reads must
// reflect, whether it may leave this node, and where its rows may go
// already encoded.
type ReadOptions struct {
	// MinPosition, Writes and Seen, when set, are the position bound of
	// a read: basin.min_position, the session's own writes (with
	// basin.read_your_writes on) and, by relation partition, what its
	// earlier reads returned (with basin.monotonic_reads on). A read of
	// a partition waits up to PositionWait for a replica that reflects
	// the part of them it can show (positions.go).
	MinPosition  materialize.Position
	Writes       materialize.Position
	Seen         SeenPositions
	PositionWait time.Duration
	// Monotonic is basin.monotonic_reads: the session records the
	// position each partition is served at, so a read forwarded to
	// another node asks it for its exact one (ReadRequest.NeedPosition).
	Monotonic bool
	// NoForward keeps a read on this node: it is itself a read another
	// node forwarded here, and is never forwarded again.
	NoForward bool
	// ServeRestoring lets a forwarded read be served by a replica that
	// is still restoring; without it such a read fails with 55000 so the
	// forwarding node tries a caught-up replica first.
	ServeRestoring bool
	// Raw, when set, takes result rows already encoded for the wire (see
	// RawRows); a scatter-gather then uses it instead of the row
	// callback where it can.
	Raw RawRows
	// Settings are the session's, from which a Forwarder takes the
	// read's lag bounds and basin.read_from; nil outside a session.
	Settings eval.Session
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
}

// SetForwarder makes reads of partitions in a cluster go through f.
func (e *Engine) SetForwarder(f Forwarder) { e.fwd.Store(&f) }

// forwarder is the Forwarder reads go through; nil on a node alone.
func (e *Engine) forwarder() Forwarder {
	if f := e.fwd.Load(); f != nil {
		return *f
	}
	return nil
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
