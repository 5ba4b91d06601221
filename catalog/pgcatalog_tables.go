package catalog

import (
	"fmt"
	"strings"
)

// rowAdder appends one row given column-name/value pairs; columns not
// named are false, 0 or NULL by type.
type rowAdder func(kv ...any)

// table defines a virtual relation whose rows gen makes.
func table(schema, name string, oid int64, view bool, columns []Column, gen func(s *PGSnapshot, add rowAdder)) *VirtualTable {
	if !view {
		// The system column clients join pg_description on
		// (classoid = tableoid); hidden from SELECT *.
		columns = append(columns, Column{Name: "tableoid", Type: Oid, Hidden: true})
	}
	t := &VirtualTable{Schema: schema, Name: name, OID: oid, View: view, Columns: columns}
	idx := make(map[string]int, len(columns))
	for i, c := range columns {
		idx[c.Name] = i
	}
	t.rows = func(s *PGSnapshot) []Row {
		if gen == nil {
			return nil
		}
		var rows []Row
		gen(s, func(kv ...any) {
			row := make(Row, len(columns))
			for i, c := range columns {
				switch c.Type {
				case Boolean:
					row[i] = false
				case Int, BigInt, Oid, RegProc, RegClass, RegType, RegNamespace:
					row[i] = int64(0)
				case Double:
					row[i] = float64(0)
				}
			}
			for k := 0; k+1 < len(kv); k += 2 {
				name := kv[k].(string)
				i, ok := idx[name]
				if !ok {
					panic(fmt.Sprintf("catalog: %s.%s has no column %s", schema, name, kv[k]))
				}
				row[i] = normalize(kv[k+1])
			}
			if i, ok := idx["tableoid"]; ok {
				row[i] = t.OID
			}
			rows = append(rows, row)
		})
		return rows
	}
	return t
}

// normalize makes Go values the engine's: ints become int64.
func normalize(v any) any {
	switch x := v.(type) {
	case int:
		return int64(x)
	case int32:
		return int64(x)
	case uint32:
		return int64(x)
	case []int64:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = e
		}
		return out
	case []string:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = e
		}
		return out
	}
	return v
}

func pgc(name string, oid int64, columns []Column, gen func(s *PGSnapshot, add rowAdder)) *VirtualTable {
	return table("pg_catalog", name, oid, false, columns, gen)
}

func pgcView(name string, columns []Column, gen func(s *PGSnapshot, add rowAdder)) *VirtualTable {
	return table("pg_catalog", name, 0, true, columns, gen)
}

// relDescription is the comment basin gives a relation: what it is and
// where its data lives.
func relDescription(r *Relation) string {
	parts := fmt.Sprintf("%d partitions", r.Partitions)
	if r.Partitions == 1 {
		parts = "1 partition"
	}
	switch r.Kind {
	case KindStream:
		return fmt.Sprintf("stream over Kafka topic %s (%s, %s)", r.Topic, parts, r.ValueFormat)
	case KindTable:
		return fmt.Sprintf("table over Kafka topic %s (%s, %s)", r.Topic, parts, r.ValueFormat)
	}
	return fmt.Sprintf("view over %s (%s)", strings.Join(r.Sources, ", "), parts)
}

func boolStr(b bool) string {
	if b {
		return "YES"
	}
	return "NO"
}

