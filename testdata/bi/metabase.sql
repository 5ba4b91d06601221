-- Metabase over PostgreSQL: the SQL its query builder compiles and its
-- native questions send. Shapes from the Postgres driver
-- (src/metabase/driver/postgres.clj: date bucketing — day is
-- CAST(x AS date), hour-of-day and the like are
-- CAST(extract(<unit> from x) AS integer), day-of-week adds 1 to dow,
-- week starts on Sunday by shifting a day in and out of
-- DATE_TRUNC('week', ...)) and from the SQL query processor (every
-- column qualified as "public"."table"."column" and aliased, joined
-- tables aliased by their display name, nested questions as
-- FROM (...) AS "source", relative date filters from NOW() plus an
-- INTERVAL, result rows capped by LIMIT 2000 for ad-hoc questions).
-- Metabase runs through pgjdbc's prepared statements, so every query
-- goes in the extended protocol; the queries with "-- param:" lines
-- bind values the way the JDBC driver does (typed parameters, or untyped
-- ones for timestamps).
-- protocol: extended

-- name: raw_table_preview
-- Browse data / "Raw data" question: every column, the row cap.
SELECT "public"."orders"."order_id" AS "order_id", "public"."orders"."created_at" AS "created_at",
       "public"."orders"."region" AS "region", "public"."orders"."product" AS "product",
       "public"."orders"."quantity" AS "quantity", "public"."orders"."amount" AS "amount",
       "public"."orders"."status" AS "status", "public"."orders"."customer_id" AS "customer_id"
FROM "public"."orders"
LIMIT 2000;

-- name: count_rows
-- Summarize: Count of rows (the "Number" visualization).
SELECT COUNT(*) AS "count" FROM "public"."orders";

-- name: count_by_region
-- Summarize Count by a category (bar chart), sorted by the breakout.
SELECT "public"."orders"."region" AS "region", COUNT(*) AS "count"
FROM "public"."orders"
GROUP BY "public"."orders"."region"
ORDER BY "public"."orders"."region" ASC;

-- name: sum_by_day
-- Summarize Sum of amount by created_at: Day (line chart).
SELECT CAST("public"."orders"."created_at" AS date) AS "created_at", SUM("public"."orders"."amount") AS "sum"
FROM "public"."orders"
GROUP BY CAST("public"."orders"."created_at" AS date)
ORDER BY CAST("public"."orders"."created_at" AS date) ASC;

-- name: sum_by_week
-- Summarize by created_at: Week (weeks start on Sunday).
SELECT (DATE_TRUNC('week', ("public"."orders"."created_at" + INTERVAL '1 day')) + INTERVAL '-1 day') AS "created_at",
       SUM("public"."orders"."amount") AS "sum"
FROM "public"."orders"
GROUP BY (DATE_TRUNC('week', ("public"."orders"."created_at" + INTERVAL '1 day')) + INTERVAL '-1 day')
ORDER BY (DATE_TRUNC('week', ("public"."orders"."created_at" + INTERVAL '1 day')) + INTERVAL '-1 day') ASC;

-- name: sum_by_month_view
-- Summarize a view's column by Month.
SELECT DATE_TRUNC('month', "public"."daily_sales"."day") AS "day", SUM("public"."daily_sales"."revenue") AS "sum"
FROM "public"."daily_sales"
GROUP BY DATE_TRUNC('month', "public"."daily_sales"."day")
ORDER BY DATE_TRUNC('month', "public"."daily_sales"."day") ASC;

