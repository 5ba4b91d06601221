package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/exec"
	"github.com/basindb/basin/ha"
	"github.com/basindb/basin/internal/safe"
	"github.com/basindb/basin/kafka"
	"github.com/basindb/basin/materialize"
	"github.com/basindb/basin/stream"
)

// cluster is a node's membership in its cluster: it joins the cluster's
// group with ha's balancer and runs the tasks the assignment gives it in
// the roles it gives them. A node with the embedded broker is alone and
// has no cluster: it runs every task active.
type cluster struct {
	n      *Node
	bal    *ha.Balancer
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}
	fwd    *forwarder
	// closing is set once the node shuts down (stop).
	closing atomic.Bool

	mu struct {
		sync.Mutex
		a   ha.Assignment
		has bool
		// byTask is a indexed by task, for reads.
		byTask map[materialize.StoreID]ha.Replicas
		// rebalances are the last assignments received, latest first
		// (/clusterStatus, the status page).
		rebalances     []rebalance
		rebalanceCount int64
	}
}

// joinFile keeps the last join metadata in the data dir, so a restarted
// node can send the same bytes (see ha.BalancerConfig.LastJoin).
const joinFile = "cluster-join"

// startCluster joins the cluster's group. Until the first assignment
// arrives the node runs no task.
func (n *Node) startCluster(ctx context.Context, brokers []string) error {
	c := &cluster{n: n, done: make(chan struct{})}
	topic := catalog.MembersTopic(n.opts.Cluster)
	if _, _, err := kafka.EnsureTopic(ctx, n.rt.Admin(), topic, 1, nil); err != nil {
		return fmt.Errorf("creating the members topic %s: %w", topic, err)
	}
	last, err := os.ReadFile(filepath.Join(n.opts.DataDir, joinFile))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	c.bal, err = ha.NewBalancer(ha.BalancerConfig{
		NodeID:          n.id,
		Group:           catalog.NodesGroup(n.opts.Cluster),
		Topic:           topic,
		Assign:          ha.Config{AcceptableRecoveryLag: n.opts.AcceptableRecoveryLag, MaxWarmups: n.opts.MaxWarmups},
		ProbingInterval: n.opts.ProbingInterval,
		Local:           c.local,
		Tasks:           c.tasks,
		OnAssignment:    c.onAssignment,
		LastJoin:        last,
		OnJoin: func(b []byte) {
			if err := writeFileAtomic(filepath.Join(n.opts.DataDir, joinFile), b); err != nil {
				n.log.Warn("saving the join metadata", "err", err)
			}
		},
		Logger: n.log.With("component", "cluster"),
	})
	if err != nil {
		return err
	}
	opts := append(c.bal.ClientOpts(), n.metrics.kafka.opt(),
		kgo.SessionTimeout(n.opts.SessionTimeout),
		kgo.HeartbeatInterval(max(n.opts.SessionTimeout/6, 100*time.Millisecond)),
		kgo.RebalanceTimeout(rebalanceTimeout))
	if c.cl, err = kafka.NewClient(kafka.ClientOptions{Brokers: brokers, ClientID: "basin-" + n.id + "-member", Logger: n.log}, opts...); err != nil {
		return err
	}
	rctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	go func() {
		defer close(c.done)
		// A panic in the membership loop is logged and the loop runs
		// again: without it the node would keep its group session but
		// stop following assignments.
		safe.Restart(rctx, n.log, "panic in the cluster membership loop; restarting it", time.Second, func() {
			c.bal.Run(rctx, c.cl)
		})
	}()
	c.fwd = &forwarder{c: c}
	n.rt.SetPeers(c.fwd)
	n.engine.Reads.SetForwarder(c.fwd)
	n.cluster.Store(c)
	return nil
}

// rebalanceTimeout bounds how long the group waits for its members to
// rejoin in a rebalance.
const rebalanceTimeout = 30 * time.Second

// stop ends the membership loop: no assignment reaches the runtime any
// more, and the group callbacks stop reading the node's stores and
// catalog, which are closed next. The node is still a member of the
// group until leave.
func (c *cluster) stop() {
	c.closing.Store(true)
	c.cancel()
	<-c.done
}

