// A database per test (pristineDatabase({ per: 'test' })), through knex.
const knex = require('knex');
const { pristineDatabase } = require('pristine-client/jest');
const { SEED, pause, record } = require('./isolation.cjs');

const db = pristineDatabase({ per: 'test' });

for (const n of [1, 2, 3]) {
  test(`test ${n} starts from the template and sees only its own writes`, async () => {
    const k = knex(db.lease.knex());
    try {
      expect(await k('notes').select('author', 'body').orderBy('id')).toEqual(SEED);
      await k('notes').insert({ author: `per-test-${n}`, body: 'mine' });
      await k('tags').insert({ note_id: 1, tag: `t${n}` });
      await pause(100);
      expect(await k('notes').where('author', '<>', 'seed').pluck('author')).toEqual([`per-test-${n}`]);
      expect(await k('tags').orderBy('id').pluck('tag')).toEqual(['welcome', `t${n}`]);
      record(db.lease, `per-test-${n}`);
    } finally {
      await k.destroy();
    }
  });
}
