package stream

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/kafka"
	"github.com/basindb/basin/materialize"
	"github.com/basindb/basin/serde"
)

// Record headers basin's internal topics use.
const (
	// headerMarker marks a position marker: in a changelog its value is an
	// encoded checkpoint (input and position of the transaction it ends);
	// in a repartition topic it is (source partition, next offset).
	headerMarker = "basin.marker"
	// headerSource is (source partition, offset) on a re-keyed record.
	headerSource = "basin.src"
	// headerRight marks a record of a stream–stream join's repartition
	// topic as the right stream's (unmarked ones are the left's).
	headerRight = "basin.right"
	// headerFence marks the record a task's fencing transaction writes
	// to its changelog (and aborts): never a row.
	headerFence = "basin.fence"
	// headerOp says what a view's changelog record does to the view:
	// one byte, an Op (opOf). Subscriptions read it: the record alone
	// cannot tell an insert from an update, nor a delete of a row from
	// one of a key the view never had.
	headerOp = "basin.op"
)

// An Op is what a change does to a view's row of its key.
type Op byte

// The Ops, as headerOp's byte.
const (
	OpInsert Op = 'i' // the key had no row
	OpUpdate Op = 'u' // the key's row is replaced
	OpDelete Op = 'd' // the key's row leaves the view
	// OpNone changes no row: a delete of a key without one, or a hidden
	// group (HAVING false, EMIT FINAL) whose state changed.
	OpNone Op = 'n'
)

// opOf is the Op of a change from a key whose row was in the view (was)
// or not, to one that is (now) or not.
func opOf(was, now bool) Op {
	switch {
	case was && now:
		return OpUpdate
	case now:
		return OpInsert
	case was:
		return OpDelete
	}
	return OpNone
}

// opHeaders are the headers of the changelog records of each Op, shared.
var opHeaders = func() map[Op][]kgo.RecordHeader {
	m := map[Op][]kgo.RecordHeader{}
	for _, op := range []Op{OpInsert, OpUpdate, OpDelete, OpNone} {
		m[op] = []kgo.RecordHeader{{Key: headerOp, Value: []byte{byte(op)}}}
	}
	return m
}()

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

// recordWidth is the length of a persistent query's input row from a
// record of src: its columns and ROWTIME, then, with coords (the plan's
// Coords), ROWPARTITION and ROWOFFSET (planner.SourceInput).
func recordWidth(src *catalog.Relation, coords bool) int {
	if coords {
		return len(src.Schema.Columns) + 3
	}
	return len(src.Schema.Columns) + 1
}

