package exec

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/kafka"
	"github.com/basindb/basin/materialize"
	"github.com/basindb/basin/planner"
)

// Record headers basin's internal topics use.
const (
	// headerMarker marks a position marker: in a changelog its value is an
	// encoded checkpoint (input and position of the transaction it ends);
	// in a repartition topic it is (source partition, next offset).
	headerMarker = "basin.marker"
	// headerSource is (source partition, offset) on a re-keyed record.
	headerSource = "basin.src"
)

// markerKey is the key of changelog markers; with compaction the latest
// marker per partition survives.
var markerKey = []byte("\xffbasin.marker")

func hasHeader(r *kgo.Record, key string) ([]byte, bool) {
	for _, h := range r.Headers {
		if h.Key == key {
			return h.Value, true
		}
	}
	return nil, false
}

func encodeSrc(partition int32, offset int64) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(partition))
	return binary.BigEndian.AppendUint64(b, uint64(offset))
}

func decodeSrc(b []byte) (int32, int64, error) {
	if len(b) != 12 {
		return 0, 0, fmt.Errorf("exec: bad source header of %d bytes", len(b))
	}
	return int32(binary.BigEndian.Uint32(b)), int64(binary.BigEndian.Uint64(b[4:])), nil
}

func setOffset(m *map[string]map[int32]int64, topic string, p int32, next int64) {
	if *m == nil {
		*m = make(map[string]map[int32]int64)
	}
	if (*m)[topic] == nil {
		(*m)[topic] = make(map[int32]int64)
	}
	(*m)[topic][p] = next
}

func inputOffset(m map[string]map[int32]int64, topic string, p int32) kgo.Offset {
	if n, ok := m[topic][p]; ok {
		return kgo.NewOffset().At(n)
	}
	return kgo.NewOffset().AtStart()
}

// consumer returns a client reading one partition from off, committed
// data only, with control records kept so that the read offset passes
// transaction markers.
func (rt *Runtime) consumer(id, topic string, p int32, off kgo.Offset) (*kgo.Client, error) {
	return rt.client(id,
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {p: off}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
		kgo.FetchMaxWait(500*time.Millisecond),
	)
}

// tableTask materializes one partition of a source table. The table's
// topic is its changelog: the store's ChangelogOffset is the next offset
// of the topic to apply.
type tableTask struct {
	rt    *Runtime
	rel   *catalog.Relation
	state *TaskState
	// restoreEnd is the topic's end when the task started.
	restoreEnd int64
}

func (t *tableTask) run(ctx context.Context) error {
	p := t.state.Partition
	store := t.rt.opts.DB.Store(materialize.StoreID{View: t.rel.StoreName(), Partition: p})
	cp, err := store.Checkpoint()
	if err != nil {
		return err
	}
	cons, err := t.rt.consumer(fmt.Sprintf("%s-%d", t.rel.Name, p), t.rel.Topic, p, kgo.NewOffset().At(cp.ChangelogOffset))
	if err != nil {
		return err
	}
	defer cons.Close()
	codec := newRelCodec(t.rel)
	t.state.inputNext.Store(cp.ChangelogOffset)
	t.state.publishPosition(cp.Position.Clone())
	if err := t.markRestored(ctx, cp.ChangelogOffset); err != nil {
		return err
	}
	for {
		fetches, ok, err := t.rt.poll(ctx, cons, &t.state.inputEnd)
		if !ok {
			return err
		}
		if fetches.NumRecords() == 0 {
			continue
		}
		b := store.NewBatch()
		var bad []*kgo.Record
		fetches.EachRecord(func(r *kgo.Record) {
			cp.ChangelogOffset = r.Offset + 1
			if r.Attrs.IsControl() {
				return
			}
			t.state.updatedAt.Store(r.Timestamp.UnixMilli())
			row, keyVals, err := codec.decode(r.Key, r.Value)
			if err != nil {
				bad = append(bad, t.rt.badRecord(t.rel, r, err))
				return
			}
			k, err := materialize.EncodeKey(nil, keyVals)
			if err != nil {
				bad = append(bad, t.rt.badRecord(t.rel, r, err))
				return
			}
			if row == nil {
				b.Delete(k)
				return
			}
			v, err := encodeStored(true, row, nil)
			if err != nil {
				bad = append(bad, t.rt.badRecord(t.rel, r, err))
				return
			}
			b.Set(k, v)
		})
		setOffset(&cp.Input, t.rel.Topic, p, cp.ChangelogOffset)
		if cp.Position == nil {
			cp.Position = materialize.Position{}
		}
		cp.Position.Advance(t.rel.Topic, p, cp.ChangelogOffset)
		cp.UpdatedAt = time.UnixMilli(t.state.updatedAt.Load())
		if len(bad) > 0 {
			// The topic offset is checkpointed after the log is written:
			// a crash in between logs a record twice, never zero times.
			if err := t.rt.plog.ProduceSync(ctx, bad...).FirstErr(); err != nil {
				b.Close()
				return fmt.Errorf("writing processing log: %w", err)
			}
			t.state.errors.Add(int64(len(bad)))
		}
		if err := b.Commit(cp); err != nil {
			return err
		}
		t.state.inputNext.Store(cp.ChangelogOffset)
		t.state.publishPosition(cp.Position.Clone())
		if cp.ChangelogOffset >= t.restoreEnd {
			t.state.markRestored()
		}
	}
}

