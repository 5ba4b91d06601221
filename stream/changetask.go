package stream

// The change task: for a view grouped over a table by other than the
// table's key, one per table partition sends each change of a table row
// to the view partitions of its old and new groups (see changeTask).

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/eval"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/kafka"
	"github.com/basindb/basin/materialize"
	"github.com/basindb/basin/planner"
)

// headerRetract is, on a repartition record of a change task, the row
// the table's key had before (the row encoding of its columns and
// ROWTIME): its view partition takes it back out of its group. The
// record's value, when not nil, is the row the key has now, which the
// partition adds.
const headerRetract = "basin.retract"

// headerPosition is, on a position marker of the change stage of a view
// that regroups a view or a join, the position (a checkpoint's) that the
// rows of the stage's partition sent up to the marker reflect.
const headerPosition = "basin.position"

// changeTask is the re-keying stage of a view grouped over a table by
// other than the table's key (planner.ViewPlan.Retract with
// Repartition), for one table partition. A table row that changes moves
// between groups, which live in other view partitions: the stage keeps
// the last row of each key that passed the view's WHERE (a store, with a
// changelog of its own), and for each change sends the old row to the
// partition of its group, to be taken back, and the new one to the
// partition of its group, to be added (one record when both are the
// same partition). A deleted row, or one that stops matching WHERE, is
// only taken back.
//
// Unlike rekeyTask it is transactional, since its store must move with
// what it sent: per batch, one transaction holds the repartition
// records, a position marker for every view partition, the changed rows
// of its changelog and a marker with its input offset; its store is
// written after the commit. A crash at any point sends nothing twice and
// loses nothing. A record whose WHERE, group or aggregate arguments fail
// to evaluate is skipped into the processing log, the key's last row
// staying as it was, so that what the view partitions add is always
// what can be taken back.
type changeTask struct {
	rekeyer
	args []eval.Expr // the aggregates' arguments
	// input is the topic the task reads: the table's, or for a view
	// that regroups a view or a join (planner.ViewPlan.Regroups), the
	// changelog of that view or of the join stage, whose records are
	// rows (and removals) with markers carrying the position they
	// reflect. rows is set then.
	input string
	rows  bool
	// fwd is the table's forwarding topic, which the task reads too:
	// the records of the partition's keys that producers put on other
	// partitions, which the table's tasks forward here (placement); the
	// task skips those it finds on its own partition, and place finds
	// them.
	fwd   string
	place *placement
}

func newChangeTask(rt *Runtime, plan *planner.ViewPlan, ts *TaskState, ends *sourceEnds) *changeTask {
	t := &changeTask{rekeyer: newRekeyer(rt, plan, ts, ends), input: plan.Source.Topic}
	if plan.Regroups() {
		t.input, t.rows = regroupInput(rt, plan), true
	} else {
		t.fwd = plan.Source.RepartitionTopic(rt.opts.Cluster)
		t.place = newPlacement(plan.Source, t.codec, ts.Partition)
	}
	for _, a := range plan.Aggs {
		if a.Arg != nil {
			t.args = append(t.args, eval.Compile(a.Arg))
		}
	}
	return t
}

// regroupInput is the changelog a view that regroups a view or a join
// reads: the join stage's, or the view's.
func regroupInput(rt *Runtime, plan *planner.ViewPlan) string {
	if plan.Join != nil {
		return plan.View.ChangesTopic(rt.opts.Cluster)
	}
	return plan.Source.ChangelogTopic(rt.opts.Cluster)
}

// changeBatch is one transaction of a change task.
type changeBatch struct {
	cp      materialize.Checkpoint
	recs    []*kgo.Record     // repartition records
	bad     []*kgo.Record     // processing-log records
	changed map[string][]byte // key → last row (nil: none), in this batch
	order   []string          // the keys of changed, in order first changed
}

