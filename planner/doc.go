// Package planner turns parsed statements into plans: CREATE TABLE ... AS
// SELECT into a streaming topology (ViewPlan), SELECT into a pull plan
// (PullPlan), and CREATE STREAM/TABLE into a validated relation.
//
// Every SELECT is planned as a relational query (query.go): PullPlan.Query
// holds a tree of relational operators, which package query runs, reading
// streams, tables and views through RelationRel (the pull plan of a
// relation's rows, with the conditions on it pushed in: qpush.go) and
// the catalog through ScanRel; qbind.go binds names in scopes, qexpr.go
// the expressions, qjoin.go orders joins. The read rule (readrule.go)
// folds a query that is all one relation's read into that read: the
// PullPlan then has Rel set and the pull engine runs it alone, with its
// fast paths (a key lookup, a partition pin, a pushed filter, the
// needed columns).
//
// # Binding
//
// Expressions from sql/ are bound over a row layout: column references
// become row indexes (ColRef), types are checked and made explicit, and
// untyped literals and parameters take their type from context, as
// Postgres's "unknown" literals do ('5' compared with a BIGINT column is
// the BIGINT 5). Binding is where 42703 (unknown column), 42883 (no such
// operator or function) and 42803 (grouping) errors arise, with the
// position of the offending expression.
//
// The date and time types (datetime.go) follow Postgres's pg_operator
// and pg_cast: DATE, TIMESTAMP and TIMESTAMPTZ compare with each other
// through implicit casts, an untyped literal opposite an interval or a
// timestamp in + is an interval, and casts whose result depends on the
// session's TimeZone (text or TIMESTAMP to TIMESTAMPTZ and back) are
// never folded at plan time, as the plan does not know the zone.
//
// A scalar function is typed by its scalarFuncs entry or, when it has
// several signatures, by overload resolution (overload.go): the overload
// the arguments fit with the most exact matches, literals and
// parameters fitting any type and integers widening. The families
// register from init in their own files (mathfuncs.go, strfuncs.go,
// timefuncs.go); the aggregates beyond count, sum, avg, min and max,
// and FILTER, ORDER BY and WITHIN GROUP, are typed in aggfuncs.go and
// make a pull query a catalog query; a view refuses them (0A000).
//
// Grouped queries are bound twice over: the select list is bound over the
// input row with aggregate calls collected into AggSpecs, then lifted onto
// the aggregated row (group values, then aggregate results). A
// subexpression equal to a GROUP BY expression reads that group value; any
// other column reference is a grouping error.
//
// # Nested types
//
// STRUCT, MAP and arrays of them (nested.go) cast only to and from JSON
// text and jsonb; s->field on a STRUCT is a FieldOp (json's -> on json
// and jsonb: the left operand's type decides), m['k'] a SubscriptOp of
// a map; ksqlDB's functions over them are typed in nestedfuncs.go, its
// lambdas in lambda.go (a lambda parameter reads the end of the row, so
// the columns under a lambda are remapped like any others), EXPLODE in
// explode.go (a derived stream's table function, unnest in a query).
//
// # Views
//
// A view without GROUP BY keeps its source's key and partitioning. A view
// with GROUP BY is keyed by its group columns; when that key is not the
// source's key the plan re-keys records through a repartition topic
// (ViewPlan.Repartition), as Kafka Streams does. A view over a view
// reads its changelog; a view over a join of two tables or views
// (tablejoin.go, TableJoin; a view side is read from its changelog, and
// three or more are a chain of stages, TableJoin.Prev) reads its last
// join stage's, keyed by the join key (on the keys) or the left key (on
// a foreign key); grouped by other
// columns than its source's key, such a view regroups it through a
// change stage (ViewPlan.Regroups). A view of a stream with WINDOW
// (window.go, catalog.Window) is a grouped view whose GROUP BY has two
// more expressions, WINDOWSTART and WINDOWEND, read from two more
// columns of its input row that the view task fills per window; its key
// is the group's, then WINDOWSTART, and its partition key the group's
// alone (ViewPlan.PartitionKeyGroup); TUMBLE and HOP in FROM
// (tumble.go) and a date_trunc or date_bin bucket of the record time in
// GROUP BY (datebucket.go) are the same tumbling or hopping window. The
// aggregates a view keeps are bound here for both engines (bind.go,
// aggfuncs.go, libaggs.go) and kept by eval.Aggregator. A derived stream may
// join a stream with a table (join.go, StreamJoin), with another stream
// WITHIN a window (streamjoin.go), or three or more relations through a
// chain of join stages (joinstage.go, StreamPlan.Stages); a view whose
// join starts with a stream reads the last stage's stream
// (ViewPlan.Stages), whose tasks' position markers compose to positions
// in the topics beneath the join (Marks). stream/, pull/ and
// query/ run the plans; this package does no I/O.
//
// planner imports sql, catalog, pgcodec (arrays and casts from text, as
// the wire reads them), serde (timestamp_format patterns),
// internal/numeric and internal/jsonb (constant folding of those types)
// and internal/pgerr.
package planner
