// A database per test (pristineDatabase({ per: 'test' })), through knex.
import knex from 'knex';
import { test, expect } from 'vitest';
import { pristineDatabase } from 'pristine-client/vitest';
import { SEED, pause, record } from './isolation.mjs';

const db = pristineDatabase({ per: 'test' });

for (const n of [1, 2, 3]) {
  test(`test ${n} starts from the template and sees only its own writes`, async () => {
    const k = knex(db.lease.knex());
    try {
      expect(await k('notes').select('author', 'body').orderBy('id')).toEqual(SEED);
      await k('notes').insert({ author: `per-test-${n}`, body: 'mine' });
      await pause(100);
      expect(await k('notes').where('author', '<>', 'seed').pluck('author')).toEqual([`per-test-${n}`]);
      record(db.lease, `per-test-${n}`);
    } finally {
      await k.destroy();
    }
  });
}
