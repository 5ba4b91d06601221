package node

import (
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/basindb/basin/internal/poll"
)

// TestNestedExtended writes and reads STRUCT, MAP and ARRAY<STRUCT>
// columns through the extended protocol in each of pgx's modes:
// parameters as jsonb (binary, the version byte) or as untyped text,
// results as jsonb and jsonb[] in binary and text.
func TestNestedExtended(t *testing.T) {
	n := startNode(t, t.TempDir())
	setup := connect(t, n.PGAddr())
	ctx := extCtx(t)
	mustExec(t, setup, `CREATE TABLE people (id INT PRIMARY KEY, p STRUCT<name VARCHAR, age INT, tags ARRAY<STRING>>,
		m MAP<STRING, DOUBLE>, kids ARRAY<STRUCT<name VARCHAR>>) WITH (partitions = 2)`)
	modes := []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeDescribeExec, pgx.QueryExecModeExec, pgx.QueryExecModeSimpleProtocol}
	for i, mode := range modes {
		conn := connectMode(t, n.PGAddr(), mode)
		var p, m any = map[string]any{"name": "Ann", "age": 30 + i, "tags": []string{"a"}}, map[string]any{"x": 1.5}
		if mode == pgx.QueryExecModeExec || mode == pgx.QueryExecModeSimpleProtocol {
			p, m = fmt.Sprintf(`{"name": "Ann", "age": %d, "tags": ["a"]}`, 30+i), `{"x": 1.5}`
		}
		if _, err := conn.Exec(ctx, `INSERT INTO people VALUES ($1, $2, $3, $4)`, i, p, m, `[{"name": "Kim"}, null]`); err != nil {
			t.Fatalf("mode %v: insert: %v", mode, err)
		}
		var ptext, mtext, name string
		var kids []map[string]any
		var err error
		poll.Cond(settleTimeout, func() bool {
			err = conn.QueryRow(ctx, `SELECT p::text, m::text, p->name, kids FROM people WHERE id = $1`, i).Scan(&ptext, &mtext, &name, &kids)
			return err != pgx.ErrNoRows
		})
		if err != nil {
			t.Fatalf("mode %v: read: %v", mode, err)
		}
		want := fmt.Sprintf(`{"age": %d, "name": "Ann", "tags": ["a"]}`, 30+i)
		if ptext != want || mtext != `{"x": 1.5}` || name != "Ann" || len(kids) != 2 || kids[0]["name"] != "Kim" || kids[1] != nil {
			t.Fatalf("mode %v: read %s %s %s %v", mode, ptext, mtext, name, kids)
		}
		// The column itself, as jsonb in either format.
		var doc map[string]any
		if err := conn.QueryRow(ctx, `SELECT p FROM people WHERE id = $1`, i).Scan(&doc); err != nil || doc["name"] != "Ann" {
			t.Fatalf("mode %v: p as jsonb: %v, %v", mode, doc, err)
		}
	}
}

