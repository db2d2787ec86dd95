'use strict';
// What a database of its own costs a test, with the Node client: N tests one
// after another, each with a database of its own as the Jest/Vitest
// integration hands them out (a Prefetcher: the lease and the mysql2
// connection taken ahead while the previous test ran, the release in the
// background), then the same N tests on one database they share, in the
// same run; prints a table row (medians: the take, the connect on the
// test's path when none was ready, the release, their sum on the test's
// path, the test on each side, the ratio). --no-prefetch leases when asked;
// --work-ms W has each test work W ms after its query (a timer), on both
// sides. The template "pertest" and its pool come from `pristine-bench
// pertest` (scripts/bench-pertest.sh runs both).
const mysql = require('mysql2/promise');
const { Client, Prefetcher } = require('..');

const QUERY = "SELECT COUNT(*) FROM item WHERE name LIKE 'item 1%'";
const median = (v) => { const s = [...v].sort((a, b) => a - b); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };
const now = () => Number(process.hrtime.bigint()) / 1e6;
const work = (ms) => (ms > 0 ? new Promise((r) => setTimeout(r, ms)) : undefined);

async function main(n, ahead, workMs) {
  const c = Client.fromEnv();
  const shared = await c.lease({ template: 'pertest', holder: 'bench-pertest node (shared)' });
  const conn = await mysql.createConnection(shared.mysql2());
  const sharedT = [];
  for (let i = 0; i < n; i++) {
    const t0 = now();
    await conn.query(QUERY);
    await work(workMs);
    sharedT.push(now() - t0);
  }
  await conn.end();
  await c.release(shared.id);
  // Without prefetch the test connects itself: the connect has a column of its own.
  const p = new Prefetcher(c, { template: 'pertest', holder: 'bench-pertest node', connect: ahead ? (l) => mysql.createConnection(l.mysql2()) : undefined, ahead });
  p.warm();
  const leaseT = [], connectT = [], releaseT = [], overT = [], ownT = [];
  for (let i = 0; i < n; i++) {
    const t0 = now();
    const { lease: l, conn } = await p.take();
    const t1 = now();
    const own = conn || await mysql.createConnection(l.mysql2());
    const t2 = now();
    await own.query(QUERY);
    await work(workMs);
    const t3 = now();
    await own.end();
    p.release(l.id, { unchanged: true });
    const t4 = now();
    leaseT.push(t1 - t0); connectT.push(t2 - t1); releaseT.push(t4 - t3);
    overT.push(t2 - t0 + t4 - t3); ownT.push(t4 - t0);
  }
  const errors = await p.close();
  if (errors.length) throw new Error('bench-pertest node: ' + errors.join('; '));
  const f = (x) => x.toFixed(2);
  const name = (ahead ? 'Node' : 'Node, no prefetch') + (workMs ? `, ${workMs} ms of work` : '');
  console.log(`| ${name} | ${n} | ${f(median(leaseT))} / ${f(median(connectT))} / ${f(median(releaseT))} ms | ${f(median(overT))} ms ` +
    `| ${f(median(ownT))} / ${f(median(sharedT))} ms | ${(median(ownT) / median(sharedT)).toFixed(1)}x |`);
}

const argv = process.argv.slice(2);
const wi = argv.indexOf('--work-ms');
const workMs = wi >= 0 ? Number(argv[wi + 1]) : 0;
const args = argv.filter((a, i) => a !== '--no-prefetch' && (wi < 0 || (i !== wi && i !== wi + 1)));
main(Number(args[0] || 200), !argv.includes('--no-prefetch'), workMs).catch((e) => { console.error(e); process.exit(1); });
