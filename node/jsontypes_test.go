package node

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/basindb/basin/internal/poll"
)

// TestBlobTypesExtended writes and reads uuid, jsonb, json and bytea
// through the extended protocol in each of pgx's modes: parameters in
// binary (uuid's 16 bytes, jsonb's version byte) and text, results in
// both formats.
func TestBlobTypesExtended(t *testing.T) {
	n := startNode(t, t.TempDir())
	setup := connect(t, n.PGAddr())
	ctx := extCtx(t)
	if _, err := setup.Exec(ctx, `CREATE TABLE docs (id UUID PRIMARY KEY, body JSONB, raw BYTEA, note JSON) WITH (partitions = 2)`); err != nil {
		t.Fatal(err)
	}
	id := [16]byte{0xa0, 0xee, 0xbc, 0x99, 0x9c, 0x0b, 0x4e, 0xf8, 0xbb, 0x6d, 0x6b, 0xb9, 0xbd, 0x38, 0x0a, 0x11}
	modes := []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeDescribeExec, pgx.QueryExecModeExec, pgx.QueryExecModeSimpleProtocol}
	for i, mode := range modes {
		conn := connectMode(t, n.PGAddr(), mode)
		key := id
		key[15] = byte(i)
		// Without a described statement pgx sends every parameter as
		// text of no type: the uuid and the document go as text then.
		var arg, doc any = key, map[string]any{"b": 1, "a": []int{1, 2}}
		if mode == pgx.QueryExecModeExec || mode == pgx.QueryExecModeSimpleProtocol {
			arg = fmt.Sprintf("%x-%x-%x-%x-%x", key[:4], key[4:6], key[6:8], key[8:10], key[10:])
			doc = `{"b": 1, "a": [1, 2]}`
		}
		if _, err := conn.Exec(ctx, `INSERT INTO docs VALUES ($1, $2, $3, $4)`, arg, doc, []byte{0, 1, 0xff}, `{"z" : 1}`); err != nil {
			t.Fatalf("mode %v: insert: %v", mode, err)
		}
		var body, text, note string
		var raw []byte
		var err error
		poll.Cond(settleTimeout, func() bool {
			err = conn.QueryRow(ctx, `SELECT body::text, body->>'b', raw, note::text FROM docs WHERE id = $1`, arg).Scan(&body, &text, &raw, &note)
			return err != pgx.ErrNoRows
		})
		if err != nil {
			t.Fatalf("mode %v: read: %v", mode, err)
		}
		if body != `{"a": [1, 2], "b": 1}` || text != "1" || !bytes.Equal(raw, []byte{0, 1, 0xff}) || note != `{"z" : 1}` {
			t.Fatalf("mode %v: read %q %q %x %q", mode, body, text, raw, note)
		}
		var got [16]byte
		var contains bool
		if err := conn.QueryRow(ctx, `SELECT id, body @> $2 FROM docs WHERE id = $1`, arg, `{"b": 1}`).Scan(&got, &contains); err != nil || got != key || !contains {
			t.Fatalf("mode %v: uuid and @> read back %x %v, %v", mode, got, contains, err)
		}
	}
}

// TestBlobTypesFromKafka reads uuid, jsonb and bytea columns from
// records any producer writes: a JSON value whose jsonb field is an
// embedded document, a uuid field in upper case, a raw bytes key. A
// record whose uuid is no uuid goes to the processing log.
func TestBlobTypesFromKafka(t *testing.T) {
	n := startNode(t, t.TempDir())
	conn := connect(t, n.PGAddr())
	mustExec(t, conn, `CREATE STREAM clicks (sid BYTEA KEY, id UUID, payload JSONB, img BYTEA) WITH (kafka_topic = 'clicks', value_format = 'json', partitions = 1)`)
	mustExec(t, conn, `CREATE TABLE by_country AS SELECT payload->>'country' AS country, count(*) AS c FROM clicks GROUP BY payload->>'country'`)
	produceRaw(t, n.Brokers(), "clicks",
		[2]string{"\x00\x01", `{"id": "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11", "payload": {"n": 1.50, "country": "fr", "n": 2}, "img": "AQL/"}`},
		[2]string{"\xff", `{"id": "b0eebc999c0b4ef8bb6d6bb9bd380a12", "payload": {"country": "de"}}`},
		[2]string{"\x02", `{"id": "nope", "payload": {"country": "xx"}}`},
		[2]string{"\x03", `{"id": null, "payload": {"country": "fr", "tags": ["a"]}}`},
	)
	waitQuery(t, conn, `SELECT sid, id, payload, img FROM clicks ORDER BY sid`,
		`\x0001|a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11|{"n": 2, "country": "fr"}|\x0102ff`+"\n"+
			`\x03|NULL|{"tags": ["a"], "country": "fr"}|NULL`+"\n"+
			`\xff|b0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12|{"country": "de"}|NULL`+"\n")
	waitQuery(t, conn, `SELECT country, c FROM by_country ORDER BY country`, "de|1\nfr|2\n")
	waitQuery(t, conn, `SELECT source_offset, error FROM basin_processing_log WHERE source_offset = 2 LIMIT 1`,
		"2|field \"id\": expected UUID, found JSON string \"nope\"\n")
}
