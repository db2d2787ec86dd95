// The config run.sh runs keep/ with: one test fails on purpose.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    globalSetup: ['./pristine.setup.mjs'],
    include: ['keep/*.test.mjs'],
  },
});
