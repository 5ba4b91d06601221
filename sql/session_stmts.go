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

func (*Discard) statement()    {}
func (*Deallocate) statement() {}

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
