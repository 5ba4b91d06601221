package docs

import (
	"strings"
	"testing"
)

// The doc test's own machinery, without processes: what it finds in
// markdown and how it compares output.

func TestParseDirectives(t *testing.T) {
	d := &document{path: "x.md"}
	err := d.parse(strings.Join([]string{
		"# x",
		"<!-- doctest: skip (a synopsis; of sorts) -->",
		"```sql",
		"SELECT ...;",
		"```",
		"## A section",
		"<!-- doctest: setup",
		"CREATE STREAM s (k VARCHAR KEY, v BIGINT);",
		"-->",
		"",
		"<!-- doctest: volatile _served_by, 18619; output of: basin serve --data-dir /var/lib/basin; echo done -->",
		"",
		"  ```",
		"  basin: in use (pid 18619)",
		"  ```",
	}, "\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.sections) != 2 || d.sections[1].title != "A section" {
		t.Fatalf("sections: %+v", d.sections)
	}
	skip := d.sections[0].blocks[0]
	if skip.dir.skip != "a synopsis; of sorts" || skip.info != "sql" || skip.line != 3 {
		t.Errorf("skipped block: %+v", skip)
	}
	setup, out := d.sections[1].blocks[0], d.sections[1].blocks[1]
	if setup.info != "setup" || setup.text != "CREATE STREAM s (k VARCHAR KEY, v BIGINT);" {
		t.Errorf("setup: %+v", setup)
	}
	if out.dir.outputOf != "basin serve --data-dir /var/lib/basin; echo done" || strings.Join(out.dir.volatile, ",") != "_served_by,18619" {
		t.Errorf("output of: %+v", out.dir)
	}
	if out.text != "basin: in use (pid 18619)" {
		t.Errorf("an indented block keeps its text without the indentation: %q", out.text)
	}

	for _, bad := range []string{
		"<!-- doctest: skip -->\n```\nx\n```",               // no reason
		"<!-- doctest: skip () -->\n```\nx\n```",            // empty reason
		"<!-- doctest: sometimes -->\n```\nx\n```",          // unknown clause
		"<!-- doctest: output -->\n\nprose\n```\nx\n```",    // not right before its block
		"<!-- doctest: output -->\n## heading\n```\nx\n```", // nor across a heading
		"```sql\nSELECT 1;\n",                               // unclosed
	} {
		if err := (&document{path: "x.md"}).parse(bad); err == nil {
			t.Errorf("no error for:\n%s", bad)
		}
	}
}

func TestUnmarkedBlocksFail(t *testing.T) {
	for _, tc := range []struct {
		md   string
		kind string // "" for an error
	}{
		{"```sql\nSELECT 1;\n```", kindSQL},
		{"```sh\necho\n```", kindShell},
		{"```\nbasin=> \\d\n```", kindTranscript},
		{"```\nsome output\n```", ""},
		{"```yaml\na: b\n```", ""},
		{"<!-- doctest: file a.yaml -->\n```yaml\na: b\n```", kindFile},
		{"```\n x\n```\n<!-- doctest: output -->\n```\nx\n```", ""}, // output of a block that does not run
	} {
		d := &document{path: "x.md"}
		if err := d.parse(tc.md); err != nil {
			t.Fatal(err)
		}
		var prev *block
		var kind string
		var err error
		for _, b := range d.sections[0].blocks {
			kind, err = kindOf(b, prev)
			prev = b
		}
		if tc.kind == "" && err == nil || tc.kind != "" && (err != nil || kind != tc.kind) {
			t.Errorf("%q: kind %q, error %v; want %q", tc.md, kind, err, tc.kind)
		}
	}
}

func TestSplitSQL(t *testing.T) {
	stmts := splitSQL(strings.Join([]string{
		"-- a comment",
		"SET x = 1;   -- not output",
		"SELECT a, b",
		"  FROM t WHERE s = 'x;y -- z';",
		"--  a | b",
		"-- ---+---",
		"--  1 | 2",
		"\\d t",
		"SELECT 1/0;",
		"-- ERROR:  division by zero",
		"SELECT 2;",
		"-- elsewhere: a comment",
	}, "\n"), 10)
	if len(stmts) != 5 {
		t.Fatalf("%d statements: %+v", len(stmts), stmts)
	}
	if stmts[0].want != nil || stmts[1].line != 12 || len(stmts[1].want) != 3 || stmts[2].text != "\\d t" {
		t.Errorf("statements: %+v %+v %+v", stmts[0], stmts[1], stmts[2])
	}
	if !stmts[3].wantsError() || stmts[4].want != nil {
		t.Errorf("statements: %+v %+v", stmts[3], stmts[4])
	}
	tr := splitTranscript("basin=> \\d t\n   Table \"t\"\n a | b\n---+---\nbasin=> SELECT 1;\n ?column?", 1)
	if len(tr) != 2 || tr[0].text != "\\d t" || len(tr[0].want) != 3 || len(tr[1].want) != 1 {
		t.Errorf("transcript: %+v", tr)
	}
}

const psqlOut = `        Materialized view "public.v"
 region | orders |  sql
--------+--------+-------------------
 eu     |      2 | CREATE TABLE v AS+
        |        |   SELECT x
 us     |      1 | CREATE TABLE w
(2 rows)

Indexes:
    "v_pkey" PRIMARY KEY, btree (region)
`

func TestCompareOutput(t *testing.T) {
	got := parseOutput(strings.Split(psqlOut, "\n"))
	if len(got.tables) != 1 || len(got.tables[0].rows) != 2 || got.tables[0].rows[0][2] != "CREATE TABLE v AS SELECT x" {
		t.Fatalf("parsed: %+v", got)
	}
	for _, tc := range []struct {
		want    string
		vol     []string
		ordered bool
		ok      bool
	}{
		{" region | orders | sql\n--+--+--\n us | 1 | CREATE TABLE w\n eu | 2 | CREATE TABLE v ...", nil, false, true},
		{" region | orders | sql\n--+--+--\n us | 1 | CREATE TABLE w\n eu | 2 | CREATE TABLE v ...", nil, true, false}, // wrong order
		{" region | orders | sql\n--+--+--\n eu | 3 | ...\n us | 1 | ...", nil, false, false},                          // wrong value
		{" region | orders | sql\n--+--+--\n eu | 3 | ...\n us | 9 | ...", []string{"orders"}, true, true},             // volatile
		{" region | orders | sql\n--+--+--\n eu | 2 | ...", nil, false, false},                                         // a row missing
		{" region | orders | sql\n--+--+--\n eu | 2 | CREATE ... AS SELECT x\n us | 1 | CREATE ... w", nil, false, true},
		{" region | orders | sql\n--+--+--\n eu | 2 | CREATE ... AS SELECT y\n us | 1 | CREATE ... w", nil, false, false},
		{" region | orders\n--+--\n eu | 2\n us | 1", nil, false, false}, // other columns
		{`Materialized view "public.v"` + "\nIndexes:\n\"v_pkey\" PRIMARY KEY, btree (region)", nil, false, true},
		{"Indexes:\n" + `Materialized view "public.v"`, nil, false, false}, // out of order
		{`Materialized view "public.w"`, nil, false, false},
		{`Materialized view "public...`, nil, false, true},
		{`Materialized view "public.vv"`, []string{`"public.vv"`}, false, true},
	} {
		err := compareOutput(parseOutput(strings.Split(tc.want, "\n")), got, volatilityOf(tc.vol), tc.ordered)
		if (err == nil) != tc.ok {
			t.Errorf("want:\n%s\nvolatile %v, ordered %v: error %v, want ok=%v", tc.want, tc.vol, tc.ordered, err, tc.ok)
		}
	}
	errOut := parseOutput([]string{`psql:<stdin>:3: ERROR:  relation "nope" does not exist`, "LINE 1: SELECT * FROM nope;"})
	if err := compareOutput(parseOutput([]string{`ERROR:  relation "nope" does not exist`}), errOut, nil, false); err != nil {
		t.Errorf("an error as psql prints it: %v", err)
	}
}

func volatilityOf(words []string) volatility {
	v := volatility{}
	for _, w := range words {
		v[w] = true
	}
	return v
}

// TestReadmeClusterOwnPorts checks what TestDocs cannot, since it moves
// every port: the README's Several nodes section runs beside `make run`,
// so none of its commands may use make run's ports (5433, 8433, 9092).
func TestReadmeClusterOwnPorts(t *testing.T) {
	d, err := readDocument("../README.md", "README.md")
	if err != nil {
		t.Fatal(err)
	}
	var sec *section
	for _, s := range d.sections {
		if s.title == "Several nodes" {
			sec = s
		}
	}
	if sec == nil {
		t.Fatal(`README.md has no "## Several nodes" section`)
	}
	for _, b := range sec.blocks {
		if b.dir.skip != "" {
			continue
		}
		for _, m := range portRefRE.FindAllStringSubmatch(b.text, -1) {
			for _, p := range m[1:] {
				for _, taken := range defaultPorts {
					if p == taken {
						t.Errorf("%s: port %s is make run's: the cluster must run beside it", b.where(), p)
					}
				}
			}
		}
	}
}
