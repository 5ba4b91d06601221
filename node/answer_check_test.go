package node

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/ha"
	"github.com/basindb/basin/materialize"
	"github.com/basindb/basin/pull"
)

// TestRemoteRejectsStaleAnswer checks the forwarding node's own check of
// an answer, with a real node as the peer that is not asked to enforce
// the bound itself: the routing info claims the replica is current, the
// bound asks for a position the peer's replica has not reached, and the
// rows the peer sends say so. remote must pass none of them on and say
// why, for decoded rows, raw rows and an empty answer alike.
func TestRemoteRejectsStaleAnswer(t *testing.T) {
	n := startNode(t, t.TempDir())
	conn := connect(t, n.PGAddr())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := conn.Exec(ctx, "CREATE TABLE t (id BIGINT PRIMARY KEY, v VARCHAR) WITH (partitions = 1)"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "INSERT INTO t (id, v) VALUES (1, 'a'), (2, 'b')"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, func() error {
		var c int64
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM t").Scan(&c); err != nil || c != 2 {
			return errors.New("rows not there yet")
		}
		return nil
	})
	rel, ok := n.engine.Catalog.Lookup("t")
	if !ok {
		t.Fatal("no relation t")
	}
	f := &forwarder{c: &cluster{n: n}}
	defer f.close()
	ri := ha.ReplicaInfo{Node: "peer", Role: ha.RoleActive, Alive: true, LagKnown: true} // the report: current
	// A bound ahead of anything written; not sent to the peer (only
	// req.MinPosition is), so only the answer can tell.
	rb := readBounds{ReadBounds: ha.ReadBounds{MaxOffsetLag: ha.NoOffsetLagBound,
		MinPosition: materialize.Position{rel.Topic: {0: 1 << 40}}}, forwardTimeout: 5 * time.Second}
	for _, tc := range []struct {
		name string
		req  pull.ReadRequest
	}{
		{"rows", pull.ReadRequest{Rel: rel, Partition: 0, Limit: -1}},
		{"raw rows", pull.ReadRequest{Rel: rel, Partition: 0, Limit: -1, RawFormats: []int16{0, 0}}},
		{"empty", pull.ReadRequest{Rel: rel, Partition: 0, Limit: -1, Where: "id = 99"}},
	} {
		req := tc.req
		emitted := 0
		if req.RawFormats != nil {
			req.RawRow = func([][]byte) error { emitted++; return nil }
		}
		sent, err := f.remote(ctx, rb, &req, ri, false, n.PGAddr(), forwardQuery(&req, true), func(pull.PartitionRead) {},
			func(catalog.Row) error { emitted++; return nil })
		var stale *staleAnswer
		if !errors.As(err, &stale) || sent || emitted != 0 {
			t.Fatalf("%s: sent %v, %d rows passed on, err %v; want a stale answer and nothing passed on", tc.name, sent, emitted, err)
		}
		if !strings.Contains(stale.rej.Reason, "answered at a position behind the bound: "+rel.Topic+"/0 at ") || stale.rej.Code != ha.RejectStaleAnswer {
			t.Errorf("%s: rejection %q", tc.name, stale.rej.Reason)
		}
	}
	// Within the bound the same reads pass.
	rb.MinPosition, rb.MaxOffsetLag = nil, 1000
	for _, raw := range []bool{false, true} {
		req := pull.ReadRequest{Rel: rel, Partition: 0, Limit: -1}
		emitted := 0
		if raw {
			req.RawFormats, req.RawRow = []int16{0, 0}, func(vals [][]byte) error {
				if len(vals) != 2 {
					t.Errorf("raw row of %d values, want 2", len(vals))
				}
				emitted++
				return nil
			}
		}
		if _, err := f.remote(ctx, rb, &req, ri, false, n.PGAddr(), forwardQuery(&req, true), func(pull.PartitionRead) {},
			func(catalog.Row) error { emitted++; return nil }); err != nil || emitted != 2 {
			t.Fatalf("raw %v within the bound: %d rows, %v", raw, emitted, err)
		}
	}
}
