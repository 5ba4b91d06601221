package stream

// Windowed views: the view task of a windowed view (planner's
// window.go) aggregates each record into the windows of record time it
// falls in, drops records too late for all of them, deletes windows
// past their retention and, with EMIT FINAL, shows a window only once
// it has closed (see windower).

import (
	"fmt"
	"math"
	"time"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/materialize"
)

// windower is the windowed part of a view task.
//
// Stream time is the largest ROWTIME the task has read, late records
// included; a window [start, end) closes once stream time reaches end
// plus the grace period, and a record whose windows have all closed is
// late: it is skipped into the processing log. Stream time is part of
// the checkpoint (streamTimeIn), written in the same transaction as the
// rows, so a restarted task or a promoted standby closes the same
// windows at the same records.
//
// A window is deleted, from the store and (a tombstone) the changelog,
// once stream time has passed its start by the retention. The task
// looks for such windows in passes, each time stream time has advanced
// by a sixteenth of the retention (expireAt, in the checkpoint too):
// finding them means reading the whole store, whose key order is the
// group's then the window's.
//
// With EMIT FINAL a window's row is stored hidden (as a row HAVING
// rejects is) until the window closes; the task keeps the windows not
// yet closed in memory (open), rebuilt from the store when it starts,
// and at the end of a batch shows those that stream time has closed.
type windower struct {
	w *catalog.Window
	// ncols is the number of the source's columns: ROWTIME is at ncols
	// in the input row, WINDOWSTART and WINDOWEND after it.
	ncols int
	// ng is the number of the query's own GROUP BY expressions: the
	// group values of WINDOWSTART and WINDOWEND are at ng and ng+1.
	ng int
	// open maps the store key of each window not yet closed (EMIT
	// FINAL) to its end; openMin is the least of them, MaxInt64 when
	// there are none.
	open    map[string]int64
	openMin int64
}

// expiryIn is the checkpoint entry (partition 0) that holds the stream
// time of a windowed view's next expiry pass.
const expiryIn = "\x00expiry"

// noTime is the stream time of a task that has read no record yet.
const noTime = math.MinInt64

func newWindower(w *catalog.Window, ncols, ng int) *windower {
	return &windower{w: w, ncols: ncols, ng: ng, openMin: math.MaxInt64}
}

// floorDiv is a / b rounded down.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// starts appends the starts of the windows time ts falls in to dst, in
// increasing order.
func (w *windower) starts(dst []int64, ts int64) []int64 {
	size, step := w.w.Size, w.w.Step()
	// The first window to hold ts starts at the least multiple of step
	// above ts - size.
	for s := floorDiv(ts-size, step)*step + step; s <= ts; s += step {
		dst = append(dst, s)
	}
	return dst
}

// closed reports whether the window ending at end has closed at stream
// time st.
func (w *windower) closed(end, st int64) bool {
	return st != noTime && end <= st-w.w.Grace
}

// checkpointTimes reads the stream time and next expiry pass of cp.
func checkpointTimes(cp materialize.Checkpoint) (st, expireAt int64) {
	st, expireAt = noTime, noTime
	if v, ok := cp.Input[streamTimeIn][0]; ok {
		st = v
	}
	if v, ok := cp.Input[expiryIn][0]; ok {
		expireAt = v
	}
	return st, expireAt
}

// applyWindowed aggregates row, a record's input row, into each of its
// windows still open, in b.
func (t *viewTask) applyWindowed(store *materialize.Store, b *viewBatch, row catalog.Row) error {
	w := t.win
	n := w.ncols
	if cap(row) < n+3 {
		row = append(row[:n+1], nil, nil)
	}
	row = row[:n+3]
	ts, ok := row[n].(int64)
	if !ok {
		return pgerr.New(pgerr.NullValueNotAllowedDataException,
			"the record has no time (its timestamp column is NULL), so it falls in no window of view %s", t.plan.View.Name)
	}
	b.streamTime = max(b.streamTime, ts)
	t.starts = w.starts(t.starts[:0], ts)
	applied := false
	for _, s := range t.starts {
		end := s + w.w.Size
		if w.closed(end, b.streamTime) {
			continue
		}
		row[n+1], row[n+2] = s, end
		if err := t.applyGroups(store, b, row); err != nil {
			return err
		}
		applied = true
	}
	if !applied {
		return pgerr.New(pgerr.DataException,
			"the record is late for view %s: its time %s is more than the grace period (%d ms) behind the end of its last window, which stream time %s has passed",
			t.plan.View.Name, formatMillis(ts), w.w.Grace, formatMillis(b.streamTime))
	}
	return nil
}

func formatMillis(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05.000Z")
}

// windowEnd is the end of the window of changed row e.
func (w *windower) windowEnd(e *pending) int64 {
	end, _ := e.groups[w.ng+1].(int64)
	return end
}

