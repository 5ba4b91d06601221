package stream

// The stream–stream join task: one per join partition matches the
// records of two streams whose join keys are equal and whose times are
// within the join's window (see streamJoinTask).

import (
	"bytes"
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/eval"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/kafka"
	"github.com/basindb/basin/materialize"
	"github.com/basindb/basin/planner"
	"github.com/basindb/basin/serde"
)

// streamJoinTask writes a derived stream that joins two streams within
// a window of record time (planner.StreamJoin with Within), for one
// partition of the join. It reads each stream's records of the
// partition's keys (the stream's own partition when it is keyed by its
// join key in the join's partitions, else the join's repartition topic,
// where routing stages send them) and keeps every record in a store,
// with an index by time, for as long as a record that is not late can
// still match it. A record of one side joins each stored record of the
// other side with its key and a time in its window, and is then stored
// itself, so each matching pair is emitted once, when its second record
// arrives, at the later of the two times (as ksqlDB does).
//
// Stream time is the latest record time the task has seen. A record is
// late, dropped into the processing log, when some record it could
// match may already be gone: its time plus its side's reach forward
// (After for the left, Before for the right) plus the grace period is
// before stream time. A stored record goes once stream time passes its
// time plus Before, After and grace (JoinWindow.Retention): no record
// that is not late can match it then. In an outer join, a record of an
// outer side that matched nothing is emitted with the other side's
// columns NULL at that moment, not before, so no NULL row is ever
// followed by a match (what SQL's join of all the records gives).
//
// The store is a copy of the stream's changelog: per batch, one
// transaction holds the derived records, the skipped ones, every store
// write (records kept, matched, expired) and a marker with the input
// offsets and stream time. A restart restores the store from the
// changelog and reads on from the marker; a standby follows the
// changelog, as a view's does.
type streamJoinTask struct {
	rt        *Runtime
	plan      *planner.StreamPlan
	join      *planner.StreamJoin
	state     *TaskState
	sides     [2]*streamSide
	filter    eval.Expr
	output    []eval.Expr
	out       *serde.Codec
	part      kafka.Partitioner
	env       *eval.Env
	repart    string // the join's repartition topic
	changelog string
	maxRecord int
	row       catalog.Row // the joined row: the left's record input, then the right's
	derived   catalog.Row
}

// streamSide is one stream of a stream–stream join.
type streamSide struct {
	rel   *catalog.Relation
	codec *serde.Codec
	key   eval.Expr // over the side's record input
	input string    // the topic its records are read from
	width int       // of its record input (columns, then ROWTIME)
	// back and ahead bound the other side's times a record of time t
	// joins: [t-back, t+ahead].
	back, ahead int64
	outer       bool // its unmatched records are emitted with NULLs
}

// Store keys of a stream–stream join: a record is
// 'w' side key(join key) key(time, offset) → matched flag, row; and its
// entry in the index by time is 't' key(time) and the record's key.
const (
	prefixWindow = 'w'
	prefixTime   = 't'
)

// streamTimeIn is the checkpoint entry (partition 0) that holds a join
// task's stream time, carried in its markers.
const streamTimeIn = "\x00streamtime"

func newStreamJoinTask(rt *Runtime, plan *planner.StreamPlan, ts *TaskState) *streamJoinTask {
	j := plan.Join
	w := j.Within
	t := &streamJoinTask{rt: rt, plan: plan, join: j, state: ts, out: serde.NewCodec(plan.Stream, rt.opts.Registry), part: plan.Stream.PartitionerOf(),
		env: &eval.Env{}, repart: plan.Stream.RepartitionTopic(rt.opts.Cluster), changelog: plan.Stream.ChangelogTopic(rt.opts.Cluster)}
	for i, rel := range []*catalog.Relation{plan.Source, j.Table} {
		s := &streamSide{rel: rel, codec: serde.NewCodec(rel, rt.opts.Registry), input: rel.Topic, width: len(planner.RecordInput(rel))}
		if i == 0 {
			s.key, s.back, s.ahead, s.outer = eval.Compile(j.Key), w.Before, w.After, j.Left
			if j.Route {
				s.input = t.repart
			}
		} else {
			s.key, s.back, s.ahead, s.outer = eval.Compile(j.RightKey), w.After, w.Before, j.Full
			if j.RouteRight {
				s.input = t.repart
			}
		}
		t.sides[i] = s
	}
	if plan.Filter != nil {
		t.filter = eval.Compile(plan.Filter)
	}
	for _, o := range plan.Output {
		t.output = append(t.output, eval.Compile(o))
	}
	t.row = make(catalog.Row, t.sides[0].width+t.sides[1].width)
	t.derived = make(catalog.Row, len(plan.Output))
	return t
}

