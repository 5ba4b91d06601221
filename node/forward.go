package node

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/ha"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/materialize"
	"github.com/basindb/basin/pgcodec"
	"github.com/basindb/basin/planner"
	"github.com/basindb/basin/pull"
	"github.com/basindb/basin/sql"
	"github.com/basindb/basin/stream"
)

// forwarder reads partitions this node holds no replica of from the
// nodes that do, over the Postgres wire: one pgx pool per peer, each
// connection marked basin.forwarded so the peer reads only its own
// replicas and never forwards again.
type forwarder struct {
	c *cluster

	mu    sync.Mutex
	pools map[string]*pgxpool.Pool // by Postgres address
	ahead map[string]chan struct{} // read-ahead slots, by Postgres address
	// bound is what each pooled connection's session was last given
	// (sendBound), so that a connection reading under the same bound
	// again is not told it again.
	bound map[*pgx.Conn]peerSettings
}

// forwardConns is the size of the connection pool to each peer: enough
// for the partitions being consumed by this node's queries plus
// aheadConns reads ahead. More concurrent reads wait for a connection.
const forwardConns = 12

// forwardConnectTimeout bounds connecting to a peer; a peer that does
// not answer in time is skipped for the next replica.
const forwardConnectTimeout = 2 * time.Second

func (f *forwarder) pool(addr string) (*pgxpool.Pool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p, ok := f.pools[addr]; ok {
		return p, nil
	}
	cfg, err := peerPoolConfig(&f.c.n.opts, addr)
	if err != nil {
		return nil, err
	}
	cfg.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
		ctx, cancel := context.WithTimeout(ctx, forwardConnectTimeout)
		defer cancel()
		_, err := conn.Exec(ctx, "SET basin.forwarded = on")
		return err
	}
	cfg.MaxConns = forwardConns
	cfg.BeforeClose = func(conn *pgx.Conn) {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.bound, conn)
	}
	// No ping before handing out an idle connection: a ping to a frozen
	// peer would wait outside basin.forward_timeout. A broken
	// connection fails the attempt at once and the next replica is
	// tried.
	cfg.ShouldPing = func(context.Context, pgxpool.ShouldPingParams) bool { return false }
	p, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		return nil, err
	}
	if f.pools == nil {
		f.pools = map[string]*pgxpool.Pool{}
	}
	f.pools[addr] = p
	return p, nil
}

// peerPoolConfig is how this node connects to the peer at addr. Under
// trust any user name does. Else it logs in as ClusterUser with the
// cluster secret, and the secret never leaves in clear: only SCRAM is
// accepted (require_auth: a peer, or anything at its address, that asks
// for a cleartext or MD5 password, or lets the node in without asking,
// is refused before anything derived from the secret is sent), over TLS
// when this node (and so, in a cluster configured alike, the peer) serves
// TLS, with channel binding offered: every node offers
// SCRAM-SHA-256-PLUS over TLS, so the exchange is bound to the peer's
// certificate, and a man in the middle that strips PLUS from the offer
// is caught by the real peer (the client then says it could have bound,
// inside what the proof covers). prefer rather than require, so that a
// certificate whose hash the binding cannot name (Ed25519) still works,
// unbound. With --cluster-ca the certificate
// must be signed by that CA and name the peer's address (verify-full);
// without, TLS encrypts but does not tell a peer from an impostor.
func peerPoolConfig(opts *Options, addr string) (*pgxpool.Config, error) {
	user, sslmode := "basin", "disable"
	if opts.Auth != "" && opts.Auth != "trust" {
		user = ClusterUser
	}
	q := url.Values{"application_name": {"basin-forward"}}
	if opts.TLSCert != "" {
		sslmode = "require"
		if opts.ClusterCA != "" {
			sslmode = "verify-full"
			q.Set("sslrootcert", opts.ClusterCA)
		}
		if user == ClusterUser {
			q.Set("channel_binding", "prefer")
		}
	}
	q.Set("sslmode", sslmode)
	if user == ClusterUser {
		q.Set("require_auth", "scram-sha-256")
	}
	cfg, err := pgxpool.ParseConfig(fmt.Sprintf("postgres://%s@%s/basin?%s", user, addr, q.Encode()))
	if err != nil {
		return nil, err
	}
	if user == ClusterUser {
		cfg.ConnConfig.Password = opts.ClusterSecret
	}
	cfg.ConnConfig.ConnectTimeout = forwardConnectTimeout
	return cfg, nil
}

func (f *forwarder) close() {
	// The pools are closed without mu held: closing a connection runs
	// BeforeClose, which takes mu.
	f.mu.Lock()
	pools := f.pools
	f.pools = nil
	f.mu.Unlock()
	for _, p := range pools {
		p.Close()
	}
}