func (t *changeTask) run(ctx context.Context) error {
	rt, plan, sp := t.rt, t.plan, t.sp
	view := plan.View
	changelog, storeName, txnID := view.ChangesTopic(rt.opts.Cluster), view.ChangesStore(), view.ChangesTransactionalID(rt.opts.Cluster, sp)
	if t.rows {
		changelog, storeName, txnID = view.RegroupTopic(rt.opts.Cluster), view.RegroupStore(), view.RegroupTransactionalID(rt.opts.Cluster, sp)
	}
	store := rt.opts.DB.Store(materialize.StoreID{View: storeName, Partition: sp})
	prod, err := rt.fencedProducer(ctx, fmt.Sprintf("%s-changes-%d-txn", view.Name, sp), txnID, changelog, sp, t.maxRecord)
	if err != nil {
		return err
	}
	defer prod.Close()
	cp, err := rt.restore(ctx, store, changelog, sp)
	if err != nil {
		return err
	}
	if err := rt.checkHalt(view, t.input, sp); err != nil {
		return err
	}
	offs := map[string]map[int32]kgo.Offset{}
	var guard inputGuard
	for _, topic := range []string{t.input, t.fwd} {
		if topic == "" {
			continue
		}
		next, applied := cp.Input[topic][sp]
		from, err := rt.resumeAt(ctx, view, topic, sp, next, applied)
		if err != nil {
			return err
		}
		offs[topic] = map[int32]kgo.Offset{sp: from}
		if applied {
			guard.expect(topic, sp, next)
		}
	}
	next := cp.Input[t.input][sp]
	cons, err := rt.consumerOf(fmt.Sprintf("%s-changes-%d", view.Name, sp), offs, noReset)
	if err != nil {
		return err
	}
	defer cons.Close()
	if ends, err := kafka.EndOffsets(ctx, rt.adm, t.input); err == nil {
		t.ends.ends[sp].Store(ends[sp])
	}
	t.state.inputNext.Store(next)
	t.state.markRestored()
	for {
		var fwdEnd atomic.Int64
		fetches, ok, err := rt.pollEnds(ctx, cons, func(topic string) *atomic.Int64 {
			if topic == t.fwd {
				return &fwdEnd
			}
			return &t.ends.ends[sp]
		})
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
		if topic, p, next, back := guard.check(fetches); back {
			return rt.wentBack(ctx, view, topic, p, next)
		}
		b := &changeBatch{cp: cp.Clone(), changed: map[string][]byte{}}
		var perr error
		fetches.EachRecord(func(r *kgo.Record) {
			if perr == nil {
				perr = t.change(store, b, r)
			}
		})
		if perr != nil {
			return perr
		}
		if err := t.commit(ctx, prod, store, changelog, b); err != nil {
			return err
		}
		cp = b.cp
		t.state.inputNext.Store(cp.Input[t.input][sp])
		t.state.errors.Add(int64(len(b.bad)))
	}
}

