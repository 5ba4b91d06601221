package stream

// The view task: the active replica of a view partition applies its
// input to the store and writes the changes to the changelog in one
// transaction per batch (see viewTask).

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/eval"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/kafka"
	"github.com/basindb/basin/materialize"
	"github.com/basindb/basin/planner"
	"github.com/basindb/basin/serde"
)

// sourcesBehind reports whether a source end the re-keying tasks saw
// is below the view task's position: behindPosition is then worth
// asking.
func (t *viewTask) sourcesBehind(pos materialize.Position) bool {
	src := t.state.sources
	if src == nil {
		return false
	}
	for sp := range src.ends {
		end := src.ends[sp].Load()
		if seen, ok := pos.Get(src.topic, int32(sp)); ok && end > 0 && end < seen {
			return true
		}
	}
	return false
}

// viewTask maintains one partition of a view: it reads its input (the
// source partition, or the repartition partition), updates the view's
// rows and aggregate state, and in one Kafka transaction writes the
// changed rows to the changelog, skipped records to the processing log
// and a marker with the input offsets and position. Only after the
// commit succeeds does it apply the same changes to Pebble, so the store
// is always a prefix of the committed changelog.
//
// The per-record path allocates little beyond the values it decodes and
// the aggregates it boxes: a record is decoded into, and its group and
// key evaluated into, buffers of the task that the next record reuses;
// what a transaction keeps (changed rows, their keys, encoded values,
// changelog records) is carved from blocks of the batch. A group's state
// is read from the store only the first time it changes since the task
// started (see groupCache).
type viewTask struct {
	rt     *Runtime
	plan   *planner.ViewPlan
	state  *TaskState
	codec  *serde.Codec
	filter eval.Expr
	group  []eval.Expr
	output []eval.Expr
	having eval.Expr
	agg    *eval.Aggregator
	env    *eval.Env
	// pub is the topic the view publishes its rows to (planner.
	// PublishedTopic), "" for none; pubCodec encodes them.
	pub      string
	pubCodec *serde.Codec
	// input is the topic the task reads (the source's, the repartition
	// topic, or the changelog of the view it reads); srcTopic is the
	// source's, in which positions are kept (PositionTopic).
	input, srcTopic string
	// overView is set for a view over a view (processView).
	overView bool
	// fwd is the topic misplaced records are forwarded through, which the
	// task reads too, and place finds them; "" and nil for a view that
	// re-keys, where every record goes to its partition.
	fwd   string
	place *placement
	// maxRecord is the largest record the changelog and forwarding
	// topics take (Runtime.recordLimit); 0 means no limit is known.
	maxRecord int
	// rowCanFail is whether evaluating the select list or HAVING over a
	// group's state can fail, which apply must then find out per record.
	rowCanFail bool
	// replace is set for a view grouped by its table's key: each group
	// is one row of the table, whose change replaces the group's state
	// and whose deletion removes the group.
	replace bool
	// cache holds the committed state of the groups last changed; run
	// starts it empty.
	cache groupCache
	// win is set for a windowed view (window.go).
	win *windower

	// Scratch space of one record (process, apply) or one row's value
	// (values): what it holds is dead once that is done. run is never
	// called concurrently with itself, so one set serves.
	row        catalog.Row // the input row
	keyVals    []any       // its source key, in key order
	groups     []any       // its GROUP BY values
	key        []any       // its view key
	keyBuf     []byte      // key, encoded
	prevState  []any       // a group's state before the record, to undo it
	prevGroups []any
	aggRow     catalog.Row // groups and aggregate results (viewRow)
	out        catalog.Row // the view row (viewRow)
	stored     []any       // the values of a stored row (values)
	starts     []int64     // the starts of a record's windows (applyWindowed)
	changes    map[string]*pending
	order      []*pending
}

func newViewTask(rt *Runtime, plan *planner.ViewPlan, ts *TaskState) *viewTask {
	t := &viewTask{rt: rt, plan: plan, state: ts, codec: serde.NewCodec(plan.Source, rt.opts.Registry), env: &eval.Env{},
		input: plan.Source.Topic, srcTopic: plan.Source.Topic}
	switch {
	case plan.Regroups():
		// Grouping a view or a join by other columns: the change
		// stage re-keys the changelog it reads.
		t.input, t.srcTopic = plan.View.RepartitionTopic(rt.opts.Cluster), regroupInput(rt, plan)
	case plan.Join != nil:
		// Over a join: the join stage's changelog, read as a view's.
		t.overView = true
		t.input, t.srcTopic = plan.View.ChangesTopic(rt.opts.Cluster), plan.Positions[0].Topic
	case plan.Source.Kind == catalog.KindView:
		// Over a view: its changelog, partition by partition (keyed and
		// placed as it is), whose markers carry the positions.
		t.overView = true
		t.input, t.srcTopic = plan.Source.ChangelogTopic(rt.opts.Cluster), plan.Positions[0].Topic
	case plan.Repartition:
		t.input = plan.View.RepartitionTopic(rt.opts.Cluster)
	default:
		t.fwd = plan.View.RepartitionTopic(rt.opts.Cluster)
		t.place = newPlacement(plan.View, t.codec, ts.Partition)
	}
	if t.pub = planner.PublishedTopic(plan.View); t.pub != "" {
		t.pubCodec = serde.NewCodec(plan.View, rt.opts.Registry)
	}
	if plan.Filter != nil {
		t.filter = eval.Compile(plan.Filter)
	}
	for _, g := range plan.GroupBy {
		t.group = append(t.group, eval.Compile(g))
	}
	for _, o := range plan.Output {
		t.output = append(t.output, eval.Compile(o))
		switch o.(type) {
		case *planner.ColRef, *planner.Const:
		default:
			t.rowCanFail = true
		}
	}
	if plan.Having != nil {
		t.having = eval.Compile(plan.Having)
		t.rowCanFail = true
	}
	switch {
	case plan.Retract:
		t.agg = eval.NewRetractingAggregator(plan.Aggs)
		// Grouped by its table's key, a group holds one row: a change
		// replaces its state.
		t.replace = !plan.Repartition
	case plan.Grouped:
		t.agg = eval.NewAggregator(plan.Aggs)
	}
	width := recordWidth(plan.Source, plan.Coords) // planner.SourceInput
	t.row = make(catalog.Row, width)
	if w := plan.View.Window; w != nil {
		// Then WINDOWSTART and WINDOWEND (planner.WindowInput).
		t.win = newWindower(w, len(plan.Source.Schema.Columns), width, plan.UserGroups())
		t.row = make(catalog.Row, width+2)[:width]
	}
	t.keyVals = make([]any, len(t.codec.KeyIndex()))
	t.groups = make([]any, len(t.group))
	t.key = make([]any, len(plan.KeyGroup))
	t.changes = make(map[string]*pending)
	return t
}

