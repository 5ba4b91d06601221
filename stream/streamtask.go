package stream

// The stream task: one per source partition of a derived stream writes
// each source record's projection to the stream's topic, exactly once
// (see streamTask).

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/eval"
	"github.com/basindb/basin/ha"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/kafka"
	"github.com/basindb/basin/materialize"
	"github.com/basindb/basin/planner"
	"github.com/basindb/basin/serde"
)

// streamTask writes one source partition of a derived stream (CREATE
// STREAM ... AS SELECT). Per batch of source records it opens a Kafka
// transaction, writes the record each one derives (filtered, projected,
// re-keyed) to the stream's topic, skipped records to the processing
// log, and a marker with the input offset to its partition of the
// stream's changelog, which holds nothing else; then commits. After the
// commit it keeps the same checkpoint in its store. A crash at any point
// neither loses nor repeats a record: the task that starts again fences
// the old one (aborting its open transaction), restores the last marker
// from the changelog, and reads on from its offsets. A consumer reading
// committed records sees each derived record once.
//
// Without re-keying (planner.StreamPlan.Rekey) a record goes to the
// partition of its source record, so the stream keeps its source's
// order and partitioning; re-keyed, to the partition its new key
// hashes to (murmur2), in the order of each source partition. A derived
// record carries its source record's time, ROWTIME, as its timestamp,
// as ksqlDB's do.
type streamTask struct {
	rt     *Runtime
	plan   *planner.StreamPlan
	state  *TaskState
	codec  *serde.Codec // the source's
	out    *serde.Codec // the stream's
	part   kafka.Partitioner
	filter eval.Expr
	output []eval.Expr
	env    *eval.Env
	// maxRecord is the largest record the stream's topic takes
	// (Runtime.recordLimit); 0 means no limit is known.
	maxRecord int
	// Scratch space of one record: its row (columns, ROWTIME, then
	// ROWPARTITION and ROWOFFSET with the plan's Coords) and the row it
	// derives.
	row, derived catalog.Row
	// route is set for the routing stage of a stream–table join
	// (planner.StreamJoin.Route): the task sends each record as it is
	// to the partition of the join's repartition topic that its join
	// key belongs to, where the join task of that table partition reads
	// it. It keeps its markers under the stream's Changes names.
	route    bool
	key      eval.Expr    // the join key, when routing
	tblCodec *serde.Codec // encodes it
	// parts is where routed records go: its partitions, by its
	// partitioner (the table; a stream–stream join's Parts).
	parts *catalog.Relation
	// src is the stream the task reads: the plan's Source, or the
	// right stream of a stream–stream join, whose routing stage (right)
	// keeps its markers under the stream's Regroup names and marks each
	// record it sends with headerRight.
	src   *catalog.Relation
	right bool
}

func newStreamTask(rt *Runtime, plan *planner.StreamPlan, ts *TaskState) *streamTask {
	t := &streamTask{rt: rt, plan: plan, state: ts, codec: serde.NewCodec(plan.Source, rt.opts.Registry), out: serde.NewCodec(plan.Stream, rt.opts.Registry),
		part: plan.Stream.PartitionerOf(), env: &eval.Env{}, src: plan.Source}
	if plan.Filter != nil {
		t.filter = eval.Compile(plan.Filter)
	}
	for _, o := range plan.Output {
		t.output = append(t.output, eval.Compile(o))
	}
	t.row = make(catalog.Row, recordWidth(plan.Source, plan.Coords))
	t.derived = make(catalog.Row, len(plan.Output))
	return t
}

// newRouteTask returns the routing stage of a stream–table join for
// one stream partition, or of a stream–stream join's left stream.
func newRouteTask(rt *Runtime, plan *planner.StreamPlan, ts *TaskState) *streamTask {
	parts := plan.Join.Table
	if plan.Join.Within != nil {
		parts = plan.Join.Parts
	}
	t := &streamTask{rt: rt, plan: plan, state: ts, codec: serde.NewCodec(plan.Source, rt.opts.Registry), env: &eval.Env{},
		route: true, key: eval.Compile(plan.Join.Key), tblCodec: serde.NewCodec(parts, rt.opts.Registry), parts: parts, src: plan.Source}
	t.row = make(catalog.Row, len(plan.Source.Schema.Columns)+1)
	return t
}

