// Shared by the browser tests and the UI bench: starts a real `cohort server` on port 0 with a
// temporary HOME and data directory, and Debian's Chromium through playwright-core (from
// ui/node_modules; never a downloaded browser).
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const require = createRequire(path.join(ROOT, 'ui/package.json'));

export function findBinary() {
  const candidates = [
    process.env.COHORT_BIN,
    process.env.BUILD_DIR && path.join(process.env.BUILD_DIR, 'src/cli/cohort'),
    path.join(ROOT, 'build/src/cli/cohort'),
    path.join(ROOT, 'build-ui/src/cli/cohort'),
  ].filter(Boolean);
  for (const c of candidates) if (existsSync(c)) return c;
  throw new Error(`no cohort binary (looked at ${candidates.join(', ')}); build it first (scripts/build.sh) or set COHORT_BIN`);
}

/** Starts `cohort server --port 0`; resolves once it printed its URL and login link. */
export async function startServer({ extraArgs = [] } = {}) {
  const dir = mkdtempSync(path.join(tmpdir(), 'cohort-ui-'));
  const home = path.join(dir, 'home');
  const data = path.join(dir, 'data');
  const uiDir = path.join(ROOT, 'ui/dist');
  if (!existsSync(path.join(uiDir, 'index.html'))) throw new Error('ui/dist is missing: run scripts/build-ui.sh');
  const proc = spawn(findBinary(), ['server', '--port', '0', '--data-dir', data, '--ui-dir', uiDir, ...extraArgs], {
    env: { ...process.env, HOME: home },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  proc.stderr.on('data', (d) => { stderr += d; if (stderr.length > 20000) stderr = stderr.slice(-10000); });
  const lines = readline.createInterface({ input: proc.stdout });
  const got = [];
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start in 20 s: ${stderr}`)), 20000);
    proc.on('exit', (code) => { clearTimeout(timer); reject(new Error(`server exited (${code}): ${stderr}`)); });
    lines.on('line', (l) => {
      got.push(l);
      if (got.length === 2) { clearTimeout(timer); resolve(); }
    });
  });
  const url = got[0].trim();
  const m = /(https?:\/\/\S+\?token=(\S+))/.exec(got[1]);
  if (!m) throw new Error(`unexpected second line: ${got[1]}`);
  const config = JSON.parse(readFileSync(path.join(home, '.config/cohort/config.json'), 'utf8'));
  return {
    url, loginUrl: m[1], token: m[2], key: config.api_key, proc, dir,
    stderr: () => stderr,
    async stop() {
      if (proc.exitCode === null) {
        proc.kill('SIGTERM');
        await new Promise((r) => { const t = setTimeout(() => { proc.kill('SIGKILL'); r(); }, 5000); proc.on('exit', () => { clearTimeout(t); r(); }); });
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export async function launchBrowser() {
  const { chromium } = require('playwright-core');
  const exe = process.env.CHROMIUM || '/usr/bin/chromium';
  if (!existsSync(exe)) throw new Error(`no Chromium at ${exe} (apt-get install chromium)`);
  // playwright-core gives every launch a fresh temporary --user-data-dir (and removes it).
  return chromium.launch({
    executablePath: exe,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
      '--disable-sync', '--no-first-run', '--disable-quic'],
  });
}

export async function api(server, method, p, body) {
  const resp = await fetch(server.url + p, {
    method, headers: { Authorization: `Bearer ${server.key}`, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await resp.text();
  if (!resp.ok) throw new Error(`${method} ${p}: ${resp.status} ${text}`);
  return JSON.parse(text);
}