// reset readies the task for a run from cp, its store's checkpoint once
// restored: the store may have changed since the last run (restored, or
// written as a standby), so nothing cached from it holds. A store that
// has never committed a changelog offset is empty.
func (t *viewTask) reset(cp materialize.Checkpoint) {
	t.cache = groupCache{size: t.cache.size, complete: cp.ChangelogOffset == 0}
}

// pending is a changed view row within one transaction.
type pending struct {
	key     []byte
	skey    string       // key, as the key of viewBatch.changes and groupCache
	groups  []any        // group values (grouped views)
	state   []any        // aggregate state (grouped views)
	cached  *cachedGroup // what the cache holds of the group; nil if nothing
	row     catalog.Row
	deleted bool
	// was and now are whether the row is in the view (stored, and not
	// hidden) before the batch and after it: what the changelog record
	// of the change says it is (headerOp).
	was, now bool
	// expired is set for a window deleted past its retention, which a
	// published topic is not told of (windower).
	expired bool
	// pubEnd is, for a session the store held when the batch began
	// (pubEndSet), its end then: a published topic has it under a key
	// with that end, which a changed end or a merge retracts.
	pubEnd    int64
	pubEndSet bool
}

// viewBatch is the work of one transaction: the input position it
// reaches, the changed view rows in the order first changed, and the
// records skipped.
type viewBatch struct {
	next      materialize.Checkpoint
	inputNext int64 // the input offset after the last record read
	fwdNext   int64 // the same in the forwarding topic
	// streamTime and expireAt are a windowed view's stream time and
	// next expiry pass (windower).
	streamTime, expireAt int64
	// sessions are the sessions the batch has changed, by their
	// group's encoded key (applySession).
	sessions map[string][]*pending
	changes  map[string]*pending
	order    []*pending
	bad      []*kgo.Record
	// forward are the misplaced records read, made for the partitions
	// of their keys (placement).
	forward []*kgo.Record
	// pendings is the block the entries of changes come from; arena
	// holds their keys, values and changelog records.
	pendings []pending
	arena    recordArena
}

// newBatch starts a transaction from checkpoint cp. It reuses the map and
// list of the task's previous batch, which must be done with.
func (t *viewTask) newBatch(cp materialize.Checkpoint) *viewBatch {
	clear(t.changes)
	clear(t.order)
	b := &viewBatch{next: cp.Clone(), inputNext: -1, fwdNext: -1, changes: t.changes, order: t.order[:0]}
	if t.win != nil {
		b.streamTime, b.expireAt = checkpointTimes(cp)
	}
	return b
}

func (b *viewBatch) newPending() *pending {
	if len(b.pendings) == cap(b.pendings) {
		b.pendings = make([]pending, 0, arenaRecords)
	}
	b.pendings = b.pendings[:len(b.pendings)+1]
	return &b.pendings[len(b.pendings)-1]
}

