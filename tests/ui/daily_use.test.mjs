// Browser tests of the web UI in daily use (issue 19): charts that never mislead (NaN gaps,
// axes sized to their labels, integer step ticks, a tooltip that moves nothing and shows every
// line), the workspace's visible-runs charts (eye toggles, 100-run limit said out loud, 20
// colours + dashes, colour by config, compact legends), the filter builder, default columns, the
// table that fills the page, per-chart log/smoothing/fullscreen/zoom/hidden lines in the URL,
// popovers and dialogs, honest empty states, logs by line number, writer and key order, ranks of
// a single writer, keyboard navigation. A real `cohort server` (port 0) seeded through the HTTP
// API (data with NaN, 1e9 and 1e-7 values, step grids that differ, 105 runs), driven through
// Debian's Chromium by playwright-core.
//
//   node --test tests/ui/daily_use.test.mjs        (scripts/test-ui.sh runs it)
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { api, ROOT, startServer, openSignedInPage } from './harness.mjs';

const SHOTS = path.join(ROOT, 'artifacts/ui');
const P = 'daily';
const MANY = 'many';
let server, browser, page, entity;
const ids = {};
const pageErrors = [];
const shot = (name) => page.screenshot({ path: path.join(SHOTS, `${name}.png`) });
const href = (q, project = P) => `${server.url}/?p=${entity}/${project}${q}`;
const call = (method, p, body) => api(server, method, p, body);

// ---- seeding through the HTTP API ------------------------------------------------------------

async function makeRun(project, run, writers = ['rank_0']) {
  const r = await call('POST', `/api/v1/runs/${entity}/${project}`, run);
  for (const [i, w] of writers.entries()) {
    await call('POST', `/api/v1/runs/${entity}/${project}/${r.id}/writers`, { label: w, primary: i === 0, update_finish_state: i === 0 });
  }
  return r.id;
}
const batch = (project, run, label, body) => call('POST', `/api/v1/runs/${entity}/${project}/${run}/writers/${label}/batches`, body);
const finish = (project, run, label) => call('POST', `/api/v1/runs/${entity}/${project}/${run}/writers/${label}/finish`, { exit_code: 0 });

const T0 = Date.now() - 3_600_000;
const NCCL = '[rank 2] RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1275, unhandled system error, '
  + 'NCCL version 2.18.1 ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error. '
  + 'Last error: socket connect to 10.0.3.17<48213> failed: Connection refused (the cause is at the end of this long line: peer rank 3 exited)';

async function seedAll() {
  // 2,000 steps: loss in [1, 2] with 200 NaN steps in the middle, a learning rate around 6e-4,
  // values around 1e9 and 1e-7; one writer with a machine-made label.
  ids.edge = await makeRun(P, { name: 'edge', job_type: 'train', config: { lr: 0.0006, batch_size: 16 } }, ['vm-b4j0']);
  const history = [];
  for (let s = 0; s < 2000; s++) {
    history.push({
      step: s, time: T0 + s * 5, values: {
        loss: s >= 800 && s < 1000 ? 'NaN' : 2 - s / 2000,
        lr: 6e-4 * (1 - s / 8000), big: 1e9 + s * 1e6, tiny: 1e-7 * (1 + s / 1000),
      },
    });
  }
  const console = [];
  for (let i = 0; i < 200; i++) {
    console.push(i === 119 ? { time: T0 + i, stream: 'stderr', text: NCCL } : { time: T0 + i, stream: 'stdout', text: `step ${i} loss ${(2 - i / 200).toFixed(3)}` });
  }
  await batch(P, ids.edge, 'vm-b4j0', { seq: 1, history, console });
  await finish(P, ids.edge, 'vm-b4j0');

  // A short run: 6 steps in 1.2 s (relative-time ticks below a second).
  ids.blip = await makeRun(P, { name: 'blip', job_type: 'eval' });
  const now = Date.now();
  await batch(P, ids.blip, 'rank_0', { seq: 1, history: [0, 1, 2, 3, 4, 5].map((s) => ({ step: s, time: now + s * 240, values: { loss: 1 / (s + 1) } })) });
  await finish(P, ids.blip, 'rank_0');

  // Three runs of a sweep on different step grids (every step, every 7th, every 13th), with
  // system metrics (one changing, one constant), summary values and configs that vary.
  const grids = [['grid-a', 1, 0.1, 32], ['grid-b', 7, 0.01, 64], ['grid-c', 13, 0.001, 64]];
  for (const [name, every, lr, bs] of grids) {
    const id = await makeRun(P, { name, group: 'sweep', job_type: 'train', config: { lr, batch_size: bs, model: 'resnet' } });
    ids[name] = id;
    const rows = [];
    for (let s = 0; s < 100; s += every) {
      rows.push({ step: s, time: T0 + s * 1000, values: {
        'val/acc': 0.5 + s / 250 + lr, 'val/loss': 2 / (1 + s * lr), 'train/loss': 1 / (1 + s * lr),
        'train/grad_norm': 1 + (s % 5), 'train/lr': lr * (1 - s / 200),
      } });
    }
    const system = [];
    for (let t = 0; t < 100; t += 5) system.push({ time: T0 + t * 1000, values: { 'gpu.0.temp': 60 + (t % 7), 'gpu.0.memory_total_mb': 81920, cpu: 30 + (t % 11) } });
    await batch(P, id, 'rank_0', { seq: 1, history: rows, system });
    await call('PATCH', `/api/v1/runs/${entity}/${P}/${id}`, { summary: { lr: lr / 10, loss: 1 / (1 + 99 * lr), acc: 0.9 - lr } });
    await finish(P, id, 'rank_0');
  }

  // Writers that joined out of order, summary keys that came in no order.
  ids.ordered = await makeRun(P, { name: 'ordered', job_type: 'train' }, ['rank_0', 'rank_1', 'rank_3', 'rank_2']);
  await call('PATCH', `/api/v1/runs/${entity}/${P}/${ids.ordered}`, { summary: { zeta: 1, alpha: 2, 'mid/x': 0.999999, 'mid/10': 4, 'mid/9': 5 } });

  // 105 small runs: more than the workspace charts.
  for (let i = 0; i < 105; i++) {
    const id = await makeRun(MANY, { name: `m-${String(i).padStart(3, '0')}`, config: { seed: i } });
    await batch(MANY, id, 'rank_0', { seq: 1, history: [0, 1, 2].map((s) => ({ step: s, time: T0 + s, values: { m: i + s } })) });
    await finish(MANY, id, 'rank_0');
  }
}

