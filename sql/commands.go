package sql

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/basindb/basin/internal/pgerr"
)

// This file parses the statements basin handles entirely at the token
// level: SHOW, SET, RESET, DESCRIBE, DROP, transaction control and
// EXPLAIN. Their grammar is small, partly basin's own (SHOW STREAMS),
// partly Postgres's (SET ... TO DEFAULT), and TiDB's MySQL grammar would
// read several of them differently.

// cursor walks a statement's tokens.
type cursor struct {
	sp *stmtParser
	k  int
}

func (sp *stmtParser) cursor(k int) *cursor { return &cursor{sp: sp, k: k} }

func (c *cursor) tok() token { return c.sp.toks[c.k] }

// peek returns the token n after the current one, or the sentinel.
func (c *cursor) peek(n int) token {
	if c.k+n >= len(c.sp.toks) {
		return c.sp.toks[len(c.sp.toks)-1]
	}
	return c.sp.toks[c.k+n]
}

// words consumes the given words if the tokens are exactly they.
func (c *cursor) words(ws ...string) bool {
	for n, w := range ws {
		if !c.peek(n).isWord(w) {
			return false
		}
	}
	c.k += len(ws)
	return true
}

func (c *cursor) expect(w string) error {
	if !c.words(w) {
		return c.sp.syntaxErr(c.tok())
	}
	return nil
}

// end requires the statement to be over.
func (c *cursor) end() error {
	if t := c.tok(); t.kind != tokEOF {
		return c.sp.syntaxErr(t)
	}
	return nil
}

// settingName reads a configuration parameter name: identifiers, quoted
// or not, joined by dots (basin.acceptable_offset_lag).
func (c *cursor) settingName() (string, error) {
	t := c.tok()
	if t.kind != tokIdent && t.kind != tokQuotedIdent {
		return "", c.sp.syntaxErr(t)
	}
	parts := []string{t.val}
	c.k++
	for c.tok().isOp(".") && (c.peek(1).kind == tokIdent || c.peek(1).kind == tokQuotedIdent) {
		parts = append(parts, c.peek(1).val)
		c.k += 2
	}
	return strings.Join(parts, "."), nil
}

// relation reads a relation name.
func (c *cursor) relation() (string, error) {
	name, next, err := c.sp.relationName(c.k)
	c.k = next
	return name, err
}

func (sp *stmtParser) parseShow(i int) (Statement, error) {
	c := sp.cursor(i + 1)
	var s *Show
	switch {
	case c.words("streams"):
		s = &Show{What: ShowStreams}
	case c.words("tables"):
		s = &Show{What: ShowTables}
	case c.words("queries"):
		s = &Show{What: ShowQueries}
	case c.words("tasks"):
		s = &Show{What: ShowTasks}
	case c.words("cluster"):
		s = &Show{What: ShowCluster}
	case c.words("all"):
		s = &Show{What: ShowVariable, Name: "all"}
	case c.words("transaction", "isolation", "level"):
		s = &Show{What: ShowVariable, Name: "transaction_isolation"}
	case c.words("time", "zone"):
		s = &Show{What: ShowVariable, Name: "timezone"}
	case c.words("session", "authorization"):
		s = &Show{What: ShowVariable, Name: "session_authorization"}
	default:
		name, err := c.settingName()
		if err != nil {
			return nil, err
		}
		s = &Show{What: ShowVariable, Name: name}
	}
	return s, c.end()
}

func (sp *stmtParser) parseDescribe(i int) (Statement, error) {
	c := sp.cursor(i + 1)
	name, err := c.relation()
	if err != nil {
		return nil, err
	}
	return &Describe{Name: name}, c.end()
}

// parseResume parses RESUME query_id (ksqlDB's statement; basin
// resumes a query its lost input stopped).
func (sp *stmtParser) parseResume(i int) (Statement, error) {
	id, err := sp.queryID(i + 1)
	return &Resume{Query: id}, err
}

// parseTerminate parses TERMINATE query_id.
func (sp *stmtParser) parseTerminate(i int) (Statement, error) {
	id, err := sp.queryID(i + 1)
	return &Terminate{Query: id}, err
}

// queryID reads the query id that ends a statement at toks[k].
func (sp *stmtParser) queryID(k int) (string, error) {
	c := sp.cursor(k)
	t := c.tok()
	if t.kind != tokIdent && t.kind != tokQuotedIdent {
		return "", sp.syntaxErr(t)
	}
	c.k++
	return t.val, c.end()
}