// leave takes the node out of the group, so that its tasks move to their
// standbys at once rather than after the session timeout, and closes the
// membership's client and the forwarding pools. It is bounded: kgo's
// Close waits for an in-flight JoinGroup, which the broker answers only
// once every other member has rejoined, and may never answer for a
// member that has left (ha.Balancer.Leave); past leaveWait the client
// finishes closing in the background while the node goes on shutting
// down. A node that dies without leave (SIGKILL) keeps its tasks for the
// session timeout, so a restart within it moves nothing (KIP-345).
func (c *cluster) leave() {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), leaveWait)
	err := c.bal.Leave(ctx, c.cl)
	cancel()
	if err != nil {
		c.n.log.Warn("leaving the group failed; the others take the tasks over after the session timeout", "err", err)
	}
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		c.cl.Close()
	}()
	t := time.NewTimer(memberCloseWait)
	select {
	case <-closed:
	case <-t.C:
		c.n.log.Info("the membership client is still closing (a rebalance was in flight); not waiting for it")
	}
	t.Stop()
	c.fwd.close()
	if err == nil {
		c.n.log.Info("left the group", "took", time.Since(start).Round(time.Millisecond))
	}
}

// leaveWait bounds Balancer.Leave (its LeaveGroup takes a round trip, the
// client's group management up to 100ms more), and memberCloseWait the
// wait for the membership client's Close after it.
const (
	leaveWait       = time.Second
	memberCloseWait = 50 * time.Millisecond
)

// local is what this node reports when it joins: its addresses and the
// checkpoint of every store it has on disk (none once the node is
// closing: its stores are being closed).
func (c *cluster) local() ha.LocalState {
	n := c.n
	st := ha.LocalState{PGAddr: n.pg.Addr().String(), Offsets: map[materialize.StoreID]int64{}}
	if n.httpLn != nil {
		st.HTTPAddr = n.httpLn.Addr().String()
	}
	if c.closing.Load() {
		return st
	}
	ids, err := n.db.Stores()
	if err != nil {
		n.log.Warn("listing stores for the join", "err", err)
		return st
	}
	for _, id := range ids {
		cp, err := n.db.Store(id).Checkpoint()
		if err != nil || cp.ChangelogOffset <= 0 {
			continue
		}
		st.Offsets[id] = cp.ChangelogOffset
	}
	return st
}

// tasks lists the tasks of the catalog for the leader to assign: every
// partition of every table and view and each task of a derived stream,
// with its standby count and its
// changelog's end.
func (c *cluster) tasks() ([]ha.Task, error) {
	n := c.n
	if c.closing.Load() {
		return nil, errors.New("the node is shutting down")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out []ha.Task
	for _, rel := range n.cat.Queries() {
		standbys := n.opts.StandbyReplicas
		if v := rel.Option("num.standby.replicas", ""); v != "" {
			if s, err := strconv.Atoi(v); err == nil {
				standbys = s
			}
		}
		changelog := rel.Topic
		if rel.Kind != catalog.KindTable {
			changelog = rel.ChangelogTopic(n.opts.Cluster)
		}
		ends, err := kafka.EndOffsets(ctx, n.rt.Admin(), changelog)
		if err != nil {
			return nil, fmt.Errorf("end offsets of %s: %w", changelog, err)
		}
		for p := int32(0); p < rel.TaskPartitions(); p++ {
			out = append(out, ha.Task{ID: materialize.StoreID{View: rel.StoreName(), Partition: p}, Standbys: standbys, EndOffset: ends[p]})
		}
		// A view's re-keying stages are not assigned: each runs with the
		// active of a view partition (stream.Runtime.SetRoles).
	}
	return out, nil
}

// tasksChanged reports whether the catalog's tasks differ from those of
// the current assignment.
func (c *cluster) tasksChanged() bool {
	a, ok := c.assignment()
	if !ok {
		return true
	}
	want := map[materialize.StoreID]bool{}
	for _, rel := range c.n.cat.Queries() {
		for p := int32(0); p < rel.TaskPartitions(); p++ {
			want[materialize.StoreID{View: rel.StoreName(), Partition: p}] = true
		}
	}
	have := a.Tasks()
	if len(have) != len(want) {
		return true
	}
	for _, id := range have {
		if !want[id] {
			return true
		}
	}
	return false
}

// rebalance is an assignment this node received: when, its generation,
// leader and number of nodes, and this node's tasks in each role.
type rebalance struct {
	At         time.Time `json:"at"`
	Generation int32     `json:"generation"`
	Leader     string    `json:"leader"`
	Nodes      int       `json:"nodes"`
	Active     int       `json:"active"`
	Standby    int       `json:"standby"`
	Warmup     int       `json:"warmup"`
}

// maxRebalances is how many rebalances a node remembers.
const maxRebalances = 10

// lastRebalances returns the assignments this node received, latest
// first.
func (c *cluster) lastRebalances() []rebalance {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.mu.rebalances)
}