// ---- helpers ---------------------------------------------------------------------------------

function panel(title) {
  return page.locator(`section.panel[data-chart="${title}"]`);
}

async function drawn(title) {
  const p = panel(title);
  await p.scrollIntoViewIfNeeded({ timeout: 15000 });
  await p.locator('canvas').first().waitFor({ timeout: 15000 });
  await p.locator('[data-testid=panel-meta]').filter({ hasText: /points/ }).waitFor({ timeout: 15000 });
  return p;
}

/** Pixels of `rgb` (±tolerance) in the plot canvas column at the fraction `fx` of the plot. */
async function linePixelsAt(p, fx, rgb) {
  return p.evaluate((el, { fx, rgb }) => {
    const canvas = el.querySelector('canvas');
    const over = el.querySelector('.u-over');
    const cr = canvas.getBoundingClientRect(), or = over.getBoundingClientRect();
    const scale = canvas.width / cr.width;
    const x = Math.round((or.left - cr.left + or.width * fx) * scale);
    const y0 = Math.round((or.top - cr.top) * scale), y1 = Math.round((or.bottom - cr.top) * scale);
    const data = canvas.getContext('2d').getImageData(x - 1, y0, 3, y1 - y0).data;
    let n = 0;
    for (let i = 0; i < data.length; i += 4) {
      if (Math.abs(data[i] - rgb[0]) < 40 && Math.abs(data[i + 1] - rgb[1]) < 40 && Math.abs(data[i + 2] - rgb[2]) < 40 && data[i + 3] > 150) n++;
    }
    return n;
  }, { fx, rgb });
}

async function hover(p, fx, fy = 0.5) {
  const box = await p.locator('.u-over').boundingBox();
  await page.mouse.move(box.x + box.width * fx, box.y + box.height * fy);
}

function chartState() {
  const raw = new URL(page.url()).searchParams.get('ch');
  return raw ? JSON.parse(raw) : {};
}

