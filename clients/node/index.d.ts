// Types of pristine-client: the Node client of a pristine daemon.

/** Options of a Client: a unix socket, or a loopback TCP URL with its token. */
export interface ClientOptions {
  /** The daemon's unix socket (default <root>/pristine.sock). */
  socket?: string;
  /** http://HOST:PORT of `pristine serve --listen`. */
  url?: string;
  /** The bearer token of the root (<root>/token), with url. */
  token?: string;
  /** Seconds to wait for an answer (0: no limit). */
  timeout?: number;
}

/** An error the daemon answered with (status), or a failure to reach it (status 0). */
export class PristineError extends Error {
  constructor(message: string, status?: number, retryAfter?: number, options?: { cause?: unknown; code?: string });
  /** The HTTP status: 400 a refused value, 429 too many lease requests, 503 nothing free in time; 0 not reached. */
  status: number;
  /** The daemon's machine-readable kind of the error (UNKEYED_BUILD), or ''. */
  code: string;
  /** Seconds the daemon asks to wait before retrying (with 429). */
  retryAfter: number;
}

/** Nothing answers where the daemon should be. */
export class NoDaemonError extends PristineError {}

/** The user's migrations or fixtures failed against the template server; the build was aborted. */
export class TemplateBuildError extends PristineError {}

/** mysql2's createConnection/createPool options. */
export interface Mysql2Options {
  host: string;
  port: number;
  user: string;
  password: string;
  database: string;
  /** TLS verified against the lease's CA, for a slot reachable over the network. */
  ssl?: { ca: string; rejectUnauthorized: boolean; verifyIdentity: boolean };
}

/** A leased database. Its password is not enumerable: printing the lease does not show it. */
export class Lease {
  readonly id: string;
  readonly template: string;
  readonly slot: number;
  readonly holder: string;
  readonly host: string;
  readonly port: number;
  readonly socket: string;
  readonly user: string;
  readonly password: string;
  readonly database: string;
  /** mysql://user:password@127.0.0.1:port/db */
  readonly url: string;
  /** DATABASE_URL, MYSQL_HOST, MYSQL_PORT, MYSQL_UNIX_PORT, MYSQL_USER, MYSQL_PWD, MYSQL_DATABASE, MYSQL_HOME, ... */
  readonly env: Record<string, string>;
  readonly expires: string;
  readonly kept: boolean;
  readonly pid: number;
  /** The CA certificate (PEM) of a slot reachable over the network; '' for a loopback slot. */
  readonly ca: string;
  /** mysql2's ssl options for `ca`: the certificate verified against it; the host name too when `host` is a name, not an IP address. */
  tls(): { ca: string; rejectUnauthorized: boolean; verifyIdentity: boolean };
  /** Options for mysql2 (also knex's `connection`); with TLS verified against `ca` when it is set. */
  mysql2(): Mysql2Options;
  /** A knex config: `knex(lease.knex())`. */
  knex(client?: string): { client: string; connection: Mysql2Options };
  /** TypeORM DataSource options: `new DataSource({ ...lease.typeorm(), entities })`. */
  typeorm(type?: 'mysql' | 'mariadb'): { type: 'mysql' | 'mariadb'; host: string; port: number; username: string; password: string; database: string; ssl?: { ca: string; rejectUnauthorized: boolean; verifyIdentity: boolean } };
  /** A mariadb command line that opens this database. */
  mysqlCommand(): string;
}

/** The daemon's answer to a template request. `env` is NAME=VALUE strings for a migration command. */
export interface TemplateAnswer {
  status: 'ready' | 'build' | 'building' | 'failed';
  hash?: string;
  error?: string;
  host?: string;
  port?: number;
  socket?: string;
  user?: string;
  password?: string;
  database?: string;
  dsn?: string;
  url?: string;
  env?: string[];
  template?: Record<string, unknown>;
}

export interface LeaseRequest {
  /** The template's name (default: the only pool). */
  template?: string;
  holder?: string;
  /** Seconds the lease lives without an extension (0: 30 minutes). */
  ttl?: number;
  /** Seconds to wait for a free database (default 60). */
  wait?: number;
  /** The holder process: the lease is reclaimed when it exits (default: this process). */
  pid?: number;
  /**
   * How many slots the run uses at once: a smaller pool grows to it first, or the
   * lease fails at once (507) when the daemon's --max-memory/--max-disk cannot hold it.
   */
  minSize?: number;
}

export interface LeaseSummary {
  id: string;
  template: string;
  slot: number;
  holder?: string;
  kept?: boolean;
  pid?: number;
  created: string;
  expires: string;
}

/** The daemon's answer to a fork: the new template, whether it was made now, and how long it took. */
export interface ForkAnswer {
  /** The fork: name, hash, parent (the parent's hash), parent_name, ... */
  template: { name: string; hash: string; parent?: string; parent_name?: string } & Record<string, unknown>;
  /** false: a fork with the same key was there already. */
  built: boolean;
  /** How long the fork took in the daemon. */
  seconds: number;
}

