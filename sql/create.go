package sql

import (
	"slices"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
)

// parseCreate parses, at toks[i]:
//
//	CREATE {STREAM|TABLE} [IF NOT EXISTS] name (columns) [WITH (options)]
//	CREATE TABLE [IF NOT EXISTS] name [WITH (options)] AS SELECT ...
//	CREATE STREAM [IF NOT EXISTS] name [WITH (options)] AS SELECT ... [PARTITION BY expr]
//
// The frame is parsed here; the column list goes to TiDB as CREATE
// TABLE, the SELECT through parseSelect.
func (sp *stmtParser) parseCreate(i int) (Statement, error) {
	toks := sp.toks
	k := i + 1
	t := toks[k]
	pos := sp.charPos(t.pos)
	var kind RelationKind
	switch {
	case t.isWord("stream"):
		kind = KindStream
	case t.isWord("table"):
		kind = KindTable
	case t.isWord("or") && toks[k+1].isWord("replace"):
		return nil, unsupported(pos, "CREATE OR REPLACE is not supported").
			WithHint("DROP the relation and create it again.")
	case t.isWord("materialized") || t.isWord("view"):
		return nil, unsupported(pos, "CREATE %s is not supported", createWhat(toks[k:])).
			WithHint("A materialized view is CREATE TABLE name AS SELECT ....")
	case t.isWord("temp") || t.isWord("temporary") || t.isWord("unlogged") ||
		t.isWord("global") || t.isWord("local"):
		return nil, unsupported(pos, "%s tables are not supported", strings.ToUpper(t.val))
	case t.kind == tokIdent && createObjects[t.val]:
		return nil, unsupported(pos, "CREATE %s is not supported", createWhat(toks[k:]))
	default:
		return nil, sp.syntaxErr(t)
	}
	k++
	ifNotExists := false
	if toks[k].isWord("if") {
		if !toks[k+1].isWord("not") {
			return nil, sp.syntaxErr(toks[k+1])
		}
		if !toks[k+2].isWord("exists") {
			return nil, sp.syntaxErr(toks[k+2])
		}
		ifNotExists = true
		k += 3
	}
	name, k, err := sp.relationName(k)
	if err != nil {
		return nil, err
	}
	nameTok := k - 1

	cols := [2]int{-1, -1} // the ( and ) of the column list
	if toks[k].isOp("(") {
		cols = [2]int{k, sp.matchParen(k)}
		if toks[cols[1]].kind == tokEOF {
			return nil, sp.syntaxErr(toks[cols[1]])
		}
		k = cols[1] + 1
	}
	var with []Option
	if toks[k].isWord("with") {
		if with, k, err = sp.withOptions(k + 1); err != nil {
			return nil, err
		}
	}
	if toks[k].isWord("as") {
		switch {
		case cols[0] >= 0 && kind == KindStream:
			return nil, unsupported(sp.charPos(toks[cols[0]].pos), "a column list in CREATE STREAM ... AS is not supported").
				WithHint("Name the columns with AS in the SELECT list.")
		case kind == KindStream:
			return sp.createStreamAs(name, ifNotExists, with, k+1)
		case cols[0] >= 0:
			return nil, unsupported(sp.charPos(toks[cols[0]].pos), "a column list in CREATE TABLE ... AS is not supported").
				WithHint("Name the columns with AS in the SELECT list.")
		}
		return sp.createTableAs(name, ifNotExists, with, k+1)
	}
	if cols[0] < 0 && toks[k].kind == tokEOF && registryFormat(with) {
		// The columns come from the schema registry (exec).
		return &CreateSource{Kind: kind, Name: name, IfNotExists: ifNotExists, With: with}, nil
	}
	if cols[0] < 0 {
		return nil, sp.syntaxErr(toks[k]).
			WithHint("CREATE %s needs a column list (or a value_format whose schema is in the schema registry: avro, protobuf, json_sr), or AS SELECT for a materialized view.", kind)
	}
	if toks[k].kind != tokEOF {
		return nil, sp.syntaxErr(toks[k])
	}
	columns, err := sp.columnList(nameTok, cols[0], cols[1])
	if err != nil {
		return nil, err
	}
	return &CreateSource{Kind: kind, Name: name, IfNotExists: ifNotExists, Columns: columns, With: with}, nil
}