// rebalanceCount returns how many assignments this node has received.
func (c *cluster) rebalanceCount() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.rebalanceCount
}

// onAssignment runs this node's tasks in the roles the new assignment
// gives them.
func (c *cluster) onAssignment(a ha.Assignment) {
	byTask := a.ByTask()
	c.mu.Lock()
	c.mu.a, c.mu.has, c.mu.byTask = a, true, byTask
	c.mu.Unlock()
	roles := stream.Roles{}
	mine := a.Nodes[c.n.id]
	for _, set := range []struct {
		ids  []materialize.StoreID
		role ha.Role
	}{{mine.Active, ha.RoleActive}, {mine.Standby, ha.RoleStandby}, {mine.Warmup, ha.RoleWarmup}} {
		for _, id := range set.ids {
			roles[id] = set.role
		}
	}
	c.n.log.Info("assignment", "generation", a.Generation, "leader", a.Leader,
		"active", len(mine.Active), "standby", len(mine.Standby), "warmup", len(mine.Warmup))
	c.mu.Lock()
	c.mu.rebalanceCount++
	c.mu.rebalances = append([]rebalance{{At: time.Now().UTC(), Generation: a.Generation, Leader: a.Leader, Nodes: len(a.Nodes),
		Active: len(mine.Active), Standby: len(mine.Standby), Warmup: len(mine.Warmup)}}, c.mu.rebalances...)
	if len(c.mu.rebalances) > maxRebalances {
		c.mu.rebalances = c.mu.rebalances[:maxRebalances]
	}
	c.mu.Unlock()
	c.n.rt.SetRoles(roles)
	if ctl := c.n.controlOf(); ctl != nil {
		ctl.onAssignment(a)
	}
	if a.Leader == c.n.id && c.tasksChanged() {
		// A relation created or dropped while this assignment was being
		// made (after the leader listed the catalog's tasks, before the
		// assignment arrived: onChange then found no leader, or no
		// cluster yet, to ask) would wait for the next rebalance, which
		// nothing else asks for.
		c.bal.RequestRebalance("the catalog changed while the group rebalanced")
	}
}

// assignment returns the last assignment, if any.
func (c *cluster) assignment() (ha.Assignment, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.a, c.mu.has
}

// replicasOf returns the assignment and the replicas it gives task t,
// and whether an assignment is known.
func (c *cluster) replicasOf(t materialize.StoreID) (ha.Assignment, ha.Replicas, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.a, c.mu.byTask[t], c.mu.has
}

