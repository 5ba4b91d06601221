package planner

import "github.com/basindb/basin/catalog"

// The string functions, as Postgres 15 types them (eval/strfuncs.go
// computes them). position(b IN a) arrives as position(a, b).

func init() {
	t, i, b := catalog.Varchar, catalog.Int, catalog.Boolean
	overloaded("split_part", ov(t, t, t, i))
	overloaded("strpos", ov(i, t, t))
	overloaded("position", ov(i, t, t))
	overloaded("left", ov(t, t, i))
	overloaded("right", ov(t, t, i))
	overloaded("lpad", ov(t, t, i), ov(t, t, i, t))
	overloaded("rpad", ov(t, t, i), ov(t, t, i, t))
	overloaded("repeat", ov(t, t, i))
	overloaded("reverse", ov(t, t))
	overloaded("initcap", ov(t, t))
	overloaded("translate", ov(t, t, t, t))
	overloaded("starts_with", ov(b, t, t))
	overloaded("ascii", ov(i, t))
	overloaded("chr", ov(t, i))
	overloaded("md5", ov(t, t), ov(t, catalog.Bytea))
	overloaded("octet_length", ov(i, t), ov(i, catalog.Bytea))
	overloaded("bit_length", ov(i, t))
	overloaded("overlay", ov(t, t, t, i), ov(t, t, t, i, i))
	overloaded("regexp_replace", ov(t, t, t, t), ov(t, t, t, t, t))
	overloaded("regexp_like", ov(b, t, t), ov(b, t, t, t))
	overloaded("regexp_count", ov(i, t, t), ov(i, t, t, i), ov(i, t, t, i, t))
	// ltrim, rtrim and btrim take the characters to trim (a space by
	// default); btrim is also a catalog function, and this entry lets
	// a view call it.
	overloaded("ltrim", ov(t, t), ov(t, t, t))
	overloaded("rtrim", ov(t, t), ov(t, t, t))
	overloaded("btrim", ov(t, t), ov(t, t, t))
	// concat_ws takes any values and writes them as text, as concat.
	scalarFuncs["concat_ws"] = funcSig{2, -1, fixed(catalog.Varchar), catalog.Varchar, nil}
}
