package node

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/exec"
	"github.com/basindb/basin/ha"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/materialize"
	"github.com/basindb/basin/planner"
	"github.com/basindb/basin/sql"
)

// forwarder reads partitions this node holds no replica of from the
// nodes that do, over the Postgres wire: one pgx pool per peer, each
// connection marked basin.forwarded so the peer reads only its own
// replicas and never forwards again.
type forwarder struct {
	c *cluster

	mu    sync.Mutex
	pools map[string]*pgxpool.Pool // by Postgres address
}

// forwardConnectTimeout bounds connecting to a peer; a peer that does
// not answer in time is skipped for the next replica.
const forwardConnectTimeout = 2 * time.Second

func (f *forwarder) pool(addr string) (*pgxpool.Pool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p, ok := f.pools[addr]; ok {
		return p, nil
	}
	cfg, err := pgxpool.ParseConfig(fmt.Sprintf("postgres://basin@%s/basin?sslmode=disable&application_name=basin-forward", addr))
	if err != nil {
		return nil, err
	}
	cfg.ConnConfig.ConnectTimeout = forwardConnectTimeout
	cfg.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
		_, err := conn.Exec(ctx, "SET basin.forwarded = on")
		return err
	}
	cfg.MaxConns = 8
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

func (f *forwarder) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.pools {
		p.Close()
	}
	f.pools = nil
}

// ReadPartition implements exec.Forwarder. ha.Route orders the
// partition's replicas by the session's basin.read_from and drops those
// that heartbeats say are down or whose last lag report is over the
// session's (or the view's) bounds; each is tried in turn, the next at
// once when one fails before sending a row. When none can serve, the
// error names every replica and why.
func (f *forwarder) ReadPartition(ctx context.Context, rel *catalog.Relation, p int32, key []any, env *exec.Env, emit func(catalog.Row) error) error {
	a, ok := f.c.assignment()
	if !ok {
		return pgerr.New(pgerr.ObjectNotInPrerequisiteState, "partition %d of %s has no replica on node %s and the cluster's assignment is not known yet", p, rel.Name, f.c.n.id).
			WithHint("The node is joining its cluster; try again in a moment.")
	}
	now := time.Now()
	rb, err := f.bounds(rel, env)
	if err != nil {
		return err
	}
	bounds := rb.ReadBounds
	r := ha.Route(f.replicas(a, rel, p, now), bounds, now)
	rejected := r.Rejected
	query, args := forwardQuery(rel, p, key)
	for _, ri := range r.Ordered {
		if ri.Node == f.c.n.id {
			continue // not held here after all (a task starting or stopping)
		}
		sent, err := f.attempt(ctx, rb, a.Nodes[ri.Node].PGAddr, query, args, rel, emit)
		if err == nil {
			return nil
		}
		if sent || ctx.Err() != nil {
			return err
		}
		if pe, ok := pgerr.As(err); ok && pe.Code != pgerr.ObjectNotInPrerequisiteState {
			return err // the query itself failed: another replica would fail too
		}
		rejected = append(rejected, ha.AttemptFailed(ri, err))
	}
	return ha.NoReplicaError(rel.Name, p, bounds, rejected)
}

// replicas describes partition p's replicas on other nodes for ha.Route:
// liveness from heartbeats, lag and role from the nodes' lag reports.
func (f *forwarder) replicas(a ha.Assignment, rel *catalog.Relation, p int32, now time.Time) []ha.ReplicaInfo {
	infos := a.Replicas(ha.TaskID{View: rel.StoreName(), Partition: p}).Infos()
	ctl := f.c.n.controlOf()
	task := exec.TaskKey{Store: rel.StoreName(), Partition: p}.String()
	out := infos[:0]
	for _, ri := range infos {
		if ri.Node == f.c.n.id {
			continue
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
					if t.Role == "active" && t.State == "RESTORING" {
						ri.Role = ha.RoleRestoring
					}
					if pos, err := materialize.ParsePosition(t.Position); err == nil {
						ri.Position = pos
					}
				}
			}
		}
		out = append(out, ri)
	}
	return out
}

// readBounds are a read's freshness bounds and how long to wait for a
// replica's first row.
type readBounds struct {
	ha.ReadBounds
	forwardTimeout time.Duration
}

// defaultForwardTimeout is basin.forward_timeout's default.
const defaultForwardTimeout = 2 * time.Second