// newRightRouteTask returns the routing stage of a stream–stream join's
// right stream for one of its partitions.
func newRightRouteTask(rt *Runtime, plan *planner.StreamPlan, ts *TaskState) *streamTask {
	j := plan.Join
	t := &streamTask{rt: rt, plan: plan, state: ts, codec: serde.NewCodec(j.Table, rt.opts.Registry), env: &eval.Env{},
		route: true, key: eval.Compile(j.RightKey), tblCodec: serde.NewCodec(j.Parts, rt.opts.Registry), parts: j.Parts, src: j.Table, right: true}
	t.row = make(catalog.Row, len(j.Table.Schema.Columns)+1)
	return t
}

func (t *streamTask) run(ctx context.Context) error {
	rt, plan, p := t.rt, t.plan, t.state.Partition
	rel, src := plan.Stream, t.src
	changelog := rel.ChangelogTopic(rt.opts.Cluster)
	store := rt.opts.DB.Store(materialize.StoreID{View: rel.StoreName(), Partition: p})
	var prod *kgo.Client
	var err error
	switch {
	case t.right:
		changelog = rel.RegroupTopic(rt.opts.Cluster)
		store = rt.opts.DB.Store(materialize.StoreID{View: rel.RegroupStore(), Partition: p})
		prod, err = rt.fencedProducer(ctx, fmt.Sprintf("%s-route-right-%d-txn", rel.Name, p), rel.RegroupTransactionalID(rt.opts.Cluster, p),
			changelog, p, t.maxRecord)
	case t.route:
		changelog = rel.ChangesTopic(rt.opts.Cluster)
		store = rt.opts.DB.Store(materialize.StoreID{View: rel.ChangesStore(), Partition: p})
		prod, err = rt.fencedProducer(ctx, fmt.Sprintf("%s-route-%d-txn", rel.Name, p), rel.ChangesTransactionalID(rt.opts.Cluster, p),
			changelog, p, t.maxRecord)
	default:
		prod, err = rt.taskProducer(ctx, rel, p, t.maxRecord)
	}
	if err != nil {
		return err
	}
	defer prod.Close()
	cp, err := rt.restore(ctx, store, changelog, p)
	if err != nil {
		return err
	}
	if err := rt.checkHalt(rel, src.Topic, p); err != nil {
		return err
	}
	next, applied := cp.Input[src.Topic][p]
	if n := rt.takeResume(rel, &cp, src.Topic, p, next, applied); n != next {
		next = n
		setOffset(&cp.Input, src.Topic, p, n)
	}
	from, err := rt.resumeAt(ctx, rel, src.Topic, p, next, applied)
	if err != nil {
		return err
	}
	var guard inputGuard
	if applied {
		guard.expect(src.Topic, p, next)
	}
	cons, err := rt.consumer(fmt.Sprintf("%s-%d", rel.Name, p), src.Topic, p, from, noReset)
	if err != nil {
		return err
	}
	defer cons.Close()
	if cp.Position == nil {
		cp.Position = materialize.Position{}
	}
	t.state.inputNext.Store(next)
	ends, err := kafka.EndOffsets(ctx, rt.adm, src.Topic)
	if err != nil {
		return err
	}
	t.state.inputEnd.Store(ends[p])
	t.state.applied(cp.UpdatedAt)
	t.state.publishPosition(cp.Position.Clone())
	t.state.markRestored()
	for {
		fetches, ok, err := rt.poll(ctx, cons, &t.state.inputEnd)
		if !ok {
			return err
		}
		t.state.tookIn(fetches)
		if err := warmSchemas(fetches, func(*kgo.Record) *serde.Codec { return t.codec }, t.codec); err != nil {
			return err
		}
		if fetches.NumRecords() == 0 {
			continue
		}
		if topic, sp, next, back := guard.check(fetches); back {
			return rt.wentBack(ctx, rel, topic, sp, next)
		}
		t.state.pending(fetches)
		b := cp.Clone()
		if b.Position == nil {
			b.Position = materialize.Position{}
		}
		var recs, bad []*kgo.Record
		var perr error
		fetches.EachRecord(func(r *kgo.Record) {
			if perr != nil {
				return
			}
			setOffset(&b.Input, src.Topic, p, r.Offset+1)
			b.Position.Advance(src.Topic, p, r.Offset+1)
			if r.Attrs.IsControl() {
				return
			}
			if m := t.routeMarks(); m != nil {
				if w, pos, ok, err := stageMarker(r); ok {
					// Routing a stage's stream: what its writer
					// sent here reflects pos.
					if err == nil {
						noteMarked(&b, markedStream, w, pos)
						marked(b.Position, b, markedStream, m)
					}
					perr = err
					return
				}
			}
			b.UpdatedAt = r.Timestamp
			n := len(recs)
			var err error
			recs, err = t.derive(r, recs)
			switch {
			case err != nil && isDataError(err):
				recs = recs[:n] // an exploded record's earlier records go too
				bad = append(bad, rt.badRecord(rel, r, err))
			case err != nil:
				perr = err
			}
		})
		if perr != nil {
			return perr
		}
		if err := t.commit(ctx, prod, store, changelog, &b, recs, bad); err != nil {
			return err
		}
		cp = b
		t.state.publishPosition(cp.Position.Clone())
		t.state.inputNext.Store(cp.Input[src.Topic][p])
		t.state.applied(cp.UpdatedAt)
		t.state.errors.Add(int64(len(bad)))
	}
}

