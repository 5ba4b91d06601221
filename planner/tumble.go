package planner

import (
	"math"
	"strings"
	"time"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/pgcodec"
	"github.com/basindb/basin/sql"
)

// TUMBLE and HOP, Materialize's and RisingWave's window table functions,
// in the FROM of a view:
//
//	CREATE TABLE v AS SELECT k, window_start, window_end, count(*)
//	  FROM TUMBLE(stream, time_column, INTERVAL '1 minute')
//	  GROUP BY k, window_start, window_end
//	  ... FROM HOP(stream, time_column, INTERVAL '1 minute', INTERVAL '5 minutes') ...
//
// are the same windowed operator as WINDOW TUMBLING and HOPPING
// (window.go), whose bounds are named window_start and window_end and
// typed as the time column (BIGINT milliseconds for ROWTIME, TIMESTAMP
// or TIMESTAMPTZ for such a column). As in those systems no record is
// late and no window expires: the grace period and the retention are
// unbounded, so the view always equals its query. The time column is
// the stream's record time: ROWTIME, or the column of WITH (timestamp =
// ...).

// unboundedMs is the grace period and retention of a window that never
// closes or expires: far beyond any stream time, and still far from
// overflowing when added to one.
const unboundedMs = math.MaxInt64 / 4

// windowFunc is a view's TUMBLE or HOP in FROM.
type windowFunc struct {
	window *sql.StreamWindow
	from   *sql.TableRef
	// bound is the type of window_start and window_end.
	bound catalog.Type
}

// windowTableFunc recognizes TUMBLE or HOP as the one FROM item of sel,
// nil when it is not.
func windowTableFunc(cat *catalog.Catalog, sel *sql.Select) (*windowFunc, error) {
	if len(sel.From) != 1 {
		return nil, nil
	}
	ref, ok := sel.From[0].(*sql.FuncRef)
	if !ok || ref.Func == nil {
		return nil, nil
	}
	name := strings.ToLower(ref.Func.Name)
	if name != "tumble" && name != "hop" {
		return nil, nil
	}
	args := ref.Func.Args
	want := map[string]int{"tumble": 3, "hop": 4}[name]
	usage := map[string]string{
		"tumble": "TUMBLE(stream, time_column, INTERVAL '1 minute')",
		"hop":    "HOP(stream, time_column, INTERVAL '1 minute' (the hop), INTERVAL '5 minutes' (the size))",
	}[name]
	if len(args) != want {
		return nil, pgerr.New(pgerr.UndefinedFunction, "%s takes %d arguments: %s", strings.ToUpper(name), want, usage).WithPosition(ref.Pos)
	}
	src, ok := args[0].(*sql.ColumnRef)
	if !ok || src.Table != "" {
		return nil, pgerr.New(pgerr.FeatureNotSupported, "the first argument of %s names a stream: %s", strings.ToUpper(name), usage).WithPosition(args[0].Position())
	}
	rel, err := cat.Resolve(src.Name)
	if err != nil {
		if pe, ok := pgerr.As(err); ok {
			pe.WithPosition(src.Pos)
		}
		return nil, err
	}
	if rel.Kind != catalog.KindStream {
		return nil, pgerr.New(pgerr.FeatureNotSupported, "%s windows a stream, and %s is a %s", strings.ToUpper(name), rel.Name, strings.ToLower(string(rel.Kind))).WithPosition(src.Pos).
			WithHint("A table's rows change in place and have no one time; aggregate it without windows.")
	}
	for _, n := range []string{tableFuncStart, tableFuncEnd} {
		if rel.Schema.Index(n) >= 0 {
			return nil, pgerr.New(pgerr.DuplicateColumn, "stream %s has a column %s, which %s names a window's bound by", rel.Name, n, strings.ToUpper(name)).WithPosition(src.Pos).
				WithHint("Use WINDOW TUMBLING or HOPPING, whose bounds are WINDOWSTART and WINDOWEND.")
		}
	}
	f := &windowFunc{from: &sql.TableRef{Name: src.Name, Alias: ref.Alias, Pos: src.Pos}}
	if strings.EqualFold(ref.Alias, name) {
		f.from.Alias = "" // the default alias, the function's name
	}
	col, ok := args[1].(*sql.ColumnRef)
	if !ok {
		return nil, pgerr.New(pgerr.FeatureNotSupported, "the second argument of %s is a column of %s: its record time", strings.ToUpper(name), rel.Name).WithPosition(args[1].Position())
	}
	f.bound, err = recordTimeType(rel, col)
	if err != nil {
		return nil, err
	}
	durs := make([]time.Duration, 0, 2)
	for _, a := range args[2:] {
		d, err := constDuration(a, strings.ToUpper(name))
		if err != nil {
			return nil, err
		}
		durs = append(durs, d)
	}
	w := &sql.StreamWindow{Kind: sql.WindowTumbling, Size: durs[0], Pos: ref.Pos}
	if name == "hop" {
		w.Kind, w.Advance, w.Size = sql.WindowHopping, durs[0], durs[1]
	}
	f.window = w
	return f, nil
}

