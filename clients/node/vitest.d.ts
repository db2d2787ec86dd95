// Types of pristine-client/vitest.
import type { RunOptions, PristineDatabase } from './run-options.js';
export type { RunOptions, PristineDatabase };

/** The settings the global setup provides to tests (inject('pristine')). */
export interface PristineRun {
  template: string;
  hash: string;
  run: string;
  keepFailed: boolean;
  isolate: boolean;
  setupSeconds: number;
}

declare module 'vitest' {
  export interface ProvidedContext {
    pristine: PristineRun;
  }
}

export const PROVIDE_KEY: 'pristine';
/** A database for this file's tests: per worker (default), per file or per test. */
export function pristineDatabase(options?: { per?: 'worker' | 'file' | 'test'; env?: boolean }): PristineDatabase;
