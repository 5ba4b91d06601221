package catalog

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// Virtual pg_catalog and information_schema relations.
//
// Postgres clients learn what a database holds by querying its system
// catalogs: psql's \d, JDBC's DatabaseMetaData, SQLAlchemy's inspector
// and every BI tool's table picker. basin has no such tables; it
// generates them on the fly from the Catalog, per statement, as a
// PGSnapshot. Each VirtualTable has the columns of its Postgres 15
// namesake (so any query that names a column of the real catalog can be
// bound) and rows made from basin's relations:
//
//   - Namespaces: pg_catalog, public and information_schema. Every basin
//     relation is in public.
//   - A table is relkind 'r'. A view (CREATE TABLE ... AS SELECT) is
//     relkind 'm', a materialized view: that is what it is, and psql's
//     \dm, JDBC's MATERIALIZED VIEW and SQLAlchemy's get_view_names then
//     list views as such. A stream is relkind 'r' too, not 'f' (foreign
//     table): a stream is read with SELECT like a table (a bounded scan
//     of its topic), and BI tools and drivers list only ordinary tables
//     and views in their pickers (\dt, get_table_names, Grafana), so a
//     foreign table would hide streams from the people who query them.
//     The description (obj_description, \dt+) says which is which.
//   - Tables and views have a primary key, their key columns: an index
//     <name>_pkey (relkind 'i', btree) in pg_index and a constraint of the
//     same name in pg_constraint. A stream's key is not unique (a stream
//     is append-only), so a stream has neither.
//
// OIDs are stable across statements and nodes: a basin relation's oid is
// derived from its Version (the command-log offset that created it, the
// same on every node), and system objects use Postgres's own oids where
// clients hard-code them (pg_class is 1259, text is 25, public is 2200).
//
// information_schema.tables and .columns list basin's views (as VIEW)
// although Postgres leaves materialized views out of them: BI tools pick
// tables from information_schema, and views are what basin users read.

// Namespace oids.
const (
	NamespacePgCatalog         = 11
	NamespacePublic            = 2200
	NamespaceInformationSchema = 13000
)

// DatabaseOID is the oid of the one database, basin.
const DatabaseOID = 5

// RoleOID is the oid of every role: basin has no privileges, and the
// session's user is shown as the owner of everything.
const RoleOID = 10

// Access methods.
const (
	AmHeap  = 2
	AmBtree = 403
)

// relOIDBase is the first oid of basin's relations; each relation takes
// four: the relation, its primary key index, its primary key constraint
// and one spare.
const relOIDBase = 16384

// RelationOID returns the oid of a basin relation.
func RelationOID(r *Relation) int64 { return relOIDBase + 4*r.Version }

// IndexOID returns the oid of a relation's primary key index.
func IndexOID(r *Relation) int64 { return RelationOID(r) + 1 }

// ConstraintOID returns the oid of a relation's primary key constraint.
func ConstraintOID(r *Relation) int64 { return RelationOID(r) + 2 }

// HasPrimaryKey reports whether the relation has a primary key: a table
// or view with key columns.
func HasPrimaryKey(r *Relation) bool {
	return r.Kind != KindStream && len(r.Schema.KeyIndexes()) > 0
}

// VirtualTable is one pg_catalog or information_schema relation.
type VirtualTable struct {
	Schema  string
	Name    string
	OID     int64
	View    bool // a view in Postgres (pg_roles, information_schema.tables)
	Columns []Column
	rows    func(s *PGSnapshot) []Row
}

// QualifiedName is schema.name.
func (t *VirtualTable) QualifiedName() string { return t.Schema + "." + t.Name }

var (
	virtualOnce   sync.Once
	virtualByName map[string]*VirtualTable // "schema.name"
	virtualList   []*VirtualTable
)

func virtualTables() []*VirtualTable {
	virtualOnce.Do(func() {
		virtualList = append(pgCatalogTables(), informationSchemaTables()...)
		virtualByName = make(map[string]*VirtualTable, len(virtualList))
		next := int64(13100)
		for _, t := range virtualList {
			if t.OID == 0 {
				t.OID = next
				next++
			}
			virtualByName[t.QualifiedName()] = t
		}
	})
	return virtualList
}

// LookupVirtual finds a catalog relation. An unqualified name is looked
// up in pg_catalog, which is on every search path as in Postgres.
func LookupVirtual(schema, name string) (*VirtualTable, bool) {
	virtualTables()
	schema, name = strings.ToLower(schema), strings.ToLower(name)
	if schema == "" {
		schema = "pg_catalog"
	}
	t, ok := virtualByName[schema+"."+name]
	return t, ok
}

