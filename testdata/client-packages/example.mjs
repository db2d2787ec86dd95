// The npm package's example, run from the installed tarball by
// scripts/test-client-packages.sh: a template built from a tiny SQL string,
// a pool of one, one lease, a query on it, its release.
import mysql from 'mysql2/promise';
import { Client, ensurePool, ensureTemplate } from 'pristine-client';

const SQL = ['CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(20))', "INSERT INTO t VALUES (1, 'pristine')"];

const client = Client.fromEnv();
const tpl = await ensureTemplate(client, { name: 'pkg-node', key: 'client-packages-node-1' }, async (conn) => {
  const db = await mysql.createConnection({ host: conn.host, port: conn.port, user: conn.user, password: conn.password, database: conn.database });
  for (const stmt of SQL) await db.query(stmt);
  await db.end();
});
await ensurePool(client, 'pkg-node', tpl.hash, 1);
const lease = await client.lease({ template: 'pkg-node' });
const db = await mysql.createConnection(lease.mysql2());
const [rows] = await db.query('SELECT name FROM t WHERE id = 1');
await db.end();
await client.release(lease.id);
await client.poolDown('pkg-node');
if (rows[0].name !== 'pristine') throw new Error(`read ${JSON.stringify(rows)}, want pristine`);
console.log(`node: leased ${lease.database} on port ${lease.port}, read '${rows[0].name}', released`);
