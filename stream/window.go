package stream

// Windowed views: the view task of a windowed view (planner's
// window.go) aggregates each record into the windows of record time it
// falls in, drops records too late for all of them, deletes windows
// past their retention and, with EMIT FINAL, shows a window only once
// it has closed (see windower).

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

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
	// in the input row. WINDOWSTART and WINDOWEND are at at and at+1,
	// after ROWTIME (and ROWPARTITION and ROWOFFSET, when the view reads
	// them: planner.SourceInput).
	ncols, at int
	// ng is the number of the query's own GROUP BY expressions: the
	// group values of WINDOWSTART and WINDOWEND are at ng and ng+1.
	ng int
	// startWidth is the length of a window start's key encoding, the
	// last value of a window's key.
	startWidth int
	// open maps the store key of each window not yet closed (EMIT
	// FINAL) to its end; openMin is the least of them, MaxInt64 when
	// there are none.
	open    map[string]int64
	openMin int64
	// latest maps a group (its encoded key without WINDOWSTART) to the
	// latest start of a window of it the store may hold: none later is
	// there, so a record opening a later window, as records in time
	// order do, need not look for it in the store. latestAll is set
	// while latest holds every group of the store (from a run that
	// starts with an empty store, until latest grows past
	// windowLatestMax and is dropped): a group it lacks has no windows.
	latest    map[string]int64
	latestAll bool
}

// windowLatestMax bounds windower.latest.
const windowLatestMax = 1 << 17

// expiryIn is the checkpoint entry (partition 0) that holds the stream
// time of a windowed view's next expiry pass.
const expiryIn = "\x00expiry"

// noTime is the stream time of a task that has read no record yet.
const noTime = math.MinInt64

func newWindower(w *catalog.Window, ncols, at, ng int) *windower {
	ww := &windower{w: w, ncols: ncols, at: at, ng: ng, openMin: math.MaxInt64}
	b, _ := materialize.AppendKeyValue(nil, ww.bound(0))
	ww.startWidth = len(b)
	return ww
}

// bound is a window bound at ms milliseconds as the view's columns
// hold it: BIGINT milliseconds, or a TIMESTAMP or TIMESTAMPTZ (TUMBLE
// and HOP over such a time column).
func (w *windower) bound(ms int64) any {
	switch w.w.Bound {
	case catalog.Timestamp, catalog.TimestampTZ:
		return time.UnixMilli(ms).UTC()
	}
	return ms
}

// boundMillis reads a window bound as milliseconds.
func boundMillis(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case time.Time:
		return x.UnixMilli(), true
	}
	return 0, false
}

// splitKey splits a tumbling or hopping window's encoded store key into
// its group's and its start; ok is false for another key.
func (w *windower) splitKey(k []byte) (group []byte, start int64, ok bool) {
	n := len(k) - w.startWidth
	if n < 0 {
		return nil, 0, false
	}
	if w.w.Bucket {
		// A NULL bucket's key ends in no start, and its tail may still
		// read as one: read the key whole.
		vals, err := materialize.DecodeKey(k)
		if err != nil || len(vals) == 0 || vals[len(vals)-1] == nil {
			return nil, 0, false
		}
	}
	v, rest, err := materialize.DecodeKeyValue(k[n:])
	start, ok = boundMillis(v)
	if err != nil || len(rest) != 0 || !ok {
		return nil, 0, false
	}
	return k[:n], start, true
}

// absent reports whether store cannot hold the tumbling or hopping
// window of encoded key k (windower.latest). A group latest does not
// hold yet is looked for once, its latest window read from the store.
func (w *windower) absent(store *materialize.Store, k []byte) (bool, error) {
	if w.w.Kind == catalog.WindowSession {
		return false, nil
	}
	group, start, ok := w.splitKey(k)
	if !ok {
		return false, nil
	}
	if l, ok := w.latest[string(group)]; ok {
		return start > l, nil
	}
	if w.latestAll {
		return true, nil
	}
	it, err := store.NewIter(group, materialize.PrefixEnd(group))
	if err != nil {
		return false, err
	}
	l := int64(math.MinInt64) // no window yet
	if it.Last() {
		if _, s, ok := w.splitKey(it.Key()); ok {
			l = s
		}
	}
	if err := it.Error(); err != nil {
		it.Close()
		return false, err
	}
	if err := it.Close(); err != nil {
		return false, err
	}
	w.setLatest(group, l)
	return start > l, nil
}

// noteLatest records that the store holds window k (windower.latest),
// of a group latest holds or, with latestAll, had no windows.
func (w *windower) noteLatest(k []byte) {
	if w.w.Kind == catalog.WindowSession {
		return
	}
	group, start, ok := w.splitKey(k)
	if !ok {
		return
	}
	l, known := w.latest[string(group)]
	switch {
	case known && start > l, !known && w.latestAll:
		w.setLatest(group, start)
	}
}

