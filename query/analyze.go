package query

import (
	"context"
	"strconv"
	"time"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/eval"
	"github.com/basindb/basin/planner"
)

// # EXPLAIN ANALYZE
//
// A run collects what EXPLAIN ANALYZE shows when its context carries an
// Analysis (WithAnalysis): for each operator of the plan, the rows it
// produced, how often it ran and how long it took, and the query's peak
// memory. Operators are named by the planner.Rel they were compiled
// from and, for the stages a BlockRel or SetRel runs in one operator
// (filter, aggregate, window, sort, limit...), by the stage's name, so
// that planner's EXPLAIN text (QueryPlan.Explain) can ask for the
// numbers of each of its lines. Times are inclusive of the operator's
// inputs, as Postgres shows them, and summed over its loops. A run
// without an Analysis pays one context lookup per operator run.

// Analysis is what one run of a query measured. It is not safe for
// concurrent use: one run fills it, then its reader reads it.
type Analysis struct {
	ops map[opKey]*OpStats
	// Rows is the number of rows the query returned, Time how long it
	// took.
	Rows int64
	Time time.Duration
	// PeakMemory is the most the query held at once against
	// basin.query_memory (eval.Memory.Peak).
	PeakMemory int64
}

// OpStats is what one operator (or stage) did over a run.
type OpStats struct {
	Rows  int64         // rows produced, summed over loops
	Loops int64         // times it ran
	Time  time.Duration // summed over loops, inputs included
}

type opKey struct {
	rel   planner.Rel
	stage string
}

type analysisKey struct{}

// WithAnalysis returns ctx carrying a: Run measures what it runs under
// it into a.
func WithAnalysis(ctx context.Context, a *Analysis) context.Context {
	return context.WithValue(ctx, analysisKey{}, a)
}

// analysisOf returns the Analysis the run of env fills, or nil.
func analysisOf(env *eval.Env) *Analysis {
	a, _ := env.Context().Value(analysisKey{}).(*Analysis)
	return a
}

// Op returns what the operator compiled from rel (stage "" for the
// operator itself, else one of its stages) did; ok is false when it
// never ran.
func (a *Analysis) Op(rel planner.Rel, stage string) (st OpStats, ok bool) {
	if a == nil {
		return OpStats{}, false
	}
	s, ok := a.ops[opKey{rel, stage}]
	if !ok {
		return OpStats{}, false
	}
	return *s, true
}

// record adds one run of rel's operator (or stage) that started at
// start and produced rows rows. A nil a records nothing.
func (a *Analysis) record(rel planner.Rel, stage string, rows int, start time.Time) {
	if a == nil {
		return
	}
	if a.ops == nil {
		a.ops = map[opKey]*OpStats{}
	}
	k := opKey{rel, stage}
	s := a.ops[k]
	if s == nil {
		s = &OpStats{}
		a.ops[k] = s
	}
	s.Rows += int64(rows)
	s.Loops++
	s.Time += time.Since(start)
}

// measured is an operator as Run compiles it: the operator, measured
// into the run's Analysis when there is one.
type measured struct {
	rel planner.Rel
	op  relOp
}

func (m *measured) run(env *eval.Env) ([]catalog.Row, error) {
	a := analysisOf(env)
	if a == nil {
		return m.op.run(env)
	}
	start := time.Now()
	rows, err := m.op.run(env)
	a.record(m.rel, "", len(rows), start)
	return rows, err
}

// Annotator returns the annotations EXPLAIN ANALYZE appends to the
// plan's lines: " (actual rows=N time=X.XXXms)", the time left out when
// timing is false (EXPLAIN (ANALYZE, TIMING OFF)), " loops=N" added for
// an operator that ran other than once, and " (never executed)" for one
// that never ran. A nil Rel is the whole query.
func (a *Analysis) Annotator(timing bool) planner.Annotator {
	return func(r planner.Rel, stage string) string {
		st, ok := a.Op(r, stage)
		if r == nil && stage == "" {
			st, ok = OpStats{Rows: a.Rows, Loops: 1, Time: a.Time}, true
		}
		if !ok {
			return " (never executed)"
		}
		s := " (actual rows=" + strconv.FormatInt(st.Rows, 10)
		if timing {
			s += " time=" + strconv.FormatFloat(float64(st.Time.Microseconds())/1000, 'f', 3, 64) + "ms"
		}
		if st.Loops != 1 {
			s += " loops=" + strconv.FormatInt(st.Loops, 10)
		}
		return s + ")"
	}
}
