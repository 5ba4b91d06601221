package node

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/ha"
	"github.com/basindb/basin/internal/testcluster"
	"github.com/basindb/basin/pull"
)

// TestRemoteManyKeys reads more keys of one partition than a statement
// may have parameters (65,535) through forwarder.remote, with a real
// node as the peer: the keys go as several statements, the rows of all
// of them come back, and a pushed LIMIT holds across them.
func TestRemoteManyKeys(t *testing.T) {
	n := startNode(t, t.TempDir())
	conn := connect(t, n.PGAddr())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := conn.Exec(ctx, "CREATE TABLE t (id BIGINT PRIMARY KEY, v VARCHAR) WITH (partitions = 1)"); err != nil {
		t.Fatal(err)
	}
	// 1,000 rows, ids 0, 50, ..., 49,950: the first 30,000 keys asked for
	// find 600 of them, the next 30,000 the other 400, the last 10,000
	// none.
	const rowsIn, step, keysAsked = 1000, 50, 70000
	var ins strings.Builder
	ins.WriteString("INSERT INTO t (id, v) VALUES ")
	for i := range rowsIn {
		if i > 0 {
			ins.WriteString(", ")
		}
		fmt.Fprintf(&ins, "(%d, 'v%d')", i*step, i*step)
	}
	if _, err := conn.Exec(ctx, ins.String()); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() error {
		var c int64
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM t").Scan(&c); err != nil || c != rowsIn {
			return fmt.Errorf("count %d (%v), want %d", c, err, rowsIn)
		}
		return nil
	})
	rel, ok := n.engine.Catalog.Lookup("t")
	if !ok {
		t.Fatal("no relation t")
	}
	keys := make([][]any, keysAsked)
	for i := range keys {
		keys[i] = []any{int64(i)}
	}
	f := &forwarder{c: &cluster{n: n}}
	defer f.close()
	ri := ha.ReplicaInfo{Node: "peer", Role: ha.RoleActive, Alive: true, LagKnown: true}
	for _, tc := range []struct {
		name  string
		limit int64
		bound bool // a lag bound: every answer is checked
		want  int
	}{
		{"all", -1, false, rowsIn},
		{"all, checked", -1, true, rowsIn},
		{"limit within the first statement", 100, false, 100},
		{"limit across statements", 700, false, 700},
		{"limit past the rows", 5000, true, rowsIn},
		{"limit 0", 0, false, 0},
	} {
		req := pull.ReadRequest{Rel: rel, Partition: 0, Keys: keys, Limit: tc.limit}
		rb := readBounds{ReadBounds: ha.ReadBounds{MaxOffsetLag: ha.NoOffsetLagBound}, forwardTimeout: 30 * time.Second}
		if tc.bound {
			rb.MaxOffsetLag = 1000
		}
		stmts := forwardQuery(&req, tc.bound)
		if len(stmts) != 3 {
			t.Fatalf("%s: %d keys in %d statements, want 3", tc.name, keysAsked, len(stmts))
		}
		seen := map[int64]bool{}
		_, err := f.remote(ctx, rb, &req, ri, false, n.PGAddr(), stmts, func(pull.PartitionRead) {}, func(row catalog.Row) error {
			id, _ := row[0].(int64)
			if id%step != 0 || id >= rowsIn*step || row[1] != "v"+strconv.FormatInt(id, 10) {
				return fmt.Errorf("row %v was not written", row[:2])
			}
			if seen[id] {
				return fmt.Errorf("id %d twice", id)
			}
			seen[id] = true
			return nil
		})
		if err != nil || len(seen) != tc.want {
			t.Fatalf("%s: %d rows, %v; want %d rows", tc.name, len(seen), err, tc.want)
		}
	}
}

