package sql

import (
	"reflect"
	"testing"
)

func TestShapeOf(t *testing.T) {
	for _, c := range []struct {
		text, shape, kinds string
		args               []any
		ok                 bool
	}{
		{"SELECT name FROM t WHERE id = 42", "SELECT name FROM t WHERE id = $1", "i", []any{int64(42)}, true},
		{"select name from t where id = 43;", "select name from t where id = $1", "i", []any{int64(43)}, true},
		{"SELECT a FROM t WHERE s = 'it''s' AND n IN (1, 2)", "SELECT a FROM t WHERE s = $1 AND n IN ($2, $3)", "sii",
			[]any{"it's", int64(1), int64(2)}, true},
		{"SELECT a FROM t WHERE s = E'a\\nb'", "SELECT a FROM t WHERE s = $1", "s", []any{"a\nb"}, true},
		// Floats and integers beyond int64 stay in the text.
		{"SELECT a FROM t WHERE x > 1.5 AND y < 99999999999999999999", "SELECT a FROM t WHERE x > 1.5 AND y < 99999999999999999999", "", nil, true},
		// Comments and quoted identifiers are kept as written.
		{`SELECT "A" /* 7 */ FROM t WHERE "x" = 7 -- 8`, `SELECT "A" /* 7 */ FROM t WHERE "x" = $1`, "i", []any{int64(7)}, true},
		{"SELECT 1", "SELECT $1", "i", []any{int64(1)}, true},
		{"SELECT a FROM t WHERE id = $1", "", "", nil, false},
		{"SELECT 1; SELECT 2", "", "", nil, false},
		{"SELECT 'unterminated", "", "", nil, false},
		{"   ", "", "", nil, false},
	} {
		sh, ok := ShapeOf(c.text)
		if ok != c.ok {
			t.Errorf("ShapeOf(%q): ok %v, want %v", c.text, ok, c.ok)
			continue
		}
		if !ok {
			continue
		}
		if sh.Text != c.shape || sh.Key != c.shape+"\x00"+c.kinds || !reflect.DeepEqual(sh.Args, c.args) {
			t.Errorf("ShapeOf(%q) = %q %q %#v, want %q %q %#v", c.text, sh.Text, sh.Key, sh.Args, c.shape, c.shape+"\x00"+c.kinds, c.args)
		}
	}
	// Two constants that differ make one key; a string and an integer
	// do not.
	a, _ := ShapeOf("SELECT v FROM t WHERE k = 1")
	b, _ := ShapeOf("SELECT v FROM t WHERE k = 2")
	s, _ := ShapeOf("SELECT v FROM t WHERE k = '2'")
	if a.Key != b.Key || a.Key == s.Key {
		t.Errorf("keys %q %q %q", a.Key, b.Key, s.Key)
	}
}

func BenchmarkShapeOf(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := ShapeOf("SELECT name, amount FROM items WHERE id = 73412"); !ok {
			b.Fatal("no shape")
		}
	}
}
