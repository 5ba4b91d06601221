package stream

// The join stage of a view over two tables joined on their keys: one
// task per partition keeps both tables' rows and writes each changed
// key's joined row (see tableJoinTask).

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/eval"
	"github.com/basindb/basin/materialize"
	"github.com/basindb/basin/planner"
	"github.com/basindb/basin/serde"
)

// tableJoinTask is the join stage of a view over two tables
// (planner.TableJoin), for one partition of the left table. It reads
// that partition of the left table and of its forwarding topic (the
// rows of the partition's keys that producers put elsewhere), and the
// same of the right table (a primary-key join) or all its partitions
// (a foreign-key join), into a store of its own: a row per side and
// key, with its record time (and a left row with the right key it looks
// up), and for a foreign-key join an index of the left rows by that
// key. For each key whose joined row a batch changes, it writes to its
// changelog (the view's ChangesTopic) the joined row the key has now:
// the left row's columns (NULLs when it has none), the right's, the
// key, at the later of the two rows' times; or, when the join has no
// row for the key any more, its removal. The view task reads that
// changelog as it reads a view's.
//
// Per batch, one transaction holds those rows, skipped records for the
// processing log and a marker with every input offset and the position:
// each table's partitions up to the offsets read. The store is written
// after the commit. After a crash or a takeover the store may be behind
// the last marker or, having been a standby's, ahead of it (see
// committedIn, appliedIn): the stage reads each input again from the
// lower of the two, and until it is past the higher, it writes the
// joined row of every key it touches as the key's rows are then, changed
// or not; the last such write of a key is of the rows the inputs end
// with, whatever the store held on the way.
type tableJoinTask struct {
	rt    *Runtime
	plan  *planner.ViewPlan
	join  *planner.TableJoin
	state *TaskState
	sides [2]*joinSide
	// foreign computes the right key a left row looks up, over fkRow (a
	// Joined input row with the left row's columns); nil in a
	// primary-key join.
	foreign eval.Expr
	fkRow   catalog.Row
	env     *eval.Env
	// home, in a join of relations partitioned apart (Replaced), gives
	// the partition of the left relation a key is in; a right row of
	// another partition's key is not this stage's.
	home func(k any) (int32, error)
	// out is the changelog of joined rows; maxRecord the largest record
	// it takes (0: unknown).
	out       string
	maxRecord int
}

// joinSide is one table of a table join, or a view.
type joinSide struct {
	rel   *catalog.Relation
	codec *serde.Codec
	// topic is what the side is read from: the table's topic, or the
	// view's changelog (rows is set then).
	topic string
	rows  bool
	// positions are, for a view, the topics its positions are in
	// (planner.TableJoin.Views): its changelog's markers carry them.
	positions []planner.PositionSource
	// places place the records of each partition the side reads (nil
	// for a view, whose changelog has every row in its place).
	places map[int32]*placement
	// fwd is the table's forwarding topic ("" for a view).
	fwd string
	// prefix starts the store keys of the side's rows.
	prefix byte
}

// Store key prefixes of a table join's state: the left rows, the right
// rows, and the index of the left rows by the right key they look up
// (a foreign-key join's: prefixIndex, the right key, the left key).
const (
	prefixLeft  = 'l'
	prefixRight = 'r'
	prefixIndex = 'i'
)

func newTableJoinTask(rt *Runtime, plan *planner.ViewPlan, ts *TaskState) *tableJoinTask {
	j := plan.Join
	t := &tableJoinTask{rt: rt, plan: plan, join: j, state: ts, out: plan.View.ChangesTopic(rt.opts.Cluster), env: &eval.Env{}}
	for i, rel := range []*catalog.Relation{j.Left, j.Right} {
		s := &joinSide{rel: rel, topic: joinInput(rt, j, i), rows: j.Views[i] != nil, positions: j.Views[i],
			places: map[int32]*placement{}, prefix: []byte{prefixLeft, prefixRight}[i]}
		if !s.rows {
			s.codec, s.fwd = serde.NewCodec(rel, rt.opts.Registry), rel.RepartitionTopic(rt.opts.Cluster)
		}
		place := func(q int32) *placement {
			if s.rows {
				return nil
			}
			return newPlacement(rel, s.codec, q)
		}
		if i == 1 && (j.Foreign != nil || j.Replaced) {
			for q := int32(0); q < rel.Partitions; q++ {
				s.places[q] = place(q)
			}
		} else {
			s.places[ts.Partition] = place(ts.Partition)
		}
		t.sides[i] = s
	}
	if j.Replaced {
		codec, part := serde.NewCodec(j.Left, rt.opts.Registry), j.Left.PartitionerOf()
		t.home = func(k any) (int32, error) {
			kb, err := codec.EncodeKey([]any{k})
			return part.Partition(kb, j.Left.Partitions), err
		}
	}
	if j.Foreign != nil {
		t.foreign = eval.Compile(j.Foreign)
		t.fkRow = make(catalog.Row, len(planner.RecordInput(j.Joined)))
	}
	return t
}

