// The baseline of bench.sh: the same tests with what users run without
// pristine, a MariaDB server of its own per Jest worker (as a container per
// worker would give, without Docker), started by the worker on first use,
// and for each scope (file or test) a fresh database made by knex's
// migrations and seeds. jest.baseline.config.cjs maps
// 'pristine-client/jest' here, so the test files are unchanged.
const { spawn, execFileSync } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');
const knex = require('knex');
const mysql = require('mysql2/promise');

const W = process.env.BENCH_BASELINE_DIR;

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

// The worker's server: started on first use, found again by later files.
async function server() {
  const dir = path.join(W, `w${process.env.JEST_WORKER_ID || '1'}`);
  const portFile = path.join(dir, 'port');
  if (fs.existsSync(portFile)) return Number(fs.readFileSync(portFile, 'utf8'));
  // A tmpdir of its own: concurrent bootstraps in one /tmp collide on
  // their temporary tables' names.
  fs.mkdirSync(path.join(dir, 'tmp'), { recursive: true });
  try {
    execFileSync('mariadb-install-db', ['--no-defaults', `--datadir=${dir}/data`, '--auth-root-authentication-method=normal',
      '--skip-name-resolve', '--force', `--tmpdir=${dir}/tmp`], { stdio: 'pipe' });
  } catch (e) {
    throw new Error(`mariadb-install-db failed: ${e.stdout}${e.stderr}`);
  }
  const port = await freePort();
  const sock = path.join(dir, 'sock');
  const p = spawn('mariadbd', ['--no-defaults', `--datadir=${dir}/data`, `--socket=${sock}`, `--port=${port}`, '--bind-address=127.0.0.1', `--tmpdir=${dir}/tmp`,
    '--innodb-buffer-pool-size=128M', '--innodb-flush-log-at-trx-commit=0', '--innodb-doublewrite=0', '--innodb-flush-method=nosync',
    '--skip-log-bin', '--performance-schema=0', '--skip-name-resolve', '--user=root', `--log-error=${dir}/err`, `--pid-file=${dir}/pid`],
  { detached: true, stdio: 'ignore' });
  p.unref();
  for (let i = 0; ; i++) {
    try {
      const c = await mysql.createConnection({ socketPath: sock, user: 'root' });
      await c.query("CREATE USER bench@'127.0.0.1' IDENTIFIED BY 'bench'");
      await c.query("GRANT ALL ON *.* TO bench@'127.0.0.1'");
      await c.end();
      break;
    } catch (e) {
      if (i > 300) throw e;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  fs.writeFileSync(portFile, String(port));
  return port;
}

let n = 0;

// A fresh database on the worker's server, migrated and seeded by knex.
async function fresh() {
  const port = await server();
  const database = `t_${process.pid}_${n++}_${Date.now()}`;
  const conn = { host: '127.0.0.1', port, user: 'bench', password: 'bench', database };
  const c = await mysql.createConnection({ ...conn, database: undefined });
  await c.query(`CREATE DATABASE ${database}`);
  await c.end();
  const k = knex({ client: 'mysql2', connection: conn, migrations: { directory: path.join(__dirname, '..', 'migrations'), loadExtensions: ['.cjs'] },
    seeds: { directory: path.join(__dirname, '..', 'seeds'), loadExtensions: ['.cjs'] } });
  await k.migrate.latest();
  await k.seed.run();
  await k.destroy();
  return {
    id: database, ...conn, url: `mysql://bench:bench@127.0.0.1:${port}/${database}`,
    env: { MYSQL_HOST: '127.0.0.1', MYSQL_PORT: String(port), MYSQL_USER: 'bench', MYSQL_PWD: 'bench', MYSQL_DATABASE: database, DATABASE_URL: `mysql://bench:bench@127.0.0.1:${port}/${database}` },
    mysql2: () => ({ ...conn }),
    knex: () => ({ client: 'mysql2', connection: { ...conn } }),
  };
}

async function drop(l) {
  const c = await mysql.createConnection({ host: l.host, port: l.port, user: l.user, password: l.password });
  await c.query(`DROP DATABASE ${l.database}`);
  await c.end();
}

function pristineDatabase({ per = 'file', env = false } = {}) {
  const h = { current: null, get lease() { return this.current; } };
  const begin = async () => {
    h.current = await fresh();
    if (env) Object.assign(process.env, h.current.env);
  };
  const end = () => h.current && drop(h.current);
  if (per === 'file') {
    beforeAll(begin, 120000);
    afterAll(end);
  } else {
    beforeEach(begin, 120000);
    afterEach(end);
  }
  return h;
}

module.exports = { pristineDatabase };
