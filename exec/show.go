package exec

import (
	"context"
	"strings"
	"time"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/ha"
	"github.com/basindb/basin/stream"
)

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
	Tasks(ctx context.Context) ([]stream.TaskStatus, error)
	// Members returns the nodes of the cluster.
	Members(ctx context.Context) ([]Member, error)
}

// clusterTasks returns every task of the cluster, or of this node when
// it is alone.
func (s *Session) clusterTasks(ctx context.Context) ([]stream.TaskStatus, error) {
	if s.e.Members != nil {
		return s.e.Members.Tasks(ctx)
	}
	return s.e.Runtime.Tasks(time.Now()), nil
}

// misplacedByRelation sums the misplaced records the active tasks found,
// by lower-case relation name.
func misplacedByRelation(tasks []stream.TaskStatus) map[string]int64 {
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
