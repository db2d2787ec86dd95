'use strict';
// The build-once flow every integration shares: make sure a template
// exists (built in exactly one process), that a pool of it is up, and
// return or keep a lease when its test ends.

const { spawn } = require('node:child_process');
const { PristineError, NoDaemonError, UNKEYED_BUILD } = require('./client.cjs');
const { contentKey } = require('./key.cjs');

/** The environment variable naming the fleet cache when the code names none. */
const CACHE_ENV = 'PRISTINE_CACHE';

/** The user's migrations or fixtures failed against the template server. */
class TemplateBuildError extends PristineError {
  constructor(message, options) {
    super(message, 0, 0, options);
    this.name = 'TemplateBuildError';
  }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Resolves to the template answer (status "ready", with its `hash`) of the
 * template keyed by `key`, building it with `build(conn)` when nobody has:
 * across processes exactly one caller builds a key, the others wait up to
 * `wait` seconds (default 1800). A build that throws is aborted, and the
 * error is thrown again as a TemplateBuildError. `cache` (default
 * $PRISTINE_CACHE) names an OCI repository a fleet of machines shares.
 * `keyFiles` is how many file paths `key` is a contentKey of: given with a
 * build, the daemon refuses a build no file keys (PristineError.code
 * UNKEYED_BUILD), whose template would stay the same after a migration
 * changes; `allowStale` accepts that risk.
 */
async function ensureTemplate(client, { name, key, database, cache, wait = 1800, keyFiles, allowStale }, build) {
  const deadline = Date.now() + wait * 1000;
  if (!cache) cache = process.env[CACHE_ENV] || undefined;
  for (;;) {
    let a;
    try {
      a = await client.beginTemplate({ name, key, database, cache, keyFiles: build ? keyFiles : undefined, allowStale });
    } catch (e) {
      if (e instanceof NoDaemonError) throw e;
      throw rewrap(e, `template ${name}: ${e.message}`);
    }
    if (a.status === 'ready') return a;
    if (a.status === 'build') return buildTemplate(client, name, a, build);
    // Someone else builds it: wait, then begin again (it is ready, or its
    // builder failed and this caller tries).
    while (a.status === 'building') {
      const left = (deadline - Date.now()) / 1000;
      if (left <= 0) {
        throw new PristineError(`template ${name}: another process has been building it for longer than ${wait}s: see its output, or \`pristine template ls\``);
      }
      try {
        a = await client.waitTemplate(key, Math.min(left, 30));
      } catch (e) {
        if (e instanceof PristineError && e.status === 404) break; // the builder aborted
        throw rewrap(e, `template ${name}: wait for its build: ${e.message}`);
      }
      if (a.status === 'ready') return a;
    }
  }
}

function rewrap(e, message) {
  if (!(e instanceof PristineError)) return e;
  return new PristineError(message, e.status, e.retryAfter, { cause: e, code: e.code });
}

async function buildTemplate(client, name, a, build) {
  if (!build) {
    await client.abortTemplate(a.hash).catch(() => {});
    throw new PristineError(`template ${name}: it does not exist and nothing was given to build it: pass migrate (a command or a function)`);
  }
  try {
    await build(a);
  } catch (e) {
    await client.abortTemplate(a.hash).catch(() => {});
    throw new TemplateBuildError(`template ${name}: build failed, so it was aborted: ${e && e.message ? e.message : e}`, { cause: e });
  }
  try {
    return await client.finishTemplate(a.hash);
  } catch (e) {
    throw rewrap(e, `template ${name}: finish build: ${e.message}`);
  }
}

/**
 * Makes sure a pool of template `hash` is up with at least `size` slots:
 * brings one of `size` slots up when none is, and grows a smaller one to
 * `size` (at once: the new slots start in the background and leases wait
 * for them; a notice goes to stderr). Growth beyond the daemon's
 * --max-memory/--max-disk fails at once with the daemon's message, which
 * names the limit. A pool of the same name built from other files is
 * replaced when nobody holds a lease on it, and refused otherwise. A new
 * pool is back as soon as its first slot answers (the others start in the
 * daemon), and a pool a peer is bringing up right now counts as up: the
 * lease that follows waits in the daemon for its first slot.
 */
async function ensurePool(client, name, hash, size) {
  let st = null;
  try {
    st = await client.pool(name);
  } catch (e) {
    if (e instanceof NoDaemonError) throw e;
    if (e instanceof PristineError && e.status === 503) return; // a peer's pool up is making the pool: the lease waits
    if (!(e instanceof PristineError) || e.status !== 404) throw rewrap(e, `pool ${name}: ${e.message}`);
  }
  if (st) {
    if (st.hash === hash) {
      if ((st.size || 0) < size) await growPool(client, name, hash, st.size || 0, size);
      return;
    }
    if (st.leased > 0) {
      throw new PristineError(`pool ${name}: a pool of an older build of this template is up with ${st.leased} leases: ` +
        `let its tests end, or run \`pristine pool down --template ${name}\``, 409);
    }
    await client.poolDown(name);
  }
  try {
    await client.poolUp(hash, Math.max(size || 1, 1), 1); // the first slot is enough: the lease takes it
  } catch (e) {
    if (e instanceof PristineError && e.status === 409) return; // a peer brought it up first
    throw rewrap(e, `pool ${name}: ${e.message}`);
  }
}

/** Grows the pool of `name` from `have` to `size` slots and says so. */
async function growPool(client, name, hash, have, size) {
  let st;
  try {
    st = await client.poolUp(hash, size);
  } catch (e) {
    if (e instanceof PristineError && e.status === 409) return; // a peer grew it first
    throw rewrap(e, `pool ${name}: grow it from ${have} to ${size} slots: ${e.message}`);
  }
  process.stderr.write(`pristine: pool ${name} had ${have} slots, this run needs ${size}: grew it to ${(st && st.size) || size} ` +
    "(the extra slots go again after the daemon's --shrink-after idle)\n");
}

/** The environment a command sees for a connection's `env` list (NAME=VALUE). */
function commandEnv(conn, base = process.env) {
  const env = { ...base };
  for (const e of conn.env || []) {
    const i = e.indexOf('=');
    if (i > 0) env[e.slice(0, i)] = e.slice(i + 1);
  }
  // The mariadb and mysql clients read the port from MYSQL_TCP_PORT.
  if (env.MYSQL_PORT && !env.MYSQL_TCP_PORT) env.MYSQL_TCP_PORT = env.MYSQL_PORT;
  return env;
}

/**
 * Runs a shell command (migrations, a schema load) against the template
 * server `conn` describes: it sees DATABASE_URL, MYSQL_HOST, MYSQL_PORT,
 * MYSQL_TCP_PORT, MYSQL_UNIX_PORT, MYSQL_USER, MYSQL_PWD and
 * MYSQL_DATABASE. Rejects with the command's status and the end of its
 * output when it fails.
 */
function runCommand(command, conn, { cwd } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn('/bin/sh', ['-c', command], { cwd, env: commandEnv(conn), stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    const add = (c) => {
      out += c;
      if (out.length > 64000) out = out.slice(-32000);
    };
    child.stdout.on('data', add);
    child.stderr.on('data', add);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      if (code === 0) resolve(out);
      else reject(new Error(`\`${command}\` ${signal ? 'was killed by ' + signal : 'exited with status ' + code}: ${out.trim().slice(-2000)}`));
    });
  });
}

