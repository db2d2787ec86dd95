import { defineConfig } from 'vitest/config';

export default defineConfig({
  // Vite looks localhost up in DNS unless told an address: a machine whose
  // /etc/hosts has no localhost (a fresh debootstrap root) fails at startup.
  server: { host: '127.0.0.1' },
  test: {
    globalSetup: ['./pristine.setup.mjs'],
    include: ['test/**/*.test.mjs'],
    pool: 'forks',
    // minForks = maxForks: with isolate: false, Vitest 3 loses files when it
    // may stop idle forks (maxForks above minForks).
    poolOptions: { forks: { maxForks: 3, minForks: 3 } },
    // Workers run several files each, so a per-worker database spans them.
    isolate: false,
  },
});
