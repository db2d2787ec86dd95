// A pool node's slots with TLS (`pristine serve --slot-tls`, what a
// non-loopback --slot-address turns on): the lease carries the CA, and
// lease.mysql2() connects with TLS verified against it (and a host name,
// when the lease names one: mysql2's verifyIdentity).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import mysql from 'mysql2/promise';
import { prepare, acquire, finish } from '../index.mjs';
import { startDaemon, skipReason } from './daemon.mjs';

const skip = skipReason() || false;
let d;
let dir;

before(async () => {
  if (skip) return;
  d = await startDaemon(['--slot-tls']);
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pristine-node-tls-'));
  fs.mkdirSync(path.join(dir, 'migrations'));
  fs.writeFileSync(path.join(dir, 'migrations', '001.sql'), "CREATE TABLE notes (body VARCHAR(100));\nINSERT INTO notes VALUES ('seed');\n");
});

after(async () => {
  if (d) await d.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

test('a lease of a TLS slot connects with a verified certificate; without TLS or to another name it is refused', { skip }, async () => {
  await prepare(d.client, { template: 'tlsnotes', files: ['migrations'], cwd: dir, poolSize: 1,
    migrate: 'cat migrations/*.sql | mariadb -u"$MYSQL_USER" "$MYSQL_DATABASE"' });
  const l = await acquire(d.client, { template: 'tlsnotes', holder: 'node tls' });
  try {
    assert.match(l.ca, /BEGIN CERTIFICATE/);
    const o = l.mysql2();
    assert.deepEqual(o.ssl, { ca: l.ca, rejectUnauthorized: true, verifyIdentity: false }); // 127.0.0.1: see mysql2()
    const c = await mysql.createConnection(o);
    const [[row]] = await c.query("SHOW SESSION STATUS LIKE 'Ssl_cipher'");
    const [[note]] = await c.query('SELECT body FROM notes');
    await c.end();
    assert.ok(row.Value, 'the connection is not TLS');
    assert.equal(note.body, 'seed');
    const { ssl, ...plain } = o;
    await assert.rejects(mysql.createConnection(plain), /Access denied/);
    // Trusting the system's CAs instead of the lease's: refused.
    const system = fs.readFileSync('/etc/ssl/certs/ca-certificates.crt', 'utf8');
    await assert.rejects(mysql.createConnection({ ...o, ssl: { ...o.ssl, ca: system } }), /certificate/i);
    // A lease naming its host by name gets its name checked.
    assert.equal(Object.assign(Object.create(Object.getPrototypeOf(l)), l, { host: 'pool.example' }).tls().verifyIdentity, true);
  } finally {
    await finish(d.client, l, {});
  }
});