// setLatest sets the latest window start of group, dropping every other
// group's when latest is full.
func (w *windower) setLatest(group []byte, start int64) {
	if _, ok := w.latest[string(group)]; !ok && len(w.latest) >= windowLatestMax {
		clear(w.latest)
		w.latestAll = false
	}
	w.latest[string(group)] = start
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
	size, step, off := w.w.Size, w.w.Step(), w.w.Offset
	// The first window to hold ts starts at the least multiple of step
	// (counted from the offset) above ts - size.
	for s := floorDiv(ts-off-size, step)*step + step + off; s <= ts; s += step {
		dst = append(dst, s)
	}
	return dst
}

// closed reports whether the window ending at end has closed at stream
// time st: no record can change it any more. A tumbling or hopping
// window closes when stream time reaches its end plus the grace period;
// a session, whose end is its last record's time, once stream time has
// passed that by more than the gap and the grace period (a record
// within the gap after it would extend it, if not late).
func (w *windower) closed(end, st int64) bool {
	if st == noTime {
		return false
	}
	if w.w.Kind == catalog.WindowSession {
		return end+w.w.Size < st-w.w.Grace
	}
	return end <= st-w.w.Grace
}

// expired reports whether the window from start to end is past its
// retention at stream time st: a tumbling or hopping window once stream
// time has passed its start by the retention, a session once stream
// time is more than the retention past its end.
func (w *windower) expired(start, end, st int64) bool {
	if w.w.Kind == catalog.WindowSession {
		return end+w.w.Retention < st
	}
	return start+w.w.Retention <= st
}

// windowEnd is the end of the stored window with key key and stored
// value val (ncols columns).
func (w *windower) storedEnd(key []any, val []byte, ncols int) (start, end int64, ok bool, err error) {
	start, ok = boundMillis(key[len(key)-1])
	if !ok {
		return 0, 0, false, nil
	}
	if w.w.Kind != catalog.WindowSession {
		return start, start + w.w.Size, true, nil
	}
	_, row, _, err := DecodeStored(val, ncols)
	if err != nil {
		return 0, 0, false, err
	}
	end, ok = row[w.w.End].(int64)
	return start, end, ok, nil
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
	n, at := w.ncols, w.at
	if cap(row) < at+2 {
		row = append(row[:at], nil, nil)
	}
	row = row[:at+2]
	ts, ok := row[n].(int64)
	if !ok && w.w.Bucket && row[n] == nil {
		// A date bucket of NULL, as the grouping has it: the GROUP BY
		// expression gives the start, and no window is late.
		row[at], row[at+1] = nil, nil
		return t.applyGroups(store, b, row)
	}
	if !ok {
		return pgerr.New(pgerr.NullValueNotAllowedDataException,
			"the record has no time (its timestamp column is NULL), so it falls in no window of view %s", t.plan.View.Name)
	}
	b.streamTime = max(b.streamTime, ts)
	if w.w.Kind == catalog.WindowSession {
		return t.applySession(store, b, row, ts)
	}
	t.starts = w.starts(t.starts[:0], ts)
	applied := false
	for _, s := range t.starts {
		end := s + w.w.Size
		if w.closed(end, b.streamTime) {
			continue
		}
		row[at], row[at+1] = w.bound(s), w.bound(end)
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
	end, _ := boundMillis(e.groups[w.ng+1])
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
			t.windowGroups(e, key, end)
		}
		w.openMin = next // windows the batch adds come back through applyCommitted
	}
	if b.streamTime == noTime || b.expireAt != noTime && b.streamTime < b.expireAt {
		return nil
	}
	b.expireAt = b.streamTime + max(w.w.Retention/16, 1)
	it, err := store.NewIter(nil, nil)
	if err != nil {
		return err
	}
	var old [][]any
	ncols := len(t.plan.View.Schema.Columns)
	for ok := it.First(); ok; ok = it.Next() {
		key, err := materialize.DecodeKey(it.Key())
		if err != nil {
			it.Close()
			return fmt.Errorf("view %s: a window's key: %w", t.plan.View.Name, err)
		}
		start, end, ok, err := w.storedEnd(key, it.Value(), ncols)
		if err != nil {
			it.Close()
			return fmt.Errorf("view %s: a stored window: %w", t.plan.View.Name, err)
		}
		if ok && w.expired(start, end, b.streamTime) {
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
		e.deleted, e.row, e.expired = true, nil, true
	}
	// And the batch's own: a later record may have moved stream time
	// past them.
	for _, e := range b.order {
		if len(e.groups) == 0 {
			continue // found in the store: deleted above if old
		}
		start, _ := boundMillis(e.groups[w.ng])
		if w.expired(start, w.windowEnd(e), b.streamTime) {
			e.deleted, e.row, e.expired = true, nil, true
		}
	}
	return nil
}