// recordTimeType checks that col, the time column of a window over rel,
// is rel's record time, and returns the type of the window's bounds.
func recordTimeType(rel *catalog.Relation, col *sql.ColumnRef) (catalog.Type, error) {
	if strings.EqualFold(col.Name, RowtimeColumn.Name) {
		return catalog.BigInt, nil
	}
	i := rel.Schema.Index(col.Name)
	if i < 0 {
		return 0, pgerr.New(pgerr.UndefinedColumn, "column %q does not exist", col.Name).WithPosition(col.Pos).
			WithHint("%s has columns %s.", rel.Name, columnList(rel.Schema.Columns))
	}
	if ts, ok := rel.Options["timestamp"]; !ok || !strings.EqualFold(ts, col.Name) {
		return 0, pgerr.New(pgerr.FeatureNotSupported, "windows are over a stream's record time, and the record time of %s is not %s", rel.Name, col.Name).WithPosition(col.Pos).
			WithHint("Window over ROWTIME, or declare the stream WITH (timestamp = '%s') so that its records' time is that column.", col.Name)
	}
	switch t := rel.Schema.Columns[i].Type; t {
	case catalog.BigInt, catalog.Timestamp, catalog.TimestampTZ:
		return t, nil
	}
	return 0, pgerr.New(pgerr.FeatureNotSupported, "window bounds of a %s time column are not supported", rel.Schema.Columns[i].Type).WithPosition(col.Pos).
		WithHint("Window over ROWTIME, whose bounds are BIGINT milliseconds.")
}

// constDuration reads a window function's INTERVAL argument: a constant
// of days, hours and smaller units (a month has no fixed length).
func constDuration(e sql.Expr, fn string) (time.Duration, error) {
	bad := pgerr.New(pgerr.FeatureNotSupported, "the sizes of %s are constant intervals of days or less, e.g. INTERVAL '1 minute'", fn).WithPosition(e.Position())
	text := ""
	switch x := e.(type) {
	case *sql.Cast:
		lit, ok := x.X.(*sql.Literal)
		if !ok {
			return 0, bad
		}
		s, isText := lit.Value.(string)
		if !isText {
			return 0, bad
		}
		text = s
	case *sql.Literal:
		s, ok := x.Value.(string)
		if !ok {
			return 0, bad
		}
		text = s
	default:
		return 0, bad
	}
	iv, err := pgcodec.ParseInterval(text)
	if err != nil {
		if pe, ok := pgerr.As(err); ok {
			return 0, pe.WithPosition(e.Position())
		}
		return 0, bad
	}
	if iv.Months != 0 {
		return 0, bad
	}
	d := time.Duration(iv.Days)*24*time.Hour + time.Duration(iv.Micros)*time.Microsecond
	if d <= 0 {
		return 0, pgerr.New(pgerr.InvalidParameterValue, "the sizes of %s must be positive", fn).WithPosition(e.Position())
	}
	return d, nil
}

// tableFuncSelect rewrites sel, whose FROM is f's TUMBLE or HOP, into
// the same query over the stream with a WINDOW clause. Its GROUP BY must
// name window_start; windowGroups takes window_start and window_end out
// of it, which the window groups by. The view may be grouped by nothing
// else: keyed by window_start alone, its rows are all in the partition of
// the empty key (catalog.Relation.PartitionKeyIndexes).
func (f *windowFunc) tableFuncSelect(sel *sql.Select) (*sql.Select, error) {
	if sel.Window != nil {
		return nil, pgerr.New(pgerr.FeatureNotSupported, "a view over TUMBLE or HOP has no WINDOW clause").WithPosition(sel.Window.Pos).
			WithHint("TUMBLE and HOP are the window already.")
	}
	out := *sel
	out.From = []sql.FromItem{f.from}
	out.Window = f.window
	grouped := false
	for _, g := range sel.GroupBy {
		if ref, ok := g.(*sql.ColumnRef); ok && strings.EqualFold(ref.Name, tableFuncStart) {
			grouped = true
		}
	}
	if !grouped {
		return nil, pgerr.New(pgerr.GroupingError, "a view over %s groups by window_start", map[sql.WindowKind]string{sql.WindowTumbling: "TUMBLE", sql.WindowHopping: "HOP"}[f.window.Kind]).
			WithPosition(f.window.Pos).
			WithHint("Add window_start to GROUP BY: the view keeps one row per group and window.")
	}
	return &out, nil
}

// The bounds of a window from TUMBLE or HOP.
const (
	tableFuncStart = "window_start"
	tableFuncEnd   = "window_end"
)
