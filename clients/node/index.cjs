'use strict';
// pristine-client: the Node client of a pristine daemon (CommonJS entry).
const client = require('./lib/client.cjs');
const key = require('./lib/key.cjs');
const ensure = require('./lib/ensure.cjs');
const prefetch = require('./lib/prefetch.cjs');

module.exports = {
  Client: client.Client,
  Lease: client.Lease,
  PristineError: client.PristineError,
  NoDaemonError: client.NoDaemonError,
  TemplateBuildError: ensure.TemplateBuildError,
  defaultRoot: client.defaultRoot,
  contentKey: key.contentKey,
  ensureTemplate: ensure.ensureTemplate,
  ensurePool: ensure.ensurePool,
  runCommand: ensure.runCommand,
  prepare: ensure.prepare,
  finish: ensure.finish,
  acquire: ensure.acquire,
  Prefetcher: prefetch.Prefetcher,
  CACHE_ENV: ensure.CACHE_ENV,
  MAX_WAIT: client.MAX_WAIT,
  UNKEYED_BUILD: client.UNKEYED_BUILD,
};
