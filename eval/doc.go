// Package eval evaluates bound expressions: planner.Scalar trees compiled
// once into closures (Compile), the functions and operators they call
// (funcs.go), the aggregates of GROUP BY (Aggregator, whose state a
// view's store keeps), and the memory account of a statement against
// basin.query_memory (Memory).
//
// The scalar functions live in families: funcs.go (the session's and
// the first string and math ones, and the two registries every family
// adds to from init: strictFuncs, NULL in NULL out, and exprFuncs, for
// functions that are not strict or read the Env), strfuncs.go,
// mathfuncs.go, timefuncs.go and timefuncs2.go (date_trunc, date_part,
// age, make_*, date_bin ...), tochar.go (to_char's template patterns)
// and totimestamp.go (to_timestamp and to_date reading them), and
// nestedfuncs.go: ksqlDB's functions over arrays, maps and JSON strings,
// the STRUCT and MAP constructors, and the lambda functions TRANSFORM,
// FILTER and REDUCE, whose lambda compiles to a value that runs its body
// over the row with its parameters appended (planner/lambda.go). Those
// that share a Postgres function's name (array_length,
// json_array_length) are told apart by their arguments. The
// planner has already picked the overload and converted the arguments
// (planner/overload.go), so a body asserts its arguments' Go types; a
// body that must tell TIMESTAMP from TIMESTAMPTZ (both time.Time) looks
// at the call's argument types.
//
// An Env is the evaluation context of one statement: its parameters,
// the session as expressions see it (settings for current_setting() and
// set_config(), the catalog for catalog queries), the statement's start
// for now(), and the context it runs under, which the engine running the
// statement binds from its own ctx parameter (WithContext) so that no
// caller stores one. How a pull query may read the stores is not here:
// that is the pull engine's ReadOptions.
//
// Every function of the planner's one registry is implemented here,
// the catalog's (catalogfuncs.go: format_type, pg_get_viewdef, the
// system types' casts and array operators) and the set-returning ones
// (RunSRF) among them. The scalars only the relational engine evaluates
// (subqueries, references to an enclosing query's row) it compiles
// itself and hands to Compile through Extend; the scope a relational
// query evaluates in (its snapshot, the enclosing rows of a subquery)
// is Env.Scope, and the values of the subqueries a relation's read was
// given are Env.Init.
//
// Dates and times (datetime.go): DATE, TIME and INTERVAL values compare
// by Compare like the others (an interval by its span, a month as 30
// days, so '1 mon' = '30 days'); the operators among the date and time
// types and casts that involve them compile apart, because they read the
// session's TimeZone (Env.Loc): a TIMESTAMPTZ is written and read in it,
// and months and days added to one are calendar months and days there.
//
// Aggregator folds a group's rows into a state of plain values that a
// view's store keeps; a retracting one (over a table or a view) can take
// rows back, keeping multisets of values where MIN, MAX or DISTINCT need
// them (multiset.go).
//
// eval imports catalog, planner, sql, pgcodec (the date and time
// types' text), materialize (a multiset's encoding), internal/pgerr,
// internal/numeric (NUMERIC arithmetic) and internal/jsonb (the JSON
// operators and functions), and none of the engines.
package eval