// derive appends to recs the records source record r derives: none when
// the filter drops it or it is a tombstone (a stream's records are
// events; one without a value is none), one, or with EXPLODE one per
// array element. An error for r's data (pgerr) skips it into the
// processing log.
func (t *streamTask) derive(r *kgo.Record, recs []*kgo.Record) ([]*kgo.Record, error) {
	if len(t.plan.Explode) == 0 {
		rec, err := t.deriveOne(r)
		if rec != nil {
			recs = append(recs, rec)
		}
		return recs, err
	}
	return t.deriveExploded(r, recs)
}

// deriveOne is derive without EXPLODE: one record or none.
func (t *streamTask) deriveOne(r *kgo.Record) (*kgo.Record, error) {
	ncols := len(t.src.Schema.Columns)
	row := t.row
	tombstone, err := t.codec.DecodeRecordInto(row[:ncols], r)
	if err != nil || tombstone {
		return nil, err
	}
	if row[ncols], err = t.codec.Rowtime(row, r.Timestamp); err != nil {
		return nil, err
	}
	if len(row) > ncols+1 {
		setCoords(row, ncols, r.Partition, r.Offset)
	}
	if t.route {
		return t.routed(r, row)
	}
	if t.filter != nil {
		keep, err := t.filter(row, t.env)
		if err != nil || !eval.Truthy(keep) {
			return nil, err
		}
	}
	for i, o := range t.output {
		if t.derived[i], err = o(row, t.env); err != nil {
			return nil, err
		}
	}
	return t.encode(r, row, t.derived)
}