// IsSystemSchema reports whether name is a schema of virtual relations.
func IsSystemSchema(name string) bool {
	n := strings.ToLower(name)
	return n == "pg_catalog" || n == "information_schema"
}

// cols builds a column list from "name type" pairs in Postgres's type
// names.
func cols(specs ...string) []Column {
	out := make([]Column, len(specs))
	for i, s := range specs {
		name, typ, _ := strings.Cut(s, " ")
		t, ok := pgColumnTypes[typ]
		if !ok {
			panic(fmt.Sprintf("catalog: column %s: unknown type %q", name, typ))
		}
		out[i] = Column{Name: name, Type: t}
	}
	return out
}

// pgColumnTypes maps the type names of catalog columns to basin types.
// Types basin lacks are represented by the closest one it has: name and
// "char" by text, int2 by integer, float4 by double, aclitem[] by
// text[] (always NULL), timestamptz by timestamp.
var pgColumnTypes = map[string]Type{
	"oid": Oid, "name": Varchar, "char": Varchar, "text": Varchar, "bool": Boolean,
	"int2": Int, "int4": Int, "int8": BigInt, "float4": Double, "float8": Double,
	"xid": Oid, "regproc": RegProc, "regclass": RegClass, "regtype": RegType,
	"pg_node_tree": Varchar, "timestamptz": Timestamp, "inet": Varchar, "interval": Varchar,
	"bytea": Varchar, "pg_lsn": Varchar,
	"int2vector": Int2Vector, "oidvector": OidVector,
	"aclitem[]": ArrayOf(Varchar), "text[]": ArrayOf(Varchar), "oid[]": ArrayOf(Oid),
	"int2[]": ArrayOf(Int), "char[]": ArrayOf(Varchar), "anyarray": ArrayOf(Varchar),
	"float4[]": ArrayOf(Double), "name[]": ArrayOf(Varchar), "regtype[]": ArrayOf(RegType),
	// information_schema's domains.
	"sql_identifier": Varchar, "character_data": Varchar, "yes_or_no": Varchar,
	"cardinal_number": Int, "time_stamp": Timestamp,
}

// SessionInfo is what the virtual relations show of the session that
// reads them.
type SessionInfo struct {
	User            string
	Database        string
	PID             int32
	ApplicationName string
	ClientAddr      string
	Query           string
	Started         any // time.Time or nil
	// Settings are the session's settings as SHOW shows them, for
	// pg_settings.
	Settings []Setting
	// ViewQuery returns the SELECT a view is defined by, for
	// pg_get_viewdef and information_schema.views.
	ViewQuery func(*Relation) string
	// Activity returns the node's sessions for pg_stat_activity; nil
	// shows only this one.
	Activity func() []Activity
	// Cursors returns the session's open cursors for pg_cursors; nil
	// shows none.
	Cursors func() []Cursor
}

// Cursor is one row of pg_cursors: an open cursor of the session.
type Cursor struct {
	Name, Statement              string
	Holdable, Binary, Scrollable bool
	Created                      time.Time
}

// Activity is one session's row of pg_stat_activity. The times are
// time.Time or nil.
type Activity struct {
	PID                                         int32
	User, Database, ApplicationName, ClientAddr string
	ClientPort                                  any // int64 or nil
	BackendStart                                time.Time
	XactStart, QueryStart, StateChange          any
	State, Query                                string
}

// Setting is one row of pg_settings.
type Setting struct {
	Name, Value, Description string
}

// PGSnapshot is the virtual catalog as one statement sees it: built once
// per statement from the Catalog, so that every relation a query reads
// agrees with the others.
type PGSnapshot struct {
	sess SessionInfo
	rels []*Relation // basin's relations, by name

	mu    sync.Mutex
	cache map[*VirtualTable][]Row

	classOnce sync.Once
	classList []relClass
	classMap  map[int64]int // oid → index in classList
}

// PGSnapshot returns the virtual catalog over c's relations as they are
// now.
func (c *Catalog) PGSnapshot(sess SessionInfo) *PGSnapshot {
	rels := c.List(KindStream, KindTable, KindView)
	return &PGSnapshot{sess: sess, rels: rels, cache: map[*VirtualTable][]Row{}}
}

