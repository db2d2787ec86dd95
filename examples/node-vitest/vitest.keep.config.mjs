// The config run.sh runs keep/ with: one test fails on purpose.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  // Vite looks localhost up in DNS unless told an address: a machine whose
  // /etc/hosts has no localhost (a fresh debootstrap root) fails at startup.
  server: { host: '127.0.0.1' },
  test: {
    globalSetup: ['./pristine.setup.mjs'],
    include: ['keep/*.test.mjs'],
  },
});