// setCoords sets ROWPARTITION and ROWOFFSET of row, the input row of a
// record of a source with ncols columns: the record's partition and
// offset in the source's topic.
func setCoords(row catalog.Row, ncols int, partition int32, offset int64) {
	row[ncols+1], row[ncols+2] = int64(partition), offset
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

// ErrInputTruncated reports that a task's input partition ends below the
// offset the task has already applied: the topic lost its tail (a broker
// truncated a corrupt segment, an unclean leader election) or was deleted
// and created again. Reading it from the start would count again what the
// task has counted; reading from its end would skip what fills the gap
// unseen. The task stops until the operator chooses (docs/operations.md,
// "Troubleshooting").
var ErrInputTruncated = errors.New("exec: input topic truncated below the applied offset")

// resumeAt returns the offset at which a task of rel that has applied
// topic/p up to next resumes reading it (applied is false when it has
// applied nothing yet: it reads from the start). Task consumers never
// reset an offset that is out of range themselves (noReset), so this
// is where it is decided, each time a task starts:
//   - next above the partition's end is ErrInputTruncated, naming the
//     topic, partition, offset and end;
//   - next below the partition's start (retention deleted records before
//     the task read them) resumes at the start: those records are gone
//     whatever the task does, and nothing is read twice.
func (rt *Runtime) resumeAt(ctx context.Context, rel *catalog.Relation, topic string, p int32, next int64, applied bool) (kgo.Offset, error) {
	if !applied {
		return kgo.NewOffset().AtStart(), nil
	}
	start, end, err := rt.partitionBounds(ctx, topic, p)
	if err != nil {
		return kgo.Offset{}, err
	}
	if next > end {
		return kgo.Offset{}, rt.truncatedErr(rel, topic, p, next, end)
	}
	if next < start {
		rt.log.Warn("input records deleted before they were read; resuming at the partition's start",
			"relation", rel.Name, "topic", topic, "partition", p, "offset", next, "start", start)
		return kgo.NewOffset().At(start), nil
	}
	return kgo.NewOffset().At(next), nil
}

func (rt *Runtime) truncatedErr(rel *catalog.Relation, topic string, p int32, next, end int64) error {
	return &TruncatedError{Topic: topic, Partition: p, Offset: next, End: end, msg: fmt.Sprintf(
		"%v: topic %s partition %d ends at offset %d, but %s %s has applied it up to offset %d; "+
			"records it reflects are gone from the topic (truncated, or deleted and created again). "+
			"%s (see Troubleshooting in the operations guide)",
		ErrInputTruncated, topic, p, end, strings.ToLower(string(rel.Kind)), rel.Name, next, remedy(rel, rt.rekeys(rel)))}
}

// inputGuard catches a task's input going back while it reads: franz-go
// starts a partition again from its start when it finds its topic
// deleted and created again, whatever the reset offset, and the task
// would then apply again what it has applied. The guard keeps, per
// input partition, the offset the next record must have at least.
type inputGuard struct {
	next map[topicPart]int64
}

// expect records that the next record of topic's partition p has
// offset next or more.
func (g *inputGuard) expect(topic string, p int32, next int64) {
	if g.next == nil {
		g.next = make(map[topicPart]int64)
	}
	g.next[topicPart{topic, p}] = next
}

// check returns the first partition of fetches whose records go back
// below what the guard expects, and the offset expected; ok is false if
// none does. It then expects what follows the records of fetches.
func (g *inputGuard) check(fetches kgo.Fetches) (topic string, p int32, next int64, back bool) {
	fetches.EachPartition(func(fp kgo.FetchTopicPartition) {
		if len(fp.Records) == 0 || back {
			return
		}
		if n, ok := g.next[topicPart{fp.Topic, fp.Partition}]; ok && fp.Records[0].Offset < n {
			topic, p, next, back = fp.Topic, fp.Partition, n, true
			return
		}
		g.expect(fp.Topic, fp.Partition, fp.Records[len(fp.Records)-1].Offset+1)
	})
	return topic, p, next, back
}

// wentBack is the error of a task whose input went back (inputGuard):
// ErrInputTruncated, with the partition's end if it can be had.
func (rt *Runtime) wentBack(ctx context.Context, rel *catalog.Relation, topic string, p int32, next int64) error {
	_, end, err := rt.partitionBounds(ctx, topic, p)
	if err != nil {
		// Tried again, the task compares its offset with the end as it
		// starts (resumeAt), or finds the input going back again.
		return fmt.Errorf("topic %s partition %d went back below offset %d, which %s %s has applied, and its end cannot be read: %w",
			topic, p, next, strings.ToLower(string(rel.Kind)), rel.Name, err)
	}
	if end < next {
		return rt.truncatedErr(rel, topic, p, next, end)
	}
	return &TruncatedError{Topic: topic, Partition: p, Offset: next, End: end, msg: fmt.Sprintf(
		"%v: topic %s partition %d went back below offset %d, which %s %s has applied (the topic was deleted and created again, and holds %d records now). "+
			"%s (see Troubleshooting in the operations guide)",
		ErrInputTruncated, topic, p, next, strings.ToLower(string(rel.Kind)), rel.Name, end, remedy(rel, rt.rekeys(rel)))}
}

// behindPosition returns ErrInputTruncated if a partition of topic ends
// below the position pos holds for it: the source of a view that
// re-keys lost records the view reflects. The re-keying task cannot
// always tell (a topic deleted and created again takes its committed
// offsets with it, and it starts again from 0); the view task can, for
// its position is in its own store, and it drops what it has seen.
func (rt *Runtime) behindPosition(ctx context.Context, rel *catalog.Relation, topic string, pos materialize.Position) error {
	ends, err := rt.adm.ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return fmt.Errorf("end offsets of %s: %w", topic, err)
	}
	var errs []error
	ends.Each(func(o kadm.ListedOffset) {
		if seen, ok := pos.Get(topic, o.Partition); ok && o.Offset < seen {
			errs = append(errs, rt.truncatedErr(rel, topic, o.Partition, seen, o.Offset))
		}
	})
	return errors.Join(errs...)
}

// partitionBounds returns the log start offset and high watermark of
// topic/p.
func (rt *Runtime) partitionBounds(ctx context.Context, topic string, p int32) (start, end int64, err error) {
	starts, err := rt.adm.ListStartOffsets(ctx, topic)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return 0, 0, fmt.Errorf("start offsets of %s: %w", topic, err)
	}
	ends, err := rt.adm.ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return 0, 0, fmt.Errorf("end offsets of %s: %w", topic, err)
	}
	so, ok1 := starts.Lookup(topic, p)
	eo, ok2 := ends.Lookup(topic, p)
	if !ok1 || !ok2 {
		return 0, 0, fmt.Errorf("offsets of %s/%d: %w", topic, p, kafka.ErrUnknownTopic)
	}
	return so.Offset, eo.Offset, nil
}

