// One database for this whole file (pristineDatabase(), per file): the
// first test finds it pristine, the later ones see this file's writes and
// nobody else's.
const mysql = require('mysql2/promise');
const { pristineDatabase } = require('pristine-client/jest');
const { SEED, notes, provePristine } = require('./isolation.cjs');

const db = pristineDatabase();
const me = 'file-a';

test('starts pristine and sees only its own write', () => provePristine(db.lease, me));

test('later tests of the file see the file\'s writes, and no other file\'s', async () => {
  const conn = await mysql.createConnection(db.lease.mysql2());
  try {
    await conn.query('INSERT INTO notes (author, body) VALUES (?, ?)', [me, 'again']);
    expect(await notes(conn)).toEqual([...SEED, { author: me, body: 'mine' }, { author: me, body: 'again' }]);
  } finally {
    await conn.end();
  }
});
