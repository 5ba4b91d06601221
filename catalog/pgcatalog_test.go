package catalog

import (
	"testing"
)

func testCatalog(t *testing.T) *Catalog {
	t.Helper()
	c := New()
	for i, r := range []*Relation{
		{Name: "orders", Kind: KindStream, Schema: Schema{Columns: []Column{{Name: "id", Type: BigInt, Key: true}, {Name: "v", Type: Varchar}}}},
		{Name: "Customers", Kind: KindTable, Schema: Schema{Columns: []Column{{Name: "id", Type: Varchar, Key: true}}}},
		{Name: "revenue", Kind: KindView, Schema: Schema{Columns: []Column{{Name: "region", Type: Varchar, Key: true}, {Name: "n", Type: BigInt}}}, Sources: []string{"orders"}},
	} {
		if ch := c.Apply(int64(10+i), &Command{Op: OpCreate, Relation: r}); ch.Err != nil {
			t.Fatal(ch.Err)
		}
	}
	return c
}

// Every virtual relation's rows have its columns' width and Go types,
// and names are unique.
func TestVirtualRelationsShape(t *testing.T) {
	s := testCatalog(t).PGSnapshot(SessionInfo{User: "u", Database: "basin", Settings: []Setting{{Name: "a", Value: "b"}}})
	seen := map[string]bool{}
	for _, vt := range virtualTables() {
		if seen[vt.QualifiedName()] {
			t.Errorf("%s defined twice", vt.QualifiedName())
		}
		seen[vt.QualifiedName()] = true
		for _, row := range s.Rows(vt) {
			if len(row) != len(vt.Columns) {
				t.Fatalf("%s: row of %d values for %d columns", vt.QualifiedName(), len(row), len(vt.Columns))
			}
			for i, v := range row {
				ok := true
				switch v.(type) {
				case nil:
				case int64:
					ok = vt.Columns[i].Type == Int || vt.Columns[i].Type == BigInt || vt.Columns[i].Type.OidLike()
				case string:
					ok = vt.Columns[i].Type == Varchar
				case bool:
					ok = vt.Columns[i].Type == Boolean
				case float64:
					ok = vt.Columns[i].Type == Double
				case []any:
					ok = vt.Columns[i].Type.Subscriptable()
				}
				if !ok {
					t.Errorf("%s.%s: a Go %T in a %s column", vt.QualifiedName(), vt.Columns[i].Name, v, vt.Columns[i].Type)
				}
			}
		}
	}
}

func TestRelationOIDs(t *testing.T) {
	c := testCatalog(t)
	s := c.PGSnapshot(SessionInfo{})
	r, _ := c.Lookup("revenue")
	if got := RelationOID(r); got != relOIDBase+4*12 {
		t.Errorf("oid of revenue = %d, want it derived from its version", got)
	}
	for _, tc := range []struct {
		name string
		oid  int64
		ok   bool
	}{
		{"revenue", RelationOID(r), true},
		{"public.revenue", RelationOID(r), true},
		{"basin.public.revenue", RelationOID(r), true},
		{"REVENUE", RelationOID(r), true},
		{`"REVENUE"`, 0, false},
		{`"Customers"`, relOIDBase + 4*11, true},
		{"customers", 0, false},
		{"pg_class", 1259, true},
		{"pg_catalog.pg_class", 1259, true},
		{"tables", 0, false},
		{"revenue_pkey", RelationOID(r) + 1, true},
	} {
		oid, ok := s.RelationOIDByName(tc.name)
		if ok != tc.ok || ok && oid != tc.oid {
			t.Errorf("RelationOIDByName(%s) = %d, %v; want %d, %v", tc.name, oid, ok, tc.oid, tc.ok)
		}
	}
	if n, _ := s.RelationName(1259); n != "pg_class" {
		t.Errorf("RelationName(1259) = %q", n)
	}
	tables, _ := LookupVirtual("information_schema", "tables")
	if n, _ := s.RelationName(tables.OID); n != "information_schema.tables" {
		t.Errorf("RelationName(information_schema.tables) = %q", n)
	}
	if n, _ := s.RelationName(relOIDBase + 4*11); n != `"Customers"` {
		t.Errorf("RelationName(Customers) = %q", n)
	}
}

func TestFormatType(t *testing.T) {
	for _, tc := range []struct {
		oid, typmod int64
		want        string
	}{
		{20, -1, "bigint"}, {25, -1, "text"}, {1043, 24, "character varying(20)"}, {1009, -1, "text[]"},
		{1114, -1, "timestamp without time zone"}, {18, -1, `"char"`}, {22, -1, "int2vector"}, {999999, -1, "???"},
	} {
		if got := FormatType(tc.oid, tc.typmod); got != tc.want {
			t.Errorf("FormatType(%d, %d) = %q, want %q", tc.oid, tc.typmod, got, tc.want)
		}
	}
	for _, name := range []string{"integer", "int4", "pg_catalog.int4", "INTEGER"} {
		if oid, ok := TypeOIDByName(name); !ok || oid != 23 {
			t.Errorf("TypeOIDByName(%s) = %d, %v", name, oid, ok)
		}
	}
	if oid, ok := TypeOIDByName("text[]"); !ok || oid != 1009 {
		t.Errorf("TypeOIDByName(text[]) = %d, %v", oid, ok)
	}
}

func TestFormatArray(t *testing.T) {
	format := func(v any) string {
		switch x := v.(type) {
		case string:
			return x
		case int64:
			return string(rune('0' + x))
		}
		return "?"
	}
	for _, tc := range []struct {
		t    Type
		v    []any
		want string
	}{
		{ArrayOf(Varchar), []any{"a", "b c", nil, "", `q"\`, "null"}, `{a,"b c",NULL,"","q\"\\","null"}`},
		{ArrayOf(Int), []any{}, "{}"},
		{Int2Vector, []any{int64(1), int64(3)}, "1 3"},
	} {
		if got := FormatArray(tc.t, tc.v, format); got != tc.want {
			t.Errorf("FormatArray(%v) = %s, want %s", tc.v, got, tc.want)
		}
	}
	if got := FormatRecord([]any{int64(1), "a b", nil, `x"`}, format); got != `(1,"a b",,"x""")` {
		t.Errorf("FormatRecord = %s", got)
	}
}
