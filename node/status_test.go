package node

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/basindb/basin/exec"
	"github.com/basindb/basin/internal/poll"
	"github.com/basindb/basin/internal/testcluster"
)

// getHTTP returns the status and body of GET path on n's HTTP address.
func getHTTP(t *testing.T, n *Node, path string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + n.HTTPAddr() + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// TestStatusAlone: a node that is not in a cluster answers
// /clusterStatus as its cluster's one member, with its addresses, version
// and tasks, /readyz once its table's tasks are caught up, and /tasks and
// /clusterStatus indent their JSON for a person with ?pretty.
func TestStatusAlone(t *testing.T) {
	n := startNode(t, t.TempDir(), func(o *Options) { o.HTTPAddr = "127.0.0.1:0" })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := sqlConn{t, ctx, connect(t, n.PGAddr())}
	c.exec(`CREATE TABLE users (id BIGINT PRIMARY KEY, name VARCHAR) WITH (kafka_topic = 'users', partitions = 2)`)

	var st clusterStatus
	if !poll.Cond(30*time.Second, func() bool {
		code, body := getHTTP(t, n, "/clusterStatus")
		if code != http.StatusOK {
			t.Fatalf("GET /clusterStatus: %d %s", code, body)
		}
		if err := json.Unmarshal([]byte(body), &st); err != nil {
			t.Fatalf("GET /clusterStatus: %v in %s", err, body)
		}
		return len(st.Nodes) == 1 && len(st.Nodes[0].Tasks) == 2
	}) {
		t.Fatalf("/clusterStatus: %+v, want this node with the table's 2 tasks", st)
	}
	me := st.Nodes[0]
	if st.Node != n.id || st.Leader != n.id || me.Node != n.id || !me.Self || !me.Alive ||
		me.Version != exec.Version || me.PGAddr != n.PGAddr() || me.HTTPAddr != n.HTTPAddr() {
		t.Errorf("/clusterStatus: %+v", st)
	}
	for _, task := range me.Tasks {
		if task.Relation != "users" || task.Role != "active" {
			t.Errorf("task %+v, want an active task of users", task)
		}
	}
	var code int
	var body string
	if !poll.Cond(30*time.Second, func() bool { code, body = getHTTP(t, n, "/readyz"); return code == http.StatusOK }) || body != "ready\n" {
		t.Errorf("GET /readyz: %d %q, want 200 ready", code, body)
	}
	for _, path := range []string{"/clusterStatus?pretty", "/tasks?pretty"} {
		code, body := getHTTP(t, n, path)
		if code != http.StatusOK || !strings.HasPrefix(body, "{\n  \"node\": ") {
			t.Errorf("GET %s: %d %.200q, want indented JSON", path, code, body)
		}
	}
	if _, body := getHTTP(t, n, "/tasks"); strings.Contains(body, "\n  ") {
		t.Errorf("GET /tasks without ?pretty is indented: %.200q", body)
	}
}

// TestReadyz: /readyz answers 200 while every partition of every view
// can be read within its bounds, and 503 naming the partition while
// both its replicas are frozen (SIGSTOP) and heartbeats say so, on a node
// that holds neither; 200 again once they are thawed.
func TestReadyz(t *testing.T) {
	c, _, placed := startClusterView(t, 3, "30s", 300)
	_, part, active, standby, reader := haPartition(t, c, placed)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	readyz := func(n *testcluster.Node) (int, string) {
		code, body, err := n.HTTPGet(ctx, "/readyz")
		if err != nil {
			t.Fatalf("GET /readyz on %s: %v", n.ID, err)
		}
		return code, string(body)
	}
	for _, n := range c.Nodes() {
		var code int
		var body string
		if !poll.Cond(30*time.Second, func() bool { code, body = readyz(n); return code == http.StatusOK }) {
			t.Fatalf("%s: /readyz %d %s, want 200", n.ID, code, body)
		}
	}
	active.Stop()
	standby.Stop()
	want := "partition " + part + " of by_region: no replica qualifies"
	var code int
	var body string
	if !poll.Cond(30*time.Second, func() bool {
		code, body = readyz(reader)
		return code == http.StatusServiceUnavailable && strings.Contains(body, want)
	}) {
		t.Fatalf("%s with %s and %s frozen: /readyz %d %s, want 503 with %q", reader.ID, active.ID, standby.ID, code, body, want)
	}
	t.Logf("%s: /readyz %d: %s", reader.ID, code, body)
	active.Cont()
	standby.Cont()
	if !poll.Cond(30*time.Second, func() bool { code, body = readyz(reader); return code == http.StatusOK }) {
		t.Fatalf("%s after the thaw: /readyz %d %s, want 200", reader.ID, code, body)
	}
}
