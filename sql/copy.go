package sql

import (
	"strings"

	"github.com/basindb/basin/internal/pgerr"
)

// Copy is COPY { (query) | relation [(columns)] } TO STDOUT [options].
// Options in both of Postgres's spellings, WITH (FORMAT csv, HEADER) and
// the older WITH CSV HEADER, are read into the newer one's names; what
// they mean is checked where the statement runs (exec), which knows the
// columns FORCE_QUOTE names. COPY FROM and COPY to a file or program
// are refused here with 0A000.
type Copy struct {
	// Query is the statement of COPY (query): a *Select or a
	// *Subscribe. Nil when
	// Table is set.
	Query Statement
	// Table is the relation of COPY relation, Columns its column list
	// (nil: all), each at ColumnPos.
	Table     string
	TablePos  int
	Columns   []string
	ColumnPos []int
	Options   []CopyOption
}

// CopyOption is one COPY option, by its name in the WITH (...) syntax:
// format, header, delimiter, null, quote, escape, force_quote,
// force_not_null, force_null, encoding or freeze.
type CopyOption struct {
	Name string
	// Value is the option's argument as written, without quotes; empty
	// when there is none (HEADER alone, which means true).
	Value    string
	HasValue bool
	// Columns is the column list of force_quote and its kin; Star is
	// set for force_quote *.
	Columns []string
	Star    bool
	// Pos is the 1-based character position of the option's name.
	Pos int
}

func (*Copy) statement() {}

// copyOptionNames are the options Postgres 15's COPY knows.
var copyOptionNames = map[string]bool{
	"format": true, "freeze": true, "delimiter": true, "null": true, "header": true, "quote": true,
	"escape": true, "force_quote": true, "force_not_null": true, "force_null": true, "encoding": true,
}

// parseCopy parses COPY at toks[i].
func (sp *stmtParser) parseCopy(i int) (Statement, error) {
	toks := sp.toks
	c := &Copy{}
	k := i + 1
	if toks[k].isOp("(") {
		close := sp.matchParen(k)
		if close == len(toks)-1 {
			return nil, sp.syntaxErr(toks[close])
		}
		q, err := sp.subStatement(k+1, close)
		if err != nil {
			return nil, err
		}
		switch q.(type) {
		case *Select, *Subscribe:
		default:
			return nil, sp.syntaxErr(toks[k+1])
		}
		c.Query = q
		k = close + 1
	} else {
		name, next, err := sp.relationName(k)
		if err != nil {
			return nil, err
		}
		c.Table, c.TablePos = name, sp.charPos(toks[k].pos)
		k = next
		if toks[k].isOp("(") {
			cols, pos, next, err := sp.copyColumns(k)
			if err != nil {
				return nil, err
			}
			c.Columns, c.ColumnPos, k = cols, pos, next
		}
	}
	switch t := toks[k]; {
	case t.isWord("from"):
		return nil, unsupported(sp.charPos(t.pos), "COPY FROM is not supported").
			WithHint("Tables are maintained from their Kafka topics; INSERT appends to a stream or table.")
	case !t.isWord("to"):
		return nil, sp.syntaxErr(t)
	}
	k++
	switch t := toks[k]; {
	case t.isWord("stdout"):
		k++
	case t.kind == tokString || t.isWord("program") || t.isWord("stdin"):
		if t.isWord("stdin") {
			return nil, sp.syntaxErr(t)
		}
		return nil, unsupported(sp.charPos(t.pos), "COPY to a file or program is not supported").
			WithHint("Use COPY ... TO STDOUT, or psql's \\copy, which writes the file on the client.")
	default:
		return nil, sp.syntaxErr(t)
	}
	opts, k, err := sp.copyOptions(k)
	if err != nil {
		return nil, err
	}
	c.Options = opts
	if t := toks[k]; t.kind != tokEOF {
		return nil, sp.syntaxErr(t)
	}
	return c, nil
}

// subStatement parses toks[lo:hi] as a statement of its own: the query
// of COPY (query). Positions stay those of the whole text.
func (sp *stmtParser) subStatement(lo, hi int) (Statement, error) {
	toks := make([]token, 0, hi-lo+1)
	toks = append(toks, sp.toks[lo:hi]...)
	at := sp.toks[hi]
	toks = append(toks, token{kind: tokEOF, val: sp.tokText(at), pos: at.pos, end: at.end})
	sub := &stmtParser{text: sp.text, toks: toks, pos: sp.pos}
	st, err := sub.statement(0)
	sub.release()
	if sub.unfold {
		sp.unfold = true
	}
	return st, err
}

// copyColumns parses the ( name, ... ) at toks[k].
func (sp *stmtParser) copyColumns(k int) (cols []string, pos []int, next int, err error) {
	toks := sp.toks
	k++
	for {
		t := toks[k]
		if t.kind != tokIdent && t.kind != tokQuotedIdent {
			return nil, nil, k, sp.syntaxErr(t)
		}
		cols, pos = append(cols, t.val), append(pos, sp.charPos(t.pos))
		k++
		switch {
		case toks[k].isOp(","):
			k++
		case toks[k].isOp(")"):
			return cols, pos, k + 1, nil
		default:
			return nil, nil, k, sp.syntaxErr(toks[k])
		}
	}
}