// createObjects are the other things Postgres can CREATE.
var createObjects = map[string]bool{
	"index": true, "unique": true, "schema": true, "database": true, "function": true,
	"procedure": true, "type": true, "sequence": true, "role": true, "user": true,
	"extension": true, "trigger": true, "domain": true, "aggregate": true, "cast": true,
	"collation": true, "policy": true, "publication": true, "subscription": true,
	"rule": true, "server": true, "tablespace": true, "foreign": true, "source": true,
	"sink": true, "connector": true, "event": true, "language": true,
	"operator": true, "statistics": true, "transform": true, "conversion": true,
}

// createWhat names the object of an unsupported CREATE for its message.
func createWhat(toks []token) string {
	if (toks[0].isWord("materialized") || toks[0].isWord("unique")) && toks[1].kind == tokIdent {
		return strings.ToUpper(toks[0].val + " " + toks[1].val)
	}
	return strings.ToUpper(toks[0].val)
}

// relationName reads a relation name at toks[k]: one identifier, quoted
// or not. basin has a single namespace.
func (sp *stmtParser) relationName(k int) (string, int, error) {
	t := sp.toks[k]
	if t.kind != tokIdent && t.kind != tokQuotedIdent || t.kind == tokIdent && passThrough[t.val] {
		return "", k, sp.syntaxErr(t)
	}
	if sp.toks[k+1].isOp(".") {
		return "", k, unsupported(sp.charPos(t.pos), "schema-qualified names are not supported")
	}
	return t.val, k + 1, nil
}

func (sp *stmtParser) createTableAs(name string, ifNotExists bool, with []Option, k int) (Statement, error) {
	toks := sp.toks
	sel, text, err := sp.createSelect("TABLE", k, len(toks)-1)
	if err != nil {
		return nil, err
	}
	return &CreateTableAs{Name: name, IfNotExists: ifNotExists, With: with, Select: sel, SelectText: text}, nil
}

