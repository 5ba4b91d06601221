package eval

// The string functions, as Postgres 15 computes them. Positions and
// lengths count characters, not bytes. Postgres's regular expressions
// (ARE) are run by Go's regexp (RE2): the common syntax agrees;
// backreferences inside a pattern and lookaround are refused as
// invalid, 2201B.

import (
	"crypto/md5"
	"encoding/hex"
	"math"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf8"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/planner"
)

// maxStringBytes bounds the strings repeat and the pads build, as
// Postgres's 1 GB field limit does.
const maxStringBytes = 1 << 28

func init() {
	strictFuncs["split_part"] = splitPart
	strictFuncs["strpos"] = strpos
	strictFuncs["position"] = strpos
	strictFuncs["left"] = leftFunc
	strictFuncs["right"] = rightFunc
	strictFuncs["lpad"] = padFunc(true)
	strictFuncs["rpad"] = padFunc(false)
	strictFuncs["repeat"] = repeatFunc
	strictFuncs["reverse"] = func(_ catalog.Type, a []any) (any, error) {
		r := []rune(a[0].(string))
		for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
			r[i], r[j] = r[j], r[i]
		}
		return string(r), nil
	}
	strictFuncs["initcap"] = func(_ catalog.Type, a []any) (any, error) { return initcap(a[0].(string)), nil }
	strictFuncs["translate"] = translate
	strictFuncs["starts_with"] = func(_ catalog.Type, a []any) (any, error) {
		return strings.HasPrefix(a[0].(string), a[1].(string)), nil
	}
	strictFuncs["ascii"] = func(_ catalog.Type, a []any) (any, error) {
		r, _ := utf8.DecodeRuneInString(a[0].(string))
		if r == utf8.RuneError {
			return int64(0), nil
		}
		return int64(r), nil
	}
	strictFuncs["chr"] = chr
	strictFuncs["md5"] = func(_ catalog.Type, a []any) (any, error) {
		sum := md5.Sum([]byte(a[0].(string)))
		return hex.EncodeToString(sum[:]), nil
	}
	strictFuncs["octet_length"] = func(_ catalog.Type, a []any) (any, error) { return int64(len(a[0].(string))), nil }
	strictFuncs["bit_length"] = func(_ catalog.Type, a []any) (any, error) { return int64(8 * len(a[0].(string))), nil }
	strictFuncs["overlay"] = overlay
	strictFuncs["regexp_replace"] = regexpReplace
	strictFuncs["regexp_like"] = regexpLike
	strictFuncs["regexp_count"] = regexpCount
	exprFuncs["concat_ws"] = concatWS
	trim := func(f func(string, string) string) func(catalog.Type, []any) (any, error) {
		return func(_ catalog.Type, a []any) (any, error) {
			chars := " "
			if len(a) == 2 {
				chars = a[1].(string)
			}
			return f(a[0].(string), chars), nil
		}
	}
	strictFuncs["ltrim"] = trim(strings.TrimLeft)
	strictFuncs["rtrim"] = trim(strings.TrimRight)
	strictFuncs["btrim"] = trim(strings.Trim)
}

// splitPart is split_part(s, delim, n): the nth field, counting from the
// end when n is negative.
func splitPart(_ catalog.Type, a []any) (any, error) {
	s, delim, n := a[0].(string), a[1].(string), a[2].(int64)
	if n == 0 {
		return nil, pgerr.New(pgerr.InvalidParameterValue, "field position must not be zero")
	}
	if s == "" {
		return "", nil
	}
	var fields []string
	if delim == "" {
		fields = []string{s}
	} else {
		fields = strings.Split(s, delim)
	}
	if n < 0 {
		n += int64(len(fields)) + 1
	}
	if n < 1 || n > int64(len(fields)) {
		return "", nil
	}
	return fields[n-1], nil
}

// strpos is strpos(s, sub) and position(sub IN s): the character
// position of the first sub, 0 when there is none.
func strpos(_ catalog.Type, a []any) (any, error) {
	s, sub := a[0].(string), a[1].(string)
	i := strings.Index(s, sub)
	if i < 0 {
		return int64(0), nil
	}
	return int64(utf8.RuneCountInString(s[:i]) + 1), nil
}

// leftFunc is left(s, n): the first n characters, or all but the last
// -n when n is negative.
func leftFunc(_ catalog.Type, a []any) (any, error) {
	r, n := []rune(a[0].(string)), a[1].(int64)
	if n < 0 {
		n += int64(len(r))
	}
	n = max(0, min(n, int64(len(r))))
	return string(r[:n]), nil
}

