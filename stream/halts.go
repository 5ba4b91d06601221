package stream

import (
	"context"
	"errors"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/materialize"
)

// Halts: what a task does once its input lost records it had applied.
//
// A task that finds an input partition ending below the offset it has
// applied (ErrInputTruncated) records the loss in the catalog
// (catalog.OpHalt, through RuntimeOptions.Halt), so that the decision
// outlives the task: every replica of the partition, on every node, in
// every later run, stays stopped, its lag at least 1, until the
// operator chooses. Without the record a task that tries again would
// resume by itself once producers had written past its offset, skipping
// unseen the records written in the gap.
//
// The operator chooses with DROP (and CREATE again), or with RESUME,
// which accepts the loss: each task then continues at the offset where
// the partition ended when the loss was found (Halt.End), so that every
// record written since is applied. Each task does so once: the RESUME's
// command offset goes into the task's checkpoint (resumedKey) with the
// first batch it commits after it, so a later run reads on from its
// checkpoint. A task that had not got as far as End (a standby behind
// the active) needs no rewinding and only takes the mark.

// TruncatedError is the ErrInputTruncated a task returns, with what it
// found.
type TruncatedError struct {
	Topic     string
	Partition int32
	// Offset is the offset the task had applied the partition up to,
	// End the partition's end.
	Offset, End int64
	msg         string
}

func (e *TruncatedError) Error() string { return e.msg }

// Is makes errors.Is(err, ErrInputTruncated) hold.
func (e *TruncatedError) Is(target error) bool { return target == ErrInputTruncated }

// resumedKey is the key in a checkpoint's inputs under which, for each
// partition of topic, the command offset of the last RESUME the task
// took is kept.
func resumedKey(topic string) string { return "\x00resumed:" + topic }

// haltedError is the error of a task stopped by h.
func haltedError(h catalog.Halt) error {
	return &TruncatedError{Topic: h.Topic, Partition: h.Partition, Offset: h.Offset, End: h.End, msg: h.Error}
}

// running returns the running query of rel's version. It takes no
// lock: tasks call it as they start, and a role change holds the
// runtime's lock while it waits for a task to stop.
func (rt *Runtime) running(rel *catalog.Relation) (*PersistentQuery, bool) {
	v, ok := rt.byStore.Load(rel.StoreName())
	if !ok {
		return nil, false
	}
	return v.(*PersistentQuery), true
}

// halts returns the halts of rel the runtime knows (Alter keeps them
// current), nil when it runs no query of rel's version.
func (rt *Runtime) halts(rel *catalog.Relation) []catalog.Halt {
	if q, ok := rt.running(rel); ok {
		if h := q.halts.Load(); h != nil {
			return *h
		}
	}
	return nil
}

// Alter takes the halts of rel, a relation whose catalog entry a halt
// or a RESUME replaced (catalog.Change.Altered): the tasks of a
// partition halted stop at their next start and report a lag; those
// resumed continue at their next start (a stopped task tries again
// within seconds).
func (rt *Runtime) Alter(rel *catalog.Relation) {
	if q, ok := rt.running(rel); ok {
		q.setHalts(rel.Halts)
	}
}

// setHalts records halts and marks the task states they stop.
func (q *PersistentQuery) setHalts(halts []catalog.Halt) {
	q.halts.Store(&halts)
	stopped := make(map[int32]bool)
	anySource := false
	for _, h := range halts {
		if h.Resumed == 0 {
			stopped[h.Partition] = true
			anySource = true
		}
	}
	for _, ts := range q.Rekey {
		ts.halted.Store(stopped[ts.Partition])
	}
	for _, ts := range q.Tasks {
		// A view that re-keys reads every source partition in each of
		// its partitions.
		ts.halted.Store(stopped[ts.Partition] || q.Rekey != nil && anySource)
	}
}

// checkHalt returns the error of a halt of rel on topic/p waiting for
// the operator, nil if none.
func (rt *Runtime) checkHalt(rel *catalog.Relation, topic string, p int32) error {
	for _, h := range rt.halts(rel) {
		if h.Topic == topic && h.Partition == p && h.Resumed == 0 {
			return haltedError(h)
		}
	}
	return nil
}

