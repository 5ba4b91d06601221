package catalog

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

func mustStruct(t *testing.T, fields ...Field) Type {
	t.Helper()
	typ, err := StructOf(fields)
	if err != nil {
		t.Fatal(err)
	}
	return typ
}

func mustMap(t *testing.T, v Type) Type {
	t.Helper()
	typ, err := MapOf(Varchar, v)
	if err != nil {
		t.Fatal(err)
	}
	return typ
}

func TestNestedTypes(t *testing.T) {
	inner := mustStruct(t, Field{"zip", Varchar}, Field{"Geo Point", ArrayOf(Double)})
	addr := mustStruct(t, Field{"street", Varchar}, Field{"n", Int}, Field{"where", inner})
	m := mustMap(t, ArrayOf(Int))
	ms := mustMap(t, addr)
	arr := ArrayOf(addr)

	if again := mustStruct(t, Field{"street", Varchar}, Field{"n", Int}, Field{"where", inner}); again != addr {
		t.Errorf("the same struct interned twice: %#x and %#x", addr, again)
	}
	if addr < 0x100 || addr.IsArray() || !addr.IsStruct() || addr.IsMap() || !addr.IsNested() {
		t.Errorf("struct %#x: IsArray %v IsStruct %v IsMap %v", addr, addr.IsArray(), addr.IsStruct(), addr.IsMap())
	}
	if !m.IsMap() || m.IsStruct() || m.Key() != Varchar || m.Value() != ArrayOf(Int) {
		t.Errorf("map %#x: key %s value %s", m, m.Key(), m.Value())
	}
	if !arr.IsArray() || arr.Elem() != addr || arr.IsStruct() || !arr.HasNested() || arr.IsNested() {
		t.Errorf("array of struct %#x: elem %s", arr, arr.Elem())
	}
	if got := addr.Fields(); len(got) != 3 || got[2].Type != inner || got[0].Name != "street" {
		t.Errorf("Fields = %v", got)
	}
	if i := inner.FieldIndex("GEO POINT"); i != 1 {
		t.Errorf("FieldIndex case-insensitive = %d", i)
	}
	if i := inner.FieldIndex("nope"); i != -1 {
		t.Errorf("FieldIndex of a missing field = %d", i)
	}
	for _, c := range []struct {
		t                Type
		str, pg, sqlName string
		oid              uint32
	}{
		{addr, `STRUCT<street VARCHAR, n INTEGER, where STRUCT<zip VARCHAR, "Geo Point" DOUBLE[]>>`, "jsonb", "jsonb", 3802},
		{m, "MAP<VARCHAR, INTEGER[]>", "jsonb", "jsonb", 3802},
		{ms, "MAP<VARCHAR, " + addr.String() + ">", "jsonb", "jsonb", 3802},
		{arr, "ARRAY<" + addr.String() + ">", "_jsonb", "jsonb[]", 3807},
		{ArrayOf(Int), "INTEGER[]", "_int4", "integer[]", 1007},
	} {
		if c.t.String() != c.str || c.t.PGName() != c.pg || c.t.SQLName() != c.sqlName || c.t.OID() != c.oid {
			t.Errorf("%#x: String %q PGName %q SQLName %q OID %d, want %q %q %q %d", uint32(c.t),
				c.t.String(), c.t.PGName(), c.t.SQLName(), c.t.OID(), c.str, c.pg, c.sqlName, c.oid)
		}
		back, err := ParseTypeText(c.t.String())
		if err != nil || back != c.t {
			t.Errorf("ParseTypeText(%q) = %#x, %v; want %#x", c.t.String(), back, err, c.t)
		}
		if !c.t.Storable() {
			t.Errorf("%s not storable", c.t)
		}
	}
	if _, err := MapOf(Int, Int); err == nil {
		t.Error("MAP<INTEGER, INTEGER> accepted")
	}
	if s := mustStruct(t, Field{"o", Oid}); s.Storable() {
		t.Error("a struct of an oid is storable")
	}
	deep := Int
	var err error
	for i := 0; i <= MaxNestingDepth && err == nil; i++ {
		deep, err = StructOf([]Field{{"x", deep}})
	}
	if !errors.Is(err, ErrNestingTooDeep) {
		t.Errorf("nesting %d deep: %v", MaxNestingDepth+1, err)
	}
	for _, bad := range []string{"STRUCT<a INTEGER", "MAP<INTEGER, INTEGER>", "ARRAY<INTEGER[]>", "NOPE", "STRUCT<\"a INTEGER>", "INTEGER[][]"} {
		if typ, err := ParseTypeText(bad); err == nil {
			t.Errorf("ParseTypeText(%q) = %s, want an error", bad, typ)
		}
	}
}

// TestTypeJSON checks the command log's spelling of types: the old
// types as the numbers they always were, composites as their text, read
// back to the same type.
func TestTypeJSON(t *testing.T) {
	addr := mustStruct(t, Field{"street", Varchar}, Field{"tags", mustMap(t, Int)})
	cols := []Column{{Name: "a", Type: BigInt}, {Name: "b", Type: ArrayOf(Varchar)}, {Name: "c", Type: addr}, {Name: "d", Type: ArrayOf(addr)}}
	b, err := json.Marshal(cols)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"Name":"a","Type":3,"Key":false,"Hidden":false},{"Name":"b","Type":133,"Key":false,"Hidden":false},` +
		`{"Name":"c","Type":"STRUCT\u003cstreet VARCHAR, tags MAP\u003cVARCHAR, INTEGER\u003e\u003e","Key":false,"Hidden":false},` +
		`{"Name":"d","Type":"ARRAY\u003cSTRUCT\u003cstreet VARCHAR, tags MAP\u003cVARCHAR, INTEGER\u003e\u003e\u003e","Key":false,"Hidden":false}]`
	if string(b) != want {
		t.Errorf("marshal:\n%s\nwant\n%s", b, want)
	}
	var back []Column
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, cols) {
		t.Errorf("round trip: %v, want %v", back, cols)
	}
	var typ Type
	for _, bad := range []string{`256`, `-1`, `"NOPE"`, `1.5`} {
		if err := json.Unmarshal([]byte(bad), &typ); err == nil {
			t.Errorf("Unmarshal(%s) accepted", bad)
		}
	}
}

func TestNewMap(t *testing.T) {
	m := NewMap([]MapEntry{{"b", 1}, {"a", 2}, {"b", 3}, {"c", nil}})
	want := Map{{"a", 2}, {"b", 3}, {"c", nil}}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("NewMap = %v, want %v", m, want)
	}
	if v, ok := m.Get("b"); !ok || v != 3 {
		t.Errorf("Get(b) = %v, %v", v, ok)
	}
	if _, ok := m.Get("z"); ok {
		t.Error("Get(z) found")
	}
}
