package pull

import (
	"fmt"
	"strings"
	"time"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/eval"
	"github.com/basindb/basin/planner"
)

// ExplainRoutes adds to EXPLAIN of a pull query over a table or view
// what each partition's read would do now: what is pushed to the
// serving node, and per partition the candidates in the order they
// would be tried, the rejected replicas with their reasons, and the
// chosen one.
func (e *Engine) ExplainRoutes(plan *planner.PullPlan, env *eval.Env, opts *ReadOptions) ([]string, error) {
	rel := plan.Rel
	if e == nil || e.rt == nil || rel == nil || rel.Kind == catalog.KindStream || plan.Query != nil {
		return nil, nil
	}
	query, ok := e.rt.Query(rel.Name)
	if !ok {
		return []string{fmt.Sprintf("  Routing: %s is not being materialized on this node", rel.Name)}, nil
	}
	ev := *env
	env = &ev
	if env.Now.IsZero() {
		env.Now = time.Now()
	}
	q := &Query{rt: e.rt, e: e, plan: plan, code: CompilePull(plan), env: env, opts: opts}
	parts, keys, err := q.partitions(rel, query)
	if err != nil {
		return nil, err
	}
	var lines []string
	var pushed []string
	if plan.Where != "" {
		pushed = append(pushed, "filter "+plan.Where)
	}
	var cols []string
	for i, c := range rel.Schema.Columns {
		if plan.Needed == nil || plan.Needed[i] || c.Key {
			cols = append(cols, c.Name)
		}
	}
	pushed = append(pushed, "columns "+strings.Join(cols, ", "))
	fwd := e.forwarder()
	if opts.NoForward {
		fwd = nil
	}
	if fwd != nil && len(parts) > 0 {
		if req := q.request(query, parts[0], keysOf(keys, 0), nil); req.Limit >= 0 {
			pushed = append(pushed, fmt.Sprintf("LIMIT %d", req.Limit))
		}
		lines = append(lines, "  Forwarded reads push: "+strings.Join(pushed, "; "))
	}
	mode := "any"
	if opts.Settings != nil {
		if v, _ := opts.Settings.Setting("basin.read_from"); v != "" {
			mode = v
		}
	}
	lines = append(lines, fmt.Sprintf("  Routing (basin.read_from = %s), %d of %d partitions:", mode, len(parts), rel.Partitions))
	for i, p := range parts {
		ts := query.Tasks[p]
		var routes []string
		if fwd == nil {
			if ts.Held() {
				routes = []string{fmt.Sprintf("%s on %s (this node)", ts.Role(), e.rt.Node())}
			} else {
				routes = []string{fmt.Sprintf("no replica on %s (this node)", e.rt.Node())}
			}
		} else {
			req := q.request(query, p, keysOf(keys, i), nil)
			req.Local = localReplica(ts, nil)
			routes = fwd.Explain(req, opts)
		}
		for i, r := range routes {
			prefix := strings.Repeat(" ", len(fmt.Sprintf("    partition %d: ", p)))
			if i == 0 {
				prefix = fmt.Sprintf("    partition %d: ", p)
			}
			lines = append(lines, prefix+r)
		}
	}
	return lines, nil
}
