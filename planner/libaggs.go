package planner

import (
	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/sql"
)

// The aggregate library that views keep incrementally and pull queries
// compute: ksqlDB's collect_list, collect_set, topk, topkdistinct,
// histogram and correlation, and Postgres's array_agg, corr, covar_pop
// and covar_samp. eval.Aggregator keeps them in views; query/ in pull
// queries.

func init() {
	for name := range libraryAggs {
		queryAggregates[name] = true
	}
}

// libraryAggs are the library's aggregates and their argument counts.
var libraryAggs = map[string]int{
	"collect_list": 1, "collect_set": 1, "histogram": 1,
	"topk": 2, "topkdistinct": 2,
	"correlation": 2, "corr": 2, "covar_pop": 2, "covar_samp": 2,
}

// pairAgg reports whether fn aggregates pairs of numbers: corr,
// correlation, covar_pop and covar_samp.
func pairAgg(fn string) bool {
	switch fn {
	case "corr", "correlation", "covar_pop", "covar_samp":
		return true
	}
	return false
}

// typeLibraryAgg types one of the library's aggregates, whose arguments
// spec holds, bound: spec.T and, for topk and topkdistinct, spec.N.
func (b *binder) typeLibraryAgg(e *sql.Func, spec *AggSpec) error {
	switch {
	case pairAgg(spec.Func):
		for i, a := range []*Scalar{&spec.Arg, &spec.Arg2} {
			t := (*a).Type()
			if !t.Numeric() && t != catalog.Unknown {
				return pgerr.New(pgerr.UndefinedFunction, "function %s(%s, %s) does not exist", e.Name, sqlName(spec.Arg.Type()), sqlName(spec.Arg2.Type())).
					WithPosition(e.Args[i].Position()).
					WithHint("%s takes two numbers.", e.Name)
			}
			if t != catalog.Double {
				*a = &Cast{X: *a, T: catalog.Double}
			}
		}
		spec.T = catalog.Double
		return nil
	case spec.Func == "histogram":
		var err error
		if spec.Arg, err = b.castAny(spec.Arg, catalog.Varchar, e.Pos); err != nil {
			return err
		}
		spec.T = catalog.JSONB
		return nil
	}
	t := spec.Arg.Type()
	if t == catalog.Unknown {
		t = catalog.Varchar
	}
	if t.Subscriptable() {
		return pgerr.New(pgerr.FeatureNotSupported, "%s of arrays is not supported", e.Name).WithPosition(e.Pos)
	}
	spec.T = catalog.ArrayOf(t)
	if spec.Func == "topk" || spec.Func == "topkdistinct" {
		n, err := constCount(e, spec.Arg2, 1)
		if err != nil {
			return err
		}
		if t == catalog.JSON || t == catalog.JSONB {
			return pgerr.New(pgerr.UndefinedFunction, "function %s(%s, integer) does not exist", e.Name, sqlName(t)).WithPosition(e.Pos).
				WithHint("%s orders its values; json has no order.", e.Name)
		}
		spec.N, spec.Arg2 = n, nil
	}
	return nil
}

// maxAggCount bounds the k of topk and the n of latest_by_offset: the
// values a group keeps.
const maxAggCount = 10000

// constCount reads the count argument (topk's k, latest_by_offset's n),
// argument number arg of e (0-based), a constant integer from 1 to
// maxAggCount.
func constCount(e *sql.Func, s Scalar, arg int) (int64, error) {
	k, ok := s.(*Const)
	var n int64
	if ok {
		n, ok = k.V.(int64)
	}
	if !ok || k.T != catalog.Int && k.T != catalog.BigInt && k.T != catalog.Unknown {
		return 0, pgerr.New(pgerr.InvalidParameterValue, "the count of %s must be a constant integer", e.Name).WithPosition(e.Args[arg].Position()).
			WithHint("Write it as a number: %s(x, 3).", e.Name)
	}
	if n < 1 || n > maxAggCount {
		return 0, pgerr.New(pgerr.InvalidParameterValue, "the count of %s must be from 1 to %d, not %d", e.Name, maxAggCount, n).WithPosition(e.Args[arg].Position())
	}
	return n, nil
}
