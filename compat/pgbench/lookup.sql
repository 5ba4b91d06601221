-- pgbench script run by compat/compat_test.go in each -M mode (simple,
-- extended, prepared). A key lookup in a view with a random key, checked:
-- order k has amount k/4, and a missing or wrong row fails the client
-- (\gset needs exactly one row; the \if divides by zero). Then a small
-- scatter-gather read of another view.
\set k random(1, 100)
SELECT order_id AS got_id, amount * 4 AS got_amount4 FROM order_by_id WHERE order_id = :k \gset
\if :got_id != :k or :got_amount4 != :k
\set wrong_row 1 / 0
\endif
SELECT region, orders, revenue FROM revenue_by_region ORDER BY revenue DESC LIMIT 2;
