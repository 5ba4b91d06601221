// Package sql turns the SQL text a client sends into basin statements.
//
// basin speaks Postgres to its clients, so the text is Postgres-flavoured:
// "quoted identifiers", $1 parameters, x::type casts, E'...' and $$...$$
// strings, standard-conforming '...' strings (a backslash is an ordinary
// character), || concatenation, -- comments without a following space,
// nested /* */ comments, LIMIT/OFFSET/FETCH in any order, NULLS
// FIRST/LAST. On top of that come basin's own statements: CREATE STREAM,
// the WITH (key = value) clause of CREATE, SHOW STREAMS|TABLES|QUERIES,
// DESCRIBE, and the session statements drivers send (SET, SHOW, RESET,
// BEGIN, COMMIT, ...).
//
// Rather than writing a SQL grammar, basin reuses TiDB's parser for the
// hard part (SELECT and INSERT expressions, CREATE column lists). TiDB
// parses MySQL, so the package is built as four layers that each do one
// thing:
//
//  1. Lexer and splitter (lexer.go, parse.go). The whole text is lexed
//     with Postgres's rules into tokens that keep their byte offset in
//     the text. Statements are the runs between ";" tokens, so a
//     semicolon in a string or comment never splits, and runs that are
//     empty (whitespace, comments: psql's "-- ping") are dropped. Lexical
//     errors (unterminated strings, trailing junk after numbers) are
//     reported here, at the token. So are statements too deep to parse
//     in bounded memory (nesting.go): more than 500 parentheses (54000)
//     or an expression more than MaxExpressionDepth operators deep
//     (54001, e.g. 1+1+...+1), checked token by token as the text is
//     lexed, so that a hostile statement is refused before most of it
//     is read. (Its length is bounded before that, by the session's
//     basin.max_statement_bytes in exec.) Long runs of constants, the
//     items of x IN (1, 2, ...) and the rows of INSERT ... VALUES (...),
//     (...), are folded as they are lexed into one token each
//     (literals.go): the rewrite hands TiDB a placeholder constant for
//     the run and the conversion puts its constants back, lexed again
//     from the text, so that a megabyte list costs about what its
//     literals in the AST do rather than 1.5 KB a constant in tokens,
//     TiDB value expressions and conversion. A statement in which a
//     folded run turns out to stand anywhere else is parsed again
//     unfolded.
//
//  2. Statement layer (parse.go, commands.go, create.go, select.go). A
//     small recursive-descent parser over the tokens recognises each
//     statement by its first words. SHOW, SET, RESET, DESCRIBE, DROP,
//     transaction control and EXPLAIN are parsed entirely here: their
//     grammar is tiny and MySQL's differs. CREATE's frame (STREAM or
//     TABLE, IF NOT EXISTS, WITH (...), AS SELECT) is parsed here too,
//     and only the column list goes on. SELECT loses its LIMIT, OFFSET
//     and FETCH clauses and its NULLS FIRST/LAST here, because TiDB's
//     grammar has no room for them; they are recorded and put back after
//     conversion. COPY ... TO STDOUT (copy.go) and the cursor
//     statements DECLARE, FETCH, MOVE and CLOSE (cursor.go) are parsed
//     here too, their queries as statements of their own. Statements
//     Postgres has and basin does not (UPDATE, MERGE, COPY FROM, CREATE
//     VIEW, ...) fail with 0A000 by their first words, before TiDB, so
//     that valid Postgres never gets a MySQL syntax error.
//
//  3. Rewrite to MySQL (rewrite.go, types.go). The tokens of a SELECT,
//     INSERT or column list are written out as MySQL text: names
//     `backquoted` (so that Postgres column names MySQL reserves, like
//     key or range, stay names), strings re-quoted for TiDB running with
//     NO_BACKSLASH_ESCAPES, || as | (MySQL's || is OR; its | has the
//     precedence Postgres gives ||), $n as ?, casts (x::t, CAST(x AS t),
//     TIMESTAMP '...') as calls of basin__cast_t, type names as the
//     basin type they denote. ksqlDB's compound types (ARRAY<T>,
//     STRUCT<name T, ...>, MAP<K, V>: nestedtypes.go) are read here
//     too, counting the > of a ">>" token one at a time, and a column
//     list is split at the commas outside their brackets. Every written item records the byte range
//     of the user's text it stands for, and side tables keyed by the
//     item's offset in the MySQL text record what TiDB cannot carry:
//     which $n a ? was, which calls are casts and to what type. The
//     Postgres constructs of catalog queries that MySQL lacks are
//     rewritten into something TiDB parses and marked in another side
//     table (rewrite_pg.go): ARRAY[...] and x[i] become calls, x ~ p
//     becomes REGEXP, OPERATOR(pg_catalog.~) the operator, COLLATE
//     disappears, x = ANY(array) a subquery over a marked call, a
//     function in FROM a derived table, an alias column list (AS s(a,
//     b)) a placeholder alias. ksqlDB's stream–stream join window (JOIN
//     b WITHIN 1 HOUR ON ...) becomes an index hint on the right
//     relation that points into one more side table (within.go).
//     Constructs TiDB would misread and basin does not implement
//     (NATURAL FULL JOIN, operators basin lacks) are refused here
//     with 0A000 at their position.
//
//  4. TiDB parse and conversion (tidb.go, convert.go). TiDB parses the
//     rewritten text; a syntax error's position ("line 1 column 12 near
//     ...", whose quoted text is the rest of the input) is turned into an
//     offset in the MySQL text, mapped back to the user's token and
//     reported as Postgres does: 42601 `syntax error at or near "tok"`
//     or `syntax error at end of input`, with Position the 1-based
//     character index in the whole text given to Parse (so an error in
//     the second statement of a batch points into the batch). The AST is
//     then converted: every node basin implements becomes a basin node
//     with its position mapped back, marked calls back into the Postgres
//     constructs they stand for (convert_query.go); every other node is
//     a 0A000 naming the construct.
//
// The boundary is the statement AST in ast.go and ast_query.go (FROM
// lists, joins, subqueries, arrays, UNION): later layers (planner,
// pgwire) never see TiDB types, tokens or MySQL text. Positions in the
// AST are what the planner uses for its own errors (42703 undefined
// column at the ColumnRef, 42P01 undefined table at the TableRef).
//
// Format renders a statement as canonical SQL that parses back to the
// same statement; tests rely on that round trip, and the fuzz target
// FuzzParse checks it on arbitrary input along with "never panics,
// every error has a SQLSTATE and an in-range position".
//
// # Debugging
//
// When a statement parses wrongly, look at what TiDB was given: the
// "rewrite" command of testdata/parse prints the MySQL text and, item by
// item, the byte range of the user's text each came from, the parameter
// number of each ? and the type of each cast, e.g.
//
//	rewrite
//	SELECT a::int8 FROM t WHERE b = $2
//	----
//	SELECT basin__cast_bigint( `a` ) FROM `t` WHERE `b` = ?
//	...
//
// A wrong error position is a wrong origin in that list; a wrong
// construct is usually a word passed bare that should have been quoted
// (see passThrough in rewrite.go) or the reverse. Add the case to
// testdata/parse, run go test ./sql -run TestParse -rewrite, and review
// the diff.
//
// sql imports catalog (types), internal/pgerr and internal/numeric
// (exact numeric constants), besides TiDB's parser.
package sql
