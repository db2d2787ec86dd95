// Parity by construction (issue 22): a run that builds the template and a
// run that reuses it give every test the same outcome, because what a
// stock global setup does besides building the schema (the ready hook,
// once per run; the setup module, on every database handed out) runs on
// both. The same suite runs twice through the Jest/Vitest runner (the
// global setup's setupRun, the workers' Holder) and the per-test outcomes
// are compared.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import mysql from 'mysql2/promise';
import { startDaemon, skipReason } from './daemon.mjs';

const require = createRequire(import.meta.url);
const { setupRun, teardownRun, Holder } = require('../lib/runner.cjs');

const skip = skipReason() || false;
let d;
let dir;

before(async () => {
  if (skip) return;
  d = await startDaemon();
  dir = fs.mkdtempSync(path.join(d.base, 'parity-'));
  fs.writeFileSync(path.join(dir, 'schema.sql'), 'CREATE TABLE notes (id INT AUTO_INCREMENT PRIMARY KEY, body VARCHAR(64) NOT NULL)\n');
  // The per-database work of the suite's stock setup: a row that depends
  // on the run (the stock setup writes it after migrating, every run).
  fs.writeFileSync(path.join(dir, 'db-setup.cjs'), `
const mysql = require(${JSON.stringify(require.resolve('mysql2/promise'))});
module.exports = async (lease) => {
  const c = await mysql.createConnection(lease.mysql2());
  try { await c.query("INSERT INTO notes (body) VALUES (?)", ['run ' + process.env.PARITY_RUN]); } finally { await c.end(); }
};
`);
});

after(async () => {
  if (d) await d.stop();
});

async function query(lease, sql, args = []) {
  const c = await mysql.createConnection(lease.mysql2());
  try {
    const [rows] = await c.query(sql, args);
    return rows;
  } finally {
    await c.end();
  }
}

// The suite: each test gets a database of its own, as pristineDatabase({ per: 'test' }) gives.
const SUITE = {
  'the template has the schema and its seed': async (l) => {
    const rows = await query(l, "SELECT body FROM notes WHERE body = 'seed'");
    assert.equal(rows.length, 1);
  },
  "the setup wrote this run's row, once": async (l) => {
    const rows = await query(l, 'SELECT body FROM notes WHERE body LIKE ?', ['run %']);
    assert.deepEqual(rows.map((r) => r.body), ['run ' + process.env.PARITY_RUN]);
  },
  'the ready hook ran in this run': async () => {
    assert.ok(fs.readFileSync(path.join(dir, 'ready.log'), 'utf8').split('\n').includes('ready ' + process.env.PARITY_RUN));
  },
  'a write is the test\'s own': async (l) => {
    await query(l, "INSERT INTO notes (body) VALUES ('mine')");
    assert.equal((await query(l, "SELECT COUNT(*) AS n FROM notes WHERE body = 'mine'"))[0].n, 1);
  },
  'nobody else\'s write is seen': async (l) => {
    assert.equal((await query(l, "SELECT COUNT(*) AS n FROM notes WHERE body = 'mine'"))[0].n, 0);
  },
};

let builds = 0;

async function runSuite(name) {
  process.env.PARITY_RUN = name;
  const run = await setupRun({
    client: d.client,
    template: 'node-parity',
    files: ['schema.sql'],
    poolSize: 2,
    migrate: async (conn) => {
      builds++;
      const c = await mysql.createConnection({ host: conn.host, port: conn.port, user: conn.user, password: conn.password, database: conn.database, multipleStatements: true });
      try {
        await c.query(fs.readFileSync(path.join(dir, 'schema.sql'), 'utf8'));
        await c.query("INSERT INTO notes (body) VALUES ('seed')");
      } finally {
        await c.end();
      }
    },
    ready: ({ built }) => fs.appendFileSync(path.join(dir, 'ready.log'), `ready ${name}\n${built ? 'built' : 'reused'} ${name}\n`),
    setup: 'db-setup.cjs',
  }, { framework: 'jest', workers: 1, cwd: dir });
  const outcomes = {};
  for (const [t, fn] of Object.entries(SUITE)) {
    const h = new Holder(run);
    await h.begin(t);
    try {
      await fn(h.lease);
      outcomes[t] = 'passed';
    } catch (e) {
      outcomes[t] = 'failed: ' + e.message.split('\n')[0];
    } finally {
      await h.end(false);
    }
  }
  assert.deepEqual(await teardownRun(run), []);
  return { run, outcomes };
}

test('a run that builds the template and a run that reuses it give every test the same outcome', { skip }, async () => {
  const built = await runSuite('one');
  assert.equal(built.run.built, true, 'the first run did not build the template');
  const reused = await runSuite('two');
  assert.equal(reused.run.built, false, 'the second run built the template again');
  assert.equal(builds, 1);
  assert.deepEqual(Object.values(built.outcomes), Object.values(SUITE).map(() => 'passed'), JSON.stringify(built.outcomes));
  assert.deepEqual(reused.outcomes, built.outcomes, 'per-test outcomes differ between the building and the reusing run');
  const log = fs.readFileSync(path.join(dir, 'ready.log'), 'utf8');
  assert.match(log, /built one\n/);
  assert.match(log, /reused two\n/);
  assert.deepEqual(await d.client.leases(), []);
});

test('a setup module that fails names itself and gives the database back', { skip }, async () => {
  fs.writeFileSync(path.join(dir, 'bad-setup.cjs'), "module.exports = async () => { throw new Error('no such table: settings'); };\n");
  const run = await setupRun({ client: d.client, template: 'node-parity', files: ['schema.sql'], poolSize: 2, setup: 'bad-setup.cjs' },
    { framework: 'jest', workers: 1, cwd: dir });
  const h = new Holder(run);
  await assert.rejects(h.begin('t'), /setup .*bad-setup\.cjs failed on a new database: no such table: settings/);
  assert.deepEqual(await d.client.leases(), []);
  await assert.rejects(setupRun({ client: d.client, template: 'node-parity', files: ['schema.sql'], setup: 'missing.cjs' },
    { framework: 'jest', workers: 1, cwd: dir }), /setup missing\.cjs: .* does not exist/);
});
