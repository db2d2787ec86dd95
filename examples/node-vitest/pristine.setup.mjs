// Vitest's globalSetup: build the template once, here by running knex's
// migrations and seeds in this process against the template server, keyed
// by the files that define it; bring a pool up; provide the run's settings
// to the tests (inject('pristine')), which take their database with
// pristineDatabase() from 'pristine-client/vitest'.
import knex from 'knex';
import { globalSetup } from 'pristine-client/vitest/setup';

export default globalSetup({
  template: 'node-vitest-notes',
  files: ['migrations', 'seeds'],
  keyExtra: ['knex migrate:latest + seed:run'],
  migrate: async (conn) => {
    const k = knex({
      client: 'mysql2',
      connection: { host: conn.host, port: conn.port, user: conn.user, password: conn.password, database: conn.database },
      migrations: { directory: './migrations', loadExtensions: ['.cjs'] },
      seeds: { directory: './seeds', loadExtensions: ['.cjs'] },
    });
    try {
      await k.migrate.latest();
      await k.seed.run();
    } finally {
      await k.destroy();
    }
  },
});