// copyOptions parses what follows TO STDOUT: WITH ( option [value], ... )
// or the older options, each word of which is optional: [WITH] [BINARY]
// [DELIMITER [AS] 'c'] [NULL [AS] 'n'] [CSV [HEADER] [QUOTE [AS] 'q']
// [ESCAPE [AS] 'e'] [FORCE QUOTE cols | *] [FORCE NOT NULL cols]].
func (sp *stmtParser) copyOptions(k int) ([]CopyOption, int, error) {
	toks := sp.toks
	if toks[k].isWord("with") {
		k++
	}
	if toks[k].isOp("(") {
		return sp.copyOptionList(k)
	}
	var opts []CopyOption
	str := func(name string, at token) error {
		k++
		if toks[k].isWord("as") {
			k++
		}
		if toks[k].kind != tokString {
			return sp.syntaxErr(toks[k])
		}
		opts = append(opts, CopyOption{Name: name, Value: toks[k].val, HasValue: true, Pos: sp.charPos(at.pos)})
		k++
		return nil
	}
	for {
		t := toks[k]
		var err error
		switch {
		case t.isWord("binary"):
			opts = append(opts, CopyOption{Name: "format", Value: "binary", HasValue: true, Pos: sp.charPos(t.pos)})
			k++
		case t.isWord("csv"):
			opts = append(opts, CopyOption{Name: "format", Value: "csv", HasValue: true, Pos: sp.charPos(t.pos)})
			k++
		case t.isWord("header"):
			opts = append(opts, CopyOption{Name: "header", Pos: sp.charPos(t.pos)})
			k++
		case t.isWord("freeze"):
			opts = append(opts, CopyOption{Name: "freeze", Pos: sp.charPos(t.pos)})
			k++
		case t.isWord("delimiter"), t.isWord("null"), t.isWord("quote"), t.isWord("escape"), t.isWord("encoding"):
			err = str(t.val, t)
		case t.isWord("force"):
			name := "force_quote"
			switch {
			case toks[k+1].isWord("quote"):
				k += 2
			case toks[k+1].isWord("not") && toks[k+2].isWord("null"):
				name = "force_not_null"
				k += 3
			case toks[k+1].isWord("null"):
				name = "force_null"
				k += 2
			default:
				return nil, k, sp.syntaxErr(toks[k+1])
			}
			o := CopyOption{Name: name, Pos: sp.charPos(t.pos)}
			if toks[k].isOp("*") {
				o.Star = true
				k++
			} else {
				for {
					c := toks[k]
					if c.kind != tokIdent && c.kind != tokQuotedIdent {
						return nil, k, sp.syntaxErr(c)
					}
					o.Columns = append(o.Columns, c.val)
					k++
					if !toks[k].isOp(",") {
						break
					}
					k++
				}
			}
			opts = append(opts, o)
		default:
			return opts, k, nil
		}
		if err != nil {
			return nil, k, err
		}
	}
}

// copyOptionList parses WITH's ( option [value], ... ) at toks[k]. A
// value is a string, a number, a word, * or a parenthesized column list.
func (sp *stmtParser) copyOptionList(k int) ([]CopyOption, int, error) {
	toks := sp.toks
	k++
	var opts []CopyOption
	for {
		t := toks[k]
		if t.kind != tokIdent && t.kind != tokQuotedIdent {
			return nil, k, sp.syntaxErr(t)
		}
		name := strings.ToLower(t.val)
		if !copyOptionNames[name] {
			return nil, k, &pgerr.Error{Code: pgerr.SyntaxError, Message: "option \"" + t.val + "\" not recognized",
				Position: sp.charPos(t.pos)}
		}
		o := CopyOption{Name: name, Pos: sp.charPos(t.pos)}
		k++
		switch v := toks[k]; {
		case v.isOp(",") || v.isOp(")"):
		case v.isOp("*"):
			o.Star = true
			k++
		case v.isOp("("):
			cols, _, next, err := sp.copyColumns(k)
			if err != nil {
				return nil, k, err
			}
			o.Columns, k = cols, next
		case v.kind == tokString || v.kind == tokNumber || v.kind == tokIdent || v.kind == tokQuotedIdent:
			o.Value, o.HasValue = v.val, true
			k++
		case v.isOp("-") && toks[k+1].kind == tokNumber:
			o.Value, o.HasValue = "-"+toks[k+1].val, true
			k += 2
		default:
			return nil, k, sp.syntaxErr(v)
		}
		opts = append(opts, o)
		switch {
		case toks[k].isOp(","):
			k++
		case toks[k].isOp(")"):
			return opts, k + 1, nil
		default:
			return nil, k, sp.syntaxErr(toks[k])
		}
	}
}

// formatCopy writes c in the WITH ( ... ) syntax.
func (f *formatter) formatCopy(c *Copy) {
	f.b.WriteString("COPY ")
	if c.Query != nil {
		f.b.WriteString("(")
		f.stmt(c.Query)
		f.b.WriteString(")")
	} else {
		f.b.WriteString(QuoteIdent(c.Table))
		if c.Columns != nil {
			f.b.WriteString(" (" + quoteIdents(c.Columns) + ")")
		}
	}
	f.b.WriteString(" TO STDOUT")
	if len(c.Options) == 0 {
		return
	}
	f.b.WriteString(" WITH (")
	for i, o := range c.Options {
		if i > 0 {
			f.b.WriteString(", ")
		}
		f.b.WriteString(strings.ToUpper(o.Name))
		switch {
		case o.Star:
			f.b.WriteString(" *")
		case o.Columns != nil:
			f.b.WriteString(" (" + quoteIdents(o.Columns) + ")")
		case o.HasValue:
			f.b.WriteString(" " + QuoteString(o.Value))
		}
	}
	f.b.WriteString(")")
}

func quoteIdents(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = QuoteIdent(n)
	}
	return strings.Join(q, ", ")
}