// windowGroups sets the group values of window e, not changed by a
// record, from its key: each GROUP BY expression is a key column (the
// planner has every one selected), then WINDOWSTART, whose window's
// end is WINDOWEND.
func (t *viewTask) windowGroups(e *pending, key []any, end int64) {
	if e.groups != nil {
		return
	}
	groups := make([]any, len(t.plan.GroupBy))
	for i, g := range t.plan.KeyGroup {
		groups[g] = key[i]
	}
	groups[t.win.ng+1] = t.win.bound(end)
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
	for i, e := range b.order {
		if vals[i] != nil {
			w.noteLatest(e.key)
		}
	}
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
	w.latest, w.latestAll = map[string]int64{}, cp.ChangelogOffset == 0
	if !w.w.Final {
		return nil
	}
	st, _ := checkpointTimes(cp)
	it, err := store.NewIter(nil, nil)
	if err != nil {
		return err
	}
	defer it.Close()
	ncols := len(t.plan.View.Schema.Columns)
	for ok := it.First(); ok; ok = it.Next() {
		key, err := materialize.DecodeKey(it.Key())
		if err != nil {
			return fmt.Errorf("view %s: a window's key: %w", t.plan.View.Name, err)
		}
		_, end, ok, err := w.storedEnd(key, it.Value(), ncols)
		if err != nil {
			return fmt.Errorf("view %s: a stored window: %w", t.plan.View.Name, err)
		}
		if ok && !w.closed(end, st) {
			w.open[string(it.Key())] = end
			w.openMin = min(w.openMin, end)
		}
	}
	return it.Error()
}

// applySession aggregates row, a record's input row at time ts, into
// its session (WINDOW SESSION): the sessions of its group that end at
// most the gap before ts and start at most the gap after it merge,
// with the record, into one from the earliest start to the latest end
// (a session's end is its last record's time), which replaces them:
// each other one is deleted, a tombstone in the changelog. A record
// whose merged session would end more than the grace period behind
// stream time is late, and changes nothing.
func (t *viewTask) applySession(store *materialize.Store, b *viewBatch, row catalog.Row, ts int64) error {
	w := t.win
	gap := w.w.Size
	groups := t.groups
	for i := range w.ng {
		v, err := t.group[i](row, t.env)
		if err != nil {
			return err
		}
		groups[i] = v
	}
	// The group's key: the view key but WINDOWSTART.
	keyGroup := t.plan.PartitionKeyGroup()
	pk := make([]any, len(keyGroup))
	for i, g := range keyGroup {
		pk[i] = groups[g]
	}
	prefix, err := materialize.EncodeKey(nil, pk)
	if err != nil {
		return err
	}
	type session struct {
		key        []any
		start, end int64
	}
	var found []session
	stored := 0 // found[:stored] are from the store
	// In the store, from the latest session starting within the gap
	// after ts back while they end within the gap before it: a group's
	// sessions do not overlap, so ends fall as starts do. A session the
	// batch has changed is the batch's.
	hi, err := materialize.AppendKeyValue(slices.Clone(prefix), ts+gap)
	if err != nil {
		return err
	}
	it, err := store.NewIter(prefix, materialize.PrefixEnd(hi))
	if err != nil {
		return err
	}
	ncols := len(t.plan.View.Schema.Columns)
	for ok := it.Last(); ok; ok = it.Prev() {
		if _, mine := b.changes[string(it.Key())]; mine {
			continue
		}
		key, err := materialize.DecodeKey(it.Key())
		if err != nil {
			it.Close()
			return fmt.Errorf("view %s: a session's key: %w", t.plan.View.Name, err)
		}
		start, end, ok, err := w.storedEnd(key, it.Value(), ncols)
		if err != nil {
			it.Close()
			return fmt.Errorf("view %s: a stored session: %w", t.plan.View.Name, err)
		}
		if !ok {
			continue
		}
		if end < ts-gap {
			break
		}
		found = append(found, session{key, start, end})
	}
	if err := it.Error(); err != nil {
		it.Close()
		return err
	}
	if err := it.Close(); err != nil {
		return err
	}
	stored = len(found)
	for _, e := range b.sessions[string(prefix)] {
		if e.deleted || len(e.groups) == 0 {
			continue
		}
		start, _ := e.groups[w.ng].(int64)
		end, _ := e.groups[w.ng+1].(int64)
		if start <= ts+gap && end >= ts-gap {
			key, err := materialize.DecodeKey(e.key)
			if err != nil {
				return err
			}
			found = append(found, session{key, start, end})
		}
	}
	start, end := ts, ts
	for _, f := range found {
		start, end = min(start, f.start), max(end, f.end)
	}
	if end < b.streamTime-w.w.Grace {
		return pgerr.New(pgerr.DataException,
			"the record is late for view %s: its session would end at %s, more than the grace period (%d ms) behind stream time %s",
			t.plan.View.Name, formatMillis(end), w.w.Grace, formatMillis(b.streamTime))
	}
	// Nothing changes until the merged session is known to be good: a
	// failure forgets what the lookups added to the batch.
	n := len(b.order)
	fail := func(err error) error {
		for _, e := range b.order[n:] {
			delete(b.changes, e.skey)
		}
		b.order = b.order[:n]
		return err
	}
	// The sessions merge in time order, then the record is added, as
	// Kafka Streams merges sessions: the lists of collect_list and
	// array_agg hold the earlier session's values first. found is
	// ordered latest first from the store, then the batch's in no
	// order.
	order := make([]int, len(found))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(x, y int) int { return cmp.Compare(found[x].start, found[y].start) })
	merged := t.agg.Init()
	olds := make([]*pending, len(found))
	for _, i := range order {
		e, err := t.lookup(store, b, found[i].key)
		if err != nil {
			return fail(err)
		}
		if err := t.agg.Merge(merged, e.state); err != nil {
			return fail(err)
		}
		olds[i] = e
	}
	for i, o := range olds {
		// Its bounds, and those it was published under.
		t.windowGroups(o, found[i].key, found[i].end)
		if i < stored && !o.pubEndSet {
			o.pubEnd, o.pubEndSet = found[i].end, true
		}
	}
	if err := t.agg.Add(merged, row, t.env); err != nil {
		return fail(err)
	}
	groups[w.ng], groups[w.ng+1] = start, end
	if t.rowCanFail {
		if _, _, err := t.viewRow(&pending{groups: groups, state: merged}); err != nil {
			return fail(err)
		}
	}
	e, err := t.lookup(store, b, t.keyOf(row, groups))
	if err != nil {
		return fail(err)
	}
	for _, o := range olds {
		if o != e {
			o.deleted, o.row = true, nil
		}
	}
	e.state, e.deleted = merged, false
	t.setGroups(e, groups)
	if !slices.Contains(b.sessions[string(prefix)], e) {
		if b.sessions == nil {
			b.sessions = map[string][]*pending{}
		}
		b.sessions[string(prefix)] = append(b.sessions[string(prefix)], e)
	}
	return nil
}

