package sql

import (
	"strconv"
	"strings"
	"sync"
)

// Shape is a one-statement query with its integer and string constants
// lifted out as parameters: "SELECT a FROM t WHERE id = 42" has the text
// "SELECT a FROM t WHERE id = $1" and the argument int64(42). Queries
// that differ only in those constants have the same Key, which is what a
// plan cache for the simple query protocol looks plans up by.
type Shape struct {
	// Text is the query with each lifted constant replaced by $1, $2, ...
	// in order; everything else is as written.
	Text string
	// Key is Text plus the kind of each argument: "id = 5" and
	// "id = '5'" are planned differently.
	Key string
	// Args are the lifted constants: int64 for an integer that fits
	// int64, string for a string constant.
	Args []any
}

// shapeToks holds token buffers for ShapeOf; maxPooledToks bounds what
// goes back (a huge statement's buffer is left to the GC).
var shapeToks = sync.Pool{New: func() any { b := make([]token, 0, 64); return &b }}

const maxPooledToks = 1024

// ShapeOf returns the shape of text. ok is false when text cannot have
// one: it does not lex (the parser reports why), it holds more than one
// statement, it already has parameters ($n in the simple protocol is
// an error the parser reports), or it would have more parameters than
// a statement can (maxParams), so that it could not be prepared.
func ShapeOf(text string) (sh Shape, ok bool) {
	// The tokens are not kept past the call: their buffer is reused by
	// the next (strings in them are the text's or their own). Long runs
	// of constants are folded as for parsing (literals.go) and read back
	// one token at a time, so a megabyte IN list costs about its
	// arguments, not 48 bytes of token for each constant and comma.
	bp := shapeToks.Get().(*[]token)
	l := &lexer{text: text, toks: (*bp)[:0], fold: true}
	all, err := l.all()
	defer func() {
		if cap(all) <= maxPooledToks {
			clear(all) // keep no string (nor the text) alive
			*bp = all[:0]
			shapeToks.Put(bp)
		}
	}()
	toks := all
	if err != nil || len(toks) == 0 {
		return Shape{}, false
	}
	if last := toks[len(toks)-1]; last.isOp(";") {
		toks = toks[:len(toks)-1]
	}
	var b strings.Builder
	b.Grow(len(text) + 8)
	kinds := make([]byte, 0, 4)
	from := 0
	// lift lifts t if it is a constant of a liftable kind; ok is false
	// when text can have no shape.
	lift := func(t token) bool {
		var arg any
		switch t.kind {
		case tokParam:
			return false
		case tokOp:
			if t.val == ";" {
				return false
			}
		case tokNumber:
			if t.isInt {
				n, err := strconv.ParseInt(t.val, 10, 64)
				if err != nil {
					return false
				}
				arg = n
			}
		case tokString:
			arg = t.val
		}
		if arg == nil {
			return true
		}
		if len(sh.Args) == maxParams {
			return false
		}
		sh.Args = append(sh.Args, arg)
		b.WriteString(text[from:t.pos])
		b.WriteByte('$')
		b.WriteString(strconv.Itoa(len(sh.Args)))
		from = t.end
		if _, isInt := arg.(int64); isInt {
			kinds = append(kinds, 'i')
		} else {
			kinds = append(kinds, 's')
		}
		return true
	}
	for _, t := range toks {
		if t.kind != tokLiterals && t.kind != tokRows {
			if !lift(t) {
				return Shape{}, false
			}
			continue
		}
		r := newRunReader(text, t)
		for rt, more := r.next(); more; rt, more = r.next() {
			if !lift(rt) {
				return Shape{}, false
			}
		}
	}
	end := len(text)
	if len(toks) > 0 {
		end = toks[len(toks)-1].end
	}
	b.WriteString(text[from:end])
	sh.Text = b.String()
	sh.Key = sh.Text + "\x00" + string(kinds)
	return sh, true
}
