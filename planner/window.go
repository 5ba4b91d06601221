package planner

import (
	"fmt"
	"strings"
	"time"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/sql"
)

// Windowed views: CREATE TABLE ... AS SELECT ... FROM stream WINDOW
// TUMBLING|HOPPING|SESSION (...) GROUP BY ... [EMIT CHANGES|FINAL].
//
// A windowed view is a grouped view whose groups are also split by
// window. The plan binds it as one: the record's input row gets two more
// columns, WINDOWSTART and WINDOWEND, after ROWTIME (WindowInput), and
// GROUP BY two more expressions, references to them. The view task
// fills them per window a record falls in and aggregates the record
// into each such group (stream's windower), so the aggregation, its
// state, its changelog and its exactly-once commit are a grouped view's.
// The view's key is the GROUP BY columns, then WINDOWSTART
// (catalog.Window); its partition key is the GROUP BY columns alone.

// DefaultWindowGrace is the grace period of a window written without
// GRACE PERIOD: ksqlDB's 24 hours.
const DefaultWindowGrace = 24 * time.Hour

// DefaultWindowRetention is how long a window written without RETENTION
// stays readable, from its start in stream time, unless its size and
// grace period are longer: a day, as Kafka Streams kept windows by
// default before KIP-633 (ksqlDB asks only that retention cover size
// and grace).
const DefaultWindowRetention = 24 * time.Hour

// windowNames are the names of a windowed view's window bounds, as
// its input row has them after ROWTIME and its columns name them:
// WINDOWSTART and WINDOWEND, or TUMBLE's and HOP's window_start and
// window_end (tumble.go). A date bucket's (datebucket.go) start is the
// bucket's column, its end none; its input row names them bucketStart
// and bucketEnd.
type windowNames struct {
	start, end string
	// bound is their type: BIGINT milliseconds, or the time column's.
	bound catalog.Type
	// bucket is set for a date bucket of GROUP BY, which is the
	// window's start.
	bucket *dateBucket
}

var ksqlWindowNames = windowNames{start: catalog.WindowStartName, end: catalog.WindowEndName, bound: catalog.BigInt}

// columns are the window's columns of the input row.
func (n windowNames) columns() []catalog.Column {
	if n.bucket != nil {
		return []catalog.Column{{Name: bucketStart, Type: n.bound}, {Name: bucketEnd, Type: n.bound}}
	}
	return []catalog.Column{{Name: n.start, Type: n.bound}, {Name: n.end, Type: n.bound}}
}

// selectedOnly reports whether the window's bounds are the view's
// columns only where its select list has them (TUMBLE and HOP, date
// buckets), not placed by the planner as WINDOWSTART and WINDOWEND are.
func (n windowNames) selectedOnly() bool {
	return n.start == tableFuncStart || n.bucket != nil
}

// refuseWindow refuses the WINDOW and EMIT clauses in a query that is
// not a view's (what names it, e.g. "a derived stream").
func refuseWindow(sel *sql.Select, what string, final bool) error {
	if sel.Window != nil {
		return pgerr.New(pgerr.FeatureNotSupported, "WINDOW is not supported in %s", what).WithPosition(sel.Window.Pos).
			WithHint("A WINDOW clause aggregates a stream into a view: CREATE TABLE name AS SELECT k, count(*) FROM s WINDOW TUMBLING (SIZE 1 MINUTE) GROUP BY k.")
	}
	switch {
	case sel.Emit == sql.EmitFinal && final:
		return pgerr.New(pgerr.FeatureNotSupported, "EMIT FINAL is not supported in %s", what).
			WithHint("EMIT FINAL shows each window of a windowed view once it closes: CREATE TABLE name AS SELECT ... WINDOW ... GROUP BY ... EMIT FINAL.")
	case sel.Emit == sql.EmitChanges && !final:
		return pgerr.New(pgerr.FeatureNotSupported, "EMIT CHANGES (a push query) is not supported in %s", what).
			WithHint("Read a view's current rows with SELECT; derive a stream or view from a stream with CREATE STREAM or CREATE TABLE ... AS SELECT.")
	}
	return nil
}

