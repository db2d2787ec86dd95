'use strict';
// Leases taken ahead of need, and releases off the test's path.

const { PristineError } = require('./client.cjs');

/** The longest a lease taken ahead waits in one request for a free slot, in seconds. */
const AHEAD_WAIT = 1;

/**
 * Takes the next lease of one template while the current one is in use,
 * so a test that asks for a database finds one leased already (and, given
 * a `connect` function, a connection to it open already): the lease's
 * round trip ran while the previous test ran. `release()` returns a lease
 * in the background (the daemon answers before its "unchanged" check, and
 * the test does not wait for that answer either); `close()` waits for the
 * releases in flight and releases the lease taken ahead that nobody used.
 *
 * It holds at most one lease ahead: one lease more per Prefetcher while
 * tests run, holding a slot of the pool like any other. The lease is held
 * by this process: if it dies before close(), the daemon reclaims it when
 * it notices the process gone (and the Jest/Vitest global teardown
 * releases every lease of the run still held).
 */
class Prefetcher {
  /**
   * @param {import('./client.cjs').Client} client
   * @param {{template: string, holder?: string, wait?: number, ttl?: number, minSize?: number,
   *   connect?: (lease: any) => Promise<any>, ahead?: boolean}} req
   *   ahead false: nothing is taken ahead (take() leases when asked);
   *   releases still run in the background.
   */
  constructor(client, { template, holder = '', wait = 60, ttl = 0, minSize = 0, connect, ahead = true }) {
    this.client = client;
    this.req = { template, holder, wait, ttl, minSize };
    this.connect = connect;
    this.ahead = ahead;
    this.next = null; // a promise of {lease, conn}, or of an error, never rejected
    this.closed = false;
    this.releases = new Set();
    this.errors = [];
  }

  async _lease(ahead = false) {
    const lease = ahead ? await this._leaseAhead() : await this.client.lease(this.req);
    let conn = null;
    if (this.connect) {
      try {
        conn = await this.connect(lease);
      } catch {
        conn = null; // the test connects itself, for the error of its own attempt
      }
    }
    return { lease, conn };
  }

  /**
   * A lease taken in the background: asked for in waits of at most
   * AHEAD_WAIT seconds, so that close() never waits long for one (the pool
   * was full) and nothing comes after it.
   */
  async _leaseAhead() {
    const deadline = Date.now() + this.req.wait * 1000;
    for (;;) {
      if (this.closed) throw new PristineError('pristine: the prefetcher was closed');
      try {
        return await this.client.lease({ ...this.req, wait: Math.max(Math.min(AHEAD_WAIT, (deadline - Date.now()) / 1000), 0.001) });
      } catch (e) {
        if (!(e instanceof PristineError) || e.status !== 503 || Date.now() >= deadline) throw e;
      }
    }
  }

  /** Starts taking a lease ahead now, if none is. */
  warm() {
    if (!this.ahead || this.next || this.closed) return;
    this.next = this._lease(true).then((got) => got, (error) => ({ error }));
  }

  /**
   * Resolves to the lease taken ahead and its connection (null without a
   * connect function), or to a lease taken now when none was taken ahead or
   * taking it failed (the error is then the current one); starts taking
   * the next.
   */
  async take() {
    const next = this.next;
    this.next = null;
    let got = next ? await next : null;
    if (!got || got.error) got = await this._lease();
    this.warm();
    return got;
  }

  /** take() without a connection: the lease taken ahead, or one now. */
  async lease() {
    const { lease, conn } = await this.take();
    if (conn) await closeConn(conn);
    return lease;
  }

  /**
   * Returns a lease in the background; close() waits for it. An error
   * (other than the lease being gone already) is reported by close().
   */
  release(id, { unchanged = false } = {}) {
    const p = this.client.release(id, { unchanged }).catch((e) => {
      if (!(e instanceof PristineError) || (e.status !== 404 && e.status !== 410)) {
        this.errors.push(`release ${id}: ${e && e.message ? e.message : e}`);
      }
    }).finally(() => this.releases.delete(p));
    this.releases.add(p);
  }

  /**
   * Takes no more leases, waits for the releases in flight and releases
   * the lease taken ahead; resolves to the errors of releases that failed.
   */
  async close() {
    this.closed = true;
    const next = this.next;
    this.next = null;
    await Promise.all([...this.releases]);
    // A lease being taken asks no longer than AHEAD_WAIT seconds more (and
    // no more once closed): waited for, and released.
    if (next) await this._drop(next);
    const errors = this.errors;
    this.errors = [];
    return errors;
  }

  async _drop(next) {
    const got = await next;
    if (got.error) return;
    if (got.conn) await closeConn(got.conn);
    try {
      await this.client.release(got.lease.id, { unchanged: true });
    } catch {
      // gone already, or reclaimed by the daemon when this process exits
    }
  }
}

async function closeConn(conn) {
  try {
    await (conn.end ? conn.end() : conn.close());
  } catch {
    // closed already
  }
}

module.exports = { Prefetcher, AHEAD_WAIT };
