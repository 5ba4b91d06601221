package stream

// The re-keying task: for a view whose key differs from its source's,
// one per source partition writes each record to the view partition of
// its new key through the repartition topic (see rekeyTask).

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/eval"
	"github.com/basindb/basin/kafka"
	"github.com/basindb/basin/materialize"
	"github.com/basindb/basin/planner"
	"github.com/basindb/basin/serde"
)

// rekeyTask re-keys one source partition of a view into the repartition
// topic. It is not transactional: after a crash it resumes from its last
// committed offset and may send records again; the view tasks drop those
// by position (a record whose source offset is below the position already
// reflected is a duplicate). After each batch it writes a marker with its
// progress to every repartition partition, so that every view partition
// can prove which source offsets it has seen even when no record of this
// source partition reached it.
//
// Like viewTask's, its per-record path decodes into and evaluates into
// buffers of the task, and carves what a record keeps from blocks of the
// batch (recordArena).
//
// Over a stream's join (planner.ViewPlan.Marks), the stream it reads
// carries its writers' position markers: the task keeps what they said
// and sends the position they compose to in its own markers, so the
// view's positions are in the topics beneath the join (notePosition).
// What it keeps is not stored: after a restart it learns it again from
// the writers' next markers, and the view keeps what it was told.
type rekeyTask struct {
	rekeyer
	marks materialize.Checkpoint // what the stream's writers said (noteMarked)
}

// rekeyer is what the re-keying stages of a view (rekeyTask, and
// changeTask over a table) share: the view's WHERE and groups over the
// source rows of one source partition, and how a row's view key is
// written.
type rekeyer struct {
	rt     *Runtime
	state  *TaskState
	ends   *sourceEnds // shared with the view's tasks, for their lag
	plan   *planner.ViewPlan
	sp     int32
	codec  *serde.Codec
	filter eval.Expr
	group  []eval.Expr
	env    *eval.Env
	// keys writes the view's key in its key_format, as its lookups and
	// the records it publishes have it.
	keys *serde.Codec
	out  string // the repartition topic
	// maxRecord is the largest record the repartition topic takes
	// (Runtime.recordLimit); 0 means no limit is known.
	maxRecord int
	// Scratch space of one record: its row, GROUP BY values and view key.
	row    catalog.Row
	groups []any
	key    []any
}

func newRekeyer(rt *Runtime, plan *planner.ViewPlan, ts *TaskState, ends *sourceEnds) rekeyer {
	t := rekeyer{rt: rt, plan: plan, sp: ts.Partition, state: ts, ends: ends, codec: serde.NewCodec(plan.Source, rt.opts.Registry), env: &eval.Env{},
		out: plan.View.RepartitionTopic(rt.opts.Cluster)}
	if plan.Filter != nil {
		t.filter = eval.Compile(plan.Filter)
	}
	// A windowed view's window is no part of the partition key: the
	// view task finds the windows of a record.
	for _, g := range plan.GroupBy[:plan.UserGroups()] {
		t.group = append(t.group, eval.Compile(g))
	}
	t.keys = serde.NewCodec(plan.View, rt.opts.Registry)
	t.row = make(catalog.Row, recordWidth(plan.Source, plan.Coords)) // planner.SourceInput
	t.groups = make([]any, len(t.group))
	t.key = make([]any, len(plan.PartitionKeyGroup()))
	return t
}

func newRekeyTask(rt *Runtime, plan *planner.ViewPlan, ts *TaskState, ends *sourceEnds) *rekeyTask {
	return &rekeyTask{rekeyer: newRekeyer(rt, plan, ts, ends)}
}

// appendViewKey evaluates the groups of row and appends its view key, as
// the repartition records' keys have it (the view's key_format), to dst;
// null reports a key of NULLs, which has no bytes.
func (t *rekeyer) appendViewKey(dst []byte, row catalog.Row) (_ []byte, null bool, err error) {
	for i, g := range t.group {
		if t.groups[i], err = g(row, t.env); err != nil {
			return dst, false, err
		}
	}
	for i, g := range t.plan.PartitionKeyGroup() {
		t.key[i] = t.groups[g]
	}
	return t.keys.AppendKey(dst, t.key)
}

// prepare readies the re-keying of a batch: a view key in a registry
// format needs its schema, and a registry that cannot be reached fails
// the batch, to be tried again, rather than its records.
func (t *rekeyer) prepare(fetches kgo.Fetches) error {
	if err := warmSchemas(fetches, func(*kgo.Record) *serde.Codec { return t.codec }, t.codec); err != nil {
		return err
	}
	return t.keys.PrepareKey()
}

