package docs

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/basindb/basin/internal/testcluster"
)

// dashboardFile is the Grafana dashboard docs/operations.md offers.
const dashboardFile = "grafana/basin.json"

// dashboardQuery is one PromQL query of the dashboard: a panel's
// target, or a template variable's.
type dashboardQuery struct {
	panel, expr string
}

// loadDashboard reads the dashboard as Grafana's schema has it, strictly
// (an unknown field, a wrong type or a missing required field is an
// error, as Grafana's own import would reject or drop it), and returns
// its queries.
func loadDashboard(t *testing.T) ([]*dashboard.Panel, []dashboardQuery) {
	t.Helper()
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	plugins.RegisterDefaultPlugins()
	// The classic dashboard model: the one every Grafana imports
	// (dashboardv2 is Grafana 12's, behind a feature flag).
	//lint:ignore SA1019 the classic model is the one to import
	var d dashboard.Dashboard
	if err := schemaErr(d.UnmarshalJSONStrict(raw)); err != nil {
		t.Fatalf("%s does not follow Grafana's dashboard schema: %v", dashboardFile, err)
	}
	if err := schemaErr(d.Validate()); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	if d.Uid == nil || *d.Uid == "" || d.Title == nil || *d.Title == "" {
		t.Errorf("the dashboard needs a uid and a title: %v %v", d.Uid, d.Title)
	}
	// The panels, each decoded on its own: the SDK reports a panel's
	// errors within the dashboard's but keeps only the rows.
	var plain struct {
		Panels     []json.RawMessage `json:"panels"`
		Templating struct {
			List []struct {
				Name  string          `json:"name"`
				Query json.RawMessage `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(raw, &plain); err != nil {
		t.Fatal(err)
	}
	var panels []*dashboard.Panel
	var qs []dashboardQuery
	for i, rp := range plain.Panels {
		var kind struct {
			Type    string `json:"type"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		}
		if err := json.Unmarshal(rp, &kind); err != nil {
			t.Fatal(err)
		}
		if kind.Type == "row" {
			continue
		}
		p := &dashboard.Panel{}
		if err := schemaErr(p.UnmarshalJSONStrict(rp)); err != nil {
			t.Fatalf("%s: panel %d: %v", dashboardFile, i, err)
		}
		panels = append(panels, p)
		if len(kind.Targets) == 0 {
			t.Errorf("panel %q has no query", title(p.Title))
		}
		// The targets' queries, read from the JSON itself: the schema
		// holds them as the datasource's query type.
		for _, tg := range kind.Targets {
			qs = append(qs, dashboardQuery{title(p.Title), tg.Expr})
		}
	}
	for _, v := range plain.Templating.List {
		var q struct {
			Query string `json:"query"`
		}
		if json.Unmarshal(v.Query, &q) == nil && q.Query != "" {
			qs = append(qs, dashboardQuery{"variable " + v.Name, q.Query})
		}
	}
	return panels, qs
}

// schemaErr returns err, nil for the SDK's empty list of errors (which
// it returns, typed, for none).
func schemaErr(err error) error {
	if be, ok := err.(cog.BuildErrors); ok && len(be) == 0 {
		return nil
	}
	return err
}

// metricName finds the metric names a query uses.
var metricName = regexp.MustCompile(`\b(?:basin|go|process)_[a-z0-9_]+\b`)

// TestDashboardSchema: the dashboard follows Grafana's schema, every
// panel has a query, every query is PromQL over a documented metric, and
// every panel uses the datasource variable, so that importing it asks
// for a Prometheus datasource only.
func TestDashboardSchema(t *testing.T) {
	panels, qs := loadDashboard(t)
	ops, err := os.ReadFile("operations.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile("\\| `(basin_[a-z0-9_]+)`(?:, `(basin_[a-z0-9_]+)`)? \\|").FindAllStringSubmatch(string(ops), -1) {
		documented[m[1]] = true
		documented[m[2]] = true
	}
	for _, p := range panels {
		if p.Datasource == nil || p.Datasource.Uid == nil || *p.Datasource.Uid != "${datasource}" {
			t.Errorf("panel %q does not use the datasource variable", title(p.Title))
		}
	}
	if len(panels) < 20 {
		t.Errorf("%d panels: the dashboard lost some", len(panels))
	}
	for _, q := range qs {
		names := metricName.FindAllString(q.expr, -1)
		if len(names) == 0 {
			t.Errorf("%s: %q uses no metric", q.panel, q.expr)
		}
		for _, name := range names {
			base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_count"), "_sum")
			if strings.HasPrefix(name, "basin_") && !documented[base] {
				t.Errorf("%s: %s is not in the metrics table of operations.md", q.panel, base)
			}
		}
	}
}

// title is a panel's title, for messages.
func title(s *string) string {
	if s == nil {
		return "(untitled)"
	}
	return *s
}

// TestDashboardThroughFailover runs a real Prometheus (Debian's) against
// a cluster of three real nodes, SIGKILLs one, and checks by name what
// the survivors' metrics say while the cluster recovers: the node down,
// every partition of the view active on a survivor, the rebalance, reads
// served. Then every query of the dashboard runs against what Prometheus
// scraped and answers, and every metric it names was scraped.
func TestDashboardThroughFailover(t *testing.T) {
	_, qs := loadDashboard(t)
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatal("the dashboard's queries are checked with Debian's prometheus, which is not installed: apt-get install prometheus (.ci/run installs it)")
	}
	c := testcluster.Start(t, testcluster.Options{Nodes: 3, Args: []string{"--session-timeout", "2s", "--standby-replicas", "1"}})
	n0 := c.Node(0)
	n0.Exec(t, "CREATE STREAM orders (id BIGINT KEY, region VARCHAR, amount BIGINT) WITH (kafka_topic = 'orders', value_format = 'json', partitions = 4)")
	n0.Exec(t, "CREATE TABLE by_region AS SELECT region, COUNT(*) AS n, SUM(amount) AS total FROM orders GROUP BY region")
	produce := func(from, n int, bad bool) {
		var recs []*kgo.Record
		for i := from; i < from+n; i++ {
			val := fmt.Sprintf(`{"region": "r%d", "amount": %d}`, i%5, i)
			if bad {
				val = `{"region": "r0", "amount": "many"}`
			}
			recs = append(recs, &kgo.Record{Topic: "orders", Partition: int32(i % 4), Key: binary.BigEndian.AppendUint64(nil, uint64(i)), Value: []byte(val)})
		}
		c.ProduceTo(t, "orders", recs...)
	}
	produce(0, 400, false)
	produce(400, 4, true) // one the view cannot read on each partition

	prom := startPrometheus(t, bin, c.Nodes())
	byName := func(what, q string, ok func(v float64) bool) {
		t.Helper()
		var last string
		c.Eventually(t, eventuallyWithin*2, func() error {
			res, err := prom.query(q)
			if err != nil {
				return err
			}
			last = fmt.Sprint(res)
			if len(res) != 1 || !ok(res[0].value) {
				return fmt.Errorf("%s: %s = %s", what, q, last)
			}
			return nil
		})
	}
	atLeast := func(n float64) func(float64) bool { return func(v float64) bool { return v >= n } }
	byName("every node scraped", `count(up{job="basin"} == 1)`, atLeast(3))
	byName("the view's actives took in every order", `sum(basin_task_records_in_total{relation="by_region",role="active",task!~".*/rekey/.*"})`, atLeast(400))
	byName("the skipped records counted", `sum(basin_processing_log_records_total{relation="by_region",sqlstate="22P02"})`, atLeast(4))
	byName("the standbys' freshness", `sum(basin_freshness_seconds_count{relation="by_region",role="standby"})`, atLeast(1))

	victim := c.Node(2)
	var survivors []string
	for _, n := range c.Nodes() {
		if n != victim {
			survivors = append(survivors, n.HTTPAddr)
		}
	}
	victim.Kill()
	produce(1000, 200, false)
	byName("the killed node no longer scraped", `up{instance="`+victim.HTTPAddr+`"}`, func(v float64) bool { return v == 0 })
	byName("both survivors see it down", `count(basin_peer_alive{peer="`+victim.ID+`"} == 0)`, atLeast(2))
	onSurvivors := `instance=~"` + strings.Join(survivors, "|") + `"`
	byName("every partition of the view active on a survivor", `count(basin_task_offset_lag{relation="by_region",role="active",task!~".*/rekey/.*",`+onSurvivors+`})`,
		func(v float64) bool { return v == 4 })
	byName("the survivors took part in a rebalance", `min(basin_rebalances_total{`+onSurvivors+`})`, atLeast(2))
	byName("the view caught up on the survivors", `max(basin_task_offset_lag{relation="by_region",role="active",`+onSurvivors+`})`,
		func(v float64) bool { return v == 0 })
	for range 20 {
		c.Node(0).Query(t, "SELECT * FROM by_region WHERE region = 'r1'")
	}
	byName("the reads counted", `sum(basin_pull_queries_total{outcome="ok",plan="lookup",`+onSurvivors+`})`, atLeast(20))

	// Every query of the dashboard answers over what was scraped, as
	// Grafana would send it.
	names, err := prom.names()
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range qs {
		expr := strings.NewReplacer("$__rate_interval", "30s", "$relation", ".*").Replace(q.expr)
		if strings.HasPrefix(expr, "label_values(") {
			continue // a variable's: Grafana asks for the label's values, checked below
		}
		res, err := prom.query(expr)
		if err != nil {
			t.Errorf("panel %q: %s: %v", q.panel, expr, err)
		} else if len(res) == 0 {
			t.Errorf("panel %q: %s answers nothing", q.panel, expr)
		}
		for _, name := range metricName.FindAllString(q.expr, -1) {
			if !slices.Contains(names, name) {
				t.Errorf("panel %q: %s was never scraped", q.panel, name)
			}
		}
	}
	if rels, err := prom.labelValues("relation", "basin_task_offset_lag"); err != nil || !slices.Contains(rels, "by_region") {
		t.Errorf("the relation variable's values: %v %v", rels, err)
	}
}

