package node

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/basindb/basin/internal/testcluster"
	"github.com/basindb/basin/kafka"
)

// startPeerCluster starts in-process nodes ids on one embedded broker,
// each with its HTTP server and secret as the cluster secret ("" for
// none), and waits until every node has heard a heartbeat and a lag
// report from every other. mod, if not nil, adjusts every node's
// options.
func startPeerCluster(t *testing.T, secret string, mod func(*Options), ids ...string) []*Node {
	t.Helper()
	nodes := startPeerNodes(t, secret, mod, ids...)
	eventually(t, 30*time.Second, func() error {
		now := time.Now()
		for _, n := range nodes {
			for _, o := range nodes {
				if o == n {
					continue
				}
				if l, ok := n.controlOf().live.Get(o.id, now); !ok || l.LastHeartbeat.IsZero() || !l.Alive {
					return fmt.Errorf("%s has no heartbeat from %s yet", n.id, o.id)
				}
				if _, ok := n.controlOf().lagOf(o.id); !ok {
					return fmt.Errorf("%s has no lag report from %s yet", n.id, o.id)
				}
			}
		}
		return nil
	})
	return nodes
}

// startPeerNodes is startPeerCluster up to the point where every node
// has the assignment with all of them, before they hear from each other.
func startPeerNodes(t *testing.T, secret string, mod func(*Options), ids ...string) []*Node {
	t.Helper()
	broker, err := kafka.StartBroker(kafka.BrokerOptions{Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = broker.Close() })
	var nodes []*Node
	for _, id := range ids {
		nodes = append(nodes, startNode(t, t.TempDir(), func(o *Options) {
			o.Brokers = broker.Addrs()
			o.HTTPAddr = "127.0.0.1:0"
			o.NodeID = id
			o.ClusterSecret = secret
			o.StandbyReplicas = 0
			if mod != nil {
				mod(o)
			}
		}))
	}
	eventually(t, 30*time.Second, func() error {
		for _, n := range nodes {
			if a, ok := n.clusterOf().assignment(); !ok || len(a.NodeIDs()) != len(nodes) {
				return fmt.Errorf("%s: the assignment does not hold all %d nodes yet", n.id, len(nodes))
			}
		}
		return nil
	})
	return nodes
}

