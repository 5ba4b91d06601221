package planner

import (
	"strings"
	"time"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/pgcodec"
	"github.com/basindb/basin/sql"
)

// Date buckets: a view over a stream grouped by a date_trunc or date_bin
// of its record time,
//
//	CREATE TABLE v AS SELECT date_trunc('hour', ts) AS hour, count(*) FROM s GROUP BY 1
//	CREATE TABLE v AS SELECT k, date_bin(INTERVAL '15 minutes', ts, TIMESTAMP '2000-01-01') AS q, count(*)
//	  FROM s GROUP BY k, q
//
// is the same windowed operator as TUMBLE (tumble.go): a tumbling
// window of the bucket's width, over the record time, whose starts are
// the buckets', with the grace period and the retention unbounded so
// that no record is late and no window expires. The view is its query's
// answer, with the columns, types and rows of the plain grouping; the
// window makes it keyed by its other GROUP BY columns, then the bucket,
// partitioned by the other columns alone (by none: the one partition of
// the empty key), as a windowed view is (catalog.Window).
//
// The bucket's column is the window's start. Its value is the GROUP BY
// expression itself, evaluated as the grouping evaluates it (a record
// with a NULL time is in the NULL bucket, catalog.Window.Bucket), so
// the select list and HAVING read it as they read any group value;
// equal, by the conditions below, to the start of the record's window.
// The input row's window bounds have names no query can reach unquoted
// (bucketStart and bucketEnd), and the window's end is no column.
//
// A GROUP BY expression (written out, or an output alias or position)
// is a date bucket when it is
//
//   - date_trunc(unit, c) with a constant unit of fixed length: milliseconds,
//     second, minute, hour, day, or week (its Mondays are four days after
//     the epoch's Thursday: the window's offset). A view's expressions
//     evaluate in UTC, so that date_trunc of a TIMESTAMPTZ is the same
//     tumbling window. Not microseconds: the record time is in
//     milliseconds.
//   - date_bin(stride, c, origin) with a constant stride of days or less
//     and a constant origin, both whole milliseconds; the origin, modulo
//     the stride, is the window's offset.
//
// and c is the stream's record time: the TIMESTAMP or TIMESTAMPTZ column
// of WITH (timestamp = ...). The view reads one stream (no join) without
// a WINDOW clause, EMIT or kafka_topic (a published windowed view's keys
// are ksqlDB's windowed ones, and its bounds no part of the value: the
// topic would change), selects the bucket after every other GROUP BY
// column (the key's order is the select list's, and the window's start
// is the key's last column), and was not created as a plain grouped view
// by an older version (its stored relation has no window). Any other
// view plans as a plain grouped view, as it did before: month, year, a
// three-argument date_trunc, another column, a bucket selected first
// among several GROUP BY columns.

// The names of a date bucket's window bounds in the input row: none a
// query writes without quotes.
const (
	bucketStart = "(window start)"
	bucketEnd   = "(window end)"
)

// dateBucket is a date bucket of a view's GROUP BY.
type dateBucket struct {
	// expr is the bucket, as GROUP BY has it once aliases and positions
	// are resolved; groups marks the GROUP BY entries that are it.
	expr   sql.Expr
	groups []bool
	// name is the name of the first select item that is the bucket: the
	// view's column that is the window's start.
	name string
	// bound is the record time's type, the bucket's.
	bound catalog.Type
	// size and offset are the window's, in milliseconds.
	size, offset int64
	pos          int
}

// planBucketView plans s as a windowed view when it groups a stream by a
// date bucket and that plan succeeds; nil means planning it as a plain
// grouped view.
func planBucketView(cat *catalog.Catalog, s *sql.CreateTableAs, text string) *ViewPlan {
	d := findDateBucket(cat, s)
	if d == nil {
		return nil
	}
	p, err := planView(cat, s, text, d)
	if err != nil {
		// The plain view's plan, or its error.
		return nil
	}
	return p
}

// findDateBucket returns the date bucket of the GROUP BY of view s, nil
// when it has none that can be its window.
func findDateBucket(cat *catalog.Catalog, s *sql.CreateTableAs) *dateBucket {
	sel := s.Select
	if sel.Window != nil || sel.Emit != sql.EmitDefault || len(sel.GroupBy) == 0 || sel.GroupingSets != nil ||
		len(sel.SetOps) > 0 || len(sel.With) > 0 {
		return nil
	}
	from := sel.Table()
	if from == nil || len(from.Columns) > 0 {
		return nil
	}
	opts, err := checkOptions(s.With, viewOptions, "table")
	if err != nil || opts["kafka_topic"] != "" {
		return nil
	}
	src, err := cat.Resolve(from.Name)
	if err != nil || src.Kind != catalog.KindStream {
		return nil
	}
	if old, err := cat.Resolve(s.Name); err == nil && old.Window == nil {
		// Created as a plain grouped view (re-planned when it starts,
		// or read as another view's source): it stays one.
		return nil
	}
	input := SourceInput(src)
	for _, c := range input {
		if c.Name == bucketStart || c.Name == bucketEnd {
			return nil
		}
	}
	items, err := expandStar(sel.Items, src.Schema.Columns)
	if err != nil {
		return nil
	}
	var d *dateBucket
	key := ""
	for i, g := range sel.GroupBy {
		e := resolveGroupAlias(g, items, input)
		if d == nil {
			if d = bucketOf(e, src, from); d == nil {
				continue
			}
			d.expr, d.groups, d.pos = e, make([]bool, len(sel.GroupBy)), g.Position()
			key = sql.FormatExpr(e)
		}
		d.groups[i] = sql.FormatExpr(e) == key
	}
	if d == nil {
		return nil
	}
	for _, it := range items {
		if sql.FormatExpr(it.Expr) == key {
			d.name = itemName(it)
			return d
		}
	}
	return nil // not selected: the plain view's error
}

