// Jest's globalSetup: build the template once (knex migrations and seeds,
// run by their command against the template server), keyed by the files
// that define it, and bring a pool up. Tests take their database with
// pristineDatabase() from 'pristine-client/jest'.
const { globalSetup } = require('pristine-client/jest');

module.exports = globalSetup({
  template: 'node-jest-notes',
  files: ['migrations', 'seeds', 'knexfile.cjs'],
  migrate: 'npx --no-install knex --knexfile knexfile.cjs migrate:latest && npx --no-install knex --knexfile knexfile.cjs seed:run',
});