// sideTags tag, in a task's checkpoint, what the writers of each
// side's marked input said (noteMarked).
var sideTags = [2]string{markedStream, markedRight}

// inputs are the topics the task reads (partition: its own).
func (t *streamJoinTask) inputs() []string {
	if t.sides[0].input == t.sides[1].input {
		return []string{t.sides[0].input}
	}
	return []string{t.sides[0].input, t.sides[1].input}
}

// sideOf returns the index of the side record r is of.
func (t *streamJoinTask) sideOf(r *kgo.Record) int {
	if r.Topic == t.repart {
		if _, ok := hasHeader(r, headerRight); ok {
			return 1
		}
		return 0
	}
	if r.Topic == t.sides[1].input {
		return 1
	}
	return 0
}

// streamJoinBatch is one transaction of a stream–stream join task.
type streamJoinBatch struct {
	cp    materialize.Checkpoint
	rows  map[string][]byte // store key → value (nil: deleted), written in this batch
	order []string
	// added are the window keys the batch added, per side and join key
	// prefix, which a scan of the store does not see yet.
	added      map[string][]string
	streamTime int64
	out, bad   []*kgo.Record
}

func (b *streamJoinBatch) set(key string, v []byte) {
	if _, ok := b.rows[key]; !ok {
		b.order = append(b.order, key)
	}
	b.rows[key] = v
}

func (t *streamJoinTask) run(ctx context.Context) error {
	rt, rel, p := t.rt, t.plan.Stream, t.state.Partition
	store := rt.opts.DB.Store(materialize.StoreID{View: rel.StoreName(), Partition: p})
	prod, err := rt.taskProducer(ctx, rel, p, t.maxRecord)
	if err != nil {
		return err
	}
	defer prod.Close()
	cp, err := rt.restore(ctx, store, t.changelog, p)
	if err != nil {
		return err
	}
	cons, guard, err := rt.resumeInputs(ctx, rel, fmt.Sprintf("%s-join-%d", rel.Name, p), t.inputs(), p, cp)
	if err != nil {
		return err
	}
	defer cons.Close()
	// The task's lag is that of all its inputs together: their ends
	// as last fetched, less the offsets read.
	ins := t.inputs()
	ends := make([]atomic.Int64, len(ins))
	for i, topic := range ins {
		if e, err := kafka.EndOffsets(ctx, rt.adm, topic); err == nil {
			ends[i].Store(e[p])
		}
	}
	lag := func(cp materialize.Checkpoint) {
		var end, next int64
		for i, topic := range ins {
			end += ends[i].Load()
			next += cp.Input[topic][p]
		}
		t.state.inputEnd.Store(end)
		t.state.inputNext.Store(next)
	}
	if cp.Position == nil {
		cp.Position = materialize.Position{}
	}
	lag(cp)
	t.state.applied(cp.UpdatedAt)
	t.state.publishPosition(cp.Position.Clone())
	t.state.markRestored()
	for {
		fetches, ok, err := rt.pollEnds(ctx, cons, func(topic string) *atomic.Int64 {
			if topic == ins[0] {
				return &ends[0]
			}
			return &ends[len(ends)-1]
		})
		if !ok {
			return err
		}
		t.state.tookIn(fetches)
		if err := warmSchemas(fetches, func(r *kgo.Record) *serde.Codec { return t.sides[t.sideOf(r)].codec }, t.sides[0].codec, t.sides[1].codec); err != nil {
			return err
		}
		lag(cp)
		if fetches.NumRecords() == 0 {
			continue
		}
		if topic, q, next, back := guard.check(fetches); back {
			return rt.wentBack(ctx, rel, topic, q, next)
		}
		b := &streamJoinBatch{cp: cp.Clone(), rows: map[string][]byte{}, added: map[string][]string{}}
		if b.cp.Position == nil {
			b.cp.Position = materialize.Position{}
		}
		b.streamTime = b.cp.Input[streamTimeIn][0]
		var recs []*kgo.Record
		fetches.EachRecord(func(r *kgo.Record) { recs = append(recs, r) })
		for _, r := range mergeRecordsByTime(recs) {
			if err := t.process(store, b, r); err != nil {
				return err
			}
		}
		if err := t.expire(store, b); err != nil {
			return err
		}
		if err := t.commit(ctx, prod, store, b); err != nil {
			return err
		}
		cp = b.cp
		t.state.publishPosition(cp.Position.Clone())
		lag(cp)
		t.state.applied(cp.UpdatedAt)
		t.state.errors.Add(int64(len(b.bad)))
	}
}

