package stream

// The join task: one per table partition of a stream–table join joins
// each stream record with the table's row for its key (see joinTask).

import (
	"context"
	"errors"
	"fmt"
	"slices"
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

// joinTask writes a derived stream that joins a stream with a table
// (planner.StreamJoin), for one partition of the table. It reads the
// table's partition (and the table's forwarding partition: the rows of
// its keys that producers put elsewhere) into a store of its own, and
// the stream's records of the partition's keys (the stream's partition
// itself, or the routing stage's when the stream is keyed otherwise).
// Each batch is applied in record-time order, a table record before a
// stream record of the same time, so a stream record sees the table row
// that was current at its time as far as the inputs arrived together:
// Kafka Streams' and ksqlDB's stream–table semantics.
//
// A stream record joins the row the table has for its key: an inner
// join drops a record with none, a LEFT JOIN emits it with the table's
// columns NULL. Table records never emit anything. Per batch one
// transaction holds the derived records, skipped records for the
// processing log and a marker with every input offset, in the stream's
// changelog (markers only); the table rows then go to the store with
// their input offsets. After a crash, the stream side resumes from the
// last marker (nothing derived twice) and the table side from the
// store's own offsets (its rows applied again are the same rows).
type joinTask struct {
	rt     *Runtime
	plan   *planner.StreamPlan
	state  *TaskState
	codec  *serde.Codec // the stream's
	tcodec *serde.Codec // the table's
	out    *serde.Codec // the derived stream's
	part   kafka.Partitioner
	key    eval.Expr
	filter eval.Expr
	output []eval.Expr
	env    *eval.Env
	place  *placement // of the table's records
	// input is the topic of the stream's records (the stream's, or the
	// join's repartition topic); table the topic of the table's, and fwd
	// its forwarding topic. A view joined as the table is read from its
	// changelog (rows is set; no forwarding: fwd is "").
	input, table, fwd string
	rows              bool
	maxRecord         int
	row               catalog.Row // the joined row: the record's columns and ROWTIME, then the table's
	derived           catalog.Row
}

func newJoinTask(rt *Runtime, plan *planner.StreamPlan, ts *TaskState) *joinTask {
	j := plan.Join
	t := &joinTask{rt: rt, plan: plan, state: ts, codec: serde.NewCodec(plan.Source, rt.opts.Registry), tcodec: serde.NewCodec(j.Table, rt.opts.Registry),
		out: serde.NewCodec(plan.Stream, rt.opts.Registry), part: plan.Stream.PartitionerOf(), key: eval.Compile(j.Key), env: &eval.Env{},
		input: plan.Source.Topic, table: j.Table.Topic, fwd: j.Table.RepartitionTopic(rt.opts.Cluster)}
	t.place = newPlacement(j.Table, t.tcodec, ts.Partition)
	if j.Table.Kind == catalog.KindView {
		t.table, t.fwd, t.rows = j.Table.ChangelogTopic(rt.opts.Cluster), "", true
	}
	if j.Route {
		t.input = plan.Stream.RepartitionTopic(rt.opts.Cluster)
	}
	if plan.Filter != nil {
		t.filter = eval.Compile(plan.Filter)
	}
	for _, o := range plan.Output {
		t.output = append(t.output, eval.Compile(o))
	}
	t.row = make(catalog.Row, len(j.JoinedInput(plan.Source)))
	t.derived = make(catalog.Row, len(plan.Output))
	return t
}

func (t *joinTask) run(ctx context.Context) error {
	rt, plan, p := t.rt, t.plan, t.state.Partition
	rel := plan.Stream
	changelog := rel.ChangelogTopic(rt.opts.Cluster)
	store := rt.opts.DB.Store(materialize.StoreID{View: rel.StoreName(), Partition: p})
	prod, err := rt.taskProducer(ctx, rel, p, t.maxRecord)
	if err != nil {
		return err
	}
	defer prod.Close()
	stored, err := store.Checkpoint()
	if err != nil {
		return err
	}
	cp, err := rt.lastMarker(ctx, changelog, p, stored)
	if err != nil {
		return err
	}
	// The table side from the store's offsets, which its rows are at;
	// the stream side from the marker's, which the records derived so
	// far are committed with. A store behind the marker (lost, or a new
	// node's without a standby) is first brought to the marker's table
	// offsets before any stream record is joined: the records derived
	// after the marker then see the table as the task that wrote the
	// marker had it, whatever the times of the table's records.
	restoreTo := map[string]int64{}
	for _, topic := range t.tableInputs() {
		if m, ok := cp.Input[topic][p]; ok && m > stored.Input[topic][p] {
			restoreTo[topic] = m
		}
	}
	kept := t.tableInputs()
	if t.fwd != "" {
		kept = append(kept, forwardedFrom(t.fwd))
	}
	for _, topic := range kept {
		delete(cp.Input, topic)
		if offs, ok := stored.Input[topic]; ok {
			for q, off := range offs {
				setOffset(&cp.Input, topic, q, off)
			}
		}
	}
	cons, guard, err := rt.resumeInputs(ctx, rel, fmt.Sprintf("%s-join-%d", rel.Name, p), append([]string{t.input}, t.tableInputs()...), p, cp)
	if err != nil {
		return err
	}
	defer cons.Close()
	if ends, err := kafka.EndOffsets(ctx, rt.adm, t.input); err == nil {
		t.state.inputEnd.Store(ends[p])
	}
	t.state.inputNext.Store(cp.Input[t.input][p])
	t.state.applied(cp.UpdatedAt)
	t.state.markRestored()
	var tableEnd, fwdEnd atomic.Int64
	var recs []*kgo.Record // fetched, not yet processed, in merged order
	var waiting time.Time  // since when stream records wait for the table
	var b *joinBatch       // the open batch
	for {
		fetches, ok, err := rt.pollEnds(ctx, cons, func(topic string) *atomic.Int64 {
			switch topic {
			case t.input:
				return &t.state.inputEnd
			case t.fwd:
				return &fwdEnd
			}
			return &tableEnd
		})
		if !ok {
			return err
		}
		t.state.tookIn(fetches)
		if err := warmSchemas(fetches, func(r *kgo.Record) *serde.Codec {
			if r.Topic == t.input || r.Topic == t.fwd {
				return t.codec
			}
			return t.tcodec
		}, t.codec, t.tcodec); err != nil {
			return err
		}
		if topic, q, next, back := guard.check(fetches); back {
			return rt.wentBack(ctx, rel, topic, q, next)
		}
		fetches.EachRecord(func(r *kgo.Record) { recs = append(recs, r) })
		if len(recs) == 0 {
			continue
		}
		recs = t.mergeByTime(recs)
		if b == nil {
			b = &joinBatch{cp: cp.Clone(), rows: map[string][]byte{}}
		}
		// A stream record joins the table as of its time: while the
		// table has records the task has not fetched yet (they may be
		// older), the stream records wait for them, up to joinIdle
		// (Kafka Streams' max.task.idle.ms); the table's records before
		// the first waiting one are applied meanwhile.
		tableNext, fwdNext := b.cp.Input[t.table][p], b.cp.Input[t.fwd][p]
		for _, r := range recs {
			switch r.Topic {
			case t.table:
				tableNext = r.Offset + 1
			case t.fwd:
				fwdNext = r.Offset + 1
			}
		}
		if len(restoreTo) > 0 {
			// Restoring: the table's records under the marker go first,
			// wherever their times put them; stream records wait.
			rest := recs[:0:0]
			for _, r := range recs {
				if r.Topic != t.input && r.Offset < restoreTo[r.Topic] {
					if err := t.process(store, b, r); err != nil {
						return err
					}
					continue
				}
				rest = append(rest, r)
			}
			recs = rest
			for topic, to := range restoreTo {
				if b.cp.Input[topic][p] >= to {
					delete(restoreTo, topic)
				}
			}
			if len(restoreTo) > 0 {
				continue
			}
		}
		ready := len(recs)
		if tableNext < tableEnd.Load() || fwdNext < fwdEnd.Load() {
			if waiting.IsZero() {
				waiting = time.Now()
			}
			if time.Since(waiting) < joinIdle {
				ready = slices.IndexFunc(recs, func(r *kgo.Record) bool { return r.Topic == t.input })
				if ready < 0 {
					ready = len(recs)
				}
			}
		}
		for _, r := range recs[:ready] {
			if err := t.process(store, b, r); err != nil {
				return err
			}
		}
		recs = append(recs[:0], recs[ready:]...)
		if len(recs) > 0 {
			continue // stream records wait for the table
		}
		waiting = time.Time{}
		if err := t.commit(ctx, prod, store, changelog, b); err != nil {
			return err
		}
		cp = b.cp
		t.state.publishPosition(cp.Position.Clone())
		t.state.inputNext.Store(cp.Input[t.input][p])
		t.state.applied(cp.UpdatedAt)
		t.state.errors.Add(int64(len(b.bad)))
		b = nil
	}
}

// mergeByTime orders recs, each input's in the order fetched, by record
// time across the inputs: the next record is always the oldest head of
// an input, a table's before the stream's at equal times (Kafka Streams
// picks records across a task's partitions the same way).
func (t *joinTask) mergeByTime(recs []*kgo.Record) []*kgo.Record {
	var lists [3][]*kgo.Record // the table, its forwarding, the stream
	for _, r := range recs {
		switch r.Topic {
		case t.input:
			lists[2] = append(lists[2], r)
		case t.fwd:
			lists[1] = append(lists[1], r)
		default:
			lists[0] = append(lists[0], r)
		}
	}
	out := recs[:0:0]
	for {
		best := -1
		for i, l := range lists {
			if len(l) > 0 && (best < 0 || l[0].Timestamp.Before(lists[best][0].Timestamp)) {
				best = i
			}
		}
		if best < 0 {
			return out
		}
		out = append(out, lists[best][0])
		lists[best] = lists[best][1:]
	}
}

// standby keeps a standby replica of the join task: it reads the table
// partition (and its forwarding) into the store, as the active does,
// and writes nothing to Kafka. The active that takes over resumes the
// table from the store's offsets and the stream from the last marker.
func (t *joinTask) standby(ctx context.Context) error {
	rt, p := t.rt, t.state.Partition
	rel := t.plan.Stream
	store := rt.opts.DB.Store(materialize.StoreID{View: rel.StoreName(), Partition: p})
	cp, err := store.Checkpoint()
	if err != nil {
		return err
	}
	var ins []topicPart
	for _, topic := range t.tableInputs() {
		ins = append(ins, topicPart{topic, p})
	}
	return rt.followInputs(ctx, rel, fmt.Sprintf("%s-join-standby-%d", rel.Name, p), t.state, cp, ins,
		func(fetches kgo.Fetches, cp materialize.Checkpoint) (materialize.Checkpoint, error) {
			b := &joinBatch{cp: cp.Clone(), rows: map[string][]byte{}}
			var perr error
			fetches.EachRecord(func(r *kgo.Record) {
				if perr != nil {
					return
				}
				setOffset(&b.cp.Input, r.Topic, p, r.Offset+1)
				if !r.Attrs.IsControl() {
					perr = t.tableRecord(b, r)
				}
			})
			if perr != nil {
				return cp, perr
			}
			return b.cp, applyRows(store, b.order, b.rows, b.cp)
		})
}

// joinIdle bounds how long a join task holds stream records back while
// its table input has records it has not fetched.
const joinIdle = 2 * time.Second

// joinBatch is one transaction of a join task.
type joinBatch struct {
	cp       materialize.Checkpoint
	out, bad []*kgo.Record
	rows     map[string][]byte // table key → row (nil: none), changed in this batch
	order    []string
}

// process applies one input record.
func (t *joinTask) process(store *materialize.Store, b *joinBatch, r *kgo.Record) error {
	p := t.state.Partition
	setOffset(&b.cp.Input, r.Topic, p, r.Offset+1)
	if r.Attrs.IsControl() {
		return nil
	}
	if r.Topic != t.input {
		return t.tableRecord(b, r)
	}
	if t.plan.Join.Marks[0] != nil {
		if w, pos, ok, err := stageMarker(r); ok {
			// The stage before's stream or the routing stage's
			// topic: what its writer sent here reflects pos.
			if err == nil {
				noteMarked(&b.cp, markedStream, w, pos)
			}
			return err
		}
	}
	b.cp.UpdatedAt = r.Timestamp
	src := t.plan.Source
	ncols := len(src.Schema.Columns)
	row := t.row
	clear(row)
	tombstone, err := t.codec.DecodeRecordInto(row[:ncols], r)
	if err != nil {
		b.bad = append(b.bad, t.rt.badRecord(t.plan.Stream, r, err))
		return nil
	}
	if tombstone {
		return nil
	}
	if row[ncols], err = t.codec.Rowtime(row, r.Timestamp); err != nil {
		b.bad = append(b.bad, t.rt.badRecord(t.plan.Stream, r, err))
		return nil
	}
	k, err := t.key(row, t.env)
	if err != nil {
		b.bad = append(b.bad, t.rt.badRecord(t.plan.Stream, r, err))
		return nil
	}
	if k == nil && !t.plan.Join.Left {
		// An inner join's record without a join key joins nothing;
		// the processing log says so (a LEFT JOIN emits it with NULLs,
		// as SQL does).
		b.bad = append(b.bad, t.rt.badRecord(t.plan.Stream, r, pgerr.New(pgerr.NullValueNotAllowedDataException,
			"the join key %s is NULL, so the record joins no row of %s", t.plan.Join.Key, t.plan.Join.Table.Name)))
		return nil
	}
	var found []byte
	if k != nil {
		skey, err := materialize.EncodeKey(nil, []any{k})
		if err != nil {
			return err
		}
		v, ok := b.rows[string(skey)]
		if !ok {
			if v, _, err = store.Get(skey); err != nil {
				return err
			}
		}
		found = v
	}
	if found == nil && !t.plan.Join.Left {
		return nil // an inner join: no row, no record
	}
	if found != nil {
		trow, err := materialize.DecodeRow(found)
		if err != nil {
			return fmt.Errorf("join %s/%d: stored table row: %w", t.plan.Stream.Name, p, err)
		}
		copy(row[ncols+1:], trow)
	}
	if t.filter != nil {
		keep, err := t.filter(row, t.env)
		if err != nil {
			b.bad = append(b.bad, t.rt.badRecord(t.plan.Stream, r, err))
			return nil
		}
		if !eval.Truthy(keep) {
			return nil
		}
	}
	for i, o := range t.output {
		if t.derived[i], err = o(row, t.env); err != nil {
			b.bad = append(b.bad, t.rt.badRecord(t.plan.Stream, r, err))
			return nil
		}
	}
	key, value, err := t.out.Encode(t.derived)
	if err != nil {
		b.bad = append(b.bad, t.rt.badRecord(t.plan.Stream, r, err))
		return nil
	}
	rec := &kgo.Record{Topic: t.plan.Stream.Topic, Partition: p % t.plan.Stream.Partitions, Key: key, Value: value, Timestamp: r.Timestamp}
	if ms, ok := row[ncols].(int64); ok {
		rec.Timestamp = time.UnixMilli(ms)
	}
	if key != nil {
		rec.Partition = t.part.Partition(key, t.plan.Stream.Partitions)
	}
	if err := tooLarge(t.maxRecord, rec, rec.Topic); err != nil {
		b.bad = append(b.bad, t.rt.badRecord(t.plan.Stream, r, err))
		return nil
	}
	b.out = append(b.out, rec)
	return nil
}

// tableInputs are the topics the task reads the table from: its topic
// and forwarding topic, or a view's changelog.
func (t *joinTask) tableInputs() []string {
	if t.fwd == "" {
		return []string{t.table}
	}
	return []string{t.table, t.fwd}
}

// tableRecord applies a record of the table's topic or forwarding
// topic to the batch's rows.
func (t *joinTask) tableRecord(b *joinBatch, r *kgo.Record) error {
	p := t.state.Partition
	if t.rows {
		return t.viewRecord(b, r)
	}
	forwarded := r.Topic == t.fwd
	if forwarded {
		v, _ := hasHeader(r, headerSource)
		q, off, err := decodeSrc(v)
		if err != nil {
			return fmt.Errorf("forwarded record at %s/%d@%d: %w", t.fwd, p, r.Offset, err)
		}
		from := forwardedFrom(t.fwd)
		if seen, ok := b.cp.Input[from][q]; ok && off < seen {
			return nil
		}
		setOffset(&b.cp.Input, from, q, off+1)
	}
	tbl := t.plan.Join.Table
	trow := make(catalog.Row, len(tbl.Schema.Columns))
	tombstone, err := t.tcodec.DecodeRecordInto(trow, r)
	if err != nil {
		return nil // the table's own task logs it
	}
	if _, misplaced := t.place.owner(r.Key, trow); misplaced && !forwarded {
		return nil // its key's partition has it, forwarded by the table
	}
	k := trow[tbl.Schema.KeyIndexes()[0]]
	if k == nil {
		return nil
	}
	skey, err := materialize.EncodeKey(nil, []any{k})
	if err != nil {
		return err
	}
	var v []byte
	if !tombstone {
		if v, err = materialize.EncodeRow(trow); err != nil {
			return err
		}
	}
	if _, ok := b.rows[string(skey)]; !ok {
		b.order = append(b.order, string(skey))
	}
	b.rows[string(skey)] = v
	return nil
}

// viewRecord applies a record of the changelog of a view joined as the
// table: a row (or its removal) replaces its key's; markers and fences
// are not rows.
func (t *joinTask) viewRecord(b *joinBatch, r *kgo.Record) error {
	ncols := len(t.plan.Join.Table.Schema.Columns)
	c, err := decodeChangelog(r, ncols, nil)
	if c.marker != nil {
		noteMarked(&b.cp, markedTable, 0, c.marker.Position)
	}
	if err != nil || c.marker != nil || c.fence {
		return err
	}
	var v []byte
	if c.present {
		if v, err = materialize.EncodeRow(c.row[:ncols]); err != nil {
			return err
		}
	}
	key := string(r.Key)
	if _, ok := b.rows[key]; !ok {
		b.order = append(b.order, key)
	}
	b.rows[key] = v
	return nil
}

// commit writes b's derived and skipped records and its marker in one
// transaction, then its table rows and checkpoint to the store.
func (t *joinTask) commit(ctx context.Context, prod *kgo.Client, store *materialize.Store, changelog string, b *joinBatch) error {
	// The position is what the task has read of each input reflects:
	// the partition of a source it reads, or what the markers of a
	// marked input (a stage's stream, the routing stage's topic, a
	// view's changelog) compose to (planner.Marks).
	p := t.state.Partition
	b.cp.Position = materialize.Position{}
	for i, topic := range []string{t.input, t.table} {
		tag := []string{markedStream, markedTable}[i]
		if m := t.plan.Join.Marks[i]; m != nil {
			marked(b.cp.Position, b.cp, tag, m)
		} else if off, ok := b.cp.Input[topic][p]; ok {
			b.cp.Position.Advance(topic, p, off)
		}
	}
	recs := append(append(make([]*kgo.Record, 0, len(b.out)+len(b.bad)+1), b.out...), b.bad...)
	if t.plan.Marked {
		recs = appendStageMarkers(recs, t.plan.Stream.Topic, t.plan.Stream.Partitions, p, false, b.cp.Position)
	}
	return commitMarked(ctx, t.state, prod, store, changelog, p, t.plan.Stream.Topic, recs, &b.cp, b.order, b.rows)
}

// lastMarker returns the checkpoint of the last marker of changelog
// partition p from where checkpoint cp left it to the partition's end
// (cp itself when there is none), without touching any store: a task
// whose store is not the changelog's copy (a join task's holds table
// rows) takes only its input offsets from there.
func (rt *Runtime) lastMarker(ctx context.Context, changelog string, p int32, cp materialize.Checkpoint) (materialize.Checkpoint, error) {
	ends, err := kafka.EndOffsets(ctx, rt.adm, changelog)
	if err != nil {
		return cp, err
	}
	end := ends[p]
	if cp.ChangelogOffset >= end {
		return cp, nil
	}
	cl, err := rt.consumer(fmt.Sprintf("markers-%s-%d", changelog, p), changelog, p, kgo.NewOffset().At(cp.ChangelogOffset))
	if err != nil {
		return cp, err
	}
	defer cl.Close()
	out := cp
	for out.ChangelogOffset < end {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return cp, ctx.Err()
		}
		if err := FetchErr(fetches); err != nil {
			return cp, err
		}
		var merr error
		fetches.EachRecord(func(r *kgo.Record) {
			out.ChangelogOffset = r.Offset + 1
			if _, ok := hasHeader(r, headerMarker); ok && !r.Attrs.IsControl() && merr == nil {
				m, err := materialize.UnmarshalCheckpoint(r.Value)
				if err != nil {
					merr = err
					return
				}
				out.Input, out.Position, out.UpdatedAt = m.Input, m.Position, m.UpdatedAt
			}
		})
		if merr != nil {
			return cp, errors.Join(fmt.Errorf("reading the markers of %s/%d", changelog, p), merr)
		}
	}
	return out, nil
}
