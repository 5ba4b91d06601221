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
