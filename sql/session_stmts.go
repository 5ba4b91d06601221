package sql

// DiscardKind says what DISCARD throws away.
type DiscardKind uint8

const (
	// DiscardAll resets the session: settings to their values at
	// connection start, prepared statements and portals closed.
	DiscardAll DiscardKind = iota + 1
	// DiscardPlans, DiscardSequences and DiscardTemp have nothing to
	// discard in basin and succeed.
	DiscardPlans
	DiscardSequences
	DiscardTemp
)

// Discard is DISCARD ALL | PLANS | SEQUENCES | TEMP.
type Discard struct {
	Kind DiscardKind
}

// Deallocate is DEALLOCATE [PREPARE] name | ALL.
type Deallocate struct {
	Name string // "" with All
	All  bool
}

// ListenKind says which of LISTEN, UNLISTEN and NOTIFY a Listen is.
type ListenKind uint8

const (
	ListenListen ListenKind = iota + 1
	ListenUnlisten
	ListenNotify
)

// Listen is LISTEN channel, UNLISTEN { channel | * } or NOTIFY channel
// [, 'payload']. Channel is an identifier, folded to lower case unless
// quoted; "" for UNLISTEN *.
type Listen struct {
	Kind    ListenKind
	Channel string
	Payload string
	// Pos is the channel's position, for errors about it.
	Pos int
}

func (*Discard) statement()    {}
func (*Deallocate) statement() {}
func (*Listen) statement()     {}

// parseListen parses LISTEN channel, UNLISTEN { channel | * } and
// NOTIFY channel [, 'payload']; kind is the statement's first word.
func (sp *stmtParser) parseListen(i int, kind ListenKind) (Statement, error) {
	c := sp.cursor(i + 1)
	l := &Listen{Kind: kind}
	t := c.tok()
	switch {
	case kind == ListenUnlisten && t.isOp("*"):
		c.k++
		return l, c.end()
	case t.kind == tokIdent || t.kind == tokQuotedIdent:
		l.Channel, l.Pos = t.val, sp.charPos(t.pos)
		c.k++
	default:
		return nil, sp.syntaxErr(t)
	}
	if kind == ListenNotify && c.tok().isOp(",") {
		c.k++
		p := c.tok()
		if p.kind != tokString {
			return nil, sp.syntaxErr(p)
		}
		l.Payload = p.val
		c.k++
	}
	return l, c.end()
}

// parseDiscard parses DISCARD { ALL | PLANS | SEQUENCES | TEMP | TEMPORARY }.
func (sp *stmtParser) parseDiscard(i int) (Statement, error) {
	c := sp.cursor(i + 1)
	d := &Discard{}
	switch {
	case c.words("all"):
		d.Kind = DiscardAll
	case c.words("plans"):
		d.Kind = DiscardPlans
	case c.words("sequences"):
		d.Kind = DiscardSequences
	case c.words("temp"), c.words("temporary"):
		d.Kind = DiscardTemp
	default:
		return nil, sp.syntaxErr(c.tok())
	}
	return d, c.end()
}

// parseDeallocate parses DEALLOCATE [PREPARE] { name | ALL }.
func (sp *stmtParser) parseDeallocate(i int) (Statement, error) {
	c := sp.cursor(i + 1)
	c.words("prepare")
	if c.words("all") {
		return &Deallocate{All: true}, c.end()
	}
	t := c.tok()
	if t.kind != tokIdent && t.kind != tokQuotedIdent {
		return nil, sp.syntaxErr(t)
	}
	c.k++
	return &Deallocate{Name: t.val}, c.end()
}

func (f *formatter) sessionStmt(s Statement) bool {
	switch s := s.(type) {
	case *Discard:
		f.b.WriteString("DISCARD ")
		f.b.WriteString([...]string{DiscardAll: "ALL", DiscardPlans: "PLANS", DiscardSequences: "SEQUENCES", DiscardTemp: "TEMP"}[s.Kind])
	case *Listen:
		f.b.WriteString([...]string{ListenListen: "LISTEN ", ListenUnlisten: "UNLISTEN ", ListenNotify: "NOTIFY "}[s.Kind])
		switch {
		case s.Kind == ListenUnlisten && s.Channel == "":
			f.b.WriteString("*")
		default:
			f.b.WriteString(QuoteIdent(s.Channel))
		}
		if s.Payload != "" {
			f.b.WriteString(", " + QuoteString(s.Payload))
		}
	case *Deallocate:
		if s.All {
			f.b.WriteString("DEALLOCATE ALL")
		} else {
			f.b.WriteString("DEALLOCATE " + QuoteIdent(s.Name))
		}
	default:
		return false
	}
	return true
}
