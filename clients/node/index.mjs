// pristine-client: the Node client of a pristine daemon (ES module entry;
// the same objects as the CommonJS entry).
import m from './index.cjs';

export const {
  Client, Lease, PristineError, NoDaemonError, TemplateBuildError, defaultRoot, contentKey,
  ensureTemplate, ensurePool, runCommand, prepare, finish, acquire, Prefetcher, CACHE_ENV, MAX_WAIT, UNKEYED_BUILD,
} = m;
export default m;
