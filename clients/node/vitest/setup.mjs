// pristine-client/vitest/setup: the Vitest global setup. It runs in
// Vitest's main process, where 'vitest' itself must not be imported, so it
// lives apart from the test helpers of pristine-client/vitest.
import runner from '../lib/runner.cjs';

const { setupRun, teardownRun } = runner;

/** The key the run's settings are provided under. */
export const PROVIDE_KEY = 'pristine';

/**
 * Returns a Vitest global setup function: `export default
 * globalSetup({ template: 'app', files: ['migrations'], migrate })` in the
 * file `test.globalSetup` names. It provides the run's settings to tests
 * (`inject('pristine')`) and returns the teardown, which releases this
 * run's leases still held and lists the databases kept for debugging.
 */
export function globalSetup(options = {}) {
  return async function pristineGlobalSetup(project) {
    const config = (project && project.config) || {};
    const pool = config.pool || 'forks';
    const po0 = (config.poolOptions && config.poolOptions[pool]) || {};
    const workers = po0.maxForks || po0.maxThreads ||
      config.maxWorkers || undefined;
    const po = (config.poolOptions && config.poolOptions[pool]) || {};
    const isolate = po.isolate ?? config.isolate ?? true;
    const run = await setupRun(options, { framework: 'vitest', workers: typeof workers === 'number' ? workers : undefined, cwd: config.root });
    run.isolate = Boolean(isolate);
    run.pool = pool;
    if (project && typeof project.provide === 'function') project.provide(PROVIDE_KEY, run);
    return async () => {
      const lines = await teardownRun(run);
      if (lines.length) process.stderr.write('\n' + lines.join('\n') + '\n');
    };
  };
}

