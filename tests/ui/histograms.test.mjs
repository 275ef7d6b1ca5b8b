// Browser tests of the run page's Histograms tab: a real `cohort server` (port 0) seeded by the
// real Python SDK (tests/ui/seed_sdk.py `hist`: a shared run whose writers rank_0 and rank_1 log
// `cohort.Histogram` values through `run.log`, through the node agent; COHORT_UI_SEED=http: the
// same through the HTTP API's binary batches, tests/ui/seed_hist_http.mjs), checked in Debian's
// Chromium: keys grouped by prefix, a 10,000-step series fetched as buckets sized to the plot
// and drawn as distribution bands, the hover text (step and percentiles, the bin and count),
// the heatmap with its log colour scale, the writer switch, a histogram whose values are all
// equal, a single step, steps that counted only NaN drawn as gaps (never as 0), the key filter,
// and no uncaught error in the page.
//
//   node --test tests/ui/histograms.test.mjs        (scripts/test-ui.sh runs it)
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { api, openLoggedIn, ROOT, startServer } from './harness.mjs';
import { seedHistogramsWithHttp } from './seed_hist_http.mjs';
import { seedHistogramsWithSdk } from './seed.mjs';

const SHOTS = path.join(ROOT, 'artifacts/ui');
const PROJECT = 'hist-demo';
const STEPS = 10000;
// COHORT_UI_SEED=http: the same scenario through the HTTP API (binary batches), no SDK needed.
const SEED = process.env.COHORT_UI_SEED === 'http' ? 'http' : 'sdk';
let server, browser, page, entity, runId;
const pageErrors = [];
const requests = [];
const shot = (name) => page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
const runUrl = (q = '') => `${server.url}/?p=${entity}/${PROJECT}&run=${runId}&tab=histograms${q}`;
const panel = (key) => page.locator(`section.hist-panel[data-hist="${key}"]`);
/** The centre of gradients/fc1.weight of rank_0 at a step (seed_sdk.py hist_center). */
const center0 = (step) => -1 + (2 * step) / (STEPS - 1);

/** Waits until the panel shows `writer`'s data, loaded and drawn in `view`; returns the plot's
 * data attributes (what the canvas shows). */
async function drawn(key, { writer = 'rank_0', view = 'bands', log = false } = {}) {
  const p = panel(key);
  await p.locator(`.chart-plot[data-drawn-for="${writer}|${view}|${log ? 'log' : 'linear'}"]`).waitFor();
  await page.waitForFunction(([k, w]) => {
    const el = document.querySelector(`section.hist-panel[data-hist="${k}"]`);
    return el && el.dataset.writer === w && el.getAttribute('aria-busy') === 'false';
  }, [key, writer]);
  return p.locator('.chart-plot').evaluate((el) => ({ ...el.dataset }));
}

/** Moves the mouse over the panel's plot at fraction (fx, fy) of its area; returns the tooltip's
 * step and rows once it shows that position's step. */
async function hover(key, fx, fy = 0.5) {
  const p = panel(key);
  await p.scrollIntoViewIfNeeded();
  const box = await p.locator('.u-over').boundingBox();
  await page.mouse.move(box.x - 20, box.y - 20);
  await page.mouse.move(box.x + box.width * fx, box.y + box.height * fy, { steps: 4 });
  const tip = p.locator('[data-testid=hist-tip]:not([hidden])');
  await tip.waitFor();
  // The tooltip of the final position (not of a move on the way there).
  await page.waitForFunction(([k, left]) => {
    const el = document.querySelector(`section.hist-panel[data-hist="${k}"] .chart-plot`);
    return el?.dataset.hoverStep !== undefined && Math.abs(Number(el.dataset.hoverLeft) - left) <= 1;
  }, [key, box.width * fx]);
  return tip.evaluate((el) => ({
    text: el.textContent,
    step: Number(el.querySelector('.tip-x').dataset.step),
    head: el.querySelector('.tip-x').textContent,
    q: Object.fromEntries([...el.querySelectorAll('[data-q]')].map((r) => [r.dataset.q, Number(r.dataset.v)])),
    bin: el.querySelector('[data-bin]') ? { lo: Number(el.querySelector('[data-bin]').dataset.lo), hi: Number(el.querySelector('[data-bin]').dataset.hi) } : null,
    count: el.querySelector('[data-count]') ? Number(el.querySelector('[data-count]').dataset.count) : null,
    gap: !!el.querySelector('[data-gap]'),
  }));
}