export class Client {
  constructor(options?: ClientOptions);
  /** PRISTINE_URL (+ PRISTINE_TOKEN or the root's token file), else the socket of PRISTINE_ROOT or the default root. */
  static fromEnv(): Client;
  readonly socket: string;
  readonly url: string;
  readonly token: string;
  where(): string;
  request<T = any>(method: string, path: string, body?: unknown, options?: { ok?: number[]; timeout?: number }): Promise<T>;
  health(): Promise<Record<string, unknown>>;
  beginTemplate(req: { name: string; key: string; database?: string; ttlSeconds?: number; cache?: string; keyFiles?: number; allowStale?: boolean }): Promise<TemplateAnswer>;
  finishTemplate(hash: string): Promise<TemplateAnswer>;
  abortTemplate(hash: string): Promise<void>;
  waitTemplate(ref: string, waitSeconds: number): Promise<TemplateAnswer>;
  pool(template: string): Promise<PoolStatus>;
  pools(): Promise<PoolStatus[]>;
  /** Resolves once `minReady` slots answered (0: the daemon's default, its first round of starts; `size`: every slot); the others start in the daemon. */
  poolUp(templateHash: string, size: number, minReady?: number): Promise<PoolStatus>;
  poolDown(template: string): Promise<PoolStatus>;
  lease(req?: LeaseRequest): Promise<Lease>;
  release(id: string, options?: { unchanged?: boolean }): Promise<{ released: string; reset: boolean }>;
  keep(id: string): Promise<Lease>;
  extend(id: string, ttlSeconds: number): Promise<Lease>;
  /** A template of the lease's current state (everything committed before the fork); the lease goes on. */
  fork(id: string, name: string, options?: { key?: string }): Promise<ForkAnswer>;
  getLease(id: string): Promise<Lease>;
  leases(): Promise<LeaseSummary[]>;
}

export interface PoolStatus {
  template: string;
  hash: string;
  size: number;
  dbs_per_slot: number;
  backend: string;
  states: Record<string, number>;
  leased: number;
  [k: string]: unknown;
}

/** Builds a template: run migrations against the template server `conn` describes. */
export type BuildFn = (conn: TemplateAnswer) => unknown | Promise<unknown>;

/** The run-once setup of a test run. */
export interface PrepareOptions {
  /** The template's (and pool's) name. */
  template: string;
  /**
   * Files, directories or globs (Go's filepath.Glob syntax) that define the template: its content key, so a
   * change to any of them builds a new template. Required with migrate: without them the template would be
   * keyed by the command's text alone and stay the same after a migration changes (see allowStale).
   */
  files?: string[];
  /**
   * Accept a migrate with no files: the template is rebuilt only when the command or keyExtra changes, so it
   * goes stale, silently, when a file the migration reads changes.
   */
  allowStale?: boolean;
  /** More strings for the key (a tool's version, a setting). */
  keyExtra?: string[];
  /**
   * Builds the template: a shell command (it sees DATABASE_URL, MYSQL_HOST, MYSQL_PORT, MYSQL_TCP_PORT,
   * MYSQL_UNIX_PORT, MYSQL_USER, MYSQL_PWD, MYSQL_DATABASE) or a function of the connection.
   */
  migrate?: string | BuildFn;
  /** The database a lease hands out (default: the daemon's). */
  database?: string;
  /** An OCI repository a fleet shares (default $PRISTINE_CACHE). */
  cache?: string;
  /** Slots of the pool brought up when none is (default 4; the Jest and Vitest setups: 2 per worker). */
  poolSize?: number;
  /** Seconds to wait for another process's build (default 1800). */
  buildWait?: number;
  /** The directory relative files and the migrate command are taken from (default process.cwd()). */
  cwd?: string;
}

export function contentKey(patterns: string | string[], extra?: string[], options?: { cwd?: string }): string;
export function ensureTemplate(client: Client, req: { name: string; key: string; database?: string; cache?: string; wait?: number; keyFiles?: number; allowStale?: boolean }, build?: BuildFn): Promise<TemplateAnswer>;
export function ensurePool(client: Client, name: string, hash: string, size: number): Promise<void>;
export function runCommand(command: string, conn: TemplateAnswer, options?: { cwd?: string }): Promise<string>;
export function prepare(client: Client, options: PrepareOptions): Promise<{ template: string; hash: string; key: string; built: boolean }>;
/** Leases with errors that name the cause and the fix. */
/**
 * Takes the next lease of one template while the current one is in use
 * (and, given connect, a connection to it); releases in the background.
 * One lease more held while it is open; close() waits for the releases in
 * flight and releases the lease taken ahead.
 */
export class Prefetcher<C = unknown> {
  constructor(client: Client, req: { template: string; holder?: string; wait?: number; ttl?: number; minSize?: number; connect?: (lease: Lease) => Promise<C>; ahead?: boolean });
  /** Starts taking a lease ahead now, if none is. */
  warm(): void;
  /** The lease taken ahead and its connection (null without connect), or one taken now; starts the next. */
  take(): Promise<{ lease: Lease; conn: C | null }>;
  /** take() without a connection. */
  lease(): Promise<Lease>;
  /** Returns a lease in the background. */
  release(id: string, options?: { unchanged?: boolean }): void;
  /** Waits for the releases in flight, releases the lease taken ahead; resolves to the errors of failed releases. */
  close(): Promise<string[]>;
}
export function acquire(client: Client, req: { template: string; holder?: string; wait?: number; ttl?: number; minSize?: number }): Promise<Lease>;
/** Releases a lease, or keeps it when failed and keepFailed; resolves to the message to print ('' when none). */
export function finish(client: Client, lease: Lease, options?: { failed?: boolean; keepFailed?: boolean; unchanged?: boolean }): Promise<string>;
export function defaultRoot(): string;
export const CACHE_ENV: 'PRISTINE_CACHE';
export const MAX_WAIT: number;
/** PristineError.code of a template whose build runs code no file keys (refused by the daemon). */
export const UNKEYED_BUILD: 'unkeyed_build';
