'use strict';
// The HTTP/JSON client of a pristine daemon, over its unix socket or
// loopback TCP with a bearer token. Zero dependencies: node:http only.

const http = require('node:http');
const net = require('node:net');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

/** The longest wait_seconds the daemon accepts in one request (1 hour). */
const MAX_WAIT = 3600;

/**
 * An error the daemon answered with, or a failure to reach it. `status` is
 * the HTTP status (0 when the daemon was not reached): 400 a value the
 * daemon refuses, 429 too many lease requests in progress (retry after
 * `retryAfter` seconds), 503 no database free in time.
 */
class PristineError extends Error {
  constructor(message, status = 0, retryAfter = 0, options) {
    super(message, options);
    this.name = 'PristineError';
    this.status = status;
    this.retryAfter = retryAfter;
    /** The daemon's machine-readable kind of the error (UNKEYED_BUILD), or ''. */
    this.code = (options && options.code) || '';
  }
}

/**
 * PristineError.code of a template whose build runs code (a migrate
 * command or function) that no file keys, refused by the daemon: the key
 * would be the command's text alone, and a changed migration would
 * silently get the old template.
 */
const UNKEYED_BUILD = 'unkeyed_build';

/** Nothing answers where the daemon should be. */
class NoDaemonError extends PristineError {
  constructor(message, options) {
    super(message, 0, 0, options);
    this.name = 'NoDaemonError';
  }
}

/** $PRISTINE_ROOT, else /var/lib/pristine for root, else ~/.local/share/pristine. */
function defaultRoot() {
  if (process.env.PRISTINE_ROOT) return process.env.PRISTINE_ROOT;
  if (typeof process.geteuid === 'function' && process.geteuid() === 0) return '/var/lib/pristine';
  return path.join(os.homedir(), '.local', 'share', 'pristine');
}

function envObject(list) {
  const env = {};
  for (const e of list || []) {
    const i = e.indexOf('=');
    if (i > 0) env[e.slice(0, i)] = e.slice(i + 1);
  }
  return env;
}

/**
 * A leased database: its connection, and the lease's id to release it.
 * The password is not enumerable, so printing or JSON-encoding a lease
 * does not show it.
 */
class Lease {
  constructor(d) {
    this.id = d.id;
    this.template = d.template || '';
    this.slot = Number(d.slot || 0);
    this.holder = d.holder || '';
    this.host = d.host || '127.0.0.1';
    this.port = Number(d.port || 0);
    this.socket = d.socket || '';
    this.user = d.user || '';
    Object.defineProperty(this, 'password', { value: d.password || '', enumerable: false });
    Object.defineProperty(this, 'url', { value: d.url || '', enumerable: false });
    Object.defineProperty(this, 'env', { value: envObject(d.env), enumerable: false });
    this.database = d.database || '';
    this.expires = d.expires || '';
    this.kept = Boolean(d.kept);
    this.pid = Number(d.pid || 0);
    // The CA certificate (PEM) of a slot reachable over the network
    // (`pristine serve --slot-address`); '' for a loopback slot.
    this.ca = d.ca || '';
  }

  /**
   * Options for mysql2's createConnection/createPool (and knex's
   * `connection`); a lease with a CA adds TLS verified against it, and
   * the host name too when the lease names a host by name (mysql2 cannot
   * check an IP address: it hands Node no name to check, and Node then
   * checks "localhost"). The CA is the pool node's own, so a certificate
   * it signed is one of that node's slots.
   */
  mysql2() {
    const o = { host: this.host, port: this.port, user: this.user, password: this.password, database: this.database };
    if (this.ca) o.ssl = this.tls();
    return o;
  }

  /** mysql2's ssl options for this lease's CA (see mysql2()). */
  tls() {
    return { ca: this.ca, rejectUnauthorized: true, verifyIdentity: !net.isIP(this.host) };
  }

  /** A knex config: `knex(lease.knex())`. */
  knex(client = 'mysql2') {
    return { client, connection: this.mysql2() };
  }

  /** TypeORM DataSource options: `new DataSource({...lease.typeorm(), entities})`. */
  typeorm(type = 'mysql') {
    const o = { type, host: this.host, port: this.port, username: this.user, password: this.password, database: this.database };
    if (this.ca) o.ssl = this.tls();
    return o;
  }

  /** A mariadb client command line that opens this database. */
  mysqlCommand() {
    return `mariadb -h${this.host} -P${this.port} -u${this.user} -p${this.password} ${this.database}`;
  }
}

const q = encodeURIComponent;

/**
 * A connection to one daemon: `new Client({socket})` over the unix socket,
 * `new Client({url, token})` over loopback TCP, `Client.fromEnv()` for the
 * one the environment names.
 */
class Client {
  constructor(opts = {}) {
    let { socket, url, token, timeout } = opts;
    if (!socket && !url) socket = path.join(defaultRoot(), 'pristine.sock');
    this.socket = url ? '' : socket;
    this.url = url ? (url.includes('://') ? url : 'http://' + url).replace(/\/+$/, '') : '';
    this.token = token || '';
    this.timeout = timeout || 0;
  }