func pgCatalogTables() []*VirtualTable {
	return []*VirtualTable{
		pgc("pg_namespace", 2615, cols("oid oid", "nspname name", "nspowner oid", "nspacl aclitem[]"),
			func(s *PGSnapshot, add rowAdder) {
				add("oid", NamespacePgCatalog, "nspname", "pg_catalog", "nspowner", RoleOID)
				add("oid", NamespacePublic, "nspname", "public", "nspowner", RoleOID)
				add("oid", NamespaceInformationSchema, "nspname", "information_schema", "nspowner", RoleOID)
			}),
		pgc("pg_class", 1259, cols("oid oid", "relname name", "relnamespace oid", "reltype oid", "reloftype oid",
			"relowner oid", "relam oid", "relfilenode oid", "reltablespace oid", "relpages int4", "reltuples float4",
			"relallvisible int4", "reltoastrelid oid", "relhasindex bool", "relisshared bool", "relpersistence char",
			"relkind char", "relnatts int2", "relchecks int2", "relhasrules bool", "relhastriggers bool",
			"relhassubclass bool", "relrowsecurity bool", "relforcerowsecurity bool", "relispopulated bool",
			"relreplident char", "relispartition bool", "relrewrite oid", "relfrozenxid xid", "relminmxid xid",
			"relacl aclitem[]", "reloptions text[]", "relpartbound pg_node_tree"),
			func(s *PGSnapshot, add rowAdder) {
				for _, c := range s.classes() {
					am := int64(AmHeap)
					if c.kind == "i" {
						am = AmBtree
					} else if c.kind == "v" {
						am = 0
					}
					hasIndex := c.rel != nil && !c.index && HasPrimaryKey(c.rel)
					add("oid", c.oid, "relname", c.name, "relnamespace", c.nsp, "relowner", RoleOID, "relam", am,
						"relfilenode", c.oid, "reltuples", float64(-1), "relhasindex", hasIndex,
						"relpersistence", "p", "relkind", c.kind, "relnatts", len(c.cols),
						"relispopulated", true, "relreplident", "d")
				}
			}),
		pgc("pg_attribute", 1249, cols("attrelid oid", "attname name", "atttypid oid", "attstattarget int4",
			"attlen int2", "attnum int2", "attndims int4", "attcacheoff int4", "atttypmod int4", "attbyval bool",
			"attalign char", "attstorage char", "attcompression char", "attnotnull bool", "atthasdef bool",
			"atthasmissing bool", "attidentity char", "attgenerated char", "attisdropped bool", "attislocal bool",
			"attinhcount int4", "attcollation oid", "attacl aclitem[]", "attoptions text[]", "attfdwoptions text[]",
			"attmissingval anyarray"),
			func(s *PGSnapshot, add rowAdder) {
				for _, c := range s.classes() {
					for i, col := range c.cols {
						if col.Hidden {
							continue
						}
						pt, _ := TypeByOID(int64(col.Type.OID()))
						notNull := c.index || (c.rel != nil && HasPrimaryKey(c.rel) && col.Key)
						collation := int64(0)
						if col.Type == Varchar {
							collation = 100 // default
						}
						ndims := 0
						if col.Type.IsArray() {
							ndims = 1
						}
						add("attrelid", c.oid, "attname", col.Name, "atttypid", int64(col.Type.OID()), "attstattarget", -1,
							"attlen", pt.Len, "attnum", i+1, "attndims", ndims, "attcacheoff", -1, "atttypmod", col.Typmod(),
							"attbyval", pt.ByVal, "attalign", pt.Align, "attstorage", pt.Storage, "attcompression", "",
							"attnotnull", notNull, "attidentity", "", "attgenerated", "", "attislocal", true,
							"attcollation", collation)
					}
				}
			}),
		pgc("pg_type", 1247, cols("oid oid", "typname name", "typnamespace oid", "typowner oid", "typlen int2",
			"typbyval bool", "typtype char", "typcategory char", "typispreferred bool", "typisdefined bool",
			"typdelim char", "typrelid oid", "typsubscript regproc", "typelem oid", "typarray oid", "typinput regproc",
			"typoutput regproc", "typreceive regproc", "typsend regproc", "typmodin regproc", "typmodout regproc",
			"typanalyze regproc", "typalign char", "typstorage char", "typnotnull bool", "typbasetype oid",
			"typtypmod int4", "typndims int4", "typcollation oid", "typdefaultbin pg_node_tree", "typdefault text",
			"typacl aclitem[]"),
			func(s *PGSnapshot, add rowAdder) {
				for _, t := range PGTypes() {
					collation := int64(0)
					if t.Category == "S" && t.Name != "name" {
						collation = 100
					}
					add("oid", t.OID, "typname", t.Name, "typnamespace", NamespacePgCatalog, "typowner", RoleOID,
						"typlen", t.Len, "typbyval", t.ByVal, "typtype", t.Kind, "typcategory", t.Category,
						"typispreferred", t.Preferred, "typisdefined", true, "typdelim", ",", "typelem", t.Elem,
						"typarray", t.Array, "typinput", procByInput(t.Input), "typoutput", int64(0),
						"typalign", t.Align, "typstorage", t.Storage, "typtypmod", -1, "typcollation", collation)
				}
			}),
		pgc("pg_database", 1262, cols("oid oid", "datname name", "datdba oid", "encoding int4", "datlocprovider char",
			"datistemplate bool", "datallowconn bool", "datconnlimit int4", "datfrozenxid xid", "datminmxid xid",
			"dattablespace oid", "datcollate text", "datctype text", "daticulocale text", "datcollversion text",
			"datacl aclitem[]"),
			func(s *PGSnapshot, add rowAdder) {
				add("oid", DatabaseOID, "datname", s.sess.Database, "datdba", RoleOID, "encoding", 6, "datlocprovider", "c",
					"datallowconn", true, "datconnlimit", -1, "dattablespace", 1663, "datcollate", "C.UTF-8", "datctype", "C.UTF-8")
			}),
		pgcView("pg_roles", cols("rolname name", "rolsuper bool", "rolinherit bool", "rolcreaterole bool",
			"rolcreatedb bool", "rolcanlogin bool", "rolreplication bool", "rolconnlimit int4", "rolpassword text",
			"rolvaliduntil timestamptz", "rolbypassrls bool", "rolconfig text[]", "oid oid"),
			func(s *PGSnapshot, add rowAdder) {
				add("rolname", s.sess.User, "rolsuper", true, "rolinherit", true, "rolcreaterole", true, "rolcreatedb", true,
					"rolcanlogin", true, "rolconnlimit", -1, "rolpassword", "********", "rolbypassrls", true, "oid", RoleOID)
			}),
		pgcView("pg_user", cols("usename name", "usesysid oid", "usecreatedb bool", "usesuper bool", "userepl bool",
			"usebypassrls bool", "passwd text", "valuntil timestamptz", "useconfig text[]"),
			func(s *PGSnapshot, add rowAdder) {
				add("usename", s.sess.User, "usesysid", RoleOID, "usecreatedb", true, "usesuper", true, "usebypassrls", true,
					"passwd", "********")
			}),
		pgc("pg_auth_members", 1261, cols("oid oid", "roleid oid", "member oid", "grantor oid", "admin_option bool"), nil),
		pgc("pg_index", 2610, cols("indexrelid oid", "indrelid oid", "indnatts int2", "indnkeyatts int2",
			"indisunique bool", "indnullsnotdistinct bool", "indisprimary bool", "indisexclusion bool",
			"indimmediate bool", "indisclustered bool", "indisvalid bool", "indcheckxmin bool", "indisready bool",
			"indislive bool", "indisreplident bool", "indkey int2vector", "indcollation oidvector",
			"indclass oidvector", "indoption int2vector", "indexprs pg_node_tree", "indpred pg_node_tree"),
			func(s *PGSnapshot, add rowAdder) {
				for _, c := range s.classes() {
					if !c.index {
						continue
					}
					var key, opt, coll, class []any
					for _, k := range c.keyCols {
						key = append(key, int64(k+1))
						opt = append(opt, int64(0))
						if c.rel.Schema.Columns[k].Type == Varchar {
							coll = append(coll, int64(100))
						} else {
							coll = append(coll, int64(0))
						}
						class = append(class, int64(0))
					}
					add("indexrelid", c.oid, "indrelid", RelationOID(c.rel), "indnatts", len(key), "indnkeyatts", len(key),
						"indisunique", true, "indisprimary", true, "indimmediate", true, "indisvalid", true,
						"indisready", true, "indislive", true, "indkey", key, "indcollation", coll, "indclass", class,
						"indoption", opt)
				}
			}),
		pgc("pg_attrdef", 2604, cols("oid oid", "adrelid oid", "adnum int2", "adbin pg_node_tree"), nil),
		pgc("pg_description", 2609, cols("objoid oid", "classoid oid", "objsubid int4", "description text"),
			func(s *PGSnapshot, add rowAdder) {
				for _, r := range s.rels {
					add("objoid", RelationOID(r), "classoid", 1259, "objsubid", 0, "description", relDescription(r))
				}
			}),
		pgc("pg_shdescription", 2396, cols("objoid oid", "classoid oid", "description text"),
			func(s *PGSnapshot, add rowAdder) {
				add("objoid", DatabaseOID, "classoid", 1262, "description", "basin streaming materialized views")
			}),
		pgcView("pg_settings", cols("name text", "setting text", "unit text", "category text", "short_desc text",
			"extra_desc text", "context text", "vartype text", "source text", "min_val text", "max_val text",
			"enumvals text[]", "boot_val text", "reset_val text", "sourcefile text", "sourceline int4",
			"pending_restart bool"),
			func(s *PGSnapshot, add rowAdder) {
				for _, st := range s.sess.Settings {
					add("name", st.Name, "setting", st.Value, "category", "basin", "short_desc", st.Description,
						"context", "user", "vartype", "string", "source", "default", "boot_val", st.Value, "reset_val", st.Value)
				}
			}),
		pgc("pg_am", 2601, cols("oid oid", "amname name", "amhandler regproc", "amtype char"),
			func(s *PGSnapshot, add rowAdder) {
				add("oid", AmHeap, "amname", "heap", "amtype", "t")
				add("oid", AmBtree, "amname", "btree", "amtype", "i")
			}),
		pgc("pg_collation", 3456, cols("oid oid", "collname name", "collnamespace oid", "collowner oid",
			"collprovider char", "collisdeterministic bool", "collencoding int4", "collcollate text", "collctype text",
			"colliculocale text", "collversion text"),
			func(s *PGSnapshot, add rowAdder) {
				add("oid", 100, "collname", "default", "collnamespace", NamespacePgCatalog, "collowner", RoleOID,
					"collprovider", "d", "collisdeterministic", true, "collencoding", -1)
				add("oid", 950, "collname", "C", "collnamespace", NamespacePgCatalog, "collowner", RoleOID,
					"collprovider", "c", "collisdeterministic", true, "collencoding", -1, "collcollate", "C", "collctype", "C")
			}),
		pgc("pg_constraint", 2606, cols("oid oid", "conname name", "connamespace oid", "contype char",
			"condeferrable bool", "condeferred bool", "convalidated bool", "conrelid oid", "contypid oid",
			"conindid oid", "conparentid oid", "confrelid oid", "confupdtype char", "confdeltype char",
			"confmatchtype char", "conislocal bool", "coninhcount int4", "connoinherit bool", "conkey int2[]",
			"confkey int2[]", "conpfeqop oid[]", "conppeqop oid[]", "conffeqop oid[]", "confdelsetcols int2[]",
			"conexclop oid[]", "conbin pg_node_tree"),
			func(s *PGSnapshot, add rowAdder) {
				for _, r := range s.rels {
					if !HasPrimaryKey(r) {
						continue
					}
					var key []any
					for _, k := range r.Schema.KeyIndexes() {
						key = append(key, int64(k+1))
					}
					add("oid", ConstraintOID(r), "conname", r.Name+"_pkey", "connamespace", NamespacePublic, "contype", "p",
						"convalidated", true, "conrelid", RelationOID(r), "conindid", IndexOID(r), "confupdtype", " ",
						"confdeltype", " ", "confmatchtype", " ", "conislocal", true, "connoinherit", true, "conkey", key)
				}
			}),
		pgc("pg_proc", 1255, cols("oid oid", "proname name", "pronamespace oid", "proowner oid", "prolang oid",
			"procost float4", "prorows float4", "provariadic oid", "prosupport regproc", "prokind char",
			"prosecdef bool", "proleakproof bool", "proisstrict bool", "proretset bool", "provolatile char",
			"proparallel char", "pronargs int2", "pronargdefaults int2", "prorettype oid", "proargtypes oidvector",
			"proallargtypes oid[]", "proargmodes char[]", "proargnames text[]", "proargdefaults pg_node_tree",
			"protrftypes oid[]", "prosrc text", "probin text", "prosqlbody pg_node_tree", "proconfig text[]",
			"proacl aclitem[]"),
			func(s *PGSnapshot, add rowAdder) {
				for _, p := range Procs() {
					args := make([]any, len(p.Args))
					for i, a := range p.Args {
						args[i] = a
					}
					variadic := int64(0)
					if p.Variadic && len(p.Args) > 0 {
						variadic = p.Args[len(p.Args)-1]
					}
					rows := float64(0)
					if p.RetSet {
						rows = 1000
					}
					add("oid", p.OID, "proname", p.Name, "pronamespace", NamespacePgCatalog, "proowner", RoleOID,
						"prolang", 12, "procost", float64(1), "prorows", rows, "provariadic", variadic, "prokind", p.Kind,
						"proisstrict", true, "proretset", p.RetSet, "provolatile", "s", "proparallel", "s",
						"pronargs", len(p.Args), "prorettype", p.RetType, "proargtypes", args, "prosrc", p.Name)
				}
			}),
		pgcView("pg_stat_activity", cols("datid oid", "datname name", "pid int4", "leader_pid int4", "usesysid oid",
			"usename name", "application_name text", "client_addr inet", "client_hostname text", "client_port int4",
			"backend_start timestamptz", "xact_start timestamptz", "query_start timestamptz",
			"state_change timestamptz", "wait_event_type text", "wait_event text", "state text", "backend_xid xid",
			"backend_xmin xid", "query_id int8", "query text", "backend_type text"),
			func(s *PGSnapshot, add rowAdder) {
				var acts []Activity
				if s.sess.Activity != nil {
					acts = s.sess.Activity()
				} else {
					acts = []Activity{{PID: s.sess.PID, User: s.sess.User, Database: s.sess.Database,
						ApplicationName: s.sess.ApplicationName, ClientAddr: s.sess.ClientAddr, State: "active",
						Query: s.sess.Query, QueryStart: s.sess.Started, StateChange: s.sess.Started}}
				}
				for _, a := range acts {
					var started any
					if !a.BackendStart.IsZero() {
						started = a.BackendStart
					}
					add("datid", DatabaseOID, "datname", a.Database, "pid", a.PID, "leader_pid", nil,
						"usesysid", RoleOID, "usename", a.User, "application_name", a.ApplicationName,
						"client_addr", nullIfEmpty(a.ClientAddr), "client_port", a.ClientPort,
						"backend_start", started, "xact_start", a.XactStart, "query_start", a.QueryStart,
						"state_change", a.StateChange, "state", a.State, "query", a.Query, "query_id", nil,
						"backend_xid", nil, "backend_xmin", nil, "backend_type", "client backend")
				}
			}),
		pgc("pg_extension", 3079, cols("oid oid", "extname name", "extowner oid", "extnamespace oid",
			"extrelocatable bool", "extversion text", "extconfig oid[]", "extcondition text[]"), nil),
		pgc("pg_inherits", 2611, cols("inhrelid oid", "inhparent oid", "inhseqno int4", "inhdetachpending bool"), nil),
		pgc("pg_tablespace", 1213, cols("oid oid", "spcname name", "spcowner oid", "spcacl aclitem[]", "spcoptions text[]"),
			func(s *PGSnapshot, add rowAdder) {
				add("oid", 1663, "spcname", "pg_default", "spcowner", RoleOID)
				add("oid", 1664, "spcname", "pg_global", "spcowner", RoleOID)
			}),
		pgc("pg_trigger", 2620, cols("oid oid", "tgrelid oid", "tgparentid oid", "tgname name", "tgfoid oid",
			"tgtype int2", "tgenabled char", "tgisinternal bool", "tgconstrrelid oid", "tgconstrindid oid",
			"tgconstraint oid", "tgdeferrable bool", "tginitdeferred bool", "tgnargs int2", "tgattr int2vector",
			"tgargs bytea", "tgqual pg_node_tree", "tgoldtable name", "tgnewtable name"), nil),
		pgc("pg_event_trigger", 3466, cols("oid oid", "evtname name", "evtevent name", "evtowner oid", "evtfoid oid",
			"evtenabled char", "evttags text[]"), nil),
		pgc("pg_policy", 3256, cols("oid oid", "polname name", "polrelid oid", "polcmd char", "polpermissive bool",
			"polroles oid[]", "polqual pg_node_tree", "polwithcheck pg_node_tree"), nil),
		pgc("pg_statistic_ext", 3381, cols("oid oid", "stxrelid oid", "stxname name", "stxnamespace oid",
			"stxowner oid", "stxstattarget int4", "stxkeys int2vector", "stxkind char[]", "stxexprs pg_node_tree"), nil),
		pgc("pg_partitioned_table", 3350, cols("partrelid oid", "partstrat char", "partnatts int2", "partdefid oid",
			"partattrs int2vector", "partclass oidvector", "partcollation oidvector", "partexprs pg_node_tree"), nil),
		pgc("pg_rewrite", 2618, cols("oid oid", "rulename name", "ev_class oid", "ev_type char", "ev_enabled char",
			"is_instead bool", "ev_qual pg_node_tree", "ev_action pg_node_tree"), nil),
		pgc("pg_foreign_table", 3118, cols("ftrelid oid", "ftserver oid", "ftoptions text[]"), nil),
		pgc("pg_foreign_server", 1417, cols("oid oid", "srvname name", "srvowner oid", "srvfdw oid", "srvtype text",
			"srvversion text", "srvacl aclitem[]", "srvoptions text[]"), nil),
		pgc("pg_foreign_data_wrapper", 2328, cols("oid oid", "fdwname name", "fdwowner oid", "fdwhandler oid",
			"fdwvalidator oid", "fdwacl aclitem[]", "fdwoptions text[]"), nil),
		pgc("pg_enum", 3501, cols("oid oid", "enumtypid oid", "enumsortorder float4", "enumlabel name"), nil),
		pgc("pg_sequence", 2224, cols("seqrelid oid", "seqtypid oid", "seqstart int8", "seqincrement int8",
			"seqmax int8", "seqmin int8", "seqcache int8", "seqcycle bool"), nil),
		pgc("pg_publication", 6104, cols("oid oid", "pubname name", "pubowner oid", "puballtables bool",
			"pubinsert bool", "pubupdate bool", "pubdelete bool", "pubtruncate bool", "pubviaroot bool"), nil),
		pgc("pg_publication_rel", 6106, cols("oid oid", "prpubid oid", "prrelid oid", "prqual pg_node_tree",
			"prattrs int2vector"), nil),
		pgc("pg_publication_namespace", 6237, cols("oid oid", "pnpubid oid", "pnnspid oid"), nil),
		pgc("pg_aggregate", 2600, cols("aggfnoid regproc", "aggkind char", "aggnumdirectargs int2", "aggtransfn regproc",
			"aggfinalfn regproc", "aggcombinefn regproc", "aggserialfn regproc", "aggdeserialfn regproc",
			"aggmtransfn regproc", "aggminvtransfn regproc", "aggmfinalfn regproc", "aggfinalextra bool",
			"aggmfinalextra bool", "aggfinalmodify char", "aggmfinalmodify char", "aggsortop oid", "aggtranstype oid",
			"aggtransspace int4", "aggmtranstype oid", "aggmtransspace int4", "agginitval text", "aggminitval text"),
			func(s *PGSnapshot, add rowAdder) {
				for _, p := range Procs() {
					if p.Kind == "a" {
						add("aggfnoid", p.OID, "aggkind", "n", "aggfinalmodify", "r", "aggmfinalmodify", "r",
							"aggtranstype", p.RetType)
					}
				}
			}),
		pgc("pg_cast", 2605, cols("oid oid", "castsource oid", "casttarget oid", "castfunc oid", "castcontext char",
			"castmethod char"), nil),
		pgc("pg_range", 3541, cols("rngtypid oid", "rngsubtype oid", "rngmultitypid oid", "rngcollation oid",
			"rngsubopc oid", "rngcanonical regproc", "rngsubdiff regproc"), nil),
		pgc("pg_language", 2612, cols("oid oid", "lanname name", "lanowner oid", "lanispl bool", "lanpltrusted bool",
			"lanplcallfoid oid", "laninline oid", "lanvalidator oid", "lanacl aclitem[]"),
			func(s *PGSnapshot, add rowAdder) {
				add("oid", 12, "lanname", "internal", "lanowner", RoleOID)
				add("oid", 14, "lanname", "sql", "lanowner", RoleOID, "lanpltrusted", true)
			}),
		pgc("pg_opfamily", 2753, cols("oid oid", "opfmethod oid", "opfname name", "opfnamespace oid", "opfowner oid"), nil),
		pgc("pg_conversion", 2607, cols("oid oid", "conname name", "connamespace oid", "conowner oid",
			"conforencoding int4", "contoencoding int4", "conproc regproc", "condefault bool"), nil),
		pgc("pg_ts_config", 3602, cols("oid oid", "cfgname name", "cfgnamespace oid", "cfgowner oid", "cfgparser oid"), nil),
		pgc("pg_ts_dict", 3600, cols("oid oid", "dictname name", "dictnamespace oid", "dictowner oid",
			"dicttemplate oid", "dictinitoption text"), nil),
		pgc("pg_ts_parser", 3601, cols("oid oid", "prsname name", "prsnamespace oid", "prsstart regproc",
			"prstoken regproc", "prsend regproc", "prsheadline regproc", "prslextype regproc"), nil),
		pgc("pg_ts_template", 3764, cols("oid oid", "tmplname name", "tmplnamespace oid", "tmplinit regproc",
			"tmpllexize regproc"), nil),
		pgc("pg_subscription", 6100, cols("oid oid", "subdbid oid", "subskiplsn pg_lsn", "subname name",
			"subowner oid", "subenabled bool", "subbinary bool", "substream char", "subtwophasestate char",
			"subdisableonerr bool", "subconninfo text", "subslotname name", "subsynccommit text",
			"subpublications text[]"), nil),
		pgc("pg_largeobject_metadata", 2995, cols("oid oid", "lomowner oid", "lomacl aclitem[]"), nil),
		pgc("pg_amop", 2602, cols("oid oid", "amopfamily oid", "amoplefttype oid", "amoprighttype oid",
			"amopstrategy int2", "amoppurpose char", "amopopr oid", "amopmethod oid", "amopsortfamily oid"), nil),
		pgc("pg_amproc", 2603, cols("oid oid", "amprocfamily oid", "amproclefttype oid", "amprocrighttype oid",
			"amprocnum int2", "amproc regproc"), nil),
		pgc("pg_db_role_setting", 2964, cols("setdatabase oid", "setrole oid", "setconfig text[]"), nil),
		pgc("pg_depend", 2608, cols("classid oid", "objid oid", "objsubid int4", "refclassid oid", "refobjid oid",
			"refobjsubid int4", "deptype char"), nil),
		pgc("pg_operator", 2617, cols("oid oid", "oprname name", "oprnamespace oid", "oprowner oid", "oprkind char",
			"oprcanmerge bool", "oprcanhash bool", "oprleft oid", "oprright oid", "oprresult oid", "oprcom oid",
			"oprnegate oid", "oprcode regproc", "oprrest regproc", "oprjoin regproc"), nil),
		pgc("pg_opclass", 2616, cols("oid oid", "opcmethod oid", "opcname name", "opcnamespace oid", "opcowner oid",
			"opcfamily oid", "opcintype oid", "opcdefault bool", "opckeytype oid"), nil),
		pgcView("pg_tables", cols("schemaname name", "tablename name", "tableowner name", "tablespace name",
			"hasindexes bool", "hasrules bool", "hastriggers bool", "rowsecurity bool"),
			func(s *PGSnapshot, add rowAdder) {
				for _, r := range s.rels {
					if r.Kind != KindView {
						add("schemaname", "public", "tablename", r.Name, "tableowner", s.sess.User, "hasindexes", HasPrimaryKey(r))
					}
				}
			}),
		pgcView("pg_views", cols("schemaname name", "viewname name", "viewowner name", "definition text"), nil),
		pgcView("pg_matviews", cols("schemaname name", "matviewname name", "matviewowner name", "tablespace name",
			"hasindexes bool", "ispopulated bool", "definition text"),
			func(s *PGSnapshot, add rowAdder) {
				for _, r := range s.rels {
					if r.Kind == KindView {
						add("schemaname", "public", "matviewname", r.Name, "matviewowner", s.sess.User,
							"hasindexes", HasPrimaryKey(r), "ispopulated", true, "definition", s.ViewDefinition(r))
					}
				}
			}),
		pgcView("pg_indexes", cols("schemaname name", "tablename name", "indexname name", "tablespace name", "indexdef text"),
			func(s *PGSnapshot, add rowAdder) {
				for _, r := range s.rels {
					if HasPrimaryKey(r) {
						add("schemaname", "public", "tablename", r.Name, "indexname", r.Name+"_pkey", "indexdef", IndexDef(r))
					}
				}
			}),
		pgcView("pg_stat_user_tables", cols("relid oid", "schemaname name", "relname name", "seq_scan int8",
			"seq_tup_read int8", "idx_scan int8", "idx_tup_fetch int8", "n_tup_ins int8", "n_tup_upd int8",
			"n_tup_del int8", "n_tup_hot_upd int8", "n_live_tup int8", "n_dead_tup int8"),
			func(s *PGSnapshot, add rowAdder) {
				for _, r := range s.rels {
					add("relid", RelationOID(r), "schemaname", "public", "relname", r.Name)
				}
			}),
		pgcView("pg_locks", cols("locktype text", "database oid", "relation oid", "pid int4", "mode text",
			"granted bool"), nil),
		pgcView("pg_prepared_statements", cols("name text", "statement text", "prepare_time timestamptz",
			"parameter_types regtype[]", "from_sql bool"), nil),
		pgcView("pg_cursors", cols("name text", "statement text", "is_holdable bool", "is_binary bool",
			"is_scrollable bool", "creation_time timestamptz"),
			func(s *PGSnapshot, add rowAdder) {
				if s.sess.Cursors == nil {
					return
				}
				for _, c := range s.sess.Cursors() {
					add("name", c.Name, "statement", c.Statement, "is_holdable", c.Holdable, "is_binary", c.Binary,
						"is_scrollable", c.Scrollable, "creation_time", c.Created.UTC())
				}
			}),
		pgcView("pg_timezone_names", cols("name text", "abbrev text", "utc_offset interval", "is_dst bool"),
			func(s *PGSnapshot, add rowAdder) {
				add("name", "UTC", "abbrev", "UTC", "utc_offset", "00:00:00")
			}),
		pgcView("pg_available_extensions", cols("name name", "default_version text", "installed_version text",
			"comment text"), nil),
	}
}

