// Browser tests of charts at their edges: writers whose points share one timestamp are drawn on
// the time axes (a dot on a min-max tick, not an empty chart with a legend); long keys are titled
// without their section and cut in the middle, their end visible; a zoomed chart keeps a
// readable title beside its Reset zoom button; the ±Inf badge never counts buckets as points; the
// compare page shows a dozen metric chips, not 200, before its charts; a media table writes
// 0.6, not 0.6000000000000001, and right-aligns the nulls of a numeric column. A real
// `cohort server` (port 0) seeded through the HTTP API (and the Python SDK for the table), driven
// through Debian's Chromium by playwright-core.
//
//   node --test tests/ui/chart_edges.test.mjs        (scripts/test-ui.sh runs it)
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { api, openSignedInPage, ROOT, sdkEnvironment, startServer } from './harness.mjs';

const SHOTS = path.join(ROOT, 'artifacts/ui');
const P = 'edges';
let server, browser, page, entity;
const ids = {};
const pageErrors = [];
const shot = (name) => page.screenshot({ path: path.join(SHOTS, `${name}.png`) });
const href = (q) => `${server.url}/?p=${entity}/${P}${q}`;
const call = (method, p, body) => api(server, method, p, body);

// Line colours: the palette's first two (rank_0, rank_1 of a shared run; the line of a one-writer run).
const BLUE = [47, 125, 225];
const ORANGE = [232, 89, 12];
const LONG = (k) => `metrics/group_0/a_very_long_metric_name_that_goes_on_and_on_number_${k}`;

// ---- seeding through the HTTP API ------------------------------------------------------------

async function makeRun(run, writers = ['rank_0']) {
  const r = await call('POST', `/api/v1/runs/${entity}/${P}`, run);
  for (const [i, w] of writers.entries()) {
    await call('POST', `/api/v1/runs/${entity}/${P}/${r.id}/writers`, { label: w, primary: i === 0, update_finish_state: i === 0 });
  }
  return r.id;
}
const batch = (run, label, body) => call('POST', `/api/v1/runs/${entity}/${P}/${run}/writers/${label}/batches`, body);
const finish = (run, label) => call('POST', `/api/v1/runs/${entity}/${P}/${run}/writers/${label}/finish`, { exit_code: 0 });

async function seedAll() {
  const now = Date.now();
  // A shared run: each writer logs 100 steps with one timestamp (rank_1 ten seconds later).
  ids.shared = await makeRun({ name: 'same-time' }, ['rank_0', 'rank_1']);
  for (const [r, label] of ['rank_0', 'rank_1'].entries()) {
    const history = [];
    for (let s = 0; s < 100; s++) history.push({ step: s, time: now + 10_000 * (r + 1), values: { loss: 1 + r + s / 100 } });
    await batch(ids.shared, label, { seq: 1, history });
    await finish(ids.shared, label);
  }
  // One writer, 100 steps at one time: the whole chart is one x.
  ids.one = await makeRun({ name: 'one-time' });
  await batch(ids.one, 'rank_0', { seq: 1, history: Array.from({ length: 100 }, (_, s) => ({ step: s, time: now + 5000, values: { loss: 1 + s / 100 } })) });
  await finish(ids.one, 'rank_0');

  // 12 long keys in one section that differ only at their end; one with NaN steps (a badge in
  // its header row).
  ids.long = await makeRun({ name: 'long-keys' });
  const rows = [];
  for (let s = 0; s < 20; s++) {
    const values = {};
    for (let k = 0; k < 12; k++) values[LONG(k)] = k === 0 && s >= 8 && s < 12 ? 'NaN' : k + s / 10;
    rows.push({ step: s, time: now + s * 1000, values });
  }
  await batch(ids.long, 'rank_0', { seq: 1, history: rows });
  await finish(ids.long, 'rank_0');

  // 3,000 steps, two of them +Inf next to each other: the buckets hold them among numbers.
  ids.inf = await makeRun({ name: 'blowup' });
  const inf = [];
  for (let s = 0; s < 3000; s++) inf.push({ step: s, time: now + s * 10, values: { g: s === 1500 || s === 1501 ? 'Infinity' : Math.sin(s / 100) } });
  await batch(ids.inf, 'rank_0', { seq: 1, history: inf });
  await finish(ids.inf, 'rank_0');

  // Two runs of 30 metrics each, to compare.
  ids.cmp = [];
  for (const name of ['cmp-a', 'cmp-b']) {
    const id = await makeRun({ name });
    const values = (s) => Object.fromEntries(Array.from({ length: 30 }, (_, k) => [`k/${String(k).padStart(2, '0')}`, k + s]));
    await batch(id, 'rank_0', { seq: 1, history: [0, 1, 2].map((s) => ({ step: s, time: now + s * 1000, values: values(s) })) });
    await finish(id, 'rank_0');
    ids.cmp.push(id);
  }
}

