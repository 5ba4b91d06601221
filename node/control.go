package node

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/basindb/basin/exec"
	"github.com/basindb/basin/ha"
	"github.com/basindb/basin/internal/safe"
	"github.com/basindb/basin/materialize"
	"github.com/basindb/basin/stream"
)

// The control plane between the nodes of a cluster (KLIP-12): every node
// POSTs a heartbeat to every other every heartbeat interval and its
// tasks' lags every lag interval; GET /clusterStatus reports what this
// node knows of all of them. Heartbeats feed ha.Liveness, which declares
// a silent node down within a second with the defaults, well before the
// group's session timeout moves its tasks; reads use both (ha.Route).
type control struct {
	n    *Node
	live *ha.Liveness
	// client sends every request of this node to its peers (the
	// heartbeats, the lag reports, GET /tasks), with a timeout from the
	// request's context; scheme is https when the node has a
	// certificate (see url).
	client   *http.Client
	scheme   string
	lagEvery time.Duration
	cancel   context.CancelFunc
	wg       sync.WaitGroup

	// mu guards lags and orders the handlers' membership checks with
	// onAssignment's pruning (see there).
	mu   sync.Mutex
	lags map[string]lagReport // by node: its latest report; members of the current assignment only
}

// heartbeat is the body of POST /heartbeat.
type heartbeat struct {
	Node string `json:"node"`
	// SentMs is the sender's clock, for the record; liveness uses the
	// receiver's clock only.
	SentMs int64 `json:"sent_ms"`
}

// lagReport is the body of POST /lag: the sender's tasks with their lags.
type lagReport struct {
	Node       string              `json:"node"`
	Generation int32               `json:"generation"`
	Tasks      []stream.TaskStatus `json:"tasks"`
	// Version is the sender's basin version; ProcessingLog the last
	// records its tasks skipped (stream.Runtime.RecentProcessingLog),
	// for the status pages of the other nodes.
	Version       string                      `json:"version,omitempty"`
	ProcessingLog []stream.ProcessingLogEntry `json:"processing_log,omitempty"`
	// Received is when this node received it (not sent).
	Received time.Time `json:"-"`
	// positions are the tasks' positions, parsed once on receipt rather
	// than at every read routed with the report.
	positions map[string]materialize.Position
}

// startControl prepares the control plane; control.start starts its
// senders once the cluster membership exists.
func (n *Node) startControl(cfg ha.LivenessConfig, lagEvery time.Duration) error {
	live, err := ha.NewLiveness(cfg)
	if err != nil {
		return err
	}
	c := &control{n: n, live: live, lagEvery: lagEvery, lags: map[string]lagReport{}, scheme: "http"}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if n.opts.TLSCert != "" {
		// A node with a certificate serves its HTTP address over TLS
		// (startHTTP), and the nodes of a cluster are configured alike,
		// as for forwarded reads. With --cluster-ca the peer's
		// certificate must be signed by it and name the peer's address
		// (forwarded reads' verify-full); without one the connection is
		// encrypted but the peer not verified (sslmode=require): what
		// makes a request a node's is its signature (peerauth.go).
		c.scheme = "https"
		tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: true}
		if ca := n.opts.ClusterCA; ca != "" {
			pem, err := os.ReadFile(ca)
			if err != nil {
				return fmt.Errorf("reading the cluster CA (--cluster-ca): %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return fmt.Errorf("--cluster-ca %s holds no PEM certificate", ca)
			}
			tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool}
		}
	}
	c.client = &http.Client{Transport: tr}
	c.cancel = func() {}
	n.control.Store(c)
	return nil
}

// start starts sending, once the node's cluster membership exists.
func (c *control) start() {
	n := c.n
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	c.wg.Add(2)
	// A panic in a loop is logged and the loop goes on (every paces it
	// by its ticker): a node that stopped sending heartbeats while it
	// serves would be taken for dead.
	go func() {
		defer c.wg.Done()
		hb := c.live.Config().HeartbeatInterval
		safe.Restart(ctx, n.log, "panic in the heartbeat loop; restarting it", hb, func() {
			c.every(ctx, hb, func(peer string, nt ha.NodeTasks) {
				if !c.post(ctx, peer, nt.HTTPAddr, "/heartbeat", heartbeat{Node: n.id, SentMs: time.Now().UnixMilli()}) && ctx.Err() == nil {
					n.metrics.hbFailed.WithLabelValues(peer).Inc()
				}
			})
		})
	}()
	go func() {
		defer c.wg.Done()
		safe.Restart(ctx, n.log, "panic in the lag report loop; restarting it", c.lagEvery, func() {
			c.every(ctx, c.lagEvery, func(peer string, nt ha.NodeTasks) {
				r := n.localTasks()
				c.post(ctx, peer, nt.HTTPAddr, "/lag", lagReport{Node: n.id, Generation: r.Generation, Tasks: r.Tasks,
					Version: exec.Version, ProcessingLog: n.rt.RecentProcessingLog()})
			})
		})
	}()
}

func (c *control) close() {
	c.cancel()
	c.wg.Wait()
	c.client.CloseIdleConnections()
}

