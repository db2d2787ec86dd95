// The package's entries: ES module and CommonJS give the same objects, and
// the Jest and Vitest helpers refuse to run without their global setup,
// saying what to add.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import * as esm from 'pristine-client';
import * as esmJest from 'pristine-client/jest';

const require = createRequire(import.meta.url);

test('ESM and CommonJS entries export the same objects', () => {
  const cjs = require('pristine-client');
  for (const name of ['Client', 'Lease', 'PristineError', 'NoDaemonError', 'TemplateBuildError', 'contentKey', 'prepare', 'acquire', 'Prefetcher', 'finish', 'ensureTemplate', 'ensurePool', 'runCommand']) {
    assert.equal(typeof cjs[name], 'function', name);
    assert.equal(esm[name], cjs[name], name);
  }
  const jest = require('pristine-client/jest');
  assert.equal(esmJest.pristineDatabase, jest.pristineDatabase);
  assert.equal(require('pristine-client/jest/teardown'), jest.globalTeardown);
});

test('pristineDatabase without the global setup names what to add', () => {
  const saved = process.env.PRISTINE_RUN;
  delete process.env.PRISTINE_RUN;
  try {
    assert.throws(() => esmJest.pristineDatabase(), /the pristine global setup did not run; add globalSetup .* to the Jest config/);
  } finally {
    if (saved !== undefined) process.env.PRISTINE_RUN = saved;
  }
  assert.throws(() => esmJest.pristineDatabase({ per: 'suite' }), /it must be "file" or "test"/);
});

test('a lease hides its password from printing and JSON', () => {
  const l = new esm.Lease({ id: 'x', host: '127.0.0.1', port: 3306, user: 'u', password: 'secret-pw', database: 'app', url: 'mysql://u:secret-pw@127.0.0.1:3306/app', env: ['MYSQL_PWD=secret-pw'] });
  assert.ok(!JSON.stringify(l).includes('secret-pw'));
  assert.ok(!require('node:util').inspect(l).includes('secret-pw'));
  assert.equal(l.mysql2().password, 'secret-pw');
  assert.equal(l.env.MYSQL_PWD, 'secret-pw');
});

test('keepFailed: options and PRISTINE_KEEP_FAILED', async () => {
  const { truthy } = require('../lib/runner.cjs');
  for (const v of [true, 1, '1', 'true', 'yes']) assert.equal(truthy(v), true, String(v));
  for (const v of [false, 0, undefined, null, '', '0', 'false', 'FALSE']) assert.equal(truthy(v), false, String(v));
});