// createStreamAs parses the AS SELECT ... [PARTITION BY expr] of CREATE
// STREAM at toks[k]. PARTITION BY ends the SELECT at its depth (inside
// parentheses it is a window's).
func (sp *stmtParser) createStreamAs(name string, ifNotExists bool, with []Option, k int) (Statement, error) {
	toks := sp.toks
	end := len(toks) - 1
	hi := end
	depth := 0
	for j := k; j < end; j++ {
		t := toks[j]
		switch {
		case t.isOp("("):
			depth++
		case t.isOp(")"):
			depth--
		case depth == 0 && t.isWord("partition") && toks[j+1].isWord("by"):
			hi = j
		}
		if hi != end {
			break
		}
	}
	sel, text, err := sp.createSelect("STREAM", k, hi)
	if err != nil {
		return nil, err
	}
	st := &CreateStreamAs{Name: name, IfNotExists: ifNotExists, With: with, Select: sel, SelectText: text}
	if hi != end {
		if hi+2 >= end {
			return nil, sp.syntaxErr(toks[end])
		}
		if st.PartitionBy, err = sp.parseExpr(hi+2, end); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// createSelect parses the query toks[k:hi] of CREATE kind ... AS, and
// returns it with its text.
func (sp *stmtParser) createSelect(kind string, k, hi int) (*Select, string, error) {
	toks := sp.toks
	first := toks[k]
	if !first.isWord("select") && !first.isOp("(") {
		if first.isWord("with") || first.isWord("values") || first.isWord("table") {
			return nil, "", unsupported(sp.charPos(first.pos), "CREATE %s ... AS %s is not supported", kind, strings.ToUpper(first.val))
		}
		return nil, "", sp.syntaxErr(first)
	}
	sel, err := sp.parseSelect(k, hi)
	if err != nil {
		return nil, "", err
	}
	return sel, sp.text[first.pos:toks[hi-1].end], nil
}

// withOptions parses ( key = value, ... ) at toks[k]. Keys are words
// joined by dots (acceptable.offset.lag) or quoted; values are strings,
// numbers or words.
func (sp *stmtParser) withOptions(k int) ([]Option, int, error) {
	toks := sp.toks
	if !toks[k].isOp("(") {
		return nil, k, sp.syntaxErr(toks[k])
	}
	k++
	var opts []Option
	seen := make(map[string]bool)
	for {
		key, next, err := sp.optionKey(k)
		if err != nil {
			return nil, k, err
		}
		keyTok := toks[k]
		k = next
		if !toks[k].isOp("=") {
			return nil, k, sp.syntaxErr(toks[k])
		}
		k++
		value, next, err := sp.optionValue(k)
		if err != nil {
			return nil, k, err
		}
		k = next
		if seen[key] {
			return nil, k, &pgerr.Error{Code: pgerr.InvalidParameterValue,
				Message:  "parameter \"" + key + "\" specified more than once",
				Position: sp.charPos(keyTok.pos)}
		}
		seen[key] = true
		opts = append(opts, Option{Key: key, Value: value, Pos: sp.charPos(keyTok.pos)})
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

func (sp *stmtParser) optionKey(k int) (string, int, error) {
	toks := sp.toks
	switch t := toks[k]; t.kind {
	case tokString, tokQuotedIdent:
		return strings.ToLower(t.val), k + 1, nil
	case tokIdent:
		parts := []string{t.val}
		k++
		for toks[k].isOp(".") && toks[k+1].kind == tokIdent {
			parts = append(parts, toks[k+1].val)
			k += 2
		}
		return strings.Join(parts, "."), k, nil
	default:
		return "", k, sp.syntaxErr(t)
	}
}

// optionValue reads a WITH or SET value: a string or quoted name gives
// its text, a number or word the text as written (with a sign, if any).
func (sp *stmtParser) optionValue(k int) (string, int, error) {
	toks := sp.toks
	sign := ""
	if toks[k].isOp("-") || toks[k].isOp("+") {
		sign = toks[k].val
		k++
		if toks[k].kind != tokNumber {
			return "", k, sp.syntaxErr(toks[k])
		}
	}
	switch t := toks[k]; t.kind {
	case tokString, tokQuotedIdent:
		return t.val, k + 1, nil
	case tokNumber, tokIdent:
		if sign == "+" {
			sign = ""
		}
		return sign + sp.tokText(t), k + 1, nil
	default:
		return "", k, sp.syntaxErr(t)
	}
}

// columnList parses the column definitions in toks(open:close) by
// handing TiDB "CREATE TABLE name (...)" with each type replaced by the
// canonical spelling of the basin type it names. The types are taken from
// the tokens, not from TiDB, so VARCHAR without a length, STRING and the
// Postgres spellings all work.
func (sp *stmtParser) columnList(nameTok, open, close int) ([]ColumnDef, error) {
	toks := sp.toks
	elems := sp.splitColumns(open+1, close)
	if len(elems) == 0 {
		return nil, sp.syntaxErr(toks[close]).WithHint("Declare at least one column.")
	}
	rw := sp.newRewriter(open)
	rw.keywords = map[string]bool{"key": true}
	first := toks[nameTok]
	rw.add(outItem{text: "CREATE TABLE", orig: first.pos, origEnd: first.pos})
	rw.addTok(first, quoteTiDB(first.val), itemOperand)
	rw.addTok(toks[open], "(", itemOpen)

	type colInfo struct {
		typ              catalog.Type
		precision, scale int
		nameTok          token
		hdr              headerSpec
	}
	var cols []colInfo
	var constraints [][2]int // token ranges of the table constraints, in order
	// primaries are the byte offsets of every PRIMARY KEY, column or
	// table level (ksqlDB's KEY may mark several columns; PRIMARY KEY
	// only one place).
	var primaries []int
	for n, el := range elems {
		a, b := el[0], el[1]
		if a == b {
			return nil, sp.syntaxErr(toks[b])
		}
		if n > 0 {
			rw.addTok(toks[a-1], ",", itemOther)
		}
		if sp.isTableConstraint(a) {
			if toks[a].isWord("like") || toks[a].isWord("exclude") {
				return nil, unsupported(sp.charPos(toks[a].pos), "%s in a column list is not supported",
					strings.ToUpper(toks[a].val))
			}
			if err := rw.run(a, b); err != nil {
				return nil, err
			}
			constraints = append(constraints, el)
			for x := a; x < b; x++ {
				if toks[x].isWord("primary") {
					primaries = append(primaries, toks[x].pos)
				}
			}
			continue
		}
		nt := toks[a]
		if nt.kind != tokIdent && nt.kind != tokQuotedIdent || nt.kind == tokIdent && passThrough[nt.val] {
			return nil, sp.syntaxErr(nt)
		}
		ref, err := sp.parseType(a + 1)
		if err != nil {
			return nil, err
		}
		if !ref.typ.Storable() {
			return nil, unsupported(sp.charPos(toks[a+1].pos), "type %s is not supported in a stream or table", strings.ToLower(ref.typ.String())).
				WithHint("%s", SupportedTypesHint)
		}
		if ref.end > b {
			return nil, sp.syntaxErr(toks[b])
		}
		// HEADERS or HEADER('k') at the end: the column is the record's
		// headers, or one of them (ksqlDB's header columns).
		var hdr headerSpec
		switch {
		case b-1 >= ref.end && toks[b-1].isWord("headers"):
			hdr.all, hdr.pos = true, toks[b-1].pos
			b--
		case b-4 >= ref.end && toks[b-4].isWord("header") && toks[b-3].isOp("(") && toks[b-2].kind == tokString && toks[b-1].isOp(")"):
			hdr.key, hdr.named, hdr.pos = toks[b-2].val, true, toks[b-4].pos
			b -= 4
		}
		rw.addTok(nt, quoteTiDB(nt.val), itemOperand)
		tt := toks[a+1]
		rw.add(outItem{text: tidbTypeName(ref.typ), orig: tt.pos, origEnd: toks[ref.end-1].end})
		if err := rw.run(ref.end, b); err != nil {
			return nil, err
		}
		for x := ref.end; x < b; x++ {
			if toks[x].isWord("primary") {
				primaries = append(primaries, toks[x].pos)
			}
		}
		cols = append(cols, colInfo{typ: ref.typ, precision: ref.precision, scale: ref.scale, nameTok: nt, hdr: hdr})
	}
	rw.addTok(toks[close], ")", itemClose)
	tt := build(rw.out, toks[close+1])
	stmt, err := sp.parseTiDB(tt)
	if err != nil {
		return nil, err
	}
	ct, ok := stmt.(*ast.CreateTableStmt)
	if !ok || len(ct.Cols) != len(cols) || len(ct.Constraints) != len(constraints) {
		return nil, internalErr("TiDB read %q as %T", tt.sql, stmt)
	}

	out := make([]ColumnDef, len(cols))
	index := make(map[string]int)
	for n, col := range ct.Cols {
		ci := cols[n]
		name := col.Name.Name.O
		if _, dup := index[name]; dup {
			return nil, &pgerr.Error{Code: pgerr.DuplicateColumn,
				Message: "column \"" + name + "\" specified more than once", Position: sp.charPos(ci.nameTok.pos)}
		}
		index[name] = n
		out[n] = ColumnDef{Name: name, Type: ci.typ, Precision: ci.precision, Scale: ci.scale}
		notNull := false
		for _, opt := range col.Options {
			switch opt.Tp {
			case ast.ColumnOptionPrimaryKey:
				out[n].Key = true
			case ast.ColumnOptionNotNull:
				notNull = true
			case ast.ColumnOptionNull:
			default:
				return nil, unsupported(sp.charPos(ci.nameTok.pos), "column constraint %s is not supported", columnOptionName(opt.Tp)).
					WithHint("Columns take only KEY, PRIMARY KEY, NULL and NOT NULL (on key columns).")
			}
		}
		if notNull && !out[n].Key {
			return nil, unsupported(sp.charPos(ci.nameTok.pos), "NOT NULL is only supported on key columns")
		}
		if ci.hdr.all || ci.hdr.named {
			if out[n].Key {
				return nil, &pgerr.Error{Code: pgerr.InvalidTableDefinition, Position: sp.charPos(ci.hdr.pos),
					Message: "column \"" + name + "\" is a header column, which cannot be part of the key"}
			}
			if ci.hdr.named && ci.hdr.key == "" {
				return nil, &pgerr.Error{Code: pgerr.InvalidTableDefinition, Position: sp.charPos(ci.hdr.pos),
					Message: "column \"" + name + "\": HEADER needs the key of a header, not ''"}
			}
			out[n].Header, out[n].Headers = ci.hdr.key, ci.hdr.all
		}
	}
	for n, con := range ct.Constraints {
		el := constraints[n]
		if con.Tp != ast.ConstraintPrimaryKey {
			return nil, unsupported(sp.charPos(toks[el[0]].pos), "table constraints other than PRIMARY KEY are not supported")
		}
		for _, key := range con.Keys {
			if key.Column == nil {
				return nil, unsupported(sp.charPos(toks[el[0]].pos), "expressions in PRIMARY KEY are not supported")
			}
			name := key.Column.Name.O
			k, ok := index[name]
			if !ok {
				pos := toks[el[0]].pos
				for x := el[0]; x < el[1]; x++ {
					if (toks[x].kind == tokIdent || toks[x].kind == tokQuotedIdent) && toks[x].val == name {
						pos = toks[x].pos
					}
				}
				return nil, &pgerr.Error{Code: pgerr.UndefinedColumn,
					Message: "column \"" + name + "\" named in key does not exist", Position: sp.charPos(pos)}
			}
			out[k].Key = true
		}
	}
	if len(primaries) > 1 {
		slices.Sort(primaries)
		return nil, &pgerr.Error{Code: pgerr.InvalidTableDefinition,
			Message:  "multiple primary keys for table \"" + toks[nameTok].val + "\" are not allowed",
			Position: sp.charPos(primaries[1])}
	}
	return out, nil
}

// headerSpec is a column's HEADERS (all) or HEADER('key') (named).
type headerSpec struct {
	all, named bool
	key        string
	pos        int
}

// isTableConstraint reports whether the column-list element at toks[a]
// is a constraint rather than a column; KEY and INDEX are column names
// unless a parenthesis follows.
func (sp *stmtParser) isTableConstraint(a int) bool {
	t := sp.toks[a]
	if t.kind != tokIdent {
		return false
	}
	switch t.val {
	case "constraint", "primary", "unique", "check", "foreign", "exclude", "like":
		return true
	case "key", "index":
		return sp.toks[a+1].isOp("(")
	}
	return false
}

func columnOptionName(t ast.ColumnOptionType) string {
	switch t {
	case ast.ColumnOptionDefaultValue:
		return "DEFAULT"
	case ast.ColumnOptionUniqKey:
		return "UNIQUE"
	case ast.ColumnOptionCheck:
		return "CHECK"
	case ast.ColumnOptionReference:
		return "REFERENCES"
	case ast.ColumnOptionCollate:
		return "COLLATE"
	case ast.ColumnOptionGenerated:
		return "GENERATED"
	}
	return "this"
}

// registryFormat reports whether options with name a value_format whose
// schemas are in a schema registry, from which a CREATE STREAM or TABLE
// without a column list takes its columns.
func registryFormat(with []Option) bool {
	for _, o := range with {
		if strings.EqualFold(o.Key, "value_format") {
			switch strings.ToLower(o.Value) {
			case "avro", "protobuf", "json_sr":
				return true
			}
		}
	}
	return false
}
