package sql

import (
	"fmt"
	"strings"
	"testing"
)

func TestScratch2(t *testing.T) {
	long := strings.Repeat("x", 100)
	for _, q := range []string{
		`SELECT "a " FROM "t "`,
		`SELECT ` + long + ` AS ` + long + ` FROM ` + long,
		`CREATE TABLE ` + long + ` (` + long + ` INT)`,
		"SELECT \"a`b\" FROM \"c`d\"",
		`SELECT "ünï" FROM ünï`,
		`INSERT INTO ` + long + ` (` + long + `) VALUES (1)`,
		`SELECT count ( * ) FROM t`,
		`SELECT sum(DISTINCT a), stddev(a) FROM t`,
		`SELECT extract(epoch FROM ts), substring(a FOR 2), substring('abc' FROM 2) FROM t`,
		`SELECT a FROM t WHERE b = 1 ORDER BY a NULLS FIRST, b DESC NULLS LAST`,
		`SELECT 1 FROM t WHERE a IN ($1, $2) OR a = ANY (SELECT 1)`,
		`SELECT '\' FROM t`,
		`SELECT E'\\' FROM t`,
		`SELECT 'a\'b' FROM t`,
		`CREATE TABLE "T" (a INT KEY) WITH (kafka_topic='x'); SELECT * FROM "T"`,
		`CREATE STREAM s (a INT KEY, b TEXT KEY)`,
		`CREATE STREAM s (a INT, KEY (a))`,
		`CREATE STREAM s (a INT, UNIQUE (a))`,
		`CREATE STREAM s (a INT UNIQUE)`,
		`CREATE STREAM s (a INT REFERENCES t (a))`,
		`CREATE STREAM s (a INT CHECK (a > 0))`,
		`CREATE STREAM s (a INT, CONSTRAINT pk PRIMARY KEY (a))`,
		`CREATE STREAM s (select INT)`,
		`CREATE STREAM s ("select" INT)`,
		`CREATE STREAM s (a INT COLLATE "C")`,
		`CREATE STREAM s (a INT GENERATED ALWAYS AS (1) STORED)`,
		`CREATE STREAM s (a INT,)`,
		`CREATE STREAM s (a INT) WITH ()`,
		`CREATE STREAM s (a INT) WITH (a.b.c = 'x', d = true, e = +5)`,
		`CREATE STREAM s (a INT) garbage`,
		`CREATE TABLE t (a INT) AS SELECT 1`,
		`CREATE TABLE t AS SELECT a FROM t LIMIT 5`,
		`CREATE TABLE t AS (SELECT a FROM t)`,
		`CREATE TABLE t AS VALUES (1)`,
		`CREATE TABLE IF EXISTS t (a INT)`,
		`CREATE`,
		`CREATE TABLE`,
		`CREATE TABLE t (a timestamp(3) with time zone)`,
		`CREATE TABLE t (a timestamp(3))`,
		`CREATE TABLE t (a character varying(10), b double precision, c pg_catalog.int8, d "varchar")`,
		`EXPLAIN INSERT INTO t VALUES (1)`,
		`EXPLAIN`,
		`DESCRIBE`,
		`DESCRIBE a b`,
		`DROP TABLE`,
		`DROP TABLE IF t`,
		`SHOW a.b."C"`,
		`SET a.b = 'x', 'y'`,
		`SET a TO`,
		`SET TIME ZONE INTERVAL '1' HOUR`,
		`SET TRANSACTION ISOLATION LEVEL SERIALIZABLE, READ ONLY`,
		`SET LOCAL TRANSACTION READ ONLY`,
		`RESET`,
		`START`,
		`COMMIT PREPARED 'x'`,
		`SELECT 1; GARBAGE; SELECT 2`,
		"SELECT 1\x00",
		"SELECT '\xff'",
		`SELECT $$abc`,
		`SELECT $ 1`,
		`SELECT $a`,
		`SELECT 0x`,
		`SELECT 1_`,
		`SELECT 1__0`,
		`SELECT 1.2.3`,
		`SELECT 1..2`,
		`SELECT .5e`,
		`SELECT 1e+`,
		`SELECT ?`,
		`SELECT a@b`,
		`SELECT #`,
		`SELECT \d`,
	} {
		stmts, err := Parse(q)
		fmt.Printf("%s\n", q)
		if err != nil {
			fmt.Print("  ", formatError(q, err))
			continue
		}
		for _, s := range stmts {
			fmt.Printf("  => %s\n", Format(s))
			if err := checkRoundTrip(s); err != nil {
				fmt.Printf("  ROUNDTRIP: %v\n", err)
			}
		}
	}
}