before(async () => {
  mkdirSync(SHOTS, { recursive: true });
  server = await startServer();
  entity = (await call('GET', '/api/v1/viewer')).entity;
  await seedAll();
  ({ browser, page } = await openSignedInPage(server, pageErrors));
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

describe('charts that never mislead', () => {
  test('NaN steps are a gap, never a drop to 0: the server answers null, the line breaks, the count shows', async () => {
    // The server: a bucket without a finite value has null statistics and its NaN count.
    const h = await call('GET', `/api/v1/runs/${entity}/${P}/${ids.edge}/history?keys=loss&buckets=20`);
    const gap = h.series[0].buckets.find((b) => b.step_min >= 800 && b.step_max < 1000);
    assert.deepEqual([gap.min, gap.max, gap.mean, gap.nan_count], [null, null, null, gap.count]);
    const edge = h.series[0].buckets.find((b) => b.step_min < 1000 && b.step_max >= 1000 && b.nan_count > 0);
    if (edge) assert.ok(edge.mean > 1 && edge.mean < 2, `a bucket with NaN and numbers: the mean of its numbers (${edge.mean})`);

    await page.goto(href(`&run=${ids.edge}&tab=charts`));
    const p = await drawn('loss');
    assert.match(await p.locator('[data-testid=nonfinite]').textContent(), /^200 NaN$/);
    const blue = [47, 125, 225];
    // Steps 800-999 span 40-50% of the x axis: nothing drawn there; the line is there elsewhere.
    assert.equal(await linePixelsAt(p, 0.45, blue), 0, 'a line crosses the NaN steps');
    assert.ok(await linePixelsAt(p, 0.25, blue) > 0, 'the line is drawn where values are');
    // y never reaches 0: every tick of the axis is within the values (1..2) and their padding.
    const ticks = (await p.locator('.chart-plot').getAttribute('data-yticks')).split('|').map(Number);
    assert.ok(Math.min(...ticks) > 0.9, `y ticks ${ticks}`);
    await hover(p, 0.45);
    const tip = p.locator('.chart-tip');
    await tip.waitFor();
    assert.match(await tip.textContent(), /NaN/);
    await shot('21-nan-gap');
    // Log scale (this chart only): still a gap, no plunge to the axis floor.
    await p.locator('button.toggle', { hasText: 'log' }).click();
    await page.waitForFunction(() => new URL(location.href).searchParams.get('ch')?.includes('"log":true'));
    await page.waitForTimeout(300);
    assert.equal(await linePixelsAt(p, 0.45, blue), 0, 'a log-scale line crosses the NaN steps');
    await shot('22-nan-gap-log');
  });

  test('y axes size to compact labels: 6e-4 and 3G, never clipped', async () => {
    await page.goto(href(`&run=${ids.edge}&tab=charts`));
    const widthsOk = async (title, re) => {
      const p = await drawn(title);
      const plot = p.locator('.chart-plot');
      const labels = (await plot.getAttribute('data-yticks')).split('|');
      assert.ok(labels.length >= 2, `${title}: ticks ${labels}`);
      for (const l of labels) assert.match(l, re, `${title}: tick "${l}"`);
      assert.equal(new Set(labels).size, labels.length, `${title}: distinct ticks ${labels}`);
      const axis = Number(await plot.getAttribute('data-yaxis'));
      const widths = await page.evaluate(({ labels, font }) => {
        const ctx = document.createElement('canvas').getContext('2d');
        ctx.font = font;
        return labels.map((l) => ctx.measureText(l).width);
      }, { labels, font: await plot.getAttribute('data-font') });
      assert.ok(Math.max(...widths) + 8 <= axis, `${title}: labels ${Math.max(...widths)} px wide in a ${axis} px axis`);
    };
    await widthsOk('lr', /^\d(\.\d+)?e-[45]$/);
    await widthsOk('big', /^\d(\.\d+)?G$/);
    await widthsOk('tiny', /^\d(\.\d+)?e-7$/);
    await shot('23-axes');
  });

  test('step ticks are integers when zoomed in; relative time ticks stay distinct on a short run', async () => {
    const ch = encodeURIComponent(JSON.stringify({ loss: { z: [100, 106] } }));
    await page.goto(href(`&run=${ids.edge}&tab=charts&ch=${ch}`));
    const p = await drawn('loss');
    await p.locator('[data-testid=panel-meta]').filter({ hasText: /raw points/ }).waitFor();
    const xt = (await p.locator('.chart-plot').getAttribute('data-xticks')).split('|');
    assert.ok(xt.length >= 2, `ticks ${xt}`);
    for (const t of xt) assert.match(t, /^\d+$/, `x tick "${t}"`);
    assert.equal(new Set(xt).size, xt.length);
    await page.goto(href(`&run=${ids.blip}&tab=charts&x=rel`));
    const b = await drawn('loss');
    const rt = (await b.locator('.chart-plot').getAttribute('data-xticks')).split('|');
    assert.ok(rt.length >= 3, `ticks ${rt}`);
    assert.equal(new Set(rt).size, rt.length, `relative ticks ${rt}`);
  });

  test('hovering a chart moves nothing, the tooltip shows every line, a drag-zoom low on a chart zooms where it was dragged', async () => {
    await page.goto(href('&q=grid&sort=name'));
    // Five charts in rows of three: train/grad_norm, train/loss, train/lr | val/acc, val/loss.
    const loss = await drawn('train/loss');
    const acc = await drawn('val/acc');
    await loss.scrollIntoViewIfNeeded();
    const before = await acc.boundingBox();
    assert.ok(before.y > (await loss.boundingBox()).y + 100, 'val/acc is in the row below');
    await hover(loss, 0.55);
    const tip = loss.locator('.chart-tip');
    await tip.waitFor();
    // Three runs on grids of 1, 7 and 13 steps: each line's nearest value, not only the one
    // that has a point at this step.
    const rows = await tip.locator('.tip-row').evaluateAll((els) => els.map((e) => [e.dataset.series, e.querySelector('.tip-val').textContent]));
    assert.deepEqual(rows.map((r) => r[0]).sort(), ['grid-a', 'grid-b', 'grid-c']);
    for (const [, v] of rows) assert.match(v, /^\d/);
    // The synced charts show no tooltip and nothing below moved.
    assert.equal(await acc.locator('.chart-tip').isVisible(), false);
    assert.deepEqual(await acc.boundingBox(), before);
    await shot('24-tooltip');
    // Drag-zoom in the top third of the chart in the lower row: the zoom is the dragged range.
    const box = await acc.locator('.u-over').boundingBox();
    await page.mouse.move(box.x + box.width * 0.3, box.y + box.height * 0.15);
    await page.mouse.down();
    await page.mouse.move(box.x + box.width * 0.4, box.y + box.height * 0.15, { steps: 5 });
    await page.mouse.up();
    await page.waitForFunction(() => new URL(location.href).searchParams.get('ch')?.includes('val/acc'));
    const [z0, z1] = chartState()['val/acc'].z;
    assert.ok(Math.abs(z0 - 29.7) < 2 && Math.abs(z1 - 39.6) < 2, `zoomed to ${z0}..${z1}`);
  });

  test('a chart the server refused says so with its status and a Retry button; a 429 or 503 is first retried once by itself', async () => {
    // The run page asks for its charts' series in one request (GET /api/v1/history/...).
    const isEdge = (url) => url.pathname === `/api/v1/history/${entity}/${P}` && url.search.includes(ids.edge);
    let refused = 0;
    const refuse = (status, times, retryAfter) => page.route(isEdge, (route) => {
      if (refused >= times) return route.continue();
      refused++;
      return route.fulfill({ status, headers: { 'Retry-After': retryAfter }, json: { error: { code: status === 429 ? 'rate_limited' : 'unavailable', message: 'slow down' } } });
    });
    // Refused while the route stands: the load and its automatic retry fail, the error says its
    // status; once the server answers, the Retry button draws the chart.
    await refuse(429, Infinity, '0');
    try {
      await page.goto(href(`&run=${ids.edge}&tab=charts`));
      const err = panel('loss').getByRole('alert');
      await err.waitFor({ timeout: 15000 });
      assert.ok(refused >= 2, `retried by itself (${refused} refused)`);
      assert.match(await err.textContent(), /429 rate_limited\):\s*slow down/);
    } finally {
      await page.unroute(isEdge);
    }
    await panel('loss').getByRole('alert').getByRole('button', { name: 'Retry' }).click();
    await drawn('loss');
    assert.equal(await panel('loss').getByRole('alert').count(), 0);
    // One 503 with Retry-After: 1: drawn after the wait, no error shown.
    refused = 0;
    await refuse(503, 1, '1');
    try {
      await page.goto(href(`&run=${ids.edge}&tab=charts`));
      await drawn('loss');
      assert.equal(refused, 1);
      assert.equal(await panel('loss').getByRole('alert').count(), 0);
    } finally {
      await page.unroute(isEdge);
    }
  });
});

describe('the workspace charts the visible runs', () => {
  test('at most 100 runs are charted and the page says so; legends are compact; 20 colours, then dashes', async () => {
    await page.goto(href('', MANY));
    await page.locator('.ws-count', { hasText: '105 of 105 runs' }).waitFor();
    assert.match(await page.getByTestId('chart-limit').textContent(), /the first 100 of 105 visible runs/);
    const m = await drawn('m');
    const items = m.locator('.legend-item');
    assert.equal(await items.count(), 6);
    await m.locator('.legend-more', { hasText: '+94 more' }).click();
    assert.equal(await items.count(), 100);
    const dashes = await items.evaluateAll((els) => els.map((e) => e.querySelector('line').getAttribute('stroke-dasharray')));
    assert.equal(dashes.slice(0, 20).filter(Boolean).length, 0, 'the first 20 lines are solid');
    assert.equal(dashes.slice(20, 40).filter(Boolean).length, 20, 'lines 21-40 are dashed');
    const colours = await items.evaluateAll((els) => els.slice(0, 20).map((e) => e.querySelector('line').getAttribute('stroke')));
    assert.equal(new Set(colours).size, 20);
    await shot('25-hundred-runs');
  });

  test('an eye per row hides a run from the charts (kept in the URL); colour by a config value', async () => {
    await page.goto(href('&q=grid&sort=name'));
    const acc = await drawn('val/acc');
    const legend = () => acc.locator('.legend-item').evaluateAll((els) => els.map((e) => e.dataset.series));
    assert.deepEqual(await legend(), ['grid-a', 'grid-b', 'grid-c']);
    await page.getByRole('button', { name: 'hide grid-b in charts' }).click();
    await page.waitForURL(new RegExp(`hide=${ids['grid-b']}`));
    await page.waitForFunction(() => document.querySelectorAll('section.panel[data-chart="val/acc"] .legend-item').length === 2);
    assert.deepEqual(await legend(), ['grid-a', 'grid-c']);
    await page.reload();
    await drawn('val/acc');
    assert.deepEqual(await legend(), ['grid-a', 'grid-c']);
    await page.getByRole('button', { name: 'show grid-b in charts' }).click();
    await page.waitForFunction(() => document.querySelectorAll('section.panel[data-chart="val/acc"] .legend-item').length === 3);
    // Colour by batch size: grid-b and grid-c (64) share a colour, grid-a (32) has another.
    await page.getByLabel('colour by').selectOption('batch_size');
    await page.waitForURL(/cby=batch_size/);
    await page.getByTestId('colour-legend').waitFor();
    assert.deepEqual(await page.getByTestId('colour-legend').locator('[data-value]').evaluateAll((els) => els.map((e) => e.dataset.value)), ['32', '64']);
    await page.waitForFunction(() => {
      const s = [...document.querySelectorAll('section.panel[data-chart="val/acc"] .legend-item line')].map((l) => l.getAttribute('stroke'));
      return s.length === 3 && s[1] === s[2] && s[0] !== s[1];
    });
    await shot('26-colour-by');
  });

  test('default columns: the config keys that vary, then the main metrics (not the learning rate)', async () => {
    await page.goto(href('&q=grid'));
    await page.locator('tr[data-name="grid-a"]').waitFor();
    const heads = await page.locator('[data-testid=runs-table] thead th').evaluateAll((els) => els.map((e) => [e.textContent.replace(/[▲▼]/g, '').trim(), e.getAttribute('title')]));
    const names = heads.map((h) => h[0]);
    assert.ok(heads.some(([n, t]) => n === 'lr' && t === 'config lr'), JSON.stringify(heads));
    assert.ok(heads.some(([n, t]) => n === 'batch_size' && t === 'config batch_size'));
    assert.equal(names.filter((n) => n === 'lr').length, 1, 'the summary lr is no default column');
    assert.ok(names.includes('loss') && names.includes('acc'));
    assert.ok(!names.includes('model'), 'a config key with one value is no default column');
  });

  test('the filter builder adds config and date clauses, applied here and accepted by the server', async () => {
    await page.goto(href('&q=grid'));
    await page.locator('tr[data-name="grid-a"]').waitFor();
    await page.getByRole('button', { name: '+ Filter' }).click();
    // An operator and a value chosen right after the field, before the next paint (a fast user, a
    // loaded machine), survive the paint: the field's reset must not come later and wipe them.
    const kept = await page.evaluate(async () => {
      const q = (l) => document.querySelector(`[aria-label="${l}"]`);
      const field = q('filter field');
      field.value = 'config.lr';
      field.dispatchEvent(new Event('change', { bubbles: true }));
      await Promise.resolve(); await Promise.resolve();
      await new Promise((r) => setTimeout(r, 0));
      const op = q('filter operator');
      op.value = '<';
      op.dispatchEvent(new Event('change', { bubbles: true }));
      const value = q('filter value');
      value.value = '0.004';
      value.dispatchEvent(new Event('input', { bubbles: true }));
      await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
      await new Promise((r) => setTimeout(r, 50));
      return [q('filter operator').value, q('filter value').value];
    });
    assert.deepEqual(kept, ['<', '0.004']);
    await page.getByLabel('filter field').selectOption('config.lr');
    await page.getByLabel('filter operator').selectOption('<');
    await page.getByLabel('filter value').fill('0.005');
    await page.getByRole('button', { name: 'Add', exact: true }).click();
    await page.waitForFunction(() => [...document.querySelectorAll('[data-testid=runs-table] tr[data-run]')].map((r) => r.dataset.name).join() === 'grid-c');
    assert.match(await page.getByTestId('filter-chips').textContent(), /lr < 0.005/);
    // Created after an hour from now: nothing; the same clause through the API answers the same.
    const later = Date.now() + 3_600_000;
    const when = new Date(later - new Date().getTimezoneOffset() * 60000).toISOString().slice(0, 16);
    await page.getByRole('button', { name: '+ Filter' }).click();
    await page.getByLabel('filter field').selectOption('created');
    await page.getByLabel('filter operator').selectOption('>');
    await page.getByLabel('filter value').fill(when);
    await page.getByRole('button', { name: 'Add', exact: true }).click();
    await page.getByText('No run matches these filters.').waitFor();
    const fx = JSON.parse(new URL(page.url()).searchParams.get('fx'));
    const created = fx.find((c) => c.field === 'created');
    assert.ok(Math.abs(created.value - later) < 60_000);
    const q = encodeURIComponent(JSON.stringify([{ field: 'created', op: '<', value: String(created.value) },
      { field: 'config.lr', op: '<', value: '0.005' }, { field: 'name', op: '~', value: 'grid' }]));
    const listed = await call('GET', `/api/v1/runs/${entity}/${P}?filters=${q}`);
    assert.deepEqual(listed.runs.map((r) => r.name), ['grid-c']);
  });

  test('the table fills the page; a new sort starts at the top; the first row is two keys away', async () => {
    await page.goto(href('', MANY));
    const table = page.locator('.table-scroll');
    await page.locator('.ws-count', { hasText: '105 of 105 runs' }).waitFor();
    const box = await table.boundingBox();
    assert.ok(box.y + box.height > 900 - 90, `the table ends at ${box.y + box.height} of 900 px`);
    await table.evaluate((el) => { el.scrollTop = 1500; el.dispatchEvent(new Event('scroll')); });
    await page.getByRole('button', { name: /^Name/ }).click();
    await page.waitForURL(/sort=-name/);
    await page.waitForFunction(() => document.querySelector('.table-scroll').scrollTop === 0);
    assert.equal(await page.locator('tr[data-index="0"]').getAttribute('data-name'), 'm-104');
    // Keyboard: Tab reaches "Skip to the runs table", Enter lands on the first row.
    await page.goto(href('&sort=name', MANY));
    await page.locator('tr[data-index="0"]').waitFor();
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement.textContent), 'Skip to the runs table');
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => document.activeElement?.dataset?.index === '0');
    // Two presses that arrive before the page re-renders (a fast typist, key repeat): both count.
    await page.evaluate(() => {
      for (let k = 0; k < 2; k++) {
        document.activeElement.dispatchEvent(new KeyboardEvent('keydown', { key: 'ArrowDown', bubbles: true }));
      }
    });
    await page.waitForFunction(() => document.activeElement?.dataset?.index !== '0');
    assert.equal(await page.evaluate(() => document.activeElement.dataset.name), 'm-002');
    await page.keyboard.press(' ');
    await page.waitForURL(/hide=/);
    await page.keyboard.press('Enter');
    await page.waitForURL(/run=/);
    await page.locator('.run-head h1', { hasText: 'm-002' }).waitFor();
  });
});

