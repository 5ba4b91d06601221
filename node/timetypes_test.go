package node

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/basindb/basin/internal/pgserver"
)

// TestDifferentialTimeTypes checks DATE, TIME, TIMESTAMPTZ and INTERVAL
// against PostgreSQL 15: the same statements, in the same session time
// zones, must give the same text (or the same SQLSTATE) in both.
func TestDifferentialTimeTypes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pg := pgserver.Start(t)
	pconn, err := pgx.Connect(ctx, pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer pconn.Close(context.Background())
	n := startNode(t, t.TempDir())
	bconn := connect(t, n.PGAddr())

	// The simple protocol: text results, and no prepared statement
	// (Postgres folds a TIMESTAMPTZ literal when it plans, and keeps the
	// plan across a change of TimeZone).
	answer := func(conn *pgx.Conn, q string) string {
		rows, err := conn.Query(ctx, q, pgx.QueryExecModeSimpleProtocol)
		if err != nil {
			return "error " + sqlState(err)
		}
		defer rows.Close()
		out := ""
		for rows.Next() {
			for i, v := range rows.RawValues() {
				if i > 0 {
					out += "|"
				}
				if v == nil {
					out += "NULL"
				} else {
					out += string(v)
				}
			}
			out += "\n"
		}
		if err := rows.Err(); err != nil {
			return "error " + sqlState(err)
		}
		return out
	}
	exprs := []string{
		// Input and output.
		"DATE '2024-01-02'", "'01/02/2024'::date", "'20240102'::date", "'0044-03-15 BC'::date", "'2024-01-02T10:00'::date",
		"TIME '13:04:05.5'", "'24:00:00'::time", "'13:04'::time", "'2024-01-02 13:04:05'::time", "'00:00:00.0000015'::time",
		"TIMESTAMPTZ '2024-01-02 03:04:05.123'", "'2024-01-02T03:04:05Z'::timestamptz", "'2024-01-02 03:04:05+02'::timestamptz",
		"'2024-01-02 03:04:05-05:30'::timestamptz", "'2024-07-02 03:04:05 Europe/Paris'::timestamptz", "'2024-07-01'::timestamptz",
		"'2024-03-10 02:30'::timestamptz", "'2024-11-03 01:30'::timestamptz", "'2024-03-31 02:30'::timestamptz", "'2024-10-27 02:30'::timestamptz",
		"INTERVAL '1 day'", "INTERVAL '2 hours 30 minutes'", "INTERVAL '1 year 2 months'", "INTERVAL '3 days 04:05:06'",
		"INTERVAL '-1 day +02:00'", "INTERVAL '@ 1 hour'", "INTERVAL 'P1DT2H'", "INTERVAL 'P1Y2M3DT4H5M6.5S'", "INTERVAL '1 week'",
		"INTERVAL '90 seconds'", "INTERVAL '1.5 hours'", "INTERVAL '1.5 days'", "INTERVAL '1.5 months'", "INTERVAL '1.5 years'",
		"INTERVAL '1 day ago'", "INTERVAL '-00:00:01.5'", "INTERVAL '100 hours'", "INTERVAL '1 day -1 hour'", "INTERVAL '3' DAY",
		"interval '1' hour", "INTERVAL '0'", "INTERVAL '-1 year -2 mons'", "INTERVAL '2 decades 1 century'",
		// Casts.
		"TIMESTAMP '2024-01-02 10:00'::timestamptz", "TIMESTAMPTZ '2024-01-02 23:30Z'::timestamp", "TIMESTAMPTZ '2024-01-02 23:30Z'::date",
		"TIMESTAMPTZ '2024-01-02 23:30Z'::time", "DATE '2024-03-31'::timestamptz", "TIMESTAMP '2024-01-02 10:00:01.5'::time",
		"INTERVAL '1 day 02:00'::time", "TIME '10:00'::interval", "DATE '2024-01-02'::text", "INTERVAL '1 mon'::text",
		"TIMESTAMPTZ '2024-01-02 23:30Z'::text",
		// Arithmetic.
		"DATE '2024-02-28' + 1", "DATE '2024-03-01' - 1", "DATE '2024-03-01' - DATE '2024-01-01'", "DATE '2024-01-02' + TIME '10:00'",
		"DATE '2024-01-31' + INTERVAL '1 month'", "TIMESTAMP '2024-03-31 10:00' - INTERVAL '1 mon'", "TIMESTAMP '2024-01-01' - TIMESTAMP '2023-12-30 12:00'",
		"TIMESTAMPTZ '2024-03-30 12:00' + INTERVAL '1 day'", "TIMESTAMPTZ '2024-03-30 12:00' + INTERVAL '24 hours'",
		"TIMESTAMPTZ '2024-10-26 12:00' + INTERVAL '1 day 1 hour'", "TIMESTAMPTZ '2024-01-31 12:00' + INTERVAL '1 mon'",
		"TIMESTAMPTZ '2024-03-31 12:00' - TIMESTAMPTZ '2024-03-30 12:00'", "TIME '23:00' + INTERVAL '2 hours'", "TIME '10:00' - TIME '12:30'",
		"INTERVAL '1 day' * 1.5", "INTERVAL '1 mon' / 3", "INTERVAL '3 days 04:00' / 7", "-INTERVAL '1 day 02:00'",
		"INTERVAL '1 day' - INTERVAL '25 hours'", "2 * INTERVAL '1 hour 30 minutes'", "INTERVAL '1 year' + INTERVAL '-13 months'",
		// Comparison.
		"INTERVAL '1 mon' = INTERVAL '30 days'", "INTERVAL '1 year' > INTERVAL '364 days'", "DATE '2024-01-02' < TIMESTAMP '2024-01-02 00:00:01'",
		"DATE '2024-01-02' = TIMESTAMPTZ '2024-01-02 00:00'", "TIMESTAMP '2024-01-02 10:00' = TIMESTAMPTZ '2024-01-02 10:00'",
		// Time zones.
		"TIMESTAMPTZ '2024-01-02 08:30Z' AT TIME ZONE 'Europe/Paris'", "TIMESTAMP '2024-01-02 08:30' AT TIME ZONE 'America/New_York'",
		"timezone('Asia/Kolkata', TIMESTAMPTZ '2024-01-02 08:30Z')", "TIMESTAMPTZ '2024-01-02 08:30Z' AT TIME ZONE '+02'",
		"current_setting('TimeZone')",
		// Errors.
		"DATE '2024-02-30'", "'x'::date", "'25:00'::time", "INTERVAL '1 fortnight'", "INTERVAL '1:99'", "DATE '5874897-12-31' + 1",
		"'2024-01-02 03:04 Mars/Olympus'::timestamptz", "DATE '2024-01-01' + DATE '2024-01-02'", "TIMESTAMPTZ '2024-01-01' AT TIME ZONE 'Mars/Olympus'",
	}
	for _, zone := range []string{"UTC", "Europe/Paris", "America/New_York", "Asia/Kolkata", "UTC+2"} {
		for _, conn := range []*pgx.Conn{pconn, bconn} {
			if _, err := conn.Exec(ctx, "SET TIME ZONE '"+zone+"'"); err != nil {
				t.Fatal(err)
			}
		}
		for _, e := range exprs {
			q := "SELECT " + e
			want, got := answer(pconn, q), answer(bconn, q)
			if got != want {
				t.Errorf("TimeZone %s: %s\nbasin:    %q\npostgres: %q", zone, q, got, want)
			}
		}
	}
}

