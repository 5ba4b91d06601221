package stream

import (
	"log/slog"
	"testing"
	"time"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/materialize"
)

// TestHaltedReplicaNotCurrent: a replica of a partition the catalog
// holds a halt of reads a lag of at least 1 even when it has every
// record its input's end counts (a standby following the changelog of
// a view whose source lost records: the end is below what it applied),
// and 0 again once the halt is resumed. For a view that re-keys, a halt
// of any source partition stops every view partition.
func TestHaltedReplicaNotCurrent(t *testing.T) {
	now := time.Now()
	direct := &PersistentQuery{Rel: &catalog.Relation{Name: "v"}}
	for p := range int32(2) {
		ts := newTaskState(p)
		ts.markRestored()
		ts.inputNext.Store(5)
		ts.inputEnd.Store(2)
		direct.Tasks = append(direct.Tasks, ts)
	}
	lags := func(q *PersistentQuery) (out []int64) {
		for _, ts := range q.Tasks {
			lag, _ := ts.Lag(now)
			out = append(out, lag)
		}
		return out
	}
	halt := catalog.Halt{Topic: "src", Partition: 1, Offset: 5, End: 2}
	direct.setHalts([]catalog.Halt{halt})
	if got := lags(direct); got[0] != 0 || got[1] != 1 {
		t.Fatalf("lags with partition 1 halted: %v, want [0 1]", got)
	}
	halt.Resumed = 7
	direct.setHalts([]catalog.Halt{halt})
	if got := lags(direct); got[0] != 0 || got[1] != 0 {
		t.Fatalf("lags once resumed: %v, want [0 0]", got)
	}

	rekeyed := &PersistentQuery{Rel: &catalog.Relation{Name: "w"}, Rekey: []*TaskState{newTaskState(0), newTaskState(1)}}
	for p := range int32(3) {
		ts := newTaskState(p)
		ts.markRestored()
		rekeyed.Tasks = append(rekeyed.Tasks, ts)
	}
	halt.Resumed = 0
	rekeyed.setHalts([]catalog.Halt{halt})
	if got := lags(rekeyed); got[0] != 1 || got[1] != 1 || got[2] != 1 {
		t.Fatalf("lags of a view that re-keys with source partition 1 halted: %v, want [1 1 1]", got)
	}
	if rekeyed.Rekey[0].halted.Load() || !rekeyed.Rekey[1].halted.Load() {
		t.Fatal("the re-keying task of source partition 1 alone must be halted")
	}
}

// TestTakeResumeOnce: a task continues at the halt's end once; with the
// RESUME marked taken in its checkpoint (as its next commit records it),
// a later run reads on from its own offset. A task that had not got as
// far as the end only takes the mark.
func TestTakeResumeOnce(t *testing.T) {
	rt := &Runtime{}
	rt.log = slog.New(slog.DiscardHandler)
	rel := &catalog.Relation{Name: "v", Version: 3}
	q := &PersistentQuery{Rel: rel}
	q.setHalts([]catalog.Halt{{Topic: "src", Partition: 0, Offset: 5, End: 2, Resumed: 9}})
	rt.byStore.Store(rel.StoreName(), q)

	var cp materialize.Checkpoint
	if got := rt.takeResume(rel, &cp, "src", 0, 5, true); got != 2 {
		t.Fatalf("first run after RESUME continues at %d, want 2", got)
	}
	if got := rt.takeResume(rel, &cp, "src", 0, 7, true); got != 7 {
		t.Fatalf("a run after the RESUME was taken continues at %d, want its own 7", got)
	}
	var behind materialize.Checkpoint
	if got := rt.takeResume(rel, &behind, "src", 0, 1, true); got != 1 {
		t.Fatalf("a replica behind the end continues at %d, want its own 1", got)
	}
	if _, ok := rt.resumed(rel, &behind, "src", 0); ok {
		t.Fatal("the RESUME is not marked taken for the replica behind the end")
	}
	if err := rt.checkHalt(rel, "src", 0); err != nil {
		t.Fatalf("a resumed halt still stops the task: %v", err)
	}
	q.setHalts([]catalog.Halt{{Topic: "src", Partition: 0, Offset: 5, End: 2, Error: "lost"}})
	if err := rt.checkHalt(rel, "src", 0); err == nil || err.Error() != "lost" {
		t.Fatalf("a waiting halt: %v, want its error", err)
	}
}

// TestHaltsWithoutTheLock: what a task calls as it starts or fails
// (checkHalt, takeResume, rekeys, Alter's halts) must not wait for the
// runtime's lock, which a role change holds while it waits for that
// task to stop: with the lock held, each returns.
func TestHaltsWithoutTheLock(t *testing.T) {
	rt := &Runtime{}
	rt.log = slog.New(slog.DiscardHandler)
	rel := &catalog.Relation{Name: "v", Version: 3}
	q := &PersistentQuery{Rel: rel}
	q.setHalts([]catalog.Halt{{Topic: "src", Partition: 0, Offset: 5, End: 2, Error: "lost"}})
	rt.byStore.Store(rel.StoreName(), q)
	rt.mu.Lock()
	defer rt.mu.Unlock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = rt.checkHalt(rel, "src", 0)
		var cp materialize.Checkpoint
		rt.takeResume(rel, &cp, "src", 0, 5, true)
		rt.rekeys(rel)
		rt.Alter(rel)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a task's halt checks wait for the runtime's lock: a role change waiting for the task would deadlock")
	}
}