// markRestored records the end of the input at start. The task is
// restoring until it has read that far: a table's topic is its
// changelog, so catching up with it is the table's restore.
func (t *tableTask) markRestored(ctx context.Context, next int64) error {
	ends, err := kafka.EndOffsets(ctx, t.rt.adm, t.rel.Topic)
	if err != nil {
		return err
	}
	t.restoreEnd = ends[t.state.Partition]
	t.state.inputEnd.Store(t.restoreEnd)
	if next >= t.restoreEnd {
		t.state.markRestored()
	}
	return nil
}

// poll fetches the next records of a task's consumer and records the
// partition's high watermark in end. ok is false on an error, and with
// no error once ctx has ended: the task is stopping.
func (rt *Runtime) poll(ctx context.Context, cons *kgo.Client, end *atomic.Int64) (_ kgo.Fetches, ok bool, err error) {
	fetches := cons.PollRecords(ctx, rt.opts.MaxBatch)
	if ctx.Err() != nil {
		return nil, false, nil
	}
	if err := fetchErr(fetches); err != nil {
		return nil, false, err
	}
	fetches.EachPartition(func(fp kgo.FetchTopicPartition) {
		if fp.HighWatermark > 0 {
			end.Store(fp.HighWatermark)
		}
	})
	return fetches, true, nil
}

func fetchErr(fetches kgo.Fetches) error {
	var err error
	fetches.EachError(func(topic string, p int32, e error) {
		if errors.Is(e, context.Canceled) {
			return
		}
		err = fmt.Errorf("fetching %s/%d: %w", topic, p, e)
	})
	return err
}

// restore applies the changelog partition from the store's checkpoint to
// the changelog's end, so the store reflects every committed transaction.
// Markers carry the input and position of the transaction they end.
func (rt *Runtime) restore(ctx context.Context, store *materialize.Store, topic string, p int32) (materialize.Checkpoint, error) {
	cp, err := store.Checkpoint()
	if err != nil {
		return cp, err
	}
	ends, err := kafka.EndOffsets(ctx, rt.adm, topic)
	if err != nil {
		return cp, err
	}
	end := ends[p]
	if cp.ChangelogOffset >= end {
		return cp, nil
	}
	cl, err := rt.consumer(fmt.Sprintf("restore-%s-%d", topic, p), topic, p, kgo.NewOffset().At(cp.ChangelogOffset))
	if err != nil {
		return cp, err
	}
	defer cl.Close()
	for cp.ChangelogOffset < end {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return cp, ctx.Err()
		}
		if err := fetchErr(fetches); err != nil {
			return cp, err
		}
		b := store.NewBatch()
		if err := applyChangelog(b, &cp, fetches); err != nil {
			b.Close()
			return cp, fmt.Errorf("restoring %s/%d: %w", topic, p, err)
		}
		// One fsync for the whole restore, at its end: a crash before it
		// leaves a prefix of these batches, each with its checkpoint.
		commit := b.CommitNoSync
		if cp.ChangelogOffset >= end {
			commit = b.Commit
		}
		if err := commit(cp); err != nil {
			return cp, err
		}
	}
	return cp, nil
}

// viewTask maintains one partition of a view: it reads its input (the
// source partition, or the repartition partition), updates the view's
// rows and aggregate state, and in one Kafka transaction writes the
// changed rows to the changelog, skipped records to the processing log
// and a marker with the input offsets and position. Only after the
// commit succeeds does it apply the same changes to Pebble, so the store
// is always a prefix of the committed changelog.
type viewTask struct {
	rt     *Runtime
	plan   *planner.ViewPlan
	state  *TaskState
	codec  *relCodec
	filter Expr
	group  []Expr
	output []Expr
	having Expr
	agg    *Aggregator
	env    *Env
}

