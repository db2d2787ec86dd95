// The client against a real pristine daemon and real MariaDB servers:
// build once, pool, lease, release, keep, and the error table.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import mysql from 'mysql2/promise';
import { Client, NoDaemonError, PristineError, TemplateBuildError, UNKEYED_BUILD, prepare, acquire, finish, runCommand, ensurePool } from '../index.mjs';
import { startDaemon, skipReason } from './daemon.mjs';

const skip = skipReason() || false;
let d;
let dir;

before(async () => {
  if (skip) return;
  d = await startDaemon();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pristine-node-client-'));
  fs.mkdirSync(path.join(dir, 'migrations'));
  fs.writeFileSync(path.join(dir, 'migrations', '001.sql'),
    'CREATE TABLE notes (id INT PRIMARY KEY AUTO_INCREMENT, body VARCHAR(100));\nINSERT INTO notes (body) VALUES (\'seed\');\n');
});

after(async () => {
  if (d) await d.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

const MIGRATE = 'cat migrations/*.sql | mariadb -u"$MYSQL_USER" "$MYSQL_DATABASE"';

async function rows(lease) {
  const c = await mysql.createConnection(lease.mysql2());
  try {
    const [r] = await c.query('SELECT body FROM notes ORDER BY id');
    return r.map((x) => x.body);
  } finally {
    await c.end();
  }
}

test('no daemon: the error names the socket and how to start one', { skip }, async () => {
  const c = new Client({ socket: path.join(dir, 'nothing.sock') });
  await assert.rejects(c.health(), (e) => e instanceof NoDaemonError &&
    e.message === `no pristine daemon is running on ${path.join(dir, 'nothing.sock')}: start one with \`pristine pool up\` or \`pristine serve\``);
  await assert.rejects(prepare(c, { template: 'x', files: ['migrations'], migrate: MIGRATE, cwd: dir }), NoDaemonError);
});

test('a wrong token over TCP is the daemon\'s 401', { skip }, async () => {
  const c = new Client({ url: 'http://' + d.addr, token: 'wrong' });
  await assert.rejects(c.leases(), (e) => e instanceof PristineError && e.status === 401);
});

test('concurrent callers build the template once, over the socket and TCP; leases are isolated', { skip }, async () => {
  let builds = 0;
  const migrate = async (conn) => {
    builds++;
    assert.ok(conn.env.some((e) => e.startsWith('MYSQL_PWD=')), 'the build sees the template server\'s password');
    await runCommand(MIGRATE, conn, { cwd: dir });
  };
  const opts = { template: 'notes', files: ['migrations'], migrate, cwd: dir, poolSize: 2 };
  const got = await Promise.all([prepare(d.client, opts), prepare(d.tcp, opts), prepare(d.client, opts)]);
  assert.equal(builds, 1);
  assert.equal(new Set(got.map((g) => g.hash)).size, 1);

  const a = await acquire(d.client, { template: 'notes', holder: 'node test a' });
  const b = await acquire(d.tcp, { template: 'notes', holder: 'node test b' });
  try {
    assert.notEqual(`${a.port}/${a.database}`, `${b.port}/${b.database}`);
    assert.equal(a.pid, process.pid, 'the lease is held by this process');
    assert.deepEqual(await rows(a), ['seed']);
    const c = await mysql.createConnection(a.mysql2());
    await c.query("INSERT INTO notes (body) VALUES ('only a')");
    await c.end();
    assert.deepEqual(await rows(a), ['seed', 'only a']);
    assert.deepEqual(await rows(b), ['seed'], 'b does not see a\'s write');
    assert.ok(!JSON.stringify(a).includes(a.password), 'a lease printed or encoded hides its password');
    assert.ok(a.url.startsWith('mysql://'));
    assert.equal(a.typeorm().username, a.user);
    assert.equal(a.knex().connection.password, a.password);
  } finally {
    assert.equal(await finish(d.client, a), '');
    assert.equal(await finish(d.tcp, b), '');
  }
  // The written database was reset: a new lease starts pristine again.
  const l1 = await acquire(d.client, { template: 'notes' });
  const l2 = await acquire(d.client, { template: 'notes' });
  try {
    assert.deepEqual(await rows(l1), ['seed']);
    assert.deepEqual(await rows(l2), ['seed']);
  } finally {
    await finish(d.client, l1);
    await finish(d.client, l2);
  }
  // A second run with the same files finds the template and the pool.
  await prepare(d.client, opts);
  assert.equal(builds, 1);
});

test('a fork is a template of a lease\'s state: its leases see the row, the same key returns it, the lease goes on', { skip }, async () => {
  const p = await prepare(d.client, { template: 'nodeforkbase', files: ['migrations'], keyExtra: ['forkbase'], migrate: MIGRATE, cwd: dir, poolSize: 1 });
  const l = await acquire(d.client, { template: 'nodeforkbase', holder: 'node fork' });
  let a;
  const c = await mysql.createConnection(l.mysql2());
  try {
    await c.query("INSERT INTO notes (body) VALUES ('fixture')");
    a = await d.client.fork(l.id, 'nodeforked', { key: 'fixtures-v1' });
    assert.equal(a.built, true);
    assert.deepEqual([a.template.name, a.template.parent, a.template.parent_name], ['nodeforked', p.hash, 'nodeforkbase']);
    // The holder's connection survives the fork.
    const [r] = await c.query('SELECT body FROM notes ORDER BY id');
    assert.deepEqual(r.map((x) => x.body), ['seed', 'fixture']);
    // The same key again: the fork made before, at once.
    const again = await d.client.fork(l.id, 'nodeforked', { key: 'fixtures-v1' });
    assert.equal(again.built, false);
    assert.equal(again.template.hash, a.template.hash);
  } finally {
    await c.end();
    await d.client.release(l.id);
  }
  await ensurePool(d.client, 'nodeforked', a.template.hash, 1);
  const f = await acquire(d.client, { template: 'nodeforked', holder: 'node fork lease' });
  try {
    assert.deepEqual(await rows(f), ['seed', 'fixture']);
  } finally {
    await d.client.release(f.id);
    await d.client.poolDown('nodeforked');
    await d.client.poolDown('nodeforkbase');
  }
});

test('migrations fail: the build is aborted with the command\'s output, and the next run tries again', { skip }, async () => {
  const bad = fs.mkdtempSync(path.join(os.tmpdir(), 'pristine-node-bad-'));
  fs.mkdirSync(path.join(bad, 'migrations'));
  fs.writeFileSync(path.join(bad, 'migrations', '001.sql'), 'CREATE TABLE broken (id INT PRIMARY KEY;\n');
  const opts = { template: 'broken', files: ['migrations'], migrate: MIGRATE, cwd: bad, poolSize: 1 };
  await assert.rejects(prepare(d.client, opts), (e) => e instanceof TemplateBuildError &&
    /^template broken: build failed, so it was aborted: `cat migrations\/\*\.sql \| mariadb .*` exited with status 1: .*SQL syntax/s.test(e.message));
  fs.writeFileSync(path.join(bad, 'migrations', '001.sql'), 'CREATE TABLE fixed (id INT PRIMARY KEY);\n');
  const p = await prepare(d.client, opts);
  assert.match(p.hash, /^[0-9a-f]+/);
  fs.rmSync(bad, { recursive: true });
  await d.client.poolDown('broken');
});

test('no database free in time: the error says so and what to change', { skip }, async () => {
  // Another migrate command is another key: the pool of the older build is replaced.
  await prepare(d.client, { template: 'notes', files: ['migrations'], migrate: MIGRATE, cwd: dir, poolSize: 2 });
  assert.equal((await d.client.pool('notes')).size, 2);
  const held = [];
  try {
    // The pool has 2 slots: hold both, then ask for a third.
    held.push(await acquire(d.client, { template: 'notes' }), await acquire(d.client, { template: 'notes' }));
    await assert.rejects(acquire(d.client, { template: 'notes', wait: 1 }), (e) => e instanceof PristineError && e.status === 503 &&
      /^lease a database of notes: .*no database was free within 1s; the pool may be smaller than the number of test workers .*raise poolSize/s.test(e.message));
  } finally {
    for (const l of held) await finish(d.client, l);
  }
});

test('a failed test\'s database is kept when asked, with how to open and release it', { skip }, async () => {
  const l = await acquire(d.client, { template: 'notes', holder: 'failing test' });
  assert.equal(await finish(d.client, l, { failed: true, keepFailed: false }), '', 'not asked: released');
  const k = await acquire(d.client, { template: 'notes', holder: 'failing test' });
  const msg = await finish(d.client, k, { failed: true, keepFailed: true });
  assert.match(msg, new RegExp(`kept the database of this failed test for debugging:\\n  mariadb -h127\\.0\\.0\\.1 -P${k.port} -u${k.user} -p.+ ${k.database}\\n`));
  assert.match(msg, new RegExp(`release it with: pristine release ${k.id}$`));
  assert.equal((await d.client.getLease(k.id)).kept, true);
  assert.deepEqual(await rows(k), ['seed'], 'the kept database still opens');
  await d.client.release(k.id);
  await assert.rejects(d.client.getLease(k.id), (e) => e.status === 404 || e.status === 410);
});

test('a pool of an older build with leases held is refused with the command to run', { skip }, async () => {
  const l = await acquire(d.client, { template: 'notes' });
  try {
    await assert.rejects(ensurePool(d.client, 'notes', 'not-the-hash', 1),
      /pool notes: a pool of an older build of this template is up with \d+ leases: let its tests end, or run `pristine pool down --template notes`/);
  } finally {
    await finish(d.client, l);
  }
});

test('a TTL out of range is the daemon\'s 400 with the range', { skip }, async () => {
  await assert.rejects(d.client.lease({ template: 'notes', ttl: 1e300 }), (e) => e.status === 400 && /ttl_seconds/.test(e.message));
});

test('a run that needs more slots than the pool has grows it: a lease\'s minSize, and ensurePool of a larger size', { skip }, async () => {
  const p = await prepare(d.client, { template: 'grows', files: ['migrations'], keyExtra: ['grows'], migrate: MIGRATE, cwd: dir, poolSize: 1 });
  assert.equal((await d.client.pool('grows')).size, 1);
  const held = [await acquire(d.client, { template: 'grows', holder: 'node test a' })];
  try {
    // Without minSize a second lease waits for the one slot.
    await assert.rejects(acquire(d.client, { template: 'grows', wait: 1 }), (e) => e.status === 503);
    held.push(await acquire(d.client, { template: 'grows', holder: 'node test b', minSize: 3 }));
    assert.equal((await d.client.pool('grows')).size, 3);
    held.push(await acquire(d.client, { template: 'grows', holder: 'node test c' }));
    assert.equal(new Set(held.map((l) => `${l.port}/${l.database}`)).size, 3);
    assert.deepEqual(await rows(held[1]), ['seed']);
    // ensurePool of a larger size grows the pool at once and says so.
    const writes = [];
    const orig = process.stderr.write;
    process.stderr.write = (s, ...rest) => { writes.push(String(s)); return true; };
    try {
      await ensurePool(d.client, 'grows', p.hash, 4);
    } finally {
      process.stderr.write = orig;
    }
    assert.match(writes.join(''), /pristine: pool grows had 3 slots, this run needs 4: grew it to 4/);
    held.push(await acquire(d.client, { template: 'grows', holder: 'node test d' }));
    assert.deepEqual(await rows(held[3]), ['seed']);
  } finally {
    for (const l of held) await finish(d.client, l);
  }
  await d.client.poolDown('grows');
});

test('a new pool: prepare is back once its first slot answers (minReady 1), the others still starting', { skip }, async () => {
  await prepare(d.client, { template: 'first', files: ['migrations'], keyExtra: ['first'], migrate: MIGRATE, cwd: dir, poolSize: 24 });
  const st = await d.client.pool('first');
  assert.equal(st.size, 24);
  assert.ok((st.states.ready || 0) < 24, `prepare waited for every slot: ${JSON.stringify(st.states)}`);
  const l = await acquire(d.client, { template: 'first', holder: 'node first', wait: 60 });
  try {
    assert.deepEqual(await rows(l), ['seed']);
  } finally {
    await finish(d.client, l);
  }
  await d.client.poolDown('first');
});

test('the Jest/Vitest run setup grows a smaller pool to the run\'s size, and its leases carry it as minSize', { skip }, async () => {
  const { createRequire } = await import('node:module');
  const { setupRun, Holder } = createRequire(import.meta.url)('../lib/runner.cjs');
  const opts = { client: d.client, template: 'grows-run', files: ['migrations'], keyExtra: ['grows-run'], migrate: MIGRATE, cwd: dir };
  await setupRun({ ...opts, poolSize: 1 }, { framework: 'jest', workers: 1, cwd: dir });
  assert.equal((await d.client.pool('grows-run')).size, 1);
  // A later run with 2 workers (a pool size of 4) grows it at once.
  const run = await setupRun(opts, { framework: 'jest', workers: 2, cwd: dir });
  assert.equal(run.poolSize, 4);
  assert.equal((await d.client.pool('grows-run')).size, 4);
  // The pool is taken down and brought up smaller behind the run's back:
  // a worker's lease grows it back (min_size) instead of waiting.
  const hash = (await d.client.pool('grows-run')).hash;
  await d.client.poolDown('grows-run');
  await d.client.poolUp(hash, 1);
  run.socket = d.client.socket;
  const holders = [new Holder(run), new Holder(run)];
  await holders[0].begin('worker 1');
  await holders[1].begin('worker 2');
  try {
    assert.equal((await d.client.pool('grows-run')).size, 4);
    assert.notEqual(holders[0].lease.port, holders[1].lease.port);
  } finally {
    for (const h of holders) await h.end(false);
  }
  await d.client.poolDown('grows-run');
});

test('a migrate no file keys is refused; a changed migration gets a new template', { skip }, async () => {
  const mig = fs.mkdtempSync(path.join(os.tmpdir(), 'pristine-node-stale-'));
  try {
    fs.mkdirSync(path.join(mig, 'migrations'));
    const write = (v) => fs.writeFileSync(path.join(mig, 'migrations', '001.sql'), `CREATE TABLE notes (id INT PRIMARY KEY, body VARCHAR(20));\nINSERT INTO notes VALUES (1, '${v}');\n`);
    write('one');
    // Keyed by the command's text alone: refused, naming files and allowStale.
    await assert.rejects(prepare(d.client, { template: 'nodestale', migrate: MIGRATE, poolSize: 1, cwd: mig }),
      (e) => e instanceof PristineError && e.code === UNKEYED_BUILD && /files/.test(e.message) && /allowStale: true/.test(e.message));
    const first = await prepare(d.client, { template: 'nodestale', files: ['migrations'], migrate: MIGRATE, poolSize: 1, cwd: mig });
    write('two');
    const second = await prepare(d.client, { template: 'nodestale', files: ['migrations'], migrate: MIGRATE, poolSize: 1, cwd: mig });
    assert.ok(first.built && second.built && first.hash !== second.hash, `templates ${first.hash} and ${second.hash}: want two builds`);
    const lease = await acquire(d.client, { template: 'nodestale' });
    try {
      assert.deepEqual(await rows(lease), ['two']);
    } finally {
      await finish(d.client, lease);
    }
    await d.client.poolDown('nodestale');
  } finally {
    fs.rmSync(mig, { recursive: true, force: true });
  }
});