func (t *viewTask) run(ctx context.Context) error {
	rt, plan, p := t.rt, t.plan, t.state.Partition
	view := plan.View
	changelog := view.ChangelogTopic(rt.opts.Cluster)
	store := rt.opts.DB.Store(materialize.StoreID{View: view.StoreName(), Partition: p})
	prod, err := rt.taskProducer(ctx, view, p, t.maxRecord)
	if err != nil {
		return err
	}
	defer prod.Close()
	cp, err := rt.restore(ctx, store, changelog, p)
	if err != nil {
		return err
	}
	t.reset(cp)
	if t.win != nil {
		if err := t.resetWindows(store, cp); err != nil {
			return err
		}
	}
	input := t.input
	offs := map[string]map[int32]kgo.Offset{}
	var guard inputGuard
	if plan.Repartition {
		if err := rt.checkHalts(view, t.srcTopic); err != nil {
			return err
		}
	}
	for _, topic := range []string{input, t.fwd} {
		if topic == "" {
			continue
		}
		if err := rt.checkHalt(view, topic, p); err != nil {
			return err
		}
		next, applied := cp.Input[topic][p]
		if n := rt.takeResume(view, &cp, topic, p, next, applied); n != next {
			next = n
			setOffset(&cp.Input, topic, p, n)
			if _, ok := cp.Position.Get(topic, p); ok {
				cp.Position[topic][p] = n
			}
		}
		from, err := rt.resumeAt(ctx, view, topic, p, next, applied)
		if err != nil {
			return err
		}
		offs[topic] = map[int32]kgo.Offset{p: from}
		if applied {
			guard.expect(topic, p, next)
		}
	}
	cons, err := rt.consumerOf(fmt.Sprintf("%s-%d", view.Name, p), offs, noReset)
	if err != nil {
		return err
	}
	defer cons.Close()
	if cp.Position == nil {
		cp.Position = materialize.Position{}
	}
	if n, ok := cp.Input[input][p]; ok {
		t.state.inputNext.Store(n)
	}
	ends, err := kafka.EndOffsets(ctx, rt.adm, input)
	if err != nil {
		return err
	}
	t.state.inputEnd.Store(ends[p])
	if t.fwd != "" {
		t.state.fwdNext.Store(cp.Input[t.fwd][p])
		ends, err := kafka.EndOffsets(ctx, rt.adm, t.fwd)
		if err != nil {
			return err
		}
		t.state.fwdEnd.Store(ends[p])
	}
	if plan.Repartition {
		if err := rt.behindPosition(ctx, view, t.srcTopic, cp.Position); err != nil {
			return err
		}
	}
	t.state.applied(cp.UpdatedAt)
	t.publishSeen(cp)
	t.state.publishPosition(cp.Position.Clone())
	t.state.markRestored()

	for {
		fetches, ok, err := rt.pollInputs(ctx, cons, t.state, t.fwd)
		if !ok {
			return err
		}
		t.state.tookIn(fetches)
		if err := warmSchemas(fetches, func(*kgo.Record) *serde.Codec {
			if t.overView || t.plan.Repartition {
				return nil // rows basin encoded, not source records
			}
			return t.codec
		}, t.codec); err != nil {
			return err
		}
		if t.sourcesBehind(cp.Position) {
			if err := rt.behindPosition(ctx, view, t.srcTopic, cp.Position); err != nil {
				return err
			}
		}
		if fetches.NumRecords() == 0 {
			continue
		}
		if topic, sp, next, back := guard.check(fetches); back {
			return rt.wentBack(ctx, view, topic, sp, next)
		}
		t.state.pending(fetches)
		b := t.newBatch(cp)
		var perr error
		fetches.EachRecord(func(r *kgo.Record) {
			if perr == nil {
				perr = t.process(store, b, r)
			}
		})
		if perr != nil {
			return perr
		}
		if t.win != nil {
			if err := t.finishWindows(store, b); err != nil {
				return err
			}
		}
		vals, err := t.values(b)
		if err != nil {
			return err
		}
		if t.oversize(changelog, b, vals) != nil {
			// A record makes a changelog or forwarded record larger
			// than its topic takes: find it by committing the
			// records one by one, skipping it into the processing
			// log, rather than fail the batch for good.
			if err := t.commitEach(ctx, prod, store, changelog, fetches, &cp); err != nil {
				return err
			}
			continue
		}
		if err := t.commit(ctx, prod, store, changelog, b, vals); err != nil {
			return err
		}
		t.committed(b, &cp)
	}
}

// committed makes b, just committed, the task's checkpoint cp and
// publishes what it reached.
func (t *viewTask) committed(b *viewBatch, cp *materialize.Checkpoint) {
	p := t.state.Partition
	*cp = b.next
	t.publishSeen(*cp)
	t.state.publishPosition(cp.Position.Clone())
	t.state.inputNext.Store(cp.Input[t.input][p])
	if t.fwd != "" {
		t.state.fwdNext.Store(cp.Input[t.fwd][p])
	}
	t.state.applied(cp.UpdatedAt)
	t.state.errors.Add(int64(len(b.bad)))
	t.state.misplaced.Add(int64(len(b.forward)))
}

// commitEach processes and commits the records of fetches one
// transaction each. A record whose changes would write a record larger
// than its topic takes is skipped into the processing log: its
// transaction writes no changes, only the log entry and the offsets
// past it.
func (t *viewTask) commitEach(ctx context.Context, prod *kgo.Client, store *materialize.Store, changelog string,
	fetches kgo.Fetches, cp *materialize.Checkpoint) error {
	var err error
	fetches.EachRecord(func(r *kgo.Record) {
		if err != nil {
			return
		}
		b := t.newBatch(*cp)
		if err = t.process(store, b, r); err != nil {
			return
		}
		if t.win != nil {
			if err = t.finishWindows(store, b); err != nil {
				return
			}
		}
		var vals [][]byte
		if vals, err = t.values(b); err != nil {
			return
		}
		if big := t.oversize(changelog, b, vals); big != nil {
			clear(b.changes)
			b.order, b.forward, vals = b.order[:0], nil, nil
			b.bad = append(b.bad, t.rt.badRecord(t.plan.View, t.sourceOf(r), big))
		}
		if err = t.commit(ctx, prod, store, changelog, b, vals); err != nil {
			return
		}
		t.committed(b, cp)
	})
	return err
}

