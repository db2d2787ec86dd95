'use strict';
// What the Jest and Vitest integrations share: the run's settings, set by
// the global setup and read in every worker, and the helpers that lease,
// return and keep databases for a test, a file or a worker.

const fs = require('node:fs');
const path = require('node:path');
const { pathToFileURL } = require('node:url');
const { Client, PristineError } = require('./client.cjs');
const { prepare, acquire, finish, leaseError } = require('./ensure.cjs');
const { Prefetcher } = require('./prefetch.cjs');

/** The environment variable the global setup hands the run's settings to workers in. */
const RUN_ENV = 'PRISTINE_RUN';

function truthy(v) {
  if (typeof v === 'string') return v !== '' && v !== '0' && v.toLowerCase() !== 'false';
  return Boolean(v);
}

/**
 * Runs the setup a test run needs once, in the runner's main process:
 * build the template (keyed by `files`) with `migrate` when nobody has,
 * bring a pool up, and return the settings workers need.
 *
 * Parity by construction: what a stock global setup does besides building
 * the schema runs on every run, whether this run built the template or
 * reused it. `ready({ template, hash, built })` runs here, once per run,
 * after the template is ready (process-side work: files, caches, the
 * schema's version); `setup` names a module (relative to the root) whose
 * function (default export, or `setup`) runs on every database handed out,
 * in the worker, before its tests see it (per-run data such as seeds that
 * depend on the time of the run). Only `migrate` runs in the build alone.
 */
async function setupRun(options, { framework, workers, cwd }) {
  const client = options.client || Client.fromEnv();
  const poolSize = options.poolSize || Math.max(2 * (workers || 1), 2);
  const started = Date.now();
  const root = options.cwd || cwd;
  let setup = '';
  if (options.setup) {
    if (typeof options.setup !== 'string') {
      throw new PristineError('pristine: setup is the path of a module (its function runs on every database in the worker that leases it), not a function: workers cannot receive functions from the global setup');
    }
    setup = path.resolve(root || process.cwd(), options.setup);
    if (!fs.existsSync(setup)) throw new PristineError(`pristine: setup ${options.setup}: ${setup} does not exist: name the module relative to the test root`);
  }
  if (options.ready !== undefined && typeof options.ready !== 'function') {
    throw new PristineError('pristine: ready must be a function ({ template, hash, built }) run once per run after the template is ready');
  }
  const p = await prepare(client, { ...options, poolSize, cwd: root });
  if (options.ready) await options.ready({ template: p.template, hash: p.hash, built: p.built });
  const run = {
    framework,
    template: p.template,
    hash: p.hash,
    run: `${framework} ${process.pid}.${Date.now().toString(36)}`,
    socket: client.socket || '',
    url: client.url || '',
    keepFailed: truthy(options.keepFailed) || truthy(process.env.PRISTINE_KEEP_FAILED),
    unchanged: (options.release || 'unchanged') !== 'dirty',
    // A database per test is leased while the previous test runs (one
    // lease more held per test file): off with prefetch: false or
    // PRISTINE_PREFETCH=0, and in a run that keeps failed tests'
    // databases (their leases name their tests).
    prefetch: options.prefetch !== false && (process.env.PRISTINE_PREFETCH === undefined || truthy(process.env.PRISTINE_PREFETCH)),
    wait: options.wait || 60,
    ttl: options.ttl || 0,
    // Every lease carries it as min_size: a pool that shrank since (or
    // another run's, smaller) grows back before a worker waits.
    poolSize,
    setup,
    built: Boolean(p.built),
    setupSeconds: (Date.now() - started) / 1000,
  };
  if (client.token && !process.env.PRISTINE_TOKEN) process.env.PRISTINE_TOKEN = client.token;
  return run;
}

function clientOf(run) {
  if (run.url) return new Client({ url: run.url, token: process.env.PRISTINE_TOKEN });
  if (run.socket) return new Client({ socket: run.socket });
  return Client.fromEnv();
}

/**
 * Releases the leases of this run that are still held (a worker that
 * ended without returning its lease, or a per-worker lease) and reports
 * the ones kept for debugging. Resolves to the lines to print.
 */
