// Shared by the browser tests and the UI bench: starts a real `cohort server` on port 0 with a
// temporary HOME and data directory, and Debian's Chromium through playwright-core (from
// ui/node_modules; never a downloaded browser).
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
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
/** `dataDir`, `homeDir`: keep the data and the HOME there (not removed at stop), e.g. to reopen
 * the same store with another binary. */
/** `uiDir`: the web UI to serve (default: $COHORT_UI_DIR, else this tree's ui/dist; another
 * build's, e.g. to see a browser test fail on the UI before a fix). */
export async function startServer({ extraArgs = [], bin = null, dataDir = null, homeDir = null, uiDir: ui = null } = {}) {
  const dir = mkdtempSync(path.join(tmpdir(), 'cohort-ui-'));
  const home = homeDir ?? path.join(dir, 'home');
  const data = dataDir ?? path.join(dir, 'data');
  const uiDir = ui ?? process.env.COHORT_UI_DIR ?? path.join(ROOT, 'ui/dist');
  if (!existsSync(path.join(uiDir, 'index.html'))) throw new Error('ui/dist is missing: run scripts/build-ui.sh');
  const proc = spawn(bin ?? findBinary(), ['server', '--port', '0', '--data-dir', data, '--ui-dir', uiDir, ...extraArgs], {
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
  // The one-time login link: on a terminal in the line itself, otherwise in a 0600 file it names.
  const inFile = /login link in (\S+)/.exec(got[1]);
  const link = inFile ? readFileSync(inFile[1], 'utf8').trim() : got[1];
  const m = /(https?:\/\/\S+\?token=(\S+))/.exec(link);
  if (!m) throw new Error(`unexpected second line: ${got[1]}`);
  const config = JSON.parse(readFileSync(path.join(home, '.config/cohort/config.json'), 'utf8'));
  const onStop = [];
  return {
    url, loginUrl: m[1], token: m[2], key: config.api_key, proc, dir,
    stderr: () => stderr,
    /** The agents' logs under this server's temp dir (HOME and runtime dir), path -> text. */
    agentLogs() {
      const out = {};
      for (const f of readdirSync(dir, { recursive: true })) {
        if (path.basename(String(f)) === 'agent.log') {
          try { out[String(f)] = readFileSync(path.join(dir, String(f)), 'utf8'); } catch { /* gone */ }
        }
      }
      return out;
    },
    /** Prints the server's stderr tail and the agents' log tails (for a failed set-up). */
    dumpLogs(why) {
      console.error(`== ${why}: server stderr (tail)\n${stderr.slice(-4000)}`);
      for (const [f, text] of Object.entries(this.agentLogs())) {
        console.error(`== ${why}: ${f} (tail)\n${text.slice(-6000)}`);
      }
    },
    /** Runs `fn` when the server stops (the SDK seeder kills its processes). */
    onStop(fn) { onStop.push(fn); },
    async stop() {
      for (const fn of onStop) fn();
      await stopAgent(path.join(dir, 'run'));
      if (proc.exitCode === null) {
        proc.kill('SIGTERM');
        await new Promise((r) => { const t = setTimeout(() => { proc.kill('SIGKILL'); r(); }, 5000); proc.on('exit', () => { clearTimeout(t); r(); }); });
      }
      // The agents' logs outlive the temp dir (artifacts/ui/logs/), for a failure seen later.
      const logs = path.join(ROOT, 'artifacts/ui/logs', path.basename(dir));
      for (const f of Object.keys(this.agentLogs())) {
        mkdirSync(logs, { recursive: true });
        copyFileSync(path.join(dir, f), path.join(logs, f.replaceAll('/', '_')));
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Stops the node agent the SDK started with XDG_RUNTIME_DIR=`runtimeDir` (if any). */
async function stopAgent(runtimeDir) {
  let pid = 0;
  try { pid = Number(readFileSync(path.join(runtimeDir, 'cohort/agent.lock'), 'utf8').trim()) || 0; } catch { return; }
  const alive = () => { try { process.kill(pid, 0); return true; } catch { return false; } };
  if (!pid || !alive()) return;
  try { process.kill(pid, 'SIGTERM'); } catch { return; }
  for (let i = 0; i < 100 && alive(); i++) await new Promise((r) => setTimeout(r, 50));
  if (alive()) try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ }
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

/** Chromium with one page (1400x900, light) at `server`'s UI, signed in with its API key; each
 * uncaught page error is pushed to `errors` (tests assert it stays empty). */
export async function openSignedInPage(server, errors) {
  const browser = await launchBrowser();
  const ctx = await browser.newContext({ viewport: { width: 1400, height: 900 }, colorScheme: 'light' });
  const page = await ctx.newPage();
  page.on('pageerror', (e) => { errors.push(e.message); console.error('page error:', e.message); });
  await page.goto(server.url + '/');
  await page.evaluate((k) => localStorage.setItem('cohort.key', k), server.key);
  return { browser, page };
}

/** Opens a one-time login link (`server.loginUrl` by default) in `page` and confirms it with the
 * "Sign in" button (a link never signs in by itself); resolves once the click was made. */
export async function signInWithLink(page, server, link = server.loginUrl) {
  await page.goto(link);
  const card = page.getByTestId('login-link');
  await card.getByRole('button', { name: 'Sign in', exact: true }).click();
  await card.waitFor({ state: 'detached' });
}

/** Chromium logged in to `server` through its one-time login link (confirmed with "Sign in"): a
 * page (1400x900, light, `context` overriding) whose uncaught errors are pushed onto `pageErrors`
 * (and printed); resolves once the landing page lists `project`. */
export async function openLoggedIn(server, project, pageErrors, context = {}) {
  const browser = await launchBrowser();
  const ctx = await browser.newContext({ viewport: { width: 1400, height: 900 }, colorScheme: 'light', ...context });
  const page = await ctx.newPage();
  page.on('pageerror', (e) => { pageErrors.push(e.message); console.error('page error:', e.message); });
  await signInWithLink(page, server);
  await page.getByRole('link', { name: project }).waitFor();
  return { browser, page };
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

/**
 * What a test needs to run the real Python SDK against `server`: the interpreter (the project's
 * .venv), the build directory, and an environment in which the checkout's package, the build's
 * extension and `cohort` binary are used, HOME and the runtime directory are inside the server's
 * temporary directory, no COHORT_* or launcher variable of the caller leaks in, and `extra` is
 * added.
 */
export function sdkEnvironment(server, project, extra = {}) {
  const python = process.env.COHORT_PYTHON || (existsSync(path.join(ROOT, '.venv/bin/python')) ? path.join(ROOT, '.venv/bin/python') : 'python3');
  const build = path.resolve(process.env.COHORT_BUILD_DIR || path.join(path.dirname(findBinary()), '../..'));
  const env = { ...process.env };
  for (const k of ['COHORT_MODE', 'COHORT_RUN_ID', 'COHORT_ENTITY', 'COHORT_DIR', 'COHORT_AGENT', 'COHORT_AGENT_SOCKET', 'RANK',
    'LOCAL_RANK', 'WORLD_SIZE', 'TORCHELASTIC_RUN_ID', 'MASTER_ADDR', 'MASTER_PORT']) delete env[k];
  Object.assign(env, {
    HOME: path.join(server.dir, 'home'), XDG_RUNTIME_DIR: path.join(server.dir, 'run'), XDG_CONFIG_HOME: '', XDG_DATA_HOME: '',
    COHORT_BASE_URL: server.url, COHORT_API_KEY: server.key, COHORT_PROJECT: project,
    COHORT_BUILD_DIR: build, COHORT_BIN: findBinary(), COHORT_AGENT_IDLE_S: '10',
    PYTHONPATH: path.join(ROOT, 'python'), PYTHONUNBUFFERED: '1',
  }, extra);
  mkdirSync(env.XDG_RUNTIME_DIR, { recursive: true, mode: 0o700 });
  return { python, build, env };
}
