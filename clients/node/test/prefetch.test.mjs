// Leases taken ahead and releases off the test's path (Prefetcher, and the
// Jest integration's database per test, which uses it by default), against
// a real daemon and real servers.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import mysql from 'mysql2/promise';
import { Prefetcher, prepare } from '../index.mjs';
import { startDaemon, skipReason } from './daemon.mjs';

const require = createRequire(import.meta.url);
const { setupRun, RUN_ENV } = require('../lib/runner.cjs');
const jest = require('../jest.cjs');

const skip = skipReason() || false;
let d;
let dir;

const MIGRATE = 'mariadb -u"$MYSQL_USER" "$MYSQL_DATABASE" < schema.sql';

before(async () => {
  if (skip) return;
  d = await startDaemon();
  dir = fs.mkdtempSync(path.join(d.base, 'prefetch-'));
  fs.writeFileSync(path.join(dir, 'schema.sql'),
    "CREATE TABLE canary (id INT PRIMARY KEY, v VARCHAR(20)); INSERT INTO canary VALUES (1, 'pristine');\n");
});

after(async () => {
  if (d) await d.stop();
});

async function canary(conn) {
  const [r] = await conn.query('SELECT v FROM canary');
  return r[0].v;
}

/** Nothing is held, and nothing was reclaimed because its holder was gone: every lease was released. */
async function assertNoneHeld(template, before) {
  const st = await d.client.pool(template);
  assert.equal(st.leased, 0, JSON.stringify(st));
  assert.deepEqual(await d.client.leases(), []);
  assert.equal(st.stats.holder_gone, before.holder_gone, 'a lease was reclaimed, not released');
  return st;
}

test('a Prefetcher hands out pristine databases with connections opened ahead, and returns the lease it took ahead', { skip }, async () => {
  await prepare(d.client, { template: 'prefetch', files: ['schema.sql'], migrate: MIGRATE, poolSize: 2, cwd: dir });
  const before = (await d.client.pool('prefetch')).stats;
  const p = new Prefetcher(d.client, { template: 'prefetch', holder: 'prefetch test', connect: (l) => mysql.createConnection(l.mysql2()) });
  for (let i = 0; i < 4; i++) {
    const { lease, conn } = await p.take();
    assert.ok(conn, 'the connection was opened ahead');
    assert.equal(await canary(conn), 'pristine', `take ${i} got a database a previous take wrote to`);
    await conn.query('UPDATE canary SET v = ?', [`w${i}`]);
    await conn.end();
    // Released changed, in the background: the daemon resets it.
    p.release(lease.id, { unchanged: true });
  }
  assert.deepEqual(await p.close(), []);
  const st = await assertNoneHeld('prefetch', before);
  assert.equal(st.stats.leases - before.leases, 5, 'four taken and one ahead');
  await d.client.poolDown('prefetch');
});

/**
 * Runs tests through pristineDatabase({ per: 'test' }) as Jest would: its
 * hooks, registered on the global, around each test in order, then the
 * file's afterAll.
 */
async function runJestFile(run, tests) {
  const hooks = { beforeAll: [], beforeEach: [], afterEach: [], afterAll: [] };
  const saved = {};
  for (const name of Object.keys(hooks)) {
    saved[name] = globalThis[name];
    globalThis[name] = (fn) => hooks[name].push(fn);
  }
  process.env[RUN_ENV] = JSON.stringify(run);
  let db;
  try {
    db = jest.pristineDatabase({ per: 'test' });
  } finally {
    for (const name of Object.keys(hooks)) globalThis[name] = saved[name];
    delete process.env[RUN_ENV];
  }
  for (const body of tests) {
    for (const fn of hooks.beforeEach) await fn();
    await body(db.lease);
    for (const fn of hooks.afterEach) await fn();
  }
  for (const fn of hooks.afterAll) await fn();
}

test('Jest, a database per test, prefetch on by default: each test pristine in either order, nothing held at the end', { skip }, async () => {
  const run = await setupRun({ client: d.client, template: 'jestprefetch', files: ['schema.sql'], migrate: MIGRATE, poolSize: 2, cwd: dir },
    { framework: 'jest', workers: 1, cwd: dir });
  assert.equal(run.prefetch, true);
  run.socket = d.client.socket;
  const before = (await d.client.pool('jestprefetch')).stats;
  let holders = [];
  const writer = (tag) => async (lease) => {
    holders.push((await d.client.leases()).find((l) => l.id === lease.id).holder);
    const c = await mysql.createConnection(lease.mysql2());
    try {
      assert.equal(await canary(c), 'pristine', `test ${tag} sees a previous test's write`);
      await c.query('UPDATE canary SET v = ?', [tag]);
      assert.equal(await canary(c), tag);
    } finally {
      await c.end();
    }
  };
  const tags = ['a', 'b', 'c', 'd'];
  await runJestFile(run, tags.map(writer));
  await assertNoneHeld('jestprefetch', before);
  await runJestFile(run, [...tags].reverse().map(writer));
  await assertNoneHeld('jestprefetch', before);
  assert.ok(holders.every((h) => h === `${run.run} w1 prefetched`), holders.join('; '));
  // Off: the run's option, and PRISTINE_PREFETCH=0.
  holders = [];
  await runJestFile({ ...run, prefetch: false }, tags.map(writer));
  await assertNoneHeld('jestprefetch', before);
  assert.ok(holders.every((h) => !h.endsWith('prefetched')), holders.join('; '));
  process.env.PRISTINE_PREFETCH = '0';
  try {
    const off = await setupRun({ client: d.client, template: 'jestprefetch', files: ['schema.sql'], migrate: MIGRATE, poolSize: 2, cwd: dir },
      { framework: 'jest', workers: 1, cwd: dir });
    assert.equal(off.prefetch, false);
  } finally {
    delete process.env.PRISTINE_PREFETCH;
  }
  await d.client.poolDown('jestprefetch');
});

test('a Prefetcher closes at once while its lease ahead waits for a full pool, and takes nothing after', { skip }, async () => {
  await prepare(d.client, { template: 'prefetchfull', files: ['schema.sql'], migrate: MIGRATE, poolSize: 2, cwd: dir });
  const other = await d.client.lease({ template: 'prefetchfull', holder: 'holds the other slot' });
  const p = new Prefetcher(d.client, { template: 'prefetchfull', holder: 'prefetch full', wait: 60 });
  const lease = await p.lease(); // the last free slot; the lease ahead waits for one
  await new Promise((r) => setTimeout(r, 300));
  assert.equal((await d.client.pool('prefetchfull')).leased, 2, 'the pool is full: the lease ahead waits');
  const t0 = Date.now();
  assert.deepEqual(await p.close(), []);
  assert.ok(Date.now() - t0 < 5000, `close waited ${Date.now() - t0} ms for a lease ahead that could not come`);
  await d.client.release(lease.id);
  await d.client.release(other.id);
  await new Promise((r) => setTimeout(r, 2000));
  const st = await d.client.pool('prefetchfull');
  assert.equal(st.leased, 0, JSON.stringify(st));
  assert.deepEqual(await d.client.leases(), []);
  await d.client.poolDown('prefetchfull');
});