  /**
   * The daemon of PRISTINE_URL (with PRISTINE_TOKEN, or the token file of
   * the root), else the unix socket of PRISTINE_ROOT or the default root.
   */
  static fromEnv() {
    const url = process.env.PRISTINE_URL;
    if (url) {
      let token = process.env.PRISTINE_TOKEN;
      if (!token) {
        const file = path.join(defaultRoot(), 'token');
        try {
          token = fs.readFileSync(file, 'utf8').trim();
        } catch (e) {
          throw new PristineError(`PRISTINE_URL is set but PRISTINE_TOKEN is not, and ${file}: ${e.code || e.message}: ` +
            `set PRISTINE_TOKEN to the token in ${file} on the daemon's host`);
        }
      }
      return new Client({ url, token });
    }
    return new Client({ socket: path.join(defaultRoot(), 'pristine.sock') });
  }

  /** The socket or URL of the daemon. */
  where() {
    return this.socket || this.url;
  }

  /** Sends one request; resolves to {status, body, headers, raw} whatever the status. */
  raw(method, p, body, timeoutSeconds) {
    const data = body === undefined || body === null ? null : Buffer.from(JSON.stringify(body));
    const headers = { 'Content-Type': 'application/json' };
    if (data) headers['Content-Length'] = String(data.length);
    if (this.token) headers.Authorization = 'Bearer ' + this.token;
    const opts = { method, path: p, headers };
    if (this.socket) {
      opts.socketPath = this.socket;
      opts.host = 'pristine';
    } else {
      const u = new URL(this.url);
      opts.host = u.hostname;
      opts.port = u.port || 80;
      opts.path = u.pathname.replace(/\/$/, '') + p;
    }
    const timeout = timeoutSeconds || this.timeout;
    return new Promise((resolve, reject) => {
      const req = http.request(opts, (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, raw: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      });
      if (timeout) req.setTimeout(timeout * 1000, () => req.destroy(new Error(`no answer within ${timeout}s`)));
      req.on('error', (e) => reject(this._transportError(method, p, e)));
      req.end(data || undefined);
    });
  }

  _transportError(method, p, e) {
    if (['ENOENT', 'ECONNREFUSED', 'ENOTDIR'].includes(e.code)) {
      return new NoDaemonError(`no pristine daemon is running on ${this.where()}: start one with \`pristine pool up\` or \`pristine serve\``, { cause: e });
    }
    if (e.code === 'EACCES') {
      return new NoDaemonError(`the pristine daemon's socket ${this.where()} is not open to this user (${e.code}): ` +
        'run the tests as the daemon\'s user, or serve over TCP (`pristine serve --listen 127.0.0.1:PORT`) and set PRISTINE_URL', { cause: e });
    }
    return new PristineError(`${method} ${p}: ${e.message}`, 0, 0, { cause: e });
  }

  /** Sends one request; resolves to the decoded answer for statuses in ok, rejects with PristineError otherwise. */
  async request(method, p, body, { ok = [200], timeout } = {}) {
    const res = await this.raw(method, p, body, timeout);
    let decoded = null;
    try {
      decoded = res.raw.trim() ? JSON.parse(res.raw) : null;
    } catch {
      decoded = null;
    }
    if (ok.includes(res.status)) {
      if (decoded === null && res.raw.trim()) throw new PristineError(`${method} ${p}: the answer is not JSON: ${res.raw.slice(0, 200)}`, res.status);
      return decoded;
    }
    const msg = (decoded && typeof decoded.error === 'string' && decoded.error) ||
      `${method} ${p}: ${res.status} ${http.STATUS_CODES[res.status] || ''}: ${res.raw.trim().slice(0, 500)}`;
    const ra = Number(res.headers['retry-after']);
    const code = (decoded && typeof decoded.code === 'string' && decoded.code) || '';
    throw new PristineError(msg, res.status, Number.isFinite(ra) && ra >= 0 ? ra : 0, { code });
  }

  health() {
    return this.request('GET', '/v1/health');
  }

  /**
   * POST /v1/templates: the answer's status is "ready", "build" (the caller
   * builds: the connection fields are set) or "building" (someone else is).
   */
  beginTemplate({ name, key, database, ttlSeconds, cache, keyFiles, allowStale }) {
    const body = { name, key };
    // keyFiles given: the build runs code, keyed by that many file paths
    // (the daemon refuses none, unless allowStale).
    if (keyFiles !== undefined && keyFiles !== null) {
      body.runs_code = true;
      if (keyFiles) body.key_files = keyFiles;
    }
    if (allowStale) body.allow_stale = true;
    if (database) body.database = database;
    if (ttlSeconds) body.ttl_seconds = ttlSeconds;
    if (cache) body.cache = cache;
    return this.request('POST', '/v1/templates', body, { ok: [200, 201, 423] });
  }

  finishTemplate(hash) {
    return this.request('PUT', '/v1/templates/' + q(hash), null, { timeout: 0 });
  }