// change adds what table record r changes to b.
func (t *changeTask) change(store *materialize.Store, b *changeBatch, r *kgo.Record) error {
	src := t.plan.Source
	setOffset(&b.cp.Input, r.Topic, t.sp, r.Offset+1)
	if r.Attrs.IsControl() {
		return nil
	}
	if t.rows {
		return t.changeRow(store, b, r)
	}
	forwarded := r.Topic == t.fwd
	if forwarded {
		// The table forwards before it checkpoints, so a record may
		// come again: what its source partition's offsets passed is
		// dropped, as the table's own task does.
		v, _ := hasHeader(r, headerSource)
		q, off, err := decodeSrc(v)
		if err != nil {
			return fmt.Errorf("forwarded record at %s/%d@%d: %w", t.fwd, t.sp, r.Offset, err)
		}
		from := forwardedFrom(t.fwd)
		if seen, ok := b.cp.Input[from][q]; ok && off < seen {
			return nil
		}
		setOffset(&b.cp.Input, from, q, off+1)
		r = &kgo.Record{Topic: src.Topic, Partition: q, Offset: off, Timestamp: r.Timestamp, Key: r.Key, Value: r.Value}
	}
	ncols := len(src.Schema.Columns)
	row := t.row[:ncols+1]
	tombstone, err := t.codec.DecodeRecordInto(row[:ncols], r)
	if err != nil {
		b.bad = append(b.bad, t.rt.badRecord(t.plan.View, r, err))
		return nil
	}
	if _, misplaced := t.place.owner(r.Key, row); misplaced && !forwarded {
		return nil // its key's partition has it, forwarded by the table
	}
	keyVals := make([]any, 0, len(t.codec.KeyIndex()))
	for _, k := range t.codec.KeyIndex() {
		if row[k] == nil {
			b.bad = append(b.bad, t.rt.badRecord(t.plan.View, r, pgerr.New(pgerr.NullValueNotAllowedDataException,
				"record has a NULL key, and table %s keeps a row per key", src.Name)))
			return nil
		}
		keyVals = append(keyVals, row[k])
	}
	skeyBytes, err := materialize.EncodeKey(nil, keyVals)
	if err != nil {
		return err
	}
	skey := string(skeyBytes)
	var now []byte // the key's row from now on, nil for none
	if !tombstone {
		if row[ncols], err = t.codec.Rowtime(row, r.Timestamp); err != nil {
			b.bad = append(b.bad, t.rt.badRecord(t.plan.View, r, err))
			return nil
		}
		keep, ok, err := t.admit(row, r, b)
		if err != nil || !ok {
			return err
		}
		if keep {
			if now, err = materialize.EncodeRow(row); err != nil {
				return err
			}
		}
	}
	return t.send(store, b, r, skey, now, row)
}

// changeRow adds what record r of the changelog of rows the task reads
// changes to b: a marker's position becomes the batch's, which its
// markers pass on to the view partitions; a row replaces its key's.
func (t *changeTask) changeRow(store *materialize.Store, b *changeBatch, r *kgo.Record) error {
	ncols := len(t.plan.Source.Schema.Columns)
	row := t.row[:ncols+1]
	c, err := decodeChangelog(r, ncols, row)
	switch {
	case err != nil:
		return err
	case c.marker != nil:
		b.cp.Position, b.cp.UpdatedAt = c.marker.Position.Clone(), c.marker.UpdatedAt
		return nil
	case c.fence:
		return nil
	}
	var now []byte
	if c.present {
		keep, ok, err := t.admit(row, r, b)
		if err != nil || !ok {
			return err
		}
		if keep {
			if now, err = materialize.EncodeRow(row); err != nil {
				return err
			}
		}
	}
	return t.send(store, b, r, string(r.Key), now, row)
}

// admit evaluates WHERE and the aggregates' arguments over row, as the
// view partition will, first: keep is whether the row is in the view's
// input;
// ok is false when the record was skipped into b.bad, the key keeping
// its last row, so that every row sent can be taken back.
func (t *changeTask) admit(row catalog.Row, r *kgo.Record, b *changeBatch) (keep, ok bool, err error) {
	keep = true
	if t.filter != nil {
		v, err := t.filter(row, t.env)
		if err != nil {
			b.bad = append(b.bad, t.rt.badRecord(t.plan.View, r, err))
			return false, false, nil
		}
		keep = eval.Truthy(v)
	}
	if keep {
		for _, a := range t.args {
			if _, err := a(row, t.env); err != nil {
				b.bad = append(b.bad, t.rt.badRecord(t.plan.View, r, err))
				return false, false, nil
			}
		}
	}
	return keep, true, nil
}