// Route implements pull.Forwarder. ha.Route orders the partition's
// replicas, this node's included, by the session's basin.read_from and
// drops those that heartbeats say are down or whose lag (this node's
// own, other nodes' last lag reports) is over the session's (or the
// view's) bounds or whose position is behind the session's; the
// ha.Attempts it returns in r then says which to try next (in turn, the
// next at once when one fails before sending a row; replicas behind the
// position bound last, as they wait up to basin.position_wait to catch
// up; then the fallbacks) and, when none can serve, gives the error that
// names every replica and why. The pull engine makes the attempts: this
// node's replica in place, the others through Remote.
func (f *forwarder) Route(req *pull.ReadRequest, opts *pull.ReadOptions, r *pull.Route) error {
	rel, p := req.Rel, req.Partition
	now := time.Now()
	rb, err := f.bounds(rel, opts)
	if err != nil {
		return err
	}
	rb.MinPosition, rb.MinPositionFrom = req.MinPosition, req.MinPositionFrom
	a, reps, known := f.c.replicasOf(materialize.StoreID{View: rel.StoreName(), Partition: p})
	if !known && req.Local == nil {
		return pgerr.New(pgerr.ObjectNotInPrerequisiteState, "partition %d of %s has no replica on node %s and the cluster's assignment is not known yet", p, rel.Name, f.c.n.id).
			WithHint("The node is joining its cluster; try again in a moment.")
	}
	st := routeStatePool.Get().(*routeState)
	st.a, st.rb = a, rb
	st.infos = f.appendReplicas(st.infos[:0], reps, req, now)
	routing := ha.RouteInto(st.ordered, st.infos, rb.ReadBounds, now)
	st.ordered = routing.Ordered
	f.c.n.metrics.observeRouting(routing)
	r.Attempts, r.State = ha.NewAttempts(routing, rb.ReadBounds, f.c.n.id), st
	return nil
}

// routeState is what Route keeps of a read for its attempts: the bounds
// and assignment it routed by, and the memory its routing was made in (a
// partition has a few replicas, and every read routes).
type routeState struct {
	a              ha.Assignment
	rb             readBounds
	infos, ordered []ha.ReplicaInfo
	// stmts is the SQL of a forwarded read, made when a peer is first
	// tried: most reads of a node's own replica never need it.
	stmts []forwardStmt
}

var routeStatePool = sync.Pool{New: func() any { return new(routeState) }}

// Remote implements pull.Forwarder: attempt at, at a replica on another
// node, of the read r routed.
func (f *forwarder) Remote(ctx context.Context, r *pull.Route, req *pull.ReadRequest, at ha.Attempt,
	served func(pull.PartitionRead), emit func(catalog.Row) error) (ans ha.Answer) {
	st := r.State.(*routeState)
	ri := at.Replica
	info, ok := st.a.Nodes[ri.Node]
	if !ok {
		ans.Unreachable = true
		return ans
	}
	if st.stmts == nil {
		st.stmts = forwardQuery(req, st.rb.MaxOffsetLag >= 0 || st.rb.MaxTimeLag > 0 || len(req.MinPosition) > 0)
	}
	rr := req
	if at.ServeRestoring {
		restoring := *req
		restoring.ServeRestoring = true
		rr = &restoring
	}
	ans.Sent, ans.Err = f.remote(ctx, st.rb, rr, ri, at.Watch, info.PGAddr, st.stmts, served, emit)
	if ans.Err != nil {
		var stale *staleAnswer
		if errors.As(ans.Err, &stale) {
			ans.Stale = &stale.rej
		}
	}
	return ans
}

// Observe implements pull.Forwarder: it counts failovers.
func (f *forwarder) Observe(_ *pull.Route, at ha.Attempt, v ha.Verdict) {
	if v == ha.FailedOver {
		f.c.n.metrics.failovers.WithLabelValues(string(at.Replica.Role)).Inc()
	}
}

// Done implements pull.Forwarder: it counts reads no replica served and
// takes back the read's routing memory, without the positions its
// replicas referred to.
func (f *forwarder) Done(r *pull.Route, gaveUp bool) {
	if gaveUp {
		f.c.n.metrics.noReplica.Inc()
	}
	st, ok := r.State.(*routeState)
	if !ok {
		return
	}
	r.State = nil
	clear(st.infos[:cap(st.infos)])
	clear(st.ordered[:cap(st.ordered)])
	*st = routeState{infos: st.infos[:0], ordered: st.ordered[:0]}
	routeStatePool.Put(st)
}

