-- Apache Superset over PostgreSQL: the SQL its charts, filters and SQL
-- Lab send. Shapes from superset/db_engine_specs/postgres.py (time grain
-- expressions DATE_TRUNC('<grain>', col); convert_dttm: a TIMESTAMP bound
-- is TO_TIMESTAMP('<iso with microseconds>', 'YYYY-MM-DD HH24:MI:SS.US');
-- epoch_to_dttm: (timestamp 'epoch' + col * interval '1 second')) and
-- from superset/models/helpers.py's query builder (metric labels such as
-- COUNT(*) AS count and "SUM(col)", physical datasets as schema.table,
-- virtual datasets as FROM (<sql>) AS virtual_table, series limits as an
-- inner query joined AS series_limit, the row limit as LIMIT). psycopg2
-- interpolates parameters on the client: all of it is simple protocol.
-- Time range of the dashboards: 2026-03-10 to 2026-03-14.

-- name: big_number_total
-- Big Number chart: one metric over the dashboard's time range.
SELECT COUNT(*) AS count
FROM public.orders
WHERE created_at >= TO_TIMESTAMP('2026-03-10 00:00:00.000000', 'YYYY-MM-DD HH24:MI:SS.US')
  AND created_at < TO_TIMESTAMP('2026-03-14 00:00:00.000000', 'YYYY-MM-DD HH24:MI:SS.US')
LIMIT 10000;

-- name: big_number_total_untimed
-- Big Number chart with no time range ("No filter"): the metric alone.
SELECT SUM(amount) AS "SUM(amount)"
FROM public.orders
LIMIT 10000;

-- name: big_number_trendline
-- Big Number with Trendline: the metric per day grain.
SELECT DATE_TRUNC('day', created_at) AS created_at, SUM(amount) AS "SUM(amount)"
FROM public.orders
GROUP BY DATE_TRUNC('day', created_at)
LIMIT 10000;

-- name: bar_chart_region
-- Bar chart: a metric by a dimension, sorted by the metric descending.
SELECT region AS region, SUM(revenue) AS "SUM(revenue)"
FROM public.region_sales
GROUP BY region
ORDER BY "SUM(revenue)" DESC
LIMIT 10000;

-- name: pie_chart_product
-- Pie chart: revenue by product (row limit 100, sorted by the metric).
SELECT product AS product, SUM(revenue) AS "SUM(revenue)"
FROM public.product_status
GROUP BY product
ORDER BY "SUM(revenue)" DESC
LIMIT 100;

-- name: line_chart_day_by_region
-- Line chart (ECharts time-series), day grain, one series per region,
-- over a view of daily aggregates.
SELECT DATE_TRUNC('day', day) AS day, region AS region, SUM(revenue) AS "SUM(revenue)"
FROM public.daily_sales
WHERE day >= TO_TIMESTAMP('2026-03-10 00:00:00.000000', 'YYYY-MM-DD HH24:MI:SS.US')
  AND day < TO_TIMESTAMP('2026-03-14 00:00:00.000000', 'YYYY-MM-DD HH24:MI:SS.US')
GROUP BY DATE_TRUNC('day', day), region
LIMIT 10000;

-- name: line_chart_series_limit
-- Line chart with "Series limit" 2: the top series come from an inner
-- query joined as series_limit.
SELECT DATE_TRUNC('day', created_at) AS created_at, region AS region, COUNT(*) AS count
FROM public.orders
JOIN (SELECT region AS region__, SUM(amount) AS mme_inner__
      FROM public.orders
      WHERE created_at >= TO_TIMESTAMP('2026-03-10 00:00:00.000000', 'YYYY-MM-DD HH24:MI:SS.US')
        AND created_at < TO_TIMESTAMP('2026-03-14 00:00:00.000000', 'YYYY-MM-DD HH24:MI:SS.US')
      GROUP BY region
      ORDER BY mme_inner__ DESC
      LIMIT 2) AS series_limit ON region = region__
WHERE created_at >= TO_TIMESTAMP('2026-03-10 00:00:00.000000', 'YYYY-MM-DD HH24:MI:SS.US')
  AND created_at < TO_TIMESTAMP('2026-03-14 00:00:00.000000', 'YYYY-MM-DD HH24:MI:SS.US')
GROUP BY DATE_TRUNC('day', created_at), region
LIMIT 10000;

-- name: time_grain_minute
-- Time-series chart, minute grain (PT1M) over a two-hour range.
SELECT DATE_TRUNC('minute', created_at) AS created_at, COUNT(*) AS count
FROM public.orders
WHERE created_at >= TO_TIMESTAMP('2026-03-11 08:00:00.000000', 'YYYY-MM-DD HH24:MI:SS.US')
  AND created_at < TO_TIMESTAMP('2026-03-11 10:00:00.000000', 'YYYY-MM-DD HH24:MI:SS.US')