// rightFunc is right(s, n): the last n characters, or all but the
// first -n when n is negative.
func rightFunc(_ catalog.Type, a []any) (any, error) {
	r, n := []rune(a[0].(string)), a[1].(int64)
	if n < 0 {
		n += int64(len(r))
	}
	n = max(0, min(n, int64(len(r))))
	return string(r[int64(len(r))-n:]), nil
}

// padFunc is lpad or rpad(s, length [, fill]): s filled to length
// characters with fill (a space by default), or cut to length.
func padFunc(left bool) func(catalog.Type, []any) (any, error) {
	return func(_ catalog.Type, a []any) (any, error) {
		r, n := []rune(a[0].(string)), a[1].(int64)
		fill := []rune(" ")
		if len(a) == 3 {
			fill = []rune(a[2].(string))
		}
		if n <= 0 {
			return "", nil
		}
		if n > maxStringBytes {
			return nil, errTooLong
		}
		if n <= int64(len(r)) || len(fill) == 0 {
			return string(r[:min(n, int64(len(r)))]), nil
		}
		pad := make([]rune, 0, n-int64(len(r)))
		for k := 0; int64(len(pad)) < n-int64(len(r)); k++ {
			pad = append(pad, fill[k%len(fill)])
		}
		if left {
			return string(pad) + string(r), nil
		}
		return string(r) + string(pad), nil
	}
}

var errTooLong = pgerr.New(pgerr.ProgramLimitExceeded, "requested length too large")

func repeatFunc(_ catalog.Type, a []any) (any, error) {
	s, n := a[0].(string), a[1].(int64)
	if n <= 0 || s == "" {
		return "", nil
	}
	if n > maxStringBytes/int64(len(s)) {
		return nil, errTooLong
	}
	return strings.Repeat(s, int(n)), nil
}

// initcap upper-cases the first letter of each word and lower-cases the
// rest; a word is a run of letters and digits.
func initcap(s string) string {
	var b strings.Builder
	inWord := false
	for _, r := range s {
		if inWord {
			b.WriteRune(unicode.ToLower(r))
		} else {
			b.WriteRune(unicode.ToUpper(r))
		}
		inWord = unicode.IsLetter(r) || unicode.IsDigit(r)
	}
	return b.String()
}

// translate replaces each character of s found in from by the character
// at the same place in to, or drops it when to is shorter.
func translate(_ catalog.Type, a []any) (any, error) {
	s, from, to := a[0].(string), []rune(a[1].(string)), []rune(a[2].(string))
	var b strings.Builder
	for _, r := range s {
		k := -1
		for i, f := range from {
			if f == r {
				k = i
				break
			}
		}
		switch {
		case k < 0:
			b.WriteRune(r)
		case k < len(to):
			b.WriteRune(to[k])
		}
	}
	return b.String(), nil
}

func chr(_ catalog.Type, a []any) (any, error) {
	c := a[0].(int64)
	switch {
	case c == 0:
		return nil, pgerr.New(pgerr.ProgramLimitExceeded, "null character not permitted")
	case c < 0 || c > unicode.MaxRune:
		return nil, pgerr.New(pgerr.ProgramLimitExceeded, "requested character too large for encoding: %d", c)
	case c >= 0xD800 && c <= 0xDFFF:
		return nil, pgerr.New(pgerr.ProgramLimitExceeded, "requested character not valid for encoding: %d", c)
	}
	return string(rune(c)), nil
}

// overlay is overlay(s PLACING r FROM start [FOR count]): s with count
// characters from start replaced by r (count defaults to r's length).
func overlay(_ catalog.Type, a []any) (any, error) {
	s, r, from := []rune(a[0].(string)), a[1].(string), a[2].(int64)
	n := int64(utf8.RuneCountInString(r))
	if len(a) == 4 {
		n = a[3].(int64)
	}
	if from < 1 {
		return nil, pgerr.New(pgerr.SubstringError, "negative substring length not allowed")
	}
	if n < 0 {
		return nil, pgerr.New(pgerr.SubstringError, "negative substring length not allowed")
	}
	head := min(from-1, int64(len(s)))
	tail := int64(len(s))
	if from <= math.MaxInt64-n {
		tail = min(from-1+n, int64(len(s)))
	}
	return string(s[:head]) + r + string(s[tail:]), nil
}

// concatWS is concat_ws(sep, v...): the non-NULL values joined by sep;
// NULL when sep is.
func concatWS(_ *planner.Call, args []Expr) Expr {
	return func(row catalog.Row, env *Env) (any, error) {
		sep, err := args[0](row, env)
		if sep == nil || err != nil {
			return nil, err
		}
		var b strings.Builder
		first := true
		for _, a := range args[1:] {
			v, err := a(row, env)
			if err != nil {
				return nil, err
			}
			if v == nil {
				continue
			}
			if !first {
				b.WriteString(sep.(string))
			}
			first = false
			b.WriteString(v.(string))
		}
		return b.String(), nil
	}
}

