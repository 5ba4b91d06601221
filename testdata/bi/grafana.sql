-- Grafana's PostgreSQL data source: panel queries as its macro engine
-- hands them to the server (pkg/tsdb/grafana-postgresql-datasource/
-- macros.go, non-TimescaleDB): $__time(c) is c AS "time";
-- $__timeEpoch(c) is extract(epoch from c) as "time"; $__timeFilter(c)
-- is c BETWEEN '<from>' AND '<to>' with RFC 3339 UTC bounds;
-- $__timeFrom() and $__timeTo() are those quoted bounds;
-- $__timeGroup(c,'5m') is floor(extract(epoch from c)/300)*300 and
-- $__timeGroupAlias adds AS "time" (a fill argument changes only what
-- Grafana does with the rows); $__unixEpochFilter(c) is
-- c >= <from s> AND c <= <to s>; $__unixEpochGroup(c,'1h') is
-- floor((c)/3600)*3600. Variables are interpolated as quoted, comma
-- separated lists. The dashboard's range is 2026-03-10T00:00:00Z to
-- 2026-03-13T06:00:00Z (epoch 1773100800 to 1773381600). Grafana sends
-- a panel's query as one statement without parameters.

-- name: timeseries_timegroupalias_1h
-- Time series panel: SELECT $__timeGroupAlias(created_at,'1h'),
-- count(*) ... WHERE $__timeFilter(created_at) GROUP BY 1 ORDER BY 1.
SELECT floor(extract(epoch from created_at)/3600)*3600 AS "time", count(*) AS "orders"
FROM orders
WHERE created_at BETWEEN '2026-03-10T00:00:00Z' AND '2026-03-13T06:00:00Z'
GROUP BY 1
ORDER BY 1;

-- name: timeseries_metric_column_5m
-- Time series with a metric column (one series per region):
-- $__timeGroup(created_at,'5m') followed by a comma becomes the alias
-- form.
SELECT floor(extract(epoch from created_at)/300)*300 AS "time", region AS metric, sum(amount) AS value
FROM orders
WHERE created_at BETWEEN '2026-03-11T00:00:00Z' AND '2026-03-11T12:00:00Z'
GROUP BY 1, 2
ORDER BY 1, 2;

-- name: timeseries_fill_15m
-- $__timeGroupAlias(created_at,'15m',0): the fill value changes
-- nothing in the SQL.
SELECT floor(extract(epoch from created_at)/900)*900 AS "time", sum(quantity) AS "units"
FROM orders
WHERE created_at BETWEEN '2026-03-12T00:00:00Z' AND '2026-03-12T06:00:00Z'
GROUP BY 1
ORDER BY 1;

-- name: timeseries_day_over_view
-- $__timeGroupAlias(day,'1d') over the daily view.
SELECT floor(extract(epoch from day)/86400)*86400 AS "time", sum(revenue) AS "revenue"
FROM daily_sales
WHERE day BETWEEN '2026-03-10T00:00:00Z' AND '2026-03-13T06:00:00Z'
GROUP BY 1
ORDER BY 1;

-- name: timeseries_time_macro
-- $__time(created_at): raw points of one series, time-sorted.
SELECT created_at AS "time", amount AS value
FROM orders
WHERE created_at BETWEEN '2026-03-12T00:00:00Z' AND '2026-03-12T12:00:00Z' AND region = 'east'
ORDER BY 1;

-- name: timeseries_time_epoch
-- $__timeEpoch(hour) over the hourly view.
SELECT extract(epoch from hour) as "time", revenue AS "revenue"
FROM hourly_orders
WHERE hour BETWEEN '2026-03-10T00:00:00Z' AND '2026-03-11T00:00:00Z'
ORDER BY 1;

-- name: unix_epoch_filter_group
-- An epoch-seconds column: $__unixEpochGroupAlias(created_epoch,'1h')
-- and $__unixEpochFilter(created_epoch).
SELECT floor((created_epoch)/3600)*3600 AS "time", count(*) AS "orders"
FROM orders
WHERE created_epoch >= 1773100800 AND created_epoch <= 1773381600
GROUP BY 1
ORDER BY 1;

-- name: stat_time_from_to
-- Stat panel: $__timeFrom() and $__timeTo() as explicit bounds.
SELECT count(*) AS "orders", sum(amount) AS "revenue"
FROM orders
WHERE created_at >= '2026-03-10T00:00:00Z' AND created_at < '2026-03-13T06:00:00Z';

-- name: table_panel_view
-- Table panel over a view with $__time(day) and $__timeFilter(day).
SELECT day AS "time", region, orders, revenue
FROM daily_sales
WHERE day BETWEEN '2026-03-10T00:00:00Z' AND '2026-03-13T06:00:00Z'
ORDER BY 1, 2;