// windowedKey appends to key, the record key of window e's group in the
// view's key_format, the window as ksqlDB (Kafka Streams' windowed
// serdes) writes it: the start, 8 bytes big-endian milliseconds, or for
// a session its end then its start.
func (t *viewTask) windowedKey(key []byte, e *pending) ([]byte, error) {
	w := t.win
	var start, end int64
	ok := len(e.groups) > w.ng+1
	if ok {
		var ok1, ok2 bool
		start, ok1 = boundMillis(e.groups[w.ng])
		end, ok2 = boundMillis(e.groups[w.ng+1])
		ok = ok1 && ok2
	}
	if !ok {
		return nil, fmt.Errorf("view %s: a window without its bounds", t.plan.View.Name)
	}
	if w.w.Kind == catalog.WindowSession {
		key = binary.BigEndian.AppendUint64(key, uint64(end))
	}
	return binary.BigEndian.AppendUint64(key, uint64(start)), nil
}

// sessionTombstone is the tombstone of the key session e was published
// under when the batch began, if it had one and that key no longer
// holds it (its end changed, or it merged into another); nil otherwise.
func (t *viewTask) sessionTombstone(e *pending) (*kgo.Record, error) {
	if t.win.w.Final {
		return nil, nil // a session shows once closed, when nothing changes it
	}
	if !e.pubEndSet || !e.deleted && len(e.groups) > t.win.ng+1 && t.win.windowEnd(e) == e.pubEnd {
		return nil, nil
	}
	keyVals, err := materialize.DecodeKey(e.key)
	if err != nil {
		return nil, err
	}
	start, _ := boundMillis(keyVals[len(keyVals)-1])
	key, err := t.pubCodec.EncodeKey(keyVals[:len(keyVals)-1])
	if err != nil {
		return nil, err
	}
	key = binary.BigEndian.AppendUint64(key, uint64(e.pubEnd))
	key = binary.BigEndian.AppendUint64(key, uint64(start))
	return &kgo.Record{Topic: t.pub, Partition: t.state.Partition, Key: key}, nil
}