// mergeRecordsByTime orders recs by record time across the partitions
// they come from, each partition's in the order fetched.
func mergeRecordsByTime(recs []*kgo.Record) []*kgo.Record {
	lists := map[string][]*kgo.Record{}
	var names []string
	for _, r := range recs {
		if _, ok := lists[r.Topic]; !ok {
			names = append(names, r.Topic)
		}
		lists[r.Topic] = append(lists[r.Topic], r)
	}
	if len(names) < 2 {
		return recs
	}
	out := make([]*kgo.Record, 0, len(recs))
	for {
		best := ""
		for _, n := range names {
			l := lists[n]
			if len(l) > 0 && (best == "" || l[0].Timestamp.Before(lists[best][0].Timestamp)) {
				best = n
			}
		}
		if best == "" {
			return out
		}
		out = append(out, lists[best][0])
		lists[best] = lists[best][1:]
	}
}

// process applies one input record.
func (t *streamJoinTask) process(store *materialize.Store, b *streamJoinBatch, r *kgo.Record) error {
	p := t.state.Partition
	setOffset(&b.cp.Input, r.Topic, p, r.Offset+1)
	if r.Attrs.IsControl() {
		return nil
	}
	si := t.sideOf(r)
	if t.join.Marks[si] != nil {
		if w, pos, ok, err := stageMarker(r); ok {
			// A marked input: what the writer sent here reflects pos.
			if err == nil {
				noteMarked(&b.cp, sideTags[si], w, pos)
			}
			return err
		}
	}
	b.cp.UpdatedAt = r.Timestamp
	s := t.sides[si]
	rel := t.plan.Stream
	row := make(catalog.Row, s.width)
	tombstone, err := s.codec.DecodeRecordInto(row[:s.width-1], r)
	if err != nil {
		b.bad = append(b.bad, t.rt.badRecord(rel, r, err))
		return nil
	}
	if tombstone {
		return nil
	}
	if row[s.width-1], err = s.codec.Rowtime(row, r.Timestamp); err != nil {
		b.bad = append(b.bad, t.rt.badRecord(rel, r, err))
		return nil
	}
	ts, ok := row[s.width-1].(int64)
	if !ok {
		b.bad = append(b.bad, t.rt.badRecord(rel, r, pgerr.New(pgerr.NullValueNotAllowedDataException,
			"the record has no time (its timestamp column is NULL), so it joins no record of %s", t.sides[1-si].rel.Name)))
		return nil
	}
	if ts+s.ahead+t.join.Within.Grace < b.streamTime {
		b.bad = append(b.bad, t.rt.badRecord(rel, r, pgerr.New(pgerr.DataException,
			"the record of %s is late: its time %s is more than the window and grace period (%d ms) behind the join's stream time %s",
			s.rel.Name, time.UnixMilli(ts).UTC().Format(time.RFC3339Nano), s.ahead+t.join.Within.Grace,
			time.UnixMilli(b.streamTime).UTC().Format(time.RFC3339Nano))))
		return nil
	}
	b.streamTime = max(b.streamTime, ts)
	k, err := s.key(row, t.env)
	if err != nil {
		b.bad = append(b.bad, t.rt.badRecord(rel, r, err))
		return nil
	}
	if k == nil {
		// A NULL join key equals nothing: an outer side's record is
		// emitted with NULLs at once, any other's is logged.
		if s.outer {
			return t.emit(b, r, si, row, nil)
		}
		b.bad = append(b.bad, t.rt.badRecord(rel, r, pgerr.New(pgerr.NullValueNotAllowedDataException,
			"the join key %s is NULL, so the record joins no record of %s", t.keyExpr(si), t.sides[1-si].rel.Name)))
		return nil
	}
	enc, err := materialize.EncodeKey(nil, []any{k})
	if err != nil {
		return err
	}
	// Join the other side's records of the key within the window.
	other := 1 - si
	matched := false
	err = t.scan(store, b, other, enc, ts-s.back, ts+s.ahead, func(key string, v []byte) error {
		orow, err := materialize.DecodeRow(v[1:])
		if err != nil {
			return fmt.Errorf("join %s/%d: stored record: %w", rel.Name, p, err)
		}
		matched = true
		if t.sides[other].outer && v[0] == 0 {
			b.set(key, append([]byte{1}, v[1:]...))
		}
		return t.emit(b, r, si, row, orow)
	})
	if err != nil {
		return err
	}
	// Keep the record for the other side's records to come.
	v, err := materialize.EncodeRow(row)
	if err != nil {
		return err
	}
	flag := byte(0)
	if matched || !s.outer {
		flag = 1
	}
	wkey, err := windowKey(si, enc, ts, r.Offset)
	if err != nil {
		return err
	}
	b.set(string(wkey), append([]byte{flag}, v...))
	tkey, err := timeKey(ts, wkey)
	if err != nil {
		return err
	}
	b.set(string(tkey), []byte{1})
	prefix := string(wkey[:2+len(enc)])
	b.added[prefix] = append(b.added[prefix], string(wkey))
	return nil
}