// oversize returns why a record b writes is larger than its topic
// takes, nil if none is.
func (t *viewTask) oversize(changelog string, b *viewBatch, vals [][]byte) error {
	if t.maxRecord <= 0 {
		return nil
	}
	for i, e := range b.order {
		if n := len(e.key) + len(vals[i]) + recordOverhead; n > t.maxRecord {
			return recordTooLarge(n, t.maxRecord, changelog)
		}
	}
	for _, r := range b.forward {
		if err := tooLarge(t.maxRecord, r, t.fwd); err != nil {
			return err
		}
	}
	return nil
}

// sourceOf returns the source record an input record stands for, as a
// skip is logged: the record itself when read from the source, else the
// source partition and offset of its header, with its key (and, for a
// forwarded record, its value, which are the source record's).
func (t *viewTask) sourceOf(r *kgo.Record) *kgo.Record {
	if r.Topic == t.srcTopic {
		return r
	}
	v, _ := hasHeader(r, headerSource)
	sp, off, err := decodeSrc(v)
	if err != nil {
		return r
	}
	src := &kgo.Record{Topic: t.srcTopic, Partition: sp, Offset: off, Timestamp: r.Timestamp, Key: r.Key}
	if !t.plan.Repartition {
		src.Value = r.Value
	}
	return src
}

// process applies one input record to the batch. A record that cannot be
// applied for its data is skipped into b.bad; an error is the task's, and
// ends it.
func (t *viewTask) process(store *materialize.Store, b *viewBatch, r *kgo.Record) error {
	if t.overView {
		return t.processView(store, b, r)
	}
	rt, plan, view, p := t.rt, t.plan, t.plan.View, t.state.Partition
	srcTopic := t.srcTopic
	forwarded := t.fwd != "" && r.Topic == t.fwd
	if forwarded {
		b.fwdNext = r.Offset + 1
	} else {
		b.inputNext = r.Offset + 1
	}
	if r.Attrs.IsControl() {
		return nil
	}
	var row catalog.Row
	var sp int32 // the source partition and offset of a re-keyed or forwarded record
	var off int64
	src := r // the source record, as skips are logged
	if forwarded {
		v, _ := hasHeader(r, headerSource)
		var err error
		if sp, off, err = decodeSrc(v); err != nil {
			return fmt.Errorf("forwarded record at %s/%d@%d: %w", t.fwd, p, r.Offset, err)
		}
		src = &kgo.Record{Topic: srcTopic, Partition: sp, Offset: off, Timestamp: r.Timestamp, Key: r.Key, Value: r.Value}
	}
	if plan.Repartition {
		if v, ok := hasHeader(r, headerMarker); ok {
			sp, off, err := decodeSrc(v)
			if err != nil {
				return err
			}
			if pv, ok := hasHeader(r, headerPosition); ok {
				m, err := materialize.UnmarshalCheckpoint(pv)
				if err != nil {
					return fmt.Errorf("position marker at %s/%d@%d: %w", t.input, p, r.Offset, err)
				}
				t.notePosition(b, sp, m.Position)
				setOffset(&b.next.Input, regroupSeen, sp, off)
				if !plan.Retract {
					// Re-keyed from a stream's join: the offsets
					// of its stream still find records sent twice.
					b.next.Position.Advance(srcTopic, sp, off)
				}
				return nil
			}
			b.next.Position.Advance(srcTopic, sp, off)
			return nil
		}
		v, _ := hasHeader(r, headerSource)
		var err error
		if sp, off, err = decodeSrc(v); err != nil {
			return err
		}
		switch {
		case plan.Retract:
			// From a change stage, which is transactional: nothing
			// comes twice, and its markers, after the records of each
			// batch, say how far it has sent.
		default:
			if seen, ok := b.next.Position.Get(srcTopic, sp); ok && off < seen {
				return nil // re-sent by a restarted re-keying task
			}
			b.next.Position.Advance(srcTopic, sp, off+1)
		}
		if old, ok := hasHeader(r, headerRetract); ok {
			// A table row changed or left (changeTask): its old row
			// leaves its group.
			if err := t.retract(store, b, old); err != nil {
				return err
			}
			if r.Value == nil {
				return nil
			}
		}
		if row, err = materialize.DecodeRowInto(t.row, r.Value); err != nil {
			return fmt.Errorf("undecodable repartition record at %s/%d@%d: %w", t.input, p, r.Offset, err)
		}
		n := len(plan.Source.Schema.Columns)
		if len(row) == n {
			// Re-keyed by a version before ROWTIME: the record's time.
			rowtime, _ := t.codec.Rowtime(row, r.Timestamp) // it re-keyed the record, so it read the time
			row = append(row, rowtime)
		}
		if plan.Coords {
			// The source record's coordinates, which the re-keying
			// task sent in the source header: ksqlDB's ROWPARTITION
			// and ROWOFFSET are those of the stream's topic.
			row = append(row[:n+1], int64(sp), off)
		}
		t.row = row
	} else {
		if !forwarded {
			// A forwarded record moves no position: a position covers a
			// partition's records of the keys that belong to it.
			b.next.Position.Advance(srcTopic, p, r.Offset+1)
			if w, pos, ok, err := stageMarker(r); ok && plan.Marks != nil {
				// The joined stream of a stream's join: what its
				// writer has sent here reflects pos.
				if err != nil {
					return err
				}
				noteMarked(&b.next, markedStream, w, pos)
				marked(b.next.Position, b.next, markedStream, plan.Marks)
				return nil
			}
		}
		ncols := len(plan.Source.Schema.Columns)
		row = t.row[:recordWidth(plan.Source, plan.Coords)]
		tombstone, err := t.codec.DecodeRecordInto(row[:ncols], r)
		if err != nil {
			b.bad = append(b.bad, rt.badRecord(view, src, err))
			return nil
		}
		if row[ncols], err = t.codec.Rowtime(row, r.Timestamp); err != nil {
			b.bad = append(b.bad, rt.badRecord(view, src, err))
			return nil
		}
		if plan.Coords {
			// src: a forwarded record's are its source record's.
			setCoords(row, ncols, src.Partition, src.Offset)
		}
		if !forwarded {
			if q, misplaced := t.place.owner(r.Key, row); misplaced {
				b.forward = append(b.forward, forwardRecord(&b.arena, t.fwd, q, r))
				return nil
			}
		}
		keyVals := t.keyVals
		for i, k := range t.codec.KeyIndex() {
			keyVals[i] = row[k]
		}
		if plan.Source.Kind == catalog.KindTable && slices.Contains(keyVals, nil) {
			// The table skips it (tableTask): a record without a key
			// names none of its rows, so it changes none of the view's.
			b.bad = append(b.bad, rt.badRecord(view, src, pgerr.New(pgerr.NullValueNotAllowedDataException,
				"record has a NULL key, and table %s keeps a row per key", plan.Source.Name)))
			return nil
		}
		if tombstone {
			if plan.Source.Kind == catalog.KindTable && (!plan.Grouped || t.replace) {
				t.remove(store, b, keyVals)
			}
			return nil
		}
		if t.filter != nil {
			keep, err := t.filter(row, t.env)
			if err != nil {
				b.bad = append(b.bad, rt.badRecord(view, src, err))
				return nil
			}
			if !eval.Truthy(keep) {
				if plan.Source.Kind == catalog.KindTable && (!plan.Grouped || t.replace) {
					t.remove(store, b, keyVals)
				}
				return nil
			}
		}
		if plan.Grouped && slices.Contains(keyVals, nil) {
			// Grouped by the source key without re-keying, a group
			// lives in the partition its key hashes to; a record
			// without a key has none, and counting it where it
			// landed would make one NULL group per partition.
			b.bad = append(b.bad, rt.badRecord(view, src, pgerr.New(pgerr.NullValueNotAllowedDataException,
				"record has a NULL key, and view %s groups by the key of %s without re-keying", view.Name, plan.Source.Name)))
			return nil
		}
	}
	b.next.UpdatedAt = r.Timestamp
	err := t.apply(store, b, row)
	if err == nil {
		return nil
	}
	if !isDataError(err) {
		return err
	}
	logged := src // the record a skip is logged as
	if plan.Repartition {
		// A skip is logged as the source record the re-keyed one stands
		// for, in the source's formats, not as the internal repartition
		// record.
		logged = &kgo.Record{Topic: srcTopic, Partition: sp, Offset: off, Timestamp: r.Timestamp}
		logged.Key, logged.Value, _ = t.codec.Encode(row)
	}
	b.bad = append(b.bad, rt.badRecord(view, logged, err))
	return nil
}