/** Pixels of the plot's canvas in the column at step `x` (x scale [x0, x1] over the plot area)
 * that are painted (not the panel's background): counts them over the plot's height. */
async function paintedAt(key, x, x0, x1) {
  return panel(key).locator('.chart-plot').evaluate((el, [x, x0, x1]) => {
    const canvas = el.querySelector('canvas');
    const over = el.querySelector('.u-over');
    const dpr = window.devicePixelRatio || 1;
    const ob = over.getBoundingClientRect(), cb = canvas.getBoundingClientRect();
    const px = Math.round((ob.left - cb.left + ((x - x0) / (x1 - x0)) * ob.width) * dpr);
    const top = Math.round((ob.top - cb.top) * dpr), h = Math.round(ob.height * dpr);
    const data = canvas.getContext('2d').getImageData(px, top, 1, h).data;
    let painted = 0;
    // The bands are orange (#e8710a) in alpha: red clearly above blue. Grid lines are grey.
    for (let i = 0; i < data.length; i += 4) if (data[i + 3] > 0 && data[i] - data[i + 2] > 30) painted++;
    return painted;
  }, [x, x0, x1]);
}

before(async () => {
  mkdirSync(SHOTS, { recursive: true });
  server = await startServer();
  entity = (await api(server, 'GET', '/api/v1/viewer')).entity;
  try {
    runId = SEED === 'http'
      ? await seedHistogramsWithHttp(server, entity, PROJECT, { steps: STEPS })
      : await seedHistogramsWithSdk(server, entity, PROJECT, { steps: STEPS });
  } catch (e) {
    server.dumpLogs('histogram seed failed');
    throw e;
  }
  ({ browser, page } = await openLoggedIn(server, PROJECT, pageErrors));
  page.on('request', (r) => { if (r.url().includes('/histograms?')) requests.push(new URL(r.url())); });
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

describe(`histograms in the web UI (seeded by ${SEED === 'http' ? 'the HTTP API' : 'the Python SDK'})`, () => {
  test('the tab lists the histogram keys grouped by prefix, each with its writer', async () => {
    await page.goto(runUrl());
    await page.getByTestId('histograms').waitFor();
    assert.equal(await page.getByRole('tab', { name: /^Histograms/ }).getAttribute('aria-selected'), 'true');
    assert.equal((await page.getByRole('tab', { name: /^Histograms/ }).textContent()).trim(), 'Histograms (5)');
    assert.deepEqual(await page.locator('details.chart-section').evaluateAll((els) => els.map((e) => e.dataset.section)), ['gradients', 'parameters']);
    assert.deepEqual(await page.locator('section.hist-panel').evaluateAll((els) => els.map((e) => e.dataset.hist)),
      ['gradients/fc1.weight', 'gradients/nan', 'parameters/const', 'parameters/fc1.weight', 'parameters/single']);
    // Histograms are not line charts: the Charts tab counts the scalar only.
    assert.equal((await page.getByRole('tab', { name: /^Charts/ }).textContent()).trim(), 'Charts (1)');
    // Only the key logged by both writers offers a choice.
    assert.deepEqual(await panel('gradients/fc1.weight').getByTestId('hist-writer').locator('option').allTextContents(), ['rank_0', 'rank_1']);
    assert.equal(await panel('parameters/const').getByTestId('hist-writer').count(), 0);
    assert.equal((await panel('parameters/const').getByTestId('hist-writer-only').textContent()).trim(), 'rank_0');
  });

  test('10,000 steps are asked for as buckets sized to the plot and drawn as distribution bands', async () => {
    requests.length = 0;
    await page.goto(runUrl());
    const d = await drawn('gradients/fc1.weight');
    const req = requests.find((u) => u.searchParams.get('keys') === 'gradients/fc1.weight' && u.searchParams.get('writers') === 'rank_0');
    assert.ok(req, 'a histograms request for the key and its writer');
    const buckets = Number(req.searchParams.get('buckets'));
    const plotWidth = (await panel('gradients/fc1.weight').locator('.u-over').boundingBox()).width;
    assert.ok(buckets > 100 && buckets <= plotWidth + 80 && buckets < STEPS, `buckets ${buckets} sized to the plot (${plotWidth} px)`);
    const p = panel('gradients/fc1.weight');
    assert.equal(await p.getAttribute('data-steps'), String(STEPS));
    const columns = Number(d.columns);
    assert.ok(columns <= buckets && columns >= buckets * 0.9, `${columns} columns for ${buckets} buckets`);
    assert.equal(d.drawn, String(columns), 'every column has numbers');
    assert.equal(d.bands, '4', 'four bands (min..max, 7..93%, 16..84%, 31..69%) over one run of columns');
    assert.match(await p.getByTestId('hist-meta').textContent(), new RegExp(`^10000 steps in ${columns} columns$`));
    assert.ok(await paintedAt('gradients/fc1.weight', STEPS / 2, 0, STEPS - 1) > 10, 'the bands are painted mid-chart');
    await shot('hist-01-bands');
  });

  test('hovering names the step (merged steps) and the percentiles there, ordered around the median', async () => {
    await page.goto(runUrl());
    await drawn('gradients/fc1.weight');
    const t = await hover('gradients/fc1.weight', 0.5, 0.5);
    assert.match(t.head, /^steps \d+–\d+ \(\d+ merged\)$/);
    const [first, last] = /steps (\d+)–(\d+)/.exec(t.head).slice(1).map(Number);
    assert.equal(t.step, first);
    assert.ok(Math.abs(first - STEPS / 2) < STEPS * 0.05, `the middle of the plot is near step ${STEPS / 2}: ${first}`);
    const labels = ['max', '93%', '84%', '69%', 'median', '31%', '16%', '7%', 'min'];
    assert.deepEqual(Object.keys(t.q), labels);
    for (let i = 1; i < labels.length; i++) assert.ok(t.q[labels[i]] <= t.q[labels[i - 1]], `${labels[i]} <= ${labels[i - 1]}`);
    const expected = (center0(first) + center0(last)) / 2;
    assert.ok(Math.abs(t.q.median - expected) < 0.06, `median ${t.q.median} ~ ${expected}`);
    // N(mu, 0.5): 16% and 84% one sigma from the median.
    assert.ok(Math.abs(t.q['84%'] - t.q['16%'] - 1.0) < 0.1, `16..84% spans ~2 sigma: ${t.q['16%']}..${t.q['84%']}`);
    assert.match(t.text, /at -?[\d.e-]+\d+% below/);
    assert.match(t.text, /values\d+/);
    await shot('hist-02-hover');
  });

  test('the heatmap: steps x bins coloured by count, hover names the bin and its count, log colour scale', async () => {
    await page.goto(runUrl());
    await drawn('gradients/fc1.weight');
    await page.getByRole('button', { name: 'Heatmap' }).click();
    await page.waitForURL(/hv=heatmap/);
    const d = await drawn('gradients/fc1.weight', { view: 'heatmap' });
    // One row per bin (edges fixed over [-3, 3], 48 bins of 0.125) between the outermost
    // non-empty bins: counts stay exact (whole numbers) in every cell.
    const rows = Number(d.rows);
    assert.ok(rows >= 30 && rows <= 48, `rows ${rows}`);
    assert.equal(d.drawn, d.columns, 'every column drawn');
    assert.ok(Number(d.cells) > Number(d.columns) * 5, `cells painted: ${d.cells}`);
    // The cursor's bin: values around rank_0's centre there hold many counts; far away none.
    const t = await hover('gradients/fc1.weight', 0.5, 0.5);
    assert.ok(t.bin && t.bin.lo < t.bin.hi, 'the bin under the cursor');
    assert.ok(t.count > 0 && Number.isInteger(t.count), `count under the cursor at the centre: ${t.count}`);
    assert.ok(Math.abs((t.bin.hi - t.bin.lo) - 0.125) < 1e-9, `a row is a bin: ${JSON.stringify(t.bin)}`);
    assert.match(t.text, /^steps \d+–\d+ \(\d+ merged\)bin.*count.*median.*values/);
    const far = await hover('gradients/fc1.weight', 0.02, 0.03); // step ~200, value ~2.9: no counts
    assert.equal(far.count, 0);
    const linear = await panel('gradients/fc1.weight').locator('canvas').evaluate((c) => c.toDataURL());
    await page.getByTestId('hist-log').check();
    await page.waitForURL(/hlog=1/);
    await drawn('gradients/fc1.weight', { view: 'heatmap', log: true });
    await page.waitForFunction((before) => document.querySelector('section.hist-panel[data-hist="gradients/fc1.weight"] canvas')?.toDataURL() !== before, linear);
    assert.match(await panel('gradients/fc1.weight').locator('.hist-legend').textContent(), /log scale/);
    await shot('hist-03-heatmap-log');
    // The view is in the URL: a reload keeps it.
    await page.reload();
    await drawn('gradients/fc1.weight', { view: 'heatmap', log: true });
    assert.equal(await page.getByTestId('hist-log').isChecked(), true);
    await page.getByRole('button', { name: 'Distribution' }).click();
    await page.waitForURL((u) => !u.searchParams.has('hv'));
  });

  test('the writer switch shows the other writer\'s histograms (and is kept in the URL)', async () => {
    await page.goto(runUrl());
    await drawn('gradients/fc1.weight');
    await panel('gradients/fc1.weight').getByTestId('hist-writer').selectOption('rank_1');
    await page.waitForURL(/hw=/);
    const d = await drawn('gradients/fc1.weight', { writer: 'rank_1' });
    assert.equal(await panel('gradients/fc1.weight').getAttribute('data-steps'), '200');
    assert.equal(d.columns, '200', '200 steps fit the plot: one column each, nothing merged');
    assert.equal((await panel('gradients/fc1.weight').getByTestId('hist-meta').textContent()).trim(), '200 steps');
    const t = await hover('gradients/fc1.weight', 0.5, 0.5);
    assert.match(t.head, /^step \d+$/);
    assert.ok(Math.abs(t.q.median - 2) < 0.06, `rank_1 sits around 2: median ${t.q.median}`);
    const req = requests.filter((u) => u.searchParams.get('writers') === 'rank_1');
    assert.ok(req.length >= 1, 'asked for rank_1 alone');
    await shot('hist-04-writer');
    await page.reload();
    await drawn('gradients/fc1.weight', { writer: 'rank_1' });
    assert.equal(await panel('gradients/fc1.weight').getByTestId('hist-writer').inputValue(), 'rank_1');
  });

  test('edge cases: every value equal, a single step, NaN-only steps as gaps (never 0)', async () => {
    await page.goto(runUrl());
    // Every value 7.0: a narrow band around 7, the y axis around it.
    const c = await drawn('parameters/const');
    assert.equal(c.columns, '20');
    assert.equal(c.drawn, '20');
    const tc = await hover('parameters/const', 0.5, 0.5);
    assert.ok(Math.abs(tc.q.median - 7) < 0.01, `median ${tc.q.median}`);
    assert.ok(tc.q.min >= 6.5 && tc.q.max <= 7.5 && tc.q.max - tc.q.min < 0.1, `min..max ${tc.q.min}..${tc.q.max}`);
    assert.ok(c.yticks.split('|').some((v) => Number(v) === 7), `the y axis shows 7: ${c.yticks}`);
    // A single step: one column, drawn as a bar, hover names it.
    const s = await drawn('parameters/single');
    assert.equal(s.columns, '1');
    assert.equal(s.drawn, '1');
    const ts = await hover('parameters/single', 0.5, 0.5);
    assert.equal(ts.head, 'step 5');
    assert.ok(Math.abs(ts.q.median - 1.5) < 1e-9 && ts.q.min === 0.5 && ts.q.max === 2.5, JSON.stringify(ts.q));
    assert.ok(await paintedAt('parameters/single', 5, 4, 6) > 10, 'the lone step is painted');
    // Steps 10..19 counted only NaN: gaps, said so, and nothing painted there (not a 0).
    const n = await drawn('gradients/nan');
    assert.equal(n.columns, '30');
    assert.equal(n.drawn, '20');
    assert.equal(n.gaps, '10');
    assert.equal(n.bands, '8', 'four bands on each side of the gap');
    assert.equal((await panel('gradients/nan').getByTestId('hist-empty').textContent()).trim(), '10 empty');
    assert.equal(await paintedAt('gradients/nan', 15, 0, 29), 0, 'nothing drawn in the gap');
    assert.ok(await paintedAt('gradients/nan', 5, 0, 29) > 10, 'bands before the gap');
    assert.ok(await paintedAt('gradients/nan', 25, 0, 29) > 10, 'bands after the gap');
    const tn = await hover('gradients/nan', 15 / 29, 0.5);
    assert.equal(tn.head, 'step 15');
    assert.ok(tn.gap, 'the tooltip says there is no finite value');
    assert.match(tn.text, /none finite/);
    await shot('hist-05-edges');
    // The heatmap leaves the gap empty too, and draws the single value in one row.
    await page.goto(runUrl('&hv=heatmap'));
    const hn = await drawn('gradients/nan', { view: 'heatmap' });
    assert.equal(hn.drawn, '20');
    const hc = await drawn('parameters/const', { view: 'heatmap' });
    // Every value in one bin of the SDK's (64 bins over [6.5, 7.5]): the y axis is that bin, one
    // row, one lit cell per step holding all 100 values.
    assert.equal(hc.rows, '1');
    assert.equal(hc.cells, '20');
    const th = await hover('parameters/const', 0.5, 0.5);
    assert.equal(th.count, 100);
    assert.ok(th.bin.lo === 7 && Math.abs(th.bin.hi - (7 + 1 / 64)) < 1e-12, JSON.stringify(th.bin));
    await shot('hist-06-edges-heatmap');
  });

  test('the key filter keeps matching keys; a drag zooms into a step range and re-queries it', async () => {
    await page.goto(runUrl());
    await drawn('gradients/fc1.weight');
    await page.getByRole('searchbox', { name: 'filter histograms' }).fill('const');
    await page.waitForFunction(() => document.querySelectorAll('section.hist-panel').length === 1);
    assert.deepEqual(await page.locator('section.hist-panel').evaluateAll((els) => els.map((e) => e.dataset.hist)), ['parameters/const']);
    assert.deepEqual(await page.locator('details.chart-section').evaluateAll((els) => els.map((e) => e.dataset.section)), ['parameters']);
    await page.getByRole('searchbox', { name: 'filter histograms' }).fill('');
    await drawn('gradients/fc1.weight');
    // Drag over the first tenth of the 10,000 steps: re-queried with min/max_step, fewer merged.
    requests.length = 0;
    const box = await panel('gradients/fc1.weight').locator('.u-over').boundingBox();
    await page.mouse.move(box.x + 2, box.y + box.height / 2);
    await page.mouse.down();
    await page.mouse.move(box.x + box.width * 0.1, box.y + box.height / 2, { steps: 5 });
    await page.mouse.up();
    await panel('gradients/fc1.weight').getByRole('button', { name: 'Reset zoom' }).waitFor();
    await page.waitForFunction(() => Number(document.querySelector('section.hist-panel[data-hist="gradients/fc1.weight"]')?.dataset.steps) < 2000
      && document.querySelector('section.hist-panel[data-hist="gradients/fc1.weight"]')?.getAttribute('aria-busy') === 'false');
    const req = requests.find((u) => u.searchParams.get('keys') === 'gradients/fc1.weight');
    assert.ok(req && Number(req.searchParams.get('max_step')) < 2000, `zoom re-query: ${req}`);
    await panel('gradients/fc1.weight').getByRole('button', { name: 'Reset zoom' }).click();
    await page.waitForFunction(() => document.querySelector('section.hist-panel[data-hist="gradients/fc1.weight"]')?.dataset.steps === '10000');
  });

  test('no uncaught error in the page', () => {
    assert.deepEqual(pageErrors, []);
  });
});