GROUP BY DATE_TRUNC('minute', created_at)
ORDER BY created_at ASC
LIMIT 10000;

-- name: time_grain_hour
-- Time-series bar chart, hour grain (PT1H), over the hourly view.
SELECT DATE_TRUNC('hour', hour) AS hour, SUM(orders) AS "SUM(orders)"
FROM public.hourly_orders
WHERE hour >= TO_TIMESTAMP('2026-03-12 00:00:00.000000', 'YYYY-MM-DD HH24:MI:SS.US')
  AND hour < TO_TIMESTAMP('2026-03-13 00:00:00.000000', 'YYYY-MM-DD HH24:MI:SS.US')
GROUP BY DATE_TRUNC('hour', hour)
ORDER BY hour ASC
LIMIT 10000;

-- name: time_grain_week
-- Time-series chart, week grain (P1W).
SELECT DATE_TRUNC('week', created_at) AS created_at, SUM(amount) AS "SUM(amount)"
FROM public.orders
GROUP BY DATE_TRUNC('week', created_at)
ORDER BY created_at ASC
LIMIT 10000;

-- name: time_grain_month
-- Time-series chart, month grain (P1M), over the daily view.
SELECT DATE_TRUNC('month', day) AS day, SUM(orders) AS "SUM(orders)", SUM(units) AS "SUM(units)"
FROM public.daily_sales
GROUP BY DATE_TRUNC('month', day)
LIMIT 10000;

-- name: time_grain_epoch_column
-- Time-series chart over an epoch-seconds column: the day grain wraps
-- the engine spec's epoch_to_dttm expression.
SELECT DATE_TRUNC('day', (timestamp 'epoch' + created_epoch * interval '1 second')) AS created_epoch, COUNT(*) AS count
FROM public.orders
GROUP BY DATE_TRUNC('day', (timestamp 'epoch' + created_epoch * interval '1 second'))
LIMIT 10000;

-- name: table_raw_in_filter
-- Table chart in raw-records mode: an IN filter and an equality filter,
-- sorted by a column, row limit 20.
SELECT order_id AS order_id, region AS region, product AS product, amount AS amount
FROM public.orders
WHERE region IN ('east', 'west') AND status = 'complete'
ORDER BY amount DESC
LIMIT 20;

-- name: table_aggregate_like
-- Table chart in aggregate mode with a LIKE ad-hoc filter.
SELECT product AS product, COUNT(*) AS count, SUM(amount) AS "SUM(amount)"
FROM public.orders
WHERE product LIKE 'G%'
GROUP BY product
ORDER BY "SUM(amount)" DESC
LIMIT 1000;

-- name: table_ilike_contains
-- Ad-hoc filter "contains" (ILIKE) on a string column.
SELECT status AS status, COUNT(*) AS count
FROM public.orders
WHERE product ILIKE '%GET%'
GROUP BY status
LIMIT 1000;

-- name: pivot_count_distinct
-- Pivot table: COUNT_DISTINCT metric by two dimensions.
SELECT region AS region, status AS status, COUNT(DISTINCT customer_id) AS "COUNT_DISTINCT(customer_id)"
FROM public.orders
GROUP BY region, status
LIMIT 10000;

-- name: virtual_dataset_join
-- A virtual dataset (a SQL Lab query saved as a dataset) joining the
-- stream to the customers table, charted by region.
SELECT region AS region, AVG(amount) AS "AVG(amount)"
FROM (SELECT o.region, o.amount, c.segment
      FROM orders o JOIN customers c ON c.customer_id = o.customer_id) AS virtual_table
WHERE segment = 'Corporate'
GROUP BY region
LIMIT 10000;

-- name: virtual_dataset_time_filter
-- A virtual dataset over a view, with the time range applied outside it.
SELECT DATE_TRUNC('day', day) AS day, SUM(revenue) AS "SUM(revenue)"
FROM (SELECT day, region, revenue FROM daily_sales WHERE region IS NOT NULL) AS virtual_table
WHERE day >= TO_TIMESTAMP('2026-03-11 00:00:00.000000', 'YYYY-MM-DD HH24:MI:SS.US')
  AND day < TO_TIMESTAMP('2026-03-13 00:00:00.000000', 'YYYY-MM-DD HH24:MI:SS.US')
GROUP BY DATE_TRUNC('day', day)
ORDER BY day ASC
LIMIT 10000;

