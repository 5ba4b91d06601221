-- pgbench script run by compat/compat_test.go: the views are in the
-- catalog (a missing one divides by zero, which fails the client).
SELECT count(*) AS views FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
  WHERE n.nspname = 'public' AND c.relname IN ('order_by_id', 'revenue_by_region') \gset
\if :views != 2
\set missing_view 1 / 0
\endif
