// bench.sh's baseline: the suite's test files, with a MariaDB server per
// worker instead of pristine (bench/baseline.cjs).
module.exports = {
  rootDir: '..',
  testEnvironment: 'node',
  transform: {},
  testMatch: ['<rootDir>/test/**/*.test.cjs'],
  moduleNameMapper: { '^pristine-client/jest$': '<rootDir>/bench/baseline.cjs' },
};