// remote reads the partition from replica ri on another node (see
// attempt), telling served where it went: first from what routing knew,
// then from the first row's pseudo-columns.
func (f *forwarder) remote(ctx context.Context, rb readBounds, req *pull.ReadRequest, ri ha.ReplicaInfo, watch bool, addr string, stmts []forwardStmt,
	served func(pull.PartitionRead), emit func(catalog.Row) error) (bool, error) {
	p, ncols := req.Partition, len(req.Rel.Schema.Columns)
	last := pull.PartitionRead{Partition: p, ServedBy: ri.Node, Role: string(ri.Role), OffsetLag: ri.OffsetLag, TimeLagMs: ri.TimeLagMs, Position: ri.Position.String()}
	served(last)
	var position func(string)
	if req.NeedPosition {
		position = func(pos string) {
			last.Position = pos
			served(last)
		}
	}
	// The answer is checked against the session's bounds before any of
	// its rows is passed on: the serving node refuses a read it cannot
	// serve within them (sendBound), and whatever it or its lag report
	// said, the lag and position it sends with the rows decide.
	var check func(pull.PartitionRead) error
	if rb.MaxOffsetLag >= 0 || rb.MaxTimeLag > 0 || len(rb.MinPosition) > 0 {
		check = func(read pull.PartitionRead) error {
			pos, perr := materialize.ParsePosition(read.Position)
			if rej, ok := ha.CheckAnswer(ri, read.OffsetLag, read.TimeLagMs, pos, read.Position != "" && perr == nil, &rb.ReadBounds); !ok {
				return &staleAnswer{rej: rej}
			}
			return nil
		}
	}
	first, emitted := true, false
	sent, err := f.attempt(ctx, rb, req, ri.Node, watch, addr, stmts, position, check, func(row catalog.Row) error {
		if first {
			first = false
			last = pull.ReadFromRow(p, row, ncols)
			if check != nil {
				if err := check(last); err != nil {
					return err
				}
			}
			served(last)
		} else if check != nil && !sameLag(last, row, ncols) {
			// One partition's rows are read at one moment, so they carry
			// one lag; a row that says otherwise is not trusted either.
			if err := check(pull.ReadFromRow(p, row, ncols)); err != nil {
				return err
			}
		}
		emitted = true
		return emit(row)
	})
	if req.RawRow == nil {
		sent = emitted
	}
	var stale *staleAnswer
	if sent && errors.As(err, &stale) {
		// Rows already went out: the statement fails rather than mix them
		// with a stale replica's.
		return true, ha.NoReplicaError(req.Rel.Name, p, rb.ReadBounds, []ha.Rejection{stale.rej})
	}
	return sent, err
}

// sameLag reports whether row carries the lag last does.
func sameLag(last pull.PartitionRead, row catalog.Row, ncols int) bool {
	lag, _ := row[ncols+planner.PseudoOffsetLag].(int64)
	tlag, _ := row[ncols+planner.PseudoTimeLag].(int64)
	return lag == last.OffsetLag && tlag == last.TimeLagMs
}

// staleAnswer is the error of a forwarded read whose answer, by the lag
// or position the serving replica read it at, does not meet the read's
// bounds (ha.CheckAnswer).
type staleAnswer struct{ rej ha.Rejection }

func (e *staleAnswer) Error() string { return e.rej.Node + " " + e.rej.Reason }

// Explain implements pull.Forwarder: the routing of a read of
// req.Partition as it would go now.
func (f *forwarder) Explain(req *pull.ReadRequest, opts *pull.ReadOptions) []string {
	now := time.Now()
	rb, err := f.bounds(req.Rel, opts)
	if err != nil {
		return []string{err.Error()}
	}
	rb.MinPosition, rb.MinPositionFrom = req.MinPosition, req.MinPositionFrom
	_, reps, _ := f.c.replicasOf(materialize.StoreID{View: req.Rel.StoreName(), Partition: req.Partition})
	r := ha.Route(f.replicas(reps, req, now), rb.ReadBounds, now)
	var lines []string
	for i, ri := range r.Ordered {
		what := "candidate"
		if i == 0 {
			what = "chosen"
		}
		lines = append(lines, fmt.Sprintf("%s: %s on %s%s, offset lag %d, time lag %d ms", what, ri.Role, ri.Node, here(ri.Node == f.c.n.id), ri.OffsetLag, ri.TimeLagMs))
	}
	for _, ri := range r.Waitable {
		lines = append(lines, fmt.Sprintf("then, waiting up to basin.position_wait: %s on %s", ri.Role, ri.Node))
	}
	for _, rj := range r.Rejected {
		lines = append(lines, fmt.Sprintf("rejected: %s on %s: %s", rj.Role, rj.Node, rj.Reason))
	}
	if len(r.Ordered) == 0 && len(r.Waitable) == 0 {
		lines = append(lines, "no replica qualifies: the read fails with 55000")
	}
	return lines
}

// Replicas implements pull.Forwarder: partition p of rel's replicas on
// the other nodes, with liveness from heartbeats and state, lag and
// position from each node's last lag report.
func (f *forwarder) Replicas(rel *catalog.Relation, p int32) ([]stream.ReplicaState, bool) {
	_, reps, known := f.c.replicasOf(materialize.StoreID{View: rel.StoreName(), Partition: p})
	infos := reps.Infos()
	if !known || len(infos) == 0 {
		return nil, false
	}
	now := time.Now()
	task := materialize.StoreID{View: rel.StoreName(), Partition: p}.String()
	ctl := f.c.n.controlOf()
	var out []stream.ReplicaState
	for _, ri := range infos {
		if ri.Node == f.c.n.id {
			continue // the runtime knows its own
		}
		r := stream.ReplicaState{Node: ri.Node, Role: ri.Role, Alive: true}
		if ctl != nil {
			if l, ok := ctl.live.Get(ri.Node, now); ok {
				r.Alive = l.Alive
			}
			if lr, ok := ctl.lagOf(ri.Node); ok {
				for _, t := range lr.Tasks {
					if t.Task == task && t.Role == r.Role.String() {
						r.Reported, r.State, r.OffsetLag, r.Position = true, t.State, t.OffsetLag, lr.positions[t.Task]
					}
				}
			}
		}
		out = append(out, r)
	}
	return out, true
}

