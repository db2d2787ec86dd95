// One database per Vitest worker (pristineDatabase(), the default): the
// files a worker runs share it, and no other worker sees it.
import mysql from 'mysql2/promise';
import { test, expect, inject } from 'vitest';
import { pristineDatabase } from 'pristine-client/vitest';
import { SEED, notes, pause, record } from './isolation.mjs';

const db = pristineDatabase();
const worker = `worker ${process.env.VITEST_POOL_ID}`;

test('the worker\'s database has the template\'s rows and only this worker\'s writes', async () => {
  expect(inject('pristine').template).toBe('node-vitest-notes');
  const conn = await mysql.createConnection(db.lease.mysql2());
  try {
    await conn.query('INSERT INTO notes (author, body) VALUES (?, ?)', [worker, 'worker-c']);
    await pause(150);
    const rows = await notes(conn);
    expect(rows.slice(0, 2)).toEqual(SEED);
    expect(rows.slice(2).every((r) => r.author === worker)).toBe(true);
    expect(rows.some((r) => r.body === 'worker-c')).toBe(true);
    record(db.lease, 'worker-c');
  } finally {
    await conn.end();
  }
});
