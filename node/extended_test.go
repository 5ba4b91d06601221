package node

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

// These tests drive the extended query protocol end to end: pgx in its
// extended modes, and raw pgproto3 for what pgx does not send (row
// limits).

// connectMode opens a pgx connection that uses mode for every query.
func connectMode(t *testing.T, addr string, mode pgx.QueryExecMode) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(fmt.Sprintf("postgres://basin@%s/basin?sslmode=disable", addr))
	if err != nil {
		t.Fatal(err)
	}
	cfg.DefaultQueryExecMode = mode
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("connecting to %s: %v", addr, err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

func extCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// sensor is a row of the sensors table.
type sensor struct {
	id   int64
	site *string
	temp *float64
	ok   *bool
	n    *int32
	at   *time.Time
}

func ptr[T any](v T) *T { return &v }

// sensors are the rows the tests insert: negative numbers, NaN and the
// infinities, timestamps with microseconds and before 1970, NULLs.
var sensors = []sensor{
	{1, ptr("north"), ptr(21.5), ptr(true), ptr(int32(7)), ptr(time.Date(2024, 2, 29, 13, 4, 5, 123456000, time.UTC))},
	{-2, ptr("south"), ptr(-40.25), ptr(false), ptr(int32(math.MinInt32)), ptr(time.Date(1969, 7, 20, 20, 17, 40, 1000, time.UTC))},
	{3, ptr("north"), ptr(math.NaN()), ptr(true), ptr(int32(math.MaxInt32)), ptr(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC))},
	{4, ptr("east"), ptr(math.Inf(1)), nil, nil, nil},
	{5, nil, ptr(math.Inf(-1)), ptr(false), ptr(int32(0)), ptr(time.Date(2038, 1, 19, 3, 14, 8, 999999000, time.UTC))},
	{math.MaxInt64, ptr("héllo, wörld"), nil, nil, ptr(int32(-1)), nil},
}

func (s sensor) String() string {
	f := func(p any) string {
		v := reflect.ValueOf(p)
		if v.IsNil() {
			return "NULL"
		}
		return fmt.Sprint(v.Elem().Interface())
	}
	at := "NULL"
	if s.at != nil {
		at = s.at.UTC().Format("2006-01-02 15:04:05.999999")
	}
	return fmt.Sprintf("%d|%s|%s|%s|%s|%s", s.id, f(s.site), f(s.temp), f(s.ok), f(s.n), at)
}

func sameFloat(a, b *float64) bool {
	if a == nil || b == nil {
		return a == b
	}
	return math.Float64bits(*a) == math.Float64bits(*b) || (math.IsNaN(*a) && math.IsNaN(*b))
}

func sameSensor(a, b sensor) bool {
	eq := func(x, y any) bool { return reflect.DeepEqual(x, y) }
	sameTime := (a.at == nil) == (b.at == nil) && (a.at == nil || a.at.Equal(*b.at))
	return a.id == b.id && eq(a.site, b.site) && sameFloat(a.temp, b.temp) && eq(a.ok, b.ok) && eq(a.n, b.n) && sameTime
}