/**
 * The whole setup a test run needs once: key the template by `files` (and
 * `keyExtra`), build it with `migrate` (a shell command, or a function of
 * the connection) when nobody has, and bring a pool of `poolSize` up.
 * Resolves to {template, hash, key, built} (built: this call built it).
 * A `migrate` with no `files` is refused (the template would be keyed by
 * the command's text alone, and stay the same after a migration changes)
 * unless `allowStale` accepts that risk.
 */
async function prepare(client, opts) {
  const { template, files = [], keyExtra = [], migrate, database, cache, poolSize = 4, buildWait = 1800, cwd, allowStale = false } = opts;
  if (!template) throw new PristineError('pristine: name the template (option template, e.g. "app")');
  const extra = [...keyExtra];
  if (typeof migrate === 'string') extra.push(migrate); // as the Python and PHP integrations do
  const key = contentKey(files, extra, { cwd });
  const build = typeof migrate === 'string' ? (conn) => runCommand(migrate, conn, { cwd }) : migrate;
  let built = false;
  const building = build && (async (conn) => {
    built = true;
    return build(conn);
  });
  let a;
  try {
    a = await ensureTemplate(client, { name: template, key, database, cache, wait: buildWait, keyFiles: [].concat(files).length, allowStale }, building);
  } catch (e) {
    if (e instanceof PristineError && e.code === UNKEYED_BUILD) {
      throw new PristineError(`pristine: template ${template}: migrate runs code but no files key it, so it would be keyed by the command's text alone: ` +
        'after a migration changes every run would still get the old template. Name the migrations, fixtures and schema files it reads in ' +
        'files (e.g. files: [\'migrations\']), or set allowStale: true to accept a template that goes stale when they change', 400, 0, { cause: e, code: e.code });
    }
    throw e;
  }
  await ensurePool(client, template, a.hash, poolSize);
  return { template, hash: a.hash, key, built };
}

/**
 * Returns a lease when its test ends, or keeps it when the test failed and
 * `keepFailed` is set; resolves to what to tell the user ('' when nothing).
 */
async function finish(client, lease, { failed = false, keepFailed = false, unchanged = true } = {}) {
  if (failed && keepFailed) {
    await client.keep(lease.id);
    return `pristine: kept the database of this failed test for debugging:\n  ${lease.mysqlCommand()}\n` +
      `  URL ${lease.url}\n  release it with: pristine release ${lease.id}`;
  }
  try {
    await client.release(lease.id, { unchanged });
  } catch (e) {
    // Already gone (reclaimed, or released by a teardown): nothing to return.
    if (!(e instanceof PristineError) || (e.status !== 404 && e.status !== 410)) throw e;
  }
  return '';
}

/** A lease request's wait ran out: say why and what to change. */
function leaseError(e, template, wait) {
  if (e instanceof PristineError && e.status === 503) {
    return new PristineError(`lease a database of ${template}: ${e.message}: no database was free within ${wait}s; ` +
      'the pool may be smaller than the number of test workers holding leases at once: raise poolSize, or lower the workers', 503, 0, { cause: e });
  }
  if (e instanceof NoDaemonError) return e;
  return rewrap(e, `lease a database of ${template}: ${e.message}`);
}

/**
 * Leases a database of `template` for `holder` (held by this process), with
 * errors that name the cause and the fix.
 */
async function acquire(client, { template, holder = '', wait = 60, ttl = 0, minSize = 0 }) {
  try {
    return await client.lease({ template, holder, wait, ttl, minSize });
  } catch (e) {
    throw leaseError(e, template, wait);
  }
}

module.exports = { acquire, ensureTemplate, ensurePool, runCommand, commandEnv, prepare, finish, leaseError, TemplateBuildError, CACHE_ENV, sleep };
