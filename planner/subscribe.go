package planner

import (
	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/sql"
)

// SubscribePlan is a subscription's filter and select list (package
// push), bound over the rows of its relation's changes: the relation's
// columns, then ROWTIME (RecordInput).
type SubscribePlan struct {
	Rel *catalog.Relation
	// Filter is the WHERE; nil for none.
	Filter Scalar
	// Output are the select list of SELECT ... EMIT CHANGES, and
	// Columns its columns; both nil for every visible column.
	Output  []Scalar
	Columns []catalog.Column
}

// PlanSubscribe plans SUBSCRIBE and SELECT ... EMIT CHANGES against cat.
func PlanSubscribe(cat *catalog.Catalog, s *sql.Subscribe) (*SubscribePlan, error) {
	rel, err := cat.Resolve(s.Name)
	if err != nil {
		if pe, ok := pgerr.As(err); ok {
			pe.WithPosition(s.NamePos)
		}
		return nil, err
	}
	switch rel.Kind {
	case catalog.KindView, catalog.KindStream:
	default:
		return nil, pgerr.New(pgerr.FeatureNotSupported, "cannot subscribe to table %s: a table declared over a topic has no changes basin records", rel.Name).
			WithPosition(s.NamePos).
			WithHint("Subscribe to a view of it: CREATE TABLE %s_view AS SELECT * FROM %s.", rel.Name, rel.Name)
	}
	p := &SubscribePlan{Rel: rel}
	b := &binder{cols: RecordInput(rel), rel: rel.Name}
	items := s.Items
	if items == nil {
		items = []sql.SelectItem{{Star: true}}
	}
	items, err = bindRecordFilter(b, &sql.Select{Items: items, Where: s.Where}, rel, &p.Filter)
	if err != nil {
		return nil, err
	}
	if s.Items == nil {
		return p, nil
	}
	if p.Output, err = b.bindItems(items); err != nil {
		return nil, err
	}
	p.Columns = outputColumns(items, p.Output)
	return p, nil
}