-- name: count_by_hour_minute
-- Summarize by created_at: Minute, within one hour (a drill-down from
-- an hour bucket: the filter is the bucket's bounds).
SELECT DATE_TRUNC('minute', "public"."orders"."created_at") AS "created_at", COUNT(*) AS "count"
FROM "public"."orders"
WHERE "public"."orders"."created_at" >= timestamp '2026-03-11 09:00:00.000'
  AND "public"."orders"."created_at" < timestamp '2026-03-11 10:00:00.000'
GROUP BY DATE_TRUNC('minute', "public"."orders"."created_at")
ORDER BY DATE_TRUNC('minute', "public"."orders"."created_at") ASC;

-- name: count_by_hour_of_day
-- Summarize by created_at: Hour of day.
SELECT CAST(extract(hour from "public"."orders"."created_at") AS integer) AS "created_at", COUNT(*) AS "count"
FROM "public"."orders"
GROUP BY CAST(extract(hour from "public"."orders"."created_at") AS integer)
ORDER BY CAST(extract(hour from "public"."orders"."created_at") AS integer) ASC;

-- name: count_by_day_of_week
-- Summarize by created_at: Day of week (1 is Sunday).
SELECT (CAST(extract(dow from "public"."orders"."created_at") AS integer) + 1) AS "created_at", COUNT(*) AS "count"
FROM "public"."orders"
GROUP BY (CAST(extract(dow from "public"."orders"."created_at") AS integer) + 1)
ORDER BY (CAST(extract(dow from "public"."orders"."created_at") AS integer) + 1) ASC;

-- name: filter_previous_30_days
-- Filter created_at: Previous 30 days (relative to NOW(), excluding
-- today).
SELECT COUNT(*) AS "count"
FROM "public"."orders"
WHERE "public"."orders"."created_at" >= CAST((NOW() + INTERVAL '-30 day') AS date)
  AND "public"."orders"."created_at" < CAST(NOW() AS date);

-- name: filter_last_7_days_trunc
-- Filter created_at: Previous 7 days including today, the DATE_TRUNC
-- form of newer versions.
SELECT "public"."orders"."region" AS "region", COUNT(*) AS "count"
FROM "public"."orders"
WHERE "public"."orders"."created_at" >= DATE_TRUNC('day', (NOW() + INTERVAL '-7 day'))
  AND "public"."orders"."created_at" < DATE_TRUNC('day', (NOW() + INTERVAL '1 day'))
GROUP BY "public"."orders"."region"
ORDER BY "public"."orders"."region" ASC;

-- name: filter_between_dates
-- Filter created_at: Between two specific dates.
SELECT "public"."orders"."product" AS "product", SUM("public"."orders"."amount") AS "sum"
FROM "public"."orders"
WHERE "public"."orders"."created_at" >= timestamp '2026-03-10 00:00:00.000'
  AND "public"."orders"."created_at" < timestamp '2026-03-13 00:00:00.000'
GROUP BY "public"."orders"."product"
ORDER BY "public"."orders"."product" ASC;

-- name: filter_between_dates_params
-- The same filter as the JDBC driver binds it: timestamp parameters.
-- param: timestamp 2026-03-10 00:00:00
-- param: timestamp 2026-03-13 00:00:00
SELECT "public"."orders"."product" AS "product", SUM("public"."orders"."amount") AS "sum"
FROM "public"."orders"
WHERE "public"."orders"."created_at" >= $1
  AND "public"."orders"."created_at" < $2
GROUP BY "public"."orders"."product"
ORDER BY "public"."orders"."product" ASC;

-- name: filter_is_param
-- Filter status "Is" a value, bound as a varchar parameter.
-- param: varchar complete
SELECT "public"."orders"."region" AS "region", SUM("public"."orders"."amount") AS "sum"
FROM "public"."orders"
WHERE "public"."orders"."status" = $1
GROUP BY "public"."orders"."region"
ORDER BY "public"."orders"."region" ASC;

-- name: filter_in_params
-- Filter region "Is" two values: an IN list of parameters.
-- param: varchar east
-- param: varchar south
SELECT COUNT(*) AS "count", AVG("public"."orders"."amount") AS "avg"
FROM "public"."orders"
WHERE "public"."orders"."region" IN ($1, $2);

-- name: filter_contains_case_insensitive
-- Filter product "Contains" (case-insensitive): LOWER(col) LIKE.
SELECT "public"."orders"."product" AS "product", COUNT(*) AS "count"
FROM "public"."orders"
WHERE LOWER("public"."orders"."product") LIKE '%dg%'
GROUP BY "public"."orders"."product"
ORDER BY "public"."orders"."product" ASC;

-- name: filter_starts_with
-- Filter product "Starts with".
SELECT COUNT(*) AS "count"
FROM "public"."orders"
WHERE "public"."orders"."product" LIKE 'Gi%';

-- name: filter_is_empty
-- Filter region "Is empty": NULL or the empty string.
SELECT COUNT(*) AS "count"
FROM "public"."orders"
WHERE ("public"."orders"."region" IS NULL) OR ("public"."orders"."region" = '');

-- name: join_customers_raw
-- Join data: orders left-joined to customers, joined columns aliased
-- by the joined table's display name.
SELECT "public"."orders"."order_id" AS "order_id", "public"."orders"."amount" AS "amount",
       "Customers"."name" AS "Customers__name", "Customers"."segment" AS "Customers__segment"
FROM "public"."orders"
LEFT JOIN "public"."customers" AS "Customers" ON "public"."orders"."customer_id" = "Customers"."customer_id"
LIMIT 2000;

-- name: join_customers_grouped
-- Join, then summarize by a joined column.
SELECT "Customers"."segment" AS "Customers__segment", SUM("public"."orders"."amount") AS "sum", COUNT(*) AS "count"
FROM "public"."orders"
LEFT JOIN "public"."customers" AS "Customers" ON "public"."orders"."customer_id" = "Customers"."customer_id"
GROUP BY "Customers"."segment"
ORDER BY "Customers"."segment" ASC;

-- name: nested_question
-- A question built on a saved question: the saved one becomes
-- FROM (...) AS "source".
SELECT "source"."region" AS "region", AVG("source"."sum") AS "avg"
FROM (SELECT "public"."orders"."region" AS "region", DATE_TRUNC('day', "public"."orders"."created_at") AS "created_at",
             SUM("public"."orders"."amount") AS "sum"
      FROM "public"."orders"
      GROUP BY "public"."orders"."region", DATE_TRUNC('day', "public"."orders"."created_at")) AS "source"
GROUP BY "source"."region"
ORDER BY "source"."region" ASC;

-- name: distinct_count_average
-- Summarize: Number of distinct values and Average, by status.
SELECT "public"."orders"."status" AS "status", COUNT(DISTINCT "public"."orders"."customer_id") AS "count",
       AVG("public"."orders"."amount") AS "avg"
FROM "public"."orders"
GROUP BY "public"."orders"."status"
ORDER BY "public"."orders"."status" ASC;

-- name: top_n_view
-- Sort by the metric descending and limit (a "top 3" question) over a
-- view.
SELECT "public"."region_sales"."region" AS "region", SUM("public"."region_sales"."revenue") AS "sum"
FROM "public"."region_sales"
GROUP BY "public"."region_sales"."region"
ORDER BY "sum" DESC, "public"."region_sales"."region" ASC
LIMIT 3;

-- name: binning_amount
-- Summarize by amount with auto-binning (bins of 50).
SELECT (FLOOR(("public"."orders"."amount" / 50.0)) * 50.0) AS "amount", COUNT(*) AS "count"
FROM "public"."orders"
GROUP BY (FLOOR(("public"."orders"."amount" / 50.0)) * 50.0)
ORDER BY (FLOOR(("public"."orders"."amount" / 50.0)) * 50.0) ASC;

-- name: sum_where_custom_expression
-- Custom aggregation SumIf([amount], [status] = "complete").
SELECT "public"."orders"."region" AS "region",
       SUM(CASE WHEN "public"."orders"."status" = 'complete' THEN "public"."orders"."amount" ELSE 0.0 END) AS "sum_complete"
FROM "public"."orders"
GROUP BY "public"."orders"."region"
ORDER BY "public"."orders"."region" ASC;

-- name: object_detail
-- Object detail view (a click on a row's ID): the row by its key.
-- param: int8 42
SELECT "public"."orders"."order_id" AS "order_id", "public"."orders"."region" AS "region",
       "public"."orders"."amount" AS "amount", "public"."orders"."status" AS "status"
FROM "public"."orders"
WHERE "public"."orders"."order_id" = $1
LIMIT 1;

-- name: native_query_variable
-- Native (SQL) question with a {{region}} text variable, substituted
-- as a parameter.
-- param: varchar west
SELECT day, orders, revenue FROM daily_sales WHERE region = $1 ORDER BY day;

-- name: xray_segment_join_view
-- X-ray of the stream-table join view: counts by segment and country.
SELECT "public"."order_details"."segment" AS "segment", "public"."order_details"."country" AS "country", COUNT(*) AS "count"
FROM "public"."order_details"
GROUP BY "public"."order_details"."segment", "public"."order_details"."country"
ORDER BY "public"."order_details"."segment" ASC, "public"."order_details"."country" ASC;

-- name: cumulative_sum
-- Cumulative sum of amount by created_at: Day (window function form of
-- newer versions).
SELECT DATE_TRUNC('day', "public"."orders"."created_at") AS "created_at",
       SUM(SUM("public"."orders"."amount")) OVER (ORDER BY DATE_TRUNC('day', "public"."orders"."created_at") ASC ROWS UNBOUNDED PRECEDING) AS "sum"
FROM "public"."orders"
GROUP BY DATE_TRUNC('day', "public"."orders"."created_at")
ORDER BY DATE_TRUNC('day', "public"."orders"."created_at") ASC;

-- name: median_amount
-- Summarize: Median of amount.
SELECT "public"."orders"."region" AS "region",
       PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY "public"."orders"."amount") AS "median"
FROM "public"."orders"
GROUP BY "public"."orders"."region"
ORDER BY "public"."orders"."region" ASC;

-- name: count_if
-- Custom aggregation CountIf([status] = "refunded"), and an average
-- of an integer column.
SELECT "public"."orders"."product" AS "product",
       COUNT(CASE WHEN "public"."orders"."status" = 'refunded' THEN 1 END) AS "count_refunded",
       AVG("public"."orders"."quantity") AS "avg"
FROM "public"."orders"
GROUP BY "public"."orders"."product"
ORDER BY "public"."orders"."product" ASC;

-- name: sort_desc_nulls
-- Sort by a breakout descending: NULLs first, as PostgreSQL sorts.
SELECT "public"."orders"."region" AS "region", COUNT(*) AS "count"
FROM "public"."orders"
GROUP BY "public"."orders"."region"
ORDER BY "public"."orders"."region" DESC;

-- name: join_saved_question
-- Join to a saved question: the question becomes a subquery aliased by
-- its name.
SELECT "public"."customers"."segment" AS "segment", SUM("Question 5"."sum") AS "sum"
FROM "public"."customers"
LEFT JOIN (SELECT "public"."orders"."customer_id" AS "customer_id", SUM("public"."orders"."amount") AS "sum"
           FROM "public"."orders"
           GROUP BY "public"."orders"."customer_id") AS "Question 5"
  ON "public"."customers"."customer_id" = "Question 5"."customer_id"
GROUP BY "public"."customers"."segment"
ORDER BY "public"."customers"."segment" ASC;

-- name: table_aggregation_view_param
-- A dashboard filter on a view aggregating the customers table, bound
-- as a parameter.
-- param: varchar Corporate
SELECT "public"."customer_segments"."segment" AS "segment", "public"."customer_segments"."customers" AS "customers"
FROM "public"."customer_segments"
WHERE "public"."customer_segments"."segment" = $1;

-- name: filter_dates_unspecified_params
-- pgjdbc's setTimestamp binds a timestamp as an untyped parameter (OID
-- 0) whose text carries an offset: the server types it from the column.
-- param: unknown 2026-03-11 00:00:00+00
-- param: unknown 2026-03-12 00:00:00+00
SELECT COUNT(*) AS "count", SUM("public"."orders"."amount") AS "sum"
FROM "public"."orders"
WHERE "public"."orders"."created_at" >= $1 AND "public"."orders"."created_at" < $2;