describe('per-chart settings in the URL', () => {
  test('log scale and smoothing of one chart, full screen, zoom and hidden lines survive a reload', async () => {
    await page.goto(href('&q=grid&sort=name'));
    const acc = await drawn('val/acc');
    await acc.locator('button.toggle', { hasText: 'log' }).click();
    await page.waitForFunction(() => new URL(location.href).searchParams.get('ch')?.includes('"log":true'));
    assert.equal(await page.getByLabel('log scale').isChecked(), false, 'the page setting is untouched');
    assert.equal(await panel('train/loss').locator('button.toggle', { hasText: 'log' }).getAttribute('aria-pressed'), 'false');
    await acc.getByRole('button', { name: 'smoothing of val/acc' }).click();
    await acc.getByLabel('smoothing of val/acc (slider)').evaluate((el) => { el.value = '0.6'; el.dispatchEvent(new Event('input', { bubbles: true })); });
    await page.keyboard.press('Escape');
    assert.equal(chartState()['val/acc'].sm, 0.6);
    await acc.locator('.legend-item[data-series="grid-b"]').click();
    const box = await acc.locator('.u-over').boundingBox();
    await page.mouse.move(box.x + box.width * 0.2, box.y + box.height * 0.5);
    await page.mouse.down();
    await page.mouse.move(box.x + box.width * 0.6, box.y + box.height * 0.5, { steps: 4 });
    await page.mouse.up();
    await page.waitForFunction(() => JSON.parse(new URL(location.href).searchParams.get('ch') ?? '{}')['val/acc']?.z);
    const cs = chartState()['val/acc'];
    assert.deepEqual(cs.h, [`${ids['grid-b']}|val/acc|rank_0`]);
    await page.reload();
    const again = await drawn('val/acc');
    assert.equal(await again.locator('.legend-item[data-series="grid-b"]').getAttribute('aria-pressed'), 'false');
    await again.getByRole('button', { name: 'Reset zoom' }).waitFor();
    assert.equal(await again.locator('button.toggle', { hasText: 'log' }).getAttribute('aria-pressed'), 'true');
    // Full screen, and back with Escape.
    await again.getByRole('button', { name: 'show val/acc full screen' }).click();
    await page.waitForURL(/full=val%2Facc/);
    const full = page.locator('section.panel.fullscreen');
    await full.locator('canvas').waitFor();
    const fb = await full.boundingBox();
    assert.ok(fb.width > 1300 && fb.height > 700, `full screen ${fb.width}x${fb.height}`);
    await shot('27-fullscreen');
    await page.keyboard.press('Escape');
    await page.waitForFunction(() => !new URL(location.href).searchParams.get('full'));
    assert.equal(await page.locator('section.panel.fullscreen').count(), 0);
  });
});

