// node-postgres (pg) against basin: run by compat/compat_test.go with
// PGHOST and PGPORT set. It prints "name: value" lines the Go test
// compares, and exits non-zero on anything unexpected.
'use strict';
const { Client } = require('pg');

function out(name, value) {
  console.log(`${name}: ${value}`);
}

async function main() {
  out('version', require('pg/package.json').version);
  out('node', process.version);
  const client = new Client({ user: 'basin', database: 'basin' });
  await client.connect();
  try {
    let r = await client.query('SELECT version()');
    out('server', r.rows[0].version.split(' ').slice(0, 2).join(' '));

    // basin's own listing of tables and views.
    r = await client.query('SHOW TABLES');
    out('show tables', r.rows.map((row) => `${row.name}:${row.kind}`).join(','));

    // An unnamed statement with a $1 parameter (extended protocol).
    r = await client.query('SELECT region, orders, revenue FROM revenue_by_region WHERE region = $1', ['eu']);
    out('fields', r.fields.map((f) => `${f.name}:${f.dataTypeID}`).join(','));
    out('eu', r.rows.map((row) => `${row.region}|${row.orders}|${row.revenue}`).join(';'));

    // A named prepared statement, parsed once and executed with several values.
    for (const id of [7, 42]) {
      r = await client.query({
        name: 'order_by_id',
        text: 'SELECT order_id, customer, amount, ts FROM order_by_id WHERE order_id = $1',
        values: [id],
      });
      const row = r.rows[0];
      out(`order ${id}`, `${row.order_id}|${row.customer}|${row.amount}|${row.ts.toISOString()}`);
    }
    // Array row mode, and a parameter in LIMIT.
    r = await client.query({
      text: 'SELECT order_id FROM order_by_id WHERE customer = $1 ORDER BY order_id LIMIT $2',
      values: ['c3', 3],
      rowMode: 'array',
    });
    out('c3 orders', r.rows.map((row) => row[0]).join(','));

    // A bad query: the SQLSTATE arrives as err.code, the connection stays usable.
    try {
      await client.query('SELECT nope FROM revenue_by_region WHERE region = $1', ['eu']);
      out('bad query', 'no error');
    } catch (err) {
      out('bad query', `${err.code} ${err.message}`);
    }
    try {
      await client.query('SELEC 1');
      out('syntax error', 'no error');
    } catch (err) {
      out('syntax error', `${err.code} position ${err.position}`);
    }
    r = await client.query('SELECT 1 AS one');
    out('after error', r.rows[0].one);

    // LISTEN/NOTIFY: the 'notification' event. The session hears its own
    // NOTIFY, and LISTEN on a view's name hears the view's changes.
    const seen = [];
    let wake = () => {};
    client.on('notification', (msg) => {
      seen.push(msg);
      wake();
    });
    const waitFor = async (want) => {
      const deadline = Date.now() + 30000;
      for (;;) {
        const i = seen.findIndex(want);
        if (i >= 0) {
          return seen.splice(i, 1)[0];
        }
        if (Date.now() > deadline) {
          throw new Error('no notification');
        }
        await new Promise((resolve) => {
          wake = resolve;
          setTimeout(resolve, 1000);
        });
      }
    };
    await client.query('LISTEN hello');
    await client.query("NOTIFY hello, 'from node'");
    let n = await waitFor((m) => m.channel === 'hello');
    out('notify', `${n.channel}|${n.payload}|${n.processId === client.processID}`);
    await client.query('LISTEN ping_counts');
    await client.query("INSERT INTO pings VALUES ('node', 'hi')");
    n = await waitFor((m) => m.channel === 'ping_counts' && JSON.parse(m.payload).client === 'node');
    const p = JSON.parse(n.payload);
    out('view notify', `${n.channel}|${p.client}|${p.n}|${p._op}|${Boolean(p._position)}`);
  } finally {
    await client.end();
  }
}

main().catch((err) => {
  console.error(`node client failed: ${err.stack || err} (code ${err.code})`);
  process.exit(1);
});
