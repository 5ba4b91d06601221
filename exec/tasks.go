package exec

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
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/kafka"
	"github.com/basindb/basin/materialize"
	"github.com/basindb/basin/planner"
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
// input topic (a task reads one partition of each), the offset the next
// record must have at least.
type inputGuard struct {
	next map[string]int64
}

// expect records that the next record of topic has offset next or more.
func (g *inputGuard) expect(topic string, next int64) {
	if g.next == nil {
		g.next = make(map[string]int64)
	}
	g.next[topic] = next
}

// check returns the first partition of fetches whose records go back
// below what the guard expects, and the offset expected; ok is false if
// none does. It then expects what follows the records of fetches.
func (g *inputGuard) check(fetches kgo.Fetches) (topic string, p int32, next int64, back bool) {
	fetches.EachPartition(func(fp kgo.FetchTopicPartition) {
		if len(fp.Records) == 0 || back {
			return
		}
		if n, ok := g.next[fp.Topic]; ok && fp.Records[0].Offset < n {
			topic, p, next, back = fp.Topic, fp.Partition, n, true
			return
		}
		g.expect(fp.Topic, fp.Records[len(fp.Records)-1].Offset+1)
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

func (rt *Runtime) consumerOf(id string, offs map[string]map[int32]kgo.Offset, extra ...kgo.Opt) (*kgo.Client, error) {
	return rt.client(id, append([]kgo.Opt{
		kgo.ConsumePartitions(offs),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
		kgo.FetchMaxWait(500 * time.Millisecond),
	}, extra...)...)
}

// tableTask materializes one partition of a source table. The table's
// topic is its changelog: the store's ChangelogOffset is the next offset
// of the topic to apply. A record whose key belongs to another partition
// (placement) is forwarded there by the active, through the table's
// forwarding topic, which every replica of a partition reads as well;
// a standby, which does what the active does otherwise, skips it.
//
// How far the active has forwarded is its own progress, kept as the
// offset of the table's forwarding group (RekeyGroup) and committed once
// what it covers is produced: a standby reads the topic on its own and
// may be ahead of the active, so when it becomes the active it first
// reads again, for forwarding only, what lies between the last commit
// and its own checkpoint. Records sent twice this way, or by an active
// that crashed before committing, are dropped by their owner.
type tableTask struct {
	rt    *Runtime
	rel   *catalog.Relation
	state *TaskState
	// fwd is the forwarding topic.
	fwd string
	// restoreEnd is the topic's end when the task started.
	restoreEnd int64
	// maxRecord is the largest record the forwarding topic takes
	// (Runtime.recordLimit); 0 means no limit is known.
	maxRecord int
}

// forwardedFrom is the key in a table store's checkpoint inputs under
// which, for each source partition, the offset after the last record
// forwarded from it that the store applied is kept, so that a record
// forwarded again is dropped.
func forwardedFrom(fwd string) string { return "\x00from:" + fwd }

// forwardCommitEvery bounds how long an active table task goes without
// committing its forwarding progress while it forwards nothing.
const forwardCommitEvery = time.Second

func (t *tableTask) run(ctx context.Context, active bool) error {
	p := t.state.Partition
	store := t.rt.opts.DB.Store(materialize.StoreID{View: t.rel.StoreName(), Partition: p})
	cp, err := store.Checkpoint()
	if err != nil {
		return err
	}
	for _, topic := range []string{t.rel.Topic, t.fwd} {
		if err := t.rt.checkHalt(t.rel, topic, p); err != nil {
			return err
		}
	}
	if next := t.rt.takeResume(t.rel, &cp, t.rel.Topic, p, cp.ChangelogOffset, cp.ChangelogOffset > 0); next != cp.ChangelogOffset {
		cp.ChangelogOffset = next
		setOffset(&cp.Input, t.rel.Topic, p, next)
		if _, ok := cp.Position.Get(t.rel.Topic, p); ok {
			cp.Position[t.rel.Topic][p] = next
		}
	}
	if next, ok := cp.Input[t.fwd][p]; ok {
		setOffset(&cp.Input, t.fwd, p, t.rt.takeResume(t.rel, &cp, t.fwd, p, next, true))
	}
	group := t.rel.RekeyGroup(t.rt.opts.Cluster)
	// applyFrom is the first source offset the store does not reflect;
	// the active reads from its forwarding progress if that is behind.
	applyFrom, readFrom := cp.ChangelogOffset, cp.ChangelogOffset
	var prod *kgo.Client
	if active {
		if readFrom, err = t.forwardedTo(ctx, group); err != nil {
			return err
		}
		readFrom = min(readFrom, applyFrom)
		if prod, err = t.rt.client(fmt.Sprintf("%s-%d-fwd", t.rel.Name, p), append(kafka.ProducerOpts(), batchMax(t.maxRecord)...)...); err != nil {
			return err
		}
		defer prod.Close()
	}
	// The store must not be ahead of its topic (resumeAt); the active
	// reads again from its forwarding progress, below that.
	srcFrom, err := t.rt.resumeAt(ctx, t.rel, t.rel.Topic, p, applyFrom, applyFrom > 0)
	if err != nil {
		return err
	}
	if readFrom < applyFrom {
		if srcFrom, err = t.rt.resumeAt(ctx, t.rel, t.rel.Topic, p, readFrom, true); err != nil {
			return err
		}
	}
	fwdNext, fwdApplied := cp.Input[t.fwd][p]
	fwdFrom, err := t.rt.resumeAt(ctx, t.rel, t.fwd, p, fwdNext, fwdApplied)
	if err != nil {
		return err
	}
	var guard inputGuard
	guard.expect(t.rel.Topic, min(readFrom, applyFrom))
	if fwdApplied {
		guard.expect(t.fwd, fwdNext)
	}
	cons, err := t.rt.consumerOf(fmt.Sprintf("%s-%d", t.rel.Name, p), map[string]map[int32]kgo.Offset{
		t.rel.Topic: {p: srcFrom},
		t.fwd:       {p: fwdFrom},
	}, noReset)
	if err != nil {
		return err
	}
	defer cons.Close()
	codec := serde.NewCodec(t.rel)
	place := newPlacement(t.rel, codec, p)
	t.state.inputNext.Store(cp.ChangelogOffset)
	t.state.fwdNext.Store(cp.Input[t.fwd][p])
	t.state.applied(cp.UpdatedAt)
	t.state.publishPosition(cp.Position.Clone())
	if err := t.markRestored(ctx, cp.ChangelogOffset); err != nil {
		return err
	}
	from := forwardedFrom(t.fwd)
	var arena recordArena
	var committed time.Time // when the forwarding progress was last committed
	for {
		fetches, ok, err := t.rt.pollInputs(ctx, cons, t.state, t.fwd)
		if !ok {
			return err
		}
		if fetches.NumRecords() == 0 {
			continue
		}
		if topic, sp, next, back := guard.check(fetches); back {
			return t.rt.wentBack(ctx, t.rel, topic, sp, next)
		}
		t.state.pending(fetches)
		b := store.NewBatch()
		var bad, forward []*kgo.Record
		misplaced := 0
		forwardedTo := int64(-1) // the source offset after the last record read
		arena = recordArena{}
		fetches.EachRecord(func(r *kgo.Record) {
			forwarded := r.Topic == t.fwd
			var sp int32
			var off int64
			switch {
			case forwarded:
				setOffset(&cp.Input, t.fwd, p, r.Offset+1)
				if r.Attrs.IsControl() {
					return
				}
				v, _ := hasHeader(r, headerSource)
				var err error
				if sp, off, err = decodeSrc(v); err != nil {
					return // not a forwarded record: nothing to apply
				}
				if seen, ok := cp.Input[from][sp]; ok && off < seen {
					// Sent again by a restarted forwarder, unless
					// partition sp lost records and RESUME continued
					// it below them: what it forwards from there on
					// is new (halts.go).
					h, resumed := t.rt.resumed(t.rel, &cp, t.rel.Topic, sp)
					if !resumed || off < h.End {
						return
					}
					setOffset(&cp.Input, resumedKey(t.rel.Topic), sp, h.Resumed)
				}
				setOffset(&cp.Input, from, sp, off+1)
			case r.Offset < applyFrom:
				// Read again only to forward what the store already
				// reflects: the task became the active ahead of the
				// forwarding progress.
				forwardedTo = r.Offset + 1
				if r.Attrs.IsControl() {
					return
				}
				if row, _, err := codec.Decode(r.Key, r.Value); err == nil {
					if row == nil {
						row = codec.KeyRow(r.Key)
					}
					if q, wrong := place.owner(r.Key, row); wrong {
						// One too large to forward was logged when
						// first read.
						if fr := forwardRecord(&arena, t.fwd, q, r); tooLarge(t.maxRecord, fr, t.fwd) == nil {
							forward = append(forward, fr)
						}
					}
				}
				return
			default:
				forwardedTo = r.Offset + 1
				cp.ChangelogOffset = r.Offset + 1
				if r.Attrs.IsControl() {
					return
				}
			}
			cp.UpdatedAt = r.Timestamp
			logged := r
			if forwarded {
				logged = &kgo.Record{Topic: t.rel.Topic, Partition: sp, Offset: off, Timestamp: r.Timestamp, Key: r.Key, Value: r.Value}
			}
			row, keyVals, err := codec.Decode(r.Key, r.Value)
			if err == nil && slices.Contains(keyVals, nil) {
				// A table's row is found by its key; a record without
				// one (a null record key, or a NULL key column) names
				// no row to set or delete.
				err = pgerr.New(pgerr.NullValueNotAllowedDataException,
					"record has a NULL key, and table %s keeps a row per key", t.rel.Name)
			}
			if err != nil {
				bad = append(bad, t.rt.badRecord(t.rel, logged, err))
				return
			}
			if !forwarded {
				owned := row
				if owned == nil {
					owned = codec.KeyRow(r.Key)
				}
				if q, wrong := place.owner(r.Key, owned); wrong {
					misplaced++
					if active {
						fr := forwardRecord(&arena, t.fwd, q, r)
						if err := tooLarge(t.maxRecord, fr, t.fwd); err != nil {
							bad = append(bad, t.rt.badRecord(t.rel, logged, err))
							return
						}
						forward = append(forward, fr)
					}
					return
				}
			}
			k, err := materialize.EncodeKey(nil, keyVals)
			if err != nil {
				bad = append(bad, t.rt.badRecord(t.rel, logged, err))
				return
			}
			if row == nil {
				b.Delete(k)
				return
			}
			v, err := encodeStored(true, row, nil)
			if err != nil {
				bad = append(bad, t.rt.badRecord(t.rel, logged, err))
				return
			}
			b.Set(k, v)
		})
		setOffset(&cp.Input, t.rel.Topic, p, cp.ChangelogOffset)
		if cp.Position == nil {
			cp.Position = materialize.Position{}
		}
		cp.Position.Advance(t.rel.Topic, p, cp.ChangelogOffset)
		// Forwarded and logged records are produced before the offsets
		// past them are checkpointed or committed: a crash in between
		// sends them again, never not at all.
		if len(forward) > 0 {
			if err := prod.ProduceSync(ctx, forward...).FirstErr(); err != nil {
				b.Close()
				return fmt.Errorf("forwarding misplaced records to %s: %w", t.fwd, err)
			}
		}
		if len(bad) > 0 {
			if err := t.rt.plog.ProduceSync(ctx, bad...).FirstErr(); err != nil {
				b.Close()
				return fmt.Errorf("writing processing log: %w", err)
			}
			t.state.errors.Add(int64(len(bad)))
		}
		if err := b.Commit(cp); err != nil {
			return err
		}
		if active && forwardedTo >= 0 && (len(forward) > 0 || time.Since(committed) >= forwardCommitEvery) {
			var o kadmOffsets
			o.add(t.rel.Topic, p, forwardedTo)
			if err := o.commit(ctx, t.rt, group); err != nil {
				return err
			}
			committed = time.Now()
		}
		if active {
			t.state.misplaced.Add(int64(misplaced))
		}
		t.state.applied(cp.UpdatedAt)
		t.state.inputNext.Store(cp.ChangelogOffset)
		t.state.fwdNext.Store(cp.Input[t.fwd][p])
		t.state.publishPosition(cp.Position.Clone())
		if cp.ChangelogOffset >= t.restoreEnd {
			t.state.markRestored()
		}
	}
}

// forwardedTo returns the source offset up to which the table's active
// tasks have forwarded the misplaced records of this partition: the
// forwarding group's offset, 0 when none was committed yet.
func (t *tableTask) forwardedTo(ctx context.Context, group string) (int64, error) {
	offs, err := t.rt.adm.FetchOffsets(ctx, group)
	if errors.Is(err, kerr.GroupIDNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reading offsets of %s: %w", group, err)
	}
	if o, ok := offs.Lookup(t.rel.Topic, t.state.Partition); ok && o.Err == nil && o.At >= 0 {
		return o.At, nil
	}
	return 0, nil
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
	if err := fetchErr(fetches); err != nil {
		return nil, false, err
	}
	fetches.EachPartition(func(fp kgo.FetchTopicPartition) {
		if fp.HighWatermark > 0 {
			end(fp.Topic).Store(fp.HighWatermark)
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
		rt.log.Info("restored", "topic", topic, "partition", p, "from", from, "to", cp.ChangelogOffset,
			"took", time.Since(began).Round(time.Millisecond), "loading", flushing.Round(time.Millisecond))
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
		if err := fetchErr(fetches); err != nil {
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
	filter Expr
	group  []Expr
	output []Expr
	having Expr
	agg    *Aggregator
	env    *Env
	// input is the topic the task reads (the source's or the repartition
	// topic); srcTopic is the source's, in which positions are kept.
	input, srcTopic string
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
	// cache holds the committed state of the groups last changed; run
	// starts it empty.
	cache groupCache

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
	changes    map[string]*pending
	order      []*pending
}

func newViewTask(rt *Runtime, plan *planner.ViewPlan, ts *TaskState) *viewTask {
	t := &viewTask{rt: rt, plan: plan, state: ts, codec: serde.NewCodec(plan.Source), env: &Env{},
		input: plan.Source.Topic, srcTopic: plan.Source.Topic}
	if plan.Repartition {
		t.input = plan.View.RepartitionTopic(rt.opts.Cluster)
	} else {
		t.fwd = plan.View.RepartitionTopic(rt.opts.Cluster)
		t.place = newPlacement(plan.View, t.codec, ts.Partition)
	}
	if plan.Filter != nil {
		t.filter = Compile(plan.Filter)
	}
	for _, g := range plan.GroupBy {
		t.group = append(t.group, Compile(g))
	}
	for _, o := range plan.Output {
		t.output = append(t.output, Compile(o))
		switch o.(type) {
		case *planner.ColRef, *planner.Const:
		default:
			t.rowCanFail = true
		}
	}
	if plan.Having != nil {
		t.having = Compile(plan.Having)
		t.rowCanFail = true
	}
	if plan.Grouped {
		t.agg = NewAggregator(plan.Aggs)
	}
	t.row = make(catalog.Row, len(plan.Source.Schema.Columns))
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
}

// viewBatch is the work of one transaction: the input position it
// reaches, the changed view rows in the order first changed, and the
// records skipped.
type viewBatch struct {
	next      materialize.Checkpoint
	inputNext int64 // the input offset after the last record read
	fwdNext   int64 // the same in the forwarding topic
	changes   map[string]*pending
	order     []*pending
	bad       []*kgo.Record
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
	return &viewBatch{next: cp.Clone(), inputNext: -1, fwdNext: -1, changes: t.changes, order: t.order[:0]}
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
	prod, err := rt.client(fmt.Sprintf("%s-%d-txn", view.Name, p), append(append(kafka.ProducerOpts(),
		kgo.TransactionalID(view.TransactionalID(rt.opts.Cluster, p)),
		kgo.TransactionTimeout(rt.opts.TransactionTimeout),
	), batchMax(t.maxRecord)...)...)
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
	t.reset(cp)
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
			guard.expect(topic, next)
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
	t.state.publishPosition(cp.Position.Clone())
	t.state.markRestored()

	for {
		fetches, ok, err := rt.pollInputs(ctx, cons, t.state, t.fwd)
		if !ok {
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

// process applies one input record to the batch. A record that cannot be
// applied for its data is skipped into b.bad; an error is the task's, and
// ends it.
func (t *viewTask) process(store *materialize.Store, b *viewBatch, r *kgo.Record) error {
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
			b.next.Position.Advance(srcTopic, sp, off)
			return nil
		}
		v, _ := hasHeader(r, headerSource)
		var err error
		if sp, off, err = decodeSrc(v); err != nil {
			return err
		}
		if seen, ok := b.next.Position.Get(srcTopic, sp); ok && off < seen {
			return nil // re-sent by a restarted re-keying task
		}
		b.next.Position.Advance(srcTopic, sp, off+1)
		if row, err = materialize.DecodeRowInto(t.row, r.Value); err != nil {
			return fmt.Errorf("undecodable repartition record at %s/%d@%d: %w", t.input, p, r.Offset, err)
		}
		t.row = row
	} else {
		if !forwarded {
			// A forwarded record moves no position: a position covers a
			// partition's records of the keys that belong to it.
			b.next.Position.Advance(srcTopic, p, r.Offset+1)
		}
		row = t.row[:len(plan.Source.Schema.Columns)]
		tombstone, err := t.codec.DecodeInto(row, r.Key, r.Value)
		if err != nil {
			b.bad = append(b.bad, rt.badRecord(view, src, err))
			return nil
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
			if plan.Source.Kind == catalog.KindTable && !plan.Grouped {
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
			if !Truthy(keep) {
				if plan.Source.Kind == catalog.KindTable && !plan.Grouped {
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
	if t.plan.Grouped {
		if e.cached = t.cache.get(e.skey); e.cached != nil {
			// The cache keeps the committed state; this transaction
			// changes a copy.
			e.state = slices.Clone(e.cached.state)
		} else if t.cache.complete {
			e.state = t.agg.Init() // not in the store either
		} else {
			v, ok, err := store.Get(k)
			if err != nil {
				return nil, err
			}
			if ok {
				_, _, st, err := decodeStored(v, len(t.plan.View.Schema.Columns))
				if err != nil {
					return nil, err
				}
				e.state = slices.Clone(st) // not the decoded row's values
			} else {
				e.state = t.agg.Init()
			}
		}
	}
	b.changes[e.skey] = e
	b.order = append(b.order, e)
	return e, nil
}

func (t *viewTask) remove(store *materialize.Store, b *viewBatch, keyVals []any) {
	key := t.key
	clear(key)
	srcKeys := t.plan.Source.Schema.KeyIndexes()
	for i, g := range t.plan.KeyGroup {
		for j, sk := range srcKeys {
			if sk == g {
				key[i] = keyVals[j]
			}
		}
	}
	e, err := t.lookup(store, b, key)
	if err == nil {
		e.deleted, e.row = true, nil
	}
}

func (t *viewTask) apply(store *materialize.Store, b *viewBatch, row catalog.Row) error {
	if !t.plan.Grouped {
		out, err := EvalAll(t.output, row, t.env)
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
		present = Truthy(h)
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
	if err := prod.BeginTransaction(); err != nil {
		return err
	}
	abort := func(err error) error {
		_ = prod.AbortBufferedRecords(ctx)
		_ = prod.EndTransaction(ctx, kgo.TryAbort)
		return err
	}
	recs := make([]*kgo.Record, 0, len(b.order)+len(b.bad)+len(b.forward)+1)
	for i, e := range b.order {
		rec := b.arena.record()
		rec.Topic, rec.Partition, rec.Key, rec.Value = changelog, p, e.key, vals[i]
		recs = append(recs, rec)
	}
	recs = append(recs, b.bad...)
	recs = append(recs, b.forward...)
	marker := &kgo.Record{Topic: changelog, Partition: p, Key: markerKey,
		Value:   materialize.MarshalCheckpoint(b.next),
		Headers: []kgo.RecordHeader{{Key: headerMarker}}}
	recs = append(recs, marker)
	if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return abort(fmt.Errorf("producing to %s: %w", changelog, err))
	}
	if err := prod.EndTransaction(ctx, kgo.TryCommit); err != nil {
		return abort(fmt.Errorf("committing transaction: %w", err))
	}
	return t.applyCommitted(store, b, vals, marker.Offset+1)
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
	vals := make([][]byte, len(b.order))
	for i, e := range b.order {
		if !t.plan.Grouped && e.deleted {
			continue
		}
		row, state, present := e.row, []any(nil), true
		var err error
		if t.plan.Grouped {
			if present, row, err = t.viewRow(e); err != nil {
				return nil, err
			}
			state = e.state
		}
		buf := b.arena.bytes.begin()
		start := len(buf)
		if buf, t.stored, err = appendStored(buf, t.stored, present, row, state); err != nil {
			return nil, err
		}
		vals[i] = b.arena.bytes.end(buf, start)
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
	if t.plan.Grouped {
		for i, e := range b.order {
			if vals[i] == nil {
				t.cache.remove(e.skey)
			} else {
				t.cache.put(e.skey, e.cached, e.state) // the batch is done with it
			}
		}
	}
	t.order = b.order // for the next batch to reuse
	return nil
}

// groupCacheSize bounds a view task's group cache: each of its two
// generations holds up to this many groups. A group takes some 100 bytes
// plus its state's, so a task's cache stays within some 10 MiB.
const groupCacheSize = 1 << 15

// groupCache holds the committed state of the groups a view task changed
// last, so that changing them again needs no read of the store, which
// otherwise is most of the cost of a record whose group has not changed
// yet in its transaction. It holds only what the store holds: a state
// goes in after its transaction has committed to the store, and the
// task, which is the store's one writer while it runs, starts each run
// with an empty cache. It is bounded: groups go to the current
// generation, and when that is full it becomes the previous one,
// dropping the one before; a group found in the previous generation
// moves to the current one. So the groups kept are the most recently
// used, give or take a generation.
type groupCache struct {
	size      int // groups per generation; 0 means groupCacheSize
	cur, prev map[string]*cachedGroup
	// complete is set while the cache holds every group of the store:
	// from a run that starts with an empty store (a new view taking in
	// its input) until a group is dropped. A group it does not hold then
	// has no state yet, and is not looked for in the store.
	complete bool
}

// cachedGroup is the committed state of a group. A transaction changing
// the group keeps it to update it after committing, without looking the
// group up again.
type cachedGroup struct {
	state []any
}

// get returns the cached group of key, nil if there is none.
func (c *groupCache) get(key string) *cachedGroup {
	if g, ok := c.cur[key]; ok {
		return g
	}
	g, ok := c.prev[key]
	if ok {
		delete(c.prev, key)
		c.insert(key, g)
	}
	return g
}

// put sets the committed state of key, which the cache now owns; g is
// what get returned for key before the transaction. Should g have been
// dropped since, the state is not cached: only a later get is the worse
// for it.
func (c *groupCache) put(key string, g *cachedGroup, st []any) {
	if g != nil {
		g.state = st
		return
	}
	c.insert(key, &cachedGroup{state: st})
}

// insert adds key, which the cache does not hold, to the current
// generation.
func (c *groupCache) insert(key string, g *cachedGroup) {
	size := c.size
	if size == 0 {
		size = groupCacheSize
	}
	if len(c.cur) >= size {
		c.complete = c.complete && len(c.prev) == 0
		clear(c.prev)
		c.prev, c.cur = c.cur, c.prev
	}
	if c.cur == nil {
		c.cur = make(map[string]*cachedGroup)
	}
	c.cur[key] = g
}

func (c *groupCache) remove(key string) {
	delete(c.cur, key)
	delete(c.prev, key)
}

// arenaRecords and arenaBytes size the blocks of a recordArena.
const (
	arenaRecords = 256
	arenaBytes   = 32 << 10
)

// recordArena hands out the records of a batch, and the bytes and headers
// they hold, from blocks each shared by many of them: an allocation per
// block rather than several per record. A block lives as long as
// anything refers to any of it, so what an arena holds should die
// together, as a batch's records do once produced.
type recordArena struct {
	recs  []kgo.Record
	hdrs  []kgo.RecordHeader
	bytes byteArena
}

func (a *recordArena) record() *kgo.Record {
	if len(a.recs) == cap(a.recs) {
		a.recs = make([]kgo.Record, 0, arenaRecords)
	}
	a.recs = a.recs[:len(a.recs)+1]
	return &a.recs[len(a.recs)-1]
}

// header returns a header list of one header.
func (a *recordArena) header(key string, value []byte) []kgo.RecordHeader {
	if len(a.hdrs) == cap(a.hdrs) {
		a.hdrs = make([]kgo.RecordHeader, 0, arenaRecords)
	}
	a.hdrs = append(a.hdrs, kgo.RecordHeader{Key: key, Value: value})
	n := len(a.hdrs)
	return a.hdrs[n-1 : n : n]
}

func (a *recordArena) copy(b []byte) []byte {
	buf := a.bytes.begin()
	start := len(buf)
	return a.bytes.end(append(buf, b...), start)
}

// byteArena hands out byte slices from shared blocks. A slice is made by
// appending to what begin returns and handing the result to end with
// the length begin's had.
type byteArena struct {
	buf []byte
}

// begin returns the block to append to.
func (a *byteArena) begin() []byte {
	if cap(a.buf)-len(a.buf) < arenaBytes/64 {
		a.buf = make([]byte, 0, arenaBytes)
	}
	return a.buf
}

// end returns what was appended to buf after start, and keeps buf (which
// the appending may have grown into a new block) for the next slice.
func (a *byteArena) end(buf []byte, start int) []byte {
	a.buf = buf
	return buf[start:len(buf):len(buf)]
}

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
type rekeyTask struct {
	rt     *Runtime
	state  *TaskState
	ends   *sourceEnds // shared with the view's tasks, for their lag
	plan   *planner.ViewPlan
	sp     int32
	codec  *serde.Codec
	filter Expr
	group  []Expr
	env    *Env
	keyT   []catalog.Type
	keyN   []string
	out    string // the repartition topic
	// maxRecord is the largest record the repartition topic takes
	// (Runtime.recordLimit); 0 means no limit is known.
	maxRecord int
	// Scratch space of one record: its row, GROUP BY values and view key.
	row    catalog.Row
	groups []any
	key    []any
}

func newRekeyTask(rt *Runtime, plan *planner.ViewPlan, ts *TaskState, ends *sourceEnds) *rekeyTask {
	t := &rekeyTask{rt: rt, plan: plan, sp: ts.Partition, state: ts, ends: ends, codec: serde.NewCodec(plan.Source), env: &Env{},
		out: plan.View.RepartitionTopic(rt.opts.Cluster)}
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
	t.row = make(catalog.Row, len(plan.Source.Schema.Columns))
	t.groups = make([]any, len(t.group))
	t.key = make([]any, len(plan.KeyGroup))
	return t
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
		guard.expect(src.Topic, o.At)
	}
	cons, err := rt.consumer(fmt.Sprintf("%s-rekey-%d", view.Name, t.sp), src.Topic, t.sp, start, noReset)
	if err != nil {
		return err
	}
	defer cons.Close()
	prod, err := rt.client(fmt.Sprintf("%s-rekey-%d-out", view.Name, t.sp), append(kafka.ProducerOpts(), batchMax(t.maxRecord)...)...)
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
		if topic, sp, next, back := guard.check(fetches); back {
			return rt.wentBack(ctx, view, topic, sp, next)
		}
		b := &rekeyBatch{next: -1, recs: make([]*kgo.Record, 0, fetches.NumRecords()+int(view.Partitions))}
		fetches.EachRecord(func(r *kgo.Record) { t.add(b, r) })
		recs := b.recs
		for vp := int32(0); vp < view.Partitions; vp++ {
			recs = append(recs, &kgo.Record{Topic: out, Partition: vp,
				Headers: []kgo.RecordHeader{{Key: headerMarker, Value: encodeSrc(t.sp, b.next)}}})
		}
		recs = append(recs, b.bad...)
		if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			return fmt.Errorf("producing to %s: %w", out, err)
		}
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
	tombstone, err := t.codec.DecodeInto(row, r.Key, r.Value)
	if err != nil || tombstone {
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
	for i, g := range t.group {
		if t.groups[i], err = g(row, t.env); err != nil {
			return nil, err
		}
	}
	for i, g := range t.plan.KeyGroup {
		t.key[i] = t.groups[g]
	}
	buf := a.bytes.begin()
	start := len(buf)
	buf, null, err := serde.AppendKey(buf, t.plan.View.KeyFormat, t.keyT, t.keyN, t.key)
	if err != nil {
		return nil, err
	}
	var kb []byte // nil: a null key
	if !null {
		kb = a.bytes.end(buf, start)
	}
	buf = a.bytes.begin()
	start = len(buf)
	if buf, err = materialize.AppendRow(buf, row); err != nil {
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