// TestTimeTypeParams sends DATE, TIME, TIMESTAMPTZ and INTERVAL
// parameters as pgx encodes them (binary for Go times and pgtype
// values, text for strings) and reads the results in both formats.
func TestTimeTypeParams(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := startNode(t, t.TempDir())
	conn := connect(t, n.PGAddr())
	if _, err := conn.Exec(ctx, "SET TIME ZONE 'Asia/Kolkata'"); err != nil {
		t.Fatal(err)
	}
	q := "SELECT $1::date + 1, $2::timestamptz, $3::interval * 2, $4::time, $5::timestamptz, $6::date[]"
	args := []any{time.Date(2024, 2, 28, 0, 0, 0, 0, time.UTC), time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC),
		pgtype.Interval{Months: 1, Days: 2, Microseconds: 3_000_000, Valid: true}, "13:04:05.5", "2024-01-02 10:00",
		[]time.Time{time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC)}}
	rows, err := conn.Query(ctx, q, append([]any{pgx.QueryResultFormats{pgx.TextFormatCode}}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		for _, v := range rows.RawValues() {
			got = append(got, string(v))
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	want := []string{"2024-02-29", "2024-01-02 08:34:05+05:30", "2 mons 4 days 00:00:06", "13:04:05.5", "2024-01-02 10:00:00+05:30", "{2024-01-02}"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("text results %q, want %q", got, want)
	}
	// The same values in binary, as pgx decodes them.
	var d, ts, ts2 time.Time
	var iv pgtype.Interval
	var tod pgtype.Time
	var ds []time.Time
	if err := conn.QueryRow(ctx, q, args...).Scan(&d, &ts, &iv, &tod, &ts2, &ds); err != nil {
		t.Fatal(err)
	}
	if !d.Equal(time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC)) || !ts.Equal(args[1].(time.Time)) ||
		iv != (pgtype.Interval{Months: 2, Days: 4, Microseconds: 6_000_000, Valid: true}) || tod.Microseconds != 47045500000 ||
		!ts2.Equal(time.Date(2024, 1, 2, 4, 30, 0, 0, time.UTC)) || len(ds) != 1 || !ds[0].Equal(time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("binary results %v %v %v %v %v %v", d, ts, iv, tod, ts2, ds)
	}
}

func sqlState(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return err.Error()
}
