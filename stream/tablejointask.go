package stream

// The join stage of a view over two tables joined on their keys: one
// task per partition keeps both tables' rows and writes each changed
// key's joined row (see tableJoinTask).

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/materialize"
	"github.com/basindb/basin/planner"
	"github.com/basindb/basin/serde"
)

// tableJoinTask is the join stage of a view over two tables joined on
// their keys (planner.TableJoin), for one partition, which both tables
// share. It reads the partition of each table and of each table's
// forwarding topic (the rows of the partition's keys that producers put
// elsewhere) into a store of its own: a row per side and key, with its
// record time. For each key a batch changes, it writes to its changelog
// (the view's ChangesTopic) the joined row the key has now: the left
// row's columns (NULLs when it has none), the right's, the key, at the
// later of the two rows' times; or, when the join has no row for the key
// any more, its removal. The view task reads that changelog as it reads
// a view's.
//
// Per batch, one transaction holds those rows and a marker with every
// input offset and the position: each table's partition up to the
// offset read. The store is written after the commit. After a crash or
// a takeover the store may be behind the last marker (its rows since
// then are applied again, writing nothing: what they changed is
// committed) or, having been a standby's, ahead of it (its rows since
// the marker are read again, and their keys' joined rows written, for
// they never were).
type tableJoinTask struct {
	rt    *Runtime
	plan  *planner.ViewPlan
	join  *planner.TableJoin
	state *TaskState
	sides [2]*joinSide
	// out is the changelog of joined rows; maxRecord the largest record
	// it takes (0: unknown).
	out       string
	maxRecord int
}

// joinSide is one table of a table join.
type joinSide struct {
	rel   *catalog.Relation
	codec *serde.Codec
	place *placement
	// fwd is the table's forwarding topic.
	fwd string
	// prefix starts the store keys of the side's rows.
	prefix byte
}

func newTableJoinTask(rt *Runtime, plan *planner.ViewPlan, ts *TaskState) *tableJoinTask {
	j := plan.Join
	t := &tableJoinTask{rt: rt, plan: plan, join: j, state: ts, out: plan.View.ChangesTopic(rt.opts.Cluster)}
	for i, rel := range []*catalog.Relation{j.Left, j.Right} {
		codec := serde.NewCodec(rel)
		t.sides[i] = &joinSide{rel: rel, codec: codec, place: newPlacement(rel, codec, ts.Partition),
			fwd: rel.RepartitionTopic(rt.opts.Cluster), prefix: "lr"[i]}
	}
	return t
}

// inputs are the topics the task reads, a partition of each.
func (t *tableJoinTask) inputs() []string {
	return []string{t.sides[0].rel.Topic, t.sides[0].fwd, t.sides[1].rel.Topic, t.sides[1].fwd}
}

// side returns the side topic belongs to and whether it is its
// forwarding topic.
func (t *tableJoinTask) side(topic string) (*joinSide, bool) {
	for _, s := range t.sides {
		if topic == s.fwd {
			return s, true
		}
		if topic == s.rel.Topic {
			return s, false
		}
	}
	return nil, false
}

// tableJoinBatch is one transaction of a table join task.
type tableJoinBatch struct {
	cp    materialize.Checkpoint
	rows  map[string][]byte // store key → side row (nil: none), changed in this batch
	order []string
	// keys are the join keys whose joined rows the batch writes, in
	// order; a forced one is written even if its rows seem unchanged
	// (the store already had them, but no joined row was written).
	keys   map[string]bool
	korder []string
	recs   []*kgo.Record
}

func (t *tableJoinTask) newBatch(cp materialize.Checkpoint) *tableJoinBatch {
	return &tableJoinBatch{cp: cp.Clone(), rows: map[string][]byte{}, keys: map[string]bool{}}
}