// notePosition records, for a view regrouping a view or a join or
// grouping a stream's join by other columns, that the re-keying task
// of source partition sp has sent everything up to a position pos of
// that source's partition reflects, and makes the view's position what
// every source partition's together reflect: per topic partition, what
// the one source partition reading it reflects, or, of a topic each
// source partition reads all of (a foreign-key join's right table, a
// stream's join), the least of what they all do, once all have said
// (marked, with a writer per source partition). The positions of the
// source partitions are kept in the checkpoint, beside the input
// offsets.
func (t *viewTask) notePosition(b *viewBatch, sp int32, pos materialize.Position) {
	noteMarked(&b.next, markedSources, sp, pos)
	marked(b.next.Position, b.next, markedSources, &planner.Marks{Sources: t.plan.SourcePositions, Writers: t.plan.Source.Partitions})
}

// markedSources tags, in a view's checkpoint, what its source
// partitions' re-keying tasks said (notePosition).
const markedSources = "sources"

// regroupSeen names, in a regrouping view's checkpoint, how far the
// view has seen each partition of the changelog its change stage reads
// (from the stage's markers), for its lag.
const regroupSeen = "\x00regroup-seen"

// publishSeen publishes, for a regrouping view, how far cp has seen
// each partition of its source (regroupSeen).
func (t *viewTask) publishSeen(cp materialize.Checkpoint) {
	if t.plan.Regroups() {
		seen := maps.Clone(cp.Input[regroupSeen])
		t.state.sourceSeen.Store(&seen)
	}
}

// processView applies one record of the changelog of the view the task
// reads, as a table's record: a row (upsert), a deleted or hidden row
// (removal), or a marker, whose position, the source offsets that view
// reflects up to there, becomes this view's (positions compose: the
// partition reflects what the partition of the view it reads did).
func (t *viewTask) processView(store *materialize.Store, b *viewBatch, r *kgo.Record) error {
	b.inputNext = r.Offset + 1
	if r.Attrs.IsControl() {
		return nil
	}
	c, err := decodeChangelog(r, len(t.plan.Source.Schema.Columns), nil)
	switch {
	case err != nil:
		return err
	case c.marker != nil:
		b.next.Position, b.next.UpdatedAt = c.marker.Position.Clone(), c.marker.UpdatedAt
		return nil
	case c.fence:
		return nil
	}
	keyVals, err := materialize.DecodeKey(r.Key)
	if err != nil {
		return fmt.Errorf("undecodable key at %s/%d@%d: %w", t.input, r.Partition, r.Offset, err)
	}
	if !c.present {
		t.remove(store, b, keyVals)
		return nil
	}
	row := c.row
	if t.filter != nil {
		keep, err := t.filter(row, t.env)
		if err != nil {
			b.bad = append(b.bad, t.rt.badRecord(t.plan.View, r, err))
			return nil
		}
		if !eval.Truthy(keep) {
			t.remove(store, b, keyVals)
			return nil
		}
	}
	err = t.apply(store, b, row)
	if err != nil && isDataError(err) {
		b.bad = append(b.bad, t.rt.badRecord(t.plan.View, r, err))
		return nil
	}
	return err
}