describe('popovers, dialogs and empty states', () => {
  test('the Columns popover closes on Escape and outside; "Save as" asks in the page', async () => {
    let native = 0;
    page.on('dialog', (d) => { native++; d.dismiss(); });
    await page.goto(href(''));
    await page.locator('tr[data-name="grid-a"]').waitFor();
    const open = () => page.getByRole('button', { name: 'Columns ▾' }).click();
    const popover = page.getByRole('dialog', { name: 'table columns' });
    await open();
    await popover.waitFor();
    await page.keyboard.press('Escape');
    await popover.waitFor({ state: 'detached' });
    // Escape at once after opening closes it too, before any effect of the render has run (as on
    // a loaded machine): without animation frames Preact runs effects only after 100 ms.
    const raf = await page.evaluateHandle(() => window.requestAnimationFrame);
    await page.evaluate(() => { window.requestAnimationFrame = () => 0; });
    await open();
    await page.keyboard.press('Escape');
    await popover.waitFor({ state: 'detached', timeout: 2000 });
    await page.evaluate((f) => { window.requestAnimationFrame = f; }, raf);
    await open();
    await popover.waitFor();
    await page.locator('.ws-head h1').click();
    await popover.waitFor({ state: 'detached' });
    await page.getByRole('button', { name: 'Save as…' }).click();
    await page.getByLabel('name of the new view').fill('my sweep view');
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => [...document.querySelectorAll('[data-testid=view-select] option')].some((o) => o.textContent === 'my sweep view' && o.selected));
    assert.equal(native, 0, 'no native prompt or confirm');
  });

  test('a network error is not an empty project; a mistyped project says there is no such project', async () => {
    await page.route('**/api/v1/runs/**', (route) => route.abort());
    await page.goto(href(''));
    await page.locator('.error', { hasText: /cannot reach the server/ }).waitFor();
    assert.equal(await page.getByText('No runs in this project yet').count(), 0);
    await page.unroute('**/api/v1/runs/**');
    await page.goto(href('', 'dialy'));
    await page.getByTestId('no-such-project').waitFor();
    assert.equal(await page.getByText('No runs in this project yet').count(), 0);
  });
});

