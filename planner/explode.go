package planner

import (
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/sql"
)

// EXPLODE, ksqlDB's table function, in a derived stream: a select item
// EXPLODE(array) makes each source record one record per element of the
// array, the other items copied into each. Several EXPLODEs zip: a
// record makes as many records as its longest array has elements, a
// shorter one giving NULL past its end, as ksqlDB does (and as Postgres
// runs set-returning functions of a select list); a NULL or empty array
// gives none. In a pull query EXPLODE is unnest, a set-returning
// function of the relational engine.

// ExplodeFunc is EXPLODE's name.
const ExplodeFunc = "explode"

// explodeItems returns the indexes of the output items that are EXPLODE
// calls, and refuses one anywhere else in them.
func explodeItems(out []Scalar, items []sql.SelectItem) ([]int, error) {
	var idx []int
	for i, o := range out {
		top, isCall := o.(*Call)
		if isCall && top.Name == ExplodeFunc {
			idx = append(idx, i)
			o = top.Args[0]
		}
		var nested bool
		Walk(o, func(s Scalar) {
			if c, ok := s.(*Call); ok && c.Name == ExplodeFunc {
				nested = true
			}
		})
		if nested {
			return nil, pgerr.New(pgerr.FeatureNotSupported, "EXPLODE inside an expression is not supported").WithPosition(items[i].Expr.Position()).
				WithHint("Explode in a select item of its own: EXPLODE(a) AS x.")
		}
	}
	return idx, nil
}
