module.exports = {
  testEnvironment: 'node',
  transform: {},
  testMatch: ['<rootDir>/test/**/*.test.cjs'],
  globalSetup: '<rootDir>/pristine.setup.cjs',
  globalTeardown: 'pristine-client/jest/teardown',
};
