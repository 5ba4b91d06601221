package exec

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/eval"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/planner"
	"github.com/basindb/basin/pull"
	"github.com/basindb/basin/query"
	"github.com/basindb/basin/sql"
)

// explainAnalyze runs EXPLAIN ANALYZE of a SELECT: the query runs as a
// SELECT would, its rows discarded, and the plan EXPLAIN shows comes
// back with what each operator did. A relational plan (planner.QueryPlan)
// has every line annotated from the run's query.Analysis, " (actual
// rows=N time=X.XXXms)" (the time left out under TIMING OFF, " loops=N"
// added when an operator ran other than once); a plan the pull engine
// runs has its first line annotated with the query's rows and time. The
// partitions read follow, each relation's with the node and replica
// role that served it, then (unless SUMMARY OFF) the query's peak memory
// against basin.query_memory and, with timing, its execution time.
//
// Only SELECT: the other statements EXPLAIN shows (CREATE TABLE AS,
// CREATE STREAM AS, INSERT ... SELECT) start persistent queries, which
// ANALYZE would have to start to measure.
func (s *Session) explainAnalyze(ctx context.Context, st *sql.Explain, w ResultWriter) error {
	sel, ok := st.Stmt.(*sql.Select)
	if !ok {
		return pgerr.New(pgerr.FeatureNotSupported, "EXPLAIN ANALYZE supports SELECT only").
			WithHint("EXPLAIN without ANALYZE shows the plan of CREATE TABLE AS, CREATE STREAM AS and INSERT ... SELECT.")
	}
	plan, err := planner.PlanSelect(s.e.Catalog, sel)
	if err != nil {
		return err
	}
	// Columns first: a Describe (describeColumns) stops there, before
	// the query runs.
	if err := w.Columns([]catalog.Column{{Name: "QUERY PLAN", Type: catalog.Varchar}}); err != nil {
		return err
	}
	env, opts := s.statement()
	a := &query.Analysis{}
	start := time.Now()
	n := int64(0)
	reads, err := s.e.read(nil, query.WithAnalysis(ctx, a), plan, nil, env, opts, func(catalog.Row) error {
		n++
		return nil
	})
	if err != nil {
		return err
	}
	// It read as a SELECT does: SHOW basin.last_read, monotonic reads
	// and freshness notices see it.
	s.afterRead(plan.Rel, reads, w)
	if plan.Query == nil {
		a.Rows, a.Time = n, time.Since(start)
	}
	text := plan.Explain(a.Annotator(st.Timing))
	text += partitionReads(plan, reads)
	if st.Summary {
		if plan.Query != nil {
			text += fmt.Sprintf("  Peak memory: %s of basin.query_memory %s\n", eval.FormatBytes(a.PeakMemory), eval.FormatBytes(env.QueryMemory))
		}
		if st.Timing {
			text += fmt.Sprintf("  Execution Time: %.3f ms\n", float64(time.Since(start).Microseconds())/1000)
		}
	}
	for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		if err := w.Row([]any{line}); err != nil {
			return err
		}
	}
	return w.Complete("EXPLAIN")
}

// partitionReads describes the partitions a query read, one line per
// relation and serving replica: "  Partitions read of view v: 0, 1 from
// node-a (active)", with ", N partition reads" added when the query
// read some partition more than once.
func partitionReads(plan *planner.PullPlan, reads []pull.PartitionRead) string {
	type group struct {
		rel        *catalog.Relation
		node, role string
		partitions []int32
	}
	var groups []*group
	for _, r := range reads {
		rel := r.Rel
		if rel == nil {
			rel = plan.Rel
		}
		if rel == nil {
			continue
		}
		i := slices.IndexFunc(groups, func(g *group) bool { return g.rel == rel && g.node == r.ServedBy && g.role == r.Role })
		if i < 0 {
			groups = append(groups, &group{rel: rel, node: r.ServedBy, role: r.Role})
			i = len(groups) - 1
		}
		groups[i].partitions = append(groups[i].partitions, r.Partition)
	}
	slices.SortFunc(groups, func(a, b *group) int {
		return cmp.Or(cmp.Compare(a.rel.Name, b.rel.Name), cmp.Compare(a.node, b.node), cmp.Compare(a.role, b.role))
	})
	var b strings.Builder
	for _, g := range groups {
		slices.Sort(g.partitions)
		reads := len(g.partitions)
		g.partitions = slices.Compact(g.partitions)
		ps := make([]string, len(g.partitions))
		for i, p := range g.partitions {
			ps[i] = strconv.Itoa(int(p))
		}
		fmt.Fprintf(&b, "  Partitions read of %s %s: %s from %s (%s)", strings.ToLower(string(g.rel.Kind)), g.rel.Name, strings.Join(ps, ", "), g.node, g.role)
		if reads > len(g.partitions) {
			// The query reads the relation more than once (a CTE
			// referenced twice, a self-join).
			fmt.Fprintf(&b, ", %d partition reads", reads)
		}
		b.WriteByte('\n')
	}
	return b.String()
}