func newViewTask(rt *Runtime, plan *planner.ViewPlan, ts *TaskState) *viewTask {
	t := &viewTask{rt: rt, plan: plan, state: ts, codec: newRelCodec(plan.Source), env: &Env{}}
	if plan.Filter != nil {
		t.filter = Compile(plan.Filter)
	}
	for _, g := range plan.GroupBy {
		t.group = append(t.group, Compile(g))
	}
	for _, o := range plan.Output {
		t.output = append(t.output, Compile(o))
	}
	if plan.Having != nil {
		t.having = Compile(plan.Having)
	}
	if plan.Grouped {
		t.agg = NewAggregator(plan.Aggs)
	}
	return t
}

// pending is a changed view row within one transaction.
type pending struct {
	key     []byte
	groups  []any // group values (grouped views)
	state   []any // aggregate state (grouped views)
	row     catalog.Row
	deleted bool
}

func (t *viewTask) run(ctx context.Context) error {
	rt, plan, p := t.rt, t.plan, t.state.Partition
	view := plan.View
	changelog := view.ChangelogTopic(rt.opts.Cluster)
	store := rt.opts.DB.Store(materialize.StoreID{View: view.StoreName(), Partition: p})
	prod, err := rt.client(fmt.Sprintf("%s-%d-txn", view.Name, p), append(kafka.ProducerOpts(),
		kgo.TransactionalID(view.TransactionalID(rt.opts.Cluster, p)),
		kgo.TransactionTimeout(rt.opts.TransactionTimeout),
	)...)
	if err != nil {
		return err
	}
	defer prod.Close()
	if err := fence(ctx, prod, changelog, p); err != nil {
		return fmt.Errorf("fencing earlier instances of task %s/%d: %w", view.Name, p, err)
	}
	cp, err := rt.restore(ctx, store, changelog, p)
	if err != nil {
		return err
	}
	input, srcTopic := plan.Source.Topic, plan.Source.Topic
	if plan.Repartition {
		input = view.RepartitionTopic(rt.opts.Cluster)
	}
	cons, err := rt.consumer(fmt.Sprintf("%s-%d", view.Name, p), input, p, inputOffset(cp.Input, input, p))
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
	t.state.publishPosition(cp.Position.Clone())
	t.state.markRestored()

	for {
		fetches, ok, err := rt.poll(ctx, cons, &t.state.inputEnd)
		if !ok {
			return err
		}
		if fetches.NumRecords() == 0 {
			continue
		}
		next := cp.Clone()
		changes := make(map[string]*pending)
		var order []*pending
		var bad []*kgo.Record
		var perr error
		fetches.EachRecord(func(r *kgo.Record) {
			if perr != nil {
				return
			}
			setOffset(&next.Input, input, p, r.Offset+1)
			if r.Attrs.IsControl() {
				return
			}
			var row catalog.Row
			var keyVals []any
			logged := r // the record a skip is logged as
			if plan.Repartition {
				if v, ok := hasHeader(r, headerMarker); ok {
					sp, off, err := decodeSrc(v)
					if err != nil {
						perr = err
						return
					}
					next.Position.Advance(srcTopic, sp, off)
					return
				}
				v, _ := hasHeader(r, headerSource)
				sp, off, err := decodeSrc(v)
				if err != nil {
					perr = err
					return
				}
				if seen, ok := next.Position.Get(srcTopic, sp); ok && off < seen {
					return // re-sent by a restarted re-keying task
				}
				next.Position.Advance(srcTopic, sp, off+1)
				vals, err := materialize.DecodeRow(r.Value)
				if err != nil {
					perr = fmt.Errorf("undecodable repartition record at %s/%d@%d: %w", input, p, r.Offset, err)
					return
				}
				row = vals
				// A skip is logged as the source record the re-keyed one
				// stands for, in the source's formats, not as the internal
				// repartition record.
				logged = &kgo.Record{Topic: srcTopic, Partition: sp, Offset: off, Timestamp: r.Timestamp}
				logged.Key, logged.Value, _ = t.codec.encode(row)
			} else {
				next.Position.Advance(srcTopic, p, r.Offset+1)
				var err error
				row, keyVals, err = t.codec.decode(r.Key, r.Value)
				if err != nil {
					bad = append(bad, rt.badRecord(view, r, err))
					return
				}
				if row == nil {
					if plan.Source.Kind == catalog.KindTable && !plan.Grouped {
						t.remove(store, changes, &order, keyVals)
					}
					return
				}
				if t.filter != nil {
					keep, err := t.filter(row, t.env)
					if err != nil {
						bad = append(bad, rt.badRecord(view, r, err))
						return
					}
					if !Truthy(keep) {
						if plan.Source.Kind == catalog.KindTable && !plan.Grouped {
							t.remove(store, changes, &order, keyVals)
						}
						return
					}
				}
				if plan.Grouped && slices.Contains(keyVals, nil) {
					// Grouped by the source key without re-keying, a group
					// lives in the partition its key hashes to; a record
					// without a key has none, and counting it where it
					// landed would make one NULL group per partition.
					bad = append(bad, rt.badRecord(view, r, pgerr.New(pgerr.NullValueNotAllowedDataException,
						"record has a NULL key, and view %s groups by the key of %s without re-keying", view.Name, plan.Source.Name)))
					return
				}
			}
			next.UpdatedAt = r.Timestamp
			if err := t.apply(store, changes, &order, row); err != nil {
				if isDataError(err) {
					bad = append(bad, rt.badRecord(view, logged, err))
					return
				}
				perr = err
			}
		})
		if perr != nil {
			return perr
		}
		if err := t.commit(ctx, prod, store, changelog, order, bad, &next); err != nil {
			return err
		}
		cp = next
		t.state.publishPosition(cp.Position.Clone())
		t.state.inputNext.Store(cp.Input[input][p])
		t.state.updatedAt.Store(cp.UpdatedAt.UnixMilli())
		t.state.errors.Add(int64(len(bad)))
	}
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
		Headers: []kgo.RecordHeader{{Key: "basin.fence"}}})
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

