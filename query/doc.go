// Package query is the relational engine: it runs every pull query
// planner plans as a tree of relational operators (PullPlan.Query,
// planner/query.go) — joins, subqueries, CTEs, set operations, windows,
// grouping sets — over the views, tables and streams it names and over
// the virtual catalog, pg_catalog and information_schema, as psql,
// drivers and BI tools send them. A query that is all one relation's
// read is folded into that read by the planner (planner/readrule.go) and
// the pull engine (package pull) runs it alone.
//
// Run compiles the tree and materializes each operator's rows: reads of
// relations (through the Reader exec gives it, which runs the pull
// engine; a read's InitPlans, uncorrelated subqueries its conditions
// use, run first), scans of virtual relations over the statement's
// catalog.PGSnapshot (made on first use), hash or nested-loop joins,
// filters, set-returning functions, grouping, windows, sorting and set
// operations. Subqueries run per outer row with the enclosing rows in
// the evaluation scope (eval.Scope), or once per statement when
// uncorrelated. The scalars only this engine evaluates (subqueries and
// outer references, sublink.go) are compiled here and handed to eval
// through eval.Extend; eval compiles every other scalar and function.
//
// What the operators buffer counts against basin.query_memory and is
// given back when their consumer is done (memory.go); a run under
// WithAnalysis measures each operator's rows and time for EXPLAIN
// ANALYZE (analyze.go).
//
// query imports catalog, eval, planner, sql, internal/pgerr, and
// internal/numeric and internal/jsonb (aggregates and grouping keys of
// those types).
package query