// peerRequest sends method path with body to n's HTTP server, signed
// with secret when it is not "" (as the node to sign for, at at), and
// returns the status. It is what a forger, or a replaying eavesdropper,
// sends.
func peerRequest(t *testing.T, n *Node, method, path string, body []byte, sign func(*http.Request)) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, "http://"+n.HTTPAddr()+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if sign != nil {
		sign(req)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestPeerAuthClusterTalks: nodes of a cluster with a secret sign what
// they send each other: heartbeats and lag reports arrive (every node
// sees every other alive, with lag reports), SHOW CLUSTER lists them
// alive and SHOW TASKS gathers the other node's tasks through its
// signed GET /tasks.
func TestPeerAuthClusterTalks(t *testing.T) {
	nodes := startPeerCluster(t, "cluster pw", nil, "n1", "n2", "n3")
	conn := connect(t, nodes[0].PGAddr())
	mustExec(t, conn, `CREATE TABLE t (id BIGINT PRIMARY KEY, v VARCHAR) WITH (kafka_topic='t', value_format='json', partitions=3)`)
	eventually(t, 30*time.Second, func() error {
		rows, err := conn.Query(context.Background(), `SHOW CLUSTER`)
		if err != nil {
			return err
		}
		alive := map[string]bool{}
		for rows.Next() {
			vals, err := rows.Values()
			if err != nil {
				return err
			}
			alive[fmt.Sprint(vals[0])] = fmt.Sprint(vals[3]) == "true"
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if len(alive) != 3 || !alive["n1"] || !alive["n2"] || !alive["n3"] {
			return fmt.Errorf("SHOW CLUSTER: %v, want n1, n2 and n3 alive", alive)
		}
		return nil
	})
	waitTasksReachable(t, conn, "n2", "n3")
}

// waitTasksReachable waits until SHOW TASKS on conn lists tasks of every
// node of peers, none UNREACHABLE: each was asked with GET /tasks.
func waitTasksReachable(t *testing.T, conn *pgx.Conn, peers ...string) {
	t.Helper()
	eventually(t, 30*time.Second, func() error {
		out, err := queryText(context.Background(), conn, `SHOW TASKS`, true)
		if err != nil {
			return err
		}
		if strings.Contains(out, "UNREACHABLE") {
			return fmt.Errorf("SHOW TASKS has unreachable nodes:\n%s", out)
		}
		for _, p := range peers {
			if !strings.Contains(out, p) {
				return fmt.Errorf("SHOW TASKS lists no task of %s:\n%s", p, out)
			}
		}
		return nil
	})
}

// TestForgedControlTrafficRefused: with a cluster secret, a heartbeat
// or a lag report without a signature, or signed with another secret,
// is refused with 401 and changes nothing the node believes: a silent
// peer stays down, its last lag report stays the one it sent. A signed
// request replayed, one with a stale timestamp and one signed for
// another node are refused too.
func TestForgedControlTrafficRefused(t *testing.T) {
	nodes := startPeerCluster(t, "cluster pw", nil, "n1", "n2")
	n1, n2 := nodes[0], nodes[1]
	// n2 falls silent (its senders stop) but stays in the group: n1
	// takes it for down, its lag report ages.
	n2.controlOf().close()
	eventually(t, 10*time.Second, func() error {
		if n1.controlOf().live.Alive("n2", time.Now()) {
			return fmt.Errorf("n1 still takes the silent n2 for alive")
		}
		return nil
	})
	before, _ := n1.controlOf().lagOf("n2")

	hb := []byte(`{"node": "n2"}`)
	lag := []byte(`{"node": "n2", "generation": 99, "tasks": [{"task": "t-0", "offset_lag": 0}]}`)
	wrong := newPeerAuth("not the cluster pw")
	for i := 0; i < 5; i++ {
		for _, f := range []struct {
			name, path string
			body       []byte
			sign       func(*http.Request)
		}{
			{"unsigned heartbeat", "/heartbeat", hb, nil},
			{"heartbeat signed with another secret", "/heartbeat", hb, func(r *http.Request) { wrong.sign(r, "n1", hb, time.Now()) }},
			{"unsigned lag report", "/lag", lag, nil},
			{"lag report signed with another secret", "/lag", lag, func(r *http.Request) { wrong.sign(r, "n1", lag, time.Now()) }},
		} {
			if code, body := peerRequest(t, n1, http.MethodPost, f.path, f.body, f.sign); code != http.StatusUnauthorized {
				t.Errorf("%s: %d %s, want 401", f.name, code, body)
			}
		}
	}
	if code, _ := peerRequest(t, n1, http.MethodGet, "/tasks", nil, nil); code != http.StatusUnauthorized {
		t.Errorf("unsigned GET /tasks: %d, want 401", code)
	}
	if code, _ := peerRequest(t, n1, http.MethodGet, "/clusterStatus", nil, nil); code != http.StatusUnauthorized {
		t.Errorf("unsigned GET /clusterStatus: %d, want 401", code)
	}
	if n1.controlOf().live.Alive("n2", time.Now()) {
		t.Error("forged heartbeats brought the silent n2 back to life on n1")
	}
	if after, _ := n1.controlOf().lagOf("n2"); !after.Received.Equal(before.Received) || after.Generation != before.Generation {
		t.Errorf("a forged lag report replaced n2's: received %v generation %d, was %v %d",
			after.Received, after.Generation, before.Received, before.Generation)
	}

	// A request signed with the cluster's key goes through once; its
	// replay does not.
	key := newPeerAuth("cluster pw")
	var captured http.Header
	code, _ := peerRequest(t, n1, http.MethodGet, "/tasks", nil, func(r *http.Request) {
		key.sign(r, "n1", nil, time.Now())
		captured = r.Header.Clone()
	})
	if code != http.StatusOK {
		t.Fatalf("signed GET /tasks: %d, want 200", code)
	}
	if code, body := peerRequest(t, n1, http.MethodGet, "/tasks", nil, func(r *http.Request) { r.Header = captured }); code != http.StatusUnauthorized {
		t.Errorf("replayed GET /tasks: %d %s, want 401", code, body)
	}
	if code, body := peerRequest(t, n1, http.MethodGet, "/tasks", nil, func(r *http.Request) {
		key.sign(r, "n1", nil, time.Now().Add(-2*peerAuthWindow))
	}); code != http.StatusUnauthorized {
		t.Errorf("GET /tasks with a stale timestamp: %d %s, want 401", code, body)
	}
	if code, body := peerRequest(t, n1, http.MethodGet, "/tasks", nil, func(r *http.Request) {
		key.sign(r, "n2", nil, time.Now())
	}); code != http.StatusUnauthorized {
		t.Errorf("GET /tasks signed for n2, sent to n1: %d %s, want 401", code, body)
	}
	// A body changed under a valid signature is refused.
	if code, body := peerRequest(t, n1, http.MethodPost, "/heartbeat", hb, func(r *http.Request) {
		key.sign(r, "n1", []byte(`{"node": "n1"}`), time.Now())
	}); code != http.StatusUnauthorized {
		t.Errorf("heartbeat whose body is not the signed one: %d %s, want 401", code, body)
	}
	if n1.controlOf().live.Alive("n2", time.Now()) {
		t.Error("refused requests brought the silent n2 back to life on n1")
	}
}

// TestPeerAuthReplayCacheBounded: the replay cache forgets nonces whose
// timestamps left the window, and refuses (rather than grows) when it
// is full of live ones.
func TestPeerAuthReplayCacheBounded(t *testing.T) {
	a := newPeerAuth("s")
	now := time.Now()
	req := func(at time.Time) *http.Request {
		r, _ := http.NewRequest(http.MethodGet, "http://x/tasks", nil)
		a.sign(r, "n1", nil, at)
		return r
	}
	for i := 0; i < maxPeerNonces; i++ {
		if err := a.verify(req(now), "n1", nil, now); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	if err := a.verify(req(now), "n1", nil, now); err != errReplayCacheFull {
		t.Fatalf("a request with the cache full: %v, want errReplayCacheFull", err)
	}
	if a.nonces() != maxPeerNonces {
		t.Fatalf("%d nonces cached, want at most %d", a.nonces(), maxPeerNonces)
	}
	later := now.Add(peerAuthWindow + time.Second)
	if err := a.verify(req(later), "n1", nil, later); err != nil {
		t.Fatalf("a request once the cached nonces expired: %v", err)
	}
	if a.nonces() != 1 {
		t.Fatalf("%d nonces cached after the window passed, want 1", a.nonces())
	}
}

// TestForgedReportsBounded: without a cluster secret anyone can post to
// the cluster endpoints, but what a node keeps stays bounded by its
// cluster: lag reports and heartbeats from node ids that are not
// members of the assignment are refused (403) and leave no entry, a body
// over the limit is refused (413), and a member that leaves the
// assignment leaves the lag map and the liveness tracker.
func TestForgedReportsBounded(t *testing.T) {
	nodes := startPeerCluster(t, "", nil, "n1", "n2")
	n1, n2 := nodes[0], nodes[1]
	ctl := n1.controlOf()
	filler := bytes.Repeat([]byte("x"), 64<<10)
	taken := 0
	for i := 0; i < 300; i++ {
		id := fmt.Sprintf("forged-%d", i)
		lag := []byte(fmt.Sprintf(`{"node": %q, "tasks": [{"task": "t-0", "offset_lag": 0, "relation": %q}]}`, id, filler))
		if code, _ := peerRequest(t, n1, http.MethodPost, "/lag", lag, nil); code != http.StatusForbidden {
			taken++
		}
		if code, _ := peerRequest(t, n1, http.MethodPost, "/heartbeat", []byte(fmt.Sprintf(`{"node": %q}`, id)), nil); code != http.StatusForbidden {
			taken++
		}
	}
	if taken > 0 {
		t.Errorf("%d of 600 lag reports and heartbeats from non-members were taken, want all refused with 403", taken)
	}
	// Its own id is no peer's either.
	if code, body := peerRequest(t, n1, http.MethodPost, "/lag", []byte(`{"node": "n1", "tasks": []}`), nil); code != http.StatusForbidden {
		t.Errorf("lag report in n1's own name: %d %s, want 403", code, body)
	}
	big := append([]byte(`{"node": "n2", "tasks": [{"task": "`), bytes.Repeat([]byte("x"), 2<<20)...)
	big = append(big, `"}]}`...)
	if code, body := peerRequest(t, n1, http.MethodPost, "/lag", big, nil); code != http.StatusRequestEntityTooLarge {
		t.Errorf("a 2 MiB lag report: %d %.200s, want 413", code, body)
	}
	ctl.mu.Lock()
	lags := len(ctl.lags)
	_, hasN2 := ctl.lags["n2"]
	ctl.mu.Unlock()
	if lags != 1 || !hasN2 {
		t.Errorf("n1 keeps %d lag reports, want 1 (n2's)", lags)
	}
	if st := ctl.live.Status(time.Now()); len(st) != 1 {
		t.Errorf("n1 tracks the liveness of %d nodes, want 1 (n2)", len(st))
	}

	// n2 leaves: its entries go with it.
	if err := n2.Close(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() error {
		ctl.mu.Lock()
		lags := len(ctl.lags)
		ctl.mu.Unlock()
		if st := ctl.live.Status(time.Now()); lags != 0 || len(st) != 0 {
			return fmt.Errorf("after n2 left, n1 keeps %d lag reports and tracks %d nodes, want none", lags, len(st))
		}
		return nil
	})
}

// TestPeerHTTPOverTLS: a node with a certificate serves its HTTP address
// over TLS (a plaintext request gets 400) and its peers call it with
// https: heartbeats, lag reports and SHOW TASKS's GET /tasks all arrive,
// signed, through TLS.
func TestPeerHTTPOverTLS(t *testing.T) {
	dir := t.TempDir()
	cert, key := writeCert(t, dir, "node")
	nodes := startPeerCluster(t, "cluster pw", func(o *Options) { o.TLSCert, o.TLSKey = cert, key }, "n1", "n2")
	conn := connect(t, nodes[0].PGAddr())
	mustExec(t, conn, `CREATE TABLE t (id BIGINT PRIMARY KEY, v VARCHAR) WITH (kafka_topic='t', value_format='json', partitions=2)`)
	waitTasksReachable(t, conn, "n1", "n2")

	resp, err := http.Get("http://" + nodes[0].HTTPAddr() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("plaintext GET /healthz on a node with a certificate: %d, want 400 (TLS only)", resp.StatusCode)
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
	defer tr.CloseIdleConnections()
	resp, err = (&http.Client{Transport: tr}).Get("https://" + nodes[0].HTTPAddr() + "/healthz")
	if err != nil {
		t.Fatalf("GET /healthz over TLS: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.TLS == nil {
		t.Errorf("GET /healthz over TLS: %d (TLS %v), want 200 over TLS", resp.StatusCode, resp.TLS != nil)
	}
}

// TestClusterHTTPOverTLSWithSecret runs three real nodes with a
// certificate, SCRAM and a cluster secret: their HTTP addresses serve
// TLS only, and the signed heartbeats, lag reports and GET /tasks still
// go between them (SHOW CLUSTER has every node alive with a lag report,
// SHOW TASKS reaches every node).
func TestClusterHTTPOverTLSWithSecret(t *testing.T) {
	cert, key := writeCert(t, t.TempDir(), "node")
	c := testcluster.Start(t, testcluster.Options{Nodes: 3, Password: "client pw",
		Args: []string{"--auth", "scram", "--tls-cert", cert, "--tls-key", key, "--standby-replicas", "0"},
		Env:  []string{`BASIN_USERS={"basin": "client pw"}`, "BASIN_CLUSTER_SECRET=cluster pw"}})
	n := c.Node(0)
	n.Exec(t, `CREATE TABLE t (id BIGINT PRIMARY KEY, v VARCHAR) WITH (kafka_topic='t', value_format='json', partitions=3)`)
	c.Eventually(t, 30*time.Second, func() error {
		rows, err := n.QueryErr(t, "SHOW CLUSTER")
		if err != nil {
			return err
		}
		alive := 0
		for _, r := range rows {
			if r[3] == "t" || r[3] == "true" {
				alive++
			}
		}
		if len(rows) != 3 || alive != 3 {
			return fmt.Errorf("SHOW CLUSTER: %v, want 3 nodes alive", rows)
		}
		rows, err = n.QueryErr(t, "SHOW TASKS")
		if err != nil {
			return err
		}
		nodes := map[string]bool{}
		for _, r := range rows {
			for _, v := range r {
				if v == "UNREACHABLE" {
					return fmt.Errorf("SHOW TASKS: %v has an unreachable node", rows)
				}
				if strings.HasPrefix(v, "node-") {
					nodes[v] = true
				}
			}
		}
		if len(nodes) != 3 {
			return fmt.Errorf("SHOW TASKS names nodes %v, want all 3", nodes)
		}
		return nil
	})
	// The HTTP address is TLS only; testcluster's HTTPGet falls back to
	// https, and the cluster endpoints refuse it unsigned.
	status, _, err := n.HTTPGet(t.Context(), "/clusterStatus")
	if err != nil || status != http.StatusUnauthorized {
		t.Errorf("unsigned GET /clusterStatus over TLS: %d %v, want 401", status, err)
	}
}

// TestPeerHTTPVerifiedWithClusterCA: with --cluster-ca a node verifies
// the certificate of the peer it sends to. Nodes whose certificates the
// CA signed talk; a node that verifies against another CA sends nothing
// to its peer (every heartbeat fails), while the peer, which does not
// verify, still reaches it.
func TestPeerHTTPVerifiedWithClusterCA(t *testing.T) {
	ca, cert, key, otherCA := writeClusterCerts(t, t.TempDir())
	startPeerCluster(t, "cluster pw", func(o *Options) { o.TLSCert, o.TLSKey, o.ClusterCA = cert, key, ca }, "n1", "n2")

	nodes := startPeerNodes(t, "cluster pw", func(o *Options) {
		o.TLSCert, o.TLSKey = cert, key
		if o.NodeID == "n1" {
			o.ClusterCA = otherCA
		}
	}, "n1", "n2")
	n1, n2 := nodes[0], nodes[1]
	// Two lag reports from n2 a lag interval apart: n1, which sends a
	// heartbeat every 100ms, has tried ten times meanwhile.
	var first time.Time
	eventually(t, 30*time.Second, func() error {
		lr, ok := n1.controlOf().lagOf("n2")
		if !ok {
			return fmt.Errorf("n1 has no lag report from n2, which does not verify n1's certificate")
		}
		if first.IsZero() {
			first = lr.Received
		}
		if !lr.Received.After(first) {
			return fmt.Errorf("n1 has one lag report from n2, waiting for the next")
		}
		return nil
	})
	if l, _ := n2.controlOf().live.Get("n1", time.Now()); !l.LastHeartbeat.IsZero() {
		t.Errorf("n2 heard a heartbeat from n1, which verifies n2's certificate against another CA")
	}
}
