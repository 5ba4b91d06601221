package sql

import (
	"math"
	"strconv"

	"github.com/basindb/basin/internal/pgerr"
)

// Cursors: DECLARE, FETCH, MOVE and CLOSE, in Postgres 15's grammar,
// plus basin's FETCH ... WITH (timeout = '1s') for live sources.

// Declare is DECLARE name [BINARY] [ASENSITIVE | INSENSITIVE] [[NO]
// SCROLL] CURSOR [{WITH | WITHOUT} HOLD] FOR query.
type Declare struct {
	Name   string
	Binary bool
	// Scroll is ScrollDefault when neither SCROLL nor NO SCROLL is
	// written.
	Scroll ScrollOption
	Hold   bool
	// Query is the statement whose rows the cursor returns: a *Select.
	Query Statement
}

// ScrollOption is what DECLARE says about backward fetches.
type ScrollOption uint8

const (
	// ScrollDefault leaves it to the query: as in Postgres, a cursor
	// may move backward when reading back costs nothing.
	ScrollDefault ScrollOption = iota
	// Scroll is SCROLL.
	Scroll
	// NoScroll is NO SCROLL.
	NoScroll
)

// FetchDirection is the direction of a FETCH or MOVE.
type FetchDirection uint8

const (
	// FetchForward fetches Count rows forward (NEXT is 1, ALL is
	// FetchAll); a negative Count fetches backward.
	FetchForward FetchDirection = iota
	// FetchBackward fetches Count rows backward (PRIOR is 1).
	FetchBackward
	// FetchAbsolute fetches row Count (negative: from the end; FIRST is
	// 1, LAST is -1, 0 is before the first row).
	FetchAbsolute
	// FetchRelative fetches the row Count rows from the current one.
	FetchRelative
)

// FetchAll is the Count of ALL.
const FetchAll = math.MaxInt64

// Fetch is FETCH [direction] [FROM | IN] name [WITH (timeout = 'd')],
// or MOVE with the same directions (Move set, no WITH).
type Fetch struct {
	Move      bool
	Direction FetchDirection
	Count     int64
	Name      string
	// Timeout is the WITH (timeout = ...) option as written; "" when
	// absent.
	Timeout    string
	TimeoutPos int
}

// Close is CLOSE name | ALL.
type Close struct {
	Name string // "" with All
	All  bool
}

func (*Declare) statement() {}
func (*Fetch) statement()   {}
func (*Close) statement()   {}

// cursorName reads a cursor name at c.
func (c *cursor) cursorName() (string, error) {
	t := c.tok()
	if t.kind != tokIdent && t.kind != tokQuotedIdent {
		return "", c.sp.syntaxErr(t)
	}
	c.k++
	return t.val, nil
}

// parseDeclare parses DECLARE at toks[i].
func (sp *stmtParser) parseDeclare(i int) (Statement, error) {
	c := sp.cursor(i + 1)
	name, err := c.cursorName()
	if err != nil {
		return nil, err
	}
	d := &Declare{Name: name}
	for {
		switch {
		case c.words("binary"):
			d.Binary = true
			continue
		case c.words("asensitive"), c.words("insensitive"):
			continue
		case c.words("scroll"):
			d.Scroll = Scroll
			continue
		case c.words("no", "scroll"):
			d.Scroll = NoScroll
			continue
		}
		break
	}
	if err := c.expect("cursor"); err != nil {
		return nil, err
	}
	switch {
	case c.words("with", "hold"):
		d.Hold = true
	case c.words("without", "hold"):
	}
	if err := c.expect("for"); err != nil {
		return nil, err
	}
	t := c.tok()
	switch {
	case t.isWord("select"), t.isWord("with"), t.isWord("values"), t.isOp("("), t.isWord("subscribe"):
	default:
		return nil, sp.syntaxErr(t)
	}
	q, err := sp.statement(c.k)
	if err != nil {
		return nil, err
	}
	d.Query = q
	return d, nil
}