func (t *viewTask) keyOf(row catalog.Row, groups []any) ([]any, error) {
	key := make([]any, len(t.plan.KeyGroup))
	for i, g := range t.plan.KeyGroup {
		if t.plan.Grouped {
			key[i] = groups[g]
		} else {
			key[i] = row[g]
		}
	}
	return key, nil
}

// lookup returns the pending change for key, loading the stored state on
// first use in this transaction.
func (t *viewTask) lookup(store *materialize.Store, changes map[string]*pending, order *[]*pending, key []any) (*pending, error) {
	k, err := materialize.EncodeKey(nil, key)
	if err != nil {
		return nil, err
	}
	if e, ok := changes[string(k)]; ok {
		return e, nil
	}
	e := &pending{key: k}
	if t.plan.Grouped {
		v, ok, err := store.Get(k)
		if err != nil {
			return nil, err
		}
		if ok {
			_, _, st, err := decodeStored(v, len(t.plan.View.Schema.Columns))
			if err != nil {
				return nil, err
			}
			e.state = st
		} else {
			e.state = t.agg.Init()
		}
	}
	changes[string(k)] = e
	*order = append(*order, e)
	return e, nil
}

func (t *viewTask) remove(store *materialize.Store, changes map[string]*pending, order *[]*pending, keyVals []any) {
	key := make([]any, len(t.plan.KeyGroup))
	srcKeys := t.plan.Source.Schema.KeyIndexes()
	for i, g := range t.plan.KeyGroup {
		for j, sk := range srcKeys {
			if sk == g {
				key[i] = keyVals[j]
			}
		}
	}
	e, err := t.lookup(store, changes, order, key)
	if err == nil {
		e.deleted, e.row = true, nil
	}
}

func (t *viewTask) apply(store *materialize.Store, changes map[string]*pending, order *[]*pending, row catalog.Row) error {
	if !t.plan.Grouped {
		out, err := EvalAll(t.output, row, t.env)
		if err != nil {
			return err
		}
		key, _ := t.keyOf(row, nil)
		e, err := t.lookup(store, changes, order, key)
		if err != nil {
			return err
		}
		e.row, e.deleted = out, false
		return nil
	}
	groups, err := EvalAll(t.group, row, t.env)
	if err != nil {
		return err
	}
	key, _ := t.keyOf(row, groups)
	n := len(*order)
	e, err := t.lookup(store, changes, order, key)
	if err != nil {
		return err
	}
	prevState, prevGroups := slices.Clone(e.state), e.groups
	e.groups = groups
	err = t.agg.Add(e.state, row, t.env)
	if err == nil {
		// The select list and HAVING are evaluated over the new state
		// here, per record, so that a record they fail on (SUM(v) /
		// COUNT(v) with COUNT(v) = 0) is skipped like one an aggregate
		// fails on, rather than failing the transaction at commit.
		_, _, err = t.viewRow(e)
	}
	if err != nil {
		copy(e.state, prevState)
		e.groups = prevGroups
		if len(*order) > n { // the group is new: forget it
			delete(changes, string(e.key))
			*order = (*order)[:n]
		}
		return err
	}
	return nil
}

