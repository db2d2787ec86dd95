// What every test asserts: it starts from the template (migrated, seeded,
// nothing else) and sees only its own writes, while other workers write to
// their own databases at the same time.
const fs = require('node:fs');
const mysql = require('mysql2/promise');

const SEED = [
  { author: 'seed', body: 'first' },
  { author: 'seed', body: 'second' },
];

const pause = (ms) => new Promise((r) => setTimeout(r, ms));

async function notes(conn) {
  const [rows] = await conn.query('SELECT author, body FROM notes ORDER BY id');
  return rows.map((r) => ({ ...r }));
}

/** Notes the scope's lease: run.sh checks that the scopes had databases of their own, in several workers. */
function record(lease, me) {
  if (process.env.PRISTINE_EXAMPLE_LOG) {
    fs.appendFileSync(process.env.PRISTINE_EXAMPLE_LOG, `${process.env.JEST_WORKER_ID} ${lease.id} ${me}\n`);
  }
}

/** Asserts a pristine start, writes as `me`, and sees only that write. */
async function provePristine(lease, me) {
  const conn = await mysql.createConnection(lease.mysql2());
  try {
    expect(await notes(conn)).toEqual(SEED);
    const [[m]] = await conn.query('SELECT COUNT(*) AS n FROM knex_migrations');
    expect(m.n).toBe(2);
    await conn.query('INSERT INTO notes (author, body) VALUES (?, ?)', [me, 'mine']);
    await pause(150); // other workers write meanwhile
    expect(await notes(conn)).toEqual([...SEED, { author: me, body: 'mine' }]);
    record(lease, me);
  } finally {
    await conn.end();
  }
}

module.exports = { SEED, notes, provePristine, pause, record };