// TestClusterForwardManyKeys reads keys of views through a node that
// does not hold them all, so that their reads are forwarded:
//   - 70,000 keys of a view of one partition, held by the other node:
//     more than the 65,535 parameters one statement may have; the rows
//     are exactly those written, and a LIMIT is honoured;
//   - a key IN list of 3 MB under a raised basin.max_statement_bytes:
//     the forwarded statements, which repeat it, are taken by the
//     serving node under the client's limit (plus its slack for what
//     forwarding adds), not its default, which would refuse them with
//     54000.
func TestClusterForwardManyKeys(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{Nodes: 2, Args: []string{"--standby-replicas", "0"}})
	n := c.Node(0)
	n.Exec(t, "CREATE STREAM ids (id BIGINT KEY, v BIGINT) WITH (kafka_topic = 'ids', value_format = 'json', partitions = 1)")
	n.Exec(t, "CREATE TABLE per_id AS SELECT id, COUNT(*) AS n FROM ids GROUP BY id")
	n.Exec(t, "CREATE TABLE kv (k VARCHAR PRIMARY KEY, v BIGINT) WITH (partitions = 4)")
	placed := waitPlacedView(t, c, n, "per_id", 1, 0)
	waitPlacedView(t, c, n, "kv", 4, 0)
	// The reader is the node not holding per_id's partition.
	var holder string
	for _, p := range placed {
		holder = strings.Fields(p)[0]
	}
	reader := c.Node(0)
	if reader.ID == holder {
		reader = c.Node(1)
	}

	// per_id: ids 0, 25, ..., 69,975, in every statement's share of the
	// keys.
	const ids, step, keys = 2800, 25, 70000
	recs := make([]*kgo.Record, 0, ids)
	for i := range ids {
		val, _ := json.Marshal(map[string]any{"v": i})
		recs = append(recs, &kgo.Record{Topic: "ids", Key: binary.BigEndian.AppendUint64(nil, uint64(i*step)), Value: val})
	}
	c.Produce(t, "ids", recs...)
	// kv: 200 keys of 100 bytes, 0, 150, ..., 29,850 in their names.
	long := func(i int) string { return fmt.Sprintf("key-%06d-%s", i, strings.Repeat("x", 89)) }
	var ins strings.Builder
	ins.WriteString("INSERT INTO kv (k, v) VALUES ")
	for i := range 200 {
		if i > 0 {
			ins.WriteString(", ")
		}
		fmt.Fprintf(&ins, "('%s', %d)", long(i*150), i*150)
	}
	n.Exec(t, ins.String())
	c.Eventually(t, 60*time.Second, func() error {
		for q, want := range map[string]string{"SELECT count(*) FROM per_id": strconv.Itoa(ids), "SELECT count(*) FROM kv": "200"} {
			rows, err := reader.QueryErr(t, q)
			if err != nil {
				return err
			}
			if rows[0][0] != want {
				return fmt.Errorf("%s: %v, want %s", q, rows, want)
			}
		}
		return nil
	})

	ctx, cancel := context.WithTimeout(context.Background(), testcluster.Timeout(4*time.Minute))
	defer cancel()
	conn, err := reader.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	// The serving node parses statements of up to megabytes, slowly
	// under the race detector: the test is about their number and size,
	// not the time.
	haExec(t, ctx, conn, "SET basin.forward_timeout = '60s'")

	t.Run("more keys than parameters", func(t *testing.T) {
		var in strings.Builder
		for i := range keys {
			if i > 0 {
				in.WriteString(", ")
			}
			in.WriteString(strconv.Itoa(i))
		}
		list := in.String()
		// check checks rows of (id, n, _served_by): ids written, each
		// once, with n = 1, served by the node holding the partition.
		check := func(rows [][]string) error {
			seen := map[string]bool{}
			for _, r := range rows {
				id, err := strconv.Atoi(r[0])
				if err != nil || id%step != 0 || id >= ids*step || r[1] != "1" {
					return fmt.Errorf("row %v was not written", r)
				}
				if seen[r[0]] {
					return fmt.Errorf("id %s twice", r[0])
				}
				seen[r[0]] = true
				if r[2] != holder {
					return fmt.Errorf("row %v not served by %s", r, holder)
				}
			}
			return nil
		}
		rows, err := haRows(ctx, conn, "SELECT id, n, _served_by FROM per_id WHERE id IN ("+list+")")
		if err != nil {
			t.Fatalf("%d keys through %s: %v", keys, reader.ID, err)
		}
		if err := check(rows); err != nil || len(rows) != ids {
			t.Fatalf("%d keys through %s: %d rows (%v), want %d", keys, reader.ID, len(rows), err, ids)
		}
		rows, err = haRows(ctx, conn, "SELECT id, n, _served_by FROM per_id WHERE id IN ("+list+") LIMIT 2500")
		if err != nil {
			t.Fatalf("%d keys with LIMIT 2500: %v", keys, err)
		}
		if err := check(rows); err != nil || len(rows) != 2500 {
			t.Fatalf("%d keys with LIMIT 2500: %d rows (%v), want 2500", keys, len(rows), err)
		}
		rows, err = haRows(ctx, conn, "SELECT count(*), sum(n) FROM per_id WHERE id IN ("+list+")")
		if want := strconv.Itoa(ids); err != nil || len(rows) != 1 || rows[0][0] != want || rows[0][1] != want {
			t.Fatalf("count of %d keys: %v %v, want %s|%s", keys, rows, err, want, want)
		}
	})

	t.Run("raised statement limit", func(t *testing.T) {
		// 30,000 keys of 100 bytes, the 200 written among them: a 3 MB
		// statement, about 7,500 keys a partition (one forwarded
		// statement each, of 3 MB too).
		var q strings.Builder
		q.WriteString("SELECT k, v, _served_by FROM kv WHERE k IN (")
		for i := range 30000 {
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteString("'" + long(i) + "'")
		}
		q.WriteString(")")
		haExec(t, ctx, conn, "SET basin.max_statement_bytes = '8MB'")
		rows, err := haRows(ctx, conn, q.String())
		if err != nil {
			t.Fatalf("IN list of %d bytes under basin.max_statement_bytes = 8MB: %v", q.Len(), err)
		}
		seen, remote := map[int]bool{}, 0
		for _, r := range rows {
			i, err := strconv.Atoi(r[1])
			if err != nil || i%150 != 0 || i >= 200*150 || r[0] != long(i) || seen[i] {
				t.Fatalf("row %v: not written, or twice", r)
			}
			seen[i] = true
			if r[2] != reader.ID {
				remote++
			}
		}
		if len(rows) != 200 || remote == 0 {
			t.Fatalf("IN list of %d bytes: %d rows, %d of them forwarded; want 200, some forwarded", q.Len(), len(rows), remote)
		}

		// A lowered limit bounds the client's statement here, and the
		// forwarded ones by it (plus the slack), as the serving node's own
		// default would.
		haExec(t, ctx, conn, "SET basin.max_statement_bytes = '64kB'")
		if _, err := haRows(ctx, conn, q.String()); haPgError(err) == nil || haPgError(err).Code != "54000" {
			t.Fatalf("IN list of %d bytes under basin.max_statement_bytes = 64kB: %v, want 54000", q.Len(), err)
		}
		var short strings.Builder
		short.WriteString("SELECT k, v FROM kv WHERE k IN (")
		for i := range 500 {
			if i > 0 {
				short.WriteString(", ")
			}
			short.WriteString("'" + long(i) + "'")
		}
		short.WriteString(")")
		if rows, err := haRows(ctx, conn, short.String()); err != nil || len(rows) != 4 {
			t.Fatalf("IN list of %d bytes under basin.max_statement_bytes = 64kB: %d rows, %v; want 4", short.Len(), len(rows), err)
		}
	})
}
