// Package query is the catalog-query engine: it runs the pull queries
// that planner plans as relational trees (PullPlan.Query, planner/query.go)
// over the virtual catalog, pg_catalog and information_schema, as psql,
// drivers and BI tools send them.
//
// Run makes a catalog.PGSnapshot for the statement from the session
// (eval.Session.Snapshot), compiles the tree and materializes each
// operator's rows: scans of virtual relations, hash or nested-loop joins,
// filters, set-returning functions, grouping, windows, sorting and set
// operations. Subqueries run per outer row with the enclosing rows in
// the evaluation scope (eval.Scope), or once per statement when
// uncorrelated. The scalars only these plans have (subqueries, outer
// references, the catalog functions of planner/qfuncs.go) are compiled
// here and handed to eval through eval.Extend.
//
// What the operators buffer counts against basin.query_memory and is
// given back when their consumer is done (memory.go); a run under
// WithAnalysis measures each operator's rows and time for EXPLAIN
// ANALYZE (analyze.go).
//
// It sits beside the pull engine (package pull), which reads views,
// tables and streams; the session (package exec) gives each statement to
// one of the two. The BI issue makes this engine the one of every pull
// query, with the pull engine's reads as its scans.
//
// query imports catalog, eval, planner, sql, internal/pgerr, and
// internal/numeric and internal/jsonb (aggregates and grouping keys of
// those types).
package query
