package sql

import (
	"errors"
	"strconv"
	"strings"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
)

// nestedTypeWords start ksqlDB's compound types: ARRAY<T>,
// STRUCT<name T, ...> and MAP<K, V>.
var nestedTypeWords = map[string]bool{"array": true, "struct": true, "map": true}

// nestedTypeParser reads a compound type. Postgres lexes a run of >
// as one operator, so the closing brackets of ARRAY<STRUCT<a INT>> are
// one token ">>": gt counts the > of toks[j] already taken, and a token
// is passed only when all of its > are.
type nestedTypeParser struct {
	sp *stmtParser
	j  int
	gt int
}

// parseNestedType reads ARRAY<T>, STRUCT<name T, ...> or MAP<K, V> at
// toks[i], nested to any depth up to catalog.MaxNestingDepth, with an
// optional [] after a STRUCT or MAP (an array of them, as Postgres
// spells arrays).
func (sp *stmtParser) parseNestedType(i int) (typeRef, *pgerr.Error) {
	p := &nestedTypeParser{sp: sp, j: i}
	ref, err := p.parse(0)
	if err != nil {
		return typeRef{end: p.j}, err
	}
	if p.gt > 0 {
		// ARRAY<INT>> : a > too many.
		return typeRef{end: p.j}, sp.syntaxErr(sp.toks[p.j])
	}
	ref.end = p.j
	return ref, nil
}

func (p *nestedTypeParser) tok() token { return p.sp.toks[p.j] }

// open takes the < after a compound type's word; an empty STRUCT<>
// lexes as the operator <>, which empty reports, or with the closing
// brackets after it as one operator (ARRAY<STRUCT<>>: <>>), of which it
// takes the <> and leaves the rest to close.
func (p *nestedTypeParser) open() (empty bool, err *pgerr.Error) {
	if p.gt > 0 {
		return false, p.sp.syntaxErr(p.tok())
	}
	switch t := p.tok(); {
	case t.isOp("<"):
		p.j++
		return false, nil
	case t.isOp("<>") && t.end-t.pos == 2 && p.sp.text[t.pos] == '<':
		p.j++
		return true, nil
	case t.kind == tokOp && len(t.val) > 2 && strings.HasPrefix(t.val, "<>") && strings.Trim(t.val[2:], ">") == "":
		p.gt = 2
		return true, nil
	}
	return false, p.sp.syntaxErr(p.tok())
}

// close takes one > of a run of them (after the <> of an empty STRUCT
// that open took from the same token).
func (p *nestedTypeParser) close() *pgerr.Error {
	t := p.tok()
	run := t.val
	if p.gt >= 2 && strings.HasPrefix(run, "<>") {
		run = run[1:]
	}
	if t.kind != tokOp || strings.Trim(run, ">") != "" {
		return p.sp.syntaxErr(t)
	}
	p.gt++
	if p.gt == len(t.val) {
		p.gt = 0
		p.j++
	}
	return nil
}

// comma takes the , between a compound type's parts, or reports false
// when the next token is no comma.
func (p *nestedTypeParser) comma() bool {
	if p.gt == 0 && p.tok().isOp(",") {
		p.j++
		return true
	}
	return false
}

// elem reads the type of an element, value or field: a compound type
// or any type parseType reads (VARCHAR, NUMERIC(10,2), TEXT[], ...).
func (p *nestedTypeParser) elem(depth int) (typeRef, *pgerr.Error) {
	if p.gt > 0 {
		return typeRef{}, p.sp.syntaxErr(p.tok())
	}
	t := p.tok()
	if t.kind == tokIdent && nestedTypeWords[t.val] {
		return p.parse(depth + 1)
	}
	ref, err := p.sp.parseType(p.j)
	if err != nil {
		return typeRef{}, err
	}
	p.j = ref.end
	if !ref.typ.Storable() {
		return typeRef{}, unsupported(p.sp.charPos(t.pos), "type %s is not supported in a compound type", strings.ToLower(ref.typ.String())).
			WithHint("%s", SupportedTypesHint)
	}
	return ref, nil
}