// encode returns the record of derived, a row of the stream, derived
// from source record r, whose row is row.
func (t *streamTask) encode(r *kgo.Record, row, derived catalog.Row) (*kgo.Record, error) {
	plan := t.plan
	ncols := len(t.src.Schema.Columns)
	key, value, err := t.out.Encode(derived)
	if err != nil {
		return nil, err
	}
	rec := &kgo.Record{Topic: plan.Stream.Topic, Partition: r.Partition, Key: key, Value: value, Timestamp: r.Timestamp}
	if ms, ok := row[ncols].(int64); ok {
		rec.Timestamp = time.UnixMilli(ms)
	}
	if n := plan.Stream.Partitions; plan.Rekey {
		if key == nil {
			rec.Partition = r.Partition % n // no key to place it by: where it was
		} else {
			rec.Partition = t.part.Partition(key, n)
		}
	}
	if err := tooLarge(t.maxRecord, rec, rec.Topic); err != nil {
		return nil, err
	}
	return rec, nil
}

// routed returns source record r, whose row is row, sent to the join
// partition of its join key: the table partition that key is in (by
// the table's key bytes and partitioner). A record without a join key
// joins no row: it goes to its own partition's number, for a LEFT
// JOIN to emit it with NULLs.
func (t *streamTask) routed(r *kgo.Record, row catalog.Row) (*kgo.Record, error) {
	tbl := t.parts
	k, err := t.key(row, t.env)
	if err != nil {
		return nil, err
	}
	rec := &kgo.Record{Topic: t.plan.Stream.RepartitionTopic(t.rt.opts.Cluster), Key: r.Key, Value: r.Value, Timestamp: r.Timestamp,
		Partition: r.Partition % tbl.Partitions}
	if t.right {
		rec.Headers = []kgo.RecordHeader{{Key: headerRight}}
	}
	if k != nil {
		kb, err := t.tblCodec.EncodeKey([]any{k})
		if err != nil {
			return nil, err
		}
		rec.Partition = tbl.PartitionerOf().Partition(kb, tbl.Partitions)
	}
	return rec, tooLarge(t.maxRecord, rec, rec.Topic)
}

// routeMarks returns how the markers of the stage's stream a routing
// task reads compose; nil when it reads a source.
func (t *streamTask) routeMarks() *planner.Marks {
	if !t.route {
		return nil
	}
	if t.right {
		return t.plan.Join.RouteMarks[1]
	}
	return t.plan.Join.RouteMarks[0]
}

// commit writes one transaction, the derived records, the skipped ones
// and the marker of cp, and then keeps cp in the store.
func (t *streamTask) commit(ctx context.Context, prod *kgo.Client, store *materialize.Store, changelog string,
	cp *materialize.Checkpoint, recs, bad []*kgo.Record) error {
	all := append(append(make([]*kgo.Record, 0, len(recs)+len(bad)+1), recs...), bad...)
	if t.route {
		// The join's tasks compose the routing tasks' positions from
		// these (planner.Marks).
		all = appendStageMarkers(all, t.plan.Stream.RepartitionTopic(t.rt.opts.Cluster), t.parts.Partitions, t.state.Partition, t.right, cp.Position)
	}
	return commitMarked(ctx, t.state, prod, store, changelog, t.state.Partition, t.plan.Stream.Topic, all, cp, nil, nil)
}

