package compat

import "testing"

// TestCatalogClients holds what clients learn from pg_catalog and
// information_schema: pgjdbc's DatabaseMetaData, SQLAlchemy's default
// engine (it probes pg_type on connect) and inspect(). The scripts report
// each step's result or SQLSTATE on its own line, so one failing catalog
// query does not hide the others.
func TestCatalogClients(t *testing.T) {
	t.Run("jdbc", func(t *testing.T) {
		java, cp := compileJDBC(t)
		s := setup(t)
		got := parseOutput(t, runClient(t, s, ".", java, "-cp", cp, "Client", s.jdbcURL(), "catalog"))
		t.Logf("pgjdbc version %s", got["version"])
		expect(t, "pgjdbc DatabaseMetaData", got, map[string]any{
			"getTables":                        hasItems("customers", "order_by_id", "orders", "revenue_by_region"),
			"getColumns revenue_by_region":     "region:text,orders:int8,revenue:float8",
			"getColumns order_by_id":           "order_id:int8,customer:text,amount:float8,ts:timestamp",
			"getColumns customers":             "id:text,name:text,tier:text",
			"getColumns orders":                "order_id:int8,customer:text,region:text,amount:float8,ts:timestamp",
			"getPrimaryKeys revenue_by_region": "region",
			"getPrimaryKeys order_by_id":       "order_id",
			"getPrimaryKeys customers":         "id",
		})
	})
	t.Run("sqlalchemy", func(t *testing.T) {
		py := needPython(t, "psycopg2", "sqlalchemy")
		s := setup(t)
		got := parseOutput(t, runClient(t, s, "python", py, "sqlalchemy_client.py", s.sqlalchemyURL(), "catalog"))
		t.Logf("SQLAlchemy version %s", got["version"])
		expect(t, "SQLAlchemy inspect", got, map[string]any{
			"default engine":                      "1",
			"get_schema_names":                    hasItems("public"),
			"tables and views":                    hasItems("customers", "order_by_id", "orders", "revenue_by_region"),
			"get_columns revenue_by_region":       "region:TEXT,orders:BIGINT,revenue:DOUBLE_PRECISION",
			"get_columns order_by_id":             "order_id:BIGINT,customer:TEXT,amount:DOUBLE_PRECISION,ts:TIMESTAMP",
			"get_columns customers":               "id:TEXT,name:TEXT,tier:TEXT",
			"get_pk_constraint revenue_by_region": "region",
			"get_pk_constraint customers":         "id",
			"reflected select":                    "apac|412.5",
		})
	})
}