func (p *nestedTypeParser) parse(depth int) (typeRef, *pgerr.Error) {
	sp := p.sp
	word := p.tok()
	pos := sp.charPos(word.pos)
	if depth >= catalog.MaxNestingDepth {
		return typeRef{}, &pgerr.Error{Code: pgerr.StatementTooComplex, Position: pos,
			Message: "types are nested more than " + strconv.Itoa(catalog.MaxNestingDepth) + " levels deep"}
	}
	p.j++
	empty, err := p.open()
	if err != nil {
		return typeRef{}, err
	}
	var ref typeRef
	switch word.val {
	case "array":
		e, err := p.elem(depth)
		if err != nil {
			return typeRef{}, err
		}
		if e.typ.IsArray() {
			return typeRef{}, unsupported(pos, "arrays of arrays are not supported")
		}
		if err := p.close(); err != nil {
			return typeRef{}, err
		}
		// ARRAY<NUMERIC(10,2)> keeps its modifiers, as NUMERIC(10,2)[]
		// does.
		ref = typeRef{typ: catalog.ArrayOf(e.typ), precision: e.precision, scale: e.scale}
	case "map":
		kpos := sp.charPos(p.tok().pos)
		k, err := p.elem(depth)
		if err != nil {
			return typeRef{}, err
		}
		if !p.comma() {
			return typeRef{}, sp.syntaxErr(p.tok())
		}
		v, err := p.elem(depth)
		if err != nil {
			return typeRef{}, err
		}
		if err := p.close(); err != nil {
			return typeRef{}, err
		}
		if k.typ != catalog.Varchar {
			return typeRef{}, unsupported(kpos, "map keys of type %s are not supported", strings.ToLower(k.typ.String())).
				WithHint("A MAP's keys are VARCHAR, as in ksqlDB.")
		}
		t, cerr := catalog.MapOf(k.typ, v.typ)
		if cerr != nil {
			return typeRef{}, nestingErr(cerr, pos)
		}
		ref = typeRef{typ: t}
	case "struct":
		var fields []catalog.Field
		seen := make(map[string]bool)
		for !empty {
			if len(fields) > 0 && !p.comma() {
				if err := p.close(); err != nil {
					return typeRef{}, err
				}
				break
			}
			nt := p.tok()
			if p.gt > 0 || nt.kind != tokIdent && nt.kind != tokQuotedIdent || nt.val == "" {
				return typeRef{}, sp.syntaxErr(nt)
			}
			if seen[nt.val] {
				return typeRef{}, &pgerr.Error{Code: pgerr.DuplicateColumn, Position: sp.charPos(nt.pos),
					Message: "field \"" + nt.val + "\" specified more than once"}
			}
			seen[nt.val] = true
			p.j++
			ft, err := p.elem(depth)
			if err != nil {
				return typeRef{}, err
			}
			fields = append(fields, catalog.Field{Name: nt.val, Type: ft.typ})
		}
		t, cerr := catalog.StructOf(fields)
		if cerr != nil {
			return typeRef{}, nestingErr(cerr, pos)
		}
		ref = typeRef{typ: t}
	}
	if ref.typ.IsNested() && p.gt == 0 && p.tok().isOp("[") {
		// STRUCT<...>[]: an array of structs in Postgres's spelling.
		k := p.j + 1
		if sp.toks[k].kind == tokNumber {
			k++
		}
		if !sp.toks[k].isOp("]") {
			return typeRef{}, sp.syntaxErr(sp.toks[k])
		}
		p.j = k + 1
		ref.typ = catalog.ArrayOf(ref.typ)
	} else if ref.typ.IsArray() && p.gt == 0 && p.tok().isOp("[") {
		return typeRef{}, unsupported(sp.charPos(p.tok().pos), "arrays of arrays are not supported")
	}
	return ref, nil
}

func nestingErr(err error, pos int) *pgerr.Error {
	if errors.Is(err, catalog.ErrNestingTooDeep) {
		return &pgerr.Error{Code: pgerr.StatementTooComplex, Position: pos,
			Message: "types are nested more than " + strconv.Itoa(catalog.MaxNestingDepth) + " levels deep"}
	}
	return &pgerr.Error{Code: pgerr.FeatureNotSupported, Position: pos, Message: err.Error()}
}

// splitColumns splits a column list at its top-level commas, as
// splitList does, but also skips the commas inside a compound type's
// angle brackets (STRUCT<a INT, b INT>).
func (sp *stmtParser) splitColumns(a, b int) [][2]int {
	if a >= b {
		return nil
	}
	var items [][2]int
	depth, angles := 0, 0
	start := a
	for k := a; k < b; k++ {
		switch t := sp.toks[k]; {
		case t.isOp("("):
			depth++
		case t.isOp(")"):
			depth--
		case t.isOp("<") && (angles > 0 || k > a && sp.toks[k-1].kind == tokIdent && nestedTypeWords[sp.toks[k-1].val]):
			angles++
		case angles > 0 && t.kind == tokOp && t.val != "" && strings.Trim(t.val, ">") == "":
			angles = max(0, angles-len(t.val))
		case angles > 0 && t.kind == tokOp && strings.HasPrefix(t.val, "<>") && strings.Trim(t.val[2:], ">") == "":
			// An empty STRUCT<> and the brackets that close around it.
			angles = max(0, angles-(len(t.val)-2))
		case depth == 0 && angles == 0 && t.isOp(","):
			items = append(items, [2]int{start, k})
			start = k + 1
		}
	}
	return append(items, [2]int{start, b})
}
