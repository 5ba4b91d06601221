package node

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/exec"
	"github.com/basindb/basin/ha"
	"github.com/basindb/basin/internal/pgerr"
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

// ReadPartition implements exec.Forwarder: the active first, then the
// standbys, then warm-ups; a replica that fails before sending a row is
// passed over for the next.
func (f *forwarder) ReadPartition(ctx context.Context, rel *catalog.Relation, p int32, key []any, emit func(catalog.Row) error) error {
	a, ok := f.c.assignment()
	if !ok {
		return pgerr.New(pgerr.ObjectNotInPrerequisiteState, "partition %d of %s has no replica on node %s and the cluster's assignment is not known yet", p, rel.Name, f.c.n.id).
			WithHint("The node is joining its cluster; try again in a moment.")
	}
	reps := a.Replicas(ha.TaskID{View: rel.StoreName(), Partition: p})
	candidates := append(append([]string{reps.Active}, reps.Standbys...), reps.Warmups...)
	query, args := forwardQuery(rel, p, key)
	var tried []string
	for _, node := range candidates {
		if node == "" || node == f.c.n.id {
			continue
		}
		addr := a.Nodes[node].PGAddr
		sent, err := f.read(ctx, addr, query, args, rel, emit)
		if err == nil {
			return nil
		}
		if sent || ctx.Err() != nil {
			return err
		}
		if pe, ok := pgerr.As(err); ok && pe.Code != pgerr.ObjectNotInPrerequisiteState {
			return err // the query itself failed: another replica would fail too
		}
		tried = append(tried, fmt.Sprintf("%s (%s): %v", node, addr, err))
	}
	if len(tried) == 0 {
		return pgerr.New(pgerr.ObjectNotInPrerequisiteState, "partition %d of %s has no replica on any node", p, rel.Name)
	}
	return pgerr.New(pgerr.ObjectNotInPrerequisiteState, "no replica of %s partition %d could serve this read: %s", rel.Name, p, strings.Join(tried, "; "))
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