func here(local bool) string {
	if local {
		return " (this node)"
	}
	return ""
}

// replicas describes partition p's replicas for ha.Route: this node's
// own (its role and lag as they are now), and the other nodes' from the
// assignment, with liveness from heartbeats, and lag, role and position
// from their lag reports.
func (f *forwarder) replicas(reps ha.Replicas, req *pull.ReadRequest, now time.Time) []ha.ReplicaInfo {
	return f.appendReplicas(nil, reps, req, now)
}

// appendReplicas appends replicas' answer to out.
func (f *forwarder) appendReplicas(out []ha.ReplicaInfo, reps ha.Replicas, req *pull.ReadRequest, now time.Time) []ha.ReplicaInfo {
	rel, p := req.Rel, req.Partition
	start := len(out)
	infos := reps.AppendInfos(out)
	ctl := f.c.n.controlOf()
	var task string // the task's name in lag reports, made when needed
	out = infos[:start]
	for _, ri := range infos[start:] {
		if ri.Node == f.c.n.id {
			continue
		}
		if task == "" {
			task = materialize.StoreID{View: rel.StoreName(), Partition: p}.String()
		}
		if ctl != nil {
			if l, ok := ctl.live.Get(ri.Node, now); ok {
				ri.Alive, ri.DownSince = l.Alive, l.DownSince
			}
			if lr, ok := ctl.lagOf(ri.Node); ok {
				for _, t := range lr.Tasks {
					if t.Task != task {
						continue
					}
					ri.LagKnown, ri.OffsetLag, ri.TimeLagMs, ri.LagAge = true, t.OffsetLag, t.TimeLagMs, now.Sub(lr.Received)
					if t.Role == ha.RoleActive.String() && t.State == "RESTORING" {
						ri.Role = ha.RoleRestoring
					}
					if pos, ok := lr.positions[t.Task]; ok {
						ri.Position = pos
					}
				}
			}
		}
		out = append(out, ri)
	}
	if l := req.Local; l != nil {
		out = append(out, ha.ReplicaInfo{Node: f.c.n.id, Role: l.Role, Alive: true, LagKnown: true,
			OffsetLag: l.OffsetLag, TimeLagMs: l.TimeLagMs, Position: l.Position})
	}
	return out
}

// readBounds are a read's freshness bounds and how long to wait for a
// replica's first row.
type readBounds struct {
	ha.ReadBounds
	forwardTimeout time.Duration
	// maxStatementBytes is the session's basin.max_statement_bytes,
	// which the serving node bounds the forwarded statements by (plus
	// a slack for the keys and columns they add); empty without a
	// session.
	maxStatementBytes string
}

// defaultForwardTimeout is basin.forward_timeout's default.
const defaultForwardTimeout = 2 * time.Second

// bounds are the freshness bounds of a read: the session's
// basin.acceptable_offset_lag, else the view's acceptable.offset.lag;
// basin.acceptable_time_lag; basin.read_from.
func (f *forwarder) bounds(rel *catalog.Relation, opts *pull.ReadOptions) (readBounds, error) {
	if opts == nil || opts.Settings == nil {
		return f.makeBounds(rel, opts)
	}
	// Made once per relation while the session's settings stay as they
	// are (a relation's options never change), not once per read.
	key := boundsKey{rel} // one pointer: no allocation as an interface
	if v, ok := opts.Settings.Memo(key); ok {
		return v.(readBounds), nil
	}
	b, err := f.makeBounds(rel, opts)
	if err == nil {
		opts.Settings.MemoPut(key, b)
	}
	return b, err
}

// boundsKey keys a relation's read bounds in a session's Memo.
type boundsKey struct{ rel *catalog.Relation }

// makeBounds makes what bounds returns.
func (f *forwarder) makeBounds(rel *catalog.Relation, opts *pull.ReadOptions) (readBounds, error) {
	b := readBounds{ReadBounds: ha.ReadBounds{MaxOffsetLag: ha.NoOffsetLagBound, MaxLagAge: 3 * f.c.n.opts.LagReportInterval},
		forwardTimeout: defaultForwardTimeout}
	setting := func(name string) string {
		if opts == nil || opts.Settings == nil {
			return ""
		}
		v, _ := opts.Settings.Setting(name)
		return v
	}
	if v := setting("basin.acceptable_offset_lag"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return b, pgerr.New(pgerr.InvalidParameterValue, "basin.acceptable_offset_lag = %q is not a number of records", v)
		}
		b.MaxOffsetLag = n
	} else if v := rel.Option("acceptable.offset.lag", ""); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			b.MaxOffsetLag, b.OffsetLagSetting = n, "acceptable.offset.lag of "+rel.Name
		}
	}
	if v := setting("basin.acceptable_time_lag"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return b, pgerr.New(pgerr.InvalidParameterValue, "basin.acceptable_time_lag = %q is not a duration", v)
		}
		b.MaxTimeLag = d
	}
	b.ReadFrom = ha.ReadFrom(setting("basin.read_from"))
	b.maxStatementBytes = setting("basin.max_statement_bytes")
	if v := setting("basin.forward_timeout"); v != "" {
		if d, err := time.ParseDuration(v); err == nil && d > 0 {
			b.forwardTimeout = d
		}
	}
	if err := b.Validate(); err != nil {
		return b, pgerr.New(pgerr.InvalidParameterValue, "%v", err)
	}
	return b, nil
}