// viewWindow returns the window of a view's SELECT, without its column
// indexes, nil when it has none.
func viewWindow(sel *sql.Select, src *catalog.Relation, view string) (*catalog.Window, error) {
	w := sel.Window
	if w == nil {
		if sel.Emit == sql.EmitFinal {
			return nil, pgerr.New(pgerr.FeatureNotSupported, "EMIT FINAL needs a WINDOW clause").
				WithHint("EMIT FINAL shows each window once it has closed: ... FROM s WINDOW TUMBLING (SIZE 1 MINUTE, GRACE PERIOD 10 SECONDS) GROUP BY k EMIT FINAL.")
		}
		return nil, nil
	}
	if src.Kind != catalog.KindStream {
		return nil, pgerr.New(pgerr.FeatureNotSupported, "WINDOW aggregates a stream, and %s is a %s", src.Name, strings.ToLower(string(src.Kind))).WithPosition(w.Pos).
			WithHint("A table's rows change in place and have no one time; aggregate it without WINDOW, or window the stream it comes from.")
	}
	if len(sel.GroupBy) == 0 {
		return nil, pgerr.New(pgerr.FeatureNotSupported, "a windowed view needs GROUP BY").WithPosition(w.Pos).
			WithHint("Group the stream's records by key and window: ... WINDOW TUMBLING (SIZE 1 MINUTE) GROUP BY k.")
	}
	for _, name := range []string{catalog.WindowStartName, catalog.WindowEndName} {
		if src.Schema.Index(name) >= 0 {
			return nil, pgerr.New(pgerr.DuplicateColumn, "stream %s has a column %s, which a windowed view names its window by", src.Name, name).WithPosition(w.Pos).
				WithHint("Derive a stream that renames the column (CREATE STREAM ... AS SELECT %s AS other, ...) and window that.", name)
		}
	}
	cw := &catalog.Window{Size: w.Size.Milliseconds(), Grace: DefaultWindowGrace.Milliseconds(), Final: sel.Emit == sql.EmitFinal}
	switch w.Kind {
	case sql.WindowTumbling:
		cw.Kind = catalog.WindowTumbling
	case sql.WindowHopping:
		cw.Kind, cw.Advance = catalog.WindowHopping, w.Advance.Milliseconds()
	default:
		cw.Kind = catalog.WindowSession
	}
	if w.HasGrace {
		cw.Grace = w.Grace.Milliseconds()
	}
	bad := func(format string, args ...any) *pgerr.Error {
		return pgerr.New(pgerr.InvalidParameterValue, format, args...).WithPosition(w.Pos)
	}
	switch {
	case cw.Size <= 0 && cw.Kind == catalog.WindowSession:
		return nil, bad("the gap of view %s's session window must be at least 1 millisecond", view)
	case cw.Size <= 0:
		return nil, bad("the size of view %s's window must be at least 1 millisecond", view)
	case cw.Kind == catalog.WindowHopping && cw.Advance <= 0:
		return nil, bad("the advance of view %s's window must be at least 1 millisecond", view)
	case cw.Kind == catalog.WindowHopping && cw.Advance > cw.Size:
		return nil, bad("the advance of view %s's hopping window (%s) is larger than its size (%s), so some records would be in no window",
			view, w.Advance, w.Size).
			WithHint("Make ADVANCE BY at most SIZE; equal, the window tumbles.")
	}
	least := cw.Size + cw.Grace
	cw.Retention = max(least, DefaultWindowRetention.Milliseconds())
	if w.HasRetention {
		if r := w.Retention.Milliseconds(); r < least {
			return nil, bad("the retention of view %s's windows (%s) is less than their size (a session's gap) plus grace period (%s)",
				view, w.Retention, time.Duration(least)*time.Millisecond).
				WithHint("A window stays until it has closed: make RETENTION at least SIZE (or the session's gap) plus GRACE PERIOD.")
		} else {
			cw.Retention = r
		}
	}
	return cw, nil
}

// windowGroups appends WINDOWSTART and WINDOWEND to the GROUP BY of a
// windowed view, refusing them there as the user's. TUMBLE's and HOP's
// window_start and window_end, and a date bucket, which the user's
// GROUP BY has, move there; a date bucket's start is the bucket.
func windowGroups(b *binder, groupBy []sql.Expr, names windowNames, pos int) ([]sql.Expr, error) {
	out := make([]sql.Expr, 0, len(groupBy)+2)
	for i, g := range groupBy {
		ref, isRef := g.(*sql.ColumnRef)
		switch {
		case names.bucket != nil:
			if names.bucket.groups[i] {
				continue
			}
		case names.start == tableFuncStart:
			if isRef && (strings.EqualFold(ref.Name, names.start) || strings.EqualFold(ref.Name, names.end)) {
				continue
			}
		case isRef && ref.Table == "" && (strings.EqualFold(ref.Name, names.start) || strings.EqualFold(ref.Name, names.end)):
			return nil, pgerr.New(pgerr.GroupingError, "a windowed view is grouped by its window already").WithPosition(ref.Pos).
				WithHint("Leave %s out of GROUP BY; select it to show it.", strings.ToUpper(ref.Name))
		}
		out = append(out, g)
	}
	b.windowAt = len(b.cols)
	b.cols = append(b.cols, names.columns()...)
	var start sql.Expr = &sql.ColumnRef{Name: names.start, Pos: pos}
	if names.bucket != nil {
		start = names.bucket.expr
	}
	return append(out, start, &sql.ColumnRef{Name: names.end, Pos: pos}), nil
}