// bucketOf reads e as a date bucket of the record time of src (read as
// from), nil when it is not one.
func bucketOf(e sql.Expr, src *catalog.Relation, from *sql.TableRef) *dateBucket {
	f, ok := e.(*sql.Func)
	if !ok || f.Star || f.Distinct || f.Over != nil || f.Filter != nil || len(f.OrderBy) > 0 {
		return nil
	}
	var d dateBucket
	switch strings.ToLower(f.Name) {
	case "date_trunc":
		if len(f.Args) != 2 {
			return nil // with a zone: the zone's days
		}
		unit, ok := stringConst(f.Args[0])
		if !ok {
			return nil
		}
		switch strings.ToLower(unit) {
		case "milliseconds", "millisecond":
			d.size = 1
		case "second", "seconds":
			d.size = time.Second.Milliseconds()
		case "minute", "minutes":
			d.size = time.Minute.Milliseconds()
		case "hour", "hours":
			d.size = time.Hour.Milliseconds()
		case "day", "days":
			d.size = (24 * time.Hour).Milliseconds()
		case "week", "weeks":
			// ISO weeks start on Monday, 1970-01-05.
			d.size, d.offset = (7 * 24 * time.Hour).Milliseconds(), (4 * 24 * time.Hour).Milliseconds()
		default:
			return nil // months and years have no fixed length
		}
	case "date_bin":
		if len(f.Args) != 3 {
			return nil
		}
		stride, err := constDuration(f.Args[0], "date_bin")
		if err != nil || stride%time.Millisecond != 0 {
			return nil
		}
		d.size = stride.Milliseconds()
	default:
		return nil
	}
	visible := from.Name
	if from.Alias != "" {
		visible = from.Alias // the alias hides the stream's name
	}
	col, ok := f.Args[1].(*sql.ColumnRef)
	if !ok || col.Table != "" && !strings.EqualFold(col.Table, visible) {
		return nil
	}
	bound, err := recordTimeType(src, col)
	if err != nil || bound != catalog.Timestamp && bound != catalog.TimestampTZ {
		return nil
	}
	d.bound = bound
	if len(f.Args) == 3 {
		origin, ok := originConst(f.Args[2], bound)
		if !ok || origin.Nanosecond()%int(time.Millisecond) != 0 {
			return nil
		}
		o := origin.UnixMilli() % d.size
		if o < 0 {
			o += d.size
		}
		d.offset = o
	}
	return &d
}

// stringConst reads a string literal.
func stringConst(e sql.Expr) (string, bool) {
	lit, ok := e.(*sql.Literal)
	if !ok {
		return "", false
	}
	s, ok := lit.Value.(string)
	return s, ok
}

// originConst reads date_bin's origin: a literal, or one cast to
// TIMESTAMP or TIMESTAMPTZ, read as bound (the source's type) when it
// has no type of its own. A TIMESTAMPTZ without a zone is in UTC, a
// view's zone.
func originConst(e sql.Expr, bound catalog.Type) (time.Time, bool) {
	t := bound
	if c, ok := e.(*sql.Cast); ok {
		if c.Type != catalog.Timestamp && c.Type != catalog.TimestampTZ {
			return time.Time{}, false
		}
		t, e = c.Type, c.X
	}
	lit, ok := e.(*sql.Literal)
	if !ok {
		return time.Time{}, false
	}
	switch v := lit.Value.(type) {
	case time.Time:
		return v, true
	case string:
		var tm time.Time
		var err error
		if t == catalog.TimestampTZ {
			tm, err = pgcodec.ParseTimestampTZ(v, time.UTC)
		} else {
			tm, err = pgcodec.ParseTimestamp(v)
		}
		return tm, err == nil
	}
	return time.Time{}, false
}

// names are the window's names: the bucket's column is its start.
func (d *dateBucket) names() windowNames {
	return windowNames{start: d.name, end: bucketEnd, bound: d.bound, bucket: d}
}

// windowSelect is sel windowed by the bucket: GROUP BY keeps the bucket,
// which windowGroups moves to the window's start.
func (d *dateBucket) windowSelect(sel *sql.Select) *sql.Select {
	out := *sel
	out.Window = &sql.StreamWindow{Kind: sql.WindowTumbling, Size: time.Duration(d.size) * time.Millisecond, Pos: d.pos}
	return &out
}

// setWindow completes the view's window: no record is late and no
// window expires, as over TUMBLE.
func (d *dateBucket) setWindow(w *catalog.Window) {
	w.Grace, w.Retention = unboundedMs, unboundedMs
	w.Bound, w.Offset, w.Bucket = d.bound, d.offset, true
	w.Names = [2]string{d.name, ""}
}
