// What the tests assert: a pristine start (migrated, seeded, nothing else)
// and only their own writes, while other workers write to their own
// databases at the same time.
import fs from 'node:fs';
import mysql from 'mysql2/promise';
import { expect } from 'vitest';

export const SEED = [
  { author: 'seed', body: 'first' },
  { author: 'seed', body: 'second' },
];

export const pause = (ms) => new Promise((r) => setTimeout(r, ms));

export async function notes(conn) {
  const [rows] = await conn.query('SELECT author, body FROM notes ORDER BY id');
  return rows.map((r) => ({ ...r }));
}

/** Notes the scope's lease: run.sh checks the scopes' databases and workers. */
export function record(lease, me) {
  if (process.env.PRISTINE_EXAMPLE_LOG) {
    fs.appendFileSync(process.env.PRISTINE_EXAMPLE_LOG, `${process.env.VITEST_POOL_ID} ${lease.id} ${me}\n`);
  }
}

/** Asserts a pristine start, writes as `me`, and sees only that write. */
export async function provePristine(lease, me) {
  const conn = await mysql.createConnection(lease.mysql2());
  try {
    expect(await notes(conn)).toEqual(SEED);
    const [[m]] = await conn.query('SELECT COUNT(*) AS n FROM knex_migrations');
    expect(m.n).toBe(2);
    await conn.query('INSERT INTO notes (author, body) VALUES (?, ?)', [me, 'mine']);
    await pause(150);
    expect(await notes(conn)).toEqual([...SEED, { author: me, body: 'mine' }]);
    record(lease, me);
  } finally {
    await conn.end();
  }
}