// IndexDef is pg_get_indexdef of a relation's primary key index.
func IndexDef(r *Relation) string {
	return fmt.Sprintf("CREATE UNIQUE INDEX %s ON public.%s USING btree (%s)",
		quoteIdent(r.Name+"_pkey"), quoteIdent(r.Name), keyList(r))
}

// ConstraintDef is pg_get_constraintdef of a relation's primary key.
func ConstraintDef(r *Relation) string {
	return fmt.Sprintf("PRIMARY KEY (%s)", keyList(r))
}

func keyList(r *Relation) string {
	var names []string
	for _, k := range r.Schema.KeyIndexes() {
		names = append(names, quoteIdent(r.Schema.Columns[k].Name))
	}
	return strings.Join(names, ", ")
}

// ViewDefinition is pg_get_viewdef of a view: the SELECT it is defined
// by.
func (s *PGSnapshot) ViewDefinition(r *Relation) string {
	if s.sess.ViewQuery != nil {
		return s.sess.ViewQuery(r)
	}
	return r.SQL
}

func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func informationSchemaTables() []*VirtualTable {
	is := func(name string, columns []Column, gen func(s *PGSnapshot, add rowAdder)) *VirtualTable {
		return table("information_schema", name, 0, true, columns, gen)
	}
	// tableRels lists what information_schema.tables shows: basin's
	// relations, then the catalog's.
	type tableRel struct {
		schema, name, typ string
		cols              []Column
		rel               *Relation
	}
	tableRels := func(s *PGSnapshot) []tableRel {
		var out []tableRel
		for _, r := range s.rels {
			typ := "BASE TABLE"
			if r.Kind == KindView {
				typ = "VIEW"
			}
			out = append(out, tableRel{"public", r.Name, typ, r.Schema.Columns, r})
		}
		for _, t := range virtualTables() {
			typ := "BASE TABLE"
			if t.View {
				typ = "VIEW"
			}
			out = append(out, tableRel{t.Schema, t.Name, typ, t.Columns, nil})
		}
		return out
	}
	return []*VirtualTable{
		is("schemata", cols("catalog_name sql_identifier", "schema_name sql_identifier", "schema_owner sql_identifier",
			"default_character_set_catalog sql_identifier", "default_character_set_schema sql_identifier",
			"default_character_set_name sql_identifier", "sql_path character_data"),
			func(s *PGSnapshot, add rowAdder) {
				for _, n := range []string{"information_schema", "pg_catalog", "public"} {
					add("catalog_name", s.sess.Database, "schema_name", n, "schema_owner", s.sess.User)
				}
			}),
		is("tables", cols("table_catalog sql_identifier", "table_schema sql_identifier", "table_name sql_identifier",
			"table_type character_data", "self_referencing_column_name sql_identifier",
			"reference_generation character_data", "user_defined_type_catalog sql_identifier",
			"user_defined_type_schema sql_identifier", "user_defined_type_name sql_identifier",
			"is_insertable_into yes_or_no", "is_typed yes_or_no", "commit_action character_data"),
			func(s *PGSnapshot, add rowAdder) {
				for _, t := range tableRels(s) {
					insertable := t.rel != nil && t.rel.Kind != KindView
					add("table_catalog", s.sess.Database, "table_schema", t.schema, "table_name", t.name,
						"table_type", t.typ, "is_insertable_into", boolStr(insertable), "is_typed", "NO")
				}
			}),
		is("columns", cols("table_catalog sql_identifier", "table_schema sql_identifier", "table_name sql_identifier",
			"column_name sql_identifier", "ordinal_position cardinal_number", "column_default character_data",
			"is_nullable yes_or_no", "data_type character_data", "character_maximum_length cardinal_number",
			"character_octet_length cardinal_number", "numeric_precision cardinal_number",
			"numeric_precision_radix cardinal_number", "numeric_scale cardinal_number",
			"datetime_precision cardinal_number", "interval_type character_data", "interval_precision cardinal_number",
			"character_set_catalog sql_identifier", "character_set_schema sql_identifier",
			"character_set_name sql_identifier", "collation_catalog sql_identifier", "collation_schema sql_identifier",
			"collation_name sql_identifier", "domain_catalog sql_identifier", "domain_schema sql_identifier",
			"domain_name sql_identifier", "udt_catalog sql_identifier", "udt_schema sql_identifier",
			"udt_name sql_identifier", "scope_catalog sql_identifier", "scope_schema sql_identifier",
			"scope_name sql_identifier", "maximum_cardinality cardinal_number", "dtd_identifier sql_identifier",
			"is_self_referencing yes_or_no", "is_identity yes_or_no", "identity_generation character_data",
			"identity_start character_data", "identity_increment character_data", "identity_maximum character_data",
			"identity_minimum character_data", "identity_cycle yes_or_no", "is_generated character_data",
			"generation_expression character_data", "is_updatable yes_or_no"),
			func(s *PGSnapshot, add rowAdder) {
				for _, t := range tableRels(s) {
					for i, c := range t.cols {
						if c.Hidden {
							continue
						}
						notNull := t.rel != nil && HasPrimaryKey(t.rel) && c.Key
						dataType := c.Type.SQLName()
						if c.Type.IsArray() {
							dataType = "ARRAY"
						}
						var numPrec, numRadix, numScale, dtPrec, octets any
						switch c.Type {
						case Int:
							numPrec, numRadix, numScale = 32, 2, 0
						case BigInt:
							numPrec, numRadix, numScale = 64, 2, 0
						case Double:
							numPrec, numRadix = 53, 2
						case Timestamp:
							dtPrec = 6
						case Decimal:
							numPrec, numRadix, numScale = numericPrecision(c)
						case Varchar:
							octets = 1073741824
						}
						add("table_catalog", s.sess.Database, "table_schema", t.schema, "table_name", t.name,
							"column_name", c.Name, "ordinal_position", i+1, "is_nullable", boolStr(!notNull),
							"data_type", dataType, "character_octet_length", octets, "numeric_precision", numPrec,
							"numeric_precision_radix", numRadix, "numeric_scale", numScale, "datetime_precision", dtPrec,
							"udt_catalog", s.sess.Database, "udt_schema", "pg_catalog", "udt_name", c.Type.PGName(),
							"dtd_identifier", fmt.Sprint(i+1), "is_self_referencing", "NO", "is_identity", "NO",
							"identity_cycle", "NO", "is_generated", "NEVER",
							"is_updatable", boolStr(t.rel != nil && t.rel.Kind != KindView))
					}
				}
			}),
		is("views", cols("table_catalog sql_identifier", "table_schema sql_identifier", "table_name sql_identifier",
			"view_definition character_data", "check_option character_data", "is_updatable yes_or_no",
			"is_insertable_into yes_or_no", "is_trigger_updatable yes_or_no", "is_trigger_deletable yes_or_no",
			"is_trigger_insertable_into yes_or_no"),
			func(s *PGSnapshot, add rowAdder) {
				for _, r := range s.rels {
					if r.Kind == KindView {
						add("table_catalog", s.sess.Database, "table_schema", "public", "table_name", r.Name,
							"view_definition", s.ViewDefinition(r), "check_option", "NONE", "is_updatable", "NO",
							"is_insertable_into", "NO", "is_trigger_updatable", "NO", "is_trigger_deletable", "NO",
							"is_trigger_insertable_into", "NO")
					}
				}
			}),
		is("table_constraints", cols("constraint_catalog sql_identifier", "constraint_schema sql_identifier",
			"constraint_name sql_identifier", "table_catalog sql_identifier", "table_schema sql_identifier",
			"table_name sql_identifier", "constraint_type character_data", "is_deferrable yes_or_no",
			"initially_deferred yes_or_no", "enforced yes_or_no", "nulls_distinct yes_or_no"),
			func(s *PGSnapshot, add rowAdder) {
				for _, r := range s.rels {
					if HasPrimaryKey(r) {
						add("constraint_catalog", s.sess.Database, "constraint_schema", "public",
							"constraint_name", r.Name+"_pkey", "table_catalog", s.sess.Database, "table_schema", "public",
							"table_name", r.Name, "constraint_type", "PRIMARY KEY", "is_deferrable", "NO",
							"initially_deferred", "NO", "enforced", "YES", "nulls_distinct", nil)
					}
				}
			}),
		is("key_column_usage", cols("constraint_catalog sql_identifier", "constraint_schema sql_identifier",
			"constraint_name sql_identifier", "table_catalog sql_identifier", "table_schema sql_identifier",
			"table_name sql_identifier", "column_name sql_identifier", "ordinal_position cardinal_number",
			"position_in_unique_constraint cardinal_number"),
			func(s *PGSnapshot, add rowAdder) {
				for _, r := range s.rels {
					if !HasPrimaryKey(r) {
						continue
					}
					for i, k := range r.Schema.KeyIndexes() {
						add("constraint_catalog", s.sess.Database, "constraint_schema", "public",
							"constraint_name", r.Name+"_pkey", "table_catalog", s.sess.Database, "table_schema", "public",
							"table_name", r.Name, "column_name", r.Schema.Columns[k].Name, "ordinal_position", i+1,
							"position_in_unique_constraint", nil)
					}
				}
			}),
		is("constraint_column_usage", cols("table_catalog sql_identifier", "table_schema sql_identifier",
			"table_name sql_identifier", "column_name sql_identifier", "constraint_catalog sql_identifier",
			"constraint_schema sql_identifier", "constraint_name sql_identifier"),
			func(s *PGSnapshot, add rowAdder) {
				for _, r := range s.rels {
					if !HasPrimaryKey(r) {
						continue
					}
					for _, k := range r.Schema.KeyIndexes() {
						add("table_catalog", s.sess.Database, "table_schema", "public", "table_name", r.Name,
							"column_name", r.Schema.Columns[k].Name, "constraint_catalog", s.sess.Database,
							"constraint_schema", "public", "constraint_name", r.Name+"_pkey")
					}
				}
			}),
		is("referential_constraints", cols("constraint_catalog sql_identifier", "constraint_schema sql_identifier",
			"constraint_name sql_identifier", "unique_constraint_catalog sql_identifier",
			"unique_constraint_schema sql_identifier", "unique_constraint_name sql_identifier",
			"match_option character_data", "update_rule character_data", "delete_rule character_data"), nil),
		is("routines", cols("specific_catalog sql_identifier", "specific_schema sql_identifier",
			"specific_name sql_identifier", "routine_catalog sql_identifier", "routine_schema sql_identifier",
			"routine_name sql_identifier", "routine_type character_data", "data_type character_data"),
			func(s *PGSnapshot, add rowAdder) {
				for _, p := range Procs() {
					if p.OID < 9000 {
						continue
					}
					rt, _ := TypeByOID(p.RetType)
					add("specific_catalog", s.sess.Database, "specific_schema", "pg_catalog",
						"specific_name", fmt.Sprintf("%s_%d", p.Name, p.OID), "routine_catalog", s.sess.Database,
						"routine_schema", "pg_catalog", "routine_name", p.Name, "routine_type", "FUNCTION",
						"data_type", rt.SQLName)
				}
			}),
	}
}