func (sp *stmtParser) parseDrop(i int) (Statement, error) {
	c := sp.cursor(i + 1)
	var kind RelationKind
	switch t := c.tok(); {
	case c.words("stream"):
		kind = KindStream
	case c.words("table"):
		kind = KindTable
	case t.kind == tokIdent && (createObjects[t.val] || t.val == "view" || t.val == "materialized" || t.val == "owned"):
		return nil, unsupported(sp.charPos(t.pos), "DROP %s is not supported", createWhat(sp.toks[c.k:]))
	default:
		return nil, sp.syntaxErr(t)
	}
	d := &Drop{Kind: kind}
	if c.words("if") {
		if err := c.expect("exists"); err != nil {
			return nil, err
		}
		d.IfExists = true
	}
	var err error
	if d.Name, err = c.relation(); err != nil {
		return nil, err
	}
	switch t := c.tok(); {
	case t.isOp(","):
		return nil, unsupported(sp.charPos(t.pos), "dropping several relations in one statement is not supported")
	case t.isWord("cascade"):
		return nil, unsupported(sp.charPos(t.pos), "DROP ... CASCADE is not supported").
			WithHint("Drop the tables that depend on it first.")
	case t.isWord("delete") && c.peek(1).isWord("topic"):
		return nil, unsupported(sp.charPos(t.pos), "DROP ... DELETE TOPIC is not supported")
	case t.isWord("restrict"):
		c.k++ // the default
	}
	return d, c.end()
}

func (sp *stmtParser) parseSet(i int) (Statement, error) {
	c := sp.cursor(i + 1)
	s := &Set{}
	switch {
	case c.words("local"):
		s.Local = true
	case c.words("session", "characteristics", "as", "transaction"):
		return sp.setTransaction(c, "default_transaction_")
	case c.words("session"):
	}
	switch {
	case c.words("transaction"):
		if c.words("snapshot") {
			return nil, unsupported(sp.charPos(sp.toks[c.k-1].pos), "SET TRANSACTION SNAPSHOT is not supported")
		}
		set, err := sp.setTransaction(c, "transaction_")
		if err == nil {
			set.(*Set).Local = s.Local
		}
		return set, err
	case c.words("time", "zone"):
		s.Name = "timezone"
		if c.words("local") || c.words("default") {
			s.Reset = true
			return s, c.end()
		}
		if t := c.tok(); t.isWord("interval") {
			return nil, unsupported(sp.charPos(t.pos), "SET TIME ZONE INTERVAL is not supported")
		}
		if z, ok := numericZone(c); ok {
			s.Value = z
			return s, c.end()
		}
		return sp.setValue(c, s)
	case c.words("names"):
		s.Name = "client_encoding"
		if c.words("default") {
			s.Reset = true
			return s, c.end()
		}
		return sp.setValue(c, s)
	case c.words("schema"):
		s.Name = "search_path"
		return sp.setValue(c, s)
	case c.words("session", "authorization"), c.words("authorization"):
		s.Name = "session_authorization"
		if c.words("default") {
			s.Reset = true
			return s, c.end()
		}
		return sp.setValue(c, s)
	case c.words("role"):
		s.Name = "role"
		if c.words("none") {
			s.Reset = true
			return s, c.end()
		}
		return sp.setValue(c, s)
	}
	name, err := c.settingName()
	if err != nil {
		return nil, err
	}
	s.Name = name
	if !c.tok().isOp("=") && !c.tok().isWord("to") {
		if t := c.tok(); t.isWord("from") && c.peek(1).isWord("current") {
			return nil, unsupported(sp.charPos(t.pos), "SET ... FROM CURRENT is not supported")
		}
		return nil, sp.syntaxErr(c.tok())
	}
	c.k++
	if c.words("default") {
		s.Reset = true
		return s, c.end()
	}
	return sp.setValue(c, s)
}

// setValue reads the value list of a SET. An unquoted word folds to
// lower case like any identifier (SET datestyle = ISO gives iso).
// numericZone reads SET TIME ZONE's number of hours east of UTC (-5,
// 5.5) as the POSIX zone Postgres names it: <-05>+05, <+05:30>-05:30.
func numericZone(c *cursor) (string, bool) {
	k := c.k
	sign := 1.0
	if t := c.sp.toks[k]; t.isOp("-") || t.isOp("+") {
		if t.isOp("-") {
			sign = -1
		}
		k++
	}
	t := c.sp.toks[k]
	if t.kind != tokNumber {
		return "", false
	}
	h, err := strconv.ParseFloat(t.val, 64)
	if err != nil || h > 24*7 {
		return "", false
	}
	secs := int(math.Round(sign * h * 3600))
	off := func(s int) string {
		sg := '+'
		if s < 0 {
			sg, s = '-', -s
		}
		out := fmt.Sprintf("%c%02d", sg, s/3600)
		if s%3600 != 0 {
			out += fmt.Sprintf(":%02d", s/60%60)
		}
		return out
	}
	c.k = k + 1
	return "<" + off(secs) + ">" + off(-secs), true
}