// finishWindows ends a batch of a windowed view: it shows the windows
// stream time closed (EMIT FINAL) and deletes those past their
// retention, when a pass is due.
func (t *viewTask) finishWindows(store *materialize.Store, b *viewBatch) error {
	w := t.win
	if w.w.Final && w.closed(w.openMin, b.streamTime) {
		next := int64(math.MaxInt64)
		for skey, end := range w.open {
			if !w.closed(end, b.streamTime) {
				next = min(next, end)
				continue
			}
			if _, ok := b.changes[skey]; ok {
				continue // changed in this batch: values decides
			}
			key, err := materialize.DecodeKey([]byte(skey))
			if err != nil {
				return fmt.Errorf("view %s: an open window's key: %w", t.plan.View.Name, err)
			}
			e, err := t.lookup(store, b, key)
			if err != nil {
				return err
			}
			t.windowGroups(e, key)
		}
		w.openMin = next // windows the batch adds come back through applyCommitted
	}
	if b.streamTime == noTime || b.expireAt != noTime && b.streamTime < b.expireAt {
		return nil
	}
	b.expireAt = b.streamTime + max(w.w.Retention/16, 1)
	bound := b.streamTime - w.w.Retention // windows starting at or before it go
	it, err := store.NewIter(nil, nil)
	if err != nil {
		return err
	}
	var old [][]any
	for ok := it.First(); ok; ok = it.Next() {
		key, err := materialize.DecodeKey(it.Key())
		if err != nil {
			it.Close()
			return fmt.Errorf("view %s: a window's key: %w", t.plan.View.Name, err)
		}
		if s, ok := key[len(key)-1].(int64); ok && s <= bound {
			old = append(old, key)
		}
	}
	if err := it.Error(); err != nil {
		it.Close()
		return err
	}
	if err := it.Close(); err != nil {
		return err
	}
	for _, key := range old {
		e, err := t.lookup(store, b, key)
		if err != nil {
			return err
		}
		e.deleted, e.row = true, nil
	}
	// And the batch's own: a later record may have moved stream time
	// past them.
	for _, e := range b.order {
		if len(e.groups) == 0 {
			continue // found in the store: deleted above if old
		}
		if s, ok := e.groups[w.ng].(int64); ok && s <= bound {
			e.deleted, e.row = true, nil
		}
	}
	return nil
}

// windowGroups sets the group values of window e, not changed by a
// record, from its key: each GROUP BY expression is a key column (the
// planner has every one selected), then WINDOWSTART, whose window's
// end is WINDOWEND.
func (t *viewTask) windowGroups(e *pending, key []any) {
	if e.groups != nil {
		return
	}
	groups := make([]any, len(t.plan.GroupBy))
	for i, g := range t.plan.KeyGroup {
		groups[g] = key[i]
	}
	if s, ok := groups[t.win.ng].(int64); ok {
		groups[t.win.ng+1] = s + t.win.w.Size
	}
	e.groups = groups
}

// hidden reports whether changed window e is not to show yet (EMIT
// FINAL, not closed at the batch's stream time).
func (t *viewTask) hidden(b *viewBatch, e *pending) bool {
	return t.win != nil && t.win.w.Final && e.groups != nil && !t.win.closed(t.win.windowEnd(e), b.streamTime)
}

// windowsCommitted notes, once b has committed, which of its windows
// are open (EMIT FINAL).
func (t *viewTask) windowsCommitted(b *viewBatch, vals [][]byte) {
	w := t.win
	if !w.w.Final {
		return
	}
	for i, e := range b.order {
		if vals[i] == nil || e.groups == nil {
			delete(w.open, e.skey)
			continue
		}
		end := w.windowEnd(e)
		if w.closed(end, b.streamTime) {
			delete(w.open, e.skey)
			continue
		}
		w.open[e.skey] = end
		w.openMin = min(w.openMin, end)
	}
}

// resetWindows rebuilds the open windows (EMIT FINAL) from the store,
// whose checkpoint is cp: those stream time has not closed.
func (t *viewTask) resetWindows(store *materialize.Store, cp materialize.Checkpoint) error {
	w := t.win
	w.open, w.openMin = map[string]int64{}, math.MaxInt64
	if !w.w.Final {
		return nil
	}
	st, _ := checkpointTimes(cp)
	it, err := store.NewIter(nil, nil)
	if err != nil {
		return err
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		key, err := materialize.DecodeKey(it.Key())
		if err != nil {
			return fmt.Errorf("view %s: a window's key: %w", t.plan.View.Name, err)
		}
		s, ok := key[len(key)-1].(int64)
		if !ok {
			continue
		}
		if end := s + w.w.Size; !w.closed(end, st) {
			w.open[string(it.Key())] = end
			w.openMin = min(w.openMin, end)
		}
	}
	return it.Error()
}