// writeFileAtomic writes a file through a temporary one and a rename.
func writeFileAtomic(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// tasksReport is the body of GET /tasks.
type tasksReport struct {
	Node       string              `json:"node"`
	Generation int32               `json:"generation"`
	Tasks      []stream.TaskStatus `json:"tasks"`
}

// localTasks is what GET /tasks reports.
func (n *Node) localTasks() tasksReport {
	r := tasksReport{Node: n.id, Tasks: n.rt.Tasks(time.Now())}
	if c := n.clusterOf(); c != nil {
		if a, ok := c.assignment(); ok {
			r.Generation = a.Generation
		}
	}
	if r.Tasks == nil {
		r.Tasks = []stream.TaskStatus{}
	}
	return r
}

// peerTimeout bounds a request to another node for SHOW TASKS and SHOW
// CLUSTER: a node that does not answer within it is reported so.
const peerTimeout = time.Second

// getJSON fetches the HTTP endpoint of node peer into v, with a signed
// request when the cluster has a secret.
func (n *Node) getJSON(ctx context.Context, peer, addr, path string, v any) error {
	if addr == "" {
		return errors.New("no HTTP address")
	}
	ctl := n.controlOf()
	if ctl == nil {
		return errors.New("this node is not in a cluster")
	}
	ctx, cancel := context.WithTimeout(ctx, peerTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ctl.url(addr, path), nil)
	if err != nil {
		return err
	}
	n.peerAuth.sign(req, peer, nil, time.Now())
	resp, err := ctl.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s%s: %s", addr, path, resp.Status)
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(v)
}

// Tasks implements exec.ClusterInfo: every node's tasks, asked in
// parallel; a node that does not answer has its tasks reported from the
// assignment.
func (c *cluster) Tasks(ctx context.Context) ([]stream.TaskStatus, error) {
	a, ok := c.assignment()
	if !ok {
		return c.n.localTasks().Tasks, nil
	}
	ids := a.NodeIDs()
	reports := make([][]stream.TaskStatus, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		if id == c.n.id {
			reports[i] = c.n.localTasks().Tasks
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var r tasksReport
			err := safe.Call(func() error { return c.n.getJSON(ctx, id, a.Nodes[id].HTTPAddr, "/tasks", &r) })
			if safe.IsPanic(err) {
				safe.Log(c.n.log, "panic asking a node for its tasks", err, "peer", id)
			}
			if err == nil {
				reports[i] = r.Tasks
				return
			}
			reports[i] = c.unreachable(id, a.Nodes[id])
		}()
	}
	wg.Wait()
	var out []stream.TaskStatus
	for _, r := range reports {
		for _, t := range r {
			if t.Role == ha.RoleActive.String() && t.Store != "" {
				t.MissingStandbys = a.Shortfall[materialize.StoreID{View: t.Store, Partition: t.Partition}]
			}
			out = append(out, t)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Relation != out[j].Relation {
			return out[i].Relation < out[j].Relation
		}
		if out[i].Partition != out[j].Partition {
			return out[i].Partition < out[j].Partition
		}
		if out[i].Task != out[j].Task {
			return out[i].Task < out[j].Task
		}
		return roleRank(out[i].Role) < roleRank(out[j].Role)
	})
	return out, nil
}

func roleRank(r string) int {
	switch ha.Role(r) {
	case ha.RoleActive:
		return 0
	case ha.RoleStandby:
		return 1
	}
	return 2
}

// unreachable lists a node's tasks from the assignment, for a node that
// did not answer.
func (c *cluster) unreachable(id string, nt ha.NodeTasks) []stream.TaskStatus {
	var out []stream.TaskStatus
	for _, set := range []struct {
		ids  []materialize.StoreID
		role ha.Role
	}{{nt.Active, ha.RoleActive}, {nt.Standby, ha.RoleStandby}, {nt.Warmup, ha.RoleWarmup}} {
		for _, k := range set.ids {
			rel, _, _ := strings.Cut(k.View, "@")
			if r, ok := c.n.cat.Lookup(rel); ok {
				rel = r.Name
			}
			out = append(out, stream.TaskStatus{Task: k.String(), Relation: rel, Partition: k.Partition, Node: id,
				Role: set.role.String(), State: "UNREACHABLE"})
		}
	}
	return out
}

// clusterInfo is the engine's view of the cluster (exec.ClusterInfo). It
// is given to the engine before the Postgres server starts, so that no
// field of the engine is written while sessions read it, and reads the
// membership, which starts after the server, once it is there; until
// then it answers as a cluster without an assignment does.
type clusterInfo struct{ n *Node }

func (ci clusterInfo) Tasks(ctx context.Context) ([]stream.TaskStatus, error) {
	if c := ci.n.clusterOf(); c != nil {
		return c.Tasks(ctx)
	}
	return ci.n.localTasks().Tasks, nil
}

func (ci clusterInfo) Members(ctx context.Context) ([]exec.Member, error) {
	if c := ci.n.clusterOf(); c != nil {
		return c.Members(ctx)
	}
	// Not HTTPAddr: the HTTP server may be starting.
	return []exec.Member{{Node: ci.n.id, PGAddr: ci.n.PGAddr(), Alive: true}}, nil
}

// Members implements exec.ClusterInfo: the nodes of the assignment, alive
// as this node's heartbeat tracker (ha.Liveness) says, the same view
// reads are routed by.
func (c *cluster) Members(context.Context) ([]exec.Member, error) {
	a, ok := c.assignment()
	if !ok {
		return []exec.Member{{Node: c.n.id, PGAddr: c.n.PGAddr(), HTTPAddr: c.n.HTTPAddr(), Alive: true}}, nil
	}
	now := time.Now()
	ctl := c.n.controlOf()
	var out []exec.Member
	for _, id := range a.NodeIDs() {
		nt := a.Nodes[id]
		m := exec.Member{Node: id, PGAddr: nt.PGAddr, HTTPAddr: nt.HTTPAddr, Leader: a.Leader == id,
			Generation: a.Generation, Active: len(nt.Active), Standby: len(nt.Standby), Warmup: len(nt.Warmup)}
		m.Alive = id == c.n.id || ctl == nil || ctl.live.Alive(id, now)
		out = append(out, m)
	}
	return out, nil
}
