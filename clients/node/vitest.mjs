// pristine-client/vitest: a pristine database per worker, per test file or
// per test in Vitest. The global setup (pristine-client/vitest/setup)
// builds the template once, brings a pool up and provides the run's
// settings; tests take their database with pristineDatabase(), which reads
// them with inject().
import { inject, expect, beforeAll, afterAll, beforeEach, afterEach } from 'vitest';
import runner from './lib/runner.cjs';
import clientModule from './lib/client.cjs';

const { Holder, relative } = runner;
const { PristineError } = clientModule;

export { PROVIDE_KEY } from './vitest/setup.mjs';
import { PROVIDE_KEY } from './vitest/setup.mjs';

const WORKER = Symbol.for('pristine-client.vitest.worker');

function runSettings() {
  let run;
  try {
    run = inject(PROVIDE_KEY);
  } catch {
    run = undefined;
  }
  if (!run) {
    throw new PristineError("pristine: nothing was provided under 'pristine': the pristine global setup did not run; " +
      "add a globalSetup file exporting globalSetup({...}) from 'pristine-client/vitest/setup' to test.globalSetup in the Vitest config");
  }
  return run;
}

/**
 * Gives this file's tests a pristine database: `per: 'worker'` (the
 * default) one per Vitest worker, held across the files it runs (with
 * isolation on, Vitest's default, each file runs in a fresh worker, so that
 * is one per file); `per: 'file'` one per file; `per: 'test'` one per test,
 * leased while the previous test runs and released in the background (the
 * run's prefetch option, or PRISTINE_PREFETCH=0, turns that off).
 * Use `db.lease` in tests and hooks (`db.lease.mysql2()`,
 * `db.lease.knex()`, `db.lease.typeorm()`); `env: true` also sets
 * DATABASE_URL and MYSQL_*. A failed test's database is kept when the run
 * asks for it (keepFailed, or PRISTINE_KEEP_FAILED=1).
 */
export function pristineDatabase({ per = 'worker', env = false } = {}) {
  if (!['worker', 'file', 'test'].includes(per)) {
    throw new PristineError(`pristine: per is ${JSON.stringify(per)}: it must be "worker", "file" or "test"`);
  }
  const run = runSettings();
  // A lease may wait run.wait seconds for a free database: the hooks that
  // lease wait longer than that, so the wait's own error (which names the
  // cause) is the one reported, not a hook timeout.
  const timeout = (run.wait + 15) * 1000;
  const worker = process.env.VITEST_POOL_ID || process.env.VITEST_WORKER_ID || '1';
  const file = () => relative(expect.getState().testPath || '');
  let failed = false;
  const report = (msg) => {
    if (msg) process.stderr.write(`\n${msg}\n`);
  };
  if (per === 'worker' && !run.isolate) {
    // One holder for every file this worker runs; the global teardown (or
    // the daemon, when the worker's process exits) returns it.
    let h = globalThis[WORKER];
    if (!h) {
      h = globalThis[WORKER] = new Holder(run, { setEnv: env });
      h.failed = false;
    }
    beforeAll(async () => {
      if (!h.current) await h.begin(`worker ${worker}`);
    }, timeout);
    afterEach((ctx) => {
      if (ctx.task.result && ctx.task.result.state === 'fail') h.failed = true;
    });
    afterAll(async () => {
      // Keep a failed worker's database at once; hand out a fresh one to
      // the worker's next file.
      if (h.failed && run.keepFailed) {
        report(await h.end(true));
        h.failed = false;
      }
    }, timeout);
    return h;
  }
  // A database per test is leased while the previous test runs (unless the
  // run turned prefetch off); the file's end returns the one taken ahead.
  const h = new Holder(run, { setEnv: env, prefetch: per === 'test' });
  if (per === 'test') {
    beforeEach((ctx) => h.begin(`worker ${worker} ${file()} > ${ctx.task.name}`), timeout);
    afterEach(async (ctx) => report(await h.end(Boolean(ctx.task.result && ctx.task.result.state === 'fail'))), timeout);
    afterAll(async () => report(await h.close()), timeout);
  } else {
    beforeAll(() => h.begin(`worker ${worker} ${file()}`), timeout);
    afterEach((ctx) => {
      if (ctx.task.result && ctx.task.result.state === 'fail') failed = true;
    });
    afterAll(async () => report(await h.end(failed)), timeout);
  }
  return h;
}