// send makes the records of a change of key skey's last row, to now
// (nil: none; row is it, decoded), for its old and new groups.
func (t *changeTask) send(store *materialize.Store, b *changeBatch, r *kgo.Record, skey string, now []byte, row catalog.Row) error {
	skeyBytes := []byte(skey)
	var err error
	before, ok := b.changed[skey]
	if !ok {
		if before, _, err = store.Get(skeyBytes); err != nil {
			return err
		}
		b.order = append(b.order, skey)
	}
	b.changed[skey] = now
	if before == nil && now == nil {
		return nil
	}
	var oldKey, newKey []byte
	var oldP, newP int32
	if before != nil {
		old, err := materialize.DecodeRow(before)
		if err != nil {
			return fmt.Errorf("change task %s/%d: stored row of key %x: %w", t.plan.View.Name, t.sp, skeyBytes, err)
		}
		if oldKey, err = t.viewKey(old); err != nil {
			return fmt.Errorf("change task %s/%d: the group of a row it sent before: %w", t.plan.View.Name, t.sp, err)
		}
		oldP = kafka.Partition(oldKey, t.plan.View.Partitions)
	}
	if now != nil {
		if newKey, err = t.viewKey(row); err != nil {
			b.changed[skey] = before // the record is skipped: the key keeps its row
			b.bad = append(b.bad, t.rt.badRecord(t.plan.View, r, err))
			return nil
		}
		newP = kafka.Partition(newKey, t.plan.View.Partitions)
	}
	srcHdr := kgo.RecordHeader{Key: headerSource, Value: encodeSrc(t.sp, r.Offset)}
	n := len(b.recs)
	switch {
	case before != nil && now != nil && oldP == newP:
		b.recs = append(b.recs, &kgo.Record{Topic: t.out, Partition: newP, Key: newKey, Value: now, Timestamp: r.Timestamp,
			Headers: []kgo.RecordHeader{srcHdr, {Key: headerRetract, Value: before}}})
	default:
		if before != nil {
			b.recs = append(b.recs, &kgo.Record{Topic: t.out, Partition: oldP, Key: oldKey, Timestamp: r.Timestamp,
				Headers: []kgo.RecordHeader{srcHdr, {Key: headerRetract, Value: before}}})
		}
		if now != nil {
			b.recs = append(b.recs, &kgo.Record{Topic: t.out, Partition: newP, Key: newKey, Value: now, Timestamp: r.Timestamp,
				Headers: []kgo.RecordHeader{srcHdr}})
		}
	}
	for _, rec := range b.recs[n:] {
		if err := tooLarge(t.maxRecord, rec, t.out); err != nil {
			b.recs, b.changed[skey] = b.recs[:n], before
			b.bad = append(b.bad, t.rt.badRecord(t.plan.View, r, err))
			return nil
		}
	}
	return nil
}

// viewKey returns the view key of row, nil for a key of NULLs.
func (t *changeTask) viewKey(row catalog.Row) ([]byte, error) {
	k, null, err := t.appendViewKey(nil, row)
	if err != nil || null {
		return nil, err
	}
	return k, nil
}

// commit writes b in one transaction: the repartition records, a marker
// of the input offset reached for every view partition, the processing
// log's records, the keys' last rows and the checkpoint to the changelog;
// then it applies the rows and the checkpoint to the store.
func (t *changeTask) commit(ctx context.Context, prod *kgo.Client, store *materialize.Store, changelog string, b *changeBatch) error {
	view := t.plan.View
	next := b.cp.Input[t.input][t.sp]
	recs := make([]*kgo.Record, 0, len(b.recs)+int(view.Partitions)+len(b.bad)+len(b.order)+1)
	recs = append(recs, b.recs...)
	hdrs := []kgo.RecordHeader{{Key: headerMarker, Value: encodeSrc(t.sp, next)}}
	if t.rows {
		// The position the rows sent so far reflect, which the view
		// partitions compose (viewTask.notePosition).
		hdrs = append(hdrs, kgo.RecordHeader{Key: headerPosition, Value: materialize.MarshalCheckpoint(materialize.Checkpoint{Position: b.cp.Position})})
	}
	for vp := int32(0); vp < view.Partitions; vp++ {
		recs = append(recs, &kgo.Record{Topic: t.out, Partition: vp, Headers: hdrs})
	}
	recs = append(recs, b.bad...)
	for _, k := range b.order {
		recs = append(recs, &kgo.Record{Topic: changelog, Partition: t.sp, Key: []byte(k), Value: b.changed[k]})
	}
	return commitMarked(ctx, t.state, prod, store, changelog, t.sp, t.out, recs, &b.cp, b.order, b.changed)
}