// checkHalts returns the error of any halt of rel on topic waiting for
// the operator (a view that re-keys stops on any of them).
func (rt *Runtime) checkHalts(rel *catalog.Relation, topic string) error {
	for _, h := range rt.halts(rel) {
		if h.Topic == topic && h.Resumed == 0 {
			return haltedError(h)
		}
	}
	return nil
}

// resumed returns the RESUME of a halt of rel on topic/p that cp has
// not taken yet, if any: the latest one.
func (rt *Runtime) resumed(rel *catalog.Relation, cp *materialize.Checkpoint, topic string, p int32) (catalog.Halt, bool) {
	var out catalog.Halt
	found := false
	for _, h := range rt.halts(rel) {
		if h.Topic != topic || h.Partition != p || h.Resumed == 0 {
			continue
		}
		if taken, ok := cp.Input[resumedKey(topic)][p]; ok && taken >= h.Resumed {
			continue
		}
		if !found || h.Resumed > out.Resumed {
			out, found = h, true
		}
	}
	return out, found
}

// takeResume returns the offset a task of rel that has applied topic/p
// up to next (applied: anything) reads it from, once the operator has
// resumed a halt of it: the partition's end when the loss was found, if
// next is beyond it. It marks the RESUME taken in cp, which the task's
// next commit records, and logs the records it continues without.
func (rt *Runtime) takeResume(rel *catalog.Relation, cp *materialize.Checkpoint, topic string, p int32, next int64, applied bool) int64 {
	h, ok := rt.resumed(rel, cp, topic, p)
	if !ok {
		return next
	}
	setOffset(&cp.Input, resumedKey(topic), p, h.Resumed)
	if !applied || next <= h.End {
		return next
	}
	rt.log.Warn("continuing after lost input, as RESUME accepted", "relation", rel.Name, "topic", topic, "partition", p,
		"applied_up_to", next, "continuing_at", h.End)
	return h.End
}

// stalled marks ts, whose task of rel ended with err, as not current when
// err is ErrInputTruncated, and records the loss in the catalog: the
// task stays stopped, on this node and any other, and its lag reads at
// least 1 (TaskState.Lag), not 0, until the operator resumes or drops
// rel, so that no read bounded by acceptable_offset_lag takes its rows
// for fresh.
func (rt *Runtime) stalled(ctx context.Context, rel *catalog.Relation, ts *TaskState, err error) error {
	if !errors.Is(err, ErrInputTruncated) {
		return err
	}
	ts.restored.Store(false)
	var te *TruncatedError
	if !errors.As(err, &te) || rt.opts.Halt == nil {
		return err
	}
	for _, h := range rt.halts(rel) {
		if h.Topic == te.Topic && h.Partition == te.Partition && h.Resumed == 0 {
			return err // recorded already
		}
	}
	h := catalog.Halt{Topic: te.Topic, Partition: te.Partition, Offset: te.Offset, End: te.End, Error: te.Error()}
	if herr := rt.opts.Halt(ctx, rel.Name, h); herr != nil {
		rt.log.Warn("recording lost input in the catalog", "relation", rel.Name, "topic", te.Topic, "partition", te.Partition, "err", herr)
	}
	return err
}

// remedy is what the error of a task of rel that lost input tells the
// operator to do.
func remedy(rel *catalog.Relation, rekeys bool) string {
	if rekeys {
		return "Rebuild it (DROP and CREATE it again): a view that re-keys its source cannot continue past lost input"
	}
	return "Rebuild it (DROP and CREATE it again) or accept the loss with RESUME " + rel.QueryName()
}

// rekeys reports whether rel is a view that re-keys its source, as the
// runtime runs it.
func (rt *Runtime) rekeys(rel *catalog.Relation) bool {
	q, ok := rt.running(rel)
	return ok && q.Plan != nil && q.Plan.Repartition
}