// fence begins and aborts a transaction under the task's transactional id.
// Initializing the id bumps its epoch, which fences any earlier instance
// of the task (a zombie on a node thought dead) and aborts its open
// transaction, so the changelog's end is stable before restore reads it.
func fence(ctx context.Context, prod *kgo.Client, topic string, p int32) error {
	if err := prod.BeginTransaction(); err != nil {
		return err
	}
	res := prod.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Key: markerKey,
		Headers: []kgo.RecordHeader{{Key: headerFence}}})
	if err := res.FirstErr(); err != nil {
		_ = prod.EndTransaction(ctx, kgo.TryAbort)
		return err
	}
	return prod.EndTransaction(ctx, kgo.TryAbort)
}

// isDataError reports whether err is about a record's data (skipped and
// logged) rather than the task's machinery (the task restarts).
func isDataError(err error) bool {
	_, ok := asPgError(err)
	return ok
}

// keyOf returns the view key of a row (ungrouped) or of its group
// values: t.key, until the next call.
func (t *viewTask) keyOf(row catalog.Row, groups []any) []any {
	for i, g := range t.plan.KeyGroup {
		if t.plan.Grouped {
			t.key[i] = groups[g]
		} else {
			t.key[i] = row[g]
		}
	}
	return t.key
}

// lookup returns the pending change for key, loading the group's state on
// first use in this transaction: from the cache, else from the store.
func (t *viewTask) lookup(store *materialize.Store, b *viewBatch, key []any) (*pending, error) {
	k, err := materialize.EncodeKey(t.keyBuf[:0], key)
	t.keyBuf = k
	if err != nil {
		return nil, err
	}
	if e, ok := b.changes[string(k)]; ok {
		return e, nil
	}
	e := b.newPending()
	e.key = b.arena.copy(k)
	e.skey = string(k)
	absent := false
	if t.win != nil {
		if absent, err = t.win.absent(store, k); err != nil {
			return nil, err
		}
	}
	switch {
	case !t.plan.Grouped:
		// Whether the row is there is all the batch needs of it.
		if e.was, err = store.Has(k); err != nil {
			return nil, err
		}
	case absent:
		// A window later than its group's latest: in neither the cache
		// nor the store.
		e.state = t.agg.Init()
	default:
		if e.cached = t.cache.get(e.skey); e.cached != nil {
			// The cache keeps the committed state; this transaction
			// changes a copy.
			e.state, e.was = slices.Clone(e.cached.state), e.cached.visible
		} else if t.cache.complete {
			e.state = t.agg.Init() // not in the store either
		} else {
			v, ok, err := store.Get(k)
			if err != nil {
				return nil, err
			}
			if ok {
				present, _, st, err := DecodeStored(v, len(t.plan.View.Schema.Columns))
				if err != nil {
					return nil, err
				}
				e.state = slices.Clone(st) // not the decoded row's values
				e.was = present
			} else {
				e.state = t.agg.Init()
			}
		}
	}
	b.changes[e.skey] = e
	b.order = append(b.order, e)
	return e, nil
}

// remove removes the view row of the source row whose key is keyVals
// (in key order): an ungrouped view's row, or the group of a view
// grouped by the table's key (replace), whose key columns are the
// source's in order.
func (t *viewTask) remove(store *materialize.Store, b *viewBatch, keyVals []any) {
	key := t.key
	clear(key)
	if t.replace {
		copy(key, keyVals)
	} else {
		srcKeys := t.plan.Source.Schema.KeyIndexes()
		for i, g := range t.plan.KeyGroup {
			for j, sk := range srcKeys {
				if sk == g {
					key[i] = keyVals[j]
				}
			}
		}
	}
	e, err := t.lookup(store, b, key)
	if err == nil {
		e.deleted, e.row = true, nil
		if t.replace {
			e.state = t.agg.Init()
		}
	}
}

func (t *viewTask) apply(store *materialize.Store, b *viewBatch, row catalog.Row) error {
	if t.win != nil {
		return t.applyWindowed(store, b, row)
	}
	return t.applyGroups(store, b, row)
}