// placeWindowColumns puts WINDOWSTART and WINDOWEND in the select list
// of a windowed view where the user did not: after the last GROUP BY
// column. WINDOWSTART is the last key column (catalog.Window), so one
// the user selected must follow every GROUP BY column.
func (p *ViewPlan) placeWindowColumns(items []sql.SelectItem) ([]sql.SelectItem, error) {
	ng := len(p.GroupBy) - 2
	last := -1
	at := [2]int{-1, -1}
	for i, o := range p.Output {
		ref, ok := o.(*ColRef)
		if !ok {
			continue
		}
		name := itemName(items[i])
		if p.winNames.bucket == nil {
			name = strings.ToLower(name)
		}
		switch {
		case ref.Idx < ng:
			last = i
		case ref.Idx == ng && name == p.winNames.start && at[0] < 0:
			at[0] = i
		case ref.Idx == ng+1 && name == p.winNames.end && at[1] < 0:
			at[1] = i
		}
	}
	if at[0] >= 0 && at[0] < last {
		return nil, pgerr.New(pgerr.InvalidTableDefinition, "%s of view %s comes before a GROUP BY column in its select list", strings.ToUpper(p.winNames.start), p.View.Name).
			WithPosition(items[at[0]].Expr.Position()).
			WithHint("A windowed view is keyed by its GROUP BY columns, then %s: select it after them.", strings.ToUpper(p.winNames.start))
	}
	if p.winNames.selectedOnly() {
		// TUMBLE and HOP, date buckets: the view's columns are its
		// select list's.
		if at[0] < 0 {
			return nil, pgerr.New(pgerr.GroupingError, "window_start must be in the select list of view %s", p.View.Name).
				WithHint("A view over TUMBLE or HOP is keyed by its GROUP BY columns, window_start last: select it after them.")
		}
		return items, nil
	}
	insert := last + 1
	if at[0] >= 0 {
		insert = at[0] + 1
	}
	for k, name := range []string{p.winNames.start, p.winNames.end} {
		if at[k] >= 0 {
			continue
		}
		ref := &ColRef{Idx: ng + k, T: p.winNames.bound, Name: name}
		items = append(items[:insert:insert], append([]sql.SelectItem{{Expr: &sql.ColumnRef{Name: name}}}, items[insert:]...)...)
		p.Output = append(p.Output[:insert:insert], append([]Scalar{ref}, p.Output[insert:]...)...)
		insert++
	}
	return items, nil
}

// markWindow records where WINDOWSTART and WINDOWEND are in the view's
// columns, once they are decided.
func (p *ViewPlan) markWindow(cols []catalog.Column) {
	w := p.View.Window
	w.Start, w.End = -1, -1
	for i, c := range cols {
		switch c.Name {
		case p.winNames.start:
			w.Start = i
		case p.winNames.end:
			w.End = i
		}
	}
}

// PartitionKeyGroup maps each column of the view's partition key (its
// key without WINDOWSTART) to its GroupBy index (KeyGroup's).
func (p *ViewPlan) PartitionKeyGroup() []int {
	if p.View.Window != nil {
		return p.KeyGroup[:len(p.KeyGroup)-1]
	}
	return p.KeyGroup
}

// UserGroups is the number of GroupBy expressions of the query's own:
// all but WINDOWSTART and WINDOWEND of a windowed view.
func (p *ViewPlan) UserGroups() int {
	if p.View.Window != nil {
		return len(p.GroupBy) - 2
	}
	return len(p.GroupBy)
}

// describeWindow renders a view's window for EXPLAIN.
func describeWindow(w *catalog.Window) string {
	ms := func(n int64) time.Duration { return time.Duration(n) * time.Millisecond }
	var b strings.Builder
	switch w.Kind {
	case catalog.WindowHopping:
		fmt.Fprintf(&b, "Window hopping size %s advance %s", ms(w.Size), ms(w.Advance))
	case catalog.WindowSession:
		fmt.Fprintf(&b, "Window session gap %s", ms(w.Size))
	default:
		fmt.Fprintf(&b, "Window tumbling size %s", ms(w.Size))
	}
	if w.Offset != 0 {
		fmt.Fprintf(&b, " offset %s", ms(w.Offset))
	}
	bounded := func(n int64) string {
		if n >= unboundedMs {
			return "unbounded"
		}
		return ms(n).String()
	}
	fmt.Fprintf(&b, ", grace period %s, retention %s, over ROWTIME", bounded(w.Grace), bounded(w.Retention))
	if w.Final {
		b.WriteString("; EMIT FINAL: each window shows once it has closed")
	}
	b.WriteString(" (stream time per partition; late records to the processing log)")
	return b.String()
}
