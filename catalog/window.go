package catalog

// Window is how a windowed view (CREATE TABLE ... AS SELECT ... FROM
// stream WINDOW ...) groups its stream's records in record time. The
// view has two columns for it, WINDOWSTART and WINDOWEND (BIGINT,
// milliseconds since the epoch, as ksqlDB's); WINDOWSTART is the last
// key column, after the GROUP BY columns, so a group's windows are
// adjacent in the store in time order. The key without it is the
// partition key: every window of a group lives in the partition of the
// group's key.
type Window struct {
	// Kind is "tumbling", "hopping" or "session".
	Kind string `json:"kind"`
	// Size is a tumbling or hopping window's size, a session window's
	// gap of inactivity, in milliseconds.
	Size int64 `json:"size_ms"`
	// Advance is a hopping window's step (a tumbling window's is its
	// size).
	Advance int64 `json:"advance_ms,omitempty"`
	// Grace is how far behind the view's stream time a record may be and
	// still count in its window: a window closes when stream time
	// reaches its end plus Grace.
	Grace int64 `json:"grace_ms"`
	// Retention is how long a window stays readable, from its start, in
	// stream time; at least Size plus Grace.
	Retention int64 `json:"retention_ms"`
	// Final is EMIT FINAL: a window shows only once it has closed.
	Final bool `json:"final,omitempty"`
	// Start and End are the schema indexes of WINDOWSTART and
	// WINDOWEND; End is -1 when the view has no such column (TUMBLE and
	// HOP without window_end selected, date buckets).
	Start int `json:"start"`
	End   int `json:"end"`
	// Bound is the type of the window's bounds: BIGINT milliseconds
	// (WINDOW, or TUMBLE and HOP over ROWTIME; 0 in the catalog of an
	// older version), or TIMESTAMP or TIMESTAMPTZ (TUMBLE and HOP over
	// such a time column). Names are their names when not WINDOWSTART
	// and WINDOWEND.
	Bound Type      `json:"bound,omitempty"`
	Names [2]string `json:"names,omitempty"`
	// Offset is where a tumbling or hopping window's starts are
	// counted from, in milliseconds since the epoch: they are Offset
	// plus a multiple of Step (0 before date buckets: the epoch).
	Offset int64 `json:"offset_ms,omitempty"`
	// Bucket is set for a date bucket of a view's GROUP BY (date_trunc
	// or date_bin of the record time, planner's datebucket.go): the
	// GROUP BY expression is the start column's value, and a record
	// whose time is NULL counts in the group of a NULL bucket, as it
	// does in the grouping, rather than being late.
	Bucket bool `json:"bucket,omitempty"`
}

// Window kinds.
const (
	WindowTumbling = "tumbling"
	WindowHopping  = "hopping"
	WindowSession  = "session"
)

// Window bound column names.
const (
	WindowStartName = "windowstart"
	WindowEndName   = "windowend"
)

// Step is how far apart the starts of a tumbling or hopping window's
// windows are (counted from Offset).
func (w *Window) Step() int64 {
	if w.Kind == WindowHopping {
		return w.Advance
	}
	return w.Size
}

// PartitionKeyIndexes are the key columns whose values place a row in a
// partition: all of KeyIndexes, except WINDOWSTART of a windowed view.
// A windowed view keyed by WINDOWSTART alone has none: its rows are all
// in the one partition of the empty key (the null record key's).
func (r *Relation) PartitionKeyIndexes() []int {
	ks := r.Schema.KeyIndexes()
	if r.Window != nil && len(ks) > 0 && ks[len(ks)-1] == r.Window.Start {
		ks = ks[:len(ks)-1]
	}
	return ks
}

// WindowBound reports whether column i is WINDOWSTART or WINDOWEND of a
// windowed view.
func (r *Relation) WindowBound(i int) bool {
	return r.Window != nil && (i == r.Window.Start || i == r.Window.End)
}
