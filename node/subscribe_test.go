package node

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	mathrand "math/rand/v2"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/basindb/basin/internal/poll"
)

// subscriber reads a running SUBSCRIBE's rows as they come.
type subscriber struct {
	t      *testing.T
	rows   chan []string
	cancel context.CancelFunc
	done   chan error
}

// subscribe runs q, a SUBSCRIBE or a push query, on a connection of its
// own to addr, and returns its rows as they come, each as its values
// (NULL as "NULL") without the _ts and _position columns when strip is
// set.
func subscribe(t *testing.T, addr, q string, strip bool) *subscriber {
	t.Helper()
	conn := connect(t, addr)
	ctx, cancel := context.WithCancel(context.Background())
	s := &subscriber{t: t, rows: make(chan []string, 1024), cancel: cancel, done: make(chan error, 1)}
	rows, err := conn.Query(ctx, q, pgx.QueryResultFormats{pgx.TextFormatCode})
	if err != nil {
		cancel()
		t.Fatalf("%s: %v", q, err)
	}
	go func() {
		defer close(s.rows)
		for rows.Next() {
			vals := rows.RawValues()
			n := len(vals)
			if strip {
				n -= 2
			}
			out := make([]string, n)
			for i := range out {
				if vals[i] == nil {
					out[i] = "NULL"
				} else {
					out[i] = string(vals[i])
				}
			}
			s.rows <- out
		}
		rows.Close()
		s.done <- rows.Err()
	}()
	t.Cleanup(func() { s.stop() })
	return s
}

func (s *subscriber) stop() {
	s.cancel()
	for range s.rows {
	}
}

// want waits for the next rows to be want, in any order: rows of
// different partitions have none.
func (s *subscriber) want(want ...string) {
	s.t.Helper()
	deadline := time.After(30 * time.Second)
	left := map[string]int{}
	for _, w := range want {
		left[w]++
	}
	for i := range want {
		select {
		case r, ok := <-s.rows:
			if !ok {
				s.t.Fatalf("the subscription ended (%v) before row %d of %q", <-s.done, i, want)
			}
			got := strings.Join(r, "|")
			if left[got] == 0 {
				s.t.Fatalf("row %q, want one of %q", got, want)
			}
			left[got]--
		case <-deadline:
			s.t.Fatalf("no row %d of %q within 30s", i, want)
		}
	}
}