// url is the URL of path on the peer HTTP address addr.
func (c *control) url(addr, path string) string { return c.scheme + "://" + addr + path }

// every calls send for each other node of the assignment, every d, each
// in its own goroutine so that a hung peer delays no other.
func (c *control) every(ctx context.Context, d time.Duration, send func(peer string, nt ha.NodeTasks)) {
	t := time.NewTicker(d)
	defer t.Stop()
	var inflight sync.WaitGroup
	defer inflight.Wait()
	busy := map[string]bool{} // peers whose last send has not returned
	var mu sync.Mutex
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		a, ok := c.n.clusterOf().assignment()
		if !ok {
			continue
		}
		for _, id := range a.NodeIDs() {
			if id == c.n.id || a.Nodes[id].HTTPAddr == "" {
				continue
			}
			mu.Lock()
			if busy[id] {
				mu.Unlock()
				continue
			}
			busy[id] = true
			mu.Unlock()
			inflight.Add(1)
			go func(id string, nt ha.NodeTasks) {
				defer inflight.Done()
				// A panic ends this send only; the peer is sent to
				// again at the next tick.
				_ = safe.Do(c.n.log, "panic sending to a peer", func() { send(id, nt) })
				mu.Lock()
				busy[id] = false
				mu.Unlock()
			}(id, a.Nodes[id])
		}
	}
}

// post sends v as JSON to peer, signed when the cluster has a secret,
// and reports whether the peer took it; failures are the receiver's
// liveness problem.
func (c *control) post(ctx context.Context, peer, addr, path string, v any) bool {
	b, err := json.Marshal(v)
	if err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, c.live.Config().HeartbeatInterval*5)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url(addr, path), bytes.NewReader(b))
	if err != nil {
		return false
	}
	req.Header.Set("Content-Type", "application/json")
	c.n.peerAuth.sign(req, peer, b, time.Now())
	resp, err := c.client.Do(req)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode/100 == 2
}

// onAssignment tells the liveness tracker of the assignment's nodes
// and forgets the nodes that left it: their liveness and their last lag
// report. With the handlers taking reports from members only, the lag
// map and the tracker hold at most one entry per member.
//
// It runs after the cluster stored a, and takes c.mu as the handlers do
// around their membership check: a report checked against the previous
// assignment is stored before this prunes it, never after.
func (c *control) onAssignment(a ha.Assignment) {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range a.NodeIDs() {
		if id != c.n.id {
			c.live.Add(id, now)
		}
	}
	for id := range c.live.Status(now) {
		if _, ok := a.Nodes[id]; !ok || id == c.n.id {
			c.live.Forget(id)
		}
	}
	for id := range c.lags {
		if _, ok := a.Nodes[id]; !ok || id == c.n.id {
			delete(c.lags, id)
		}
	}
}

// member reports whether node is another member of the current
// assignment, and says why not in an error for the sender otherwise.
// Heartbeats and lag reports are taken from members only: each other
// node id would be an entry (and a metric series) a forger could add
// without end. c.mu must be held (see onAssignment).
func (c *control) memberLocked(node string) error {
	if node == c.n.id {
		return fmt.Errorf("%q is this node's own id", node)
	}
	cl := c.n.clusterOf()
	if cl == nil {
		return errors.New("this node has not joined its cluster yet")
	}
	a, ok := cl.assignment()
	if !ok {
		return errors.New("this node has no assignment yet")
	}
	if _, ok := a.Nodes[node]; !ok {
		return fmt.Errorf("node %q is not a member of this node's assignment (generation %d)", node, a.Generation)
	}
	return nil
}

// handleHeartbeat is POST /heartbeat.
func (c *control) handleHeartbeat(w http.ResponseWriter, r *http.Request) {
	var hb heartbeat
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&hb); err != nil || hb.Node == "" {
		http.Error(w, "a heartbeat is {\"node\": \"<id>\"}", http.StatusBadRequest)
		return
	}
	now := time.Now()
	c.mu.Lock()
	err := c.memberLocked(hb.Node)
	var missed int
	if err == nil {
		if l, ok := c.live.Get(hb.Node, now); ok && !l.LastHeartbeat.IsZero() {
			// Intervals that passed without a heartbeat before this one.
			missed = int(now.Sub(l.LastHeartbeat)/c.live.Config().HeartbeatInterval) - 1
		}
		c.live.Observe(hb.Node, now)
	}
	c.mu.Unlock()
	if err != nil {
		http.Error(w, "heartbeat ignored: "+err.Error(), http.StatusForbidden)
		return
	}
	if missed > 0 {
		c.n.metrics.hbMissed.WithLabelValues(hb.Node).Add(float64(missed))
	}
	w.WriteHeader(http.StatusNoContent)
}

