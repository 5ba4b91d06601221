package node

import (
	"fmt"
	"strconv"
	"time"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/ha"
	"github.com/basindb/basin/materialize"
	"github.com/basindb/basin/pull"
	"github.com/basindb/basin/stream"
)

// GET /readyz: the node serves reads of every table and view within
// their bounds.
//
// A node is ready when it is healthy (healthProblems), has replayed the
// catalog, holds an assignment (in a cluster), and every partition of
// every table and view can be read from it now with the relation's own
// bounds (acceptable.offset.lag; no session's): alone, its replica is
// there and caught up with its changelog; in a cluster, some replica,
// here or on a live node, qualifies as a read's routing would choose it
// (heartbeats, lag reports). A load balancer that sends reads only to
// ready nodes sends none to a node that would answer them with 55000.

// maxReadyProblems bounds the problems /readyz lists.
const maxReadyProblems = 50

// unready returns why the node is not ready, one line each; none when it
// is.
func (n *Node) unready(now time.Time) []string {
	problems := n.healthProblems()
	n.mu.Lock()
	replayed := n.mu.ready
	n.mu.Unlock()
	if !replayed {
		return append(problems, "starting: the catalog is being replayed")
	}
	c := n.clusterOf()
	if c != nil {
		if _, ok := c.assignment(); !ok {
			return append(problems, "joining the cluster: no assignment yet")
		}
	}
	for _, rel := range n.engine.Catalog.List(catalog.KindTable, catalog.KindView) {
		query, ok := n.rt.Query(rel.Name)
		if !ok {
			problems = append(problems, fmt.Sprintf("%s: not being materialized on this node yet", rel.Name))
			continue
		}
		for p, ts := range query.Tasks {
			var why string
			if c == nil {
				why = aloneUnready(rel, ts, now)
			} else {
				why = c.fwd.unready(rel, int32(p), ts, now)
			}
			if why != "" {
				problems = append(problems, fmt.Sprintf("partition %d of %s: %s", p, rel.Name, why))
			}
		}
	}
	return problems
}

// aloneUnready is why a node alone cannot serve partition ts of rel
// within its bound, "" when it can.
func aloneUnready(rel *catalog.Relation, ts *stream.TaskState, now time.Time) string {
	switch {
	case !ts.Held():
		return "no replica on this node"
	case !ts.Restored():
		return "restoring from its changelog"
	}
	if v := rel.Option("acceptable.offset.lag", ""); v != "" {
		bound, err := strconv.ParseInt(v, 10, 64)
		if lag, _ := ts.Lag(now); err == nil && lag > bound {
			return fmt.Sprintf("offset lag %d > acceptable.offset.lag %d", lag, bound)
		}
	}
	return ""
}

// unready is why no replica of partition p of rel qualifies for a read
// with the relation's bounds, as Route would order them; "" when one
// does. ts is this node's task of it.
func (f *forwarder) unready(rel *catalog.Relation, p int32, ts *stream.TaskState, now time.Time) string {
	rb, err := f.bounds(rel, nil)
	if err != nil {
		return err.Error()
	}
	_, reps, known := f.c.replicasOf(materialize.StoreID{View: rel.StoreName(), Partition: p})
	if !known {
		return "not in the assignment yet"
	}
	req := &pull.ReadRequest{Rel: rel, Partition: p, Limit: -1, Local: pull.LocalReplicaOf(ts)}
	r := ha.Route(f.replicas(reps, req, now), rb.ReadBounds, now)
	if len(r.Ordered) > 0 || len(r.Waitable) > 0 {
		return ""
	}
	why := "no replica qualifies"
	for i, rj := range r.Rejected {
		sep := ", "
		if i == 0 {
			sep = ": "
		}
		why += fmt.Sprintf("%s%s on %s %s", sep, rj.Role, rj.Node, rj.Reason)
	}
	return why
}
