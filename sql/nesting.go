package sql

import (
	"fmt"

	"github.com/basindb/basin/internal/pgerr"
)

// maxNesting bounds parenthesis depth so that a hostile statement cannot
// make the parser and converter recurse without limit.
const maxNesting = 500

// MaxExpressionDepth bounds how deep an expression may nest, operators
// included: 1+1+...+1 is a tree as deep as it has operators, and TiDB's
// parser, the conversion, the planner and the evaluator all recurse
// down it (a 2 MB SELECT 1+1+... once took 3.4 GB). A statement deeper
// than this is refused (54001) before TiDB sees it, so a statement
// within basin.max_statement_bytes parses in bounded memory. Postgres
// stops such a statement too, at its stack depth limit.
const MaxExpressionDepth = 10000

// nesting refuses, as the lexer meets its tokens, a statement nested
// more than maxNesting parentheses deep (54000) or whose expressions may
// be deeper than MaxExpressionDepth (54001). Checking while lexing stops
// a hostile statement at the token that makes it too deep, before the
// rest of it is lexed. The depth is estimated from the tokens: the
// parentheses open at a token plus, at each of their levels, the
// longest run of one kind of operator since the last comma (a list's
// items are siblings, not nested; a = 1 OR a = 2 OR ... is as deep as
// its ORs, 1+1+... as its pluses). The zero nesting is ready for use.
type nesting struct {
	depth  int
	ops    int       // the sum of the levels' deepest runs
	levels []opLevel // one per open parenthesis, inside the outermost
	top    opLevel   // the outermost
}

// token accounts for t, the next token of text.
func (n *nesting) token(text string, t token) *pgerr.Error {
	switch {
	case t.isOp(";"):
		*n = nesting{levels: n.levels[:0]}
	case t.isOp("("):
		n.depth++
		if n.depth > maxNesting {
			return &pgerr.Error{Code: pgerr.ProgramLimitExceeded,
				Message:  fmt.Sprintf("statement is nested more than %d parentheses deep", maxNesting),
				Position: charPos(text, t.pos)}
		}
		n.levels = append(n.levels, opLevel{})
	case t.isOp(")"):
		n.depth--
		if k := len(n.levels); k > 0 {
			n.ops -= n.levels[k-1].max
			n.levels = n.levels[:k-1]
		}
	case t.isOp(","):
		l := n.level()
		n.ops -= l.max
		*l = opLevel{}
	default:
		c := opClass(t)
		if c < 0 {
			return nil
		}
		l := n.level()
		if l.n[c]++; l.n[c] > l.max {
			n.ops++
			l.max = l.n[c]
		}
		if n.ops+n.depth > MaxExpressionDepth {
			return &pgerr.Error{Code: pgerr.StatementTooComplex,
				Message:  fmt.Sprintf("statement is too complex: an expression is nested more than %d operators deep", MaxExpressionDepth),
				Hint:     "Split the expression, or write a long list of alternatives as x IN (...).",
				Position: charPos(text, t.pos)}
		}
	}
	return nil
}

// level is the innermost open level.
func (n *nesting) level() *opLevel {
	if k := len(n.levels); k > 0 {
		return &n.levels[k-1]
	}
	return &n.top
}

// opLevel counts the operators of each class (opClass) met at one
// parenthesis level since its last comma; max is the largest count.
type opLevel struct {
	n   [7]int
	max int
}

// opClass is the class of operator t is, by precedence (a chain of one
// class is a tree as deep as the chain), or -1 if t is no operator.
func opClass(t token) int {
	switch {
	case t.isWord("or"):
		return 0
	case t.isWord("and"):
		return 1
	case t.isWord("not"):
		return 2
	case t.kind != tokOp:
		return -1
	}
	switch t.val {
	case ".", ";", "[", "]", "(", ")", ",":
		return -1
	case "=", "<", ">", "<=", ">=", "<>", "!=":
		return 3
	case "+", "-":
		return 4
	case "*", "/", "%":
		return 5
	}
	return 6 // ||, ::, and the rest
}