// A table through the Python SDK (the agent delivers it, its blob is uploaded).
const TABLE_SEED = String.raw`
import os
import cohort
run = cohort.init(project=os.environ["COHORT_PROJECT"], id=os.environ["RUN_ID"], name="table-run")
run.log({"scores": cohort.Table(columns=["name", "p"], data=[["a", 0.6000000000000001], ["b", None], ["c", 0.25], ["d", 12]])})
run.finish()
`;

async function seedTable() {
  ids.table = 'tablerun';
  const { python, env } = sdkEnvironment(server, P, { RUN_ID: ids.table });
  const script = path.join(server.dir, 'seed_table.py');
  writeFileSync(script, TABLE_SEED);
  const r = spawnSync(python, [script], { env, encoding: 'utf8', timeout: 120000 });
  if (r.status !== 0) throw new Error(`seed table: ${r.stdout}\n${r.stderr}`);
  for (let i = 0; i < 200; i++) {
    const rows = (await call('GET', `/api/v1/runs/${entity}/${P}/${ids.table}/media`)).media;
    if (rows.length === 1 && rows[0].uploaded) return;
    await new Promise((res) => setTimeout(res, 100));
  }
  throw new Error('the table did not arrive');
}

// ---- helpers ---------------------------------------------------------------------------------

const panel = (title) => page.locator(`section.panel[data-chart="${title}"]`);

async function drawn(title) {
  const p = panel(title);
  await p.scrollIntoViewIfNeeded({ timeout: 15000 });
  await p.locator('canvas').first().waitFor({ timeout: 15000 });
  await p.locator('[data-testid=panel-meta]').filter({ hasText: /points/ }).waitFor({ timeout: 15000 });
  await page.waitForTimeout(200);
  return p;
}

/** Pixels of `rgb` (±tolerance, opaque) in the plot area of the chart's canvas. */
async function ink(p, rgb) {
  return p.evaluate((el, rgb) => {
    const canvas = el.querySelector('canvas');
    const over = el.querySelector('.u-over');
    const cr = canvas.getBoundingClientRect(), or = over.getBoundingClientRect();
    const scale = canvas.width / cr.width;
    const x0 = Math.round((or.left - cr.left) * scale), y0 = Math.round((or.top - cr.top) * scale);
    const w = Math.round(or.width * scale), h = Math.round(or.height * scale);
    const data = canvas.getContext('2d').getImageData(x0, y0, w, h).data;
    let n = 0;
    for (let i = 0; i < data.length; i += 4) {
      if (Math.abs(data[i] - rgb[0]) < 40 && Math.abs(data[i + 1] - rgb[1]) < 40 && Math.abs(data[i + 2] - rgb[2]) < 40 && data[i + 3] > 150) n++;
    }
    return n;
  }, rgb);
}