  async abortTemplate(hash) {
    await this.request('DELETE', '/v1/templates/' + q(hash));
  }

  /** GET /v1/templates/REF?wait=: status "ready", "building" or "failed". */
  waitTemplate(ref, waitSeconds) {
    return this.request('GET', `/v1/templates/${q(ref)}?wait=${waitSeconds.toFixed(3)}`, null,
      { ok: [200, 410, 423], timeout: waitSeconds + 30 });
  }

  pool(template) {
    return this.request('GET', '/v1/pools/' + q(template));
  }

  pools() {
    return this.request('GET', '/v1/pools');
  }

  /**
   * Brings a pool up; resolves to its status once `minReady` slots answered
   * (0: the daemon's default, its first round of starts; `size`: every
   * slot); the others go on starting in the daemon, each serving waiting
   * leases as it answers. For a smaller pool of the same template that is
   * up, grows it to `size`: the status comes back at once, the new slots
   * start in the background.
   */
  async poolUp(template, size, minReady = 0) {
    const body = { template, size };
    if (minReady > 0) body.min_ready = minReady;
    const res = await this.raw('POST', '/v1/pools', body);
    if (res.status !== 200) {
      let msg = '';
      try {
        msg = JSON.parse(res.raw).error;
      } catch {
        msg = res.raw.trim();
      }
      throw new PristineError(msg || `pool up: ${res.status}`, res.status);
    }
    for (const line of res.raw.split('\n')) {
      if (!line.trim()) continue;
      const ev = JSON.parse(line);
      if (ev.error) throw new PristineError(ev.error, ev.code || 500);
      if (ev.status) return ev.status;
    }
    throw new PristineError('pool up: the daemon closed the connection before the pool was ready: see serve.log under the root');
  }

  poolDown(template) {
    return this.request('DELETE', '/v1/pools/' + q(template), null, { timeout: 0 });
  }

  /**
   * Leases a database, waiting up to `wait` seconds (default 60) for a free
   * one and for a pool a peer is still bringing up. `pid` (default: this
   * process) is the holder process: the daemon reclaims the lease when it
   * exits. A 429 is retried after its Retry-After within the wait.
   * `minSize` is how many slots the run uses at once: a smaller pool grows
   * to it first, at once, or the call fails at once (507) naming the
   * daemon's --max-memory/--max-disk when they do not fit.
   */
  async lease({ template, holder = '', ttl = 0, wait = 60, pid = process.pid, minSize = 0 } = {}) {
    const body = { holder, pid };
    if (minSize > 0) body.min_size = minSize;
    if (template) body.template = template;
    if (ttl) body.ttl_seconds = ttl;
    const deadline = Date.now() + wait * 1000;
    for (;;) {
      body.wait_seconds = Math.min(Math.max((deadline - Date.now()) / 1000, 0.001), MAX_WAIT);
      let pause = 100;
      try {
        return new Lease(await this.request('POST', '/v1/leases', body, { timeout: body.wait_seconds + 30 }));
      } catch (e) {
        if (!(e instanceof PristineError)) throw e;
        if (e.status === 429) pause = Math.max(e.retryAfter * 1000, 100);
        else if (e.status !== 503) throw e;
        if (Date.now() + pause >= deadline) throw e;
      }
      await new Promise((r) => setTimeout(r, pause));
    }
  }

  /** Returns a lease; `unchanged` asks the daemon to check nothing was written and hand it out again without a reset. */
  release(id, { unchanged = false } = {}) {
    return this.request('DELETE', '/v1/leases/' + q(id) + (unchanged ? '?mode=unchanged' : ''));
  }

  /** Holds a lease for debugging: not reclaimed or reset until released. */
  async keep(id) {
    return new Lease(await this.request('POST', `/v1/leases/${q(id)}/keep`));
  }

  async extend(id, ttlSeconds) {
    return new Lease(await this.request('POST', `/v1/leases/${q(id)}/extend`, { ttl_seconds: ttlSeconds }));
  }

  /**
   * Makes template `name` from lease `id`'s current state: everything
   * committed before the fork starts (docs/architecture.md, "Fork"). The
   * lease and its connections go on. With `key` (e.g. contentKey of the
   * fixture files), the fork is filed under its parent's key and this one,
   * and a later fork with the same key resolves at once to the template
   * made before (`built` false). Resolves to { template, built, seconds };
   * lease the fork by name once a pool of it is up (ensurePool with
   * `template.hash`).
   */
  fork(id, name, { key } = {}) {
    const body = { name };
    if (key) body.key = key;
    return this.request('POST', `/v1/leases/${q(id)}/fork`, body);
  }

  async getLease(id) {
    return new Lease(await this.request('GET', '/v1/leases/' + q(id)));
  }

  /** The leases held now (without credentials). */
  async leases() {
    return (await this.request('GET', '/v1/leases')) || [];
  }
}

module.exports = { Client, Lease, PristineError, NoDaemonError, defaultRoot, MAX_WAIT, UNKEYED_BUILD };
