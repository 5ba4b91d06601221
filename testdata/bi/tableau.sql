-- Tableau's PostgreSQL connector: the SQL it generates for worksheets,
-- filters and extracts, in the shapes its query logs show — tables as
-- "public"."t" "t" (the alias is the table's name), every column
-- qualified and aliased as "<aggregation>:<field>:<role>" ("sum:amount:ok",
-- "none:region:nk", "tmn:created_at:ok" for a month truncation,
-- "yr:created_at:ok" for a discrete year), GROUP BY by position, date
-- parts as CAST(EXTRACT(...) AS BIGINT), truncations as
-- DATE_TRUNC('MONTH', CAST(c AS TIMESTAMP WITHOUT TIME ZONE)) or casts
-- to DATE, timestamp literals as (TIMESTAMP '...'), top-N filters as an
-- inner join to a limited subquery "t0", relationships as joins, custom
-- SQL wrapped as FROM (<sql>) "Custom SQL Query", its metadata probed
-- with LIMIT 0. Tableau's libpq connection sends each as one simple
-- query.

-- name: bar_sum_by_region
-- Bar chart: SUM(amount) by region.
SELECT "orders"."region" AS "region",
  SUM("orders"."amount") AS "sum:amount:ok"
FROM "public"."orders" "orders"
GROUP BY 1;

-- name: number_of_records
-- A text table of the Number of Records measure alone.
SELECT SUM(1) AS "sum:Number of Records:ok"
FROM "public"."orders" "orders"
HAVING (COUNT(1) > 0);

-- name: quick_filter_domain
-- A categorical quick filter's list of values.
SELECT "orders"."status" AS "status"
FROM "public"."orders" "orders"
GROUP BY 1
ORDER BY 1 ASC;

-- name: month_truncation_date
-- Line chart by MONTH(created_at), continuous: a truncation cast to DATE.
SELECT CAST(DATE_TRUNC('MONTH', CAST("orders"."created_at" AS DATE)) AS DATE) AS "tmn:created_at:ok",
  SUM("orders"."amount") AS "sum:amount:ok"
FROM "public"."orders" "orders"
GROUP BY 1;

-- name: hour_truncation
-- Line chart by HOUR(created_at), continuous.
SELECT DATE_TRUNC('HOUR', CAST("orders"."created_at" AS TIMESTAMP WITHOUT TIME ZONE)) AS "thr:created_at:ok",
  COUNT("orders"."order_id") AS "cnt:order_id:ok"
FROM "public"."orders" "orders"
WHERE (("orders"."created_at" >= (TIMESTAMP '2026-03-11 00:00:00.000')) AND ("orders"."created_at" <= (TIMESTAMP '2026-03-11 23:59:59.999')))
GROUP BY 1;

-- name: discrete_year_day
-- Discrete date parts YEAR and DAY as dimensions.
SELECT CAST(EXTRACT(YEAR FROM "orders"."created_at") AS BIGINT) AS "yr:created_at:ok",
  CAST(EXTRACT(DAY FROM "orders"."created_at") AS BIGINT) AS "dy:created_at:ok",
  SUM("orders"."quantity") AS "sum:quantity:ok"
FROM "public"."orders" "orders"
GROUP BY 1, 2;

-- name: weekday_name
-- Discrete WEEKDAY(created_at) shown as names.
SELECT TO_CHAR("orders"."created_at", 'Day') AS "wd:created_at:nk",
  COUNT(1) AS "cnt:Number of Records:ok"
FROM "public"."orders" "orders"
GROUP BY 1;

-- name: exact_date
-- Exact date (DAY precision, continuous): a cast to DATE.
SELECT CAST("orders"."created_at" AS DATE) AS "tdy:created_at:ok",
  SUM("orders"."amount") AS "sum:amount:ok"
FROM "public"."orders" "orders"
GROUP BY 1;

-- name: date_range_filter
-- A range-of-dates filter with an average.
SELECT "orders"."product" AS "product",
  AVG("orders"."amount") AS "avg:amount:ok"
FROM "public"."orders" "orders"
WHERE (("orders"."created_at" >= (TIMESTAMP '2026-03-10 00:00:00.000')) AND ("orders"."created_at" <= (TIMESTAMP '2026-03-12 23:59:59.999')))
GROUP BY 1;

-- name: categorical_filter_in
-- A multiple-values filter on region.
SELECT "orders"."status" AS "status",
  SUM("orders"."amount") AS "sum:amount:ok"
FROM "public"."orders" "orders"
WHERE ("orders"."region" IN ('east', 'south'))
GROUP BY 1;

-- name: top_n_filter
-- A Top 3 products by SUM(amount) filter: an inner join to the
-- limited ranking.
SELECT "orders"."product" AS "product",
  "orders"."region" AS "region",
  SUM("orders"."amount") AS "sum:amount:ok"
FROM "public"."orders" "orders"
  INNER JOIN (
  SELECT "orders"."product" AS "product",
    SUM("orders"."amount") AS "$__alias__0"
  FROM "public"."orders" "orders"
  GROUP BY 1
  ORDER BY 2 DESC
  LIMIT 3
) "t0" ON ("orders"."product" = "t0"."product")
GROUP BY 1, 2;

-- name: relationship_join
-- A relationship orders–customers: a dimension of one and a measure of
-- the other.
SELECT "customers"."segment" AS "segment",
  SUM("orders"."amount") AS "sum:amount:ok"
FROM "public"."orders" "orders"
  LEFT JOIN "public"."customers" "customers" ON ("orders"."customer_id" = "customers"."customer_id")
GROUP BY 1;

-- name: relationship_join_view
-- Relationship of a view to the customers table.
SELECT "customers"."country" AS "country",
  SUM("order_details"."amount") AS "sum:amount:ok"
FROM "public"."order_details" "order_details"
  INNER JOIN "public"."customers" "customers" ON ("order_details"."customer_id" = "customers"."customer_id")
GROUP BY 1;

-- name: custom_sql
-- A Custom SQL data source, wrapped.
SELECT "Custom SQL Query"."region" AS "region",
  SUM("Custom SQL Query"."revenue") AS "sum:revenue:ok"
FROM (
  SELECT region, revenue FROM region_sales
) "Custom SQL Query"
GROUP BY 1;

-- name: custom_sql_metadata
-- The metadata probe of a Custom SQL query: no rows, only columns.
SELECT * FROM (SELECT day, region, revenue FROM daily_sales) "TableauSQL" LIMIT 0;

-- name: count_distinct
-- COUNTD(customer_id) by region.
SELECT "orders"."region" AS "region",
  COUNT(DISTINCT "orders"."customer_id") AS "ctd:customer_id:ok"
FROM "public"."orders" "orders"
GROUP BY 1;

-- name: calculated_if
-- A calculated field IF [status] = 'complete' THEN [amount] END, summed.
SELECT "orders"."region" AS "region",
  SUM((CASE WHEN ("orders"."status" = 'complete') THEN "orders"."amount" ELSE NULL END)) AS "sum:Calculation_1:ok"
FROM "public"."orders" "orders"
GROUP BY 1;

-- name: calculated_int_trunc
-- A calculated field INT([amount] / 100) as a dimension.
SELECT CAST(TRUNC(("orders"."amount" / 100)) AS BIGINT) AS "none:Calculation_2:ok",
  COUNT(1) AS "cnt:Number of Records:ok"
FROM "public"."orders" "orders"
GROUP BY 1;

-- name: wildcard_filter
-- A wildcard match filter ("contains g", case-insensitive).
SELECT "orders"."product" AS "product"
FROM "public"."orders" "orders"
WHERE (STRPOS(LOWER("orders"."product"), LOWER('g')) > 0)
GROUP BY 1;

-- name: date_filter_domain
-- The bounds of a date range filter.
SELECT MIN("orders"."created_at") AS "tmn:created_at:min",
  MAX("orders"."created_at") AS "tmx:created_at:max"
FROM "public"."orders" "orders"
HAVING (COUNT(1) > 0);

-- name: extract_refresh
-- An extract's full refresh: every column of the view, cast.
SELECT CAST("daily_sales"."day" AS TIMESTAMP WITHOUT TIME ZONE) AS "day",
  CAST("daily_sales"."region" AS TEXT) AS "region",
  CAST("daily_sales"."orders" AS BIGINT) AS "orders",
  "daily_sales"."revenue" AS "revenue"
FROM "public"."daily_sales" "daily_sales";

-- name: dateadd_filter
-- A relative filter through DATEADD('day', -7, #2026-03-15#).
SELECT COUNT(1) AS "cnt:Number of Records:ok"
FROM "public"."orders" "orders"
WHERE ("orders"."created_at" >= ((TIMESTAMP '2026-03-15 00:00:00.000') + (-7 * INTERVAL '1 DAY')));

-- name: iso_week
-- Discrete WEEK (ISO-8601) number.
SELECT CAST(EXTRACT(WEEK FROM "orders"."created_at") AS BIGINT) AS "iwk:created_at:ok",
  SUM("orders"."amount") AS "sum:amount:ok"
FROM "public"."orders" "orders"
GROUP BY 1;

-- name: lod_fixed_null_safe
-- A FIXED level-of-detail expression {FIXED [region] : SUM([amount])}:
-- a join to the per-region subquery on a null-safe equality.
SELECT "orders"."status" AS "status",
  SUM("t0"."__measure__0") AS "sum:Calculation_3:ok"
FROM "public"."orders" "orders"
  INNER JOIN (
  SELECT "orders"."region" AS "region",
    SUM("orders"."amount") AS "__measure__0"
  FROM "public"."orders" "orders"
  GROUP BY 1
) "t0" ON ((("orders"."region" = "t0"."region") OR (("orders"."region" IS NULL) AND ("t0"."region" IS NULL))))
GROUP BY 1;

-- name: is_not_distinct_join
-- The same relationship as newer versions write it: IS NOT DISTINCT FROM.
SELECT "t0"."region" AS "region",
  COUNT(1) AS "cnt:Number of Records:ok"
FROM "public"."orders" "orders"
  INNER JOIN "public"."region_sales" "t0" ON ("orders"."region" IS NOT DISTINCT FROM "t0"."region")
GROUP BY 1;

-- name: avg_integer
-- AVG of an integer measure.
SELECT "orders"."region" AS "region",
  AVG("orders"."quantity") AS "avg:quantity:ok"
FROM "public"."orders" "orders"
GROUP BY 1;

-- name: string_calculation
-- A calculated field LEFT([product], 3) + '-' + UPPER([region]).
SELECT (LEFT("orders"."product", 3) || '-' || UPPER("orders"."region")) AS "none:Calculation_4:nk",
  LENGTH("orders"."product") AS "none:Calculation_5:ok"
FROM "public"."orders" "orders"
GROUP BY 1, 2;

-- name: weekday_number
-- Discrete WEEKDAY as a number (Sunday is 1).
SELECT (CAST(EXTRACT(DOW FROM "orders"."created_at") AS BIGINT) + 1) AS "wd:created_at:ok",
  SUM("orders"."amount") AS "sum:amount:ok"
FROM "public"."orders" "orders"
GROUP BY 1;

-- name: stdev_var
-- STDEV([amount]) and VAR([amount]) measures.
SELECT "orders"."region" AS "region",
  STDDEV_SAMP("orders"."amount") AS "std:amount:ok",
  VAR_SAMP("orders"."amount") AS "var:amount:ok"
FROM "public"."orders" "orders"
GROUP BY 1;

-- name: no_data_having
-- A text table whose filter matches nothing: Tableau's HAVING
-- (COUNT(1) > 0) leaves no row.
-- empty
SELECT SUM(1) AS "sum:Number of Records:ok",
  SUM("orders"."amount") AS "sum:amount:ok"
FROM "public"."orders" "orders"
WHERE ("orders"."region" IN ('atlantis'))
HAVING (COUNT(1) > 0);

-- name: union_of_tables
-- A union of two views in the data source, with Tableau's "Table Name"
-- column.
SELECT "Union"."Table Name" AS "Table Name",
  SUM("Union"."revenue") AS "sum:revenue:ok"
FROM (
  SELECT CAST('region_sales' AS TEXT) AS "Table Name", "region_sales"."region" AS "name", "region_sales"."revenue" AS "revenue"
  FROM "public"."region_sales" "region_sales"
  UNION ALL
  SELECT CAST('segment_sales' AS TEXT) AS "Table Name", "segment_sales"."segment" AS "name", "segment_sales"."revenue" AS "revenue"
  FROM "public"."segment_sales" "segment_sales"
) "Union"
GROUP BY 1;

-- name: quick_filter_domain_nulls_first
-- A quick filter's domain as current versions ask for it: NULLs first,
-- the query's origin in a trailing block comment.
SELECT "orders"."region" AS "region"
FROM "public"."orders" "orders"
GROUP BY 1
ORDER BY "region" ASC NULLS FIRST
/* { "tableau-query-origins": { "query-category": "Unknown", "lqctx-root-activity-id": "QF0bi000region" } } */;

-- name: exclude_filter_case
-- An "Exclude" filter as a CASE yielding FALSE for the excluded
-- values, a constant measure ('1'::double precision), row counts as
-- SUM(1).
SELECT "orders"."product" AS "product",
  '1'::double precision AS "avg:Calculation_6:ok",
  SUM(1) AS "sum:Number of Records:ok"
FROM "public"."orders" "orders"
WHERE (CASE WHEN ("orders"."status" IN ('cancelled', 'refunded')) THEN FALSE ELSE TRUE END)
GROUP BY 1
/* { "tableau-query-origins": { "query-category": "Data", "lqctx-root-activity-id": "DT0bi000product", "lqctx-batch-query-id": "1" } } */;

-- name: group_and_bins_nested
-- A group (CASE over IN lists) and a binned calculation filtered on
-- its label, computed through nested subqueries with $temp columns.
SELECT "t1"."Region (group)" AS "Region (group)",
  SUM(1) AS "sum:Number of Records:ok"
FROM (
  SELECT "t0"."Region (group)" AS "Region (group)",
    (CASE WHEN ("t0"."$temp0_cse" <= 2) THEN 'small' WHEN ("t0"."$temp0_cse" >= 3) THEN 'large' ELSE '' END) AS "Calculation_7"
  FROM (
    SELECT (CASE WHEN ("orders"."region" IN ('east', 'north')) THEN 'north-east' WHEN ("orders"."region" IN ('west', 'south')) THEN 'south-west' ELSE "orders"."region" END) AS "Region (group)",
      (CASE WHEN ("orders"."quantity" >= 1) THEN "orders"."quantity" ELSE null::int END) AS "$temp0_cse"
    FROM "public"."orders" "orders"
  ) "t0"
) "t1"
WHERE ("t1"."Calculation_7" = 'large')
GROUP BY 1
/* { "tableau-query-origins": { "query-category": "Data", "lqctx-root-activity-id": "GB0bi000group", "lqctx-batch-query-id": "4" } } */;