// StartStream starts a derived stream's persistent query: its topic and
// changelog are created if missing, then a task per source partition.
// An active task writes the stream; a standby follows the changelog of
// markers, so that it takes over from the last committed batch.
func (rt *Runtime) StartStream(plan *planner.StreamPlan) error {
	rel := plan.Stream
	ctx, cancel := context.WithTimeout(rt.ctx, 30*time.Second)
	defer cancel()
	q := &PersistentQuery{Rel: rel, Stream: plan, reg: rt.opts.Registry}
	// A join of three or more relations: each join stage writes an
	// internal stream, named after rel, that the next one reads.
	for i, st := range plan.Stages {
		st.Stream.Name, st.Stream.Version = rel.StageName(i+1), rel.Version
		st.Stream.Topic = st.Stream.StageTopic(rt.opts.Cluster)
	}
	for i, st := range plan.Stages {
		limit, maxBytes, err := rt.ensureStreamTopics(ctx, st)
		if err != nil {
			return err
		}
		if st.Join.Within != nil {
			err = rt.startStreamJoin(ctx, q, st, i+1, limit)
		} else {
			err = rt.startJoin(ctx, q, st, i+1, limit, maxBytes)
		}
		if err != nil {
			return err
		}
	}
	limit, maxBytes, err := rt.ensureStreamTopics(ctx, plan)
	if err != nil {
		return err
	}
	if plan.Join != nil && plan.Join.Within != nil {
		if err := rt.startStreamJoin(ctx, q, plan, 0, limit); err != nil {
			return err
		}
		return rt.start(q)
	}
	if plan.Join != nil {
		if err := rt.startJoin(ctx, q, plan, 0, limit, maxBytes); err != nil {
			return err
		}
		return rt.start(q)
	}
	for p := int32(0); p < rel.Tasks; p++ {
		ts := rt.newTaskState(rel, p)
		q.Tasks = append(q.Tasks, ts)
		t := newStreamTask(rt, plan, ts)
		t.maxRecord = limit
		q.slots = append(q.slots, rt.changelogSlot(rel, ts, t.run, plan.Source.Topic, ""))
	}
	return rt.start(q)
}

// ensureStreamTopics creates the topic (unless the plan is an INSERT's,
// which writes an existing stream's) and the changelog of the stream
// plan writes, and returns the largest record the topic takes and its
// source's max.message.bytes.
func (rt *Runtime) ensureStreamTopics(ctx context.Context, plan *planner.StreamPlan) (int, *string, error) {
	rel := plan.Stream
	maxBytes, err := rt.sourceMaxBytes(ctx, plan.Source.Topic)
	if err != nil {
		return 0, nil, err
	}
	if rel.Kind != catalog.KindInsert { // an INSERT writes into a stream's topic
		if err := rt.EnsureStreamTopic(ctx, rel, maxBytes); err != nil {
			return 0, nil, err
		}
	}
	compact := "compact"
	changelog := rel.ChangelogTopic(rt.opts.Cluster)
	if _, _, err := kafka.EnsureTopic(ctx, rt.adm, changelog, rel.Tasks,
		map[string]*string{"cleanup.policy": &compact}); err != nil {
		return 0, nil, err
	}
	limit, err := rt.recordLimit(ctx, rel.Topic)
	return limit, maxBytes, err
}

// joinSlot is the slot of join task p of plan, a join stage's (stage >
// 0) or the query's own (0). A stage's join tasks have no partitions of
// their own in the assignment: each runs where the query's task of its
// number (modulo the query's tasks) does, active or standing by. Join
// tasks stand by with standby (nil: the slot follows the changelog, of
// which a stream–stream join's store is a copy).
func (rt *Runtime) joinSlot(q *PersistentQuery, plan *planner.StreamPlan, stage int, ts *TaskState, run, standby func(context.Context) error, input string) *slot {
	rel, p := plan.Stream, ts.Partition
	if stage > 0 {
		// A join stage's task runs with the query's task of its number:
		// active where that is, and a standby where that stands by (a
		// stream–table join's reads the table into its store, a
		// stream–stream join's follows its changelog, of which its store
		// is a copy).
		q.Rekey = append(q.Rekey, ts)
		follow := standby
		if follow == nil {
			own, changelog := materialize.StoreID{View: rel.StoreName(), Partition: p}, rel.ChangelogTopic(rt.opts.Cluster)
			follow = func(ctx context.Context) error {
				return rt.followChangelog(ctx, rt.opts.DB.Store(own), changelog, input, "", p, ts)
			}
		}
		return &slot{key: materialize.StoreID{View: q.Rel.StoreName(), Partition: p}, rekey: true, ts: ts,
			name: fmt.Sprintf("%s/join/%d", rel.Name, p), stage: fmt.Sprintf("stage%d-join", stage),
			run: func(r ha.Role) func(context.Context) error {
				if r == ha.RoleActive {
					return func(ctx context.Context) error { return rt.stalled(ctx, q.Rel, ts, run(ctx)) }
				}
				return follow
			}}
	}
	q.Tasks = append(q.Tasks, ts)
	if standby == nil {
		return rt.changelogSlot(rel, ts, run, input, "")
	}
	return &slot{key: materialize.StoreID{View: rel.StoreName(), Partition: p}, ts: ts,
		name: fmt.Sprintf("%s/%d", rel.Name, p),
		run: func(r ha.Role) func(context.Context) error {
			if r == ha.RoleActive {
				return func(ctx context.Context) error { return rt.stalled(ctx, rel, ts, run(ctx)) }
			}
			return standby
		}}
}

