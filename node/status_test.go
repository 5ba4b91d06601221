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
	"github.com/basindb/basin/stream"
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

// TestStatusPage renders the status page of a node alone: the node, a
// view with its partitions' replicas and its lag picture; and, with
// --auth scram, asks for a login and takes only a user's own password.
func TestStatusPage(t *testing.T) {
	n := startNode(t, t.TempDir(), func(o *Options) { o.HTTPAddr = "127.0.0.1:0" })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := sqlConn{t, ctx, connect(t, n.PGAddr())}
	c.exec(`CREATE STREAM clicks (page VARCHAR, ms INTEGER) WITH (kafka_topic = 'clicks', partitions = 2)`)
	c.exec(`CREATE TABLE pages AS SELECT page, count(*) AS n FROM clicks GROUP BY page`)
	var code int
	var body string
	if !poll.Cond(30*time.Second, func() bool {
		code, body = getHTTP(t, n, "/")
		// Each partition's view task and re-keying stage.
		return code == http.StatusOK && strings.Count(body, "<td>active</td>") == 4
	}) {
		t.Fatalf("GET /: %d, want the view's 4 active tasks in\n%s", code, body)
	}
	for _, want := range []string{`<b id="node">` + n.id + `</b>`, `data-relation="pages"`, "<svg class=\"chart\"", n.PGAddr(), "(this node)"} {
		if !strings.Contains(body, want) {
			t.Errorf("GET / lacks %q:\n%s", want, body)
		}
	}
	// A record the view cannot decode: the page lists it.
	produceRaw(t, n.Brokers(), "clicks", [2]string{"k", "not json"})
	if !poll.Cond(30*time.Second, func() bool {
		code, body = getHTTP(t, n, "/")
		return strings.Contains(body, `<table id="errors">`) && strings.Contains(body, "clicks/")
	}) {
		t.Errorf("GET / never listed the skipped record:\n%s", body)
	}
	if !strings.Contains(body, "None: this node is not in a cluster.") {
		t.Errorf("GET / on a node alone lists rebalances:\n%s", body)
	}
	if code, _ := getHTTP(t, n, "/nothing"); code != http.StatusNotFound {
		t.Errorf("GET /nothing: %d, want 404", code)
	}

	locked := startNode(t, t.TempDir(), func(o *Options) {
		o.HTTPAddr, o.Auth, o.Users = "127.0.0.1:0", "scram", map[string]string{"ann": "s3cret"}
	})
	login := func(user, password string) int {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+locked.HTTPAddr()+"/", nil)
		if err != nil {
			t.Fatal(err)
		}
		if user != "" {
			req.SetBasicAuth(user, password)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusUnauthorized && !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Basic ") {
			t.Errorf("401 without a Basic challenge")
		}
		return resp.StatusCode
	}
	for _, tc := range []struct {
		user, password string
		want           int
	}{{"", "", 401}, {"ann", "wrong", 401}, {"bob", "s3cret", 401}, {ClusterUser, "s3cret", 401}, {"ann", "s3cret", 200}} {
		if got := login(tc.user, tc.password); got != tc.want {
			t.Errorf("GET / as %q with %q: %d, want %d", tc.user, tc.password, got, tc.want)
		}
	}
}

// TestProgressOf: the page shows how far a restoring replica or a
// warm-up has come through its changelog, and nothing for a replica
// caught up or a stage without a store.
func TestProgressOf(t *testing.T) {
	for _, c := range []struct {
		t    stream.TaskStatus
		want string
	}{
		{stream.TaskStatus{Store: "v@1", Role: "warmup", State: "RUNNING", ChangelogOffset: 730, ChangelogEnd: 1000}, "73%"},
		{stream.TaskStatus{Store: "v@1", Role: "standby", State: "RESTORING", ChangelogOffset: 0, ChangelogEnd: 1000}, "0%"},
		{stream.TaskStatus{Store: "v@1", Role: "warmup", State: "RESTORING", ChangelogOffset: 0, ChangelogEnd: 0}, "100%"},
		{stream.TaskStatus{Store: "v@1", Role: "active", State: "RUNNING", ChangelogOffset: 10, ChangelogEnd: 1000}, ""},
		{stream.TaskStatus{Role: "warmup", State: "RESTORING"}, ""},
	} {
		if got := progressOf(c.t); got != c.want {
			t.Errorf("progressOf(%+v) = %q, want %q", c.t, got, c.want)
		}
	}
}
