package node

import (
	"context"
	"encoding/binary"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/basindb/basin/internal/poll"
	"github.com/basindb/basin/internal/testcluster"
)

// browserDOM renders url in headless Chromium and returns the DOM it
// built. The flags keep Chromium off the network (it would look up
// Google's hosts at every start) and out of any profile.
func browserDOM(ctx context.Context, t *testing.T, url string) (string, error) {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("the status page is checked in Debian's chromium, which is not installed: apt-get install chromium (.ci/run installs it)")
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+t.TempDir(), "--dump-dom", url).Output()
	return string(out), err
}

// TestStatusPageBrowser opens a node's status page in headless Chromium
// while the cluster is whole, SIGKILLs the active of a view's partition,
// and watches the page of another node show it down, with the view's
// partitions, their lag and its lag picture. Before, the page shows
// every node's version and the records every node's tasks skipped.
func TestStatusPageBrowser(t *testing.T) {
	semanticOnly(t)
	c, _, placed := startClusterView(t, 3, "30s", 300)
	_, part, active, _, reader := haPartition(t, c, placed)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	url := "http://" + reader.HTTPAddr + "/"
	var dom string
	waitDOM := func(what string, ok func(dom string) bool) {
		t.Helper()
		if !poll.Cond(90*time.Second, func() bool {
			var err error
			if dom, err = browserDOM(ctx, t, url); err != nil {
				t.Logf("chromium: %v", err)
				return false
			}
			return ok(dom)
		}) {
			t.Fatalf("the status page of %s never showed %s:\n%s", reader.ID, what, dom)
		}
	}
	nodeState := func(n *testcluster.Node, state string) *regexp.Regexp {
		return regexp.MustCompile(`data-node="` + n.ID + `"[^>]*>\s*<td>[^<]*</td>\s*<td class="` + state + `"`)
	}
	// A record of every orders partition that the view cannot read: the
	// re-keying tasks skip them into the processing log, on whichever
	// node runs them, and the page lists the records of every node.
	var bad []*kgo.Record
	for p := range int32(4) {
		bad = append(bad, &kgo.Record{Topic: "orders", Partition: p, Key: binary.BigEndian.AppendUint64(nil, uint64(1e6+p)),
			Value: []byte(`{"region": "north", "amount": "many"}`)})
	}
	c.ProduceTo(t, "orders", bad...)
	rows, err := showTasks(t, reader)
	if err != nil {
		t.Fatal(err)
	}
	skippers := map[string]bool{} // the nodes whose re-keying tasks read orders
	for _, r := range rows {
		if strings.Contains(r.task, "/rekey/") && r.role == "active" {
			skippers[r.node] = true
		}
	}
	versioned := func(n *testcluster.Node) *regexp.Regexp {
		return regexp.MustCompile(`data-node="` + n.ID + `"[^>]*>\s*<td>[^<]*</td>\s*<td class="live">[^<]*</td><td class="version">[^<]+</td>`)
	}
	waitDOM("every node live with its version, the view's lag picture, the last rebalances and every node's skipped records", func(dom string) bool {
		for _, n := range c.Nodes() {
			if !nodeState(n, "live").MatchString(dom) || !versioned(n).MatchString(dom) {
				return false
			}
		}
		i := strings.Index(dom, `<table id="errors">`)
		if i < 0 {
			return false
		}
		for node := range skippers {
			if !strings.Contains(dom[i:], "<td>"+node+"</td>") {
				return false
			}
		}
		return strings.Contains(dom, `data-relation="by_region"`) && strings.Contains(dom, "<polyline") &&
			strings.Contains(dom, `<table id="rebalances">`)
	})
	active.Kill()
	waitDOM(active.ID+" down", func(dom string) bool {
		return nodeState(active, "down").MatchString(dom) && strings.Contains(dom, ">down since ")
	})
	// The view's section names each of its partitions, with the worst
	// offset lag of its actives.
	section := dom[strings.Index(dom, `data-relation="by_region"`):]
	if !regexp.MustCompile(`class="offset-lag">\d+<`).MatchString(section) {
		t.Errorf("the view's section shows no offset lag:\n%s", section)
	}
	if !regexp.MustCompile(`<td class="n">` + part + `</td>`).MatchString(section) {
		t.Errorf("the view's section lacks partition %s:\n%s", part, section)
	}
}