// consumer returns a client reading one partition from off, committed
// data only, with control records kept so that the read offset passes
// transaction markers.
func (rt *Runtime) consumer(id, topic string, p int32, off kgo.Offset, extra ...kgo.Opt) (*kgo.Client, error) {
	return rt.consumerOf(id, map[string]map[int32]kgo.Offset{topic: {p: off}}, extra...)
}

// consumerOf is consumer reading the partitions of offs, each from its
// offset.
//
// A reader of a changelog (restore, a standby) that finds its offset out
// of range reads it again from the start, franz-go's default: applying a
// changelog again changes nothing. A task reading its input adds
// noReset, for applying input again would count it again.
// noReset makes an offset out of range the task's error rather than a
// jump to the partition's start: resumeAt decides where a task that
// starts again reads from.
var noReset = kgo.ConsumeResetOffset(kgo.NoResetOffset())

// Consumer is consumerOf for readers outside the package (push's
// subscriptions): committed records and control records, of the
// partitions of offs, each from its offset, without reset.
func (rt *Runtime) Consumer(id string, offs map[string]map[int32]kgo.Offset, extra ...kgo.Opt) (*kgo.Client, error) {
	return rt.consumerOf(id, offs, append([]kgo.Opt{noReset}, extra...)...)
}

func (rt *Runtime) consumerOf(id string, offs map[string]map[int32]kgo.Offset, extra ...kgo.Opt) (*kgo.Client, error) {
	return rt.Client(id, append([]kgo.Opt{
		kgo.ConsumePartitions(offs),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
		kgo.FetchMaxWait(500 * time.Millisecond),
	}, extra...)...)
}

// poll fetches the next records of a task's consumer and records the
// partition's high watermark in end. ok is false on an error, and with
// no error once ctx has ended: the task is stopping.
func (rt *Runtime) poll(ctx context.Context, cons *kgo.Client, end *atomic.Int64) (_ kgo.Fetches, ok bool, err error) {
	return rt.pollEnds(ctx, cons, func(string) *atomic.Int64 { return end })
}

// pollInputs is poll for a task reading its input partition and, unless
// fwd is "", its partition of the forwarding topic fwd: each one's high
// watermark goes to ts.inputEnd or ts.fwdEnd.
func (rt *Runtime) pollInputs(ctx context.Context, cons *kgo.Client, ts *TaskState, fwd string) (_ kgo.Fetches, ok bool, err error) {
	return rt.pollEnds(ctx, cons, func(topic string) *atomic.Int64 {
		if fwd != "" && topic == fwd {
			return &ts.fwdEnd
		}
		return &ts.inputEnd
	})
}

func (rt *Runtime) pollEnds(ctx context.Context, cons *kgo.Client, end func(topic string) *atomic.Int64) (_ kgo.Fetches, ok bool, err error) {
	fetches := cons.PollRecords(ctx, rt.opts.MaxBatch)
	if ctx.Err() != nil {
		return nil, false, nil
	}
	if err := FetchErr(fetches); err != nil {
		return nil, false, err
	}
	fetches.EachPartition(func(fp kgo.FetchTopicPartition) {
		if fp.HighWatermark > 0 {
			end(fp.Topic).Store(fp.HighWatermark)
		}
	})
	return fetches, true, nil
}

func FetchErr(fetches kgo.Fetches) error {
	var err error
	fetches.EachError(func(topic string, p int32, e error) {
		if errors.Is(e, context.Canceled) {
			return
		}
		err = fmt.Errorf("fetching %s/%d: %w", topic, p, e)
	})
	return err
}

// loadFlushSize is how much of a changelog a restore into an empty store
// collects before loading it into the store.
const loadFlushSize = 32 << 20

// loadGrowMax bounds the writes a restore makes room for in its loader
// at once (16 bytes of index each).
const loadGrowMax = 1 << 20