func (t *tableJoinTask) run(ctx context.Context) error {
	rt, view, p := t.rt, t.plan.View, t.state.Partition
	store := rt.opts.DB.Store(materialize.StoreID{View: view.ChangesStore(), Partition: p})
	prod, err := rt.fencedProducer(ctx, fmt.Sprintf("%s-join-%d-txn", view.Name, p), view.ChangesTransactionalID(rt.opts.Cluster, p),
		t.out, p, t.maxRecord)
	if err != nil {
		return err
	}
	defer prod.Close()
	stored, err := store.Checkpoint()
	if err != nil {
		return err
	}
	marker, err := rt.lastMarker(ctx, t.out, p, stored)
	if err != nil {
		return err
	}
	// Read each input from the lower of the store's offset and the
	// marker's: below the marker's, records only bring the store up to
	// it; from it on, their keys' joined rows are written.
	cp := stored.Clone()
	cp.ChangelogOffset, cp.Position, cp.UpdatedAt = marker.ChangelogOffset, marker.Position.Clone(), marker.UpdatedAt
	if cp.Position == nil {
		cp.Position = materialize.Position{}
	}
	emitFrom := map[string]int64{}
	written := map[string]int64{} // the store's offsets
	offs := map[string]map[int32]kgo.Offset{}
	var guard inputGuard
	for _, topic := range t.inputs() {
		if err := rt.checkHalt(view, topic, p); err != nil {
			return err
		}
		s, sok := stored.Input[topic][p]
		m, mok := marker.Input[topic][p]
		if sok {
			written[topic] = s
		}
		if mok {
			emitFrom[topic] = m
		}
		next, applied := min(s, m), sok && mok
		if !applied {
			next = 0
			delete(cp.Input[topic], p)
		} else {
			setOffset(&cp.Input, topic, p, next)
		}
		from, err := rt.resumeAt(ctx, view, topic, p, next, applied)
		if err != nil {
			return err
		}
		offs[topic] = map[int32]kgo.Offset{p: from}
		if applied {
			guard.expect(topic, next)
		}
	}
	cons, err := rt.consumerOf(fmt.Sprintf("%s-join-%d", view.Name, p), offs, noReset)
	if err != nil {
		return err
	}
	defer cons.Close()
	left := t.sides[0].rel.Topic
	t.state.inputNext.Store(cp.Input[left][p])
	t.state.applied(cp.UpdatedAt)
	t.state.markRestored()
	var otherEnd atomic.Int64
	for {
		fetches, ok, err := rt.pollEnds(ctx, cons, func(topic string) *atomic.Int64 {
			if topic == left {
				return &t.state.inputEnd
			}
			return &otherEnd
		})
		if !ok {
			return err
		}
		if fetches.NumRecords() == 0 {
			continue
		}
		if topic, q, next, back := guard.check(fetches); back {
			return rt.wentBack(ctx, view, topic, q, next)
		}
		b := t.newBatch(cp)
		var perr error
		fetches.EachRecord(func(r *kgo.Record) {
			if perr != nil {
				return
			}
			emit := true
			force := false
			if m, ok := emitFrom[r.Topic]; ok && r.Offset < m {
				emit = false
			} else if w, ok := written[r.Topic]; ok && r.Offset < w {
				force = true
			}
			perr = t.record(store, b, r, emit, force)
		})
		if perr != nil {
			return perr
		}
		if err := t.commit(ctx, prod, store, b); err != nil {
			return err
		}
		cp = b.cp
		t.state.publishPosition(cp.Position.Clone())
		t.state.inputNext.Store(cp.Input[left][p])
		t.state.applied(cp.UpdatedAt)
	}
}

// standby keeps a standby replica of the join stage: it reads both
// tables' partitions into the store, as the active does, and writes
// nothing to Kafka.
func (t *tableJoinTask) standby(ctx context.Context) error {
	rt, view, p := t.rt, t.plan.View, t.state.Partition
	store := rt.opts.DB.Store(materialize.StoreID{View: view.ChangesStore(), Partition: p})
	cp, err := store.Checkpoint()
	if err != nil {
		return err
	}
	offs := map[string]map[int32]kgo.Offset{}
	for _, topic := range t.inputs() {
		next, applied := cp.Input[topic][p]
		from, err := rt.resumeAt(ctx, view, topic, p, next, applied)
		if err != nil {
			return err
		}
		offs[topic] = map[int32]kgo.Offset{p: from}
	}
	cons, err := rt.consumerOf(fmt.Sprintf("%s-join-standby-%d", view.Name, p), offs, noReset)
	if err != nil {
		return err
	}
	defer cons.Close()
	t.state.markRestored()
	var end atomic.Int64
	for {
		fetches, ok, err := rt.poll(ctx, cons, &end)
		if !ok {
			return err
		}
		if fetches.NumRecords() == 0 {
			continue
		}
		b := t.newBatch(cp)
		var perr error
		fetches.EachRecord(func(r *kgo.Record) {
			if perr == nil {
				perr = t.record(store, b, r, false, false)
			}
		})
		if perr != nil {
			return perr
		}
		if err := applyRows(store, b.order, b.rows, b.cp); err != nil {
			return err
		}
		cp = b.cp
	}
}