// routeSlot is the slot of a routing task for source partition sp of a
// join stage's (stage > 0) or the query's own join; right says it
// routes a stream–stream join's right stream.
func routeSlot(rt *Runtime, q *PersistentQuery, plan *planner.StreamPlan, stage int, right bool, ts *TaskState, run func(context.Context) error) *slot {
	q.Rekey = append(q.Rekey, ts)
	name := "rekey"
	if right {
		name = "rekey-right"
	}
	if stage > 0 {
		name = fmt.Sprintf("stage%d-%s", stage, name)
	}
	s := activeSlot(rt, q.Rel, materialize.StoreID{View: q.Rel.StoreName(), Partition: ts.Partition}, true, ts,
		fmt.Sprintf("%s/%s/%d", plan.Stream.Name, name, ts.Partition), run)
	if name != "rekey" {
		s.stage = name
	}
	return s
}

// startJoin adds the tasks of a stream–table join, plan (the query's
// own, or join stage stage of it), to q: a join task per table
// partition (a standby keeps the table partition's rows current in its
// store, so that taking over reads only what it has not read), and,
// when the stream is not in the table's partitions by the join key, a
// routing task per stream partition, which runs with the join task of
// the same number (modulo the table's partitions).
func (rt *Runtime) startJoin(ctx context.Context, q *PersistentQuery, plan *planner.StreamPlan, stage int, limit int, maxBytes *string) error {
	rel := plan.Stream
	compact := "compact"
	if plan.Join.Route {
		if _, _, err := kafka.EnsureTopic(ctx, rt.adm, rel.RepartitionTopic(rt.opts.Cluster), plan.Join.Table.Partitions,
			map[string]*string{"max.message.bytes": maxBytes}); err != nil {
			return err
		}
		if _, _, err := kafka.EnsureTopic(ctx, rt.adm, rel.ChangesTopic(rt.opts.Cluster), plan.Source.Partitions,
			map[string]*string{"cleanup.policy": &compact}); err != nil {
			return err
		}
		routeLimit, err := rt.recordLimit(ctx, rel.RepartitionTopic(rt.opts.Cluster))
		if err != nil {
			return err
		}
		for sp := int32(0); sp < plan.Source.Partitions; sp++ {
			ts := rt.newTaskState(rel, sp)
			t := newRouteTask(rt, plan, ts)
			t.maxRecord = routeLimit
			q.slots = append(q.slots, routeSlot(rt, q, plan, stage, false, ts, t.run))
		}
	}
	for p := int32(0); p < rel.Tasks; p++ {
		ts := rt.newTaskState(rel, p)
		t := newJoinTask(rt, plan, ts)
		t.maxRecord = limit
		q.slots = append(q.slots, rt.joinSlot(q, plan, stage, ts, t.run, t.standby, ""))
	}
	return nil
}