// restore applies the changelog partition from the store's checkpoint to
// the changelog's end, so the store reflects every committed transaction.
// Markers carry the input and position of the transaction they end.
func (rt *Runtime) restore(ctx context.Context, store *materialize.Store, topic string, p int32) (_ materialize.Checkpoint, err error) {
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
	began, from := time.Now(), cp.ChangelogOffset
	var flushing time.Duration // in Loader.Flush
	defer func() {
		if err != nil {
			return // the task's error is logged where it ends
		}
		took := time.Since(began)
		rt.restores.note(cp.ChangelogOffset-from, took)
		rt.log.Info("restored", "topic", topic, "partition", p, "from", from, "to", cp.ChangelogOffset,
			"took", took.Round(time.Millisecond), "loading", flushing.Round(time.Millisecond))
	}()
	cl, err := rt.consumer(fmt.Sprintf("restore-%s-%d", topic, p), topic, p, kgo.NewOffset().At(cp.ChangelogOffset),
		kgo.WithPools(&rt.restoreRecs))
	if err != nil {
		return cp, err
	}
	defer cl.Close()
	// Into an empty store (no checkpoint yet: nothing was ever applied),
	// the changelog is loaded as sstables rather than written batch by
	// batch (materialize.Loader).
	var ld *materialize.Loader
	if cp.ChangelogOffset == 0 {
		ld = store.NewLoader()
		// One write per changelog record at most (transaction markers
		// take offsets too), up to what one load collects.
		ld.Grow(int(min(end-cp.ChangelogOffset, loadGrowMax)))
	}
	for cp.ChangelogOffset < end {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return cp, ctx.Err()
		}
		if err := FetchErr(fetches); err != nil {
			return cp, err
		}
		if ld != nil {
			if err := applyChangelog(ld, &cp, fetches); err != nil {
				return cp, fmt.Errorf("restoring %s/%d: %w", topic, p, err)
			}
			kafka.Recycle(fetches) // the loader copied what it keeps
			if ld.Size() >= loadFlushSize || cp.ChangelogOffset >= end {
				t := time.Now()
				if err := ld.Flush(cp); err != nil {
					return cp, err
				}
				flushing += time.Since(t)
			}
			continue
		}
		b := store.NewBatch()
		if err := applyChangelog(b, &cp, fetches); err != nil {
			b.Close()
			return cp, fmt.Errorf("restoring %s/%d: %w", topic, p, err)
		}
		kafka.Recycle(fetches) // the batch copied what it keeps
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

// recordOverhead bounds what a record batch of one record adds to the
// record's key, value and headers: the batch's header (61 bytes) and the
// record's lengths, attributes and deltas. franz-go counts the same way
// against kgo.ProducerBatchMaxBytes.
const recordOverhead = 256

// batchMax returns the producer option that bounds a batch by limit
// (before compression), none if limit is 0.
func batchMax(limit int) []kgo.Opt {
	if limit <= 0 {
		return nil
	}
	return []kgo.Opt{kgo.ProducerBatchMaxBytes(int32(limit))}
}

// tooLarge returns an error if r, to be written to topic, is larger than
// limit (0: no limit).
func tooLarge(limit int, r *kgo.Record, topic string) error {
	if limit <= 0 {
		return nil
	}
	n := len(r.Key) + len(r.Value) + recordOverhead
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value) + 10
	}
	if n > limit {
		return recordTooLarge(n, limit, topic)
	}
	return nil
}

