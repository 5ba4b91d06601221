package eval

import (
	"sort"
)

// A multiset of an aggregate's values (COUNT(DISTINCT x), and MIN and MAX
// of a group that can take rows back) is kept in the group's state as a
// string: the row encoding of its distinct values in order, each followed
// by its count, so the state stays a list of plain values that the store
// and the changelog carry. Changing it decodes and encodes it whole: a
// group's cost grows with its distinct values.

// multisetAdd returns set with n more of v (n may be negative; a value
// whose count reaches 0 leaves).
func multisetAdd(set string, v any, n int64) string {
	pairs := multisetPairs(set)
	i := sort.Search(len(pairs)/2, func(i int) bool { return CompareNullable(pairs[2*i], v, false) >= 0 })
	switch {
	case i < len(pairs)/2 && CompareNullable(pairs[2*i], v, false) == 0:
		c := pairs[2*i+1].(int64) + n
		if c <= 0 {
			pairs = append(pairs[:2*i], pairs[2*i+2:]...)
		} else {
			pairs[2*i+1] = c
		}
	case n > 0:
		pairs = append(pairs, nil, nil)
		copy(pairs[2*i+2:], pairs[2*i:])
		pairs[2*i], pairs[2*i+1] = v, n
	}
	return setList(pairs)
}

// multisetPairs decodes set into value, count, value, count, ...: the
// list (libagg.go) of them.
func multisetPairs(set string) []any { return listValues(set) }

// multisetLen is the number of distinct values in set.
func multisetLen(set string) int { return len(multisetPairs(set)) / 2 }

// multisetEnd is set's least value (or its greatest, with last), nil
// when it is empty.
func multisetEnd(set string, last bool) any {
	pairs := multisetPairs(set)
	switch {
	case len(pairs) == 0:
		return nil
	case last:
		return pairs[len(pairs)-2]
	}
	return pairs[0]
}