before(async () => {
  mkdirSync(SHOTS, { recursive: true });
  server = await startServer();
  entity = (await call('GET', '/api/v1/viewer')).entity;
  await seedAll();
  await seedTable();
  ({ browser, page } = await openSignedInPage(server, pageErrors));
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

describe('charts at their edges', () => {
  test('writers whose points share one timestamp are drawn on the relative and wall time axes', async () => {
    for (const x of ['rel', 'wall']) {
      await page.goto(href(`&run=${ids.shared}&tab=charts&x=${x}`));
      const p = await drawn('loss');
      assert.deepEqual(await p.locator('.legend-item').evaluateAll((els) => els.map((e) => e.dataset.series)), ['rank_0', 'rank_1']);
      assert.match(await p.locator('[data-testid=panel-meta]').textContent(), /^200 raw points/);
      assert.ok(await ink(p, BLUE) > 10, `${x}: rank_0 is drawn`);
      assert.ok(await ink(p, ORANGE) > 10, `${x}: rank_1 is drawn`);
      await shot(`chart-edges-shared-time-${x}`);
    }
    // One writer, one time: the chart's only x, in the middle of the plot; the tooltip gives the
    // range of the points there.
    await page.goto(href(`&run=${ids.one}&tab=charts&x=rel`));
    const p = await drawn('loss');
    assert.ok(await ink(p, BLUE) > 10, 'the single time is drawn');
    const box = await p.locator('.u-over').boundingBox();
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    const tip = p.locator('.chart-tip');
    await tip.waitFor();
    assert.match(await tip.textContent(), /1\.99 \[1 … 1\.99\]/);
    await shot('chart-edges-one-time');
    // The step axis is untouched: 100 points, one per step.
    await page.goto(href(`&run=${ids.one}&tab=charts`));
    const steps = await drawn('loss');
    assert.ok(await ink(steps, BLUE) > 100, 'the step line is drawn');
  });

  test('long keys: titled without their section, cut in the middle, their end visible, the full key in the tooltip', async () => {
    await page.goto(href(`&run=${ids.long}&tab=charts`));
    const tails = [];
    for (const k of [0, 7, 11]) {
      const p = await drawn(LONG(k));
      const h3 = p.locator('h3');
      assert.equal(await h3.getAttribute('title'), LONG(k));
      assert.equal(await h3.textContent(), LONG(k).slice('metrics/'.length));
      const geo = await h3.evaluate((el) => {
        const head = el.querySelector('.title-head'), tail = el.querySelector('.title-tail');
        const hb = el.getBoundingClientRect(), tb = tail.getBoundingClientRect();
        return { hb: [hb.left, hb.right], tb: [tb.left, tb.right], cut: head.scrollWidth > head.clientWidth, inside: tb.left >= hb.left - 0.5 && tb.right <= hb.right + 0.5, tail: tail.textContent, tailCut: tail.scrollWidth > tail.clientWidth };
      });
      assert.ok(geo.cut, `${k}: the title is cut (the panel is narrower than the key)`);
      assert.ok(geo.inside && !geo.tailCut, `${k}: the end of the title is visible: ${JSON.stringify(geo)}`);
      assert.ok(geo.tail.endsWith(`_number_${k}`), `${k}: tail "${geo.tail}"`);
      tails.push(geo.tail);
    }
    assert.equal(new Set(tails).size, 3);
    await shot('chart-edges-long-titles');
  });

  test('a zoomed chart keeps a readable title beside its Reset zoom button and its badges', async () => {
    const ch = encodeURIComponent(JSON.stringify({ [LONG(0)]: { z: [2, 15] } }));
    await page.goto(href(`&run=${ids.long}&tab=charts&ch=${ch}`));
    const p = await drawn(LONG(0));
    await p.getByRole('button', { name: 'Reset zoom' }).waitFor();
    await p.locator('[data-testid=nonfinite]').waitFor();
    const geo = await p.locator('.panel-head').evaluate((el) => {
      const h = el.querySelector('h3').getBoundingClientRect();
      const fs = parseFloat(getComputedStyle(el.querySelector('h3')).fontSize);
      const reset = [...el.querySelectorAll('button')].find((b) => b.textContent === 'Reset zoom').getBoundingClientRect();
      const box = el.getBoundingClientRect();
      return { title: h.width, em: fs, overflow: el.scrollWidth - el.clientWidth, resetInside: reset.right <= box.right + 0.5, overlap: h.right > reset.left };
    });
    assert.ok(geo.title >= 8 * geo.em, `the title is ${geo.title} px wide (font ${geo.em} px)`);
    assert.ok(geo.overflow <= 1 && geo.resetInside && !geo.overlap, JSON.stringify(geo));
    // Its end is still there.
    assert.ok(await p.locator('.title-tail').evaluate((t) => t.getBoundingClientRect().width > 0 && t.textContent.endsWith('_number_0')));
    await shot('chart-edges-zoomed-title');
  });

  test('the ±Inf badge says "at least" over buckets, and the exact count over raw points', async () => {
    const raw = await call('GET', `/api/v1/runs/${entity}/${P}/${ids.inf}/history?keys=g`);
    assert.equal(raw.series[0].points.filter((pt) => pt[2] === 'Infinity').length, 2);
    await page.goto(href(`&run=${ids.inf}&tab=charts`));
    let p = await drawn('g');
    assert.match(await p.locator('[data-testid=panel-meta]').textContent(), /min\/max bands/);
    const badge = p.locator('[data-testid=nonfinite]');
    assert.match(await badge.textContent(), /^≥[12] ±Inf$/);
    assert.match(await badge.getAttribute('title'), /not how many, so at least [12] points? (is|are) infinite/);
    const ch = encodeURIComponent(JSON.stringify({ g: { z: [1490, 1510] } }));
    await page.goto(href(`&run=${ids.inf}&tab=charts&ch=${ch}`));
    p = await drawn('g');
    await p.locator('[data-testid=panel-meta]').filter({ hasText: /raw points/ }).waitFor();
    assert.equal(await p.locator('[data-testid=nonfinite]').textContent(), '2 ±Inf');
  });

  test('the compare page shows a dozen metric chips and "+N more"; the filter searches them all', async () => {
    await page.goto(href(`&cmp=${ids.cmp.join(',')}`));
    const chips = page.locator('.curve-keys button.chip');
    await page.locator('section.panel[data-chart="k/00"]').waitFor();
    assert.equal(await chips.count(), 12);
    const more = page.getByTestId('more-chips');
    assert.equal(await more.textContent(), '+18 more');
    // The charts come right after the chips.
    const keysBox = await page.locator('.curve-keys').boundingBox();
    const chartTop = (await page.locator('section.panel[data-chart="k/00"]').boundingBox()).y;
    assert.ok(keysBox.height < 100 && chartTop - (keysBox.y + keysBox.height) < 60, `chips ${JSON.stringify(keysBox)}, first chart at ${chartTop}`);
    await more.click();
    assert.equal(await chips.count(), 30);
    assert.equal(await more.textContent(), 'fewer');
    await more.click();
    assert.equal(await chips.count(), 12);
    await page.getByLabel('filter metrics').fill('9');
    // k/09, k/19, k/29 (past the first dozen too) and the four curves shown.
    assert.deepEqual(await chips.evaluateAll((els) => els.map((e) => e.dataset.key)), ['k/00', 'k/01', 'k/02', 'k/03', 'k/09', 'k/19', 'k/29']);
    assert.equal(await more.count(), 0);
    await page.locator('.curve-keys button[data-key="k/29"]').click();
    await page.locator('section.panel[data-chart="k/29"]').waitFor();
    await shot('chart-edges-compare-chips');
  });

  test('a media table writes numbers short (full value in the tooltip) and aligns nulls with their column', async () => {
    await page.goto(href(`&run=${ids.table}&tab=media`));
    const table = page.getByTestId('media-table').first();
    await table.locator('tbody tr').first().waitFor();
    const cells = await table.locator('tbody tr').evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => ({
      text: td.textContent, title: td.getAttribute('title'), align: getComputedStyle(td).textAlign,
    }))));
    assert.deepEqual(cells.map((r) => r[1].text), ['0.6', 'null', '0.25', '12']);
    assert.equal(cells[0][1].title, '0.6000000000000001');
    assert.deepEqual(cells.map((r) => r[1].align), ['right', 'right', 'right', 'right']);
    assert.ok(cells.every((r) => r[0].align !== 'right'), 'the text column stays left-aligned');
  });
});

test('no uncaught error in the page during the whole session', () => {
  assert.deepEqual(pageErrors, []);
});