// applyGroups applies an input row to the view: to its group, or as a
// row of an ungrouped view.
func (t *viewTask) applyGroups(store *materialize.Store, b *viewBatch, row catalog.Row) error {
	if !t.plan.Grouped {
		out, err := eval.EvalAll(t.output, row, t.env)
		if err != nil {
			return err
		}
		e, err := t.lookup(store, b, t.keyOf(row, nil))
		if err != nil {
			return err
		}
		e.row, e.deleted = out, false
		return nil
	}
	groups := t.groups
	for i, g := range t.group {
		v, err := g(row, t.env)
		if err != nil {
			return err
		}
		groups[i] = v
	}
	n := len(b.order)
	e, err := t.lookup(store, b, t.keyOf(row, groups))
	if err != nil {
		return err
	}
	if t.replace {
		return t.replaceGroup(b, e, n, row, groups)
	}
	// A group's values are the last record's, as its key is.
	if !t.rowCanFail {
		// Add is all or nothing, and nothing after it can fail.
		if err := t.agg.Add(e.state, row, t.env); err != nil {
			t.forget(b, e, n)
			return err
		}
		t.setGroups(e, groups)
		return nil
	}
	t.prevState = append(t.prevState[:0], e.state...)
	t.prevGroups = append(t.prevGroups[:0], e.groups...)
	hadGroups := e.groups != nil
	t.setGroups(e, groups)
	err = t.agg.Add(e.state, row, t.env)
	if err == nil {
		// The select list and HAVING are evaluated over the new state
		// here, per record, so that a record they fail on (SUM(v) /
		// COUNT(v) with COUNT(v) = 0) is skipped like one an aggregate
		// fails on, rather than failing the transaction at commit.
		_, _, err = t.viewRow(e)
	}
	if err != nil {
		copy(e.state, t.prevState)
		if hadGroups {
			copy(e.groups, t.prevGroups)
		} else {
			e.groups = nil
		}
		t.forget(b, e, n)
	}
	clear(t.prevState)
	clear(t.prevGroups)
	return err
}

// retract takes a table row the change stage sent before, encoded in
// v, back out of its group.
func (t *viewTask) retract(store *materialize.Store, b *viewBatch, v []byte) error {
	row, err := materialize.DecodeRow(v)
	if err != nil {
		return fmt.Errorf("view %s: undecodable retracted row: %w", t.plan.View.Name, err)
	}
	groups := t.groups
	for i, g := range t.group {
		if groups[i], err = g(row, t.env); err != nil {
			return fmt.Errorf("view %s: the group of a row it added before: %w", t.plan.View.Name, err)
		}
	}
	e, err := t.lookup(store, b, t.keyOf(row, groups))
	if err != nil {
		return err
	}
	if err := t.agg.Retract(e.state, row, t.env); err != nil {
		return fmt.Errorf("view %s: taking back a row it added before: %w", t.plan.View.Name, err)
	}
	t.setGroups(e, groups)
	return nil
}

// replaceGroup makes row the one row of group e (replace), unless it
// fails to aggregate or to make a view row: then the group is as it was.
func (t *viewTask) replaceGroup(b *viewBatch, e *pending, n int, row catalog.Row, groups []any) error {
	st := t.agg.Init()
	if err := t.agg.Add(st, row, t.env); err != nil {
		t.forget(b, e, n)
		return err
	}
	prev, prevGroups, wasDeleted := e.state, e.groups, e.deleted
	e.state, e.deleted, e.groups = st, false, nil
	t.setGroups(e, groups)
	if t.rowCanFail {
		if _, _, err := t.viewRow(e); err != nil {
			e.state, e.groups, e.deleted = prev, prevGroups, wasDeleted
			t.forget(b, e, n)
			return err
		}
	}
	return nil
}

// setGroups sets the group values of e to groups, a buffer of the task.
func (t *viewTask) setGroups(e *pending, groups []any) {
	if e.groups == nil {
		e.groups = slices.Clone(groups)
	} else {
		copy(e.groups, groups)
	}
}

// forget drops e, a change a record failed to make, from b if the record
// was the first to change its group in b (which then had n changes).
func (t *viewTask) forget(b *viewBatch, e *pending, n int) {
	if len(b.order) > n {
		delete(b.changes, e.skey)
		b.order = b.order[:n]
	}
}

// viewRow computes a group's view row from its state, and whether HAVING
// keeps it. out is the task's, until the next call.
func (t *viewTask) viewRow(e *pending) (present bool, out catalog.Row, err error) {
	aggRow := t.agg.Results(append(t.aggRow[:0], e.groups...), e.state)
	t.aggRow = aggRow
	present = true
	if t.having != nil {
		h, err := t.having(aggRow, t.env)
		if err != nil {
			return false, nil, err
		}
		present = eval.Truthy(h)
	}
	out = t.out[:0]
	for _, o := range t.output {
		v, err := o(aggRow, t.env)
		if err != nil {
			return false, nil, err
		}
		out = append(out, v)
	}
	t.out = out
	return present, out, nil
}

// commit writes one transaction and then applies it to the store.
// vals are the values of b's changed rows (values).
func (t *viewTask) commit(ctx context.Context, prod *kgo.Client, store *materialize.Store, changelog string, b *viewBatch, vals [][]byte) error {
	p := t.state.Partition
	recs := make([]*kgo.Record, 0, len(b.order)+len(b.bad)+len(b.forward)+1)
	for i, e := range b.order {
		rec := b.arena.record()
		rec.Topic, rec.Partition, rec.Key, rec.Value = changelog, p, e.key, vals[i]
		rec.Headers = opHeaders[opOf(e.was, e.now)]
		recs = append(recs, rec)
	}
	if t.pub != "" {
		for i, e := range b.order {
			var err error
			if recs, err = t.published(recs, b, e, vals[i]); err != nil {
				return err
			}
		}
	}
	recs = append(recs, b.bad...)
	recs = append(recs, b.forward...)
	marker := &kgo.Record{Topic: changelog, Partition: p, Key: markerKey,
		Value:   materialize.MarshalCheckpoint(b.next),
		Headers: []kgo.RecordHeader{{Key: headerMarker}}}
	recs = append(recs, marker)
	if err := produceInTransaction(ctx, t.state, prod, changelog, recs); err != nil {
		return err
	}
	return t.applyCommitted(store, b, vals, marker.Offset+1)
}