// attempt is read with basin.forward_timeout on the wait for the first
// row (or the end of an empty result), plus basin.position_wait when the
// read has a position bound the peer may wait for: a node that accepted
// the connection but does not answer (frozen, overloaded) is passed over
// for the next replica. Once rows flow there is no timeout. Waiting for
// a connection from the pool is not part of the timeout (that is this
// node's own load, not the peer's).
func (f *forwarder) attempt(ctx context.Context, b readBounds, req *pull.ReadRequest, node string, watch bool, addr string, stmts []forwardStmt,
	position func(string), check func(pull.PartitionRead) error, emit func(catalog.Row) error) (sent bool, err error) {
	pool, err := f.pool(addr)
	if err != nil {
		return false, err
	}
	if req.Ahead {
		// A read ahead of the partition being consumed takes one of the
		// few connections set aside for reading ahead, or waits for its
		// turn: it must never hold a connection the consumed partition
		// of some query is waiting for.
		if release, ok := f.tryAhead(addr); ok {
			defer release()
		} else if err := req.WaitTurn(ctx); err != nil {
			return false, err
		}
	}
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	started, timedOut, down := false, false, false
	// fail says why an attempt this function cut short failed.
	fail := func(err error) error {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case ctx.Err() != nil:
		case timedOut:
			return fmt.Errorf("no answer within basin.forward_timeout (%v)", b.forwardTimeout)
		case down:
			return errors.New("heartbeats said the node went down while waiting for its answer")
		}
		return err
	}
	// While no row has come (connecting included), the attempt ends as
	// soon as heartbeats say the peer is down: a frozen node is passed
	// over well before the timeout.
	if ctl := f.c.n.controlOf(); ctl != nil && watch {
		every := ctl.live.Config().HeartbeatInterval
		var watch *time.Timer
		var check func()
		check = func() {
			mu.Lock()
			defer mu.Unlock()
			switch {
			case started || timedOut || actx.Err() != nil:
			case !ctl.live.Alive(node, time.Now()):
				down = true
				cancel()
			default:
				watch = time.AfterFunc(every, check)
			}
		}
		mu.Lock()
		watch = time.AfterFunc(every, check)
		mu.Unlock()
		defer func() {
			mu.Lock()
			defer mu.Unlock()
			watch.Stop()
		}()
	}
	conn, err := pool.Acquire(actx)
	if err != nil {
		return false, fail(err)
	}
	defer conn.Release()
	// The timeout starts once a connection is ours: waiting for one is
	// this node's load, not the peer's (connecting is bounded by
	// forwardConnectTimeout).
	timeout := b.forwardTimeout
	if len(req.MinPosition) > 0 {
		timeout += req.PositionWait
	}
	timer := time.AfterFunc(timeout, func() {
		mu.Lock()
		defer mu.Unlock()
		if !started {
			timedOut = true
			cancel()
		}
	})
	defer timer.Stop()
	if err := f.sendBound(actx, conn.Conn(), b); err != nil {
		conn.Conn().Close(context.Background())
		return false, fail(err)
	}
	if req.ServeRestoring {
		if _, err := conn.Exec(actx, "SET basin.forwarded = 'restoring'"); err != nil {
			conn.Conn().Close(context.Background())
			return false, fail(err)
		}
		defer func() {
			if _, err := conn.Exec(context.Background(), "SET basin.forwarded = on"); err != nil {
				conn.Conn().Close(context.Background())
			}
		}()
	}
	if len(req.MinPosition) > 0 {
		// The peer waits for its replica to reach the position itself;
		// the setting is cleared again before the connection goes back.
		if _, err := conn.Exec(actx, "SELECT set_config('basin.min_position', $1, false), set_config('basin.position_wait', $2, false)",
			req.MinPosition.String(), req.PositionWait.String()); err != nil {
			conn.Conn().Close(context.Background())
			return false, fail(err)
		}
		defer func() {
			if _, err := conn.Exec(context.Background(), "SELECT set_config('basin.min_position', '', false)"); err != nil {
				conn.Conn().Close(context.Background())
			}
		}()
	}
	var rows int64 // rows the peer sent, over all the statements
	first := true
	onRow := func() {
		rows++
		if first {
			first = false
			mu.Lock()
			started = true
			mu.Unlock()
		}
	}
	for i, st := range stmts {
		query := st.query
		if req.Limit >= 0 {
			// A read of many keys is several statements: each may send
			// what the LIMIT has left.
			if i > 0 && rows >= req.Limit {
				break
			}
			query += " LIMIT " + strconv.FormatInt(req.Limit-rows, 10)
		}
		before := rows
		var got bool
		if req.RawRow != nil {
			got, err = readRaw(actx, conn.Conn(), query, st.args, req, check, onRow)
		} else {
			got, err = f.read(actx, conn.Conn(), query, st.args, func(row catalog.Row) error {
				onRow()
				if err := nestedFromPeer(req.Rel.Schema.Columns, row); err != nil {
					return err
				}
				return emit(row)
			})
		}
		sent = sent || got
		if err != nil {
			break
		}
		last := i == len(stmts)-1 || req.Limit >= 0 && rows >= req.Limit
		if empty := rows == before; position != nil && last || check != nil && empty {
			// Where the peer read, as it says: rows sent raw carry no
			// _position, and an empty result no rows at all, so the lag
			// report's position (older) would stand for it; and an empty
			// answer (to any of the statements) is checked against the
			// bounds by the lag it was read at, as rows are.
			if read, ok := peerLastRead(actx, conn.Conn(), req.Partition); ok {
				if check != nil && empty {
					if err := check(read); err != nil {
						return sent, err
					}
				}
				if position != nil && last {
					position(read.Position)
				}
			}
		}
		if last {
			break
		}
		// The peer has answered; until its first row, each statement
		// has basin.forward_timeout of its own.
		mu.Lock()
		if !started && !timedOut {
			timer.Reset(timeout)
		}
		mu.Unlock()
	}
	if err != nil && !sent {
		return sent, fail(err)
	}
	return sent, err
}

