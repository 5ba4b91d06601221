package node

import (
	"context"
	"fmt"
	"html/template"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/exec"
	"github.com/basindb/basin/pgwire"
	"github.com/basindb/basin/stream"
)

// The status page: GET / on the HTTP address, for a person.
//
// It is rendered on the server from what /clusterStatus answers (the
// nodes, and every task's role, state and lags as this node knows them)
// and the catalog, with a picture of each relation's lag over the last
// minutes drawn as inline SVG from samples this node takes (lagHistory),
// and it reloads itself. It is read-only. With --auth trust it is open,
// as the Postgres port is; with scram or password it asks the browser
// for a user and password (HTTP Basic) and checks them against the
// node's users, as a Postgres login would.

// lagSampleEvery is how often the node samples the lags the page draws,
// and lagSamples how many samples it keeps (5 minutes).
const (
	lagSampleEvery = 2 * time.Second
	lagSamples     = 150
)

// lagHistory holds, per relation, the worst lag of its partitions'
// actives over the last lagSamples samples.
type lagHistory struct {
	mu      sync.Mutex
	samples map[string][]lagSample // by relation, oldest first
	// reads counts this node's pull queries at the last two samples,
	// for its read rate.
	reads [2]struct {
		at time.Time
		n  int64
	}
}

type lagSample struct {
	at        time.Time
	offsetLag int64
	timeLagMs int64
	// recordsIn sums the records the relation's actives have taken in
	// (TaskStatus.RecordsIn), for its ingest rate.
	recordsIn int64
}

// sample adds one sample of every relation in st, and reads, the pull
// queries this node has run.
func (h *lagHistory) sample(st clusterStatus, reads int64, at time.Time) {
	worst := map[string]lagSample{}
	for _, n := range st.Nodes {
		for _, t := range n.Tasks {
			if t.Role != "active" {
				continue
			}
			w := worst[t.Relation]
			w.at = at
			w.offsetLag = max(w.offsetLag, t.OffsetLag)
			w.timeLagMs = max(w.timeLagMs, t.TimeLagMs)
			w.recordsIn += t.RecordsIn
			worst[t.Relation] = w
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.reads[0], h.reads[1] = h.reads[1], struct {
		at time.Time
		n  int64
	}{at, reads}
	if h.samples == nil {
		h.samples = map[string][]lagSample{}
	}
	for rel, w := range worst {
		s := append(h.samples[rel], w)
		if len(s) > lagSamples {
			s = slices.Clone(s[len(s)-lagSamples:])
		}
		h.samples[rel] = s
	}
	for rel := range h.samples {
		if _, ok := worst[rel]; !ok {
			delete(h.samples, rel) // dropped, or no active anywhere known
		}
	}
}

// readRate returns this node's pull queries a second between the last
// two samples.
func (h *lagHistory) readRate() float64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	a, b := h.reads[0], h.reads[1]
	if a.at.IsZero() || !b.at.After(a.at) {
		return 0
	}
	return float64(b.n-a.n) / b.at.Sub(a.at).Seconds()
}

// ingestRate returns the records a second rel's actives took in between
// its last two samples; 0 when a task moved between them (its count
// starts again on its new node).
func ingestRate(samples []lagSample) float64 {
	if len(samples) < 2 {
		return 0
	}
	a, b := samples[len(samples)-2], samples[len(samples)-1]
	if b.recordsIn < a.recordsIn || !b.at.After(a.at) {
		return 0
	}
	return float64(b.recordsIn-a.recordsIn) / b.at.Sub(a.at).Seconds()
}

// of returns rel's samples, oldest first.
func (h *lagHistory) of(rel string) []lagSample {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.samples[rel])
}

