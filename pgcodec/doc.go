// Package pgcodec is the PostgreSQL wire format of basin's values: for
// each catalog.Type, its type length, its text and binary encodings (what
// the type's output and send functions produce), the decoding of bind
// parameters by the OID and format a client sends them in (the input and
// receive functions), the decoding of rows another basin node sends
// back, the text form of arrays, DataRow framing, and the Postgres epoch.
// It knows bytes and Go values, never messages' flow or SQL.
//
// # Why the boundary is here
//
// Three paths write or read these bytes, and they must agree to the
// byte: pgwire encodes results and decodes parameters; pull's raw-row
// path (pull/wire.go) encodes stored rows straight into DataRows and
// passes rows a peer sent on as they came; node's forwarded reads decode
// what a peer answers. Each had its own copy of the epoch and of some
// encoders; here there is one, so a format fixed once is fixed for all,
// and pgwire imports no engine package to get it (planner calls
// ParseArray and CastText here, not the reverse).
//
// pgcodec imports catalog (the types), internal/pgerr (the SQLSTATEs
// a bad value gets), internal/numeric and internal/jsonb (those types'
// text and binary forms) and nothing else of basin; never planner, exec,
// node or pgwire. It takes no driver either: the OIDs it knows are its
// own constants, and a peer's row reaches it as OID, format and bytes.
//
// # Values
//
// A non-NULL value of type t is: bool, int64 (int and bigint alike),
// float64, string, or a UTC time.Time (timestamp and timestamptz);
// catalog.DateVal, catalog.TimeOfDay and catalog.IntervalVal for date,
// time and interval; oids are int64, arrays and vectors []any of their
// element's values. A STRUCT or MAP (catalog.Struct, catalog.Map) is
// jsonb on the wire, an array of them jsonb[] (nested.go): NestedJSONB
// writes one as to_jsonb would, FromJSONB reads it back, which is also
// how a peer's forwarded rows and jsonb casts become such values.
//
// # Dates and times
//
// datetime.go and interval.go are the input and output functions of
// date, time, timestamptz and interval with DateStyle ISO, MDY and
// IntervalStyle postgres, and their binary forms. timestamptz is the
// one type whose text depends on the session: ParseText, AppendTextIn
// and DecodeParamIn take the session's TimeZone (a *time.Location, which
// ParseZone makes from a setting's text); AppendText and DecodeParam
// are those in UTC. InZone and WallClock convert between a wall clock
// and an instant as Postgres does at daylight saving changes. AppendText and AppendBinary
// refuse any other Go type with an error (an engine bug, not a client's).
// Timestamps are microseconds since 2000-01-01 in binary (integer
// datetimes), computed from seconds (TimestampMicros) because
// time.UnixMicro overflows within Postgres's range.
//
// # DataRows
//
// StartDataRow and EndDataRow frame a row whose values are appended in
// place, each between StartValue and EndValue or as AppendNull: so
// pgwire encodes Go values and pull's raw-row path stored ones, each
// without a copy. AppendValue is that for one value of a type and
// format (array elements use it; pgwire's row loop spells it out, a
// call per value being a sixth of a binary row's time). AppendDataRow
// frames values already encoded, as a peer sent them.
//
// # Decoding
//
// DecodeParam follows Postgres's input and receive functions for the
// types clients declare (ParamType lists them), with Postgres's
// SQLSTATEs: 22P02 and its kin for text, 22P03 for binary. CastText is
// the input basin's SQL casts and array literals have always used; the
// two differ in small ways and stay apart, each what its path accepted
// before they met here. DecodePeer reads only the forms a peer sends
// for the common types and says ok false for the rest, which the driver
// (pgx) then decodes; FromDriver widens what it returns.
//
// # Testing
//
// types_test.go checks decoding against what PostgreSQL 15 answers for
// the same input, and that every binary encoding decodes back;
// peer_test.go encodes with pgx (test-only) and decodes with DecodePeer.
// FuzzDecodeParam feeds arbitrary parameters of every declarable type in
// both formats: no panic, every error a SQLSTATE, and what decodes
// round-trips through the binary form.
// pgwire's tests run the encoders through real clients (psql, pgx), the
// compat suite through psycopg2, JDBC and node-postgres, and
// pull.TestWireEncoderMatchesAppendRow holds the raw-row path to these
// encoders byte for byte.
package pgcodec