// TestSubscribe subscribes to a grouped view and an ungrouped one:
// the snapshot's rows, then each change, with the op that says what it
// did to the row of its key, including a group HAVING hides and shows
// again and a key deleted from the source table.
func TestSubscribe(t *testing.T) {
	n := startNode(t, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := sqlConn{t, ctx, connect(t, n.PGAddr())}
	c.exec(`CREATE STREAM orders (id VARCHAR KEY, region VARCHAR, amount INTEGER) WITH (kafka_topic = 'orders', partitions = 4)`)
	c.exec(`CREATE TABLE by_region AS SELECT region, count(*) AS n, sum(amount) AS total FROM orders GROUP BY region HAVING count(*) <> 2`)
	c.exec(`CREATE TABLE users (id BIGINT PRIMARY KEY, name VARCHAR) WITH (kafka_topic = 'users', partitions = 2)`)
	c.exec(`CREATE TABLE named AS SELECT id, upper(name) AS name FROM users WHERE name <> 'x'`)
	c.exec(`INSERT INTO orders VALUES ('o1', 'eu', 10)`)
	c.exec(`INSERT INTO users VALUES (1, 'ann')`)
	waitQuery(t, c.conn, `SELECT region, n, total FROM by_region`, "eu|1|10\n")
	waitQuery(t, c.conn, `SELECT id, name FROM named`, "1|ANN\n")

	regions := subscribe(t, n.PGAddr(), `SUBSCRIBE by_region`, true)
	regions.want("eu|1|10|insert")
	c.exec(`INSERT INTO orders VALUES ('o2', 'eu', 5)`) // n = 2: hidden
	c.exec(`INSERT INTO orders VALUES ('o3', 'us', 7)`)
	regions.want("eu|NULL|NULL|delete", "us|1|7|insert")
	c.exec(`INSERT INTO orders VALUES ('o4', 'eu', 1)`) // n = 3: back
	regions.want("eu|3|16|insert")
	c.exec(`INSERT INTO orders VALUES ('o5', 'us', 2)`)
	regions.want("us|NULL|NULL|delete")
	c.exec(`INSERT INTO orders VALUES ('o6', 'us', 3)`)
	regions.want("us|3|12|insert")

	named := subscribe(t, n.PGAddr(), `SUBSCRIBE TO named WITH (snapshot = false)`, true)
	c.exec(`INSERT INTO users VALUES (2, 'bob')`)
	named.want("2|BOB|insert")
	c.exec(`INSERT INTO users VALUES (2, 'bo')`)
	named.want("2|BO|update")
	c.exec(`INSERT INTO users VALUES (1, 'x')`) // no longer in the view
	named.want("1|NULL|delete")
	c.exec(`DELETE FROM users WHERE id = 2`)
	named.want("2|NULL|delete")
	c.exec(`INSERT INTO users VALUES (3, 'cy')`)
	named.want("3|CY|insert")

	// A push query is the same subscription, with its select list.
	push := subscribe(t, n.PGAddr(), `SELECT name, id FROM named WHERE id > 2 EMIT CHANGES`, true)
	push.want("CY|3|insert")
	c.exec(`INSERT INTO users VALUES (4, 'dee'), (1, 'ann')`)
	push.want("DEE|4|insert")
	named.want("4|DEE|insert", "1|ANN|insert")

	// A subscription with a WHERE that goes on AS OF a position knows
	// which rows the client has there: a change of one is an update, one
	// that leaves the view a delete.
	rich := subscribe(t, n.PGAddr(), `SUBSCRIBE named WHERE id >= 4 WITH (snapshot = false)`, false)
	c.exec(`INSERT INTO users VALUES (5, 'eve')`)
	var pos string
	select {
	case r := <-rich.rows:
		if got := strings.Join(r[:3], "|"); got != "5|EVE|insert" {
			t.Fatalf("row %q, want 5|EVE|insert", got)
		}
		pos = r[len(r)-1]
	case <-time.After(30 * time.Second):
		t.Fatal("no row within 30s")
	}
	rich.stop()
	resumed := subscribe(t, n.PGAddr(), `SUBSCRIBE named WHERE id >= 4 AS OF '`+pos+`'`, true)
	c.exec(`INSERT INTO users VALUES (5, 'eva'), (4, 'x'), (6, 'fay')`)
	resumed.want("5|EVA|update", "4|NULL|delete", "6|FAY|insert")

	bad := []struct{ q, err string }{
		{`SUBSCRIBE users`, "cannot subscribe to table users"},
		{`SUBSCRIBE nope`, `relation "nope" does not exist`},
		{`SUBSCRIBE named WITH (snapshot = maybe)`, `invalid value "maybe" for option snapshot`},
		{`SUBSCRIBE named AS OF 'xyz'`, `invalid AS OF position "xyz"`},
		{`SELECT count(*) FROM named EMIT CHANGES`, "aggregate functions are not allowed"},
		{`SELECT * FROM named GROUP BY id EMIT CHANGES`, "a push query (EMIT CHANGES) reads one view or stream"},
	}
	for _, b := range bad {
		_, err := c.conn.Exec(ctx, b.q)
		if err == nil || !strings.Contains(err.Error(), b.err) {
			t.Errorf("%s: error %v, want %q", b.q, err, b.err)
		}
	}

	// A node that stops ends its subscriptions.
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*subscriber{regions, named, push} {
		for range s.rows {
		}
		if err := <-s.done; err == nil {
			t.Error("a subscription ended without an error when its node stopped")
		}
	}
}

// TestSubscribeLive follows a view's changes the ways clients without
// a streaming result API do: psql's COPY (SUBSCRIBE ...) TO STDOUT
// prints each change as it happens, and a cursor over SUBSCRIBE pages
// them with FETCH ... WITH (timeout), which returns what has come.
func TestSubscribeLive(t *testing.T) {
	n := startNode(t, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := sqlConn{t, ctx, connect(t, n.PGAddr())}
	c.exec(`CREATE STREAM clicks (page VARCHAR, ms INTEGER) WITH (kafka_topic = 'clicks', partitions = 2)`)
	c.exec(`CREATE TABLE pages AS SELECT page, count(*) AS n FROM clicks GROUP BY page`)
	c.exec(`INSERT INTO clicks VALUES ('/a', 5)`)
	waitQuery(t, c.conn, `SELECT page, n FROM pages`, "/a|1\n")

	path, err := exec.LookPath("psql")
	if err != nil {
		t.Fatalf("psql is not installed (CI installs postgresql-client): %v", err)
	}
	addr := n.PGAddr()
	host, port := addr[:strings.LastIndexByte(addr, ':')], addr[strings.LastIndexByte(addr, ':')+1:]
	// psql writes to a terminal line by line, and to a pipe in blocks:
	// stdbuf makes the pipe a terminal's.
	cmd := exec.Command("stdbuf", "-oL", path, "-X", "-h", host, "-p", port, "-U", "basin", "-d", "basin",
		"-c", `COPY (SELECT page, n FROM pages EMIT CHANGES) TO STDOUT WITH (FORMAT csv)`)
	cmd.Env = append(cmd.Environ(), "PGCONNECT_TIMEOUT=10")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			// page, n, _op; then _ts and _position, which vary.
			f := strings.Split(sc.Text(), ",")
			lines <- strings.Join(f[:min(3, len(f))], ",")
		}
		close(lines)
	}()
	next := func(want string) {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok || l != want {
				t.Fatalf("psql printed %q (open %v), want %q", l, ok, want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("psql printed nothing within 30s, want %q", want)
		}
	}
	next("/a,1,insert")
	c.exec(`INSERT INTO clicks VALUES ('/a', 7)`)
	next("/a,2,update")
	c.exec(`INSERT INTO clicks VALUES ('/b', 1)`)
	next("/b,1,insert")

	// A cursor: the snapshot, then nothing until a change comes.
	tx, err := c.conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `DECLARE c CURSOR FOR SUBSCRIBE pages`); err != nil {
		t.Fatal(err)
	}
	fetch := func(q string) string {
		t.Helper()
		rows, err := tx.Query(ctx, q, pgx.QueryResultFormats{pgx.TextFormatCode})
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		var got []string
		for rows.Next() {
			v := rows.RawValues()
			got = append(got, string(v[0])+"|"+string(v[1])+"|"+string(v[2]))
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		slices.Sort(got)
		return strings.Join(got, " ")
	}
	// The snapshot is a store's, at the changelog offset it reflects: a
	// change the store has not applied yet comes right after it, still
	// an insert.
	var first []string
	if !poll.Cond(30*time.Second, func() bool {
		if got := fetch(`FETCH 10 c WITH (timeout = '1s')`); got != "" {
			first = append(first, strings.Fields(got)...)
		}
		return len(first) >= 2
	}) || strings.Join(first, " ") != "/a|2|insert /b|1|insert" && strings.Join(first, " ") != "/b|1|insert /a|2|insert" {
		t.Fatalf("the snapshot and what follows are %q", first)
	}
	if got := fetch(`FETCH 10 c WITH (timeout = '10ms')`); got != "" {
		t.Fatalf("with no change, FETCH returned %q", got)
	}
	c.exec(`INSERT INTO clicks VALUES ('/b', 2)`)
	got := ""
	if !poll.Cond(30*time.Second, func() bool {
		got += fetch(`FETCH 10 c WITH (timeout = '1s')`)
		return got != ""
	}) || got != "/b|2|update" {
		t.Fatalf("after a change, FETCH returned %q", got)
	}
}

// TestListenView listens on a view's name with pgx: each change of the
// view is a notification whose payload is the row as JSON, with its op
// and position; a row too large for a payload is sent as its key.
func TestListenView(t *testing.T) {
	n := startNode(t, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := sqlConn{t, ctx, connect(t, n.PGAddr())}
	c.exec(`CREATE STREAM clicks (page VARCHAR, ms INTEGER) WITH (kafka_topic = 'clicks', partitions = 2)`)
	c.exec(`CREATE TABLE pages AS SELECT page, count(*) AS n, max(ms) AS slowest FROM clicks GROUP BY page`)
	l := connect(t, n.PGAddr())
	if _, err := l.Exec(ctx, `LISTEN pages`); err != nil {
		t.Fatal(err)
	}
	nextOn := func(channel string) map[string]any {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		var nt *pgconn.Notification
		for nt == nil || nt.Channel != channel && channel != "pages" {
			// Changes of pages come with late's: only late's are
			// awaited then.
			var err error
			if nt, err = l.WaitForNotification(wctx); err != nil {
				t.Fatal(err)
			}
		}
		if nt.Channel != channel {
			t.Fatalf("a notification on %q", nt.Channel)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(nt.Payload), &m); err != nil {
			t.Fatalf("payload %q: %v", nt.Payload, err)
		}
		if m["_position"] == "" || m["_position"] == nil {
			t.Fatalf("payload %q has no _position", nt.Payload)
		}
		delete(m, "_position")
		delete(m, "_ts")
		return m
	}
	next := func() map[string]any { t.Helper(); return nextOn("pages") }
	// The feed starts with the LISTEN: a change right after it is seen.
	if !poll.Cond(30*time.Second, func() bool { return len(n.engine.ListeningChannels()) == 1 }) {
		t.Fatal("no session listens")
	}
	c.exec(`INSERT INTO clicks VALUES ('/a', 5)`)
	if got := fmt.Sprint(next()); got != "map[_op:insert n:1 page:/a slowest:5]" {
		t.Fatalf("first notification %s", got)
	}
	c.exec(`INSERT INTO clicks VALUES ('/a', 9)`)
	if got := fmt.Sprint(next()); got != "map[_op:update n:2 page:/a slowest:9]" {
		t.Fatalf("second notification %s", got)
	}
	c.exec(`INSERT INTO clicks VALUES ('` + strings.Repeat("x", 9000) + `', 1)`)
	if got := fmt.Sprint(next()); got != "map[_op:insert _truncated:true page:"+strings.Repeat("x", 9000)+"]" {
		t.Fatalf("a large row's notification %.200s", got)
	}

	// A view created while its name has a listener is followed from its
	// first change; dropped and created again, the new one is.
	if _, err := l.Exec(ctx, `LISTEN late`); err != nil {
		t.Fatal(err)
	}
	c.exec(`CREATE TABLE late AS SELECT page, count(*) AS n FROM clicks WHERE ms > 100 GROUP BY page`)
	c.exec(`INSERT INTO clicks VALUES ('/b', 500)`)
	if got := fmt.Sprint(nextOn("late")); got != "map[_op:insert n:1 page:/b]" {
		t.Fatalf("the new view's notification %s", got)
	}
	c.exec(`DROP TABLE late`)
	c.exec(`CREATE TABLE late AS SELECT page, max(ms) AS top FROM clicks WHERE ms > 100 GROUP BY page`)
	if got := fmt.Sprint(nextOn("late")); got != "map[_op:insert page:/b top:500]" {
		t.Fatalf("the view created again, its notification %s", got)
	}
}

// TestSubscribeRecompute applies random upserts and deletes to a table
// under a grouped view (HAVING, retractions) and an ungrouped one
// (WHERE), and follows both with SUBSCRIBE: applying each change's op to
// a map (an insert of a key the map lacks, an update or delete of one it
// has, anything else an error) gives exactly the view's rows, as the
// view's query over the final table does.
func TestSubscribeRecompute(t *testing.T) {
	n := startNode(t, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := sqlConn{t, ctx, connect(t, n.PGAddr())}
	c.exec(`CREATE TABLE accounts (id BIGINT PRIMARY KEY, region VARCHAR, balance INTEGER) WITH (kafka_topic = 'accounts', partitions = 3)`)
	c.exec(`CREATE TABLE by_region AS SELECT region, count(*) AS n, sum(balance) AS total FROM accounts GROUP BY region HAVING sum(balance) > 0`)
	c.exec(`CREATE TABLE rich AS SELECT id, region, balance FROM accounts WHERE balance > 50`)
	groups := subscribe(t, n.PGAddr(), `SUBSCRIBE by_region`, true)
	rich := subscribe(t, n.PGAddr(), `SUBSCRIBE rich WITH (progress = false)`, true)

	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := mathrand.New(mathrand.NewPCG(uint64(seed), 0))
	regions := []string{"eu", "us", "apac", "latam"}
	type account struct {
		region  string
		balance int
	}
	table := map[int]account{} // the table as the statements leave it
	for range 40 {
		var vals []string
		batch := map[int]account{}
		for range 1 + rng.IntN(8) {
			id := rng.IntN(30)
			if rng.IntN(5) == 0 {
				if len(vals) > 0 {
					c.exec(`INSERT INTO accounts VALUES ` + strings.Join(vals, ", "))
					maps.Copy(table, batch)
					vals, batch = nil, map[int]account{}
				}
				c.exec(fmt.Sprintf(`DELETE FROM accounts WHERE id = %d`, id))
				delete(table, id)
				continue
			}
			a := account{regions[rng.IntN(len(regions))], rng.IntN(200) - 60}
			vals = append(vals, fmt.Sprintf("(%d, '%s', %d)", id, a.region, a.balance))
			batch[id] = a
		}
		if len(vals) > 0 {
			c.exec(`INSERT INTO accounts VALUES ` + strings.Join(vals, ", "))
			maps.Copy(table, batch)
		}
	}
	// The views' queries over the final table.
	sums := map[string][2]int{}
	var wantRich []string
	for id, a := range table {
		s := sums[a.region]
		sums[a.region] = [2]int{s[0] + 1, s[1] + a.balance}
		if a.balance > 50 {
			wantRich = append(wantRich, fmt.Sprintf("%d|%s|%d", id, a.region, a.balance))
		}
	}
	var wantGroups []string
	for r, s := range sums {
		if s[1] > 0 {
			wantGroups = append(wantGroups, fmt.Sprintf("%s|%d|%d", r, s[0], s[1]))
		}
	}
	slices.Sort(wantGroups)
	slices.Sort(wantRich)
	waitRows(t, c.conn, "by_region", `SELECT region, n, total FROM by_region`, slices.Clone(wantGroups))
	waitRows(t, c.conn, "rich", `SELECT id, region, balance FROM rich`, slices.Clone(wantRich))

	for _, f := range []struct {
		s    *subscriber
		keys int
		want []string
	}{{groups, 1, wantGroups}, {rich, 1, wantRich}} {
		state := map[string]string{}
		deadline := time.After(60 * time.Second)
		for !sameState(state, f.want) {
			select {
			case r, ok := <-f.s.rows:
				if !ok {
					t.Fatalf("the subscription ended: %v", <-f.s.done)
				}
				op, key, row := r[len(r)-1], strings.Join(r[:f.keys], "|"), strings.Join(r[:len(r)-1], "|")
				if err := applyOp(state, op, key, row); err != nil {
					t.Fatalf("%v (%q)", err, r)
				}
			case <-deadline:
				t.Fatalf("the subscriber's rows %v, want %v", state, f.want)
			}
		}
	}
}

// applyOp applies a subscription's change of key to state strictly: an
// insert of a key state lacks, an update or delete of one it has.
func applyOp(state map[string]string, op, key, row string) error {
	_, had := state[key]
	switch {
	case op == "insert" && !had, op == "update" && had:
		state[key] = row
	case op == "delete" && had:
		delete(state, key)
	default:
		return fmt.Errorf("%s of key %s, which the subscriber has: %v", op, key, had)
	}
	return nil
}

// sameState reports whether a subscriber's rows, by key, are want
// (sorted).
func sameState(state map[string]string, want []string) bool {
	return slices.Equal(slices.Sorted(maps.Values(state)), want)
}