-- name: variable_query_regions
-- Dashboard variable (query type): the values of a column.
SELECT DISTINCT region FROM orders WHERE region IS NOT NULL ORDER BY 1;

-- name: variable_query_text_value
-- Variable with __text and __value columns.
SELECT region AS __text, region AS __value FROM region_sales WHERE region IS NOT NULL;

-- name: multi_value_variable
-- A multi-value variable ($region = east, north) interpolated into IN.
SELECT floor(extract(epoch from created_at)/86400)*86400 AS "time", region AS metric, count(*) AS value
FROM orders
WHERE created_at BETWEEN '2026-03-10T00:00:00Z' AND '2026-03-13T06:00:00Z' AND region IN ('east','north')
GROUP BY 1, 2
ORDER BY 1, 2;

-- name: bar_gauge_products
-- Bar gauge: one row per product, sorted by the value.
SELECT product AS metric, sum(amount) AS value
FROM orders
WHERE created_at BETWEEN '2026-03-10T00:00:00Z' AND '2026-03-13T06:00:00Z'
GROUP BY 1
ORDER BY 2 DESC;

-- name: pie_status
-- Pie chart: counts by status over the range.
SELECT status, count(*)
FROM orders
WHERE created_at BETWEEN '2026-03-10T00:00:00Z' AND '2026-03-13T06:00:00Z'
GROUP BY status;

-- name: query_builder_sum
-- The visual query builder: SUM(amount) grouped by a column, its
-- default row limit.
SELECT SUM(amount), region FROM orders GROUP BY region LIMIT 50;

-- name: query_builder_filter
-- The visual query builder with a filter and an ORDER BY.
SELECT COUNT(order_id), product FROM orders WHERE status = 'pending' GROUP BY product ORDER BY product ASC LIMIT 50;

-- name: alert_relative_now
-- An alert rule's query: the last ten days relative to now().
SELECT count(*) AS "orders" FROM orders WHERE created_at > now() - interval '10 days';

-- name: to_timestamp_epoch
-- An epoch column shown as time: to_timestamp(created_epoch) with
-- $__timeFilter on it.
SELECT to_timestamp(created_epoch) AS "time", amount AS value
FROM orders
WHERE to_timestamp(created_epoch) BETWEEN '2026-03-12T00:00:00Z' AND '2026-03-12T06:00:00Z'
ORDER BY 1;

-- name: moving_average_window
-- A smoothed series: a window average over the hourly view.
SELECT hour AS "time", avg(revenue) OVER (ORDER BY hour ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS "revenue_3h"
FROM hourly_orders
WHERE hour BETWEEN '2026-03-10T00:00:00Z' AND '2026-03-11T00:00:00Z'
ORDER BY 1;

-- name: annotations_refunds
-- Annotation query: time in epoch milliseconds, text and tags columns.
SELECT extract(epoch from created_at) * 1000 AS time, 'refund ' || order_id AS text, region AS tags
FROM orders
WHERE created_at BETWEEN '2026-03-10T00:00:00Z' AND '2026-03-13T06:00:00Z' AND status = 'refunded';

-- name: casts_double_colon
-- Hand-written panel SQL with :: casts, as Grafana's examples write
-- them.
SELECT created_at::date AS "time", count(*)::float AS "orders", sum(quantity)::int AS "units"
FROM orders
WHERE created_at BETWEEN '2026-03-10T00:00:00Z' AND '2026-03-13T06:00:00Z'
GROUP BY 1
ORDER BY 1;

-- name: coalesce_sum_per_region
-- A table panel with COALESCE for the series without rows.
SELECT r.region, COALESCE(SUM(o.amount), 0) AS revenue
FROM region_sales r LEFT JOIN orders o ON o.region = r.region AND o.status = 'refunded'
WHERE r.region IS NOT NULL
GROUP BY r.region
ORDER BY 1;

-- name: table_round_numeric
-- A table panel rounding an average to two places through numeric.
SELECT region, round(avg(amount)::numeric, 2) AS avg_amount, count(*) AS orders
FROM orders
WHERE created_at BETWEEN '2026-03-10T00:00:00Z' AND '2026-03-13T06:00:00Z' AND region IS NOT NULL
GROUP BY 1
ORDER BY 1;

-- name: stat_union_all
-- A stat panel of several single values, one per UNION ALL branch.
SELECT 'orders' AS metric, count(*)::float8 AS value FROM orders WHERE status = 'complete'
UNION ALL
SELECT 'customers', count(*)::float8 FROM customers
UNION ALL
SELECT 'regions', count(DISTINCT region)::float8 FROM orders
ORDER BY 1;