// record applies a record of a table or its forwarding topic to b's
// rows; with emit, its key's joined row is written (force: even if the
// store has the row already).
func (t *tableJoinTask) record(store *materialize.Store, b *tableJoinBatch, r *kgo.Record, emit, force bool) error {
	p := t.state.Partition
	setOffset(&b.cp.Input, r.Topic, p, r.Offset+1)
	if r.Attrs.IsControl() {
		return nil
	}
	s, forwarded := t.side(r.Topic)
	if s == nil {
		return fmt.Errorf("join %s/%d: a record of topic %s, which it does not read", t.plan.View.Name, p, r.Topic)
	}
	row := make(catalog.Row, len(s.rel.Schema.Columns)+1)
	tombstone, err := s.codec.DecodeInto(row[:len(row)-1], r.Key, r.Value)
	if err != nil {
		return nil // the table's own task logs it
	}
	if _, misplaced := s.place.owner(r.Key, row); misplaced && !forwarded {
		return nil // its key's partition has it, forwarded by the table
	}
	k := row[s.rel.Schema.KeyIndexes()[0]]
	if k == nil {
		return nil // the table's own task logs it
	}
	jkey, err := materialize.EncodeKey(nil, []any{k})
	if err != nil {
		return err
	}
	if emit && !b.keys[string(jkey)] {
		if _, ok := b.keys[string(jkey)]; !ok {
			b.korder = append(b.korder, string(jkey))
		}
		b.keys[string(jkey)] = force
	}
	if forwarded {
		// The table forwards before it checkpoints, so a record may
		// come again: what its source partition's offsets passed is
		// dropped, as the table's own task does.
		v, _ := hasHeader(r, headerSource)
		q, off, err := decodeSrc(v)
		if err != nil {
			return fmt.Errorf("forwarded record at %s/%d@%d: %w", r.Topic, p, r.Offset, err)
		}
		from := forwardedFrom(s.fwd)
		if seen, ok := b.cp.Input[from][q]; ok && off < seen {
			return nil
		}
		setOffset(&b.cp.Input, from, q, off+1)
	}
	var v []byte
	if !tombstone {
		rowtime, err := s.codec.Rowtime(row, r.Timestamp)
		if err != nil {
			return nil // the table's own task logs it
		}
		row[len(row)-1] = rowtime
		if v, err = materialize.EncodeRow(row); err != nil {
			return err
		}
	}
	skey := string(append([]byte{s.prefix}, jkey...))
	if _, ok := b.rows[skey]; !ok {
		b.order = append(b.order, skey)
	}
	b.rows[skey] = v
	if b.cp.UpdatedAt.Before(r.Timestamp) {
		b.cp.UpdatedAt = r.Timestamp
	}
	return nil
}

// get returns the side row of store key skey as of b: its change in b,
// else the store's (before b). changed is whether b changed it.
func (t *tableJoinTask) get(store *materialize.Store, b *tableJoinBatch, skey string) (now, before []byte, err error) {
	before, _, err = store.Get([]byte(skey))
	if err != nil {
		return nil, nil, err
	}
	if v, ok := b.rows[skey]; ok {
		return v, before, nil
	}
	return before, before, nil
}

// joined returns the changelog record of join key jkey, whose side rows
// are l and r (nil: none): the joined row, or its removal when the join
// has none.
func (t *tableJoinTask) joined(jkey string, l, r []byte) (*kgo.Record, error) {
	rec := &kgo.Record{Topic: t.out, Partition: t.state.Partition, Key: []byte(jkey)}
	if !t.join.Keeps(l != nil, r != nil) {
		return rec, nil
	}
	na, nb := len(t.join.Left.Schema.Columns), len(t.join.Right.Schema.Columns)
	row := make(catalog.Row, na+nb+1)
	var at int64
	for i, side := range [][]byte{l, r} {
		if side == nil {
			continue
		}
		vals, err := materialize.DecodeRow(side)
		if err != nil {
			return nil, fmt.Errorf("join %s/%d: stored row: %w", t.plan.View.Name, t.state.Partition, err)
		}
		n := len(vals) - 1
		if i == 0 {
			copy(row[:na], vals[:n])
		} else {
			copy(row[na:na+nb], vals[:n])
		}
		if ms, ok := vals[n].(int64); ok && ms > at {
			at = ms
		}
	}
	key, err := materialize.DecodeKey([]byte(jkey))
	if err != nil {
		return nil, err
	}
	row[na+nb] = key[0]
	if rec.Value, _, err = AppendStored(nil, nil, true, row, nil); err != nil {
		return nil, err
	}
	rec.Timestamp = time.UnixMilli(at)
	return rec, nil
}

// commit writes the joined rows of b's keys and a marker in one
// transaction, then b's side rows and checkpoint to the store.
func (t *tableJoinTask) commit(ctx context.Context, prod *kgo.Client, store *materialize.Store, b *tableJoinBatch) error {
	p := t.state.Partition
	for _, jkey := range b.korder {
		l, lBefore, err := t.get(store, b, "l"+jkey)
		if err != nil {
			return err
		}
		r, rBefore, err := t.get(store, b, "r"+jkey)
		if err != nil {
			return err
		}
		had, has := t.join.Keeps(lBefore != nil, rBefore != nil), t.join.Keeps(l != nil, r != nil)
		if !b.keys[jkey] && (!had && !has || string(l) == string(lBefore) && string(r) == string(rBefore)) {
			continue // nothing to write: no row before or after, or the same
		}
		rec, err := t.joined(jkey, l, r)
		if err != nil {
			return err
		}
		if err := tooLarge(t.maxRecord, rec, t.out); err != nil {
			// A joined row too large for the changelog: the view would
			// miss it. The task stops, naming it, rather than lose it.
			return fmt.Errorf("join %s/%d: %w", t.plan.View.Name, p, err)
		}
		b.recs = append(b.recs, rec)
	}
	// The position: how far the partition of each table is read.
	for _, s := range t.sides {
		if off, ok := b.cp.Input[s.rel.Topic][p]; ok {
			b.cp.Position.Advance(s.rel.Topic, p, off)
		}
	}
	return commitMarked(ctx, prod, store, t.out, p, t.out, b.recs, &b.cp, b.order, b.rows)
}
