// Web UI benchmark, measured in Debian's Chromium (playwright-core) against a real server:
//   1. a run page with 20 charts of 100,000 points each: time from navigation until all 20
//      charts are drawn (min/max bands from bucketed queries), and a zoom's re-query + redraw;
//   2. a workspace of 10,000 runs: filter (name search, state, job type) and sort (server
//      column, summary metric) times, from the input event until the table shows the result;
//   3. a log of 1,000,000 console lines: the console index, the first screen of the Logs tab,
//      a jump to the middle, and a label filter;
//   4. a workspace charting 100 visible runs (5 metrics x 1,000 steps each): navigation until
//      every chart shows its 100 lines;
//   5. a group page of 8 runs (10 metrics x 5,000 steps each): navigation until every chart is
//      drawn with its 8 lines;
//   6. parameter importance over a workspace of 10,000 runs x 20 config fields (14 numbers,
//      3 categories, 3 booleans): the forest + permutation importance in the page's worker, and
//      from picking the metric until the table shows it;
//   7. (--parts compare, not in the default set) a workspace of 10,000 runs with 20 config and 10
//      summary fields: the runs listing's size and time, parallel coordinates and scatter drawn, a
//      brush, a sort and a filter on a config column (bench/ui_bench_compare.mjs).
// Prints medians of N repetitions as JSON and a table.
//
//   node bench/ui_bench.mjs [--reps 5] [--runs 10000] [--points 100000] [--charts 20] [--lines 1000000]
//                           [--parts charts,runs,logs,visible,group,importance,compare] [--baseline-bin OLD_COHORT_BINARY]
//                           [--bin COHORT_BINARY] [--ui-dir UI_DIST]
// --bin / --ui-dir: measure another build (e.g. main's binary and ui/dist).
// --baseline-ui DIR [--rounds 2]: also serve the same data with the UI in DIR (e.g. main's
// ui/dist) from a second server on the same data directory, and measure every figure for both,
// interleaved round by round (current, baseline, baseline, current, ...): a before/after
// comparison at the same moment and load ("baseline" in the JSON).
// --baseline-bin: also write a 1M-line log with that (older) binary, time its console index on a
// fresh server, then reopen the same data with this build's binary and time it the same way
// (a before/after comparison in one run: results baseline_index_* and current_index_*).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { api, launchBrowser, startServer } from '../tests/ui/harness.mjs';
import { measureCompare, seedCompare } from './ui_bench_compare.mjs';

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
  if (a.startsWith('--')) acc.push([a.slice(2), all[i + 1]]);
  return acc;
}, []));
const REPS = Number(args.reps ?? 5);
const RUNS = Number(args.runs ?? 10000);
const POINTS = Number(args.points ?? 100000);
const CHARTS = Number(args.charts ?? 20);
const LINES = Number(args.lines ?? 1000000);
const PARTS = new Set((args.parts ?? 'charts,runs,logs,visible,group,importance').split(','));
const VISIBLE_RUNS = 100, VISIBLE_KEYS = 5, VISIBLE_STEPS = 1000;
const GROUP_RUNS = 8, GROUP_KEYS = 10, GROUP_STEPS = 5000;

const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2; };

async function pool(n, items, fn) {
  let i = 0;
  await Promise.all(Array.from({ length: n }, async () => { while (i < items.length) { const k = i++; await fn(items[k], k); } }));
}

async function seedCharts(server, entity) {
  const run = await api(server, 'POST', `/api/v1/runs/${entity}/bench`, { name: 'charts-20x100k', job_type: 'train' });
  const base = `/api/v1/runs/${entity}/bench/${run.id}`;
  await api(server, 'POST', `${base}/writers`, { label: 'rank_0', primary: true, update_finish_state: true });
  const t0 = Date.now();
  const ROWS = 5000;
  let seq = 0;
  for (let s0 = 0; s0 < POINTS; s0 += ROWS) {
    const history = [];
    for (let s = s0; s < Math.min(POINTS, s0 + ROWS); s++) {
      const values = {};
      for (let k = 0; k < CHARTS; k++) {
        values[`m/metric_${String(k).padStart(2, '0')}`] = Math.exp(-s / (20000 + k * 1000)) + 0.1 * Math.sin(s / (50 + k)) + 0.05 * ((s * 7919 + k * 104729) % 1000) / 1000;
      }
      history.push({ step: s, time: t0 + s * 100, values });
    }
    await api(server, 'POST', `${base}/writers/rank_0/batches`, { seq: ++seq, history });
  }
  await api(server, 'POST', `${base}/writers/rank_0/finish`, { exit_code: 0 });
  return run.id;
}

