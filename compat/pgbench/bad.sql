-- pgbench script run by compat/compat_test.go: a bad column aborts the
-- client with basin's error.
\set k random(1, 100)
SELECT nope FROM order_by_id WHERE order_id = :k;
