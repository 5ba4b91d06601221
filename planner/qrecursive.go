package planner

import (
	"strings"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/sql"
)

// RecursiveRel is a recursive common table expression, base UNION [ALL]
// step: the rows of Base, then of Step run over the rows the last round
// added (its WorkTableRel, of the same ID) until a round adds none. With
// UNION, rows seen before are not added again.
type RecursiveRel struct {
	Name       string
	ID         int
	Base, Step Rel
	All        bool
	Columns    []catalog.Column
}

// WorkTableRel is a recursive CTE's reference to itself in its step: the
// rows the last round added.
type WorkTableRel struct {
	Name    string
	ID      int
	Columns []catalog.Column
}

func (r *RecursiveRel) Cols() []catalog.Column { return r.Columns }
func (r *WorkTableRel) Cols() []catalog.Column { return r.Columns }

func (r *RecursiveRel) explain(b *strings.Builder, in string, ann Annotator) {
	all := ""
	if r.All {
		all = " ALL"
	}
	line(b, in, ann, r, "", "Recursive union%s (%s)", all, r.Name)
	r.Base.explain(b, in+"  ", ann)
	r.Step.explain(b, in+"  ", ann)
}

func (r *WorkTableRel) explain(b *strings.Builder, in string, ann Annotator) {
	line(b, in, ann, r, "", "Work table scan (%s)", r.Name)
}

// recursion is a recursive CTE being planned: in its step, a reference
// to it is its work table.
type recursion struct {
	def  *cteDef
	rel  *WorkTableRel
	step bool // planning the step (else the base)
	refs int
}

