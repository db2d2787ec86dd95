// Types of pristine-client/jest.
import type { RunOptions, PristineDatabase } from './run-options.js';
export type { RunOptions, PristineDatabase };

/** A Jest globalSetup function: `module.exports = globalSetup({ template, files, migrate })`. */
export function globalSetup(options: RunOptions): (globalConfig?: unknown, projectConfig?: unknown) => Promise<void>;
/** The Jest globalTeardown (also 'pristine-client/jest/teardown'). */
export function globalTeardown(): Promise<void>;
/** A database for this file's tests: per file (default) or per test; env: true also sets DATABASE_URL and MYSQL_*. */
export function pristineDatabase(options?: { per?: 'file' | 'test'; env?: boolean }): PristineDatabase;
