package stream

// The table task: it materializes a source table, a partition of the
// table's topic into the partition's store (see tableTask).

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/kafka"
	"github.com/basindb/basin/materialize"
	"github.com/basindb/basin/serde"
)

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
		if prod, err = t.rt.Client(fmt.Sprintf("%s-%d-fwd", t.rel.Name, p), append(kafka.ProducerOpts(), batchMax(t.maxRecord)...)...); err != nil {
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
	guard.expect(t.rel.Topic, p, min(readFrom, applyFrom))
	if fwdApplied {
		guard.expect(t.fwd, p, fwdNext)
	}
	cons, err := t.rt.consumerOf(fmt.Sprintf("%s-%d", t.rel.Name, p), map[string]map[int32]kgo.Offset{
		t.rel.Topic: {p: srcFrom},
		t.fwd:       {p: fwdFrom},
	}, noReset)
	if err != nil {
		return err
	}
	defer cons.Close()
	codec := serde.NewCodec(t.rel, t.rt.opts.Registry)
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
		t.state.tookIn(fetches)
		if err := warmSchemas(fetches, func(*kgo.Record) *serde.Codec { return codec }, codec); err != nil {
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
				if row, _, err := codec.DecodeRecord(r); err == nil {
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
			row, keyVals, err := codec.DecodeRecord(r)
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
			v, err := EncodeStored(true, row, nil)
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