// handleLag is POST /lag.
func (c *control) handleLag(w http.ResponseWriter, r *http.Request) {
	var lr lagReport
	if err := json.NewDecoder(r.Body).Decode(&lr); err != nil || lr.Node == "" {
		http.Error(w, "a lag report is {\"node\": \"<id>\", \"tasks\": [...]}", http.StatusBadRequest)
		return
	}
	lr.Received = time.Now()
	lr.positions = make(map[string]materialize.Position, len(lr.Tasks))
	for _, t := range lr.Tasks {
		if pos, err := materialize.ParsePosition(t.Position); err == nil {
			lr.positions[t.Task] = pos
		}
	}
	c.mu.Lock()
	err := c.memberLocked(lr.Node)
	if err == nil {
		c.lags[lr.Node] = lr
	}
	c.mu.Unlock()
	if err != nil {
		http.Error(w, "lag report ignored: "+err.Error(), http.StatusForbidden)
		return
	}
	c.n.metrics.lagReports.WithLabelValues(lr.Node).Inc()
	w.WriteHeader(http.StatusNoContent)
}

// lagOf returns the latest lag report of node, if any.
func (c *control) lagOf(node string) (lagReport, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.lags[node]
	return r, ok
}

// nodeStatus is one node in GET /clusterStatus (docs/operations.md
// lists its fields).
type nodeStatus struct {
	Node          string              `json:"node"`
	Self          bool                `json:"self,omitempty"`
	Version       string              `json:"version,omitempty"` // as its last lag report said, for another node
	Alive         bool                `json:"alive"`
	LastHeartbeat *time.Time          `json:"last_heartbeat,omitempty"`
	DownSince     *time.Time          `json:"down_since,omitempty"`
	LagReportAge  *float64            `json:"lag_report_age_s,omitempty"`
	PGAddr        string              `json:"pg_addr"`
	HTTPAddr      string              `json:"http_addr"`
	Tasks         []stream.TaskStatus `json:"tasks"`
	// ProcessingLog is the last records the node's tasks skipped, as its
	// last lag report said (the answering node's, as they are now).
	ProcessingLog []stream.ProcessingLogEntry `json:"processing_log,omitempty"`
}

// clusterStatus is the body of GET /clusterStatus.
type clusterStatus struct {
	Node       string       `json:"node"`
	Generation int32        `json:"generation"`
	Leader     string       `json:"leader"`
	Nodes      []nodeStatus `json:"nodes"`
	// Rebalances are the last assignments this node received, latest
	// first.
	Rebalances []rebalance `json:"rebalances,omitempty"`
}

// status is GET /clusterStatus: every node of the assignment with its
// liveness as heartbeats tell it and its tasks as its last lag report
// (this node's own, as they are now).
func (c *control) status() clusterStatus {
	now := time.Now()
	st := clusterStatus{Node: c.n.id}
	a, _ := c.n.clusterOf().assignment()
	st.Generation, st.Leader = a.Generation, a.Leader
	st.Rebalances = c.n.clusterOf().lastRebalances()
	for _, id := range a.NodeIDs() {
		ns := nodeStatus{Node: id, PGAddr: a.Nodes[id].PGAddr, HTTPAddr: a.Nodes[id].HTTPAddr, Tasks: []stream.TaskStatus{}}
		if id == c.n.id {
			ns.Self, ns.Alive, ns.Version, ns.Tasks = true, true, exec.Version, c.n.localTasks().Tasks
			ns.ProcessingLog = c.n.rt.RecentProcessingLog()
		} else {
			if l, ok := c.live.Get(id, now); ok {
				ns.Alive = l.Alive
				if !l.LastHeartbeat.IsZero() {
					ns.LastHeartbeat = &l.LastHeartbeat
				}
				if !l.DownSince.IsZero() {
					ns.DownSince = &l.DownSince
				}
			}
			if lr, ok := c.lagOf(id); ok {
				age := now.Sub(lr.Received).Seconds()
				ns.LagReportAge, ns.Tasks = &age, lr.Tasks
				ns.Version, ns.ProcessingLog = lr.Version, lr.ProcessingLog
			}
		}
		st.Nodes = append(st.Nodes, ns)
	}
	sort.Slice(st.Nodes, func(i, j int) bool { return st.Nodes[i].Node < st.Nodes[j].Node })
	return st
}

// clusterStatus is what GET /clusterStatus answers on this node, in a
// cluster or alone.
func (n *Node) clusterStatus() clusterStatus {
	if c := n.controlOf(); c != nil && n.clusterOf() != nil {
		return c.status()
	}
	return n.soloStatus()
}

// soloStatus is GET /clusterStatus on a node that is not in a cluster:
// itself, the one member, leading generation 0.
func (n *Node) soloStatus() clusterStatus {
	return clusterStatus{Node: n.id, Leader: n.id, Nodes: []nodeStatus{{
		Node: n.id, Self: true, Alive: true, Version: exec.Version,
		PGAddr: n.PGAddr(), HTTPAddr: n.HTTPAddr(), Tasks: n.localTasks().Tasks, ProcessingLog: n.rt.RecentProcessingLog(),
	}}}
}

// writeJSON writes v as the JSON body of an answer to r, indented for a
// person when r asks with ?pretty.
func writeJSON(w http.ResponseWriter, r *http.Request, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	if r.URL.Query().Has("pretty") {
		enc.SetIndent("", "  ")
	}
	_ = enc.Encode(v)
}
