// Seeds a Cohort server with the seed document's three ways of tracking a distributed job, for
// the browser tests and for a look by hand:
//   - group "DDP": one run per process (rank 0 job_type main, ranks 1-3 workers; rank 2 crashes)
//   - a shared run: writers rank_0 (primary) .. rank_3 in one run, rank_2 crashes
//   - a plain rank-0-only run whose system metrics cover every GPU of its machine
//   - a run left running (for live-update checks)
// Each scenario is written against a small "driver" (init -> log/system/console -> finish). The
// driver here speaks the HTTP API; when the Python SDK and agent are ready, an SDK driver that
// runs examples/ scripts can take its place without touching the scenarios.
//
//   node tests/ui/seed.mjs URL KEY [project]      (KEY: an API key; prints the created run ids)
import { spawn } from 'node:child_process';
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { api, ROOT, sdkEnvironment } from './harness.mjs';

/** Driver over the JSON API (docs/api.md). */
export class HttpDriver {
  constructor(baseUrl, key, entity, project) {
    this.base = baseUrl.replace(/\/$/, '');
    this.key = key;
    this.entity = entity;
    this.project = project;
  }

  async call(method, path, body) {
    const resp = await fetch(this.base + path, {
      method,
      headers: { Authorization: `Bearer ${this.key}`, 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await resp.text();
    if (!resp.ok) throw new Error(`${method} ${path}: ${resp.status} ${text}`);
    return text ? JSON.parse(text) : null;
  }

  runPath(id) {
    return `/api/v1/runs/${encodeURIComponent(this.entity)}/${encodeURIComponent(this.project)}/${encodeURIComponent(id)}`;
  }

  /**
   * Starts (or joins) a run as one writer. `run`: {id, name, group, job_type, tags, config, host};
   * `writer`: {label, primary, update_finish_state, host, pid, gpu_ids}.
   */
  async init(run, writer) {
    const created = await this.call('POST', `/api/v1/runs/${encodeURIComponent(this.entity)}/${encodeURIComponent(this.project)}`, {
      ...run, resume: 'allow',
    });
    const id = created.id;
    await this.call('POST', this.runPath(id) + '/writers', {
      label: writer.label, primary: writer.primary ?? true, update_finish_state: writer.update_finish_state ?? true,
      host: writer.host ?? run.host ?? 'node0', pid: writer.pid ?? 1000, gpu_ids: writer.gpu_ids ?? [],
    });
    return new HttpWriter(this, id, writer.label);
  }
}

class HttpWriter {
  constructor(driver, runId, label) {
    this.d = driver;
    this.runId = runId;
    this.label = label;
    this.seq = 0;
    this.batch = { history: [], system: [], console: [] };
    this.rows = 0;
  }
  log(step, time, values) { this.batch.history.push({ step, time, values }); return this.maybeFlush(); }
  system(time, values) { this.batch.system.push({ time, values }); return this.maybeFlush(); }
  console(time, stream, text) { this.batch.console.push({ time, stream, text }); return this.maybeFlush(); }
  async maybeFlush() { if (++this.rows >= 2000) await this.flush(); }
  async flush() {
    const b = this.batch;
    if (!b.history.length && !b.system.length && !b.console.length) return;
    this.batch = { history: [], system: [], console: [] };
    this.rows = 0;
    await this.d.call('POST', `${this.d.runPath(this.runId)}/writers/${encodeURIComponent(this.label)}/batches`, { seq: ++this.seq, ...b });
  }
  async summary(values) { await this.d.call('PATCH', this.d.runPath(this.runId), { summary: values }); }
  async finish(exitCode, state) {
    await this.flush();
    const body = { exit_code: exitCode };
    if (state) body.state = state;
    return this.d.call('POST', `${this.d.runPath(this.runId)}/writers/${encodeURIComponent(this.label)}/finish`, body);
  }
}

// ---- deterministic data ---------------------------------------------------------------------

function rng(seed) {
  let s = seed >>> 0 || 1;
  return () => { s ^= s << 13; s ^= s >>> 17; s ^= s << 5; return ((s >>> 0) / 4294967296); };
}

/** Trains `steps` steps as rank `rank`: loss/acc/lr history, system rows, console lines. */
async function train(w, { rank, steps, crashAt = null, gpus = [0], t0 = Date.now(), everySys = 10 }) {
  const r = rng(1000 + rank * 7919);
  let last = {};
  for (let step = 0; step < steps; step++) {
    const t = t0 + step * 1000;
    if (crashAt !== null && step === crashAt) {
      await w.console(t, 'stderr', `[rank ${rank}] RuntimeError: NCCL communicator was aborted on rank ${rank}`);
      await w.console(t + 1, 'stderr', `Traceback (most recent call last):`);
      await w.console(t + 2, 'stderr', `  File "train.py", line 88, in <module>`);
      return last;
    }
    const loss = 2.3 * Math.exp(-step / (60 + rank * 10)) + 0.05 + (r() - 0.5) * 0.08;
    const acc = Math.min(0.99, 0.1 + 0.85 * (1 - Math.exp(-step / 70)) + (r() - 0.5) * 0.02);
    const lr = 0.1 * (step < 20 ? (step + 1) / 20 : Math.cos((Math.PI / 2) * (step / steps)));
    last = { loss, 'train/acc': acc, 'train/lr': lr, 'val/loss': loss * 1.1 };
    const values = { loss, 'train/acc': acc, 'train/lr': lr };
    if (step % 25 === 24) values['val/loss'] = loss * 1.1;
    await w.log(step, t, values);
    if (step % everySys === 0) {
      const sys = { cpu: 30 + 40 * r(), memory: 40 + step / steps * 20, 'network.sent_mb': step * 1.5 + r() * 3, 'network.recv_mb': step * 1.2 + r() * 3 };
      for (const g of gpus) {
        sys[`gpu.${g}.temp`] = 55 + rank * 3 + g + 15 * (1 - Math.exp(-step / 80)) + r() * 2;
        sys[`gpu.${g}.gpu`] = 85 + r() * 14;
        sys[`gpu.${g}.memory_allocated`] = 60 + rank * 2 + r() * 5;
        sys[`gpu.${g}.power_watts`] = 220 + 60 * r() + g * 5;
      }
      await w.system(t, sys);
    }
    if (step % 20 === 0) await w.console(t, 'stdout', `[rank ${rank}] epoch ${Math.floor(step / 100)} step ${step} loss=${loss.toFixed(4)}`);
    if (step % 97 === 50) await w.console(t, 'stderr', `[rank ${rank}] warning: gradient norm ${(5 + r() * 5).toFixed(2)} clipped`);
  }
  return last;
}

// ---- scenarios --------------------------------------------------------------------------------

export async function seed(driver, { steps = 300 } = {}) {
  const out = { project: driver.project, ddp: {}, shared: null, rank0: null, live: null };
  const config = { lr: 0.1, batch_size: 64, optimizer: { name: 'sgd', momentum: 0.9 }, world_size: 4 };

  // 2. One run per process, grouped.
  for (let rank = 0; rank < 4; rank++) {
    const w = await driver.init(
      { name: `ddp-rank${rank}`, group: 'DDP', job_type: rank === 0 ? 'main' : 'worker', tags: ['ddp'], host: `node${rank >> 1}`, config: { ...config, rank } },
      { label: `rank_${rank}`, gpu_ids: [rank % 2] },
    );
    const crash = rank === 2 ? 150 : null;
    const last = await train(w, { rank, steps, crashAt: crash, gpus: [rank % 2] });
    await w.summary(last);
    if (crash !== null) await w.finish(null, 'crashed'); else await w.finish(0);
    out.ddp[`rank${rank}`] = w.runId;
  }

  // 3. All processes in one shared run; rank_2 crashes, the primary decides the run's state.
  const primary = await driver.init(
    { name: 'shared-ddp', job_type: 'train', tags: ['shared'], host: 'node0', config },
    { label: 'rank_0', primary: true, update_finish_state: true, host: 'node0', gpu_ids: [0, 1] },
  );
  const workers = [primary];
  for (let rank = 1; rank < 4; rank++) {
    workers.push(await driver.init({ id: primary.runId }, { label: `rank_${rank}`, primary: false, update_finish_state: false, host: `node${rank >> 1}`, pid: 1000 + rank, gpu_ids: [rank % 2] }));
  }
  let lastShared = {};
  for (let rank = 0; rank < 4; rank++) {
    const last = await train(workers[rank], { rank, steps, crashAt: rank === 2 ? 120 : null, gpus: rank === 0 ? [0, 1] : [rank % 2] });
    if (rank === 0) lastShared = last;
  }
  for (let rank = 1; rank < 4; rank++) {
    if (rank === 2) await workers[rank].finish(null, 'crashed'); else await workers[rank].finish(0);
  }
  await primary.summary(lastShared);
  await primary.finish(0);
  out.shared = primary.runId;

  // 1. Only rank 0 tracks; its system metrics cover all four GPUs of the machine.
  const r0 = await driver.init({ name: 'rank0-only', job_type: 'train', host: 'node0', config }, { label: 'rank_0', gpu_ids: [0, 1, 2, 3] });
  const last0 = await train(r0, { rank: 0, steps, gpus: [0, 1, 2, 3] });
  await r0.summary(last0);
  await r0.finish(0);
  out.rank0 = r0.runId;

  // A run still running (its writer has not finished): the live-update check changes it.
  const live = await driver.init({ name: 'live-run', job_type: 'train', host: 'node1', config }, { label: 'rank_0' });
  await train(live, { rank: 0, steps: 50, t0: Date.now() - 60_000 });
  await live.flush();
  out.live = live.runId;
  out.liveWriter = live;
  return out;
}

// ---- the same scenarios, written by the real Python SDK ------------------------------------------

/**
 * Runs tests/ui/seed_sdk.py (the Python SDK, `import cohort`) as one process per rank against
 * `server` (from harness.mjs): the SDK's node agent (`cohort agent`) delivers the rows, captures
 * every print as console lines, and samples system metrics, GPUs included through the fake NVML
 * library of tests/fake_nvml (4 devices). Same runs and names as `seed()`; `live` is a process
 * that waits for `more(n)` / `crash()`. Resolves once every run has reached its final state.
 */
export async function seedWithSdk(server, entity, project, { steps = 300, stragglersProject = null } = {}) {
  const sdk = new SdkProcesses(server, project, steps);
  const out = { project, ddp: {}, shared: null, rank0: null, live: null };
  try {
    // One run per process (rank 2 crashes), the shared run (rank_2 crashes), rank 0 only, live.
    const sharedId = `shared${Date.now().toString(36)}`;
    const waitFile = path.join(server.dir, 'shared-primary-wait');
    writeFileSync(waitFile, '');
    const ddp = [0, 1, 2, 3].map((r) => sdk.start(['ddp', String(r)]));
    const primary = sdk.start(['shared', '0', sharedId], { SEED_WAIT_FILE: waitFile });
    await primary.ready;
    const workers = [1, 2, 3].map((r) => sdk.start(['shared', String(r), sharedId]));
    const rank0 = sdk.start(['rank0']);
    const live = sdk.start(['live']);
    // In a project of its own: a shared run where rank 3 is 4x slower per step.
    let slow = [];
    const slowWait = path.join(server.dir, 'slow-primary-wait');
    if (stragglersProject) {
      writeFileSync(slowWait, '');
      const slowId = `slow${Date.now().toString(36)}`;
      const env = { COHORT_PROJECT: stragglersProject, SEED_WAIT_FILE: slowWait };
      slow = [sdk.start(['slow', '0', slowId], env)];
      await slow[0].ready;
      for (const r of [1, 2, 3]) slow.push(sdk.start(['slow', String(r), slowId], env));
    }
    for (const [r, p] of ddp.entries()) out.ddp[`rank${r}`] = await p.ready;
    for (const p of [...ddp, ...workers]) await p.exited;
    rmSync(waitFile, { force: true }); // the primary finishes last: the run's state is its own
    await primary.exited;
    out.shared = await primary.ready;
    out.rank0 = await rank0.ready;
    await rank0.exited;
    out.live = await live.ready;
    out.liveWriter = live;
    if (slow.length) {
      for (const p of slow.slice(1)) await p.exited;
      rmSync(slowWait, { force: true });
      await slow[0].exited;
      out.stragglers = await slow[0].ready;
    }
    // The crashed ranks died without finish(): wait until the agent has reported them.
    const crashed = async (id, label) => {
      const deadline = Date.now() + 60000;
      while (Date.now() < deadline) {
        const r = await api(server, 'GET', `/api/v1/runs/${entity}/${project}/${id}`);
        if (r.writers?.find((w) => w.label === label)?.state === 'crashed') return;
        await new Promise((res) => setTimeout(res, 200));
      }
      throw new Error(`seed: writer ${label} of run ${id} never became crashed`);
    };
    await crashed(out.ddp.rank2, 'rank_2');
    await crashed(out.shared, 'rank_2');
    return out;
  } catch (e) {
    sdk.killAll();
    throw new Error(`${e.message}\n${sdk.output()}`);
  }
}

/**
 * The histograms scenario (seed_sdk.py `hist`): one shared run "hist-shared" whose writers
 * rank_0 and rank_1 log histograms with `cohort.Histogram` through `run.log`. Resolves to the run
 * id once both processes finished and the server holds every step (the agent delivers after the
 * processes exit).
 */
export async function seedHistogramsWithSdk(server, entity, project, { steps = 10000 } = {}) {
  const sdk = new SdkProcesses(server, project, 0);
  try {
    const id = `hist${Date.now().toString(36)}`;
    const env = { SEED_HIST_STEPS: String(steps) };
    const primary = sdk.start(['hist', '0', id], env);
    await primary.ready;
    const worker = sdk.start(['hist', '1', id], env);
    await worker.ready;
    for (const p of [primary, worker]) {
      const rc = await p.exited;
      if (rc !== 0) throw new Error(`seed_sdk.py hist exited with ${rc}`);
    }
    const want = { 'gradients/fc1.weight|rank_0': steps, 'gradients/fc1.weight|rank_1': 200, 'gradients/nan|rank_0': 30,
      'parameters/fc1.weight|rank_0': 50, 'parameters/const|rank_0': 20, 'parameters/single|rank_0': 1 };
    const deadline = Date.now() + 60000;
    for (;;) {
      const { keys } = await api(server, 'GET', `/api/v1/runs/${entity}/${project}/${id}/keys`);
      const have = Object.fromEntries(keys.filter((k) => k.type === 'histogram').map((k) => [`${k.key}|${k.writer}`, k.count]));
      if (Object.entries(want).every(([k, n]) => have[k] === n)) return id;
      if (Date.now() > deadline) throw new Error(`seed: histograms never all arrived: ${JSON.stringify(have)}`);
      await new Promise((res) => setTimeout(res, 200));
    }
  } catch (e) {
    sdk.killAll();
    throw new Error(`${e.message}\n${sdk.output()}`);
  }
}

class SdkProcesses {
  constructor(server, project, steps) {
    this.procs = [];
    this.log = [];
    const { python, build, env } = sdkEnvironment(server, project, { SEED_STEPS: String(steps) });
    const nvml = process.env.COHORT_FAKE_NVML || path.join(build, 'tests/fake_nvml/libnvidia-ml.so.1');
    if (!existsSync(nvml)) throw new Error(`seed: ${nvml} is missing (build the fake_nvml target)`);
    Object.assign(env, { COHORT_NVML_LIBRARY: nvml, FAKE_NVML_DEVICE_COUNT: '4', FAKE_NVML_WOBBLE: '1' });
    this.env = env;
    this.python = python;
    server.onStop?.(() => this.killAll());
  }

  /** Starts `seed_sdk.py args`; `.ready` resolves to the run id, `.exited` to the exit status. */
  start(args, extraEnv = {}) {
    const proc = spawn(this.python, [path.join(ROOT, 'tests/ui/seed_sdk.py'), ...args], {
      env: { ...this.env, ...extraEnv }, stdio: ['pipe', 'pipe', 'pipe'],
    });
    const name = args.join(' ');
    this.procs.push(proc);
    let onReady, onFail;
    const waiters = [];
    const p = {
      proc,
      ready: new Promise((res, rej) => { onReady = res; onFail = rej; }),
      exited: new Promise((res) => proc.on('exit', (code, sig) => res(sig ?? code))),
      send: (line) => proc.stdin.write(line + '\n'),
      /** Logs `n` more steps (loss 0.5); resolves when the SDK has taken them. */
      more: (n) => new Promise((res) => { waiters.push(res); p.send(`more ${n}`); }),
      crash: () => p.send('crash'),
      finish: () => p.send('finish'),
    };
    p.ready.catch(() => {});
    readline.createInterface({ input: proc.stdout }).on('line', (l) => {
      const m = /^ready (\S+)$/.exec(l);
      if (m) onReady(m[1]);
      else if (l.startsWith('logged ')) waiters.shift()?.();
      else this.log.push(`[${name}] ${l}`);
    });
    readline.createInterface({ input: proc.stderr }).on('line', (l) => this.log.push(`[${name}:err] ${l}`));
    proc.on('exit', (code, sig) => onFail(new Error(`seed_sdk.py ${name} exited (${sig ?? code}) before it was ready`)));
    return p;
  }

  output() { return this.log.slice(-60).join('\n'); }

  killAll() {
    for (const p of this.procs) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
  }
}

// ---- command line -----------------------------------------------------------------------------

if (import.meta.url === `file://${process.argv[1]}`) {
  const [url, key, project = 'ddp-demo'] = process.argv.slice(2);
  if (!url || !key) {
    console.error('usage: node tests/ui/seed.mjs URL API_KEY [project]');
    process.exit(2);
  }
  const viewer = await (await fetch(`${url.replace(/\/$/, '')}/api/v1/viewer`, { headers: { Authorization: `Bearer ${key}` } })).json();
  const res = await seed(new HttpDriver(url, key, viewer.entity, project));
  delete res.liveWriter;
  console.log(JSON.stringify(res, null, 2));
}
