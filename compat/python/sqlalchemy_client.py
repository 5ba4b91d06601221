"""SQLAlchemy 1.4 (psycopg2 dialect) against basin.

Run by compat/compat_test.go with /usr/bin/python3 (Debian's
python3-sqlalchemy and python3-psycopg2):

    sqlalchemy_client.py URL basic|catalog

"basic" connects, runs text() queries with bound parameters and checks a
bad query's SQLSTATE. It creates the engine with use_native_hstore=False:
by default the psycopg2 dialect probes pg_type for hstore on connect, a
catalog query that "catalog" mode makes with the default engine. "catalog"
also lists basin's relations with inspect(), printing each step's error in
place of its result. Prints "name: value" lines
that the Go test compares; exits non-zero on anything unexpected.
"""
import sys

import sqlalchemy as sa
import sqlalchemy.exc


def out(name, value):
    print(f"{name}: {value}", flush=True)


def basic(url):
    engine = sa.create_engine(url, use_native_hstore=False)
    with engine.connect() as conn:
        out("server_version_info", ".".join(str(v) for v in engine.dialect.server_version_info))
        out("default_schema_name", engine.dialect.default_schema_name)
        rows = conn.execute(
            sa.text("SELECT region, orders, revenue FROM revenue_by_region WHERE region = :region"),
            {"region": "us"},
        ).all()
        out("us", ";".join(f"{r.region}|{r.orders}|{r.revenue}" for r in rows))
        stmt = sa.text(
            "SELECT order_id, customer, amount FROM order_by_id WHERE order_id >= :lo AND order_id <= :hi ORDER BY order_id"
        ).bindparams(sa.bindparam("lo", type_=sa.BigInteger), sa.bindparam("hi", type_=sa.BigInteger))
        rows = conn.execute(stmt, {"lo": 10, "hi": 12}).mappings().all()
        out("orders 10-12", ";".join(f"{r['order_id']}|{r['customer']}|{r['amount']}" for r in rows))
        out("scalar", conn.execute(sa.text("SELECT count(*) FROM order_by_id WHERE amount > :a"), {"a": 20}).scalar())
        try:
            conn.execute(sa.text("SELECT nope FROM revenue_by_region WHERE region = :r"), {"r": "eu"})
            out("bad query", "no error")
        except sqlalchemy.exc.DBAPIError as e:
            out("bad query", f"{e.orig.pgcode} {type(e).__name__}")
    engine.dispose()


def step(name, fn):
    """Prints fn()'s result, or its error in its place, so that one failing
    catalog query does not hide the others."""
    try:
        out(name, fn())
    except sqlalchemy.exc.DBAPIError as e:
        out(name, f"ERROR {getattr(e.orig, 'pgcode', None)} {str(e.orig).splitlines()[0]}")
    except Exception as e:
        out(name, f"ERROR {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")


def catalog(url):
    # The default engine probes pg_type for the hstore type on connect.
    def default_engine():
        engine = sa.create_engine(url)
        try:
            with engine.connect() as conn:
                return conn.execute(sa.text("SELECT 1")).scalar()
        finally:
            engine.dispose()

    step("default engine", default_engine)

    engine = sa.create_engine(url, use_native_hstore=False)
    insp = sa.inspect(engine)
    step("get_schema_names", lambda: ",".join(insp.get_schema_names()))
    tables, views = [], []

    def table_names():
        tables.extend(insp.get_table_names())
        return ",".join(sorted(tables))

    def view_names():
        views.extend(insp.get_view_names())
        return ",".join(sorted(views))

    step("get_table_names", table_names)
    step("get_view_names", view_names)
    out("tables and views", ",".join(sorted(tables + views)))
    for rel in ("revenue_by_region", "order_by_id", "customers", "orders"):
        step(f"get_columns {rel}", lambda: ",".join(f"{c['name']}:{c['type']}" for c in insp.get_columns(rel)))
    for rel in ("revenue_by_region", "customers"):
        step(f"get_pk_constraint {rel}", lambda: ",".join(insp.get_pk_constraint(rel)["constrained_columns"]))

    def reflected_select():
        t = sa.Table("revenue_by_region", sa.MetaData(), autoload_with=engine)
        with engine.connect() as conn:
            rows = conn.execute(sa.select(t.c.region, t.c.revenue).where(t.c.region == sa.bindparam("r")), {"r": "apac"}).all()
        return ";".join(f"{r.region}|{r.revenue}" for r in rows)

    step("reflected select", reflected_select)
    engine.dispose()


def main():
    out("version", sa.__version__)
    url, mode = sys.argv[1], sys.argv[2]
    {"basic": basic, "catalog": catalog}[mode](url)


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # report and fail
        print(f"sqlalchemy client failed: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(1)
