'use strict';
// What a database of its own costs a test, with the Node client: N tests one
// after another, each leasing a database of its own (lease, mysql2 connect,
// its query, end, release unchanged), then the same N tests on one database
// they share, in the same run; prints a table row (medians: lease, connect,
// release, their sum on the test's thread, the test on each side, the
// ratio). The template "pertest" and its pool come from `pristine-bench
// pertest` (scripts/bench-pertest.sh runs both).
const mysql = require('mysql2/promise');
const { Client } = require('..');

const QUERY = "SELECT COUNT(*) FROM item WHERE name LIKE 'item 1%'";
const median = (v) => { const s = [...v].sort((a, b) => a - b); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };
const now = () => Number(process.hrtime.bigint()) / 1e6;

async function main(n) {
  const c = Client.fromEnv();
  const shared = await c.lease({ template: 'pertest', holder: 'bench-pertest node (shared)' });
  const conn = await mysql.createConnection(shared.mysql2());
  const sharedT = [];
  for (let i = 0; i < n; i++) {
    const t0 = now();
    await conn.query(QUERY);
    sharedT.push(now() - t0);
  }
  await conn.end();
  await c.release(shared.id);
  const leaseT = [], connectT = [], releaseT = [], overT = [], ownT = [];
  for (let i = 0; i < n; i++) {
    const t0 = now();
    const l = await c.lease({ template: 'pertest', holder: 'bench-pertest node' });
    const t1 = now();
    const own = await mysql.createConnection(l.mysql2());
    const t2 = now();
    await own.query(QUERY);
    const t3 = now();
    await own.end();
    await c.release(l.id, { unchanged: true });
    const t4 = now();
    leaseT.push(t1 - t0); connectT.push(t2 - t1); releaseT.push(t4 - t3);
    overT.push(t2 - t0 + t4 - t3); ownT.push(t4 - t0);
  }
  const f = (x) => x.toFixed(2);
  console.log(`| Node | ${n} | ${f(median(leaseT))} / ${f(median(connectT))} / ${f(median(releaseT))} ms | ${f(median(overT))} ms ` +
    `| ${f(median(ownT))} / ${f(median(sharedT))} ms | ${(median(ownT) / median(sharedT)).toFixed(1)}x |`);
}

main(Number(process.argv[2] || 200)).catch((e) => { console.error(e); process.exit(1); });