-- name: samples_preview
-- Dataset "Samples" pane / explore's data preview: every column, the
-- samples row limit.
SELECT * FROM public.region_sales LIMIT 1000;

-- name: sqllab_preview
-- SQL Lab: a query run with the display limit (1000) plus one.
SELECT * FROM public.segment_sales LIMIT 1001;

-- name: native_filter_values
-- Native select filter: the distinct values of a column, sorted.
SELECT region AS region
FROM public.orders
GROUP BY region
ORDER BY region ASC
LIMIT 1000;

-- name: native_filter_time_range_values
-- Time range native filter's column bounds.
SELECT MIN(created_at) AS min_val, MAX(created_at) AS max_val
FROM public.orders;

-- name: drill_to_detail
-- "Drill to detail" from a bar of the region chart: raw rows of that
-- bar, paginated (page size 50).
SELECT order_id AS order_id, created_at AS created_at, product AS product, amount AS amount, status AS status
FROM public.orders
WHERE region = 'north'
  AND created_at >= TO_TIMESTAMP('2026-03-10 00:00:00.000000', 'YYYY-MM-DD HH24:MI:SS.US')
  AND created_at < TO_TIMESTAMP('2026-03-14 00:00:00.000000', 'YYYY-MM-DD HH24:MI:SS.US')
ORDER BY created_at ASC
LIMIT 50 OFFSET 0;

-- name: mixed_chart_cast_date
-- A dataset column whose expression is CAST(created_at AS DATE), the
-- x-axis of a mixed chart.
SELECT CAST(created_at AS DATE) AS created_day, COUNT(*) AS count, SUM(quantity) AS "SUM(quantity)"
FROM public.orders
GROUP BY CAST(created_at AS DATE)
LIMIT 10000;

-- name: table_having_filter
-- Table chart with a HAVING clause (the "Custom SQL" HAVING box) and a
-- custom-SQL metric.
SELECT customer_id AS customer_id, SUM(amount) / COUNT(*) AS "per_order", SUM(amount) AS "SUM(amount)"
FROM public.orders
GROUP BY customer_id
HAVING SUM(amount) > 9000
ORDER BY "SUM(amount)" DESC
LIMIT 1000;

-- name: filter_not_in
-- A "NOT IN" ad-hoc filter (rows with a NULL region are dropped, as in
-- PostgreSQL) and a "!=" filter.
SELECT region AS region, COUNT(*) AS count
FROM public.orders
WHERE region NOT IN ('east') AND status != 'complete'
GROUP BY region
LIMIT 10000;

-- name: avg_integer_metric
-- Metric AVG(quantity) over an integer column.
SELECT product AS product, AVG(quantity) AS "AVG(quantity)"
FROM public.orders
GROUP BY product
LIMIT 10000;

-- name: table_sort_desc_nulls
-- Table chart sorted descending by a dimension that has NULLs
-- (PostgreSQL puts NULLs first in DESC order).
SELECT region AS region, SUM(revenue) AS "SUM(revenue)"
FROM public.region_sales
GROUP BY region
ORDER BY region DESC
LIMIT 10000;

-- name: big_number_no_data
-- Big Number over a filter that matches nothing: COUNT is 0, SUM and
-- AVG are NULL, one row.
SELECT COUNT(*) AS count, SUM(amount) AS "SUM(amount)", AVG(amount) AS "AVG(amount)", MAX(created_at) AS "MAX(created_at)"
FROM public.orders
WHERE region IN ('atlantis')
LIMIT 10000;

-- name: sort_by_hidden_metric
-- Bar chart "Sort by" a metric that is not displayed.
SELECT product AS product, COUNT(*) AS count
FROM public.orders
GROUP BY product
ORDER BY SUM(amount) DESC
LIMIT 10000;

-- name: virtual_dataset_with_cte
-- A virtual dataset whose SQL has a CTE: Superset hoists it and makes
-- the dataset a CTE of its own (__cte) for databases that cannot nest
-- a WITH in FROM.
WITH completed AS (SELECT region, amount FROM orders WHERE status = 'complete'),
__cte AS (SELECT region, SUM(amount) AS total, COUNT(*) AS n FROM completed GROUP BY region)
SELECT region AS region, SUM(total) AS "SUM(total)", SUM(n) AS "SUM(n)"
FROM __cte AS virtual_table
GROUP BY region
LIMIT 10000;

-- name: custom_sql_ratio_metric
-- A custom SQL metric: an average computed as a ratio with 1.0 (a
-- numeric literal) and NULLIF.
SELECT status AS status, SUM(quantity) * 1.0 / NULLIF(COUNT(*), 0) AS "units_per_order"
FROM public.orders
GROUP BY status
LIMIT 10000;
