"""psycopg2 against basin.

Run by compat/compat_test.go with /usr/bin/python3 (Debian's
python3-psycopg2) and PGHOST/PGPORT/PGUSER/PGDATABASE set. Prints
"name: value" lines that the Go test compares; exits non-zero on anything
unexpected.
"""
import json
import select
import sys
import time

import psycopg2
import psycopg2.errors


def out(name, value):
    print(f"{name}: {value}", flush=True)


def main():
    out("version", psycopg2.__version__.split()[0])
    out("libpq", psycopg2.extensions.libpq_version())
    conn = psycopg2.connect("")  # everything from the PG* environment
    conn.autocommit = False  # psycopg2's default: it sends BEGIN first
    out("server_version", conn.server_version)
    cur = conn.cursor()

    # basin's own listing of tables and views.
    cur.execute("SHOW TABLES")
    out("show tables", ",".join(f"{r[0]}:{r[1]}" for r in cur.fetchall()))

    # %s parameters (psycopg2 interpolates them client-side), fetchall and
    # cursor.description with the type OIDs basin reports.
    cur.execute(
        "SELECT region, orders, revenue FROM revenue_by_region WHERE region = %s OR region = %s ORDER BY region",
        ("eu", "us"),
    )
    out("description", ",".join(f"{d.name}:{d.type_code}" for d in cur.description))
    rows = cur.fetchall()
    out("rowcount", cur.rowcount)
    out("regions", ";".join(f"{r[0]}|{r[1]}|{r[2]}|{type(r[1]).__name__}|{type(r[2]).__name__}" for r in rows))

    # fetchone with an integer parameter; a timestamp comes back as datetime.
    cur.execute("SELECT order_id, customer, amount, ts FROM order_by_id WHERE order_id = %s", (42,))
    r = cur.fetchone()
    out("order 42", f"{r[0]}|{r[1]}|{r[2]}|{r[3].isoformat()}")
    out("fetchone after last", cur.fetchone())

    # Named (dict-style) parameters, a string with a quote, fetchmany.
    cur.execute(
        "SELECT id, name FROM customers WHERE tier = %(tier)s AND name <> %(not_name)s ORDER BY id",
        {"tier": "gold", "not_name": "O'Brien"},
    )
    out("gold", ",".join(f"{i}={n}" for i, n in cur.fetchmany(10)))
    conn.commit()

    # A bad query: the SQLSTATE is e.pgcode; the transaction is then
    # aborted as psycopg2 sees it, and rollback makes the connection usable.
    try:
        cur.execute("SELECT nope FROM revenue_by_region WHERE region = %s", ("eu",))
        out("bad query", "no error")
    except psycopg2.Error as e:
        out("bad query", f"{e.pgcode} {type(e).__name__} {e.diag.message_primary}")
        conn.rollback()
    try:
        cur.execute("SELECT * FROM no_such_view")
        out("missing relation", "no error")
    except psycopg2.errors.UndefinedTable as e:
        out("missing relation", e.pgcode)
        conn.rollback()
    cur.execute("SELECT count(*) FROM order_by_id")
    out("after error", cur.fetchone()[0])
    conn.commit()

    # LISTEN/NOTIFY, as psycopg2 documents it: autocommit, then
    # conn.poll() fills conn.notifies. The session hears its own NOTIFY,
    # and LISTEN on a view's name hears the view's changes.
    conn.autocommit = True
    cur.execute("LISTEN hello")
    cur.execute("NOTIFY hello, 'from psycopg2'")
    n = wait_notify(conn, lambda n: n.channel == "hello")
    out("notify", f"{n.channel}|{n.payload}|{n.pid == conn.get_backend_pid()}")
    cur.execute("LISTEN ping_counts")
    cur.execute("INSERT INTO pings VALUES ('psycopg2', 'hi')")
    n = wait_notify(conn, lambda n: n.channel == "ping_counts" and json.loads(n.payload)["client"] == "psycopg2")
    p = json.loads(n.payload)
    out("view notify", f"{n.channel}|{p['client']}|{p['n']}|{p['_op']}|{bool(p['_position'])}")
    conn.close()


def wait_notify(conn, want, timeout=30):
    """The first notification want is true of, within timeout seconds."""
    deadline = time.monotonic() + timeout
    while True:
        conn.poll()
        while conn.notifies:
            n = conn.notifies.pop(0)
            if want(n):
                return n
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("no notification")
        select.select([conn], [], [], left)


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # report and fail
        print(f"psycopg2 client failed: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(1)
