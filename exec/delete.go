package exec

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/materialize"
	"github.com/basindb/basin/planner"
	"github.com/basindb/basin/serde"
	"github.com/basindb/basin/sql"
	"github.com/twmb/franz-go/pkg/kgo"
)

// deleteBatch is how many tombstones a DELETE produces at a time, so a
// DELETE of many rows holds a bounded number of records.
const deleteBatch = 10000

// deleteStmt runs DELETE FROM table WHERE cond: it reads the keys of the
// rows cond holds for, as SELECT would (read-your-writes and every
// other bound of the session apply), and writes a tombstone for each to
// the table's topic. The tag counts the rows found. Like INSERT it is
// applied at once, and a row written by another session after the read
// is not deleted.
func (s *Session) deleteStmt(ctx context.Context, st *sql.Delete, w ResultWriter) error {
	rel, err := s.deletable(st)
	if err != nil {
		return err
	}
	plan, err := s.planDelete(rel, st)
	if err != nil {
		return err
	}
	codec := serde.NewCodec(rel, s.e.Runtime.Registry())
	part := rel.PartitionerOf()
	wrote := materialize.Position{}
	recs := make([]*kgo.Record, 0, 64)
	started := time.Now()
	flush := func() error {
		if len(recs) == 0 {
			return nil
		}
		if err := s.e.Producer.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			return s.e.produceError(rel.Topic, started, err)
		}
		for _, r := range recs {
			wrote.Advance(r.Topic, r.Partition, r.Offset+1)
		}
		recs = recs[:0]
		return nil
	}
	n := 0
	env, opts := s.statement()
	_, err = s.e.read(nil, ctx, plan, nil, env, opts, func(r catalog.Row) error {
		key, err := codec.EncodeKey(r[:len(plan.Columns)])
		if err != nil {
			return err
		}
		recs = append(recs, &kgo.Record{Topic: rel.Topic, Partition: part.Partition(key, rel.Partitions), Key: key})
		n++
		if len(recs) == deleteBatch {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	// What was written before a failure stays written: the position
	// records it, so that the session reads its own deletes.
	if len(wrote) > 0 {
		s.noteWrites(wrote)
	}
	if err != nil {
		return err
	}
	if st.ReturnPosition {
		if err := w.Columns(positionColumns); err != nil {
			return err
		}
		if err := w.Row([]any{wrote.String()}); err != nil {
			return err
		}
	}
	return w.Complete("DELETE " + strconv.Itoa(n))
}

// deletable resolves the table st deletes from, refusing what has no
// rows to delete: views (maintained by their query), streams (append
// only) and the processing log.
func (s *Session) deletable(st *sql.Delete) (*catalog.Relation, error) {
	rel, err := s.e.Catalog.Resolve(st.Table)
	if err != nil {
		return nil, withPosition(err, st.Pos)
	}
	switch {
	case rel.Kind == catalog.KindView:
		return nil, pgerr.New(pgerr.WrongObjectType, "cannot delete from view %s", rel.Name).
			WithHint("A view is maintained by its query: delete from its source %s, and the view follows.", strings.Join(rel.Sources, ", ")).
			WithPosition(st.Pos)
	case rel.Kind == catalog.KindStream:
		return nil, pgerr.New(pgerr.WrongObjectType, "cannot delete from stream %s", rel.Name).
			WithDetail("A stream is append-only: each record is an event, and a later record does not undo an earlier one.").
			WithHint("Declare the topic as a TABLE to have rows that a DELETE (a tombstone) removes.").
			WithPosition(st.Pos)
	case strings.EqualFold(rel.Name, catalog.ProcessingLogName) || catalog.InternalTopic(rel.Topic):
		return nil, pgerr.New(pgerr.InsufficientPrivilege, "cannot delete from %s: its topic %s is written by basin", rel.Name, rel.Topic).
			WithPosition(st.Pos)
	}
	return rel, nil
}

// planDelete plans the read of the keys of the rows st deletes from rel.
func (s *Session) planDelete(rel *catalog.Relation, st *sql.Delete) (*planner.PullPlan, error) {
	var keys []string
	for _, k := range rel.Schema.KeyIndexes() {
		keys = append(keys, rel.Schema.Columns[k].Name)
	}
	return planner.PlanSelect(s.e.Catalog, st.SelectOf(keys))
}
