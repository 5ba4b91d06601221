package eval

import (
	"regexp"

	"github.com/basindb/basin/internal/pgerr"
)

// regexp_match, regexp_matches, regexp_split_to_array and
// regexp_split_to_table, over eval's Postgres-flavoured patterns.

var regexpQueryFuncs = map[string]qfunc{
	"regexp_match": func(a []any, _ *Env) (any, error) {
		re, global, err := regexpArgs("regexp_match", a)
		if err != nil {
			return nil, err
		}
		if global {
			return nil, pgerr.New(pgerr.InvalidParameterValue, "regexp_match() does not support the \"global\" option").
				WithHint("Use the regexp_matches function instead.")
		}
		m := re.FindStringSubmatchIndex(a[0].(string))
		if m == nil {
			return nil, nil
		}
		return matchArray(a[0].(string), re, m), nil
	},
	"regexp_split_to_array": func(a []any, _ *Env) (any, error) {
		re, global, err := regexpArgs("regexp_split_to_array", a)
		if err != nil {
			return nil, err
		}
		if global {
			return nil, pgerr.New(pgerr.InvalidParameterValue, "regexp_split_to_array() does not support the \"global\" option")
		}
		return splitRegexp(a[0].(string), re), nil
	},
}

// regexpArgs compiles the pattern and flags of a call (strict: the
// caller has returned NULL for a NULL argument).
func regexpArgs(fn string, a []any) (*regexp.Regexp, bool, error) {
	flags := ""
	if len(a) > 2 {
		flags = a[2].(string)
	}
	return CompileRegexp(a[1].(string), flags, fn)
}

// matchArray is a match's captured groups, or the whole match when the
// pattern has none; a group that took no part is NULL.
func matchArray(s string, re *regexp.Regexp, m []int) []any {
	if re.NumSubexp() == 0 {
		return []any{s[m[0]:m[1]]}
	}
	out := make([]any, re.NumSubexp())
	for i := range out {
		if lo := m[2*i+2]; lo >= 0 {
			out[i] = s[lo:m[2*i+3]]
		}
	}
	return out
}

// splitRegexp splits s at the pattern's matches; as in Postgres an empty
// match splits between characters but not at either end.
func splitRegexp(s string, re *regexp.Regexp) []any {
	var out []any
	start := 0
	for _, m := range re.FindAllStringIndex(s, -1) {
		if m[0] == m[1] && (m[0] == 0 || m[0] >= len(s)) {
			continue
		}
		if m[0] == m[1] && m[0] == start && start > 0 && len(out) > 0 {
			// An empty match right after a non-empty one.
			continue
		}
		out = append(out, s[start:m[0]])
		start = m[1]
	}
	return append(out, s[start:])
}

// regexpSRF is regexp_matches and regexp_split_to_table.
func regexpSRF(name string, args []any) ([]any, error) {
	re, global, err := regexpArgs(name, args)
	if err != nil {
		return nil, err
	}
	s := args[0].(string)
	if name == "regexp_split_to_table" {
		if global {
			return nil, pgerr.New(pgerr.InvalidParameterValue, "regexp_split_to_table() does not support the \"global\" option")
		}
		return splitRegexp(s, re), nil
	}
	n := 1
	if global {
		n = -1
	}
	var out []any
	for _, m := range re.FindAllStringSubmatchIndex(s, n) {
		out = append(out, matchArray(s, re, m))
	}
	return out, nil
}