// sampleLags samples the lags every lagSampleEvery until ctx ends.
func (n *Node) sampleLags(ctx context.Context) {
	tick := time.NewTicker(lagSampleEvery)
	defer tick.Stop()
	for {
		n.lags.sample(n.clusterStatus(), n.metrics.pullCount.Load(), time.Now())
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// statusAuth wraps the page's handler with the node's authentication: open
// under trust, HTTP Basic against the node's users otherwise.
func (n *Node) statusAuth(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if n.users.method != pgwire.AuthTrust {
			user, password, ok := r.BasicAuth()
			v, known := n.users.Verifier(user)
			if !ok || !known || user == ClusterUser || !v.Matches(password) {
				w.Header().Set("WWW-Authenticate", `Basic realm="basin", charset="UTF-8"`)
				http.Error(w, "log in with a basin user and password", http.StatusUnauthorized)
				return
			}
		}
		h(w, r)
	}
}

// pageData is what the page's template renders.
type pageData struct {
	Node, Version, Cluster string
	Generation             int32
	Leader                 string
	Now                    string
	Nodes                  []pageNode
	Relations              []pageRelation
	Refresh                int
	ReadRate               string // this node's pull queries a second
	Rebalances             []rebalance
	Errors                 []stream.ProcessingLogEntry
}

type pageNode struct {
	nodeStatus
	State string // "live", or "down since ..."
}

type pageRelation struct {
	Name, Kind string
	Partitions []pagePartition
	Chart      template.HTML
	OffsetLag  int64 // worst of the actives now
	TimeLag    string
	IngestRate string // records a second its actives take in
}

type pagePartition struct {
	Partition int32
	Replicas  []pageReplica
}

type pageReplica struct {
	stream.TaskStatus
	// Progress is how far a replica that is restoring or warming up has
	// come through its changelog, as "73%"; empty for one caught up.
	Progress string
}

// maxPageErrors is how many processing-log records the page shows.
const maxPageErrors = 20

// progressOf returns how far t has come through its changelog, for a
// replica still restoring or warming up.
func progressOf(t stream.TaskStatus) string {
	if t.Store == "" || (t.State != "RESTORING" && t.Role != "warmup") {
		return ""
	}
	if t.ChangelogEnd <= 0 {
		return "100%"
	}
	return fmt.Sprintf("%d%%", min(100, t.ChangelogOffset*100/t.ChangelogEnd))
}

// handleStatusPage is GET /.
func (n *Node) handleStatusPage(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/" {
		http.NotFound(w, r)
		return
	}
	now := time.Now()
	st := n.clusterStatus()
	d := pageData{Node: n.id, Version: exec.Version, Cluster: n.opts.Cluster, Generation: st.Generation, Leader: st.Leader,
		Now: now.UTC().Format("2006-01-02 15:04:05 UTC"), Refresh: 2, ReadRate: fmt.Sprintf("%.1f", n.lags.readRate())}
	d.Rebalances = st.Rebalances
	tasks := map[string]map[int32][]stream.TaskStatus{} // relation → partition → replicas
	for _, ns := range st.Nodes {
		pn := pageNode{nodeStatus: ns, State: "live"}
		if !ns.Alive {
			pn.State = "down"
			if ns.DownSince != nil {
				pn.State = fmt.Sprintf("down since %s (%s)", ns.DownSince.UTC().Format("15:04:05"), now.Sub(*ns.DownSince).Round(time.Second))
			}
		}
		d.Nodes = append(d.Nodes, pn)
		d.Errors = append(d.Errors, ns.ProcessingLog...)
		for _, t := range ns.Tasks {
			if tasks[t.Relation] == nil {
				tasks[t.Relation] = map[int32][]stream.TaskStatus{}
			}
			tasks[t.Relation][t.Partition] = append(tasks[t.Relation][t.Partition], t)
		}
	}
	// Every node's recent processing-log records, latest first.
	sort.SliceStable(d.Errors, func(i, j int) bool { return d.Errors[i].LoggedAt.After(d.Errors[j].LoggedAt) })
	d.Errors = d.Errors[:min(len(d.Errors), maxPageErrors)]
	for _, rel := range n.engine.Catalog.List(catalog.KindTable, catalog.KindView, catalog.KindStream) {
		if rel.Kind == catalog.KindStream && len(rel.Sources) == 0 {
			continue // a stream over a topic runs no task
		}
		pr := pageRelation{Name: rel.Name, Kind: kindLabel(rel)}
		var worstTime int64
		for p := range max(rel.Partitions, rel.Tasks) {
			reps := tasks[rel.Name][p]
			sort.Slice(reps, func(i, j int) bool {
				if reps[i].Role != reps[j].Role {
					return reps[i].Role < reps[j].Role // active, standby, warmup
				}
				return reps[i].Task < reps[j].Task
			})
			pp := pagePartition{Partition: p}
			for _, t := range reps {
				if t.Role == "active" {
					pr.OffsetLag = max(pr.OffsetLag, t.OffsetLag)
					worstTime = max(worstTime, t.TimeLagMs)
				}
				pp.Replicas = append(pp.Replicas, pageReplica{TaskStatus: t, Progress: progressOf(t)})
			}
			pr.Partitions = append(pr.Partitions, pp)
		}
		pr.TimeLag = (time.Duration(worstTime) * time.Millisecond).String()
		samples := n.lags.of(rel.Name)
		pr.Chart = lagChart(samples, now)
		pr.IngestRate = fmt.Sprintf("%.0f", ingestRate(samples))
		d.Relations = append(d.Relations, pr)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := statusPage.Execute(w, d); err != nil {
		n.log.Debug("status page", "err", err)
	}
}

func kindLabel(rel *catalog.Relation) string {
	switch rel.Kind {
	case catalog.KindView:
		return "view"
	case catalog.KindStream:
		return "derived stream"
	}
	return "table"
}

// lagChart draws samples' time lag (and offset lag) over the last
// lagSamples*lagSampleEvery before now as an inline SVG.
func lagChart(samples []lagSample, now time.Time) template.HTML {
	const w, h, pad = 360.0, 60.0, 2.0
	span := float64(lagSamples) * lagSampleEvery.Seconds()
	var maxMs int64 = 1000 // the scale is at least a second
	for _, s := range samples {
		maxMs = max(maxMs, s.timeLagMs)
	}
	var pts []string
	for _, s := range samples {
		x := w - now.Sub(s.at).Seconds()/span*w
		y := h - pad - float64(s.timeLagMs)/float64(maxMs)*(h-2*pad)
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", max(x, 0), y))
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" role="img" aria-label="time lag over the last %d minutes">`,
		w, h, w, h, int(span/60))
	fmt.Fprintf(&b, `<rect x="0" y="0" width="%.0f" height="%.0f" class="bg"/>`, w, h)
	if len(pts) > 0 {
		fmt.Fprintf(&b, `<polyline points="%s" class="lag"/>`, strings.Join(pts, " "))
	}
	fmt.Fprintf(&b, `<text x="4" y="12" class="scale">%s</text></svg>`, template.HTMLEscapeString((time.Duration(maxMs) * time.Millisecond).String()))
	return template.HTML(b.String())
}

var statusPage = template.Must(template.New("status").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="refresh" content="{{.Refresh}}">
<title>basin {{.Node}}</title>
<style>
body{font:14px system-ui,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}
th,td{border-bottom:1px solid #ddd;padding:.25em .75em;text-align:left;vertical-align:top}
td.n{text-align:right;font-variant-numeric:tabular-nums}
.down{color:#b00;font-weight:bold}.live{color:#070}
.RESTORING{color:#a60}.ERROR{color:#b00;font-weight:bold}
.chart .bg{fill:#f6f6f6}.chart .lag{fill:none;stroke:#36c;stroke-width:1.5}.chart .scale{font-size:10px;fill:#666}
small{color:#666}
</style></head><body>
<h1>basin <small>{{.Version}}</small></h1>
<p>Node <b id="node">{{.Node}}</b> of cluster <b>{{.Cluster}}</b>, generation {{.Generation}}, led by {{.Leader}}. As of {{.Now}}; this page reloads every {{.Refresh}} s. Reads on this node: {{.ReadRate}} pull queries/s.</p>
<h2>Nodes</h2>
<table id="nodes"><tr><th>node</th><th>state</th><th>version</th><th>Postgres</th><th>HTTP</th><th>tasks</th></tr>
{{range .Nodes}}<tr data-node="{{.Node}}"><td>{{.Node}}{{if .Self}} (this node){{end}}</td>
<td class="{{if .Alive}}live{{else}}down{{end}}">{{.State}}</td><td class="version">{{.Version}}</td><td>{{.PGAddr}}</td><td>{{.HTTPAddr}}</td><td class="n">{{len .Tasks}}</td></tr>
{{end}}</table>
<h2>Views, tables and derived streams</h2>
{{range .Relations}}<section class="relation" data-relation="{{.Name}}">
<h3>{{.Name}} <small>{{.Kind}} — ingest <span class="ingest">{{.IngestRate}}</span> records/s; worst active: offset lag <span class="offset-lag">{{.OffsetLag}}</span>, time lag {{.TimeLag}}</small></h3>
{{.Chart}}
<table><tr><th>partition</th><th>task</th><th>node</th><th>role</th><th>state</th><th>offset lag</th><th>time lag</th><th>changelog</th></tr>
{{range .Partitions}}{{$p := .Partition}}{{range .Replicas}}<tr><td class="n">{{$p}}</td><td>{{.Task}}</td><td>{{.Node}}</td><td>{{.Role}}</td><td class="{{.State}}">{{.State}}{{if .Progress}} <span class="progress">{{.Progress}}</span>{{end}}{{if .Error}}: {{.Error}}{{end}}</td>
<td class="n">{{.OffsetLag}}</td><td class="n">{{.TimeLagMs}} ms</td><td class="n">{{.ChangelogOffset}} / {{.ChangelogEnd}}</td></tr>
{{else}}<tr><td class="n">{{$p}}</td><td colspan="7" class="down">no replica known</td></tr>{{end}}{{end}}
</table></section>
{{else}}<p>None yet: <code>CREATE TABLE ... AS SELECT</code> makes one.</p>{{end}}
<h2>Last rebalances</h2>
{{if .Rebalances}}<table id="rebalances"><tr><th>at (UTC)</th><th>generation</th><th>leader</th><th>nodes</th><th>this node: active / standby / warm-up</th></tr>
{{range .Rebalances}}<tr><td>{{.At.Format "15:04:05.000"}}</td><td class="n">{{.Generation}}</td><td>{{.Leader}}</td><td class="n">{{.Nodes}}</td><td class="n">{{.Active}} / {{.Standby}} / {{.Warmup}}</td></tr>
{{end}}</table>{{else}}<p>None: this node is not in a cluster.</p>{{end}}
<h2>Processing log</h2>
{{if .Errors}}<table id="errors"><tr><th>at (UTC)</th><th>node</th><th>query</th><th>source record</th><th>error</th></tr>
{{range .Errors}}<tr><td>{{.LoggedAt.UTC.Format "15:04:05.000"}}</td><td>{{.Node}}</td><td>{{.Query}}</td><td>{{.Source}}/{{.SourcePartition}}@{{.SourceOffset}}</td><td class="ERROR">{{.Error}}</td></tr>
{{end}}</table>
<p><small>The last records the nodes' tasks skipped, as their lag reports tell; <code>SELECT * FROM basin_processing_log</code> has them all.</small></p>
{{else}}<p>No record skipped since the nodes started.</p>{{end}}
</body></html>
`))