/** `n` runs of `keys` metrics x `steps` steps in project `project` (group `group` when given). */
async function seedMetricRuns(server, entity, project, n, keys, steps, group = '') {
  const t0 = Date.now() - 3_600_000;
  const ids = [];
  await pool(8, Array.from({ length: n }, (_, i) => i), async (i) => {
    const run = await api(server, 'POST', `/api/v1/runs/${entity}/${project}`, {
      name: `${project}-${String(i).padStart(3, '0')}`, group, job_type: 'train', config: { lr: [0.1, 0.03, 0.01, 0.003][i % 4], seed: i },
    });
    const base = `/api/v1/runs/${entity}/${project}/${run.id}`;
    await api(server, 'POST', `${base}/writers`, { label: 'rank_0' });
    const history = [];
    for (let s = 0; s < steps; s++) {
      const values = {};
      for (let k = 0; k < keys; k++) values[`m/metric_${k}`] = Math.exp(-s / (steps / 4 + 50 * i)) + 0.05 * Math.sin(s / (20 + k) + i);
      history.push({ step: s, time: t0 + s * 100, values });
    }
    await api(server, 'POST', `${base}/writers/rank_0/batches`, { seq: 1, history });
    await api(server, 'POST', `${base}/writers/rank_0/finish`, { exit_code: 0 });
    ids[i] = run.id;
  });
  return ids;
}

/** ms from navigating to `url` until `n` chart panels show their points (after a warm-up),
 * scrolling `scrollTo` (a selector) into view as soon as it exists. Medians of REPS. */
async function chartsDrawn(page, url, n, scrollTo = null) {
  const xs = [];
  for (let i = 0; i < REPS + 1; i++) {
    await page.goto('about:blank');
    await page.goto(url);
    if (scrollTo) {
      await page.waitForSelector(scrollTo, { timeout: 60000 });
      await page.evaluate((sel) => document.querySelector(sel).scrollIntoView(), scrollTo);
    }
    await page.waitForFunction((n) => document.querySelectorAll('section.panel .chart canvas').length >= n
      && [...document.querySelectorAll('section.panel .panel-meta')].filter((e) => e.textContent.includes('points')).length >= n,
    n, { polling: 'raf', timeout: 60000 });
    const ms = await page.evaluate(() => performance.now());
    if (i > 0) xs.push(ms);
  }
  return median(xs);
}

async function seedRuns(server, entity) {
  const states = ['finished', 'finished', 'finished', 'crashed', 'failed', 'running'];
  await pool(12, Array.from({ length: RUNS }, (_, i) => i), async (i) => {
    const r = await api(server, 'POST', `/api/v1/runs/${entity}/wide`, {
      name: `run-${i}`, group: `g${i % 200}`, job_type: i % 4 === 0 ? 'main' : 'worker', tags: i % 3 ? ['a'] : ['b'],
      host: `node${i % 16}`, config: { lr: (i % 10) / 100, seed: i },
    });
    await api(server, 'PATCH', `/api/v1/runs/${entity}/wide/${r.id}`, { summary: { loss: ((i * 7919) % 10007) / 10007, acc: (i % 100) / 100 } });
    const st = states[i % states.length];
    if (st !== 'running') {
      const w = `/api/v1/runs/${entity}/wide/${r.id}/writers`;
      await api(server, 'POST', w, { label: 'rank_0' });
      await api(server, 'POST', `${w}/rank_0/finish`, st === 'finished' ? { exit_code: 0 } : { exit_code: 1, state: st });
    }
  });
}

/** RUNS runs x 20 config fields in project imp10k: loss = 2 (f00 - 0.5)^2 + 0.3 f01 + 0.2 [c17 = 'b']
 * + noise (f00 a U shape), acc = f05 + noise. */