describe('run and group pages', () => {
  test('writers and summary keys are in order; one writer is named by its run, never by its id', async () => {
    await page.goto(href(`&run=${ids.ordered}`));
    await page.locator('[data-testid=writers] tr[data-writer]').first().waitFor();
    assert.deepEqual(await page.locator('[data-testid=writers] tr[data-writer]').evaluateAll((els) => els.map((e) => e.dataset.writer)),
      ['rank_0', 'rank_1', 'rank_2', 'rank_3']);
    assert.deepEqual(await page.locator('[data-testid=kv-summary] tr[data-key]').evaluateAll((els) => els.map((e) => e.dataset.key)),
      ['alpha', 'mid/9', 'mid/10', 'mid/x', 'zeta']);
    // Values in full: 0.999999 (a beta2) is not rounded to 1.
    assert.equal(await page.locator('[data-testid=kv-summary] tr[data-key="mid/x"] td').textContent(), '0.999999');
    await page.goto(href(`&run=${ids.edge}&tab=charts`));
    const p = await drawn('loss');
    assert.deepEqual(await p.locator('.legend-item').evaluateAll((els) => els.map((e) => e.dataset.series)), ['edge']);
  });

  test('a single-writer run has no ranks to compare: the Ranks tab says so', async () => {
    await page.goto(href(`&run=${ids.edge}&tab=ranks`));
    await page.getByTestId('one-writer').waitFor({ timeout: 15000 });
    assert.match(await page.getByTestId('one-writer').textContent(), /one writer \(vm-b4j0\)/);
    assert.equal(await page.getByTestId('heatmap').count(), 0);
  });

  test("the group page's toolbars cover no heading; the system toolbar has no step axis; constants are folded", async () => {
    await page.goto(href('&group=sweep'));
    await drawn('val/acc');
    const heading = page.locator('.group-system .section-head h2', { hasText: 'System' });
    await heading.scrollIntoViewIfNeeded();
    // Scroll so that the System heading sits just under the top bar, where a sticky toolbar of
    // the metrics above would be.
    await page.evaluate(() => {
      const h = document.querySelector('.group-system');
      window.scrollBy(0, h.getBoundingClientRect().top - 60);
    });
    await page.waitForTimeout(200);
    const covered = await heading.evaluate((h) => {
      const r = h.getBoundingClientRect();
      const el = document.elementFromPoint(r.left + 5, r.top + r.height / 2);
      return !(el === h || h.contains(el));
    });
    assert.equal(covered, false, 'the System heading is covered');
    const sysToolbar = page.getByRole('toolbar', { name: 'system chart options' });
    const options = await sysToolbar.getByLabel('x axis').evaluate((s) => [...s.options].map((o) => o.value));
    assert.deepEqual(options, ['rel', 'wall']);
    const temps = await drawn('GPU temperature (°C)');
    assert.deepEqual(await temps.locator('.legend-item').evaluateAll((els) => els.map((e) => e.dataset.series)),
      ['grid-a · GPU 0', 'grid-b · GPU 0', 'grid-c · GPU 0']);
    assert.equal(await panel('GPU memory total (MB)').count(), 0, 'a constant is not charted');
    assert.match(await page.getByTestId('constants').textContent(), /GPU memory total \(MB\)\s*81920/);
    await shot('28-group-system');
  });

  test('log search keeps line numbers, shows a long line whole, and jumps to it in context', async () => {
    await page.goto(href(`&run=${ids.edge}&tab=logs`));
    await page.getByTestId('log-count').filter({ hasText: /^200 lines$/ }).waitFor();
    // Long lines scroll sideways, whole.
    const text = page.locator('.log-line[data-stream=stderr] .log-text');
    await page.locator('.log-view').evaluate((el) => { el.scrollTop = 100 * 18; el.dispatchEvent(new Event('scroll')); });
    await text.waitFor();
    assert.equal(await text.textContent(), NCCL);
    assert.ok(await page.locator('.log-view').evaluate((el) => el.scrollWidth > el.clientWidth));
    await page.getByLabel('search logs').fill('NCCL');
    await page.getByTestId('log-count').filter({ hasText: /^1 lines$/ }).waitFor();
    const line = page.locator('.log-line[data-label]');
    await page.waitForFunction(() => document.querySelector('.log-line[data-label]')?.dataset.n === '120');
    assert.equal((await line.locator('.log-n').textContent()).trim(), '120');
    await line.click();
    const detail = page.getByTestId('log-detail');
    await detail.waitFor();
    assert.equal(await detail.locator('pre').textContent(), NCCL);
    assert.match(await detail.textContent(), /Line 120/);
    await shot('29-log-line');
    await detail.getByTestId('in-context').click();
    await page.getByTestId('log-count').filter({ hasText: /^200 lines$/ }).waitFor();
    assert.equal(new URL(page.url()).searchParams.get('lq'), null);
    const sel = page.locator('.log-line.sel');
    await sel.waitFor();
    assert.equal(await sel.getAttribute('data-n'), '120');
    const inView = await sel.evaluate((el) => {
      const v = document.querySelector('.log-view').getBoundingClientRect(), r = el.getBoundingClientRect();
      return r.top >= v.top && r.bottom <= v.bottom;
    });
    assert.ok(inView, 'the line in context is on screen');
    assert.equal(await page.locator('.log-line[data-n="119"]').count(), 1, 'with the lines around it');
  });
});

test('no uncaught error in the page during the whole session', () => {
  assert.deepEqual(pageErrors, []);
});
