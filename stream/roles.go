package stream

import (
	"context"
	"fmt"
	"maps"
	"sort"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/basindb/basin/ha"
	"github.com/basindb/basin/kafka"
	"github.com/basindb/basin/materialize"
)

// Roles are the tasks this node holds, each with its role; a task not
// in the map is ha.RoleNone. A task is a partition of a table's or view's
// store, named as ha names it.
type Roles map[materialize.StoreID]ha.Role

// slot runs one task of a query in the role this node has for it. A role
// change stops the task and starts it again in the new role; the store
// (and so the checkpoint) stays, so an active that becomes a standby, or
// the reverse, resumes where it was.
type slot struct {
	// key is the task's store partition; with rekey set it is the view's
	// source partition whose re-keying stage the slot runs, which has no
	// store and no role of its own (see reconcileLocked).
	key   materialize.StoreID
	rekey bool
	// stage names a rekey slot's stage in its task's name: "rekey"
	// when empty, "join" for a table join's join stage, "rekey-right"
	// for a stream–stream join's right routing stage, and
	// "stage<n>-join", "stage<n>-rekey" and "stage<n>-rekey-right" for
	// the tasks of join stage n of a join of three or more relations
	// (which run with the query's task of their number: active where
	// it is active, a standby where it stands by; routing stages, which
	// keep no state, active only).
	stage string
	ts    *TaskState
	name  string
	// run returns the task's loop for a role; nil when the task has
	// nothing to do in that role.
	run func(ha.Role) func(context.Context) error

	// Owned by Runtime.reconcile, under Runtime.mu. role is
	// ha.RoleNone from Runtime.start on.
	role   ha.Role
	cancel context.CancelFunc
	done   chan struct{}
}

// task names the slot's task as SHOW TASKS and the logs do:
// "store/partition", or "store/rekey/partition" for a re-keying stage
// ("store/join/partition" for a join stage).
func (s *slot) task() string {
	if s.rekey {
		stage := s.stage
		if stage == "" {
			stage = "rekey"
		}
		return s.key.View + "/" + stage + "/" + strconv.Itoa(int(s.key.Partition))
	}
	return s.key.String()
}

// SetRoles gives this node its tasks: every task of every query runs in
// the role roles gives it, and tasks it no longer holds stop. Before the
// first SetRoles every task is active (a node alone holds everything).
func (rt *Runtime) SetRoles(roles Roles) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.mu.roles = roles
	rt.mu.rolesSet = true
	names := make([]string, 0, len(rt.mu.queries))
	for n := range rt.mu.queries {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		rt.reconcileLocked(rt.mu.queries[n])
	}
}

// roleLocked is the role of key on this node.
func (rt *Runtime) roleLocked(key materialize.StoreID) ha.Role {
	if !rt.mu.rolesSet {
		return ha.RoleActive
	}
	if r, ok := rt.mu.roles[key]; ok {
		return r
	}
	return ha.RoleNone
}

// reconcileLocked brings q's tasks to their assigned roles. A view's
// re-keying stage for source partition sp is not assigned on its own: it
// runs where view partition sp mod partitions is active, so the
// stateless stages follow the stateful work and need no balancing of
// their own.
func (rt *Runtime) reconcileLocked(q *PersistentQuery) {
	for _, s := range q.slots {
		key := s.key
		if s.rekey {
			key = materialize.StoreID{View: key.View, Partition: key.Partition % int32(len(q.Tasks))}
		}
		want := rt.roleLocked(key)
		if s.run != nil && s.run(want) == nil {
			want = ha.RoleNone
		}
		if want == s.role && (s.done != nil || want == ha.RoleNone) {
			continue
		}
		if s.cancel != nil {
			s.cancel()
			<-s.done
			s.cancel, s.done = nil, nil
		}
		s.role = want
		s.ts.resetForRole(want)
		if want == ha.RoleNone {
			continue
		}
		ctx, cancel := context.WithCancel(q.ctx)
		s.cancel, s.done = cancel, make(chan struct{})
		rt.supervise(ctx, q, s.name, s.ts, s.run(want), s.done)
	}
}

