package exec

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/ha"
)

// TaskStatus is one task as this node runs it: what SHOW TASKS and the
// HTTP /tasks endpoint report.
type TaskStatus struct {
	// Task names it: store/partition, or store/rekey/partition.
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
}

// Member is one node of the cluster, for SHOW CLUSTER.
type Member struct {
	Node       string `json:"node"`
	PGAddr     string `json:"pg_addr"`
	HTTPAddr   string `json:"http_addr"`
	Alive      bool   `json:"alive"`
	Leader     bool   `json:"leader"`
	Generation int32  `json:"generation"`
	Active     int    `json:"active"`
	Standby    int    `json:"standby"`
	Warmup     int    `json:"warmup"`
}

// ClusterInfo is what sessions learn of the cluster; the node provides
// it.
type ClusterInfo interface {
	// Tasks returns every task of the cluster in every role. Tasks of a
	// node that does not answer are reported from the assignment with
	// state UNREACHABLE.
	Tasks(ctx context.Context) ([]TaskStatus, error)
	// Members returns the nodes of the cluster.
	Members(ctx context.Context) ([]Member, error)
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
			Role: ts.heldRole().String(), State: "RUNNING"}
		if !ts.restored.Load() {
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
			if rels[s].Plan == nil {
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

// clusterTasks returns every task of the cluster, or of this node when
// it is alone.
func (s *Session) clusterTasks(ctx context.Context) ([]TaskStatus, error) {
	if s.e.Members != nil {
		return s.e.Members.Tasks(ctx)
	}
	return s.e.Runtime.Tasks(time.Now()), nil
}

// misplacedByRelation sums the misplaced records the active tasks found,
// by lower-case relation name.
func misplacedByRelation(tasks []TaskStatus) map[string]int64 {
	m := map[string]int64{}
	for _, t := range tasks {
		if t.Role == ha.RoleActive.String() {
			m[strings.ToLower(t.Relation)] += t.Misplaced
		}
	}
	return m
}

// showTasks runs SHOW TASKS.
func (s *Session) showTasks(ctx context.Context, w ResultWriter) error {
	tasks, err := s.clusterTasks(ctx)
	if err != nil {
		return err
	}
	cols := []catalog.Column{
		{Name: "task", Type: catalog.Varchar}, {Name: "relation", Type: catalog.Varchar},
		{Name: "partition", Type: catalog.Int}, {Name: "node", Type: catalog.Varchar},
		{Name: "role", Type: catalog.Varchar}, {Name: "state", Type: catalog.Varchar},
		{Name: "changelog_offset", Type: catalog.BigInt}, {Name: "changelog_end", Type: catalog.BigInt},
		{Name: "offset_lag", Type: catalog.BigInt}, {Name: "time_lag_ms", Type: catalog.BigInt},
		{Name: "missing_standbys", Type: catalog.Int}, {Name: "error", Type: catalog.Varchar},
	}
	if err := w.Columns(cols); err != nil {
		return err
	}
	for _, t := range tasks {
		if err := w.Row([]any{t.Task, t.Relation, int64(t.Partition), t.Node, t.Role, t.State, t.ChangelogOffset,
			t.ChangelogEnd, t.OffsetLag, t.TimeLagMs, int64(t.MissingStandbys), nullIfEmpty(t.Error)}); err != nil {
			return err
		}
	}
	return w.Complete("SHOW")
}

// showCluster runs SHOW CLUSTER.
func (s *Session) showCluster(ctx context.Context, w ResultWriter) error {
	var members []Member
	if s.e.Members != nil {
		var err error
		if members, err = s.e.Members.Members(ctx); err != nil {
			return err
		}
	} else {
		m := Member{Node: s.e.Node, Alive: true, Leader: true}
		m.Active = len(s.e.Runtime.Tasks(time.Now()))
		members = []Member{m}
	}
	cols := []catalog.Column{
		{Name: "node", Type: catalog.Varchar}, {Name: "pg_addr", Type: catalog.Varchar},
		{Name: "http_addr", Type: catalog.Varchar}, {Name: "alive", Type: catalog.Boolean},
		{Name: "leader", Type: catalog.Boolean}, {Name: "generation", Type: catalog.Int},
		{Name: "active", Type: catalog.Int}, {Name: "standby", Type: catalog.Int}, {Name: "warmup", Type: catalog.Int},
	}
	if err := w.Columns(cols); err != nil {
		return err
	}
	for _, m := range members {
		if err := w.Row([]any{m.Node, nullIfEmpty(m.PGAddr), nullIfEmpty(m.HTTPAddr), m.Alive, m.Leader,
			int64(m.Generation), int64(m.Active), int64(m.Standby), int64(m.Warmup)}); err != nil {
			return err
		}
	}
	return w.Complete("SHOW")
}