-- name: filter_number_params
-- Number filters "Greater than" and "Between", bound as a double and
-- integers.
-- param: float8 250.5
-- param: int4 2
-- param: int4 4
SELECT "public"."orders"."status" AS "status", COUNT(*) AS "count"
FROM "public"."orders"
WHERE "public"."orders"."amount" > $1 AND "public"."orders"."quantity" BETWEEN $2 AND $3
GROUP BY "public"."orders"."status"
ORDER BY "public"."orders"."status" ASC;

-- name: standard_deviation
-- Summarize: Standard deviation of amount.
SELECT "public"."orders"."status" AS "status", STDDEV_POP("public"."orders"."amount") AS "stddev"
FROM "public"."orders"
GROUP BY "public"."orders"."status"
ORDER BY "public"."orders"."status" ASC;

-- name: no_data_breakout
-- A breakout over a filter that matches nothing: no rows.
-- empty
SELECT "public"."orders"."product" AS "product", COUNT(*) AS "count", AVG("public"."orders"."amount") AS "avg"
FROM "public"."orders"
WHERE "public"."orders"."status" = 'lost'
GROUP BY "public"."orders"."product"
ORDER BY "public"."orders"."product" ASC;

-- name: offset_previous_period
-- Offset([Sum of amount], -1): the previous day's value beside each
-- day's (a window LAG over the aggregate).
SELECT DATE_TRUNC('day', "public"."orders"."created_at") AS "created_at",
       SUM("public"."orders"."amount") AS "sum",
       LAG(SUM("public"."orders"."amount"), 1) OVER (ORDER BY DATE_TRUNC('day', "public"."orders"."created_at") ASC) AS "previous"
FROM "public"."orders"
WHERE "public"."orders"."created_at" < timestamp '2026-03-16 00:00:00.000'
GROUP BY DATE_TRUNC('day', "public"."orders"."created_at")
ORDER BY DATE_TRUNC('day', "public"."orders"."created_at") ASC;
