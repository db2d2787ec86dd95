// A test that fails on purpose (run by run.sh with PRISTINE_KEEP_FAILED=1,
// not by the suite): its database is kept, with how to open and release it.
import mysql from 'mysql2/promise';
import { test, expect } from 'vitest';
import { pristineDatabase } from 'pristine-client/vitest';

const db = pristineDatabase({ per: 'test' });

test('writes, then fails', async () => {
  const conn = await mysql.createConnection(db.lease.mysql2());
  await conn.query("INSERT INTO notes (author, body) VALUES ('failing', 'left for debugging')");
  await conn.end();
  expect('this test').toBe('failing on purpose');
});

test('passes: its database is returned', () => {
  expect(db.lease.database).toBeTruthy();
});