// recordTooLarge is the processing log's reason for a record whose
// derived record is n bytes where topic takes limit.
func recordTooLarge(n, limit int, topic string) error {
	return pgerr.New(pgerr.ProgramLimitExceeded,
		"the record it derives is %d bytes, more than the %d bytes (max.message.bytes) topic %s takes: a record that large "+
			"fits its source only compressed; raise max.message.bytes of the source topic and recreate the query, or make the value smaller", n, limit, topic)
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

// followInputs keeps a standby's store from a task's inputs: it reads
// the partitions of ins from cp, its store's checkpoint, and gives each
// fetch to apply, which applies it and returns the checkpoint it
// reached, until ctx ends. rel and id name the task for errors and the
// consumer.
func (rt *Runtime) followInputs(ctx context.Context, rel *catalog.Relation, id string, ts *TaskState, cp materialize.Checkpoint,
	ins []topicPart, apply func(kgo.Fetches, materialize.Checkpoint) (materialize.Checkpoint, error)) error {
	offs := map[string]map[int32]kgo.Offset{}
	for _, in := range ins {
		next, applied := cp.Input[in.topic][in.p]
		from, err := rt.resumeAt(ctx, rel, in.topic, in.p, next, applied)
		if err != nil {
			return err
		}
		if offs[in.topic] == nil {
			offs[in.topic] = map[int32]kgo.Offset{}
		}
		offs[in.topic][in.p] = from
	}
	cons, err := rt.consumerOf(id, offs, noReset)
	if err != nil {
		return err
	}
	defer cons.Close()
	ts.markRestored()
	var end atomic.Int64
	for {
		fetches, ok, err := rt.poll(ctx, cons, &end)
		if !ok {
			return err
		}
		ts.tookIn(fetches)
		if fetches.NumRecords() == 0 {
			continue
		}
		if cp, err = apply(fetches, cp); err != nil {
			return err
		}
	}
}

// commitMarked writes recs and then a marker of cp to partition p of
// changelog in one transaction; once it is committed, it applies the
// keys of order (their values in rows, nil deleting) and cp, with the
// changelog offset after the marker, to store (applyRows). out names
// what recs go to, for the error. The marker is the checkpoint a task
// that starts again resumes from.
func commitMarked(ctx context.Context, ts *TaskState, prod *kgo.Client, store *materialize.Store, changelog string, p int32, out string,
	recs []*kgo.Record, cp *materialize.Checkpoint, order []string, rows map[string][]byte) error {
	marker := &kgo.Record{Topic: changelog, Partition: p, Key: markerKey,
		Value: materialize.MarshalCheckpoint(*cp), Headers: []kgo.RecordHeader{{Key: headerMarker}}}
	if err := produceInTransaction(ctx, ts, prod, out, append(recs, marker)); err != nil {
		return err
	}
	cp.ChangelogOffset = marker.Offset + 1
	return applyRows(store, order, rows, *cp)
}

// produceInTransaction produces recs to topics headed by out in one
// transaction of prod, aborting it on any failure, and counts the
// records and the transaction in ts.
func produceInTransaction(ctx context.Context, ts *TaskState, prod *kgo.Client, out string, recs []*kgo.Record) error {
	if err := prod.BeginTransaction(); err != nil {
		return err
	}
	abort := func(err error) error {
		_ = prod.AbortBufferedRecords(ctx)
		_ = prod.EndTransaction(ctx, kgo.TryAbort)
		ts.ended(false)
		return err
	}
	if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return abort(fmt.Errorf("producing to %s: %w", out, err))
	}
	if err := prod.EndTransaction(ctx, kgo.TryCommit); err != nil {
		return abort(fmt.Errorf("committing transaction: %w", err))
	}
	ts.ended(true)
	ts.wrote(recs)
	return nil
}

// applyRows writes the keys of order, their values in rows (nil
// deleting), and checkpoint cp to store in one batch.
func applyRows(store *materialize.Store, order []string, rows map[string][]byte, cp materialize.Checkpoint) error {
	sb := store.NewBatch()
	for _, k := range order {
		if v := rows[k]; v == nil {
			sb.Delete([]byte(k))
		} else {
			sb.Set([]byte(k), v)
		}
	}
	return sb.Commit(cp)
}

// resumeInputs returns a consumer of partition p of each of topics,
// from where checkpoint cp has read them (from the start when it has
// not: resumeAt), named name, and the guard that catches a topic that
// went back behind cp. A halt of rel on any of them is returned.
func (rt *Runtime) resumeInputs(ctx context.Context, rel *catalog.Relation, name string, topics []string, p int32, cp materialize.Checkpoint) (*kgo.Client, *inputGuard, error) {
	offs := map[string]map[int32]kgo.Offset{}
	guard := &inputGuard{}
	for _, topic := range topics {
		if err := rt.checkHalt(rel, topic, p); err != nil {
			return nil, nil, err
		}
		next, applied := cp.Input[topic][p]
		from, err := rt.resumeAt(ctx, rel, topic, p, next, applied)
		if err != nil {
			return nil, nil, err
		}
		offs[topic] = map[int32]kgo.Offset{p: from}
		if applied {
			guard.expect(topic, p, next)
		}
	}
	cons, err := rt.consumerOf(name, offs, noReset)
	return cons, guard, err
}

// warmSchemas fetches the writer schemas of the fetched records of the
// records whose codec (codecOf; nil for none) is a schema registry format
// before any record is decoded (serde.Codec.Warm). A registry that
// cannot be reached fails the batch, and the task tries it again from
// its checkpoint, showing the error in SHOW TASKS meanwhile, rather than
// skip records it will be able to read. codecs are those codecOf
// returns: when none is in a registry format, the records are not
// looked at.
func warmSchemas(fetches kgo.Fetches, codecOf func(r *kgo.Record) *serde.Codec, codecs ...*serde.Codec) error {
	if !slices.ContainsFunc(codecs, func(c *serde.Codec) bool { return c != nil && c.Registered() }) {
		return nil
	}
	var err error
	fetches.EachRecord(func(r *kgo.Record) {
		if err != nil {
			return
		}
		if c := codecOf(r); c != nil && c.Registered() {
			err = c.Warm(r.Key, r.Value)
		}
	})
	return err
}
