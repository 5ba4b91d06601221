package sql

import (
	"slices"
	"testing"

	"github.com/pingcap/tidb/pkg/parser/ast"
)

// positions collects the text position of every expression of a TiDB
// tree, in walk order, after setting it to set when set is not 0.
type positions struct {
	set int
	all []int
}

func (p *positions) Enter(n ast.Node) (ast.Node, bool) {
	if e, ok := n.(ast.ExprNode); ok {
		if p.set != 0 {
			e.SetOriginTextPosition(p.set)
		}
		p.all = append(p.all, e.OriginTextPosition())
	}
	return n, false
}

func (p *positions) Leave(n ast.Node) (ast.Node, bool) { return n, true }

// TestTiDBTreeOutlivesOtherParses keeps a TiDB tree, as a statement's
// conversion does, while other statements are parsed. A TiDB parser
// keeps pointers into the last tree it returned (its symbol stack) and,
// when it parses again, sets the text position of expressions through
// them; the value it writes is mostly the one already there, which is
// why the tree's positions are first set to a mark. The tree's parser
// must not parse anything else until the statement is done with the
// tree (stmtParser.release): else one connection's parse writes into
// another's tree while it is being converted, a data race.
func TestTiDBTreeOutlivesOtherParses(t *testing.T) {
	const mark = -7
	sp := &stmtParser{}
	stmt, err := sp.parseTiDB(&tidbText{sql: "SELECT id, n FROM per_id WHERE id = ?"})
	if err != nil {
		t.Fatal(err)
	}
	before := positions{set: mark}
	stmt.Accept(&before)
	if len(before.all) < 4 {
		t.Fatalf("positions %v: too few expressions", before.all)
	}
	// Other statements, as other connections would parse them meanwhile.
	for _, text := range []string{
		"SELECT id, n FROM per_id WHERE id = ?",
		"SELECT id, n FROM per_id",
		"SELECT x FROM u WHERE x = ? AND y = ?",
	} {
		other := &stmtParser{}
		if _, err := other.parseTiDB(&tidbText{sql: text}); err != nil {
			t.Fatal(err)
		}
		other.release()
	}
	var after positions
	stmt.Accept(&after)
	if !slices.Equal(before.all, after.all) {
		t.Fatalf("another parse wrote into the tree while it was held: positions %v, then %v", before.all, after.all)
	}
	sp.release()
	if len(sp.tidb) != 0 {
		t.Fatal("release kept parsers")
	}
}