// peerSettings are the settings of a read that a forwarded session
// takes from the forwarding one (sendBound); "" is a setting's default.
type peerSettings struct {
	offsetLag, timeLag, maxStatementBytes string
}

// sendBound gives the session of conn the read's lag bound (as the
// session's basin.acceptable_offset_lag and basin.acceptable_time_lag),
// so that the serving node refuses (55000) a read its replica cannot
// serve within it rather than send stale rows, and the client's
// basin.max_statement_bytes, so that the serving node takes a forwarded
// statement as long as the client's own (which the forwarded one
// repeats, with the partition's keys) and no longer: a client that
// raised the limit for a long IN list has it raised on the peer too.
// Told once per connection and value: most reads repeat the last one's.
func (f *forwarder) sendBound(ctx context.Context, conn *pgx.Conn, b readBounds) error {
	var want peerSettings
	if b.MaxOffsetLag >= 0 {
		want.offsetLag = strconv.FormatInt(b.MaxOffsetLag, 10)
	}
	if b.MaxTimeLag > 0 {
		want.timeLag = b.MaxTimeLag.String()
	}
	f.mu.Lock()
	have := f.bound[conn] // a new connection's: every setting its default
	f.mu.Unlock()
	if want.maxStatementBytes = b.maxStatementBytes; want.maxStatementBytes == "" {
		want.maxStatementBytes = have.maxStatementBytes // a read without a session: the last one's stands
	}
	if have == want {
		return nil
	}
	var err error
	if want.maxStatementBytes == have.maxStatementBytes {
		_, err = conn.Exec(ctx, "SELECT set_config('basin.acceptable_offset_lag', $1, false), set_config('basin.acceptable_time_lag', $2, false)",
			want.offsetLag, want.timeLag)
	} else {
		_, err = conn.Exec(ctx, "SELECT set_config('basin.acceptable_offset_lag', $1, false), set_config('basin.acceptable_time_lag', $2, false), set_config('basin.max_statement_bytes', $3, false)",
			want.offsetLag, want.timeLag, want.maxStatementBytes)
	}
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.bound == nil {
		f.bound = map[*pgx.Conn]peerSettings{}
	}
	f.bound[conn] = want
	return nil
}

// peerLastRead asks a peer, on the connection a forwarded read of
// partition p just ran on, where and how fresh it read it (SHOW
// basin.last_read).
func peerLastRead(ctx context.Context, conn *pgx.Conn, p int32) (pull.PartitionRead, bool) {
	rows, err := conn.Query(ctx, "SHOW basin.last_read", pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		return pull.PartitionRead{}, false
	}
	defer rows.Close()
	var read pull.PartitionRead
	found := false
	for rows.Next() {
		// partition, served_by, role, offset_lag, time_lag_ms, position,
		// then relation (a peer of an earlier version has no relation):
		// the first six are read by place.
		vals, err := rows.Values()
		if err != nil || len(vals) < 6 {
			continue
		}
		part, _ := vals[0].(int32)
		by, _ := vals[1].(string)
		role, _ := vals[2].(string)
		lag, _ := vals[3].(int64)
		tlag, _ := vals[4].(int64)
		token, _ := vals[5].(string)
		if part == p {
			read, found = pull.PartitionRead{Partition: p, ServedBy: by, Role: role, OffsetLag: lag, TimeLagMs: tlag, Position: token}, true
		}
	}
	return read, found && rows.Err() == nil
}

