-- Power BI Desktop's PostgreSQL connector (Npgsql): the SQL Power
-- Query folds its steps into, in import and DirectQuery modes — the
-- navigator's table as "public"."t" "$Table", each folded step wrapping
-- the last as a subquery aliased "_" (grouping as "rows", merges as
-- "$Outer" and "$Inner"), lower-case keywords, literals inlined, the
-- preview's limit 1000, a DirectQuery visual's limit 1000001. Npgsql
-- runs every statement through the extended protocol (Parse, Bind,
-- Execute) without parameters.
-- protocol: extended

-- name: navigator_preview
-- The navigator's preview of a table's first rows.
select "$Table"."order_id",
    "$Table"."created_at",
    "$Table"."region",
    "$Table"."product",
    "$Table"."quantity",
    "$Table"."amount",
    "$Table"."status",
    "$Table"."customer_id"
from "public"."orders" "$Table"
limit 1000;

-- name: import_view
-- Load (import) a view.
select "_"."region",
    "_"."orders",
    "_"."revenue"
from "public"."region_sales" "_";

-- name: filtered_rows
-- Filtered Rows step: two conditions folded into the WHERE.
select "_"."order_id",
    "_"."region",
    "_"."amount"
from "public"."orders" "_"
where "_"."region" = 'east' and "_"."amount" > 100;

-- name: grouped_rows
-- Group By step over a filtered step.
select "rows"."region" as "region",
    sum("rows"."amount") as "Total",
    count(1) as "Count"
from
(
    select "_"."region",
        "_"."amount"
    from "public"."orders" "_"
    where "_"."status" = 'complete'
) "rows"
group by "region";

-- name: directquery_visual
-- A DirectQuery bar visual: a grouped subquery, capped.
select "_"."product",
    "_"."a0"
from
(
    select "rows"."product" as "product",
        sum("rows"."quantity") as "a0"
    from "public"."orders" "rows"
    group by "product"
) "_"
where not "_"."a0" is null
limit 1000001;

-- name: kept_top_rows
-- Sorted Rows then Kept First Rows (10).
select "_"."day",
    "_"."region",
    "_"."revenue"
from "public"."daily_sales" "_"
order by "_"."revenue" desc
limit 10;

-- name: datetime_filter
-- A filter on a datetime column folded as a timestamp literal.
select "_"."order_id",
    "_"."created_at",
    "_"."amount"
from "public"."orders" "_"
where "_"."created_at" >= timestamp '2026-03-12 00:00:00' and "_"."created_at" < timestamp '2026-03-12 06:00:00';

-- name: changed_type_numeric
-- Changed Type to Decimal Number, then a Group By average.
select "rows"."status" as "status",
    avg("rows"."amount") as "Average"
from
(
    select "_"."status",
        cast("_"."amount" as numeric) as "amount"
    from "public"."orders" "_"
) "rows"
group by "status";

-- name: date_year
-- Date.Year added as a column, then grouped.
select "rows"."Year" as "Year",
    count(1) as "Count"
from
(
    select date_part('year', "_"."created_at") as "Year"
    from "public"."orders" "_"
) "rows"
group by "Year";

-- name: date_from
-- Date.From (the date part) as a column, then grouped.
select "rows"."Date" as "Date",
    sum("rows"."amount") as "Total"
from
(
    select cast("_"."created_at" as date) as "Date",
        "_"."amount"
    from "public"."orders" "_"
) "rows"
group by "Date";

-- name: merge_queries
-- Merge Queries (left outer) orders with customers, expanded.
select "$Outer"."order_id",
    "$Outer"."amount",
    "$Inner"."name"
from
(
    select "_"."order_id",
        "_"."amount",
        "_"."customer_id"
    from "public"."orders" "_"
) "$Outer"
left outer join
(
    select "_"."customer_id" as "customer_id2",
        "_"."name"
    from "public"."customers" "_"
) "$Inner" on ("$Outer"."customer_id" = "$Inner"."customer_id2");

-- name: text_contains
-- Text.Contains filter folded to LIKE.
select "_"."order_id",
    "_"."product"
from "public"."orders" "_"
where "_"."product" like '%dg%';

-- name: remove_duplicates
-- Remove Duplicates over two columns.
select distinct "_"."region",
    "_"."status"
from "public"."orders" "_";

-- name: replace_nulls
-- Replaced Value null with "unknown".
select coalesce("_"."region", 'unknown') as "region",
    "_"."orders"
from "public"."region_sales" "_";

-- name: row_count
-- Table.RowCount folded to a count.
select count(1) as "C1"
from "public"."orders" "_";

-- name: conditional_column
-- Added Conditional Column, then grouped on it.
select "rows"."Size" as "Size",
    count(1) as "Count"
from
(
    select case when "_"."amount" >= 250 then 'large' else 'small' end as "Size"
    from "public"."orders" "_"
) "rows"
group by "Size";

-- name: join_view_not_null
-- A stream–table join view with a not-null filter.
select "_"."segment",
    "_"."orders",
    "_"."revenue"
from "public"."segment_sales" "_"
where not "_"."segment" is null;

-- name: table_aggregation_view
-- A view aggregating a table.
select "_"."segment",
    "_"."customers"
from "public"."customer_segments" "_";

-- name: sort_desc_nulls
-- Sorted Rows descending on a column with NULLs.
select "_"."region",
    "_"."revenue"
from "public"."region_sales" "_"
order by "_"."region" desc;

-- name: text_functions
-- Uppercased Text, First Characters (3) and Length columns.
select upper("_"."product") as "product",
    left("_"."status", 4) as "status",
    length("_"."product") as "Length"
from "public"."orders" "_"
where "_"."order_id" < 20;

-- name: average_integer
-- Group By with the average of an integer column.
select "rows"."product" as "product",
    avg("rows"."quantity") as "Average"
from "public"."orders" "rows"
group by "product";

-- name: discard_all
-- Npgsql's connection pool resets a pooled connection before Power BI
-- reuses it (a simple query, as Power BI's server logs show it).
-- protocol: simple
DISCARD ALL;