// value renders a pending change as the stored (and changelog) value; nil
// deletes the key.
func (t *viewTask) value(e *pending) ([]byte, error) {
	if !t.plan.Grouped {
		if e.deleted {
			return nil, nil
		}
		return encodeStored(true, e.row, nil)
	}
	present, out, err := t.viewRow(e)
	if err != nil {
		return nil, err
	}
	return encodeStored(present, out, e.state)
}

// viewRow computes a group's view row from its state, and whether HAVING
// keeps it.
func (t *viewTask) viewRow(e *pending) (present bool, out catalog.Row, err error) {
	aggRow := t.agg.Results(append(catalog.Row{}, e.groups...), e.state)
	present = true
	if t.having != nil {
		h, err := t.having(aggRow, t.env)
		if err != nil {
			return false, nil, err
		}
		present = Truthy(h)
	}
	out, err = EvalAll(t.output, aggRow, t.env)
	if err != nil {
		return false, nil, err
	}
	return present, out, nil
}

// commit writes one transaction and then applies it to the store.
func (t *viewTask) commit(ctx context.Context, prod *kgo.Client, store *materialize.Store, changelog string,
	order []*pending, bad []*kgo.Record, cp *materialize.Checkpoint) error {
	p := t.state.Partition
	if err := prod.BeginTransaction(); err != nil {
		return err
	}
	abort := func(err error) error {
		_ = prod.AbortBufferedRecords(ctx)
		_ = prod.EndTransaction(ctx, kgo.TryAbort)
		return err
	}
	vals := make([][]byte, len(order))
	recs := make([]*kgo.Record, 0, len(order)+len(bad)+1)
	for i, e := range order {
		v, err := t.value(e)
		if err != nil {
			return abort(err)
		}
		vals[i] = v
		recs = append(recs, &kgo.Record{Topic: changelog, Partition: p, Key: e.key, Value: v})
	}
	recs = append(recs, bad...)
	marker := &kgo.Record{Topic: changelog, Partition: p, Key: markerKey,
		Value:   materialize.MarshalCheckpoint(*cp),
		Headers: []kgo.RecordHeader{{Key: headerMarker}}}
	recs = append(recs, marker)
	if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return abort(fmt.Errorf("producing to %s: %w", changelog, err))
	}
	if err := prod.EndTransaction(ctx, kgo.TryCommit); err != nil {
		return abort(fmt.Errorf("committing transaction: %w", err))
	}
	b := store.NewBatch()
	for i, e := range order {
		if vals[i] == nil {
			b.Delete(e.key)
		} else {
			b.Set(e.key, vals[i])
		}
	}
	cp.ChangelogOffset = marker.Offset + 1
	return b.Commit(*cp)
}

// rekeyTask re-keys one source partition of a view into the repartition
// topic. It is not transactional: after a crash it resumes from its last
// committed offset and may send records again; the view tasks drop those
// by position (a record whose source offset is below the position already
// reflected is a duplicate). After each batch it writes a marker with its
// progress to every repartition partition, so that every view partition
// can prove which source offsets it has seen even when no record of this
// source partition reached it.
type rekeyTask struct {
	rt     *Runtime
	state  *TaskState
	ends   *sourceEnds // shared with the view's tasks, for their lag
	plan   *planner.ViewPlan
	sp     int32
	codec  *relCodec
	filter Expr
	group  []Expr
	env    *Env
	keyT   []catalog.Type
	keyN   []string
}

func newRekeyTask(rt *Runtime, plan *planner.ViewPlan, ts *TaskState, ends *sourceEnds) *rekeyTask {
	t := &rekeyTask{rt: rt, plan: plan, sp: ts.Partition, state: ts, ends: ends, codec: newRelCodec(plan.Source), env: &Env{}}
	if plan.Filter != nil {
		t.filter = Compile(plan.Filter)
	}
	for _, g := range plan.GroupBy {
		t.group = append(t.group, Compile(g))
	}
	for _, c := range plan.View.Schema.Columns {
		if c.Key {
			t.keyT = append(t.keyT, c.Type)
			t.keyN = append(t.keyN, c.Name)
		}
	}
	return t
}