async function seedImportance(server, entity) {
  let a = 2463534242;
  const rand = () => { a ^= a << 13; a >>>= 0; a ^= a >>> 17; a ^= a << 5; a >>>= 0; return a / 4294967296; };
  const rows = Array.from({ length: RUNS }, () => {
    const config = {};
    for (let k = 0; k < 14; k++) config[`f${String(k).padStart(2, '0')}`] = rand();
    for (let k = 14; k < 17; k++) config[`b${k}`] = rand() < 0.5;
    for (let k = 17; k < 20; k++) config[`c${k}`] = ['a', 'b', 'c', 'd'][Math.floor(rand() * 4)];
    const loss = 2 * (config.f00 - 0.5) ** 2 + 0.3 * config.f01 + (config.c17 === 'b' ? 0.2 : 0) + 0.02 * rand();
    return { config, summary: { loss, acc: config.f05 + 0.05 * rand() } };
  });
  await pool(12, rows.map((r, i) => [r, i]), async ([r, i]) => {
    const run = await api(server, 'POST', `/api/v1/runs/${entity}/imp10k`, { name: `imp-${i}`, config: r.config });
    await api(server, 'PATCH', `/api/v1/runs/${entity}/imp10k/${run.id}`, { summary: r.summary });
  });
}

async function seedLogs(server, entity) {
  const run = await api(server, 'POST', `/api/v1/runs/${entity}/bench`, { name: 'logs-1m', job_type: 'train' });
  const base = `/api/v1/runs/${entity}/bench/${run.id}`;
  const labels = ['rank_0', 'rank_1', 'rank_2', 'rank_3'];
  for (const label of labels) await api(server, 'POST', `${base}/writers`, { label });
  const t0 = Date.now();
  const seq = {};
  const PER = 10000;
  for (let i0 = 0; i0 < LINES; i0 += PER) {
    const label = labels[(i0 / PER) % labels.length];
    const console = [];
    for (let i = i0; i < Math.min(LINES, i0 + PER); i++) {
      console.push({ time: t0 + i, stream: i % 50 === 0 ? 'stderr' : 'stdout', text: `[${label}] step ${i} loss=${(1 / (1 + i / 1e5)).toFixed(5)} lr=0.1 throughput=${1000 + (i % 97)} samples/s` });
    }
    seq[label] = (seq[label] ?? 0) + 1;
    await api(server, 'POST', `${base}/writers/${label}/batches`, { seq: seq[label], console });
  }
  return run.id;
}

/** Runs `action` in the page and returns ms until `done()` holds at an animation frame. */
async function timeInPage(page, action, done) {
  return page.evaluate(async ({ action, done }) => {
    const act = new Function(action);
    const ok = new Function(done);
    const t0 = performance.now();
    act();
    for (;;) {
      await new Promise((r) => requestAnimationFrame(r));
      if (ok()) return performance.now() - t0;
      if (performance.now() - t0 > 20000) return NaN;
    }
  }, { action, done });
}

/** GET .../console/index on the 1M-line log: whole log, one label, stderr, a text search
 * (medians of 3). */
async function measureIndex(server, entity, logsRun, prefix) {
  const out = {};
  for (const [name, query, want] of [['all', '', LINES], ['label', 'labels=rank_1', LINES / 4], ['stderr', 'stream=stderr', null],
    ['text', `q=${encodeURIComponent('step 12')}`, null]]) {
    const xs = [];
    for (let i = 0; i < 3; i++) {
      const t0 = Date.now();
      const ix = await api(server, 'GET', `/api/v1/runs/${entity}/bench/${logsRun}/console/index?stride=1000&${query}`);
      xs.push(Date.now() - t0);
      if (want !== null && ix.total !== want) throw new Error(`index ${query} total ${ix.total}`);
      out[`${prefix}_${name}_total`] = ix.total;
    }
    out[`${prefix}_${name}_api_ms`] = median(xs);
  }
  return out;
}

/** The console index of one 1M-line log under two binaries, each on a freshly started server
 * (no background work left from seeding): the --baseline-bin binary writes the log and is timed,
 * then this build's binary reopens the same data directory and is timed the same way. */
