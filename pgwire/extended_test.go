package pgwire

import (
	"context"
	"errors"
	"math"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

// extendedModes are pgx's query modes that use the extended protocol.
// CacheStatement (the default) and CacheDescribe prepare once and ask for
// binary results where pgx knows the type; DescribeExec describes the
// unnamed statement each time; Exec sends text parameters with no types
// and reads text results.
var extendedModes = []pgx.QueryExecMode{
	pgx.QueryExecModeCacheStatement,
	pgx.QueryExecModeCacheDescribe,
	pgx.QueryExecModeDescribeExec,
	pgx.QueryExecModeExec,
}

// startExtendedServer is startServer that also checks, after the server
// closed, that every portal the fake backend bound was closed.
func startExtendedServer(t *testing.T) *testServer {
	t.Helper()
	before := fakePortalsOpen.Load()
	// Registered first, so it runs after startServer's Close.
	t.Cleanup(func() {
		if n := fakePortalsOpen.Load() - before; n != 0 {
			t.Errorf("%d portals left open after Close", n)
		}
	})
	return startServer(t, Options{})
}

func (ts *testServer) connectMode(t *testing.T, mode pgx.QueryExecMode) *pgx.Conn {
	t.Helper()
	cfg := ts.pgxConfig(t)
	cfg.DefaultQueryExecMode = mode
	return ts.connectConfig(t, cfg)
}

// TestPgxExtendedTypes reads one value of every basin type, and NULLs, in
// each extended mode: binary results where pgx asks for them, text in
// Exec mode. The decoded values must be exact.
func TestPgxExtendedTypes(t *testing.T) {
	ts := startExtendedServer(t)
	for _, mode := range extendedModes {
		t.Run(mode.String(), func(t *testing.T) {
			conn := ts.connectMode(t, mode)
			ctx := testCtx(t)
			rows, err := conn.Query(ctx, "types")
			if err != nil {
				t.Fatal(err)
			}
			var (
				b  bool
				i  int32
				n  int64
				f  float64
				s  string
				tm time.Time
				e  string
			)
			if !rows.Next() {
				t.Fatalf("no first row: %v", rows.Err())
			}
			wantFormat := int16(1)
			if mode == pgx.QueryExecModeExec {
				wantFormat = 0
			}
			if fd := rows.FieldDescriptions()[2]; fd.Format != wantFormat || fd.DataTypeOID != 20 {
				t.Errorf("int8 field = %+v, want format %d", fd, wantFormat)
			}
			if err := rows.Scan(&b, &i, &n, &f, &s, &tm, &e); err != nil {
				t.Fatal(err)
			}
			if b != true || i != -42 || n != math.MaxInt64 || f != 0.1 || s != "héllo, world" || !tm.Equal(typesTime) || e != "" {
				t.Errorf("row 1 = %v %v %v %v %q %v %q", b, i, n, f, s, tm, e)
			}
			if !rows.Next() {
				t.Fatalf("no second row: %v", rows.Err())
			}
			vals, err := rows.Values()
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range vals {
				if v != nil {
					t.Errorf("row 2 column %d = %v, want NULL", i+1, v)
				}
			}
			if rows.Next() {
				t.Fatal("a third row")
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			if tag := rows.CommandTag().String(); tag != "SELECT 2" {
				t.Errorf("tag %q", tag)
			}

			// Every float, bit for bit (NaN as NaN, -0 as -0).
			rows, err = conn.Query(ctx, "floats")
			if err != nil {
				t.Fatal(err)
			}
			for k := 0; rows.Next(); k++ {
				c := floatCases[k]
				var f float64
				if err := rows.Scan(&f); err != nil {
					t.Fatal(err)
				}
				if math.Float64bits(f) != math.Float64bits(c.f) && !(math.IsNaN(f) && math.IsNaN(c.f)) {
					t.Errorf("%v: decoded %v", c.f, f)
				}
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestPgxExtendedParams sends parameters of every type in each mode
// (binary where pgx chooses it, text in Exec mode) and reads them back.
func TestPgxExtendedParams(t *testing.T) {
	ts := startExtendedServer(t)
	tm := time.Date(1999, 12, 31, 23, 59, 58, 999999000, time.UTC)
	for _, mode := range extendedModes {
		t.Run(mode.String(), func(t *testing.T) {
			conn := ts.connectMode(t, mode)
			ctx := testCtx(t)
			for _, c := range []struct {
				b  bool
				i  int32
				n  int64
				f  float64
				s  string
				tm time.Time
			}{
				{true, -7, math.MinInt64, math.Inf(-1), "héllo", tm},
				{false, math.MaxInt32, 42, -0.5, "", time.Date(2024, 2, 29, 0, 0, 0, 1000, time.UTC)},
				{false, 0, -1, 1e-300, "it's", time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)},
			} {
				var (
					b  bool
					i  int32
					n  int64
					f  float64
					s  string
					gt time.Time
				)
				err := conn.QueryRow(ctx, "params bool int4 int8 float8 text timestamp", c.b, c.i, c.n, c.f, c.s, c.tm).
					Scan(&b, &i, &n, &f, &s, &gt)
				if err != nil {
					t.Fatal(err)
				}
				if b != c.b || i != c.i || n != c.n || math.Float64bits(f) != math.Float64bits(c.f) || s != c.s || !gt.Equal(c.tm) {
					t.Errorf("sent %v %v %v %v %q %v, got %v %v %v %v %q %v", c.b, c.i, c.n, c.f, c.s, c.tm, b, i, n, f, s, gt)
				}
			}
			// NULLs, and a parameter nobody typed (text).
			var (
				nb *bool
				nn *int64
				s  string
			)
			if err := conn.QueryRow(ctx, "params bool int8 any", nil, nil, "free").Scan(&nb, &nn, &s); err != nil {
				t.Fatal(err)
			}
			if nb != nil || nn != nil || s != "free" {
				t.Errorf("got %v %v %q", nb, nn, s)
			}
		})
	}
}

// TestPgxPreparedByName prepares named statements, runs them many times
// (each Bind replaces the unnamed portal), and deallocates them.
func TestPgxPreparedByName(t *testing.T) {
	ts := startExtendedServer(t)
	conn := ts.connectMode(t, pgx.QueryExecModeCacheStatement)
	ctx := testCtx(t)
	sd, err := conn.Prepare(ctx, "count", "stream $1")
	if err != nil {
		t.Fatal(err)
	}
	if len(sd.ParamOIDs) != 1 || sd.ParamOIDs[0] != 20 || len(sd.Fields) != 2 {
		t.Fatalf("description %+v", sd)
	}
	for k := range int64(50) {
		rows, err := conn.Query(ctx, "count", k)
		if err != nil {
			t.Fatal(err)
		}
		got := 0
		for rows.Next() {
			got++
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if got != int(k) || rows.CommandTag().RowsAffected() != k {
			t.Fatalf("stream %d: %d rows, tag %q", k, got, rows.CommandTag())
		}
	}
	// Preparing the same name again is 42P05; pgx reports it.
	if _, err := conn.PgConn().Prepare(ctx, "count", "select 1", nil); pgError(t, err).Code != "42P05" {
		t.Fatalf("duplicate prepare: %v", err)
	}
	if err := conn.Deallocate(ctx, "count"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.PgConn().Prepare(ctx, "count", "select 1", nil); err != nil {
		t.Fatalf("prepare after deallocate: %v", err)
	}
}

// TestPgxExtendedErrors: a statement that fails to prepare, one that
// fails while running, and a batch with a failure in the middle all
// leave the connection usable.
func TestPgxExtendedErrors(t *testing.T) {
	ts := startExtendedServer(t)
	for _, mode := range extendedModes {
		t.Run(mode.String(), func(t *testing.T) {
			conn := ts.connectMode(t, mode)
			ctx := testCtx(t)
			if pe := pgError(t, queryErr(ctx, conn, "boom", 1)); pe.Code != "42601" || pe.Position != 1 {
				t.Errorf("boom: %+v", pe)
			}
			checkSelectOne(t, conn)

			rows, err := conn.Query(ctx, "partial")
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for rows.Next() {
				n++
			}
			if pe := pgError(t, rows.Err()); pe.Code != "22012" || n != 1 {
				t.Errorf("partial: %d rows, %+v", n, pe)
			}
			checkSelectOne(t, conn)

			// A bad parameter value fails at Bind.
			if err := queryErr(ctx, conn, "stream $1", "many"); err == nil {
				t.Fatal("stream $1 with 'many' succeeded")
			}
			checkSelectOne(t, conn)

			// A batch: pgx pipelines every statement up to one Sync; the
			// failure skips the rest and reports each as failed.
			b := &pgx.Batch{}
			b.Queue("stream 2")
			b.Queue("partial")
			b.Queue("select 1")
			br := conn.SendBatch(ctx, b)
			if _, err := br.Exec(); err != nil {
				t.Fatalf("batch 1: %v", err)
			}
			if _, err := br.Exec(); pgError(t, err).Code != "22012" {
				t.Fatalf("batch 2: %v", err)
			}
			if _, err := br.Exec(); err == nil {
				t.Fatal("batch 3 ran after the failure")
			}
			if err := br.Close(); err == nil {
				t.Fatal("batch close: no error")
			}
			checkSelectOne(t, conn)
		})
	}
}

// TestPgxExtendedCancel cancels a running Execute with a CancelRequest:
// 57014, and the connection goes on.
func TestPgxExtendedCancel(t *testing.T) {
	ts := startExtendedServer(t)
	for _, mode := range extendedModes {
		t.Run(mode.String(), func(t *testing.T) {
			conn := ts.connectMode(t, mode)
			ctx, cancel := context.WithCancel(testCtx(t))
			errc := make(chan error, 1)
			go func() { errc <- queryErr(ctx, conn, "slow") }()
			ts.waitStarted(t, "slow")
			cancel()
			err := <-errc
			if !errors.Is(err, context.Canceled) {
				var pe *pgconn.PgError
				if !errors.As(err, &pe) || pe.Code != "57014" {
					t.Fatalf("cancelled query: %v", err)
				}
			}
			checkSelectOne(t, conn)
		})
	}
}

// TestExtendedStreamsInBatches runs a large portal without a limit and
// one with a limit, through pgproto3 directly: rows arrive before the
// portal completes, and a suspended portal resumes exactly.
func TestExtendedStreamsInBatches(t *testing.T) {
	ts := startExtendedServer(t)
	nc := ts.dial(t)
	fe := pgproto3.NewFrontend(nc, nc)
	fe.Send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30, Parameters: map[string]string{"user": "basin"}})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	receiveUntil(t, fe, "ReadyForQuery")

	const total = 100000
	fe.SendParse(&pgproto3.Parse{Name: "big", Query: "stream 100000"})
	fe.SendBind(&pgproto3.Bind{DestinationPortal: "p", PreparedStatement: "big", ResultFormatCodes: []int16{1, 0}})
	// Batches of a prime size, so the last one is short.
	const batch = 7919
	next := int64(0)
	for {
		fe.SendExecute(&pgproto3.Execute{Portal: "p", MaxRows: batch})
		fe.Send(&pgproto3.Flush{})
		if err := fe.Flush(); err != nil {
			t.Fatal(err)
		}
		got := 0
		done := false
	batchLoop:
		for {
			msg, err := fe.Receive()
			if err != nil {
				t.Fatal(err)
			}
			switch m := msg.(type) {
			case *pgproto3.ParseComplete, *pgproto3.BindComplete:
			case *pgproto3.DataRow:
				v := m.Values[0]
				n := int64(0)
				for _, b := range v {
					n = n<<8 | int64(b)
				}
				if len(v) != 8 || n != next || string(m.Values[1]) != "row-"+itoa(next) {
					t.Fatalf("row %d = %x %q", next, v, m.Values[1])
				}
				next++
				got++
			case *pgproto3.PortalSuspended:
				if got != batch {
					t.Fatalf("suspended after %d rows, want %d", got, batch)
				}
				break batchLoop
			case *pgproto3.CommandComplete:
				if want := "SELECT " + itoa(int64(got)); string(m.CommandTag) != want {
					t.Fatalf("tag %q, want %q", m.CommandTag, want)
				}
				done = true
				break batchLoop
			default:
				t.Fatalf("unexpected %T", msg)
			}
		}
		if done {
			break
		}
	}
	if next != total {
		t.Fatalf("%d rows, want %d", next, total)
	}
	fe.SendClose(&pgproto3.Close{ObjectType: 'P', Name: "p"})
	fe.SendSync(&pgproto3.Sync{})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	receiveUntil(t, fe, "ReadyForQuery")
}

// queryErr runs a query, reads all its rows and returns its error.
func queryErr(ctx context.Context, conn *pgx.Conn, sql string, args ...any) error {
	rows, err := conn.Query(ctx, sql, args...)
	if err != nil {
		return err
	}
	for rows.Next() {
	}
	return rows.Err()
}

// receiveUntil reads messages until one of type name arrives; an error
// response before it fails the test.
func receiveUntil(t *testing.T, fe *pgproto3.Frontend, name string) {
	t.Helper()
	for {
		msg, err := fe.Receive()
		if err != nil {
			t.Fatal(err)
		}
		if e, ok := msg.(*pgproto3.ErrorResponse); ok {
			t.Fatalf("error: %s %s", e.Code, e.Message)
		}
		if reflect.TypeOf(msg).Elem().Name() == name {
			return
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
