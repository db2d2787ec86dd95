// A real pristine daemon for the tests: `pristine serve` on a fresh root
// under /dev/shm, over its unix socket and loopback TCP; stopped, its
// servers reaped and its root removed by stop().
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Client } from '../index.mjs';

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

/** $PRISTINE_BIN, else bin/pristine of this checkout (built by scripts/build.sh when missing). */
export function pristineBin() {
  if (process.env.PRISTINE_BIN) return process.env.PRISTINE_BIN;
  const bin = path.join(REPO, 'bin', 'pristine');
  if (!fs.existsSync(bin)) execFileSync('bash', [path.join(REPO, 'scripts', 'build.sh')], { stdio: 'inherit' });
  return bin;
}

/** Why the tests cannot run here, or '' when they can. */
export function skipReason() {
  for (const p of ['/usr/sbin/mariadbd', '/usr/bin/mariadbd']) if (fs.existsSync(p)) return '';
  return 'mariadbd is not installed: run scripts/install-deps.sh';
}

export async function startDaemon(args = []) {
  const base = fs.mkdtempSync(path.join(fs.existsSync('/dev/shm') ? '/dev/shm' : os.tmpdir(), 'pristine-node-test-'));
  // A root pristine runs its servers as the account pristine, which must
  // pass through this directory to the root inside.
  fs.chmodSync(base, 0o711);
  const root = path.join(base, 'root');
  const proc = spawn(pristineBin(), ['serve', '--root', root, '--listen', '127.0.0.1:0', ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  const log = [];
  const addr = await new Promise((resolve, reject) => {
    const rl = readline.createInterface({ input: proc.stderr });
    rl.on('line', (line) => {
      log.push(line);
      const m = /^pristine: serving http:\/\/([^/]+)\//.exec(line);
      if (m) resolve(m[1]);
    });
    proc.on('exit', (code) => reject(new Error(`pristine serve exited (${code}) before serving: ${log.join('\n')}`)));
  });
  const token = fs.readFileSync(path.join(root, 'token'), 'utf8').trim();
  const socket = path.join(root, 'pristine.sock');
  return {
    base, root, addr, token, socket, proc, log,
    client: new Client({ socket }),
    tcp: new Client({ url: 'http://' + addr, token }),
    async stop() {
      try {
        await this.client.request('POST', '/v1/shutdown', null, { timeout: 120 });
      } catch {
        // already gone
      }
      const exited = new Promise((r) => (proc.exitCode !== null ? r() : proc.once('exit', r)));
      const t = setTimeout(() => proc.kill('SIGKILL'), 60000);
      await exited;
      clearTimeout(t);
      fs.rmSync(base, { recursive: true, force: true });
    },
  };
}