// recursiveCTE plans a reference to the recursive CTE def, or returns
// nil, nil when def does not read itself (a CTE of WITH RECURSIVE may
// not), which is then planned as any other.
func (qp *queryPlanner) recursiveCTE(def *cteDef, ref *sql.TableRef, lvl *level, into *scope) (Rel, error) {
	for _, r := range qp.recursing {
		if r.def != def {
			continue
		}
		if !r.step {
			return nil, pgerr.New(pgerr.InvalidRecursion, "recursive reference to query %q must not appear within its non-recursive term", def.cte.Name).
				WithPosition(ref.Pos)
		}
		if r.refs++; r.refs > 1 {
			return nil, pgerr.New(pgerr.InvalidRecursion, "recursive reference to query %q must not appear more than once", def.cte.Name).
				WithPosition(ref.Pos)
		}
		into.add(aliasOr(ref.Alias, def.cte.Name), r.rel.Columns)
		return r.rel, nil
	}
	sel := def.cte.Select
	if !def.cte.Recursive || !readsTable(sel, def.cte.Name) {
		return nil, nil
	}
	n := len(sel.SetOps)
	if n == 0 || sel.SetOps[n-1].Op != "UNION" {
		return nil, pgerr.New(pgerr.InvalidRecursion, "recursive query %q does not have the form non-recursive-term UNION [ALL] recursive-term", def.cte.Name)
	}
	if len(sel.OrderBy) > 0 || sel.Limit != nil || sel.Offset != nil {
		return nil, pgerr.New(pgerr.FeatureNotSupported, "ORDER BY, LIMIT and OFFSET in a recursive query are not implemented")
	}
	base := *sel
	base.SetOps = sel.SetOps[:n-1]
	last := sel.SetOps[n-1]

	// Both terms see the CTEs defined before this one, this one too (a
	// reference in the base is refused above), and the scopes around
	// its WITH.
	saved := qp.ctes
	defer func() { qp.ctes = saved }()
	qp.ctes = append(append([]*cteDef{}, def.visible...), def)
	rec := &recursion{def: def}
	qp.recursing = append(qp.recursing, rec)
	defer func() { qp.recursing = qp.recursing[:len(qp.recursing)-1] }()

	bq, err := qp.planQuery(&base, def.parent)
	if err != nil {
		return nil, err
	}
	cols := append([]catalog.Column{}, bq.Columns...)
	if len(def.cte.Columns) > len(cols) {
		return nil, pgerr.New(pgerr.InvalidColumnReference, "table %q has %d columns available but %d columns specified",
			def.cte.Name, len(cols), len(def.cte.Columns))
	}
	for i, name := range def.cte.Columns {
		cols[i].Name = name
	}
	for i, c := range cols {
		if c.Type == catalog.Unknown {
			// An untyped constant is text, as in Postgres.
			cols[i].Type = catalog.Varchar
			setArmType(bq.Root, i, catalog.Varchar)
		}
	}
	qp.nextWork++
	rec.rel = &WorkTableRel{Name: def.cte.Name, ID: qp.nextWork, Columns: cols}
	rec.step = true
	sq, err := qp.planQuery(last.Select, def.parent)
	if err != nil {
		return nil, err
	}
	if rec.refs == 0 {
		return nil, pgerr.New(pgerr.InvalidRecursion, "recursive reference to query %q must be in its recursive term, after the last UNION", def.cte.Name)
	}
	sc := sq.Columns
	if len(sc) != len(cols) {
		return nil, pgerr.New(pgerr.SyntaxError, "each UNION query must have the same number of columns")
	}
	for i := range cols {
		switch {
		case sc[i].Type == cols[i].Type:
		case sc[i].Type == catalog.Unknown:
			setArmType(sq.Root, i, cols[i].Type)
		default:
			err := pgerr.New(pgerr.DatatypeMismatch, "recursive query %q column %d has type %s in non-recursive term but type %s overall",
				def.cte.Name, i+1, sqlName(cols[i].Type), sqlName(sc[i].Type)).
				WithHint("Cast the output of the non-recursive term to the correct type.")
			if len(base.SetOps) == 0 && i < len(base.Items) && base.Items[i].Expr != nil && !hasStar(base.Items) {
				err.WithPosition(base.Items[i].Expr.Position())
			}
			return nil, err
		}
	}
	if bq.Correlated || sq.Correlated {
		lvl.correlated = true
	}
	into.add(aliasOr(ref.Alias, def.cte.Name), cols)
	return &RecursiveRel{Name: def.cte.Name, ID: rec.rel.ID, Base: bq.Root, Step: sq.Root, All: last.All, Columns: cols}, nil
}

func aliasOr(alias, name string) string {
	if alias != "" {
		return alias
	}
	return name
}

// readsTable reports whether s reads a relation named name (unqualified)
// anywhere: in FROM, a join, a subquery or a CTE.
func readsTable(s *sql.Select, name string) bool {
	found := false
	var visit func(s *sql.Select)
	var from func(it sql.FromItem)
	from = func(it sql.FromItem) {
		switch it := it.(type) {
		case *sql.TableRef:
			if it.Schema == "" && strings.EqualFold(it.Name, name) {
				found = true
			}
		case *sql.SubqueryRef:
			visit(it.Select)
		case *sql.Join:
			from(it.Left)
			from(it.Right)
		}
	}
	visit = func(s *sql.Select) {
		if s == nil || found {
			return
		}
		for _, c := range s.With {
			visit(c.Select)
		}
		for _, it := range s.From {
			from(it)
		}
		for _, op := range s.SetOps {
			visit(op.Select)
		}
		selectExprs(s, func(e sql.Expr) {
			walkQuery(e, func(x sql.Expr) bool {
				switch x := x.(type) {
				case *sql.Subquery:
					visit(x.Select)
				case *sql.InSubquery:
					visit(x.Select)
				case *sql.Quantified:
					visit(x.Select)
				}
				return !found
			})
		})
	}
	visit(s)
	return found
}

func hasStar(items []sql.SelectItem) bool {
	for _, it := range items {
		if it.Star {
			return true
		}
	}
	return false
}