func (t *rekeyTask) run(ctx context.Context) error {
	rt, plan := t.rt, t.plan
	view, src := plan.View, plan.Source
	group := view.RekeyGroup(rt.opts.Cluster)
	out := view.RepartitionTopic(rt.opts.Cluster)
	start := kgo.NewOffset().AtStart()
	offs, err := rt.adm.FetchOffsets(ctx, group)
	if errors.Is(err, kerr.GroupIDNotFound) {
		err = nil // nothing committed yet
	}
	if err != nil {
		return fmt.Errorf("reading offsets of %s: %w", group, err)
	}
	if o, ok := offs.Lookup(src.Topic, t.sp); ok && o.Err == nil && o.At >= 0 {
		start = kgo.NewOffset().At(o.At)
	}
	cons, err := rt.consumer(fmt.Sprintf("%s-rekey-%d", view.Name, t.sp), src.Topic, t.sp, start)
	if err != nil {
		return err
	}
	defer cons.Close()
	prod, err := rt.client(fmt.Sprintf("%s-rekey-%d-out", view.Name, t.sp), kafka.ProducerOpts()...)
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
		if fetches.NumRecords() == 0 {
			continue
		}
		var recs, bad []*kgo.Record
		next := int64(-1)
		fetches.EachRecord(func(r *kgo.Record) {
			next = r.Offset + 1
			if r.Attrs.IsControl() {
				return
			}
			rec, err := t.rekey(r)
			if err != nil {
				bad = append(bad, rt.badRecord(view, r, err))
				return
			}
			if rec != nil {
				recs = append(recs, rec)
			}
		})
		for vp := int32(0); vp < view.Partitions; vp++ {
			recs = append(recs, &kgo.Record{Topic: out, Partition: vp,
				Headers: []kgo.RecordHeader{{Key: headerMarker, Value: encodeSrc(t.sp, next)}}})
		}
		recs = append(recs, bad...)
		if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			return fmt.Errorf("producing to %s: %w", out, err)
		}
		var commit kadmOffsets
		commit.add(src.Topic, t.sp, next)
		if err := commit.commit(ctx, rt, group); err != nil {
			return err
		}
	}
}

// rekey returns the repartition record of a source record, nil when the
// filter drops it.
func (t *rekeyTask) rekey(r *kgo.Record) (*kgo.Record, error) {
	row, _, err := t.codec.decode(r.Key, r.Value)
	if err != nil || row == nil {
		return nil, err
	}
	if t.filter != nil {
		keep, err := t.filter(row, t.env)
		if err != nil {
			return nil, err
		}
		if !Truthy(keep) {
			return nil, nil
		}
	}
	groups := make([]any, len(t.group))
	for i, g := range t.group {
		if groups[i], err = g(row, t.env); err != nil {
			return nil, err
		}
	}
	key := make([]any, len(t.plan.KeyGroup))
	for i, g := range t.plan.KeyGroup {
		key[i] = groups[g]
	}
	kb, err := EncodeKey(t.plan.View.KeyFormat, t.keyT, t.keyN, key)
	if err != nil {
		return nil, err
	}
	v, err := materialize.EncodeRow(row)
	if err != nil {
		return nil, err
	}
	return &kgo.Record{
		Topic:     t.plan.View.RepartitionTopic(t.rt.opts.Cluster),
		Partition: kafka.Partition(kb, t.plan.View.Partitions),
		Key:       kb,
		Value:     v,
		Timestamp: r.Timestamp,
		Headers:   []kgo.RecordHeader{{Key: headerSource, Value: encodeSrc(t.sp, r.Offset)}},
	}, nil
}

// kadmOffsets is a set of offsets to commit to a consumer group.
type kadmOffsets struct {
	offs kadm.Offsets
}

func (o *kadmOffsets) add(topic string, p int32, at int64) {
	if o.offs == nil {
		o.offs = make(kadm.Offsets)
	}
	o.offs.Add(kadm.Offset{Topic: topic, Partition: p, At: at, LeaderEpoch: -1})
}

// commit writes the offsets to group as a standalone (memberless)
// commit.
func (o *kadmOffsets) commit(ctx context.Context, rt *Runtime, group string) error {
	resp, err := rt.adm.CommitOffsets(ctx, group, o.offs)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		return fmt.Errorf("committing offsets of %s: %w", group, err)
	}
	return nil
}

func asPgError(err error) (*pgerr.Error, bool) { return pgerr.As(err) }