// bounds are the freshness bounds of a read: the session's
// basin.acceptable_offset_lag, else the view's acceptable.offset.lag;
// basin.acceptable_time_lag; basin.read_from.
func (f *forwarder) bounds(rel *catalog.Relation, env *exec.Env) (readBounds, error) {
	b := readBounds{ReadBounds: ha.ReadBounds{MaxOffsetLag: ha.NoOffsetLagBound, MaxLagAge: 3 * f.c.n.opts.LagReportInterval},
		forwardTimeout: defaultForwardTimeout}
	setting := func(name string) string {
		if env == nil || env.Session == nil {
			return ""
		}
		v, _ := env.Session.Setting(name)
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
// row (or the end of an empty result): a node that accepted the
// connection but does not answer (frozen, overloaded) is passed over for
// the next replica. Once rows flow there is no timeout.
func (f *forwarder) attempt(ctx context.Context, b readBounds, addr, query string, args []any, rel *catalog.Relation, emit func(catalog.Row) error) (bool, error) {
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	started, timedOut := false, false
	timer := time.AfterFunc(b.forwardTimeout, func() {
		mu.Lock()
		defer mu.Unlock()
		if !started {
			timedOut = true
			cancel()
		}
	})
	defer timer.Stop()
	sent, err := f.read(actx, addr, query, args, rel, func(row catalog.Row) error {
		mu.Lock()
		started = true
		mu.Unlock()
		return emit(row)
	})
	mu.Lock()
	defer mu.Unlock()
	if err != nil && timedOut && ctx.Err() == nil {
		return sent, fmt.Errorf("no answer within basin.forward_timeout (%v)", b.forwardTimeout)
	}
	return sent, err
}

// read runs the forwarded query on the node at addr. sent reports whether
// a row was emitted before an error.
func (f *forwarder) read(ctx context.Context, addr, query string, args []any, rel *catalog.Relation, emit func(catalog.Row) error) (sent bool, err error) {
	pool, err := f.pool(addr)
	if err != nil {
		return false, err
	}
	rows, err := pool.Query(ctx, query, args...)
	if err != nil {
		return false, peerError(err)
	}
	defer rows.Close()
	cols := rel.Schema.Columns
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return sent, err
		}
		row := make(catalog.Row, len(vals))
		for i, v := range vals {
			t := catalog.Varchar
			if i < len(cols) {
				t = cols[i].Type
			} else {
				t = planner.PseudoColumns[i-len(cols)].Type
			}
			if row[i], err = fromPeer(v, t); err != nil {
				return sent, err
			}
		}
		sent = true
		if err := emit(row); err != nil {
			return sent, err
		}
	}
	return sent, peerError(rows.Err())
}

// peerError keeps a peer's SQLSTATE errors as basin errors.
func peerError(err error) error {
	var pe interface{ SQLState() string }
	if err == nil || !errors.As(err, &pe) {
		return err
	}
	return pgerr.New(pgerr.Code(pe.SQLState()), "%s", strings.TrimPrefix(err.Error(), "ERROR: "))
}

// forwardQuery is the SQL that reads partition p of rel (only key, when
// given) on a peer: every column, then the pseudo-columns.
func forwardQuery(rel *catalog.Relation, p int32, key []any) (string, []any) {
	var b strings.Builder
	b.WriteString("SELECT ")
	for i, c := range rel.Schema.Columns {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(sql.QuoteIdent(c.Name))
	}
	for _, c := range planner.PseudoColumns {
		b.WriteString(", " + c.Name)
	}
	fmt.Fprintf(&b, " FROM %s WHERE _partition = $1", sql.QuoteIdent(rel.Name))
	args := []any{int64(p)}
	if key != nil {
		for i, k := range rel.Schema.KeyIndexes() {
			args = append(args, key[i])
			fmt.Fprintf(&b, " AND %s = $%d", sql.QuoteIdent(rel.Schema.Columns[k].Name), len(args))
		}
	}
	return b.String(), args
}

// fromPeer converts a value pgx decoded to the Go value of basin type t
// (the widths differ: int4 arrives as int32, basin keeps int64).
func fromPeer(v any, _ catalog.Type) (any, error) {
	switch v := v.(type) {
	case nil:
		return nil, nil
	case int16:
		return int64(v), nil
	case int32:
		return int64(v), nil
	case float32:
		return float64(v), nil
	case time.Time:
		return v.UTC(), nil
	}
	return v, nil
}

var _ exec.Forwarder = (*forwarder)(nil)
