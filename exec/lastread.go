package exec

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/pull"
)

// afterRead records where a SELECT's partitions of rel were read, for
// SHOW basin.last_read and basin.monotonic_reads, and with
// basin.freshness_notices on tells the client in a NOTICE. Reads of no
// partition (a catalog query, SELECT 1) leave the last read as it was.
func (s *Session) afterRead(rel *catalog.Relation, reads []pull.PartitionRead, w ResultWriter) {
	if len(reads) == 0 {
		return
	}
	s.noteReads(rel, reads)
	s.lastRead = append(s.lastRead[:0], reads...)
	for i := range s.lastRead {
		if s.lastRead[i].Rel == nil {
			s.lastRead[i].Rel = rel
		}
	}
	slices.SortStableFunc(s.lastRead, func(a, b pull.PartitionRead) int { return cmp.Compare(a.Partition, b.Partition) })
	if s.vars["basin.freshness_notices"] != "on" {
		return
	}
	var parts []string
	var maxLag, maxTime int64
	for _, r := range s.lastRead {
		parts = append(parts, fmt.Sprintf("%d: %s %s lag %d", r.Partition, r.ServedBy, r.Role, r.OffsetLag))
		maxLag, maxTime = max(maxLag, r.OffsetLag), max(maxTime, r.TimeLagMs)
	}
	_ = w.Notice(&pgerr.Error{Severity: "NOTICE", Code: pgerr.SuccessfulCompletion,
		Message: fmt.Sprintf("read %d partitions, offset lag at most %d, time lag at most %d ms", len(s.lastRead), maxLag, maxTime),
		Detail:  "partition: node role lag — " + strings.Join(parts, "; ")})
}

// showLastRead runs SHOW basin.last_read: one row per partition the
// session's last SELECT read, with the relation it is of (a query of the
// relational engine may read several).
func (s *Session) showLastRead(w ResultWriter) error {
	cols := []catalog.Column{
		{Name: "partition", Type: catalog.Int}, {Name: "served_by", Type: catalog.Varchar},
		{Name: "role", Type: catalog.Varchar}, {Name: "offset_lag", Type: catalog.BigInt},
		{Name: "time_lag_ms", Type: catalog.BigInt}, {Name: "position", Type: catalog.Varchar},
		{Name: "relation", Type: catalog.Varchar},
	}
	if err := w.Columns(cols); err != nil {
		return err
	}
	for _, r := range s.lastRead {
		var rel any
		if r.Rel != nil {
			rel = r.Rel.Name
		}
		if err := w.Row([]any{int64(r.Partition), r.ServedBy, r.Role, r.OffsetLag, r.TimeLagMs, r.Position, rel}); err != nil {
			return err
		}
	}
	return w.Complete("SHOW")
}