func scanSensors(t *testing.T, rows pgx.Rows) []sensor {
	t.Helper()
	var out []sensor
	for rows.Next() {
		var s sensor
		if err := rows.Scan(&s.id, &s.site, &s.temp, &s.ok, &s.n, &s.at); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// setupSensors creates the sensors table and a view over a stream, and
// inserts sensors with parameterised INSERTs through the extended
// protocol (DescribeExec: the server infers every parameter's type from
// the column it goes into).
func setupSensors(t *testing.T, n *Node) {
	t.Helper()
	admin := connect(t, n.PGAddr())
	mustExec(t, admin, `CREATE TABLE sensors (id BIGINT PRIMARY KEY, site VARCHAR, temp DOUBLE, ok BOOLEAN, n INT, at TIMESTAMP)
		WITH (kafka_topic='sensors', value_format='json', partitions=3)`)
	mustExec(t, admin, `CREATE STREAM visits (id BIGINT KEY, site VARCHAR, ms BIGINT) WITH (kafka_topic='visits', value_format='json', partitions=2)`)
	mustExec(t, admin, `CREATE TABLE by_site AS SELECT site, COUNT(*) AS visits, SUM(ms) AS ms FROM visits GROUP BY site`)

	conn := connectMode(t, n.PGAddr(), pgx.QueryExecModeDescribeExec)
	ctx := extCtx(t)
	for _, s := range sensors {
		tag, err := conn.Exec(ctx, `INSERT INTO sensors (id, site, temp, ok, n, at) VALUES ($1, $2, $3, $4, $5, $6)`,
			s.id, s.site, s.temp, s.ok, s.n, s.at)
		if err != nil {
			t.Fatalf("insert %v: %v", s, err)
		}
		if tag.String() != "INSERT 0 1" {
			t.Fatalf("tag %q", tag)
		}
	}
	// Two rows in one statement, parameters inside expressions, and a
	// parameter typed by a cast.
	if _, err := conn.Exec(ctx, `INSERT INTO visits (id, site, ms) VALUES ($1, $2, $3 * 2), ($1 + 1, $2, $4::bigint)`,
		int64(1), "north", int64(50), int64(7)); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO visits (id, site, ms) VALUES ($1, $2, $3)`, int64(3), "south", int64(1)); err != nil {
		t.Fatal(err)
	}
	waitQuery(t, admin, `SELECT COUNT(*) FROM sensors`, fmt.Sprintf("%d\n", len(sensors)))
	waitQuery(t, admin, `SELECT site, visits, ms FROM by_site ORDER BY site`, "north|2|107\nsouth|1|1\n")
}

var allModes = []pgx.QueryExecMode{
	pgx.QueryExecModeCacheStatement,
	pgx.QueryExecModeCacheDescribe,
	pgx.QueryExecModeDescribeExec,
	pgx.QueryExecModeExec,
}

func TestExtendedQueries(t *testing.T) {
	n := startNode(t, t.TempDir())
	setupSensors(t, n)

	for _, mode := range allModes {
		t.Run(mode.String(), func(t *testing.T) {
			conn := connectMode(t, n.PGAddr(), mode)
			ctx := extCtx(t)
			const cols = `id, site, temp, ok, n, at`

			// Key lookup with $1 against the BIGINT key: every value
			// comes back exactly (binary for int8/float8/bool/timestamp
			// in the caching modes, text in Exec mode).
			for _, want := range sensors {
				rows, err := conn.Query(ctx, `SELECT `+cols+` FROM sensors WHERE id = $1`, want.id)
				if err != nil {
					t.Fatal(err)
				}
				got := scanSensors(t, rows)
				if len(got) != 1 || !sameSensor(got[0], want) {
					t.Errorf("id %d: got %v, want %v", want.id, got, want)
				}
			}
			// A key that is not there, and a NULL key: no rows.
			for _, k := range []any{int64(99), nil} {
				rows, err := conn.Query(ctx, `SELECT `+cols+` FROM sensors WHERE id = $1`, k)
				if err != nil {
					t.Fatal(err)
				}
				if got := scanSensors(t, rows); len(got) != 0 {
					t.Errorf("id %v: %v", k, got)
				}
			}

			// A scan with WHERE on non-key columns, sorted, with LIMIT $n.
			rows, err := conn.Query(ctx, `SELECT `+cols+` FROM sensors WHERE site = $1 AND temp <> $2 ORDER BY id DESC LIMIT $3`,
				"north", 0.5, int64(5))
			if err != nil {
				t.Fatal(err)
			}
			got := scanSensors(t, rows)
			if len(got) != 2 || got[0].id != 3 || got[1].id != 1 || rows.CommandTag().String() != "SELECT 2" {
				t.Errorf("north: %v (%s)", got, rows.CommandTag())
			}

			// The view, looked up by its VARCHAR key.
			var visits, ms int64
			if err := conn.QueryRow(ctx, `SELECT visits, ms FROM by_site WHERE site = $1`, "north").Scan(&visits, &ms); err != nil || visits != 2 || ms != 107 {
				t.Errorf("by_site north: %d %d %v", visits, ms, err)
			}

			// The relational engine with parameters: a join of a
			// subquery's key lookup ($1, pushed into the read of
			// sensors) with the view.
			var joined int64
			if err := conn.QueryRow(ctx, `SELECT count(*) FROM (SELECT id, site FROM sensors WHERE id = $1) s JOIN by_site b ON b.site = s.site AND b.visits > $2`,
				int64(1), int64(0)).Scan(&joined); err != nil || joined != 1 {
				t.Errorf("join with parameters: %d %v", joined, err)
			}

			// A parameter nothing types is text; one the client types
			// keeps its type.
			var s string
			if err := conn.QueryRow(ctx, `SELECT $1`, "just text").Scan(&s); err != nil || s != "just text" {
				t.Errorf("select $1: %q %v", s, err)
			}

			// Utility statements describe their columns.
			var setting string
			if err := conn.QueryRow(ctx, `SHOW basin.read_from`).Scan(&setting); err != nil || setting != "any" {
				t.Errorf("SHOW: %q %v", setting, err)
			}
			rows, err = conn.Query(ctx, `SHOW TABLES`)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for rows.Next() {
				vals, err := rows.Values()
				if err != nil {
					t.Fatal(err)
				}
				names = append(names, vals[0].(string))
			}
			if err := rows.Err(); err != nil || strings.Join(names, ",") != "by_site,sensors" {
				t.Errorf("SHOW TABLES: %v %v", names, err)
			}
		})
	}
}

// TestExtendedDescribe checks what Describe says about parameters and
// columns: types inferred from the plan.
func TestExtendedDescribe(t *testing.T) {
	n := startNode(t, t.TempDir())
	setupSensors(t, n)
	conn := connectMode(t, n.PGAddr(), pgx.QueryExecModeCacheStatement)
	ctx := extCtx(t)
	for _, c := range []struct {
		sql    string
		params []uint32
		cols   []uint32
	}{
		{`SELECT id, site FROM sensors WHERE id = $1`, []uint32{20}, []uint32{20, 25}},
		{`SELECT n, ok, at FROM sensors WHERE temp > $1 AND n = $2 AND ok = $3 AND at < $4`, []uint32{701, 23, 16, 1114}, []uint32{23, 16, 1114}},
		{`SELECT site FROM by_site WHERE site = $1 LIMIT $2 OFFSET $3`, []uint32{25, 20, 20}, []uint32{25}},
		{`SELECT $1, $2::bigint`, []uint32{25, 20}, []uint32{25, 20}},
		{`INSERT INTO sensors (id, temp, at) VALUES ($1, $2, $3)`, []uint32{20, 701, 1114}, nil},
		{`SHOW ALL`, nil, []uint32{25, 25}},
		{`EXPLAIN SELECT * FROM sensors WHERE id = $1`, nil, []uint32{25}},
		{`SET basin.read_from = 'any'`, nil, nil},
	} {
		sd, err := conn.Prepare(ctx, "", c.sql)
		if err != nil {
			t.Errorf("%s: %v", c.sql, err)
			continue
		}
		var cols []uint32
		for _, f := range sd.Fields {
			cols = append(cols, f.DataTypeOID)
		}
		if fmt.Sprint(sd.ParamOIDs) != fmt.Sprint(c.params) || fmt.Sprint(cols) != fmt.Sprint(c.cols) {
			t.Errorf("%s: params %v cols %v, want %v %v", c.sql, sd.ParamOIDs, cols, c.params, c.cols)
		}
	}
	// A declared parameter type is kept: int4 where the plan wants int8.
	sd, err := conn.PgConn().Prepare(ctx, "typed", `SELECT id FROM sensors WHERE id = $1`, []uint32{23})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(sd.ParamOIDs) != "[23]" {
		t.Errorf("declared int4: %v", sd.ParamOIDs)
	}
	res := conn.PgConn().ExecPrepared(ctx, "typed", [][]byte{{0, 0, 0, 3}}, []int16{1}, []int16{1}).Read()
	if res.Err != nil || len(res.Rows) != 1 || fmt.Sprintf("%x", res.Rows[0][0]) != "0000000000000003" {
		t.Errorf("int4 parameter for an int8 key: %v %x", res.Err, res.Rows)
	}
	// Two statements cannot be prepared as one.
	if _, err := conn.Prepare(ctx, "two", `SELECT 1; SELECT 2`); pgCode(err) != "42601" {
		t.Errorf("two statements: %v", err)
	}
}

func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// TestExtendedErrorsKeepConnection: failures at Parse, Bind and Execute
// inside pipelines, each followed by a working query.
func TestExtendedErrorsKeepConnection(t *testing.T) {
	n := startNode(t, t.TempDir())
	setupSensors(t, n)
	conn := connectMode(t, n.PGAddr(), pgx.QueryExecModeCacheStatement)
	ctx := extCtx(t)
	works := func() {
		t.Helper()
		var id int64
		if err := conn.QueryRow(ctx, `SELECT id FROM sensors WHERE id = $1`, int64(1)).Scan(&id); err != nil || id != 1 {
			t.Fatalf("connection unusable: %d %v", id, err)
		}
	}
	if _, err := conn.Exec(ctx, `SELECT nope FROM sensors WHERE id = $1`, 1); pgCode(err) != "42703" {
		t.Errorf("unknown column: %v", err)
	}
	works()
	if _, err := conn.Exec(ctx, `SELECT 10 / n FROM sensors WHERE id = $1`, int64(5)); pgCode(err) != "22012" {
		t.Errorf("division by zero: %v", err)
	}
	works()
	if _, err := conn.Exec(ctx, `SELECT id FROM sensors LIMIT $1`, int64(-1)); pgCode(err) != "2201W" {
		t.Errorf("negative limit: %v", err)
	}
	works()

	// A batch is one pipeline: the failure in the middle skips the rest
	// up to Sync.
	b := &pgx.Batch{}
	b.Queue(`SELECT id FROM sensors WHERE id = $1`, int64(1))
	b.Queue(`SELECT 10 / n FROM sensors WHERE id = $1`, int64(5))
	b.Queue(`INSERT INTO visits (id, site, ms) VALUES ($1, $2, $3)`, int64(9), "never", int64(1))
	br := conn.SendBatch(ctx, b)
	if _, err := br.Exec(); err != nil {
		t.Fatalf("batch 1: %v", err)
	}
	if _, err := br.Exec(); pgCode(err) != "22012" {
		t.Fatalf("batch 2: %v", err)
	}
	if _, err := br.Exec(); err == nil {
		t.Fatal("batch 3 ran after the failure")
	}
	_ = br.Close()
	works()
	var c int64
	if err := conn.QueryRow(ctx, `SELECT COUNT(*) FROM visits WHERE site = $1`, "never").Scan(&c); err != nil || c != 0 {
		t.Errorf("the skipped INSERT ran: %d %v", c, err)
	}

	// A plan whose relation was re-created with other columns refuses to
	// run; prepared again, it works.
	admin := connect(t, n.PGAddr())
	mustExec(t, admin, `CREATE TABLE t2 (id BIGINT PRIMARY KEY, v VARCHAR) WITH (kafka_topic='t2', value_format='json', partitions=1)`)
	if _, err := conn.Prepare(ctx, "t2", `SELECT * FROM t2 WHERE id = $1`); err != nil {
		t.Fatal(err)
	}
	mustExec(t, admin, `DROP TABLE t2`)
	mustExec(t, admin, `CREATE TABLE t2 (id BIGINT PRIMARY KEY, w BIGINT) WITH (kafka_topic='t2b', value_format='json', partitions=1)`)
	if _, err := conn.Exec(ctx, "t2", int64(1)); pgCode(err) != "0A000" {
		t.Errorf("re-created relation: %v", err)
	}
	if err := conn.Deallocate(ctx, "t2"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Prepare(ctx, "t2", `SELECT * FROM t2 WHERE id = $1`); err != nil {
		t.Fatal(err)
	}
	// The new table's tasks may still be starting.
	eventually(t, 20*time.Second, func() error {
		_, err := conn.Exec(ctx, "t2", int64(1))
		return err
	})
}

// rawConn is a protocol-level client.
type rawConn struct {
	t  *testing.T
	fe *pgproto3.Frontend
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = nc.SetDeadline(time.Now().Add(60 * time.Second))
	t.Cleanup(func() { nc.Close() })
	rc := &rawConn{t: t, fe: pgproto3.NewFrontend(nc, nc)}
	rc.fe.Send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30, Parameters: map[string]string{"user": "basin", "database": "basin"}})
	rc.flush()
	rc.until("ReadyForQuery")
	return rc
}

func (rc *rawConn) flush() {
	rc.t.Helper()
	if err := rc.fe.Flush(); err != nil {
		rc.t.Fatal(err)
	}
}

// until reads messages up to one of type name and returns them in
// compact form: "row <text values>", "suspended", "complete <tag>",
// "error <code>", or the message type.
func (rc *rawConn) until(name string) []string {
	rc.t.Helper()
	var out []string
	for {
		msg, err := rc.fe.Receive()
		if err != nil {
			rc.t.Fatal(err)
		}
		kind := reflect.TypeOf(msg).Elem().Name()
		switch m := msg.(type) {
		case *pgproto3.DataRow:
			var vals []string
			for _, v := range m.Values {
				vals = append(vals, string(v))
			}
			out = append(out, "row "+strings.Join(vals, "|"))
		case *pgproto3.PortalSuspended:
			out = append(out, "suspended")
		case *pgproto3.CommandComplete:
			out = append(out, "complete "+string(m.CommandTag))
		case *pgproto3.ErrorResponse:
			out = append(out, "error "+m.Code)
		case *pgproto3.ParameterStatus, *pgproto3.BackendKeyData, *pgproto3.AuthenticationOk:
		default:
			out = append(out, kind)
		}
		if kind == name {
			return out
		}
	}
}

// pullGoroutines counts the goroutines running a row-limited portal's
// pull query.
func pullGoroutines() int {
	buf := make([]byte, 1<<22)
	n := 0
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if strings.Contains(g, "basin/exec.startPull") {
			n++
		}
	}
	return n
}

// TestExtendedRowLimit sends Execute with a row limit: PortalSuspended,
// then the next Execute resumes where it stopped. A scan of a large table
// with a limit stops early: the query waits on its goroutine with rows
// unread rather than reading the table whole, and closing the portal
// ends it.
func TestExtendedRowLimit(t *testing.T) {
	n := startNode(t, t.TempDir())
	setupSensors(t, n)
	admin := connect(t, n.PGAddr())
	var values []string
	const big = 500
	for i := range big {
		values = append(values, fmt.Sprintf("(%d, 'bulk', %d)", 1000+i, i))
	}
	mustExec(t, admin, `CREATE TABLE bulk (id BIGINT PRIMARY KEY, site VARCHAR, v BIGINT) WITH (kafka_topic='bulk', value_format='json', partitions=4)`)
	mustExec(t, admin, `INSERT INTO bulk (id, site, v) VALUES `+strings.Join(values, ", "))
	waitQuery(t, admin, `SELECT COUNT(*) FROM bulk`, strconv.Itoa(big)+"\n")

	rc := dialRaw(t, n.PGAddr())
	// Portals end with their transaction: in a block they survive Sync.
	rc.fe.SendQuery(&pgproto3.Query{String: "BEGIN"})
	rc.flush()
	if got := rc.until("ReadyForQuery"); fmt.Sprint(got) != "[complete BEGIN ReadyForQuery]" {
		t.Fatalf("BEGIN: %q", got)
	}
	// A sorted query: suspended after 2, resumed for 2 more, then the
	// rest; each tag counts its own Execute's rows.
	rc.fe.SendParse(&pgproto3.Parse{Name: "s", Query: `SELECT id, site FROM sensors WHERE id < $1 ORDER BY id`})
	rc.fe.SendBind(&pgproto3.Bind{DestinationPortal: "p", PreparedStatement: "s", Parameters: [][]byte{[]byte("100")}})
	rc.fe.SendDescribe(&pgproto3.Describe{ObjectType: 'P', Name: "p"})
	rc.fe.SendExecute(&pgproto3.Execute{Portal: "p", MaxRows: 2})
	rc.fe.SendExecute(&pgproto3.Execute{Portal: "p", MaxRows: 2})
	rc.fe.SendSync(&pgproto3.Sync{})
	rc.flush()
	want := []string{"ParseComplete", "BindComplete", "RowDescription", "row -2|south", "row 1|north", "suspended",
		"row 3|north", "row 4|east", "suspended", "ReadyForQuery"}
	if got := rc.until("ReadyForQuery"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	rc.fe.SendExecute(&pgproto3.Execute{Portal: "p"})
	rc.fe.SendExecute(&pgproto3.Execute{Portal: "p"})
	rc.fe.SendSync(&pgproto3.Sync{})
	rc.flush()
	want = []string{"row 5|", "complete SELECT 1", "complete SELECT 0", "ReadyForQuery"}
	if got := rc.until("ReadyForQuery"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got  %q\nwant %q", got, want)
	}

	// A streaming scan of bulk, 3 rows at a time, twice; the portal then
	// holds a running query that has not read the table to its end.
	before := pullGoroutines()
	rc.fe.SendParse(&pgproto3.Parse{Name: "b", Query: `SELECT v FROM bulk WHERE site = $1`})
	rc.fe.SendBind(&pgproto3.Bind{DestinationPortal: "pb", PreparedStatement: "b", Parameters: [][]byte{[]byte("bulk")}})
	rc.fe.SendExecute(&pgproto3.Execute{Portal: "pb", MaxRows: 3})
	rc.fe.SendExecute(&pgproto3.Execute{Portal: "pb", MaxRows: 3})
	rc.fe.SendSync(&pgproto3.Sync{})
	rc.flush()
	got := rc.until("ReadyForQuery")
	if len(got) != 11 || got[5] != "suspended" || got[9] != "suspended" {
		t.Fatalf("bulk: %q", got)
	}
	if g := pullGoroutines(); g != before+1 {
		t.Fatalf("%d pull goroutines running, want %d", g, before+1)
	}
	// The rest, then Close: the goroutine is gone.
	rc.fe.SendExecute(&pgproto3.Execute{Portal: "pb"})
	rc.fe.SendClose(&pgproto3.Close{ObjectType: 'P', Name: "pb"})
	rc.fe.SendSync(&pgproto3.Sync{})
	rc.flush()
	got = rc.until("ReadyForQuery")
	if len(got) != big-6+3 || got[big-6] != fmt.Sprintf("complete SELECT %d", big-6) {
		t.Fatalf("bulk rest: %d messages, ends %q", len(got), got[max(0, len(got)-3):])
	}
	eventually(t, 10*time.Second, func() error {
		if g := pullGoroutines(); g != before {
			return fmt.Errorf("%d pull goroutines, want %d", g, before)
		}
		return nil
	})

	// Closing a suspended portal early stops its query.
	rc.fe.SendBind(&pgproto3.Bind{DestinationPortal: "pc", PreparedStatement: "b", Parameters: [][]byte{[]byte("bulk")}})
	rc.fe.SendExecute(&pgproto3.Execute{Portal: "pc", MaxRows: 1})
	rc.fe.SendClose(&pgproto3.Close{ObjectType: 'P', Name: "pc"})
	rc.fe.SendSync(&pgproto3.Sync{})
	rc.flush()
	if got := rc.until("ReadyForQuery"); len(got) != 5 || got[2] != "suspended" || got[3] != "CloseComplete" {
		t.Fatalf("early close: %q", got)
	}
	eventually(t, 10*time.Second, func() error {
		if g := pullGoroutines(); g != before {
			return fmt.Errorf("%d pull goroutines after Close, want %d", g, before)
		}
		return nil
	})

	// A suspended portal ends with its block.
	rc.fe.SendBind(&pgproto3.Bind{DestinationPortal: "pd", PreparedStatement: "b", Parameters: [][]byte{[]byte("bulk")}})
	rc.fe.SendExecute(&pgproto3.Execute{Portal: "pd", MaxRows: 1})
	rc.fe.SendSync(&pgproto3.Sync{})
	rc.fe.SendQuery(&pgproto3.Query{String: "COMMIT"})
	rc.fe.SendExecute(&pgproto3.Execute{Portal: "pd", MaxRows: 1})
	rc.fe.SendSync(&pgproto3.Sync{})
	rc.flush()
	rc.until("ReadyForQuery")
	if got := rc.until("ReadyForQuery"); fmt.Sprint(got) != "[complete COMMIT ReadyForQuery]" {
		t.Fatalf("COMMIT: %q", got)
	}
	if got := rc.until("ReadyForQuery"); fmt.Sprint(got) != "[error 34000 ReadyForQuery]" {
		t.Fatalf("portal after COMMIT: %q", got)
	}
	eventually(t, 10*time.Second, func() error {
		if g := pullGoroutines(); g != before {
			return fmt.Errorf("%d pull goroutines after COMMIT, want %d", g, before)
		}
		return nil
	})

	// Outside a block, Sync ends the portal.
	rc.fe.SendBind(&pgproto3.Bind{DestinationPortal: "pe", PreparedStatement: "b", Parameters: [][]byte{[]byte("bulk")}})
	rc.fe.SendExecute(&pgproto3.Execute{Portal: "pe", MaxRows: 1})
	rc.fe.SendSync(&pgproto3.Sync{})
	rc.fe.SendExecute(&pgproto3.Execute{Portal: "pe", MaxRows: 1})
	rc.fe.SendSync(&pgproto3.Sync{})
	rc.flush()
	rc.until("ReadyForQuery")
	if got := rc.until("ReadyForQuery"); fmt.Sprint(got) != "[error 34000 ReadyForQuery]" {
		t.Fatalf("portal after Sync: %q", got)
	}
	eventually(t, 10*time.Second, func() error {
		if g := pullGoroutines(); g != before {
			return fmt.Errorf("%d pull goroutines after Sync, want %d", g, before)
		}
		return nil
	})

	// And a suspended portal left open, in a block, when the client goes
	// away.
	rc2 := dialRaw(t, n.PGAddr())
	rc2.fe.SendQuery(&pgproto3.Query{String: "BEGIN"})
	rc2.flush()
	rc2.until("ReadyForQuery")
	rc2.fe.SendParse(&pgproto3.Parse{Query: `SELECT v FROM bulk`})
	rc2.fe.SendBind(&pgproto3.Bind{})
	rc2.fe.SendExecute(&pgproto3.Execute{MaxRows: 1})
	rc2.fe.SendSync(&pgproto3.Sync{})
	rc2.flush()
	rc2.until("ReadyForQuery")
	rc2.fe.Send(&pgproto3.Terminate{})
	rc2.flush()
	eventually(t, 10*time.Second, func() error {
		if g := pullGoroutines(); g != before {
			return fmt.Errorf("%d pull goroutines after the client left, want %d", g, before)
		}
		return nil
	})
}
