'use strict';
// pristine-client/jest: a pristine database per test file or per test in
// Jest. The global setup builds the template once and brings a pool up;
// each test file asks for its database with pristineDatabase(); the global
// teardown releases what is left and lists the databases kept for
// debugging.

const { PristineError } = require('./lib/client.cjs');
const { RUN_ENV, setupRun, teardownRun, Holder, readRun, relative } = require('./lib/runner.cjs');

/**
 * Returns a Jest globalSetup function: `module.exports =
 * globalSetup({ template: 'app', files: ['migrations'], migrate: 'npx knex
 * migrate:latest' })` in the file jest.config's `globalSetup` names.
 */
function globalSetup(options = {}) {
  return async function pristineGlobalSetup(globalConfig = {}) {
    const run = await setupRun(options, { framework: 'jest', workers: globalConfig.maxWorkers, cwd: globalConfig.rootDir });
    // Workers are started after the global setup and inherit its environment.
    process.env[RUN_ENV] = JSON.stringify(run);
  };
}

/**
 * The Jest globalTeardown: releases this run's leases that are still held
 * and prints the ones kept for debugging.
 */
async function globalTeardown() {
  const run = readRun();
  if (!run) return;
  const lines = await teardownRun(run);
  if (lines.length) process.stderr.write('\n' + lines.join('\n') + '\n');
}

// The state jest-circus (Jest's default runner) keeps on the test file's
// global: the running test and its errors, to keep a failed test's database.
function currentTestFailed() {
  const sym = Object.getOwnPropertySymbols(globalThis).find((s) => s.description === 'JEST_STATE_SYMBOL');
  const state = sym && globalThis[sym];
  const t = state && state.currentlyRunningTest;
  return Boolean(t && t.errors && t.errors.length > 0);
}

function hook(name) {
  const fn = globalThis[name];
  if (typeof fn !== 'function') {
    throw new PristineError(`pristine: ${name} is not defined: call pristineDatabase() at the top of a Jest test file`);
  }
  return fn;
}

function testPath() {
  const e = globalThis.expect;
  return e && typeof e.getState === 'function' ? relative(e.getState().testPath) : '';
}

function testName() {
  const e = globalThis.expect;
  return e && typeof e.getState === 'function' ? e.getState().currentTestName || '' : '';
}

/**
 * Gives the tests of this file a pristine database: `per: 'file'` (the
 * default) leases one for the whole file (beforeAll/afterAll), `per:
 * 'test'` one for each test (beforeEach/afterEach), leased while the
 * previous test runs and released in the background (the run's prefetch
 * option, or PRISTINE_PREFETCH=0, turns that off). Use `db.lease` inside
 * tests and hooks: `mysql.createConnection(db.lease.mysql2())`,
 * `knex(db.lease.knex())`. `env: true` also sets DATABASE_URL and MYSQL_*.
 * A failed test's database is kept (not reset) when the run asks for it
 * (keepFailed, or PRISTINE_KEEP_FAILED=1), and how to open it is printed.
 */
function pristineDatabase({ per = 'file', env = false } = {}) {
  if (per !== 'file' && per !== 'test') throw new PristineError(`pristine: per is ${JSON.stringify(per)}: it must be "file" or "test"`);
  const run = readRun();
  if (!run) {
    throw new PristineError(`pristine: ${RUN_ENV} is not set: the pristine global setup did not run; ` +
      "add globalSetup (a file exporting require('pristine-client/jest').globalSetup({...})) and " +
      "globalTeardown: 'pristine-client/jest/teardown' to the Jest config");
  }
  // A database per test is leased while the previous test runs (unless the
  // run turned prefetch off); the file's end returns the one taken ahead.
  const h = new Holder(run, { setEnv: env, prefetch: per === 'test' });
  // A lease may wait run.wait seconds for a free database: the hooks that
  // lease wait longer than that, so the wait's own error (which names the
  // cause) is the one reported, not Jest's hook timeout.
  const timeout = (run.wait + 15) * 1000;
  let failed = false;
  const worker = process.env.JEST_WORKER_ID || '1';
  const end = async () => {
    const msg = await h.end(failed);
    if (msg) process.stderr.write(`\n${msg}\n`);
    failed = false;
  };
  if (per === 'file') {
    hook('beforeAll')(() => h.begin(`w${worker} ${testPath()}`), timeout);
    hook('afterEach')(() => {
      failed = failed || currentTestFailed();
    });
    hook('afterAll')(end, timeout);
  } else {
    hook('beforeEach')(() => h.begin(`w${worker} ${testPath()} > ${testName()}`), timeout);
    hook('afterEach')(() => {
      failed = currentTestFailed();
      return end();
    }, timeout);
    hook('afterAll')(async () => {
      const msg = await h.close();
      if (msg) process.stderr.write(`\n${msg}\n`);
    }, timeout);
  }
  return h;
}

module.exports = { globalSetup, globalTeardown, pristineDatabase };
