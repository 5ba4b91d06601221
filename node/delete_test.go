package node

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/basindb/basin/kafka"
)

// TestDeleteTombstones deletes through both protocols and checks what a
// client sees (the DELETE tags count the rows found) and what is on the
// table's topic for another consumer: a tombstone, a record with the
// key and no value, for each row deleted.
func TestDeleteTombstones(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	n := startNode(t, t.TempDir())
	conn := connect(t, n.PGAddr())
	for _, q := range []string{
		"CREATE TABLE t (id BIGINT PRIMARY KEY, name VARCHAR) WITH (kafka_topic = 't', partitions = 1)",
		"INSERT INTO t VALUES (1, 'one'), (2, 'two'), (3, 'three'), (4, 'four')",
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for _, c := range []struct {
		sql  string
		args []any
		tag  string
	}{
		{"DELETE FROM t WHERE id = 1", nil, "DELETE 1"},
		{"DELETE FROM t WHERE id = 1", nil, "DELETE 0"},
		// The extended protocol, the parameter typed by the table's key.
		{"DELETE FROM t WHERE id = $1", []any{2}, "DELETE 1"},
		{"DELETE FROM t WHERE name IN ($1, $2)", []any{"three", "four"}, "DELETE 2"},
	} {
		tag, err := conn.Exec(ctx, c.sql, c.args...)
		if err != nil {
			t.Fatalf("%s %v: %v", c.sql, c.args, err)
		}
		if tag.String() != c.tag {
			t.Fatalf("%s %v: tag %q, want %q", c.sql, c.args, tag, c.tag)
		}
	}
	var left int64
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM t").Scan(&left); err != nil || left != 0 {
		t.Fatalf("rows left after deleting all: %d (%v)", left, err)
	}

	cl, err := kafka.NewClient(kafka.ClientOptions{Brokers: n.Brokers(), Logger: testLogger()},
		kgo.ConsumeTopics("t"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	values := map[string][]byte{}
	tombstones := 0
	for tombstones < 4 {
		fs := cl.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatalf("reading t's topic: %v (tombstones so far %d)", err, tombstones)
		}
		fs.EachRecord(func(r *kgo.Record) {
			values[string(r.Key)] = r.Value
			if r.Value == nil {
				tombstones++
			}
		})
	}
	if len(values) != 4 {
		t.Fatalf("keys on the topic: %d, want 4", len(values))
	}
	for k, v := range values {
		if v != nil {
			t.Errorf("key %x: last record %q, want a tombstone", k, v)
		}
	}
}
