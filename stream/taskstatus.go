package stream

import (
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/ha"
)

// TaskStatus is one task as this node runs it: what SHOW TASKS and the
// HTTP /tasks endpoint report.
type TaskStatus struct {
	// Task names it: store/partition, or store/rekey/partition (store/join/partition for a join stage, store/rekey-right/partition for the routing stage of a stream–stream join's right stream).
	Task     string `json:"task"`
	Relation string `json:"relation"`
	// Store is the task's store (name@version); empty for a re-keying
	// stage, which keeps none.
	Store     string `json:"store,omitempty"`
	Partition int32  `json:"partition"`
	Node      string `json:"node"`
	// Role is active, standby or warmup: an ha.Role's wire form.
	Role string `json:"role"`
	// State is RESTORING until the task has caught up with its changelog
	// as it was when the task started, RUNNING after; ERROR while it is
	// being restarted after a failure (Error says why).
	State string `json:"state"`
	// ChangelogOffset is the next changelog offset the store reflects;
	// ChangelogEnd the changelog's end as last seen.
	ChangelogOffset int64 `json:"changelog_offset"`
	ChangelogEnd    int64 `json:"changelog_end"`
	// OffsetLag is the input records not yet reflected; TimeLagMs the
	// age of the oldest of them (TaskState.Lag).
	OffsetLag int64  `json:"offset_lag"`
	TimeLagMs int64  `json:"time_lag_ms"`
	Position  string `json:"position,omitempty"`
	Error     string `json:"error,omitempty"`
	// MissingStandbys, on an active's row, is how many of the standbys
	// the task wants have no node to run on (too few nodes).
	MissingStandbys int `json:"missing_standbys,omitempty"`
	// Misplaced counts the input records the task found on a partition
	// other than their key's since it started on this node (placement.go;
	// an active forwards them to their partition).
	Misplaced int64 `json:"misplaced,omitempty"`
	// RecordsIn and BytesIn count the records the task has taken in
	// (its input; a standby's or warm-up's, its changelog), and their
	// keys' and values' bytes, since it started on this node.
	RecordsIn int64 `json:"records_in"`
	BytesIn   int64 `json:"bytes_in"`
	// RecordsOut and BytesOut count the records the task wrote (its
	// changelog's, published, forwarded and processing-log records; not
	// its checkpoint markers), and their bytes; Committed and Aborted its
	// transactions.
	RecordsOut int64 `json:"records_out"`
	BytesOut   int64 `json:"bytes_out"`
	Committed  int64 `json:"transactions_committed"`
	Aborted    int64 `json:"transactions_aborted"`
}

// Tasks returns the tasks this node runs, in any role, sorted by task.
func (rt *Runtime) Tasks(now time.Time) []TaskStatus {
	rt.mu.Lock()
	var slots []*slot
	rels := map[*slot]*PersistentQuery{}
	for _, q := range rt.mu.queries {
		for _, s := range q.slots {
			if s.role != ha.RoleNone {
				slots = append(slots, s)
				rels[s] = q
			}
		}
	}
	rt.mu.Unlock()
	out := make([]TaskStatus, 0, len(slots))
	for _, s := range slots {
		ts := s.ts
		st := TaskStatus{Task: s.task(), Relation: rels[s].Rel.Name, Partition: s.key.Partition, Node: rt.opts.Node,
			Role: ts.heldRole().String(), State: "RUNNING", RecordsIn: ts.recordsIn.Load(), BytesIn: ts.bytesIn.Load(),
			RecordsOut: ts.recordsOut.Load(), BytesOut: ts.bytesOut.Load(), Committed: ts.committed.Load(), Aborted: ts.aborted.Load()}
		if !ts.Restored() {
			st.State = "RESTORING"
		}
		if e := ts.LastError(); e != "" {
			st.State, st.Error = "ERROR", e
		}
		if !s.rekey {
			st.Misplaced = ts.misplaced.Load()
			st.Store = s.key.View
			st.OffsetLag, st.TimeLagMs = ts.Lag(now)
			cp, err := rt.opts.DB.Store(s.key).Checkpoint()
			if err == nil {
				st.ChangelogOffset = cp.ChangelogOffset
				st.Position = cp.Position.String()
			}
			end := ts.changelogEnd.Load()
			if rels[s].Rel.Kind == catalog.KindTable {
				end = ts.inputEnd.Load() // a table's topic is its changelog
			}
			st.ChangelogEnd = max(end, st.ChangelogOffset)
		}
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Relation != out[j].Relation {
			return strings.ToLower(out[i].Relation) < strings.ToLower(out[j].Relation)
		}
		if out[i].Task != out[j].Task {
			return out[i].Task < out[j].Task
		}
		return false
	})
	return out
}

// tookIn counts the records of fetches as taken in by the task (its
// input, or a replica's changelog), for TaskStatus and the metrics, and
// notes the oldest one's timestamp for its freshness (applied).
func (t *TaskState) tookIn(fetches kgo.Fetches) {
	n, b, oldest := int64(0), int64(0), int64(0)
	fetches.EachRecord(func(r *kgo.Record) {
		n++
		b += int64(len(r.Key) + len(r.Value))
		if ms := r.Timestamp.UnixMilli(); ms > 0 && !r.Attrs.IsControl() && (oldest == 0 || ms < oldest) {
			oldest = ms
		}
	})
	t.recordsIn.Add(n)
	t.bytesIn.Add(b)
	if oldest > 0 {
		t.takenAt.CompareAndSwap(0, oldest)
	}
}

// wrote counts recs, but for checkpoint and stage markers, as written by the task
// (its changelog's, published, forwarded and processing-log records).
func (t *TaskState) wrote(recs []*kgo.Record) {
	n, b := int64(0), int64(0)
	for _, r := range recs {
		if len(r.Headers) > 0 && (r.Headers[0].Key == headerMarker || r.Headers[0].Key == headerStage) {
			continue // a checkpoint's or a stage's marker
		}
		n++
		b += int64(len(r.Key) + len(r.Value))
	}
	t.recordsOut.Add(n)
	t.bytesOut.Add(b)
}

// ended counts one of the task's transactions as committed or aborted.
func (t *TaskState) ended(committed bool) {
	if committed {
		t.committed.Add(1)
	} else {
		t.aborted.Add(1)
	}
}

// restoreCounts count the restores of stores from their changelogs that
// had something to restore: how many, the changelog offsets they
// covered, and the time they took.
type restoreCounts struct {
	n, offsets, nanos atomic.Int64
}

func (r *restoreCounts) note(offsets int64, took time.Duration) {
	r.n.Add(1)
	r.offsets.Add(offsets)
	r.nanos.Add(int64(took))
}

// RestoreStats are the restores of this node's stores from their
// changelogs that had something to restore, since it started.
type RestoreStats struct {
	Restores int64
	// Offsets is the changelog offsets they covered (records, and the
	// markers and transaction markers among them).
	Offsets int64
	Took    time.Duration
}

// Restores returns the node's RestoreStats.
func (rt *Runtime) Restores() RestoreStats {
	return RestoreStats{Restores: rt.restores.n.Load(), Offsets: rt.restores.offsets.Load(), Took: time.Duration(rt.restores.nanos.Load())}
}