// followChangelog keeps a standby replica: it applies the changelog
// partition to store from the store's checkpoint, for as long as ctx
// lasts, checkpointing the changelog offset, the input offsets and the
// position of the last marker in the same batch as the data. input is
// the active's input topic and fwd its forwarding topic ("" without
// one), whose end offsets measure the replica's lag.
func (rt *Runtime) followChangelog(ctx context.Context, store *materialize.Store, changelog, input, fwd string, p int32, ts *TaskState) error {
	cp, err := store.Checkpoint()
	if err != nil {
		return err
	}
	ends, err := kafka.EndOffsets(ctx, rt.adm, changelog)
	if err != nil {
		return err
	}
	caughtUp := ends[p]
	ts.changelogEnd.Store(caughtUp)
	cons, err := rt.consumer(fmt.Sprintf("standby-%s-%d", changelog, p), changelog, p, kgo.NewOffset().At(cp.ChangelogOffset))
	if err != nil {
		return err
	}
	defer cons.Close()
	publish := func() {
		if n, ok := cp.Input[input][p]; ok {
			ts.inputNext.Store(n)
		}
		if fwd != "" {
			ts.fwdNext.Store(cp.Input[fwd][p])
		}
		ts.applied(cp.UpdatedAt)
		if seen, ok := cp.Input[regroupSeen]; ok {
			seen = maps.Clone(seen)
			ts.sourceSeen.Store(&seen)
		}
		ts.publishPosition(cp.Position.Clone())
		if cp.ChangelogOffset >= caughtUp {
			ts.markRestored()
		}
	}
	publish()
	lastEnds := time.Time{}
	for {
		if time.Since(lastEnds) > time.Second {
			// The input's end, for the lag; a failure only delays it.
			if e, err := kafka.EndOffsets(ctx, rt.adm, input); err == nil {
				ts.inputEnd.Store(e[p])
				lastEnds = time.Now()
			}
			if fwd != "" {
				if e, err := kafka.EndOffsets(ctx, rt.adm, fwd); err == nil {
					ts.fwdEnd.Store(e[p])
				}
			}
		}
		fetches, ok, err := rt.poll(ctx, cons, &ts.changelogEnd)
		if !ok {
			return err
		}
		ts.tookIn(fetches)
		if fetches.NumRecords() == 0 {
			continue
		}
		b := store.NewBatch()
		if err := applyChangelog(b, &cp, fetches); err != nil {
			b.Close()
			return fmt.Errorf("following %s/%d: %w", changelog, p, err)
		}
		// While catching up, as in a restore, only the batch that
		// reaches the end seen at the start is synced.
		commit := b.Commit
		if cp.ChangelogOffset < caughtUp {
			commit = b.CommitNoSync
		}
		if err := commit(cp); err != nil {
			return err
		}
		publish()
	}
}

// changelogWriter is where applyChangelog writes: a materialize.Batch,
// or a materialize.Loader.
type changelogWriter interface {
	Set(key, value []byte)
	Delete(key []byte)
}

// applyChangelog adds the changelog records of fetches to b and advances
// cp past them; a marker sets cp's input, position and update time.
func applyChangelog(b changelogWriter, cp *materialize.Checkpoint, fetches kgo.Fetches) error {
	var merr error
	fetches.EachRecord(func(r *kgo.Record) {
		if merr != nil {
			return
		}
		cp.ChangelogOffset = r.Offset + 1
		if r.Attrs.IsControl() {
			return
		}
		if _, ok := hasHeader(r, headerMarker); ok {
			m, err := materialize.UnmarshalCheckpoint(r.Value)
			if err != nil {
				merr = err
				return
			}
			cp.Input, cp.Position, cp.UpdatedAt = m.Input, m.Position, m.UpdatedAt
			return
		}
		if r.Value == nil {
			b.Delete(r.Key)
		} else {
			b.Set(r.Key, r.Value)
		}
	})
	return merr
}