func (t *rekeyTask) run(ctx context.Context) error {
	rt, plan := t.rt, t.plan
	view, src := plan.View, plan.Source
	group := view.RekeyGroup(rt.opts.Cluster)
	out := t.out
	start := kgo.NewOffset().AtStart()
	offs, err := rt.adm.FetchOffsets(ctx, group)
	if errors.Is(err, kerr.GroupIDNotFound) {
		err = nil // nothing committed yet
	}
	if err != nil {
		return fmt.Errorf("reading offsets of %s: %w", group, err)
	}
	if err := rt.checkHalt(view, src.Topic, t.sp); err != nil {
		return err
	}
	var guard inputGuard
	if o, ok := offs.Lookup(src.Topic, t.sp); ok && o.Err == nil && o.At >= 0 {
		if start, err = rt.resumeAt(ctx, view, src.Topic, t.sp, o.At, true); err != nil {
			return err
		}
		guard.expect(src.Topic, t.sp, o.At)
	}
	cons, err := rt.consumer(fmt.Sprintf("%s-rekey-%d", view.Name, t.sp), src.Topic, t.sp, start, noReset)
	if err != nil {
		return err
	}
	defer cons.Close()
	prod, err := rt.Client(fmt.Sprintf("%s-rekey-%d-out", view.Name, t.sp), append(kafka.ProducerOpts(), batchMax(t.maxRecord)...)...)
	if err != nil {
		return err
	}
	defer prod.Close()
	if ends, err := kafka.EndOffsets(ctx, rt.adm, src.Topic); err == nil {
		t.ends.ends[t.sp].Store(ends[t.sp])
	}
	t.state.markRestored()
	for {
		fetches, ok, err := rt.poll(ctx, cons, &t.ends.ends[t.sp])
		if !ok {
			return err
		}
		t.state.tookIn(fetches)
		if err := t.prepare(fetches); err != nil {
			return err
		}
		if fetches.NumRecords() == 0 {
			continue
		}
		if topic, sp, next, back := guard.check(fetches); back {
			return rt.wentBack(ctx, view, topic, sp, next)
		}
		b := &rekeyBatch{next: -1, recs: make([]*kgo.Record, 0, fetches.NumRecords()+int(view.Partitions))}
		fetches.EachRecord(func(r *kgo.Record) { t.add(b, r) })
		recs := b.recs
		var pos []byte
		if plan.Marks != nil {
			composed := materialize.Position{}
			marked(composed, t.marks, markedStream, plan.Marks)
			pos = materialize.MarshalCheckpoint(materialize.Checkpoint{Position: composed})
		}
		for vp := int32(0); vp < view.Partitions; vp++ {
			r := &kgo.Record{Topic: out, Partition: vp,
				Headers: []kgo.RecordHeader{{Key: headerMarker, Value: encodeSrc(t.sp, b.next)}}}
			if pos != nil {
				r.Headers = append(r.Headers, kgo.RecordHeader{Key: headerPosition, Value: pos})
			}
			recs = append(recs, r)
		}
		recs = append(recs, b.bad...)
		if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			return fmt.Errorf("producing to %s: %w", out, err)
		}
		t.state.wrote(recs)
		var commit kadmOffsets
		commit.add(src.Topic, t.sp, b.next)
		if err := commit.commit(ctx, rt, group); err != nil {
			return err
		}
	}
}

// appendSrc appends what encodeSrc returns to dst.
func appendSrc(dst []byte, partition int32, offset int64) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(partition))
	return binary.BigEndian.AppendUint64(dst, uint64(offset))
}

// rekeyBatch is the output of one batch of source records: their
// re-keyed records, the records skipped, and the source offset after
// them.
type rekeyBatch struct {
	recs, bad []*kgo.Record
	next      int64
	arena     recordArena // recs and what they hold
}

// add re-keys one source record into b.
func (t *rekeyTask) add(b *rekeyBatch, r *kgo.Record) {
	b.next = r.Offset + 1
	if r.Attrs.IsControl() {
		return
	}
	if w, pos, ok, err := stageMarker(r); ok && t.plan.Marks != nil {
		if err == nil {
			noteMarked(&t.marks, markedStream, w, pos)
		}
		return
	}
	rec, err := t.rekey(&b.arena, r)
	if err == nil && rec != nil {
		err = tooLarge(t.maxRecord, rec, t.out)
	}
	if err != nil {
		b.bad = append(b.bad, t.rt.badRecord(t.plan.View, r, err))
		return
	}
	if rec != nil {
		b.recs = append(b.recs, rec)
	}
}

// rekey returns the repartition record of a source record, made in a;
// nil when the filter drops it.
func (t *rekeyTask) rekey(a *recordArena, r *kgo.Record) (*kgo.Record, error) {
	row := t.row
	ncols := len(t.plan.Source.Schema.Columns)
	tombstone, err := t.codec.DecodeRecordInto(row[:ncols], r)
	if err != nil || tombstone {
		return nil, err
	}
	if row[ncols], err = t.codec.Rowtime(row, r.Timestamp); err != nil {
		return nil, err
	}
	if t.plan.Coords {
		setCoords(row, ncols, t.sp, r.Offset)
	}
	if t.filter != nil {
		keep, err := t.filter(row, t.env)
		if err != nil {
			return nil, err
		}
		if !eval.Truthy(keep) {
			return nil, nil
		}
	}
	buf := a.bytes.begin()
	start := len(buf)
	buf, null, err := t.appendViewKey(buf, row)
	if err != nil {
		return nil, err
	}
	var kb []byte // nil: a null key
	if !null {
		kb = a.bytes.end(buf, start)
	}
	buf = a.bytes.begin()
	start = len(buf)
	// The columns and ROWTIME: the view task takes ROWPARTITION and
	// ROWOFFSET from the source header, as repartition records of
	// versions before them need.
	if buf, err = materialize.AppendRow(buf, row[:ncols+1]); err != nil {
		return nil, err
	}
	v := a.bytes.end(buf, start)
	buf = a.bytes.begin()
	start = len(buf)
	src := a.bytes.end(appendSrc(buf, t.sp, r.Offset), start)
	rec := a.record()
	rec.Topic = t.out
	rec.Partition = kafka.Partition(kb, t.plan.View.Partitions)
	rec.Key, rec.Value = kb, v
	rec.Timestamp = r.Timestamp
	rec.Headers = a.header(headerSource, src)
	return rec, nil
}
