// Options of the Jest and Vitest global setups.
import type { Client, PrepareOptions } from './index.js';

export interface RunOptions extends Omit<PrepareOptions, 'cwd'> {
  /** The daemon (default Client.fromEnv()). */
  client?: Client;
  /** Slots of the pool (default 2 per worker). */
  poolSize?: number;
  /** Keep a failed test's database for debugging (also PRISTINE_KEEP_FAILED=1). */
  keepFailed?: boolean;
  /** 'unchanged' (default: the daemon checks and reuses an untouched database) or 'dirty' (always reset). */
  release?: 'unchanged' | 'dirty';
  /**
   * With a database per test, lease the next test's while the current one
   * runs, and release in the background (default true; PRISTINE_PREFETCH=0
   * also turns it off). Costs one lease more held per test file at a time.
   * Off in a run that keeps failed tests' databases.
   */
  prefetch?: boolean;
  /** Seconds a lease request waits for a free database (default 60). */
  wait?: number;
  /** Seconds a lease lives (default the daemon's 30 minutes). */
  ttl?: number;
  /** The directory files and the migrate command are taken from (default the runner's root). */
  cwd?: string;
  /**
   * Runs once per run in the global setup after the template is ready,
   * whether this run built it or reused it (built says which): the
   * process-side work a stock global setup does besides the schema.
   */
  ready?: (info: { template: string; hash: string; built: boolean }) => void | Promise<void>;
  /**
   * A module (relative to the root; .cjs or .js under Jest, also .mjs under
   * Vitest) whose function (module.exports, default export or `setup`)
   * runs on every database handed out, in the worker, before its tests see
   * it: per-run data a stock global setup writes after migrating.
   */
  setup?: string;
}

/** A scope's database: `lease` is set inside tests and hooks. */
export interface PristineDatabase {
  readonly lease: import('./index.js').Lease;
}
