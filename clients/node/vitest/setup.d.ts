// Types of pristine-client/vitest/setup.
import type { RunOptions } from '../run-options.js';
export type { RunOptions };

export const PROVIDE_KEY: 'pristine';
/** A Vitest global setup function: `export default globalSetup({ template, files, migrate })`. */
export function globalSetup(options: RunOptions): (project: unknown) => Promise<() => Promise<void>>;