// keyExpr is side si's join key, for messages.
func (t *streamJoinTask) keyExpr(si int) planner.Scalar {
	if si == 0 {
		return t.join.Key
	}
	return t.join.RightKey
}

// windowKey is the store key of a record of side si with join key enc
// at time ts and input offset off.
func windowKey(si int, enc []byte, ts, off int64) ([]byte, error) {
	k := append([]byte{prefixWindow, byte(si)}, enc...)
	return materialize.EncodeKey(k, []any{ts, off})
}

// timeKey is the entry of window key wkey, of time ts, in the index by
// time.
func timeKey(ts int64, wkey []byte) ([]byte, error) {
	k, err := materialize.EncodeKey([]byte{prefixTime}, []any{ts})
	return append(k, wkey...), err
}

// scan calls fn with each record of side si, join key enc and time in
// [lo, hi] as of b (the store's, with b's writes over them).
func (t *streamJoinTask) scan(store *materialize.Store, b *streamJoinBatch, si int, enc []byte, lo, hi int64,
	fn func(key string, v []byte) error) error {
	prefix := append([]byte{prefixWindow, byte(si)}, enc...)
	from, err := materialize.EncodeKey(bytes.Clone(prefix), []any{lo})
	if err != nil {
		return err
	}
	to, err := materialize.EncodeKey(bytes.Clone(prefix), []any{hi})
	if err != nil {
		return err
	}
	to = materialize.PrefixEnd(to)
	it, err := store.NewIter(from, to)
	if err != nil {
		return err
	}
	type kv struct {
		k string
		v []byte
	}
	var found []kv
	for ok := it.First(); ok; ok = it.Next() {
		k := string(it.Key())
		if v, ok := b.rows[k]; ok {
			if v != nil {
				found = append(found, kv{k, v})
			}
			continue
		}
		found = append(found, kv{k, bytes.Clone(it.Value())})
	}
	if err := it.Error(); err != nil {
		it.Close()
		return err
	}
	if err := it.Close(); err != nil {
		return err
	}
	for _, k := range b.added[string(prefix)] {
		if k >= string(from) && k < string(to) {
			if v := b.rows[k]; v != nil {
				found = append(found, kv{k, v})
			}
		}
	}
	for _, e := range found {
		if err := fn(e.k, e.v); err != nil {
			return err
		}
	}
	return nil
}

// emit derives the joined record of side si's record r (row) and the
// other side's record orow (nil: NULLs), at the later of their times.
func (t *streamJoinTask) emit(b *streamJoinBatch, r *kgo.Record, si int, row, orow catalog.Row) error {
	rel := t.plan.Stream
	l, rr := row, orow
	if si == 1 {
		l, rr = orow, row
	}
	joined := t.row
	clear(joined)
	nl := t.sides[0].width
	copy(joined[:nl], l)
	copy(joined[nl:], rr)
	at := int64(-1 << 63)
	for _, side := range []catalog.Row{l, rr} {
		if side != nil {
			if ms, ok := side[len(side)-1].(int64); ok && ms > at {
				at = ms
			}
		}
	}
	if t.filter != nil {
		keep, err := t.filter(joined, t.env)
		if err != nil {
			b.bad = append(b.bad, t.rt.badRecord(rel, r, err))
			return nil
		}
		if !eval.Truthy(keep) {
			return nil
		}
	}
	var err error
	for i, o := range t.output {
		if t.derived[i], err = o(joined, t.env); err != nil {
			b.bad = append(b.bad, t.rt.badRecord(rel, r, err))
			return nil
		}
	}
	key, value, err := t.out.Encode(t.derived)
	if err != nil {
		b.bad = append(b.bad, t.rt.badRecord(rel, r, err))
		return nil
	}
	p := t.state.Partition
	rec := &kgo.Record{Topic: rel.Topic, Partition: p % rel.Partitions, Key: key, Value: value, Timestamp: time.UnixMilli(at)}
	if key != nil {
		rec.Partition = t.part.Partition(key, rel.Partitions)
	}
	if err := tooLarge(t.maxRecord, rec, rec.Topic); err != nil {
		b.bad = append(b.bad, t.rt.badRecord(rel, r, err))
		return nil
	}
	b.out = append(b.out, rec)
	return nil
}