// published is the record of changed row e, whose stored value is val
// (nil: deleted), on the topic the view publishes to: an upsert of the
// row keyed by the view's key in its key_format, or a tombstone when the
// row left the view (deleted, or a group whose HAVING is false). It goes
// in the transaction of the changelog's records, so a consumer reading
// committed records sees each change once.
//
// A windowed view's record keys are ksqlDB's (windowedKey); a window
// deleted past its retention, or still hidden by EMIT FINAL, publishes
// nothing. A session's key has its end: one whose end changed, or that
// merged into another, retracts the key it was published under with a
// tombstone first (sessionTombstone). The records are appended to recs.
func (t *viewTask) published(recs []*kgo.Record, b *viewBatch, e *pending, val []byte) ([]*kgo.Record, error) {
	rec, err := t.publishedRecord(b, e, val)
	if err != nil {
		return recs, err
	}
	if t.win != nil && t.win.w.Kind == catalog.WindowSession {
		var tomb *kgo.Record
		if tomb, err = t.sessionTombstone(e); err != nil {
			return recs, err
		}
		if tomb != nil {
			recs = append(recs, tomb)
		}
		if rec != nil && e.deleted {
			return recs, nil // merged away: its key was retracted, if published
		}
	}
	if rec != nil {
		recs = append(recs, rec)
	}
	return recs, nil
}

// publishedRecord is what published writes of e, nil for nothing.
func (t *viewTask) publishedRecord(b *viewBatch, e *pending, val []byte) (*kgo.Record, error) {
	rec := &kgo.Record{Topic: t.pub, Partition: t.state.Partition}
	var row catalog.Row
	if val != nil {
		present, r, _, err := DecodeStored(val, len(t.plan.View.Schema.Columns))
		if err != nil {
			return nil, err
		}
		if present {
			row = r
		}
	}
	if t.win != nil && (e.expired || row == nil && val != nil && t.hidden(b, e)) {
		return nil, nil
	}
	var err error
	if row != nil {
		rec.Key, rec.Value, err = t.pubCodec.Encode(row)
		if err == nil && t.win != nil {
			rec.Key, err = t.windowedKey(rec.Key, e)
		}
		return rec, err
	}
	keyVals, err := materialize.DecodeKey(e.key)
	if err != nil {
		return nil, err
	}
	if t.win != nil {
		keyVals = keyVals[:len(keyVals)-1] // the window is after the key
	}
	if rec.Key, err = t.pubCodec.EncodeKey(keyVals); err == nil && t.win != nil {
		rec.Key, err = t.windowedKey(rec.Key, e)
	}
	return rec, err
}

// values records the input offset b reaches in its checkpoint and
// renders the stored (and changelog) value of each changed row of b, in
// order; nil deletes the key.
func (t *viewTask) values(b *viewBatch) ([][]byte, error) {
	if b.inputNext >= 0 {
		setOffset(&b.next.Input, t.input, t.state.Partition, b.inputNext)
	}
	if b.fwdNext >= 0 {
		setOffset(&b.next.Input, t.fwd, t.state.Partition, b.fwdNext)
	}
	if t.win != nil && b.streamTime != noTime {
		setOffset(&b.next.Input, streamTimeIn, 0, b.streamTime)
		setOffset(&b.next.Input, expiryIn, 0, b.expireAt)
	}
	vals := make([][]byte, len(b.order))
	for i, e := range b.order {
		if e.deleted || t.plan.Retract && t.agg.Empty(e.state) {
			continue // the row or group leaves the view
		}
		row, state, present := e.row, []any(nil), true
		var err error
		if t.plan.Grouped {
			if present, row, err = t.viewRow(e); err != nil {
				if !t.plan.Retract || !isDataError(err) {
					return nil, err
				}
				// A group that took a row back may make a select list
				// or HAVING fail that held before (a division by a
				// count now 0): it is hidden until it holds again.
				present, row = false, make(catalog.Row, len(t.plan.View.Schema.Columns))
			}
			present = present && !t.hidden(b, e)
			state = e.state
		}
		buf := b.arena.bytes.begin()
		start := len(buf)
		if buf, t.stored, err = AppendStored(buf, t.stored, present, row, state); err != nil {
			return nil, err
		}
		vals[i] = b.arena.bytes.end(buf, start)
		e.now = present
	}
	return vals, nil
}

// applyCommitted applies a batch whose transaction has committed to the
// store, and then to the cache; changelogNext is the changelog offset
// after its marker.
func (t *viewTask) applyCommitted(store *materialize.Store, b *viewBatch, vals [][]byte, changelogNext int64) error {
	sb := store.NewBatch()
	for i, e := range b.order {
		if vals[i] == nil {
			sb.Delete(e.key)
		} else {
			sb.Set(e.key, vals[i])
		}
	}
	b.next.ChangelogOffset = changelogNext
	if err := sb.Commit(b.next); err != nil {
		return err
	}
	if t.win != nil {
		t.windowsCommitted(b, vals)
	}
	if t.plan.Grouped {
		for i, e := range b.order {
			if vals[i] == nil {
				t.cache.remove(e.skey)
			} else {
				t.cache.put(e.skey, e.cached, e.state, e.now) // the batch is done with it
			}
		}
	}
	t.order = b.order // for the next batch to reuse
	return nil
}