// parseFetch parses FETCH or MOVE at toks[i].
func (sp *stmtParser) parseFetch(i int) (Statement, error) {
	c := sp.cursor(i + 1)
	f := &Fetch{Move: sp.toks[i].isWord("move"), Count: 1}
	// count reads a signed integer constant at c, if there is one.
	count := func() (int64, bool, error) {
		t, neg := c.tok(), false
		if t.isOp("-") || t.isOp("+") {
			neg = t.isOp("-")
			t = c.peek(1)
			if t.kind != tokNumber {
				return 0, false, nil
			}
			c.k++
		}
		if t.kind != tokNumber {
			return 0, false, nil
		}
		n, err := strconv.ParseInt(t.val, 10, 64)
		if err != nil || !t.isInt {
			return 0, false, sp.syntaxErr(t)
		}
		c.k++
		if neg {
			n = -n
		}
		return n, true, nil
	}
	// name says whether the word at c is the cursor's name rather than
	// a direction: a direction word that ends the statement is a name
	// ("FETCH next" fetches from cursor next).
	name := func() bool {
		n := c.peek(1)
		return n.kind == tokEOF || n.isWord("with")
	}
	switch t := c.tok(); {
	case (t.isWord("next") || t.isWord("prior") || t.isWord("first") || t.isWord("last") ||
		t.isWord("all")) && !name():
		c.k++
		switch t.val {
		case "prior":
			f.Direction = FetchBackward
		case "first":
			f.Direction = FetchAbsolute
		case "last":
			f.Direction, f.Count = FetchAbsolute, -1
		case "all":
			f.Count = FetchAll
		}
	case (t.isWord("absolute") || t.isWord("relative")) && !name():
		c.k++
		f.Direction = FetchAbsolute
		if t.val == "relative" {
			f.Direction = FetchRelative
		}
		n, ok, err := count()
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, sp.syntaxErr(c.tok())
		}
		f.Count = n
	case (t.isWord("forward") || t.isWord("backward")) && !name():
		c.k++
		if t.val == "backward" {
			f.Direction = FetchBackward
		}
		if c.words("all") {
			f.Count = FetchAll
			break
		}
		n, ok, err := count()
		if err != nil {
			return nil, err
		}
		if ok {
			f.Count = n
		}
	default:
		n, ok, err := count()
		if err != nil {
			return nil, err
		}
		if ok {
			f.Count = n
		}
	}
	if !c.words("from") {
		c.words("in")
	}
	name2, err := c.cursorName()
	if err != nil {
		return nil, err
	}
	f.Name = name2
	if t := c.tok(); t.isWord("with") && !f.Move {
		opts, next, err := sp.withOptions(c.k + 1)
		if err != nil {
			return nil, err
		}
		c.k = next
		for _, o := range opts {
			if o.Key != "timeout" {
				return nil, pgerr.New(pgerr.SyntaxError, "unrecognized FETCH option %q", o.Key).
					WithPosition(o.Pos).WithHint("FETCH takes one option, timeout.")
			}
			f.Timeout, f.TimeoutPos = o.Value, o.Pos
		}
	}
	return f, c.end()
}

// parseClose parses CLOSE { name | ALL }.
func (sp *stmtParser) parseClose(i int) (Statement, error) {
	c := sp.cursor(i + 1)
	if c.words("all") {
		return &Close{All: true}, c.end()
	}
	name, err := c.cursorName()
	if err != nil {
		return nil, err
	}
	return &Close{Name: name}, c.end()
}

// formatCursorStmt writes DECLARE, FETCH, MOVE and CLOSE; it reports
// whether s was one.
func (f *formatter) formatCursorStmt(s Statement) bool {
	switch s := s.(type) {
	case *Declare:
		f.b.WriteString("DECLARE " + QuoteIdent(s.Name))
		if s.Binary {
			f.b.WriteString(" BINARY")
		}
		switch s.Scroll {
		case Scroll:
			f.b.WriteString(" SCROLL")
		case NoScroll:
			f.b.WriteString(" NO SCROLL")
		}
		f.b.WriteString(" CURSOR")
		if s.Hold {
			f.b.WriteString(" WITH HOLD")
		}
		f.b.WriteString(" FOR ")
		f.stmt(s.Query)
	case *Fetch:
		if s.Move {
			f.b.WriteString("MOVE ")
		} else {
			f.b.WriteString("FETCH ")
		}
		f.b.WriteString(FetchDirectionText(s.Direction, s.Count))
		f.b.WriteString(" FROM " + QuoteIdent(s.Name))
		if s.Timeout != "" {
			f.b.WriteString(" WITH (timeout = " + QuoteString(s.Timeout) + ")")
		}
	case *Close:
		if s.All {
			f.b.WriteString("CLOSE ALL")
		} else {
			f.b.WriteString("CLOSE " + QuoteIdent(s.Name))
		}
	default:
		return false
	}
	return true
}

// FetchDirectionText is a FETCH direction and count as SQL: FORWARD 5,
// BACKWARD ALL, ABSOLUTE -1.
func FetchDirectionText(d FetchDirection, n int64) string {
	word := [...]string{FetchForward: "FORWARD", FetchBackward: "BACKWARD", FetchAbsolute: "ABSOLUTE", FetchRelative: "RELATIVE"}[d]
	if n == FetchAll && (d == FetchForward || d == FetchBackward) {
		return word + " ALL"
	}
	return word + " " + strconv.FormatInt(n, 10)
}