// TestNestedFromKafka reads nested columns from records any producer
// writes: JSON objects and arrays, field names in any case; a record
// whose nested value does not fit its type goes to the processing log,
// with the path to the bad value.
func TestNestedFromKafka(t *testing.T) {
	n := startNode(t, t.TempDir())
	conn := connect(t, n.PGAddr())
	mustExec(t, conn, `CREATE STREAM events (k VARCHAR KEY, who STRUCT<id BIGINT, geo STRUCT<lat DOUBLE, lon DOUBLE>>,
		items ARRAY<STRUCT<sku STRING, n INT>>, props MAP<STRING, STRING>) WITH (kafka_topic = 'events', value_format = 'json', partitions = 1)`)
	// A persistent query reads every record, and logs those it cannot.
	mustExec(t, conn, `CREATE STREAM event_copies AS SELECT * FROM events`)
	produceRaw(t, n.Brokers(), "events",
		[2]string{"a", `{"WHO": {"Id": 7, "geo": {"lat": 1.5, "lon": -2}}, "items": [{"sku": "x", "n": 2}], "props": {"b": "2", "a": "1"}}`},
		[2]string{"b", `{"who": {"id": "8"}, "items": [], "props": {}, "extra": {"x": 1}}`},
		[2]string{"c", `{"who": {"geo": {"lat": "north"}}}`},
		[2]string{"d", `{"items": [{"n": 1}, {"n": [1]}]}`},
	)
	waitQuery(t, conn, `SELECT k, who, items, props FROM events ORDER BY k`,
		`a|{"id": 7, "geo": {"lat": 1.5, "lon": -2}}|[map[n:2 sku:x]]|{"a": "1", "b": "2"}`+"\n"+
			`b|{"id": 8, "geo": null}|[]|{}`+"\n")
	waitQuery(t, conn, `SELECT source_offset, error FROM basin_processing_log ORDER BY source_offset`,
		"2|field \"who\": struct field \"geo\": struct field \"lat\": expected DOUBLE, found JSON string \"north\"\n"+
			"3|field \"items\": element 2: struct field \"n\": expected INTEGER, found JSON array \"[1]\"\n")
}

// TestNestedRestart restarts a node whose catalog has STRUCT, MAP and
// ARRAY<STRUCT> columns: the command log records them as their text and
// the replay reads them back, so the relations, their stored rows and
// the queries over them come back as they were.
func TestNestedRestart(t *testing.T) {
	dir := t.TempDir()
	n := startNode(t, dir)
	conn := connect(t, n.PGAddr())
	mustExec(t, conn, `CREATE STREAM ev (id BIGINT KEY, who STRUCT<name VARCHAR, "Geo" STRUCT<lat DOUBLE>>, tags MAP<STRING, ARRAY<INT>>,
		items ARRAY<STRUCT<sku VARCHAR>>) WITH (partitions = 2)`)
	mustExec(t, conn, `CREATE TABLE by_name AS SELECT who->name AS name, count(*) AS n, max(items[1]->sku) AS sku FROM ev GROUP BY who->name`)
	mustExec(t, conn, `CREATE TABLE docs AS SELECT id, who, tags FROM ev`)
	mustExec(t, conn, `INSERT INTO ev VALUES (1, '{"name": "a", "Geo": {"lat": 1.5}}', '{"k": [1, 2]}', '[{"sku": "x"}]'), (2, '{"name": "a"}', NULL, NULL)`)
	const describe = "id|BIGINT|true\n" + `who|STRUCT<name VARCHAR, "Geo" STRUCT<lat DOUBLE>>|false` + "\n" +
		"tags|MAP<VARCHAR, INTEGER[]>|false\nitems|ARRAY<STRUCT<sku VARCHAR>>|false\n"
	waitQuery(t, conn, `DESCRIBE ev`, describe)
	waitQuery(t, conn, `SELECT name, n, sku FROM by_name`, "a|2|x\n")
	waitQuery(t, conn, `SELECT id, who->"Geo"->lat, tags['k'] FROM docs ORDER BY id`, "1|1.5|[1 2]\n2|NULL|NULL\n")
	if err := n.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}

	n2 := startNode(t, dir)
	conn2 := connect(t, n2.PGAddr())
	waitQuery(t, conn2, `DESCRIBE ev`, describe)
	waitQuery(t, conn2, `SELECT name, n, sku FROM by_name`, "a|2|x\n")
	waitQuery(t, conn2, `SELECT id, who->"Geo"->lat, tags['k'] FROM docs ORDER BY id`, "1|1.5|[1 2]\n2|NULL|NULL\n")
	mustExec(t, conn2, `INSERT INTO ev VALUES (3, '{"name": "b"}', '{}', '[{"sku": "y"}]')`)
	waitQuery(t, conn2, `SELECT name, n, sku FROM by_name ORDER BY name`, "a|2|x\nb|1|y\n")
}