// prometheus is a Prometheus server the test started.
type prometheus struct {
	addr string
}

type promSample struct {
	labels map[string]string
	value  float64
}

// startPrometheus runs bin scraping the nodes' /metrics every second,
// and waits until it is ready.
func startPrometheus(t *testing.T, bin string, nodes []*testcluster.Node) *prometheus {
	t.Helper()
	dir := t.TempDir()
	var targets []string
	for _, n := range nodes {
		targets = append(targets, strconv.Quote(n.HTTPAddr))
	}
	cfg := fmt.Sprintf("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: basin\n    static_configs:\n      - targets: [%s]\n",
		strings.Join(targets, ", "))
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	log, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		log.Close()
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(dir, "prometheus.log"))
			t.Logf("prometheus's log:\n%s", b)
		}
	})
	p := &prometheus{addr: addr}
	deadline := time.Now().Add(nodeStartTimeout)
	for {
		resp, err := http.Get("http://" + addr + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus on %s not ready: %v", addr, err)
		}
		select {
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
		}
	}
}

// api GETs path of Prometheus's HTTP API and decodes its data into v.
func (p *prometheus) api(path string, params url.Values, v any) error {
	resp, err := http.Get("http://" + p.addr + path + "?" + params.Encode())
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var r struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return fmt.Errorf("%s: %s", resp.Status, body)
	}
	if r.Status != "success" {
		return fmt.Errorf("%s: %s", resp.Status, r.Error)
	}
	return json.Unmarshal(r.Data, v)
}

// query runs an instant query.
func (p *prometheus) query(q string) ([]promSample, error) {
	var data struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		} `json:"result"`
	}
	if err := p.api("/api/v1/query", url.Values{"query": {q}}, &data); err != nil {
		return nil, err
	}
	if data.ResultType != "vector" {
		return nil, fmt.Errorf("%s: a %s, want a vector", q, data.ResultType)
	}
	var out []promSample
	for _, r := range data.Result {
		s, _ := r.Value[1].(string)
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: value %v", q, r.Value[1])
		}
		out = append(out, promSample{labels: r.Metric, value: v})
	}
	return out, nil
}

func (p *prometheus) names() ([]string, error) {
	return p.labelValues("__name__", "")
}

func (p *prometheus) labelValues(label, match string) ([]string, error) {
	params := url.Values{}
	if match != "" {
		params.Set("match[]", match)
	}
	var vs []string
	err := p.api("/api/v1/label/"+label+"/values", params, &vs)
	return vs, err
}