func (sp *stmtParser) setValue(c *cursor, s *Set) (Statement, error) {
	var vals []string
	for {
		t := c.tok()
		var v string
		if t.kind == tokIdent {
			v = t.val
			c.k++
		} else {
			var err error
			if v, c.k, err = sp.optionValue(c.k); err != nil {
				return nil, err
			}
		}
		vals = append(vals, v)
		if !c.tok().isOp(",") {
			break
		}
		c.k++
	}
	s.Value = strings.Join(vals, ", ")
	return s, c.end()
}

// setTransaction parses the single mode of SET TRANSACTION and SET
// SESSION CHARACTERISTICS AS TRANSACTION into the setting Postgres
// reports it as.
func (sp *stmtParser) setTransaction(c *cursor, prefix string) (Statement, error) {
	name, value, err := sp.transactionMode(c)
	if err != nil {
		return nil, err
	}
	if t := c.tok(); t.isOp(",") || t.kind == tokIdent {
		return nil, unsupported(sp.charPos(t.pos), "setting several transaction modes in one statement is not supported")
	}
	return &Set{Name: prefix + name, Value: value}, c.end()
}

// transactionMode parses ISOLATION LEVEL ..., READ ONLY | READ WRITE or
// [NOT] DEFERRABLE, returning the setting name without its
// transaction_ prefix and the value Postgres shows for it.
func (sp *stmtParser) transactionMode(c *cursor) (name, value string, err error) {
	switch {
	case c.words("isolation", "level"):
		for _, level := range [][]string{{"serializable"}, {"repeatable", "read"},
			{"read", "committed"}, {"read", "uncommitted"}} {
			if c.words(level...) {
				return "isolation", strings.Join(level, " "), nil
			}
		}
		return "", "", sp.syntaxErr(c.tok())
	case c.words("read", "only"):
		return "read_only", "on", nil
	case c.words("read", "write"):
		return "read_only", "off", nil
	case c.words("deferrable"):
		return "deferrable", "on", nil
	case c.words("not", "deferrable"):
		return "deferrable", "off", nil
	}
	return "", "", sp.syntaxErr(c.tok())
}

func (sp *stmtParser) parseReset(i int) (Statement, error) {
	c := sp.cursor(i + 1)
	s := &Set{Reset: true}
	switch {
	case c.words("all"):
		s.Name = "all"
	case c.words("time", "zone"):
		s.Name = "timezone"
	case c.words("session", "authorization"):
		s.Name = "session_authorization"
	case c.words("transaction", "isolation", "level"):
		s.Name = "transaction_isolation"
	default:
		name, err := c.settingName()
		if err != nil {
			return nil, err
		}
		s.Name = name
	}
	return s, c.end()
}

// parseBegin parses BEGIN [WORK | TRANSACTION] [modes] and START
// TRANSACTION [modes]. The modes become the block's transaction_*
// settings (SHOW transaction_read_only inside the block says on after
// BEGIN READ ONLY).
func (sp *stmtParser) parseBegin(i int) (Statement, error) {
	c := sp.cursor(i + 1)
	if sp.toks[i].isWord("start") {
		if err := c.expect("transaction"); err != nil {
			return nil, err
		}
	} else if !c.words("work") {
		c.words("transaction")
	}
	txn := &Txn{Kind: TxnBegin}
	for n := 0; c.tok().kind != tokEOF; n++ {
		if n > 0 && c.tok().isOp(",") {
			c.k++
		}
		name, value, err := sp.transactionMode(c)
		if err != nil {
			return nil, err
		}
		txn.Modes = append(txn.Modes, TxnMode{Name: name, Value: value})
	}
	return txn, nil
}