// CompileRegexp compiles a Postgres pattern with its flags for function
// fn; global reports the g flag.
func CompileRegexp(pat, flags, fn string) (re *regexp.Regexp, global bool, err error) {
	return compileRegex(pat, flags, fn)
}

// regexCache holds compiled patterns by pattern and flags: a pattern is
// usually a constant, compiled once for all rows. Patterns read from
// rows could be without number, so the cache stops growing at
// maxCachedRegexps (later ones are compiled per call).
var (
	regexCache  sync.Map // string -> *regexp.Regexp
	regexCached atomic.Int64
)

const maxCachedRegexps = 1024

// compileRegex compiles a Postgres pattern with flags (i: ignore case,
// c: respect case, n/m: newline-sensitive, s: dot matches newline, x:
// expanded syntax is refused, g handled by the caller).
func compileRegex(pat, flags, fn string) (*regexp.Regexp, bool, error) {
	key := flags + "\x00" + pat
	global := false
	prefix := ""
	for _, f := range flags {
		switch f {
		case 'g':
			global = true
		case 'i':
			prefix = "(?i)"
		case 'c':
			prefix = ""
		case 'n', 'm':
			prefix += "(?m)"
		case 's':
			prefix += "(?s)"
		default:
			return nil, false, pgerr.New(pgerr.InvalidParameterValue, "invalid regular expression option: \"%c\"", f)
		}
	}
	if re, ok := regexCache.Load(key); ok {
		return re.(*regexp.Regexp), global, nil
	}
	re, err := regexp.Compile(prefix + pat)
	if err != nil {
		return nil, false, pgerr.New(pgerr.InvalidRegularExpression, "invalid regular expression: %s", strings.TrimPrefix(err.Error(), "error parsing regexp: ")).
			WithHint("%s runs the regular expression syntax Go's regexp package accepts (no backreferences or lookaround).", fn)
	}
	if regexCached.Add(1) <= maxCachedRegexps {
		regexCache.Store(key, re)
	}
	return re, global, nil
}

// pgReplacement turns a Postgres replacement string (\1 to \9 for
// groups, \& for the match, \\ for a backslash) into Go's template
// syntax.
func pgReplacement(r string) string {
	var b strings.Builder
	for i := 0; i < len(r); i++ {
		c := r[i]
		switch {
		case c == '$':
			b.WriteString("$$")
		case c == '\\' && i+1 < len(r) && r[i+1] >= '1' && r[i+1] <= '9':
			b.WriteString("${" + string(r[i+1]) + "}")
			i++
		case c == '\\' && i+1 < len(r) && r[i+1] == '&':
			b.WriteString("${0}")
			i++
		case c == '\\' && i+1 < len(r) && r[i+1] == '\\':
			b.WriteByte('\\')
			i++
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// regexpReplace is regexp_replace(s, pattern, replacement [, flags]):
// the first match replaced, or every match with flag g.
func regexpReplace(_ catalog.Type, a []any) (any, error) {
	s, pat, repl := a[0].(string), a[1].(string), a[2].(string)
	flags := ""
	if len(a) == 4 {
		flags = a[3].(string)
	}
	re, global, err := compileRegex(pat, flags, "regexp_replace")
	if err != nil {
		return nil, err
	}
	tmpl := pgReplacement(repl)
	if global {
		return re.ReplaceAllString(s, tmpl), nil
	}
	m := re.FindStringSubmatchIndex(s)
	if m == nil {
		return s, nil
	}
	out := re.ExpandString(nil, tmpl, s, m)
	return s[:m[0]] + string(out) + s[m[1]:], nil
}

func regexpLike(_ catalog.Type, a []any) (any, error) {
	flags := ""
	if len(a) == 3 {
		flags = a[2].(string)
	}
	re, _, err := compileRegex(a[1].(string), flags, "regexp_like")
	if err != nil {
		return nil, err
	}
	return re.MatchString(a[0].(string)), nil
}

// regexpCount is regexp_count(s, pattern [, start [, flags]]).
func regexpCount(_ catalog.Type, a []any) (any, error) {
	s := a[0].(string)
	flags := ""
	if len(a) >= 3 {
		start := a[2].(int64)
		if start <= 0 {
			return nil, pgerr.New(pgerr.InvalidParameterValue, "invalid value for parameter \"start\": %d", start)
		}
		r := []rune(s)
		s = string(r[min(start-1, int64(len(r))):])
	}
	if len(a) == 4 {
		flags = a[3].(string)
	}
	re, _, err := compileRegex(a[1].(string), flags, "regexp_count")
	if err != nil {
		return nil, err
	}
	return int64(len(re.FindAllStringIndex(s, -1))), nil
}
