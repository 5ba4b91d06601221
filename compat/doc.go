// Package compat tests basin with real Postgres clients, each in its own
// language and process, the way users reach it.
//
// The tests build cmd/basin, start one `basin serve` process for the whole
// run (embedded broker, a temporary data dir, a free loopback port, no
// HTTP listener), create a stream, a table and two views over it with pgx,
// wait until the views hold the fixture's data, then run each client as a
// subprocess with a small script committed beside this file:
//
//	python/psycopg2_client.py   psycopg2, by /usr/bin/python3 (Debian's python3-psycopg2)
//	python/sqlalchemy_client.py SQLAlchemy 1.4 with the psycopg2 dialect (python3-sqlalchemy)
//	node/client.js              node-postgres (npm "pg", pinned in node/package-lock.json)
//	jdbc/Client.java            pgjdbc (/usr/share/java/postgresql.jar, libpostgresql-jdbc-java), compiled with javac
//	pgbench/lookup.sql          pgbench (postgresql-15) in -M simple, extended and prepared modes
//
// A script connects, lists basin's tables and views, reads with
// parameterised queries, runs a bad query, receives a NOTIFY of its own
// and a notification of a view's change through its driver's
// notification API (LISTEN on the view's name) and prints "name: value" lines;
// the Go test compares them with what the fixture implies and logs every
// client's version. pgx is tested in node/, psql in node/ and by the psql
// meta-command tests.
//
// The parts that read pg_catalog (pgjdbc's DatabaseMetaData, SQLAlchemy's
// inspect() and its default engine, which probes pg_type on connect) are in
// TestCatalogClients, so they can be run and judged on their own:
//
//	go test -v -run TestCatalogClients ./compat/
//
// The clients are installed by .ci/run (apt-get and `make compat-deps`,
// which runs npm ci in compat/node). A missing client fails its test with
// what to install; nothing is skipped.
//
// The server's log is printed when a test fails; BASIN_TEST_LOG=debug
// raises its level.
package compat
