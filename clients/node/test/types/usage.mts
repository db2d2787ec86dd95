// Compiled by `npm run typecheck` (tsc): the hand-written .d.ts files
// describe what the ES module entries export.
import { Client, contentKey, prepare, acquire, finish, Prefetcher, PristineError, NoDaemonError, TemplateBuildError, type Lease } from 'pristine-client';
import { globalSetup, pristineDatabase } from 'pristine-client/jest';

const client: Client = Client.fromEnv();
const key: string = contentKey(['migrations'], ['knex 3']);
const p: Promise<{ template: string; hash: string; key: string }> = prepare(client, {
  template: 'app', files: ['migrations'], migrate: 'npx knex migrate:latest', poolSize: 4,
});
async function use(): Promise<void> {
  const lease: Lease = await acquire(client, { template: 'app', holder: 'types', wait: 10 });
  const o: { host: string; port: number; user: string; password: string; database: string } = lease.mysql2();
  const k: { client: string; connection: typeof o } = lease.knex();
  const t: { type: 'mysql' | 'mariadb'; username: string } = lease.typeorm('mariadb');
  const msg: string = await finish(client, lease, { failed: true, keepFailed: true });
  const env: string | undefined = lease.env.DATABASE_URL;
  const forked: { built: boolean; seconds: number; template: { hash: string; parent?: string } } = await client.fork(lease.id, 'app-fixtures', { key });
  const pf = new Prefetcher(client, { template: 'app', holder: 'types', connect: async (l: Lease) => l.mysql2() });
  const got: { lease: Lease; conn: { host: string } | null } = await pf.take();
  pf.release(got.lease.id, { unchanged: true });
  const errors: string[] = await pf.close();
  void [o, k, t, msg, env, key, p, forked, errors];
  try {
    await client.lease({ template: 'app', ttl: 60 });
  } catch (e) {
    if (e instanceof NoDaemonError || e instanceof TemplateBuildError) throw e;
    if (e instanceof PristineError && e.status === 503) return;
  }
}
void use;
const setup: (c?: unknown) => Promise<void> = globalSetup({ template: 'app', files: ['migrations'], migrate: async (conn) => { void conn.env; }, keepFailed: true,
  ready: ({ built }) => { void built; }, setup: 'test/db-setup.cjs', prefetch: false });
const db = pristineDatabase({ per: 'test', env: true });
const port: number = db.lease.port;
void [setup, port];