// startStreamJoin adds the tasks of a stream–stream join, plan (the
// query's own, or join stage stage of it), to q: a join task per join
// partition, whose standby follows its changelog (the store is a copy
// of it), and a routing task per partition of each stream that is not
// in the join's partitions by its join key, which runs with the join
// task of the same number (modulo the join's partitions).
func (rt *Runtime) startStreamJoin(ctx context.Context, q *PersistentQuery, plan *planner.StreamPlan, stage int, limit int) error {
	rel := plan.Stream
	j := plan.Join
	compact := "compact"
	routeLimit := 0
	if j.Route || j.RouteRight {
		maxBytes, err := rt.sourceMaxBytes(ctx, j.Table.Topic)
		if err != nil {
			return err
		}
		if left, err := rt.sourceMaxBytes(ctx, plan.Source.Topic); err != nil {
			return err
		} else if maxBytes == nil || left != nil && *left > *maxBytes {
			maxBytes = left
		}
		if _, _, err := kafka.EnsureTopic(ctx, rt.adm, rel.RepartitionTopic(rt.opts.Cluster), j.Parts.Partitions,
			map[string]*string{"max.message.bytes": maxBytes}); err != nil {
			return err
		}
		if routeLimit, err = rt.recordLimit(ctx, rel.RepartitionTopic(rt.opts.Cluster)); err != nil {
			return err
		}
	}
	for _, side := range []struct {
		on     bool
		src    *catalog.Relation
		topic  string
		right  bool
		newRun func(*Runtime, *planner.StreamPlan, *TaskState) *streamTask
	}{
		{j.Route, plan.Source, rel.ChangesTopic(rt.opts.Cluster), false, newRouteTask},
		{j.RouteRight, j.Table, rel.RegroupTopic(rt.opts.Cluster), true, newRightRouteTask},
	} {
		if !side.on {
			continue
		}
		if _, _, err := kafka.EnsureTopic(ctx, rt.adm, side.topic, side.src.Partitions,
			map[string]*string{"cleanup.policy": &compact}); err != nil {
			return err
		}
		for sp := int32(0); sp < side.src.Partitions; sp++ {
			ts := rt.newTaskState(rel, sp)
			t := side.newRun(rt, plan, ts)
			t.maxRecord = routeLimit
			q.slots = append(q.slots, routeSlot(rt, q, plan, stage, side.right, ts, t.run))
		}
	}
	for p := int32(0); p < rel.Tasks; p++ {
		ts := rt.newTaskState(rel, p)
		t := newStreamJoinTask(rt, plan, ts)
		t.maxRecord = limit
		q.slots = append(q.slots, rt.joinSlot(q, plan, stage, ts, t.run, nil, t.inputs()[0]))
	}
	return nil
}

// activeSlot is the slot of a task that runs only where its key is
// active (rekey: where the task of its number, modulo the query's
// tasks, is).
func activeSlot(rt *Runtime, rel *catalog.Relation, key materialize.StoreID, rekey bool, ts *TaskState, name string, run func(context.Context) error) *slot {
	return &slot{key: key, rekey: rekey, ts: ts, name: name,
		run: func(r ha.Role) func(context.Context) error {
			if r != ha.RoleActive {
				return nil
			}
			return func(ctx context.Context) error { return rt.stalled(ctx, rel, ts, run(ctx)) }
		}}
}

// EnsureStreamTopic creates the topic of derived stream rel if it does
// not exist, with the stream's partitions; one that exists with another
// partition count is 42P16. maxBytes, when not nil, is its
// max.message.bytes.
func (rt *Runtime) EnsureStreamTopic(ctx context.Context, rel *catalog.Relation, maxBytes *string) error {
	configs := map[string]*string{}
	if maxBytes != nil {
		configs["max.message.bytes"] = maxBytes
	}
	_, n, err := kafka.EnsureTopic(ctx, rt.adm, rel.Topic, rel.Partitions, configs)
	if err != nil {
		return pgerr.New(pgerr.IOError, "creating topic %s for stream %s: %v", rel.Topic, rel.Name, err)
	}
	if n != rel.Partitions {
		return pgerr.New(pgerr.InvalidTableDefinition, "topic %s has %d partitions, but stream %s has %d", rel.Topic, n, rel.Name, rel.Partitions).
			WithHint("Write to a new topic, or give the stream WITH (partitions = %d).", n)
	}
	return nil
}
