// pristineDatabase({ env: true }) also sets DATABASE_URL and MYSQL_*, for
// code that reads its connection from the environment (here the
// knexfile).
const knex = require('knex');
const { pristineDatabase } = require('pristine-client/jest');
const { provePristine } = require('./isolation.cjs');

const db = pristineDatabase({ env: true });

test('the environment names the leased database', async () => {
  expect(process.env.MYSQL_DATABASE).toBe(db.lease.database);
  expect(Number(process.env.MYSQL_PORT)).toBe(db.lease.port);
  expect(process.env.DATABASE_URL).toMatch(/^mysql:\/\//);
  const k = knex(require('../knexfile.cjs'));
  try {
    const [[{ n }]] = await k.raw('SELECT COUNT(*) AS n FROM notes');
    expect(n).toBe(2);
  } finally {
    await k.destroy();
  }
});

test('and is pristine', () => provePristine(db.lease, 'env'));