// Session returns the session the snapshot was made for.
func (s *PGSnapshot) Session() SessionInfo { return s.sess }

// Relations returns basin's relations, sorted by name.
func (s *PGSnapshot) Relations() []*Relation { return s.rels }

// Rows returns the rows of t. The rows are shared: callers must not
// change them.
func (s *PGSnapshot) Rows(t *VirtualTable) []Row {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rows, ok := s.cache[t]; ok {
		return rows
	}
	var rows []Row
	if t.rows != nil {
		rows = t.rows(s)
	}
	s.cache[t] = rows
	return rows
}

// relClass is a pg_class entry.
type relClass struct {
	oid     int64
	name    string
	nsp     int64
	kind    string // relkind
	cols    []Column
	rel     *Relation     // a basin relation or its index
	vt      *VirtualTable // a catalog relation
	index   bool          // the primary key index of rel
	keyCols []int         // index columns (0-based)
}

// classes lists every pg_class entry: basin's relations and their
// indexes, then the catalog relations.
func (s *PGSnapshot) classes() []relClass {
	s.classOnce.Do(func() {
		s.classList = s.buildClasses()
		s.classMap = make(map[int64]int, len(s.classList))
		for i, c := range s.classList {
			s.classMap[c.oid] = i
		}
	})
	return s.classList
}

func (s *PGSnapshot) buildClasses() []relClass {
	var out []relClass
	for _, r := range s.rels {
		kind := "r"
		if r.Kind == KindView {
			kind = "m"
		}
		out = append(out, relClass{oid: RelationOID(r), name: r.Name, nsp: NamespacePublic, kind: kind, cols: r.Schema.Columns, rel: r})
		if HasPrimaryKey(r) {
			keys := r.Schema.KeyIndexes()
			kc := make([]Column, len(keys))
			for i, k := range keys {
				kc[i] = r.Schema.Columns[k]
			}
			out = append(out, relClass{oid: IndexOID(r), name: r.Name + "_pkey", nsp: NamespacePublic, kind: "i",
				cols: kc, rel: r, index: true, keyCols: keys})
		}
	}
	for _, t := range virtualTables() {
		kind := "r"
		if t.View {
			kind = "v"
		}
		nsp := int64(NamespacePgCatalog)
		if t.Schema == "information_schema" {
			nsp = NamespaceInformationSchema
		}
		var visible []Column
		for _, c := range t.Columns {
			if !c.Hidden {
				visible = append(visible, c)
			}
		}
		out = append(out, relClass{oid: t.OID, name: t.Name, nsp: nsp, kind: kind, cols: visible, vt: t})
	}
	return out
}

func (s *PGSnapshot) classByOID(oid int64) (relClass, bool) {
	s.classes()
	i, ok := s.classMap[oid]
	if !ok {
		return relClass{}, false
	}
	return s.classList[i], true
}

// NamespaceName returns a namespace's name.
func NamespaceName(oid int64) (string, bool) {
	switch oid {
	case NamespacePgCatalog:
		return "pg_catalog", true
	case NamespacePublic:
		return "public", true
	case NamespaceInformationSchema:
		return "information_schema", true
	}
	return "", false
}

// NamespaceOID returns a namespace's oid.
func NamespaceOID(name string) (int64, bool) {
	switch name {
	case "pg_catalog":
		return NamespacePgCatalog, true
	case "public":
		return NamespacePublic, true
	case "information_schema":
		return NamespaceInformationSchema, true
	}
	return 0, false
}

// RelationName returns the name regclass output gives the relation with
// oid: its name, qualified by its schema when that is not on the search
// path (information_schema).
func (s *PGSnapshot) RelationName(oid int64) (string, bool) {
	c, ok := s.classByOID(oid)
	if !ok {
		return "", false
	}
	name := quoteIdent(c.name)
	if c.nsp == NamespaceInformationSchema {
		name = "information_schema." + name
	}
	return name, true
}

// RelationOIDByName resolves a relation name as regclass input does:
// "orders", "public.orders", "pg_catalog.pg_class", "\"Orders\"".
// Unquoted parts fold to lower case.
func (s *PGSnapshot) RelationOIDByName(text string) (int64, bool) {
	parts := splitQualified(text)
	var schema, name string
	switch len(parts) {
	case 1:
		name = parts[0]
	case 2:
		schema, name = parts[0], parts[1]
	case 3:
		schema, name = parts[1], parts[2] // database.schema.name
	default:
		return 0, false
	}
	for _, c := range s.classes() {
		if c.name != name {
			continue
		}
		cs, _ := NamespaceName(c.nsp)
		if schema == "" && cs == "information_schema" {
			continue
		}
		if schema != "" && cs != schema {
			continue
		}
		return c.oid, true
	}
	return 0, false
}