// nestedFromPeer turns the STRUCT and MAP columns of a forwarded row,
// which came over the wire as jsonb (and jsonb[]), back into their
// values.
func nestedFromPeer(cols []catalog.Column, row catalog.Row) error {
	for i, c := range cols {
		if i >= len(row) || !c.Type.HasNested() || row[i] == nil {
			continue
		}
		v, err := pgcodec.NestedFromPeer(c.Type, row[i])
		if err != nil {
			return fmt.Errorf("column %s: %w", c.Name, err)
		}
		row[i] = v
	}
	return nil
}

// aheadConns is how many connections to each peer reads ahead may use.
const aheadConns = 4

// tryAhead takes one of addr's read-ahead slots if one is free.
func (f *forwarder) tryAhead(addr string) (release func(), ok bool) {
	f.mu.Lock()
	sem, found := f.ahead[addr]
	if !found {
		sem = make(chan struct{}, aheadConns)
		if f.ahead == nil {
			f.ahead = map[string]chan struct{}{}
		}
		f.ahead[addr] = sem
	}
	f.mu.Unlock()
	select {
	case sem <- struct{}{}:
		return func() { <-sem }, true
	default:
		return nil, false
	}
}

// forwardCachedBytes is the longest forwarded statement read prepares
// as a named statement, kept in pgx's statement cache on this node and
// as a prepared statement in the peer's session (up to 512 of them a
// connection): a read of many keys, or with a long filter, is sent
// unnamed instead, its text and plan held only while it runs.
const forwardCachedBytes = 16 << 10

// read runs the forwarded query on conn. sent reports whether a row was
// emitted before an error.
func (f *forwarder) read(ctx context.Context, conn *pgx.Conn, query string, args []any, emit func(catalog.Row) error) (sent bool, err error) {
	if len(query) > forwardCachedBytes {
		args = append([]any{pgx.QueryExecModeDescribeExec}, args...)
	}
	rows, err := conn.Query(ctx, query, args...)
	if err != nil {
		return false, peerError(err)
	}
	defer rows.Close()
	fds := rows.FieldDescriptions()
	var alloc pull.RowAlloc
	for rows.Next() {
		// The common types are decoded straight from the wire; a row
		// with any other goes through pgx.
		raw := rows.RawValues()
		row := alloc.Next(len(raw))
		fast := len(fds) == len(raw)
		for i := 0; fast && i < len(raw); i++ {
			row[i], fast = pgcodec.DecodePeer(fds[i].DataTypeOID, fds[i].Format, raw[i])
		}
		if fast {
			sent = true
			if err := emit(row); err != nil {
				return sent, err
			}
			continue
		}
		vals, err := rows.Values()
		if err != nil {
			return sent, err
		}
		for i, v := range vals {
			row[i] = pgcodec.FromDriver(v)
		}
		sent = true
		if err := emit(row); err != nil {
			return sent, err
		}
	}
	return sent, peerError(rows.Err())
}

// readRaw runs a raw read (pull.ReadRequest.RawFormats): the rows come
// in the client's formats and go to req.RawRow as wire values, never
// decoded. The columns must be the relation's as this node knows them:
// a peer on another catalog version fails the read rather than send
// bytes of other types.
//
// With check (a read under freshness bounds) the query also reads
// _offset_lag, _time_lag_ms and _position, in text, after the client's
// columns (forwardQuery): the answer is checked before its first row
// goes on, and the three are cut off each row.
func readRaw(ctx context.Context, conn *pgx.Conn, query string, args []any, req *pull.ReadRequest, check func(pull.PartitionRead) error, onRow func()) (sent bool, err error) {
	params := make([][]byte, len(args))
	for i, a := range args {
		n, ok := a.(int64)
		if !ok {
			return false, fmt.Errorf("raw forwarded read: parameter %d is a %T", i+1, a)
		}
		params[i] = strconv.AppendInt(nil, n, 10)
	}
	formats, n := req.RawFormats, len(req.RawFormats)
	if check != nil {
		formats = append(slices.Clip(formats), pgx.TextFormatCode, pgx.TextFormatCode, pgx.TextFormatCode)
	}
	rr := conn.PgConn().ExecParams(ctx, query, params, nil, nil, formats)
	cols := req.Rel.Schema.Columns
	checked := false
	var lastLag, lastTimeLag []byte // the checked lag, as the peer sent it
	for rr.NextRow() {
		vals := rr.Values()
		if !checked {
			fds := rr.FieldDescriptions()
			if len(fds) != len(formats) {
				_, _ = rr.Close()
				return false, fmt.Errorf("a forwarded read of %s returned %d columns, want %d", req.Rel.Name, len(fds), len(formats))
			}
			for i, fd := range fds[:n] {
				if fd.DataTypeOID != cols[i].Type.OID() || fd.Format != req.RawFormats[i] {
					_, _ = rr.Close()
					return false, fmt.Errorf("a forwarded read of %s returned column %s as type %d format %d, want %d format %d",
						req.Rel.Name, fd.Name, fd.DataTypeOID, fd.Format, cols[i].Type.OID(), req.RawFormats[i])
				}
			}
			checked = true
		}
		if check != nil {
			// The first row is checked, and any later one whose lag differs
			// from it (one partition's rows carry one lag).
			if !sent || string(vals[n]) != string(lastLag) || string(vals[n+1]) != string(lastTimeLag) {
				read := pull.PartitionRead{Partition: req.Partition, Position: string(vals[n+2])}
				read.OffsetLag, _ = strconv.ParseInt(string(vals[n]), 10, 64)
				read.TimeLagMs, _ = strconv.ParseInt(string(vals[n+1]), 10, 64)
				if err := check(read); err != nil {
					_, _ = rr.Close()
					return sent, err
				}
				lastLag, lastTimeLag = append(lastLag[:0], vals[n]...), append(lastTimeLag[:0], vals[n+1]...)
			}
			vals = vals[:n]
		}
		onRow()
		sent = true
		if err := req.RawRow(vals); err != nil {
			_, _ = rr.Close()
			return sent, err
		}
	}
	_, err = rr.Close()
	return sent, peerError(err)
}