// parseCommit parses COMMIT, END, ROLLBACK and ABORT, each with an
// optional WORK or TRANSACTION and AND NO CHAIN.
func (sp *stmtParser) parseCommit(i int) (Statement, error) {
	first := sp.toks[i]
	kind := TxnCommit
	if first.isWord("rollback") || first.isWord("abort") {
		kind = TxnRollback
	}
	c := sp.cursor(i + 1)
	if t := c.tok(); t.isWord("prepared") || kind == TxnRollback && t.isWord("to") {
		return nil, unsupported(sp.charPos(t.pos), "%s %s is not supported",
			strings.ToUpper(first.val), strings.ToUpper(t.val))
	}
	if !c.words("work") {
		c.words("transaction")
	}
	if c.words("and", "no", "chain") {
		return &Txn{Kind: kind}, c.end()
	}
	if t := c.tok(); t.isWord("and") && c.peek(1).isWord("chain") {
		return nil, unsupported(sp.charPos(t.pos), "AND CHAIN is not supported")
	}
	return &Txn{Kind: kind}, c.end()
}

// parseExplain parses EXPLAIN [ANALYZE] <statement> and EXPLAIN
// (option [value], ...) <statement>, as Postgres 15 writes them.
func (sp *stmtParser) parseExplain(i int) (Statement, error) {
	x := &Explain{}
	j := i + 1
	timing, summary := -1, -1 // -1: not given
	switch t := sp.toks[j]; {
	case t.isWord("analyze") || t.isWord("analyse"):
		x.Analyze = true
		j++
		if sp.toks[j].isWord("verbose") {
			return nil, unsupported(sp.charPos(sp.toks[j].pos), "EXPLAIN VERBOSE is not supported")
		}
	case t.isWord("verbose"):
		return nil, unsupported(sp.charPos(t.pos), "EXPLAIN VERBOSE is not supported")
	case t.isOp("(") && !sp.toks[j+1].isWord("select") && !sp.toks[j+1].isWord("with") && !sp.toks[j+1].isOp("("):
		j++
		for {
			name := sp.toks[j]
			if name.kind != tokIdent {
				return nil, sp.syntaxErr(name)
			}
			j++
			// The value: a word, a number or a string; none means on.
			val, v := "", sp.toks[j]
			if !v.isOp(",") && !v.isOp(")") {
				if v.kind != tokIdent && v.kind != tokNumber && v.kind != tokString ||
					v.isWord("select") || v.isWord("with") || v.isWord("insert") || v.isWord("create") {
					return nil, sp.syntaxErr(v)
				}
				val = strings.ToLower(v.val)
				j++
			}
			on := val == "" || val == "on" || val == "true" || val == "1" || val == "yes"
			if !on && val != "off" && val != "false" && val != "0" && val != "no" && name.val != "format" {
				return nil, pgerr.New(pgerr.SyntaxError, "%s requires a Boolean value", name.val).WithPosition(sp.charPos(v.pos))
			}
			switch name.val {
			case "analyze", "analyse":
				x.Analyze = on
			case "timing":
				timing = map[bool]int{false: 0, true: 1}[on]
			case "summary":
				summary = map[bool]int{false: 0, true: 1}[on]
			case "costs":
				// basin's plans carry no costs: on or off, none is shown.
			case "format":
				if val != "text" {
					return nil, unsupported(sp.charPos(v.pos), "EXPLAIN FORMAT %s is not supported", strings.ToUpper(v.val)).
						WithHint("basin writes EXPLAIN as text.")
				}
			case "verbose", "buffers", "wal", "settings":
				return nil, unsupported(sp.charPos(name.pos), "EXPLAIN option %s is not supported", strings.ToUpper(name.val))
			default:
				return nil, pgerr.New(pgerr.SyntaxError, "unrecognized EXPLAIN option %q", name.val).WithPosition(sp.charPos(name.pos))
			}
			if sp.toks[j].isOp(")") {
				j++
				break
			}
			if !sp.toks[j].isOp(",") {
				return nil, sp.syntaxErr(sp.toks[j])
			}
			j++
		}
	}
	if timing == 1 && !x.Analyze {
		return nil, pgerr.New(pgerr.InvalidParameterValue, "EXPLAIN option TIMING requires ANALYZE")
	}
	x.Timing = x.Analyze && timing != 0
	x.Summary = x.Analyze && summary != 0
	t := sp.toks[j]
	switch {
	case t.isWord("select"), t.isWord("with"), t.isOp("("), t.isWord("insert"), t.isWord("create"), t.isWord("values"):
	default:
		return nil, sp.syntaxErr(t)
	}
	st, err := sp.statement(j)
	if err != nil {
		return nil, err
	}
	if _, ok := st.(*CreateSource); ok {
		return nil, sp.syntaxErr(t) // Postgres cannot EXPLAIN plain DDL
	}
	x.Stmt = st
	return x, nil
}