async function teardownRun(run) {
  const client = clientOf(run);
  const lines = [];
  const mine = (await client.leases()).filter((l) => (l.holder || '').startsWith(run.run + ' '));
  for (const l of mine) {
    if (l.kept) {
      lines.push(`  ${l.holder.slice(run.run.length + 1)}: pristine sql ${l.id}  (release it with: pristine release ${l.id})`);
      continue;
    }
    try {
      await client.release(l.id, { unchanged: run.unchanged });
    } catch (e) {
      if (!(e instanceof PristineError) || (e.status !== 404 && e.status !== 410)) throw e;
    }
  }
  if (lines.length) lines.unshift('pristine: kept databases of failed tests:');
  return lines;
}

/** Sets DATABASE_URL and MYSQL_* (the lease's environment) in env. */
function exportEnv(lease, env = process.env) {
  for (const [k, v] of Object.entries(lease.env)) env[k] = v;
  env.PRISTINE_LEASE = lease.id;
}

/**
 * A handle on the database of a scope (a test, a file or a worker): begin()
 * leases one, end(failed) returns or keeps it. With `prefetch` (a database
 * per test), begin() takes the lease taken while the previous test ran,
 * end() releases in the background, and close() (the file's end) waits for
 * those releases and returns the lease taken ahead.
 */
class Holder {
  constructor(run, { setEnv = false, prefetch = false } = {}) {
    this.run = run;
    this.client = clientOf(run);
    this.setEnv = setEnv;
    this.current = null;
    this.prefetcher = null;
    if (prefetch && run.prefetch !== false && !run.keepFailed) {
      const worker = process.env.JEST_WORKER_ID || process.env.VITEST_POOL_ID || process.env.VITEST_WORKER_ID || '1';
      this.prefetcher = new Prefetcher(this.client, {
        template: run.template, holder: `${run.run} w${worker} prefetched`, wait: run.wait, ttl: run.ttl, minSize: run.poolSize || 0,
      });
    }
  }

  async take(holder) {
    if (!this.prefetcher) {
      return acquire(this.client, { template: this.run.template, holder: `${this.run.run} ${holder}`, wait: this.run.wait, ttl: this.run.ttl, minSize: this.run.poolSize || 0 });
    }
    try {
      return await this.prefetcher.lease();
    } catch (e) {
      throw leaseError(e, this.run.template, this.run.wait);
    }
  }

  /** Waits for the releases in flight and returns the lease taken ahead; resolves to the lines to print. */
  async close() {
    if (!this.prefetcher) return '';
    const errors = await this.prefetcher.close();
    return errors.map((e) => `pristine: ${e}`).join('\n');
  }

  get lease() {
    if (!this.current) {
      throw new PristineError('pristine: no database is leased here: use the database inside a test or a hook of the file that asked for it');
    }
    return this.current;
  }

  async begin(holder) {
    this.current = await this.take(holder);
    if (this.setEnv) exportEnv(this.current);
    if (this.run.setup) {
      try {
        const fn = await loadSetup(this.run.setup);
        await fn(this.current);
      } catch (e) {
        // The database is not what the tests expect: give it back, dirty.
        const l = this.current;
        this.current = null;
        await finish(this.client, l, { unchanged: false }).catch(() => {});
        throw new PristineError(`pristine: setup ${this.run.setup} failed on a new database: ${e && e.message ? e.message : e}`, 0, 0, { cause: e });
      }
    }
    return this.current;
  }

  async end(failed) {
    const l = this.current;
    this.current = null;
    if (!l) return '';
    if (this.prefetcher) {
      this.prefetcher.release(l.id, { unchanged: this.run.unchanged });
      return '';
    }
    return finish(this.client, l, { failed, keepFailed: this.run.keepFailed, unchanged: this.run.unchanged });
  }
}

const setups = new Map();

/** The function of a setup module: its default export, `setup`, or the module itself. */
function loadSetup(file) {
  if (!setups.has(file)) {
    setups.set(file, (async () => {
      let m;
      if (file.endsWith('.mjs')) {
        m = await import(pathToFileURL(file).href);
      } else {
        m = require(file);
      }
      const fn = [m && m.default, m && m.setup, m].find((f) => typeof f === 'function');
      if (!fn) throw new PristineError(`pristine: setup ${file} exports no function: export one (module.exports = async (lease) => ..., or export default)`);
      return fn;
    })());
  }
  return setups.get(file);
}

function readRun(env = process.env) {
  const raw = env[RUN_ENV];
  if (!raw) return null;
  return JSON.parse(raw);
}

function relative(p) {
  return p ? path.relative(process.cwd(), p) : '';
}

module.exports = { RUN_ENV, setupRun, teardownRun, Holder, readRun, exportEnv, clientOf, relative, truthy };