// joinInput is the topic a table join reads side i from: the table's,
// or the changelog of the view.
func joinInput(rt *Runtime, j *planner.TableJoin, i int) string {
	rel := []*catalog.Relation{j.Left, j.Right}[i]
	if i == 0 && j.Prev != nil {
		return rel.ChangesTopic(rt.opts.Cluster) // the stage before's
	}
	if j.Views[i] != nil {
		return rel.ChangelogTopic(rt.opts.Cluster)
	}
	return rel.Topic
}

// sidePosition names, in a join stage's checkpoint, the offsets of
// topic that partition q of a view side's changelog has said (by its
// last marker read) its rows reflect.
func sidePosition(changelog string, q int32, topic string) string {
	return fmt.Sprintf("\x00position:%s#%d:%s", changelog, q, topic)
}

// committedIn names, in a table join stage's checkpoint, the offsets of
// an input topic up to which the joined rows are committed. They equal
// the topic's own entries when the active writes them; a standby moves
// the topic's own on as it reads the tables, and leaves these, so that
// the stage it becomes knows which of its rows still need their joined
// rows written even when no marker follows its own last one.
func committedIn(topic string) string { return "\x00committed:" + topic }

// joinCommitted, when a test sets it, is called after each commit of a
// join stage with whether the stage was recovering (see run); an error
// ends the run then, as a crash right after the commit would.
var joinCommitted atomic.Pointer[func(view string, p int32, recovering bool) error]

// appliedIn names, in a table join stage's checkpoint, the offsets of an
// input topic up to which the store's rows may reflect it, when that is
// beyond where the stage reads it from: a stage that takes over from a
// store ahead of the marker reads again from the marker, and a crash
// before it is past the store's offsets must not make the next start
// take the store for a baseline before it is past them again.
func appliedIn(topic string) string { return "\x00applied:" + topic }

// topicPart is a partition of a topic the task reads.
type topicPart struct {
	topic string
	p     int32
}

// inputs are the partitions the task reads.
func (t *tableJoinTask) inputs() []topicPart {
	var out []topicPart
	for _, s := range t.sides {
		for q := range s.places {
			out = append(out, topicPart{s.topic, q})
			if s.fwd != "" {
				out = append(out, topicPart{s.fwd, q})
			}
		}
	}
	return out
}