async function compareIndex(baselineBin) {
  const base = mkdtempSync(path.join(tmpdir(), 'cohort-ix-'));
  const dataDir = path.join(base, 'data'), homeDir = path.join(base, 'home');
  const out = {};
  try {
    let server = await startServer({ bin: baselineBin, dataDir, homeDir });
    const entity = (await api(server, 'GET', '/api/v1/viewer')).entity;
    const t = Date.now();
    const logsRun = await seedLogs(server, entity);
    console.error(`  index comparison: ${LINES} lines seeded by ${baselineBin} in ${((Date.now() - t) / 1000).toFixed(1)} s`);
    await server.stop();
    for (const [bin, prefix] of [[baselineBin, 'baseline_index'], [null, 'current_index']]) {
      server = await startServer({ bin, dataDir, homeDir });
      Object.assign(out, await measureIndex(server, entity, logsRun, prefix));
      await server.stop();
    }
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
  return out;
}

/** Every figure of PARTS on `server` (its own browser context), medians of REPS. */
async function measure(browser, server, entity, { runId, logsRun }, isBaseline = false) {
  // Tall enough that all 20 charts are on screen (charts off screen load when scrolled to).
  const ctx = await browser.newContext({ viewport: { width: 1400, height: 2600 } });
  const page = await ctx.newPage();
  await page.goto(server.url + '/');
  await page.evaluate((k) => localStorage.setItem('cohort.key', k), server.key);
  const results = {};

  // 1. Run page.
  if (runId) {
  const chartUrl = `${server.url}/?p=${entity}/bench&run=${runId}&tab=charts`;
  const loads = [], zooms = [];
  for (let i = 0; i < REPS + 1; i++) {
    await page.goto('about:blank');
    await page.goto(chartUrl);
    await page.waitForFunction((n) => document.querySelectorAll('section.panel .chart canvas').length >= n
      && [...document.querySelectorAll('section.panel .panel-meta')].filter((e) => e.textContent.includes('points')).length >= n, CHARTS, { polling: 'raf', timeout: 30000 });
    const ms = await page.evaluate(() => performance.now());
    if (i > 0) loads.push(ms); // the first load warms the server's page cache
    // Zoom: drag over the middle of the first chart, until its re-queried data is drawn.
    const over = page.locator('section.panel').first().locator('.u-over');
    const box = await over.boundingBox();
    const before = await page.locator('section.panel .panel-meta').first().textContent();
    // Timed in the page from the mouseup that ends the drag to the frame showing the new data.
    await page.evaluate(() => document.addEventListener('mouseup', () => { window.__upAt = performance.now(); }, { capture: true, once: true }));
    await page.mouse.move(box.x + box.width * 0.4, box.y + box.height / 2);
    await page.mouse.down();
    await page.mouse.move(box.x + box.width * 0.45, box.y + box.height / 2, { steps: 3 });
    await page.mouse.up();
    await page.waitForFunction((b) => document.querySelector('section.panel .panel-meta')?.textContent !== b, before, { polling: 'raf' });
    const zoomMs = await page.evaluate(() => performance.now() - window.__upAt);
    if (i > 0) zooms.push(zoomMs);
  }
  const zoomedMeta = await page.locator('section.panel .panel-meta').first().textContent();
  results.run_page_20x100k_all_charts_drawn_ms = median(loads);
  results.run_page_zoom_requery_ms = median(zooms);
  results.zoomed_chart = zoomedMeta;
  }

  // 2. Workspace of 10,000 runs.
  if (PARTS.has('runs')) {
  await page.setViewportSize({ width: 1400, height: 900 });
  const wsUrl = `${server.url}/?p=${entity}/wide`;
  const wsLoads = [];
  for (let i = 0; i < 3; i++) {
    await page.goto('about:blank');
    const t0 = Date.now();
    await page.goto(wsUrl);
    await page.waitForFunction((n) => document.querySelector('.ws-count')?.textContent.startsWith(`${n.toLocaleString('en-US')} of ${n.toLocaleString('en-US')} runs`), RUNS, { polling: 100, timeout: 60000 });
    wsLoads.push(Date.now() - t0);
  }
  results.workspace_10k_initial_load_ms = median(wsLoads);
  const count = `document.querySelector('.ws-count').textContent`;
  const firstName = `document.querySelector('[data-testid=runs-table] tr[data-run]')?.getAttribute('data-name')`;
  const measures = {
    filter_name_search_ms: {
      action: `const i = document.querySelector('input[aria-label="search run names"]'); i.value = 'run-12'; i.dispatchEvent(new Event('input', { bubbles: true }));`,
      done: `return ${count}.startsWith('111 of');`,
      reset: `const i = document.querySelector('input[aria-label="search run names"]'); i.value = ''; i.dispatchEvent(new Event('input', { bubbles: true }));`,
      resetDone: `return ${count}.startsWith('${RUNS.toLocaleString('en-US')} of');`,
    },
    filter_state_crashed_ms: {
      action: `[...document.querySelectorAll('.fgroup.states label')].find((l) => l.textContent.trim() === 'crashed').querySelector('input').click();`,
      done: `return !${count}.startsWith('${RUNS.toLocaleString('en-US')} of');`,
      reset: `[...document.querySelectorAll('.fgroup.states label')].find((l) => l.textContent.trim() === 'crashed').querySelector('input').click();`,
      resetDone: `return ${count}.startsWith('${RUNS.toLocaleString('en-US')} of');`,
    },
    sort_by_name_ms: {
      action: `[...document.querySelectorAll('.th-sort')].find((b) => b.textContent.startsWith('Name')).click();`,
      done: `return ${firstName} === 'run-9999' || ${firstName} === 'run-999';`,
      reset: `[...document.querySelectorAll('.th-sort')].find((b) => b.textContent.startsWith('Created')).click();`,
      resetDone: `return true;`,
    },
    sort_by_summary_loss_ms: {
      action: `[...document.querySelectorAll('.th-sort')].find((b) => b.textContent.startsWith('loss')).click();`,
      done: `return document.querySelector('[data-testid=runs-table] th[aria-sort="descending"]')?.textContent.startsWith('loss');`,
      reset: `[...document.querySelectorAll('.th-sort')].find((b) => b.textContent.startsWith('Created')).click();`,
      resetDone: `return true;`,
    },
  };
  for (const [name, m] of Object.entries(measures)) {
    const xs = [];
    for (let i = 0; i < REPS; i++) {
      xs.push(await timeInPage(page, m.action, m.done));
      await timeInPage(page, m.reset, m.resetDone);
      await page.waitForTimeout(50);
    }
    results[`workspace_10k_${name}`] = median(xs);
  }
  results.workspace_10k_filter_sort_compute_ms_last = await page.evaluate(() => window.__cohortFilterMs);
  }

  // 3. Logs: 1M lines.
  if (logsRun) {
    Object.assign(results, await measureIndex(server, entity, logsRun, 'logs_1m_console_index'));
    const firsts = [], jumps = [], filters = [];
    for (let i = 0; i < 3; i++) {
      await page.goto('about:blank');
      await page.goto(`${server.url}/?p=${entity}/bench&run=${logsRun}&tab=logs`);
      await page.waitForFunction(() => document.querySelector('.log-line[data-label]'), null, { polling: 'raf', timeout: 60000 });
      firsts.push(await page.evaluate(() => performance.now()));
      // The jump needs the whole index (the first page shows before the count is known).
      await page.waitForFunction(() => /^[\d,]+ lines$/.test(document.querySelector('[data-testid=log-count]')?.textContent ?? ''), null, { timeout: 60000 });
      jumps.push(await timeInPage(page,
        `const v = document.querySelector('.log-view'); v.scrollTop = (v.scrollHeight - v.clientHeight) / 2; v.dispatchEvent(new Event('scroll'));`,
        `const r = document.querySelector('.log-window .log-line'); return !!r && r.hasAttribute('data-label') && Number(r.querySelector('.log-n').textContent) > 400000;`));
      filters.push(await timeInPage(page,
        `document.querySelector('.logs-bar input[data-label="rank_1"]').click();`,
        `return new RegExp('^' + (${LINES} / 4).toLocaleString('en-US') + ' lines$').test(document.querySelector('[data-testid=log-count]').textContent) && !!document.querySelector('.log-line[data-label="rank_1"]');`));
    }
    results.logs_1m_first_lines_shown_ms = median(firsts);
    results.logs_1m_jump_to_middle_ms = median(jumps);
    results.logs_1m_filter_one_label_ms = median(filters);
    // A text search opened from a link (lq= in the URL): navigation -> the full count shown.
    const want = results.logs_1m_console_index_text_total.toLocaleString('en-US');
    const searches = [];
    for (let i = 0; i < 3; i++) {
      await page.goto('about:blank');
      await page.goto(`${server.url}/?p=${entity}/bench&run=${logsRun}&tab=logs&lq=${encodeURIComponent('step 12')}`);
      await page.waitForFunction((w) => document.querySelector('[data-testid=log-count]')?.textContent === `${w} lines` &&
        !!document.querySelector('.log-line[data-label]'), want, { polling: 'raf', timeout: 60000 });
      searches.push(await page.evaluate(() => performance.now()));
    }
    results.logs_1m_text_search_shown_ms = median(searches);
  }

  // 4. A workspace charting 100 visible runs; 5. a group page of 8 runs.
  if (PARTS.has('visible') || PARTS.has('group')) await page.setViewportSize({ width: 1400, height: 1400 });
  // (A baseline UI from before the workspace charted its visible runs has no such figure.)
  if (PARTS.has('visible') && !isBaseline) {
    results.workspace_100_visible_runs_all_charts_drawn_ms = await chartsDrawn(page, `${server.url}/?p=${entity}/vis100`, VISIBLE_KEYS, '.selected-charts');
    results.workspace_100_visible_runs_lines = await page.locator('section.panel').first().locator('.legend-item, .legend-more').evaluateAll(
      (els) => els.reduce((n, e) => n + (e.classList.contains('legend-more') ? Number(/\d+/.exec(e.textContent)?.[0] ?? 0) : 1), 0));
  }
  if (PARTS.has('group')) {
    results.group_page_8x10_charts_drawn_ms = await chartsDrawn(page, `${server.url}/?p=${entity}/grp&group=G8`, GROUP_KEYS);
  }

  // 6. Parameter importance over 10,000 runs x 20 config fields.
  if (PARTS.has('importance') && !isBaseline) {
    await page.setViewportSize({ width: 1400, height: 900 });
    await page.goto(`${server.url}/?p=${entity}/imp10k`);
    await page.waitForFunction((n) => document.querySelector('.ws-count')?.textContent.startsWith(`${n.toLocaleString('en-US')} of ${n.toLocaleString('en-US')} runs`), RUNS, { polling: 100, timeout: 120000 });
    const pick = (m) => `const s = document.querySelector('select[aria-label="importance metric"]'); s.value = '${m}'; s.dispatchEvent(new Event('change', { bubbles: true }));`;
    const shown = (m) => `const t = document.querySelector('[data-testid=importance-meta]')?.textContent ?? ''; return t.includes('have ${m}') && !t.includes('computing') && !!document.querySelector('[data-testid=importance-table] tbody tr');`;
    const computes = [], picks = [];
    for (let i = 0; i < REPS + 1; i++) {
      const m = i % 2 ? 'acc' : 'loss';
      const ms = await timeInPage(page, pick(m), shown(m));
      if (i > 0) { picks.push(ms); computes.push(await page.evaluate(() => window.__cohortImportanceMs)); }
    }
    results.importance_10k_x20_worker_compute_ms = median(computes);
    results.importance_10k_x20_pick_to_table_ms = median(picks);
    const top = async (m) => {
      await timeInPage(page, pick(m), shown(m));
      return page.locator('[data-testid=importance-table] tbody tr').first().getAttribute('data-key');
    };
    results.importance_10k_top_field_loss = await top('loss');
    results.importance_10k_top_field_acc = await top('acc');
    results.importance_10k_fields = await page.locator('[data-testid=importance-table] tbody tr').count();
  }
  // 7. Comparison panels over 10,000 runs.
  if (PARTS.has('compare') && !isBaseline) Object.assign(results, await measureCompare(page, server, entity, RUNS, REPS, timeInPage));

  await ctx.close();
  return results;
}

// A failed measurement stops the server it started (it was left running, an orphan, before).
let stopOnError = null;
const main = async () => {
  const server = await startServer({ bin: args.bin ?? null, uiDir: args['ui-dir'] ?? null });
  stopOnError = () => server.stop();
  const entity = (await api(server, 'GET', '/api/v1/viewer')).entity;
  console.error(`seeding: 1 run x ${CHARTS} keys x ${POINTS} points, ${RUNS} runs ...`);
  let t = Date.now();
  const runId = PARTS.has('charts') ? await seedCharts(server, entity) : null;
  console.error(`  charts seeded in ${((Date.now() - t) / 1000).toFixed(1)} s`);
  t = Date.now();
  if (PARTS.has('runs')) await seedRuns(server, entity);
  console.error(`  runs seeded in ${((Date.now() - t) / 1000).toFixed(1)} s`);
  t = Date.now();
  const logsRun = PARTS.has('logs') && LINES > 0 ? await seedLogs(server, entity) : null;
  console.error(`  ${LINES} console lines seeded in ${((Date.now() - t) / 1000).toFixed(1)} s`);
  t = Date.now();
  if (PARTS.has('visible')) await seedMetricRuns(server, entity, 'vis100', VISIBLE_RUNS, VISIBLE_KEYS, VISIBLE_STEPS);
  if (PARTS.has('group')) await seedMetricRuns(server, entity, 'grp', GROUP_RUNS, GROUP_KEYS, GROUP_STEPS, 'G8');
  console.error(`  visible/group runs seeded in ${((Date.now() - t) / 1000).toFixed(1)} s`);
  t = Date.now();
  if (PARTS.has('importance')) await seedImportance(server, entity);
  console.error(`  importance runs (${RUNS} x 20 config fields) seeded in ${((Date.now() - t) / 1000).toFixed(1)} s`);
  if (PARTS.has('compare')) {
    t = Date.now();
    await seedCompare(server, entity, RUNS);
    console.error(`  ${RUNS} runs x 20 config x 10 summary fields seeded in ${((Date.now() - t) / 1000).toFixed(1)} s`);
  }

  const ids = { runId, logsRun };
  const browser = await launchBrowser();
  const results = {};
  let baseline = null;
  if (args['baseline-ui']) {
    // The same data served with another UI (e.g. main's ui/dist) by a second server on the same
    // data directory: each figure is measured for both, interleaved, in the same minutes.
    baseline = await startServer({ bin: args.bin ?? null, uiDir: args['baseline-ui'], dataDir: path.join(server.dir, 'data'),
      homeDir: path.join(server.dir, 'home') });
  }
  const rounds = baseline ? Number(args.rounds ?? 2) : 1;
  const samples = { current: [], baseline: [] };
  for (let r = 0; r < rounds; r++) {
    const order = baseline ? (r % 2 ? ['baseline', 'current'] : ['current', 'baseline']) : ['current'];
    for (const which of order) {
      console.error(`  measuring ${which} (round ${r + 1} of ${rounds}) ...`);
      samples[which].push(await measure(browser, which === 'current' ? server : baseline, entity, ids, which === 'baseline'));
    }
  }
  const merge = (list) => {
    const out = {};
    for (const k of Object.keys(list[0] ?? {})) {
      const xs = list.map((x) => x[k]);
      out[k] = typeof xs[0] === 'number' ? median(xs) : xs[0];
    }
    return out;
  };
  Object.assign(results, merge(samples.current));
  const baselineResults = baseline ? merge(samples.baseline) : null;
  if (baseline) await baseline.stop();

  await browser.close();
  await server.stop();
  if (args['baseline-bin'] && PARTS.has('logs')) Object.assign(results, await compareIndex(args['baseline-bin']));
  console.log(JSON.stringify({ reps: REPS, runs: RUNS, charts: CHARTS, points_per_chart: POINTS, results,
    ...(baselineResults ? { baseline_ui: args['baseline-ui'], baseline: baselineResults } : {}) }, null, 2));
};

main().catch(async (e) => { console.error(e); await stopOnError?.().catch(() => {}); process.exit(1); });