// expire removes the records stream time has passed by more than the
// join's retention, emitting each unmatched one of an outer side with
// NULLs for the other.
func (t *streamJoinTask) expire(store *materialize.Store, b *streamJoinBatch) error {
	bound := b.streamTime - t.join.Within.Retention() // records before it go
	hi, err := materialize.EncodeKey([]byte{prefixTime}, []any{bound})
	if err != nil {
		return err
	}
	it, err := store.NewIter([]byte{prefixTime}, hi)
	if err != nil {
		return err
	}
	var keys []string
	seen := map[string]bool{}
	for ok := it.First(); ok; ok = it.Next() {
		keys = append(keys, string(it.Key()))
		seen[keys[len(keys)-1]] = true
	}
	if err := it.Error(); err != nil {
		it.Close()
		return err
	}
	if err := it.Close(); err != nil {
		return err
	}
	// The batch's own records of such times (late for nobody yet: a
	// batch can add records older than its own stream time).
	for _, k := range b.order {
		if k[0] == prefixTime && k < string(hi) && b.rows[k] != nil && !seen[k] {
			keys = append(keys, k)
		}
	}
	for _, tk := range keys {
		if v, ok := b.rows[tk]; ok && v == nil {
			continue // already gone
		}
		_, rest, err := materialize.DecodeKeyValue([]byte(tk[1:]))
		if err != nil {
			return fmt.Errorf("join %s/%d: time index: %w", t.plan.Stream.Name, t.state.Partition, err)
		}
		wkey := string(rest)
		v, ok := b.rows[wkey]
		if !ok {
			if v, _, err = store.Get([]byte(wkey)); err != nil {
				return err
			}
		}
		b.set(tk, nil)
		b.set(wkey, nil)
		if v == nil || v[0] != 0 {
			continue
		}
		si := int(wkey[1])
		if !t.sides[si].outer {
			continue
		}
		row, err := materialize.DecodeRow(v[1:])
		if err != nil {
			return fmt.Errorf("join %s/%d: stored record: %w", t.plan.Stream.Name, t.state.Partition, err)
		}
		src := &kgo.Record{Topic: t.sides[si].input, Partition: t.state.Partition, Timestamp: time.UnixMilli(0)}
		if err := t.emit(b, src, si, row, nil); err != nil {
			return err
		}
	}
	return nil
}

// commit writes b's derived and skipped records, its store writes and
// its marker in one transaction, then the writes and checkpoint to the
// store.
func (t *streamJoinTask) commit(ctx context.Context, prod *kgo.Client, store *materialize.Store, b *streamJoinBatch) error {
	p := t.state.Partition
	setOffset(&b.cp.Input, streamTimeIn, 0, b.streamTime)
	// The position is what each side's input reflects as far as read:
	// a source's partition, or what the markers of a marked input (a
	// stage's stream, the routing stages' topic) compose to.
	for i, s := range t.sides {
		if m := t.join.Marks[i]; m != nil {
			marked(b.cp.Position, b.cp, sideTags[i], m)
		} else if off, ok := b.cp.Input[s.input][p]; ok {
			b.cp.Position.Advance(s.input, p, off)
		}
	}
	recs := make([]*kgo.Record, 0, len(b.out)+len(b.order)+len(b.bad)+1)
	recs = append(recs, b.out...)
	if t.plan.Marked {
		recs = appendStageMarkers(recs, t.plan.Stream.Topic, t.plan.Stream.Partitions, p, false, b.cp.Position)
	}
	for _, k := range b.order {
		recs = append(recs, &kgo.Record{Topic: t.changelog, Partition: p, Key: []byte(k), Value: b.rows[k]})
	}
	recs = append(recs, b.bad...)
	return commitMarked(ctx, t.state, prod, store, t.changelog, p, t.plan.Stream.Topic, recs, &b.cp, b.order, b.rows)
}