// RelationByOID returns the basin relation with oid, if it is one.
func (s *PGSnapshot) RelationByOID(oid int64) (*Relation, bool) {
	c, ok := s.classByOID(oid)
	if !ok || c.rel == nil || c.index {
		return nil, false
	}
	return c.rel, true
}

// SplitQualifiedName splits a possibly qualified, possibly quoted name
// as parse_ident does: "My Schema".t is [My Schema t].
func SplitQualifiedName(text string) []string { return splitQualified(text) }

// splitQualified splits a possibly qualified, possibly quoted name.
func splitQualified(text string) []string {
	var parts []string
	var b strings.Builder
	quoted, inQuotes := false, false
	for i := 0; i < len(text); i++ {
		ch := text[i]
		switch {
		case inQuotes && ch == '"' && i+1 < len(text) && text[i+1] == '"':
			b.WriteByte('"')
			i++
		case ch == '"':
			inQuotes = !inQuotes
			quoted = true
		case !inQuotes && ch == '.':
			parts = append(parts, finishPart(b.String(), quoted))
			b.Reset()
			quoted = false
		default:
			b.WriteByte(ch)
		}
	}
	return append(parts, finishPart(b.String(), quoted))
}

func finishPart(s string, quoted bool) string {
	if quoted {
		return s
	}
	return strings.ToLower(strings.TrimSpace(s))
}

// quoteIdent quotes a name as Postgres's quote_ident does.
func quoteIdent(name string) string {
	plain := name != "" && (name[0] >= 'a' && name[0] <= 'z' || name[0] == '_')
	for i := 0; plain && i < len(name); i++ {
		c := name[i]
		plain = c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '$'
	}
	if plain && !reservedKeywords[name] {
		return name
	}
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

// QuoteIdent is quote_ident.
func QuoteIdent(name string) string { return quoteIdent(name) }

// reservedKeywords are Postgres's reserved words, which quote_ident
// quotes.
var reservedKeywords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`all analyse analyze and any array as asc asymmetric authorization binary both
		case cast check collate collation column concurrently constraint create cross current_catalog
		current_date current_role current_schema current_time current_timestamp current_user default
		deferrable desc distinct do else end except false fetch for foreign freeze from full grant group
		having ilike in initially inner intersect into is isnull join lateral leading left like limit
		localtime localtimestamp natural not notnull null offset on only or order outer overlaps placing
		primary references returning right select session_user similar some symmetric system_user table
		tablesample then to trailing true union unique user using variadic verbose when where window with`) {
		m[w] = true
	}
	return m
}()

// ReservedKeywords returns Postgres's reserved words, sorted.
func ReservedKeywords() []string {
	out := make([]string, 0, len(reservedKeywords))
	for w := range reservedKeywords {
		out = append(out, w)
	}
	sort.Strings(out)
	return out
}

// RelationNamespace returns the namespace of the relation with oid.
func (s *PGSnapshot) RelationNamespace(oid int64) (int64, bool) {
	c, ok := s.classByOID(oid)
	return c.nsp, ok
}

// IndexRelation returns the relation whose primary key index has oid.
func (s *PGSnapshot) IndexRelation(oid int64) (*Relation, bool) {
	c, ok := s.classByOID(oid)
	if !ok || !c.index {
		return nil, false
	}
	return c.rel, true
}

// ConstraintRelation returns the relation whose primary key constraint
// has oid.
func (s *PGSnapshot) ConstraintRelation(oid int64) (*Relation, bool) {
	for _, r := range s.rels {
		if ConstraintOID(r) == oid && HasPrimaryKey(r) {
			return r, true
		}
	}
	return nil, false
}

// Description is obj_description: the comment on an object, where
// catalogName names the catalog the oid is from ("pg_class"; empty for
// any).
func (s *PGSnapshot) Description(oid int64, catalogName string) (string, bool) {
	if catalogName != "" && !strings.EqualFold(catalogName, "pg_class") {
		return "", false
	}
	c, ok := s.classByOID(oid)
	if !ok || c.rel == nil || c.index {
		return "", false
	}
	return relDescription(c.rel), true
}
