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
  /** Seconds a lease request waits for a free database (default 60). */
  wait?: number;
  /** Seconds a lease lives (default the daemon's 30 minutes). */
  ttl?: number;
  /** The directory files and the migrate command are taken from (default the runner's root). */
  cwd?: string;
}

/** A scope's database: `lease` is set inside tests and hooks. */
export interface PristineDatabase {
  readonly lease: import('./index.js').Lease;
}