// peerError keeps a peer's SQLSTATE errors as basin errors, with the
// peer's message, detail and hint.
func peerError(err error) error {
	var pe *pgconn.PgError
	if err == nil || !errors.As(err, &pe) {
		return err
	}
	out := pgerr.New(pgerr.Code(pe.Code), "%s", pe.Message)
	out.Detail, out.Hint = pe.Detail, pe.Hint
	return out
}

// forwardStmt is one statement of a forwarded read, without its LIMIT
// (attempt adds what the read's limit has left).
type forwardStmt struct {
	query string
	args  []any
}

// maxForwardKeys is how many keys one forwarded statement carries: each
// is a parameter, and a statement may have at most 65,535 (the Bind
// message counts them in 16 bits). A read of more keys of one partition
// is sent to the peer as several statements, one after another on the
// same connection.
const maxForwardKeys = 30000

// forwardQuery is the SQL that reads a partition on a peer: the columns
// the query needs (NULL for the others), then the pseudo-columns; only
// the partition, only its keys when given (at most maxForwardKeys a
// statement), only rows matching the pushed filter. The pushed LIMIT is
// attempt's to add.
//
// freshness adds to a raw read the pseudo-columns readRaw checks the
// answer by.
func forwardQuery(req *pull.ReadRequest, freshness bool) []forwardStmt {
	rel := req.Rel
	var b strings.Builder
	b.WriteString("SELECT ")
	cols := rel.Schema.Columns
	if req.RawFormats != nil {
		cols = cols[:len(req.RawFormats)] // the client's columns, as they are
	}
	for i, c := range cols {
		if i > 0 {
			b.WriteString(", ")
		}
		if req.Needed != nil && !req.Needed[i] && !c.Key && req.RawFormats == nil {
			b.WriteString("NULL")
			continue
		}
		b.WriteString(sql.QuoteIdent(c.Name))
	}
	if req.RawFormats == nil {
		for _, c := range planner.PseudoColumns {
			b.WriteString(", " + c.Name)
		}
	} else if freshness {
		b.WriteString(", _offset_lag, _time_lag_ms, _position") // readRaw's check
	}
	fmt.Fprintf(&b, " FROM %s", sql.QuoteIdent(rel.Name))
	if req.Alias != "" {
		fmt.Fprintf(&b, " AS %s", sql.QuoteIdent(req.Alias))
	}
	b.WriteString(" WHERE _partition = $1")
	// The keys come before the pushed filter, which may pin the key too
	// (a client's "key IN (...)" holds every partition's keys): the
	// serving node looks up the keys of the first IN list of the
	// conjunction, and this statement's are the fewest.
	var where string
	if req.Where != "" {
		where = " AND (" + req.Where + ")"
	}
	keyCols := rel.Schema.KeyIndexes()
	if len(req.Keys) == 1 {
		args := []any{int64(req.Partition)}
		for i, k := range keyCols {
			args = append(args, req.Keys[0][i])
			fmt.Fprintf(&b, " AND %s = $%d", sql.QuoteIdent(rel.Schema.Columns[k].Name), len(args))
		}
		b.WriteString(where)
		return []forwardStmt{{b.String(), args}}
	}
	if len(req.Keys) == 0 {
		b.WriteString(where)
		return []forwardStmt{{b.String(), []any{int64(req.Partition)}}}
	}
	// "key IN (...)": the key is one column.
	fmt.Fprintf(&b, " AND %s IN (", sql.QuoteIdent(rel.Schema.Columns[keyCols[0]].Name))
	head := b.String()
	stmts := make([]forwardStmt, 0, (len(req.Keys)+maxForwardKeys-1)/maxForwardKeys)
	for keys := req.Keys; len(keys) > 0; {
		n := min(len(keys), maxForwardKeys)
		b.Reset()
		b.Grow(len(head) + 8*n + len(where))
		b.WriteString(head)
		args := make([]any, 1, n+1)
		args[0] = int64(req.Partition)
		for i, key := range keys[:n] {
			if i > 0 {
				b.WriteString(", ")
			}
			args = append(args, key[0])
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(len(args)))
		}
		b.WriteString(")")
		b.WriteString(where)
		stmts = append(stmts, forwardStmt{b.String(), args})
		keys = keys[n:]
	}
	return stmts
}

var _ pull.Forwarder = (*forwarder)(nil)
