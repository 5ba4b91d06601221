package query

import (
	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/eval"
)

// # Memory
//
// Every operator materializes its rows, so what a query holds is the
// rows of the operators that have run and whose consumer has not
// finished, plus each running operator's own state (a hash join's build
// side, the groups of an aggregation, a window's partitions, the set of
// a DISTINCT or set operation, sort keys). Each is charged to the
// query's eval.Memory (Scope.Mem) as it is buffered, with eval.RowBytes'
// estimates, and a query past basin.query_memory fails with 53200
// naming the operator. Nothing spills to disk.
//
// An operator's rows are charged by the operator that makes them; its
// consumer learns how much that was from the memory's growth while the
// input ran (input) and releases it once it has made its own rows from
// them. A consumer that passes its input's rows on (a filter, UNION ALL,
// a limit) keeps their charge, which then counts as its own. Rows kept
// for the rest of the statement (a relation's rows, read once per
// statement; an uncorrelated subquery's result) are pinned: no release
// gives them back.

// input runs op for a consumer, returning its rows and the memory
// charged for them that the consumer releases once done with them.
func input(op relOp, env *eval.Env) ([]catalog.Row, int64, error) {
	m := env.Scope.Mem
	if m == nil {
		rows, err := op.run(env)
		return rows, 0, err
	}
	used, pinned := m.Used, m.Pinned
	rows, err := op.run(env)
	return rows, (m.Used - used) - (m.Pinned - pinned), err
}

// charge counts n more bytes held for what (53200 past the limit),
// adding them to *held, which the caller releases when done.
func charge(env *eval.Env, held *int64, n int64, what string) error {
	*held += n
	return env.Scope.Mem.Grow(n, what)
}

// release gives back n bytes charged by this query's operators.
func release(env *eval.Env, n int64) { env.Scope.Mem.Release(n) }

// keyBytes estimates a hash table entry of key k: the string, its
// header and the map's share of the entry.
func keyBytes(k string) int64 { return int64(len(k)) + 48 }

// aggBytes estimates what an aggregate state keeps for one more value
// it took: array_agg and string_agg keep every value, a DISTINCT
// aggregate the key of every distinct value; the others a constant.
func aggBytes(spec *aggState, v, v2 any) int64 {
	n := int64(0)
	switch spec.spec.Func {
	case "array_agg", "string_agg":
		n += eval.RowBytes([]any{v, v2})
	}
	if spec.seen != nil {
		n += keyBytes(rowKey([]any{v}))
	}
	return n
}