// side returns the side topic belongs to and whether it is its
// forwarding topic.
func (t *tableJoinTask) side(topic string) (*joinSide, bool) {
	for _, s := range t.sides {
		if s.fwd != "" && topic == s.fwd {
			return s, true
		}
		if topic == s.topic {
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
	// keys are the keys whose joined rows the batch writes, in order;
	// a forced one is written even if its rows seem unchanged (the
	// store already had them, but no joined row was written). rkeys
	// are, in a foreign-key join, the right keys the batch changed,
	// whose left rows' joined rows it writes.
	keys   map[string]bool
	korder []string
	rkeys  map[string]bool
	rorder []string
	// index holds, per right key, the index entries the batch changed
	// (left key → whether it looks the right key up now).
	index map[string]map[string]bool
	// stored caches the store's rows (nil: none) the batch has read.
	stored map[string][]byte
	recs   []*kgo.Record
	bad    []*kgo.Record
}

func (t *tableJoinTask) newBatch(cp materialize.Checkpoint) *tableJoinBatch {
	return &tableJoinBatch{cp: cp.Clone(), rows: map[string][]byte{}, keys: map[string]bool{}, rkeys: map[string]bool{},
		index: map[string]map[string]bool{}, stored: map[string][]byte{}}
}

// mark adds key to the keys of set, in order, forced if force is.
func mark(set map[string]bool, order *[]string, key string, force bool) {
	if was, ok := set[key]; !ok {
		*order = append(*order, key)
	} else {
		force = force || was
	}
	set[key] = force
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
	// marker's. Until every input has passed both, the store before a
	// batch is not what the joined rows written so far reflect: it is
	// behind the marker, or ahead of it with rows never joined, or, read
	// again from behind its rows, holds older rows of some keys for a
	// while. So every key a batch touches has its joined row written as
	// it is now, changed or not: the last time a key is touched, its
	// rows are the ones the inputs end with.
	cp := stored.Clone()
	cp.ChangelogOffset, cp.Position, cp.UpdatedAt = marker.ChangelogOffset, marker.Position.Clone(), marker.UpdatedAt
	if cp.Position == nil {
		cp.Position = materialize.Position{}
	}
	recovered := map[topicPart]int64{} // the higher of the two
	offs := map[string]map[int32]kgo.Offset{}
	var guard inputGuard
	for _, in := range t.inputs() {
		topic, q := in.topic, in.p
		if err := rt.checkHalt(view, topic, q); err != nil {
			return err
		}
		// The store's rows reflect the topic up to s, or, when a stage
		// that was reading again from a marker behind them stopped
		// before it was past them, up to its read offset for the keys
		// it read again and to applied for the others: it reads on from
		// s, and until applied its rows are no baseline either.
		s, sok := stored.Input[topic][q]
		applied := s
		if a, ok := stored.Input[appliedIn(topic)][q]; ok && a > s {
			applied = a
		}
		m, mok := marker.Input[committedIn(topic)][q]
		if sok || mok {
			recovered[in] = max(applied, m)
		}
		if sok {
			setOffset(&cp.Input, appliedIn(topic), q, applied)
		}
		next, resume := min(s, m), sok && mok
		if !resume {
			next = 0
			delete(cp.Input[topic], q)
		} else {
			setOffset(&cp.Input, topic, q, next)
		}
		from, err := rt.resumeAt(ctx, view, topic, q, next, resume)
		if err != nil {
			return err
		}
		if offs[topic] == nil {
			offs[topic] = map[int32]kgo.Offset{}
		}
		offs[topic][q] = from
		if resume {
			guard.expect(topic, q, next)
		}
	}
	cons, err := rt.consumerOf(fmt.Sprintf("%s-join-%d", view.Name, p), offs, noReset)
	if err != nil {
		return err
	}
	defer cons.Close()
	left := t.sides[0].topic
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
		t.state.tookIn(fetches)
		if err := warmSchemas(fetches, func(r *kgo.Record) *serde.Codec {
			if s, _ := t.side(r.Topic); s != nil && !s.rows {
				return s.codec
			}
			return nil
		}, t.sides[0].codec, t.sides[1].codec); err != nil {
			return err
		}
		if fetches.NumRecords() == 0 {
			continue
		}
		if topic, q, next, back := guard.check(fetches); back {
			return rt.wentBack(ctx, view, topic, q, next)
		}
		b := t.newBatch(cp)
		recovering := false
		for in, off := range recovered {
			if next := cp.Input[in.topic][in.p]; next >= off {
				delete(recovered, in)
			} else {
				recovering = true
			}
		}
		var perr error
		fetches.EachRecord(func(r *kgo.Record) {
			if perr != nil {
				return
			}
			perr = t.record(store, b, r, true, recovering)
		})
		if perr != nil {
			return perr
		}
		if err := t.commit(ctx, prod, store, b); err != nil {
			return err
		}
		if hook := joinCommitted.Load(); hook != nil {
			if err := (*hook)(view.Name, p, recovering); err != nil {
				return err
			}
		}
		cp = b.cp
		t.state.publishPosition(cp.Position.Clone())
		t.state.inputNext.Store(cp.Input[left][p])
		t.state.applied(cp.UpdatedAt)
		t.state.errors.Add(int64(len(b.bad)))
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
	return rt.followInputs(ctx, view, fmt.Sprintf("%s-join-standby-%d", view.Name, p), t.state, cp, t.inputs(),
		func(fetches kgo.Fetches, cp materialize.Checkpoint) (materialize.Checkpoint, error) {
			b := t.newBatch(cp)
			var perr error
			fetches.EachRecord(func(r *kgo.Record) {
				if perr == nil {
					perr = t.record(store, b, r, false, false)
				}
			})
			if perr != nil {
				return cp, perr
			}
			return b.cp, applyRows(store, b.order, b.rows, b.cp)
		})
}

// record applies a record of a table or its forwarding topic to b's
// rows; with emit, the joined rows it changes are written (force: even
// if the store has the row already).
func (t *tableJoinTask) record(store *materialize.Store, b *tableJoinBatch, r *kgo.Record, emit, force bool) error {
	q := r.Partition
	setOffset(&b.cp.Input, r.Topic, q, r.Offset+1)
	if r.Attrs.IsControl() {
		return nil
	}
	s, forwarded := t.side(r.Topic)
	if !s.reads(q) {
		return fmt.Errorf("join %s/%d: a record of %s/%d, which it does not read", t.plan.View.Name, t.state.Partition, r.Topic, q)
	}
	if s.rows {
		return t.rowRecord(store, b, s, r, emit, force)
	}
	left := s == t.sides[0]
	ncols := len(s.rel.Schema.Columns)
	row := make(catalog.Row, ncols+2) // the columns, ROWTIME, and a left row's right key
	tombstone, err := s.codec.DecodeRecordInto(row[:ncols], r)
	if err != nil {
		return nil // the table's own task logs it
	}
	if _, misplaced := s.places[q].owner(r.Key, row[:ncols]); misplaced && !forwarded {
		return nil // its key's partition has it, forwarded by the table
	}
	k := row[s.rel.Schema.KeyIndexes()[0]]
	if k == nil {
		return nil // the table's own task logs it
	}
	key, err := materialize.EncodeKey(nil, []any{k})
	if err != nil {
		return err
	}
	if forwarded {
		// The table forwards before it checkpoints, so a record may
		// come again: what its source partition's offsets passed is
		// dropped, as the table's own task does.
		v, _ := hasHeader(r, headerSource)
		sp, off, err := decodeSrc(v)
		if err != nil {
			return fmt.Errorf("forwarded record at %s/%d@%d: %w", r.Topic, q, r.Offset, err)
		}
		from := fmt.Sprintf("%s#%d", forwardedFrom(s.fwd), q)
		if seen, ok := b.cp.Input[from][sp]; ok && off < seen {
			// The store has it already, but the joined rows written so
			// far may not: a standby applied it, or a stage that read
			// its forwarding topic again from the start (the marker had
			// none of it) kept what its store had seen. The key's joined
			// row is written as the store has it, whether or not the
			// stage thinks it is recovering.
			if emit && (left || t.homeKey(string(key))) {
				t.touch(b, left, string(key), true)
			}
			return nil
		}
		setOffset(&b.cp.Input, from, sp, off+1)
	}
	var v []byte
	if !tombstone {
		rowtime, err := s.codec.Rowtime(row, r.Timestamp)
		if err != nil {
			return nil // the table's own task logs it
		}
		row[ncols] = rowtime
		var ok bool
		if v, ok, err = t.sideRow(b, left, row, k, r); err != nil || !ok {
			return err
		}
	}
	return t.put(store, b, s, string(key), v, r, emit, force)
}

// homeKey reports whether a right row of key is this stage's: always,
// but in a join of relations partitioned apart, where only the keys of
// the stage's partition of the left relation are.
func (t *tableJoinTask) homeKey(key string) bool {
	if t.home == nil {
		return true
	}
	k, err := materialize.DecodeKey([]byte(key))
	if err != nil || len(k) != 1 {
		return false
	}
	p, err := t.home(k[0])
	return err == nil && p == t.state.Partition
}

// reads reports whether the side (nil: none) reads partition q.
func (s *joinSide) reads(q int32) bool {
	if s == nil {
		return false
	}
	_, ok := s.places[q]
	return ok
}

// sideRow returns the stored row of a side's row (its columns, then
// ROWTIME, in row) with key k: with the right key it looks up, for a
// left row. ok is false when that failed and r went to b's skipped
// records: the key keeps its row.
func (t *tableJoinTask) sideRow(b *tableJoinBatch, left bool, row catalog.Row, k any, r *kgo.Record) (v []byte, ok bool, err error) {
	ncols := len(row) - 2
	if left {
		if row[ncols+1], err = t.lookupKey(row[:ncols], k); err != nil {
			b.bad = append(b.bad, t.rt.badRecord(t.plan.View, r, err))
			return nil, false, nil
		}
	}
	v, err = materialize.EncodeRow(row[:ncols+1+boolInt(left)])
	return v, err == nil, err
}

// rowRecord applies a record of a view side's changelog to b: a row
// (or its removal) replaces the key's, and a marker's position becomes
// what the side's partition reflects.
func (t *tableJoinTask) rowRecord(store *materialize.Store, b *tableJoinBatch, s *joinSide, r *kgo.Record, emit, force bool) error {
	ncols := len(s.rel.Schema.Columns)
	row := make(catalog.Row, ncols+2) // the columns, ROWTIME, and a left row's right key
	c, err := decodeChangelog(r, ncols, row)
	switch {
	case err != nil:
		return err
	case c.marker != nil:
		for topic, parts := range c.marker.Position {
			for q, off := range parts {
				setOffset(&b.cp.Input, sidePosition(s.topic, r.Partition, topic), q, off)
			}
		}
		return nil
	case c.fence:
		return nil
	}
	left := s == t.sides[0]
	var v []byte
	if c.present {
		var ok bool
		if v, ok, err = t.sideRow(b, left, row, row[s.rel.Schema.KeyIndexes()[0]], r); err != nil || !ok {
			return err
		}
	}
	return t.put(store, b, s, string(r.Key), v, r, emit, force)
}

// put makes v (nil: none) the row of key on side s in b.
func (t *tableJoinTask) put(store *materialize.Store, b *tableJoinBatch, s *joinSide, key string, v []byte, r *kgo.Record, emit, force bool) error {
	left := s == t.sides[0]
	if !left && !t.homeKey(key) {
		return nil // another partition's key (or one no left row can have)
	}
	skey := string(s.prefix) + key
	if left && t.foreign != nil {
		if err := t.reindex(store, b, key, skey, v); err != nil {
			return err
		}
	}
	if _, ok := b.rows[skey]; !ok {
		b.order = append(b.order, skey)
	}
	b.rows[skey] = v
	if emit {
		t.touch(b, left, key, force)
	}
	if b.cp.UpdatedAt.Before(r.Timestamp) {
		b.cp.UpdatedAt = r.Timestamp
	}
	return nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// touch marks what a change of the row of key on a side makes b write:
// the joined row of the key (a left key, or a primary-key join's key),
// or those of the left rows looking up a right key.
func (t *tableJoinTask) touch(b *tableJoinBatch, left bool, key string, force bool) {
	if left || t.foreign == nil {
		mark(b.keys, &b.korder, key, force)
		return
	}
	mark(b.rkeys, &b.rorder, key, force)
}

// lookupKey returns the right key a left row (its columns) with key k
// looks up: k in a primary-key join, else its Foreign value.
func (t *tableJoinTask) lookupKey(cols catalog.Row, k any) (any, error) {
	if t.foreign == nil {
		return k, nil
	}
	clear(t.fkRow)
	copy(t.fkRow, cols)
	return t.foreign(t.fkRow, t.env)
}

// reindex moves the index entry of left key lkey (store key skey) from
// the right key its row looked up to the one its new row v (nil: none)
// does.
func (t *tableJoinTask) reindex(store *materialize.Store, b *tableJoinBatch, lkey, skey string, v []byte) error {
	now, _, err := t.get(store, b, skey)
	if err != nil {
		return err
	}
	oldFK, err := t.rowLookup(now)
	if err != nil {
		return err
	}
	newFK, err := t.rowLookup(v)
	if err != nil {
		return err
	}
	if oldFK == newFK {
		return nil
	}
	for _, e := range []struct {
		fk string
		in bool
	}{{oldFK, false}, {newFK, true}} {
		if e.fk == "" {
			continue
		}
		ikey := string(prefixIndex) + e.fk + lkey
		if _, ok := b.rows[ikey]; !ok {
			b.order = append(b.order, ikey)
		}
		b.rows[ikey] = nil
		if e.in {
			b.rows[ikey] = []byte{1}
		}
		if b.index[e.fk] == nil {
			b.index[e.fk] = map[string]bool{}
		}
		b.index[e.fk][lkey] = e.in
	}
	return nil
}

// rowLookup returns the encoded right key a stored left row looks up,
// "" for none (no row, or a NULL key).
func (t *tableJoinTask) rowLookup(v []byte) (string, error) {
	if v == nil {
		return "", nil
	}
	vals, err := materialize.DecodeRow(v)
	if err != nil {
		return "", fmt.Errorf("join %s/%d: stored row: %w", t.plan.View.Name, t.state.Partition, err)
	}
	fk := vals[len(t.join.Left.Schema.Columns)+1]
	if fk == nil {
		return "", nil
	}
	k, err := materialize.EncodeKey(nil, []any{fk})
	return string(k), err
}

// referencing returns the left keys whose rows look up right key rkey,
// as of b; it is an iterator over the store's index, which one batch's
// calls share.
func (t *tableJoinTask) referencing(store *materialize.Store, it *materialize.Iter, b *tableJoinBatch, rkey string) ([]string, error) {
	prefix := []byte(string(prefixIndex) + rkey)
	changed := b.index[rkey]
	var out []string
	for ok := it.SeekGE(prefix); ok && bytes.HasPrefix(it.Key(), prefix); ok = it.Next() {
		lkey := string(it.Key()[len(prefix):])
		if in, ok := changed[lkey]; !ok || in {
			out = append(out, lkey)
		}
	}
	if err := it.Error(); err != nil {
		return nil, err
	}
	for lkey, in := range changed {
		if in {
			if _, ok, err := store.Get([]byte(string(prefixIndex) + rkey + lkey)); err != nil {
				return nil, err
			} else if !ok {
				out = append(out, lkey)
			}
		}
	}
	return out, nil
}

// get returns the row of store key skey as of b: its change in b, else
// the store's (before b); before is the store's.
func (t *tableJoinTask) get(store *materialize.Store, b *tableJoinBatch, skey string) (now, before []byte, err error) {
	before, ok := b.stored[skey]
	if !ok {
		if before, _, err = store.Get([]byte(skey)); err != nil {
			return nil, nil, err
		}
		b.stored[skey] = before
	}
	if v, ok := b.rows[skey]; ok {
		return v, before, nil
	}
	return before, before, nil
}

// joined returns the changelog record of key, whose side rows are l and
// r (nil: none): the joined row, or its removal when the join has none.
func (t *tableJoinTask) joined(key string, l, r []byte) (*kgo.Record, error) {
	rec := &kgo.Record{Topic: t.out, Partition: t.state.Partition, Key: []byte(key)}
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
		n, at0 := na, 0
		if i == 1 {
			n, at0 = nb, na
		}
		copy(row[at0:at0+n], vals[:n])
		if ms, ok := vals[n].(int64); ok && ms > at {
			at = ms
		}
	}
	k, err := materialize.DecodeKey([]byte(key))
	if err != nil {
		return nil, err
	}
	row[na+nb] = k[0]
	if rec.Value, _, err = AppendStored(nil, nil, true, row, nil); err != nil {
		return nil, err
	}
	rec.Timestamp = time.UnixMilli(at)
	return rec, nil
}

// advancePosition advances cp's position to what the sides' rows
// reflect: how far each table's partitions are read and, of a view, what
// its partitions read said (sidePosition) — of a topic each of its
// partitions reflects in full, the least of them, once all have said. A
// topic partition that both sides reflect is as far as the one behind,
// and not at all while one has said nothing of it.
func (t *tableJoinTask) advancePosition(cp *materialize.Checkpoint) {
	var sides [2]materialize.Position
	for i, s := range t.sides {
		side := materialize.Position{}
		if !s.rows {
			for q := range s.places {
				if off, ok := cp.Input[s.topic][q]; ok {
					side.Advance(s.topic, q, off)
				}
			}
		}
		for _, src := range s.positions {
			least, count := map[int32]int64{}, map[int32]int{}
			for q := range s.places {
				for bq, off := range cp.Input[sidePosition(s.topic, q, src.Topic)] {
					if c, ok := least[bq]; !ok || off < c {
						least[bq] = off
					}
					count[bq]++
				}
			}
			for bq, off := range least {
				if !src.All || count[bq] == len(s.places) {
					side.Advance(src.Topic, bq, off)
				}
			}
		}
		sides[i] = side
	}
	for i, side := range sides {
		for topic, parts := range side {
			for bq, off := range parts {
				other, o := sides[1-i], t.sides[1-i]
				if at, ok := other.Get(topic, bq); ok {
					off = min(off, at)
				} else if o.reflects(topic, bq) {
					continue
				}
				cp.Position.Advance(topic, bq, off)
			}
		}
	}
}

// reflects reports whether the side's rows reflect partition bq of
// topic: a table's own partitions; of a view read partition by
// partition, every partition of a topic its partitions each reflect in
// full and its own of the others; of a view read in full, every
// partition of the topics its positions are in.
func (s *joinSide) reflects(topic string, bq int32) bool {
	if !s.rows {
		return topic == s.topic && s.reads(bq)
	}
	for _, src := range s.positions {
		if src.Topic == topic && (src.All || len(s.places) > 1 || s.reads(bq)) {
			return true
		}
	}
	return false
}

// commit writes the joined rows b changes, its skipped records and a
// marker in one transaction, then b's rows and checkpoint to the store.
func (t *tableJoinTask) commit(ctx context.Context, prod *kgo.Client, store *materialize.Store, b *tableJoinBatch) error {
	p := t.state.Partition
	if len(b.rorder) > 0 {
		index := []byte{prefixIndex}
		it, err := store.NewIter(index, materialize.PrefixEnd(index))
		if err != nil {
			return err
		}
		rkeys := slices.Clone(b.rorder)
		slices.Sort(rkeys) // the seeks go forward
		for _, rkey := range rkeys {
			lkeys, err := t.referencing(store, it, b, rkey)
			if err != nil {
				it.Close()
				return err
			}
			for _, lkey := range lkeys {
				mark(b.keys, &b.korder, lkey, b.rkeys[rkey])
			}
		}
		if err := it.Close(); err != nil {
			return err
		}
	}
	for _, key := range b.korder {
		l, lBefore, err := t.get(store, b, string(prefixLeft)+key)
		if err != nil {
			return err
		}
		// The right row the left row looks up: the key's own in a
		// primary-key join.
		rk, rkBefore := key, key
		if t.foreign != nil {
			if rk, err = t.rowLookup(l); err != nil {
				return err
			}
			if rkBefore, err = t.rowLookup(lBefore); err != nil {
				return err
			}
		}
		var r, rBefore []byte
		if rk != "" {
			if r, _, err = t.get(store, b, string(prefixRight)+rk); err != nil {
				return err
			}
		}
		if rkBefore != "" {
			if _, rBefore, err = t.get(store, b, string(prefixRight)+rkBefore); err != nil {
				return err
			}
		}
		had, has := t.join.Keeps(lBefore != nil, rBefore != nil), t.join.Keeps(l != nil, r != nil)
		same := string(l) == string(lBefore) && string(r) == string(rBefore) && rk == rkBefore
		if !b.keys[key] && (!had && !has || same) {
			continue // nothing to write: no row before or after, or the same
		}
		rec, err := t.joined(key, l, r)
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
	t.advancePosition(&b.cp)
	// What the marker commits, kept apart from what the store has read,
	// which a standby moves on without writing anything; and what the
	// store's rows reflect, which a stage that took over from a store
	// ahead of the marker has not read again yet.
	for _, in := range t.inputs() {
		off, ok := b.cp.Input[in.topic][in.p]
		if !ok {
			continue
		}
		setOffset(&b.cp.Input, committedIn(in.topic), in.p, off)
		if a := b.cp.Input[appliedIn(in.topic)][in.p]; a < off {
			setOffset(&b.cp.Input, appliedIn(in.topic), in.p, off)
		}
	}
	return commitMarked(ctx, t.state, prod, store, t.out, p, t.out, append(b.recs, b.bad...), &b.cp, b.order, b.rows)
}
