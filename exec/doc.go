// Package exec is the SQL session layer: it runs a client's statements
// above the engines. A Session parses each statement, checks it against
// the session's limits and transaction state, and dispatches it: DDL is
// validated and appended to the command log, INSERT produces records,
// SELECT is planned by planner.PlanSelect and runs in the relational
// engine (package query), reading relations through the pull engine
// (package pull), or in the pull engine alone when it is one relation's
// read; SHOW and DESCRIBE read the
// catalog and the streaming runtime (package stream).
//
// What a session keeps between statements is here: its settings
// (settings.go, with the derived values reads use), transaction blocks
// (txn.go), prepared statements and portals (prepared.go), the plan
// cache of the simple protocol (plancache.go), pg_stat_activity
// (activity.go), its cursors (cursor.go), the positions of its writes
// and reads (positions.go),
// SHOW basin.last_read (lastread.go), SHOW TASKS and SHOW CLUSTER
// (show.go). For each statement it makes the evaluation context
// (eval.Env) and the read options (pull.ReadOptions) from them, and
// reports every pull query to Engine.ObservePull (reads.go).
//
// COPY ... TO STDOUT (copy.go) and cursors (cursor.go) read a query's
// rows through a RowSource (rowsource.go), the interface an incremental
// result implements: a SELECT's is its rows collected at the start, a
// live source's arrive while the statement waits on them. COPY writes
// them through ResultWriter.CopyOut and flushes before each wait;
// FETCH pages them, with basin's WITH (timeout = ...) bounding a wait
// for the first row.
//
// For the extended query protocol, Session.Prepare parses one statement
// and plans a SELECT once, inferring each $n's type from the plan, and
// Prepared.Bind makes a Portal that runs it (prepared.go). A portal read
// with a row limit runs its pull query on a goroutine it owns, feeding a
// small channel, so it can stop after N rows and resume; Close stops it.
//
// # Limits
//
// What one statement or session may take is bounded by session settings
// with documented defaults (limits.go): basin.max_statement_bytes is
// checked before a Query or Parse is lexed (sql then refuses expressions
// too deep to parse in bounded memory), statement_timeout and cancel run
// from before the parse (a parse cannot be interrupted, so one that
// outlasts them fails when it ends), basin.max_prepared_statements
// counts the client's prepared statements (Prepare to Prepared.Close; the
// plan cache's are not counted), and basin.query_memory is checked as a
// pull query collects rows to sort, groups or DISTINCT keys, and as the
// relational engine's operators buffer rows (query/memory.go). EXPLAIN
// ANALYZE (explain.go) runs a SELECT and shows its plan with what each
// operator did. Loops over many keys or
// rows check the statement's context every thousand or so, so a cancel
// or timeout stops a long IN list's lookups as it does a scan.
//
// SUBSCRIBE, SELECT ... EMIT CHANGES and LISTEN on a view's name
// (subscribe.go, listenview.go) run subscriptions of package push.
//
// exec imports the engines (stream, pull, push, query), eval, planner, sql,
// catalog, serde and kafka's client (INSERT), materialize (positions),
// ha (roles in SHOW TASKS), pgcodec (the session's TimeZone as the wire
// reads it) and the internal helpers pgerr and safe.
package exec
