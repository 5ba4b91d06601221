package planner

import "github.com/basindb/basin/catalog"

// The time functions, as Postgres 15 types them (eval/timefuncs.go and
// eval/timefuncs2.go compute them). now() and current_timestamp stay
// TIMESTAMP (basin's documented choice, Postgres gives timestamptz), and
// so do the other statement-time functions, so they compare with
// TIMESTAMP columns as now() does; date_part and EXTRACT give double
// precision.

func init() {
	t, i, d, b := catalog.Varchar, catalog.Int, catalog.Double, catalog.Boolean
	ts, tz, dt, tm, iv := catalog.Timestamp, catalog.TimestampTZ, catalog.Date, catalog.Time, catalog.Interval
	overloaded("to_char", ov(t, ts, t), ov(t, tz, t), ov(t, iv, t), ov(t, i, t), ov(t, catalog.BigInt, t), ov(t, d, t))
	overloaded("to_timestamp", ov(tz, d), ov(tz, t, t))
	overloaded("to_date", ov(dt, t, t))
	overloaded("age", ov(iv, ts, ts), ov(iv, tz, tz), ov(iv, ts), ov(iv, tz))
	overloaded("make_interval", ov(iv), ov(iv, i), ov(iv, i, i), ov(iv, i, i, i), ov(iv, i, i, i, i), ov(iv, i, i, i, i, i),
		ov(iv, i, i, i, i, i, i), ov(iv, i, i, i, i, i, i, d))
	overloaded("make_date", ov(dt, i, i, i))
	overloaded("make_time", ov(tm, i, i, d))
	overloaded("make_timestamp", ov(ts, i, i, i, i, i, d))
	overloaded("make_timestamptz", ov(tz, i, i, i, i, i, d), ov(tz, i, i, i, i, i, d, t))
	overloaded("date_trunc", ov(ts, t, ts), ov(tz, t, tz), ov(tz, t, dt), ov(tz, t, tz, t), ov(iv, t, iv))
	overloaded("date_part", ov(d, t, ts), ov(d, t, tz), ov(d, t, dt), ov(d, t, tm), ov(d, t, iv))
	// EXTRACT gives NUMERIC, as in Postgres 14 and later.
	n := catalog.Decimal
	overloaded("extract", ov(n, t, ts), ov(n, t, tz), ov(n, t, dt), ov(n, t, tm), ov(n, t, iv))
	overloaded("date_bin", ov(ts, iv, ts, ts), ov(tz, iv, tz, tz))
	overloaded("justify_days", ov(iv, iv))
	overloaded("justify_hours", ov(iv, iv))
	overloaded("justify_interval", ov(iv, iv))
	overloaded("isfinite", ov(b, ts), ov(b, tz), ov(b, dt), ov(b, iv))
	for name, r := range map[string]catalog.Type{
		"transaction_timestamp": tz, "statement_timestamp": tz, "clock_timestamp": tz, "localtimestamp": ts,
		"current_date": dt, "current_time": tm, "localtime": tm,
	} {
		overloaded(name, ov(r))
	}
}

// isTimeSeries reports whether generate_series's arguments are times:
// generate_series(start, stop, step interval) over TIMESTAMP,
// TIMESTAMPTZ or DATE (which counts as TIMESTAMPTZ, as in Postgres).
func isTimeSeries(args []Scalar) bool {
	for _, a := range args {
		switch a.Type() {
		case catalog.Timestamp, catalog.TimestampTZ, catalog.Date, catalog.Interval:
			return true
		}
	}
	return false
}

func bindTimeSeries(args []Scalar, pos int) ([]Scalar, catalog.Type, []catalog.Column, error) {
	ts, tz, iv := catalog.Timestamp, catalog.TimestampTZ, catalog.Interval
	// timestamptz first: a DATE or an untyped literal takes it, as in
	// Postgres, where it is the preferred type.
	args, t, err := resolveOverload("generate_series", []overload{ov(tz, tz, tz, iv), ov(ts, ts, ts, iv)}, args, pos)
	if err != nil {
		return nil, 0, nil, err
	}
	return args, t, nil, nil
}
