// Browser tests of the workspace's comparison panels (issue 17): parallel coordinates (axes
// picked from a searchable list, lines coloured by a summary field, brushes on a numeric and a
// categorical axis that AND together and filter the runs table, all restored by a reload) and
// the scatter (hover names the run, a click opens it). A real `cohort server` (port 0) seeded
// through the HTTP API, driven through Debian's Chromium by playwright-core.
//
//   node --test tests/ui/compare_panels.test.mjs
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { api, ROOT, startServer, openSignedInPage } from './harness.mjs';

const SHOTS = path.join(ROOT, 'artifacts/ui');
const P = 'cmp';
let server, browser, page, entity;
const pageErrors = [];
const call = (method, p, body) => api(server, method, p, body);
const shot = (name) => page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });

// 12 runs: distinct lr (two decades: a log axis) and val_loss (0.2 + 0.07 k, k a permutation of
// 0..11), batch size 16/32/64, optimizer adam/sgd/lamb, amp on every other run; and a 13th run
// with no summary (outside any brush on val_loss).
const LRS = [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.0015, 0.003, 0.007, 0.015, 0.03];
const RUNS = LRS.map((lr, i) => ({
  name: `r${String(i).padStart(2, '0')}`,
  config: { lr, batch_size: [16, 32, 64][i % 3], optimizer: ['adam', 'sgd', 'lamb'][(i >> 1) % 3], amp: i % 2 === 0 },
  val_loss: Number((0.2 + 0.07 * ((i * 5) % 12)).toFixed(3)),
}));
const ids = {};

async function seed() {
  for (const r of [...RUNS, { name: 'bare', config: { lr: 0.004, batch_size: 16, optimizer: 'adam', amp: true } }]) {
    const created = await call('POST', `/api/v1/runs/${entity}/${P}`, { name: r.name, job_type: 'train', config: r.config });
    ids[r.name] = created.id;
    if (r.val_loss !== undefined) await call('PATCH', `/api/v1/runs/${entity}/${P}/${created.id}`, { summary: { val_loss: r.val_loss, epoch: 3 } });
  }
}

const tableNames = () => page.locator('[data-testid=runs-table] tr[data-run]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-name')).sort());
const pcState = () => JSON.parse(new URL(page.url()).searchParams.get('pc') ?? 'null');

async function waitCount(n, of = RUNS.length + 1) {
  await page.locator('.ws-count').filter({ hasText: new RegExp(`^${n} of ${of} runs$`) }).waitFor({ timeout: 15000 });
}

/** Picks `key` from the field picker labelled `label`, by typing `search`. */
async function pickField(label, search, key) {
  await page.getByRole('button', { name: label, exact: true }).click();
  const pop = page.getByRole('dialog', { name: label });
  await pop.locator('input[type=search]').fill(search);
  // The search narrows the list: a field that does not match is gone.
  const options = pop.locator('button[data-field]');
  await page.waitForFunction(({ label, search }) => [...document.querySelectorAll(`[role=dialog][aria-label="${label}"] button[data-field]`)]
    .every((b) => b.getAttribute('data-field').toLowerCase().includes(search)), { label, search });
  assert.ok(await options.count() >= 1);
  await pop.locator(`button[data-field="${key}"]`).click();
  await pop.waitFor({ state: 'detached' });
}

/** The box of `loc` once it stopped moving (scrolled into view): a brush that changes the table's
 * height moves the panels below it for a frame or two. */
async function settledBox(loc) {
  let prev = null;
  for (let i = 0; i < 60; i++) {
    await loc.scrollIntoViewIfNeeded();
    const b = await loc.boundingBox();
    if (prev && b && Math.abs(b.x - prev.x) < 0.5 && Math.abs(b.y - prev.y) < 0.5 && Math.abs(b.height - prev.height) < 0.5) return b;
    prev = b;
    await page.waitForTimeout(60);
  }
  return prev;
}

/** The page coordinates of value `v` on the parallel coordinates' axis `key` (linear axis with
 * the values' min..max as its ends). */
async function axisPoint(key, v, [lo, hi]) {
  const canvas = page.locator('[data-testid=pc-canvas]');
  const box = await settledBox(canvas);
  const [top, h] = (await canvas.getAttribute('data-plot')).split(',').map(Number);
  const label = await page.locator(`.pc-axis[data-axis="${key}"]`).boundingBox();
  const u = (v - lo) / (hi - lo);
  return { x: label.x + label.width / 2, y: box.y + top + (1 - u) * h };
}

async function drag(from, to) {
  await page.mouse.move(from.x, from.y);
  await page.mouse.down();
  await page.mouse.move((from.x + to.x) / 2, (from.y + to.y) / 2, { steps: 3 });
  await page.mouse.move(to.x, to.y, { steps: 3 });
  await page.mouse.up();
}

before(async () => {
  mkdirSync(SHOTS, { recursive: true });
  server = await startServer();
  entity = (await call('GET', '/api/v1/viewer')).entity;
  await seed();
  ({ browser, page } = await openSignedInPage(server, pageErrors));
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

const VL = RUNS.map((r) => r.val_loss);
const VL_RANGE = [Math.min(...VL), Math.max(...VL)];

describe('parallel coordinates', () => {
  test('axes from a searchable list, lines coloured by val_loss with a legend', async () => {
    await page.goto(`${server.url}/?p=${entity}/${P}`);
    await waitCount(13);
    await page.getByRole('button', { name: '+ Parallel coordinates' }).click();
    const panel = page.locator('[data-testid=parcoords]');
    await panel.waitFor();
    // Defaults: the config fields that vary, then the colour metric.
    const defaults = pcState();
    assert.equal(defaults.c, 'summary.val_loss');
    assert.ok(defaults.a.includes('config.optimizer') && defaults.a.includes('summary.val_loss'), JSON.stringify(defaults));
    // Start from none and add five by searching.
    for (const k of defaults.a) await page.getByRole('button', { name: `remove the axis ${k.replace(/^(config|summary)\./, '')}` }).click();
    await page.waitForFunction(() => JSON.parse(new URL(location.href).searchParams.get('pc')).a.length === 0);
    for (const [search, key] of [['lr', 'config.lr'], ['batch', 'config.batch_size'], ['optim', 'config.optimizer'], ['amp', 'config.amp'], ['val_', 'summary.val_loss']]) {
      await pickField('add an axis', search, key);
    }
    assert.deepEqual(pcState().a, ['config.lr', 'config.batch_size', 'config.optimizer', 'config.amp', 'summary.val_loss']);
    assert.deepEqual(await panel.locator('.pc-axis').evaluateAll((els) => els.map((e) => e.getAttribute('data-axis'))), pcState().a);
    // lr spans two decades: a log axis.
    assert.match(await panel.locator('.pc-axis[data-axis="config.lr"]').textContent(), /lr \(log\)/);
    await panel.locator('[data-testid=pc-canvas][data-drawn="13:5:13"]').waitFor();
    // The legend: a ramp from the smallest to the largest val_loss.
    assert.equal(await panel.locator('[data-testid=pc-legend-min]').textContent(), String(VL_RANGE[0]));
    assert.equal(await panel.locator('[data-testid=pc-legend-max]').textContent(), String(VL_RANGE[1]));
    // Lines are drawn in the ramp's colours: yellow-ish (high) and purple-ish (low) pixels exist.
    const colours = await panel.locator('[data-testid=pc-canvas]').evaluate((c) => {
      const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      let yellow = 0, purple = 0;
      for (let i = 0; i < d.length; i += 4) {
        if (d[i + 3] < 40) continue;
        if (d[i] > 150 && d[i + 1] > 150 && d[i + 2] < 120) yellow++;
        if (d[i] > 40 && d[i] < 110 && d[i + 1] < 60 && d[i + 2] > 70) purple++;
      }
      return { yellow, purple };
    });
    assert.ok(colours.yellow > 20 && colours.purple > 20, JSON.stringify(colours));
    await shot('compare-01-parcoords');
  });

  test('brushing val_loss keeps exactly the runs in range in the table; a second brush (optimizer) ANDs', async () => {
    const panel = page.locator('[data-testid=parcoords]');
    // 0.38 .. 0.72 lie between values (0.2 + 0.07 k): the runs with 0.41 .. 0.69.
    await drag(await axisPoint('summary.val_loss', 0.72, VL_RANGE), await axisPoint('summary.val_loss', 0.38, VL_RANGE));
    const inRange = RUNS.filter((r) => r.val_loss >= 0.38 && r.val_loss <= 0.72).map((r) => r.name).sort();
    assert.equal(inRange.length, 5);
    await waitCount(5);
    assert.deepEqual(await tableNames(), inRange);
    const b = pcState().b['summary.val_loss'];
    assert.ok(b[0] > 0.34 && b[0] < 0.41 && b[1] > 0.69 && b[1] < 0.76, JSON.stringify(b));
    await panel.locator('[data-testid=pc-canvas][data-drawn="13:5:5"]').waitFor();
    assert.match(await panel.locator('[data-brush="summary.val_loss"]').textContent(), /^val_loss: 0\.3\d+ – 0\.7\d+/);

    // optimizer: categories adam < lamb < sgd, bottom to top; a drag over the bottom third: adam.
    const cat = async (u) => {
      const canvas = page.locator('[data-testid=pc-canvas]');
      const box = await settledBox(canvas);
      const [top, h] = (await canvas.getAttribute('data-plot')).split(',').map(Number);
      const label = await page.locator('.pc-axis[data-axis="config.optimizer"]').boundingBox();
      return { x: label.x + label.width / 2 + 3, y: box.y + top + (1 - u) * h };
    };
    await drag(await cat(0.02), await cat(0.28));
    await page.waitForFunction(() => JSON.parse(new URL(location.href).searchParams.get('pc')).b?.['config.optimizer']);
    assert.deepEqual(pcState().b['config.optimizer'], ['adam']);
    const both = RUNS.filter((r) => r.val_loss >= 0.38 && r.val_loss <= 0.72 && r.config.optimizer === 'adam').map((r) => r.name).sort();
    assert.ok(both.length >= 1 && both.length < inRange.length, `the seed gives the AND something to drop: ${both}`);
    await waitCount(both.length);
    assert.deepEqual(await tableNames(), both);
    assert.match(await panel.locator('[data-testid=pc-count]').textContent(), new RegExp(`${both.length} inside the brushes`));
    await shot('compare-02-brushed');
  });

  test('a reload restores the axes, the colour and both brushes (and the filtered table)', async () => {
    const before = pcState();
    const both = await tableNames();
    await page.reload();
    await waitCount(both.length);
    assert.deepEqual(await tableNames(), both);
    assert.deepEqual(pcState(), before);
    const panel = page.locator('[data-testid=parcoords]');
    await panel.locator(`[data-testid=pc-canvas][data-drawn="13:5:${both.length}"]`).waitFor();
    assert.deepEqual(await panel.locator('.pc-axis').evaluateAll((els) => els.map((e) => e.getAttribute('data-axis'))), before.a);
    assert.deepEqual(await panel.locator('[data-brush]').evaluateAll((els) => els.map((e) => e.getAttribute('data-brush')).sort()), ['config.optimizer', 'summary.val_loss']);
    assert.equal(await panel.locator('[data-testid=pc-legend-max]').textContent(), String(VL_RANGE[1]));
    // Clearing one brush: the val_loss range alone again; a click on the axis clears the other.
    await page.getByRole('button', { name: 'clear the brush on optimizer' }).click();
    await waitCount(5);
    const p = await axisPoint('summary.val_loss', 0.5, VL_RANGE);
    await page.mouse.click(p.x, p.y);
    await waitCount(13);
    assert.equal(pcState().b, undefined);
  });

  test('a brush that leaves no run says so and offers to clear it', async () => {
    const canvas = page.locator('[data-testid=pc-canvas]');
    // amp (false, true) and val_loss in [0.2, 0.25]: the one run with 0.2 has amp=true (r00).
    await drag(await axisPoint('summary.val_loss', 0.25, VL_RANGE), await axisPoint('summary.val_loss', 0.19, VL_RANGE));
    await waitCount(1);
    assert.deepEqual(await tableNames(), ['r00']);
    const box = await settledBox(canvas);
    const [top, h] = (await canvas.getAttribute('data-plot')).split(',').map(Number);
    const amp = await page.locator('.pc-axis[data-axis="config.amp"]').boundingBox();
    const x = amp.x + amp.width / 2;
    await drag({ x, y: box.y + top + h * 0.6 }, { x, y: box.y + top + h * 0.98 }); // the bottom half: false
    await page.waitForFunction(() => JSON.parse(new URL(location.href).searchParams.get('pc')).b?.['config.amp']);
    assert.deepEqual(pcState().b['config.amp'], ['false']);
    await waitCount(0);
    await page.getByRole('button', { name: 'Clear the brushes' }).click();
    await waitCount(13);
  });
});

describe('which runs', () => {
  test('"visible" leaves out the runs hidden with the eye; the filter narrows both panels and the table', async () => {
    const panel = page.locator('[data-testid=parcoords]');
    await page.getByRole('button', { name: 'hide r00 in charts' }).click();
    await page.getByLabel('parallel coordinates runs').selectOption('visible');
    await panel.locator('[data-testid=pc-canvas][data-drawn="12:5:12"]').waitFor();
    assert.match(await panel.locator('[data-testid=pc-count]').textContent(), /^12 runs/);
    assert.equal(pcState().s, 'visible');
    await page.getByLabel('parallel coordinates runs').selectOption('');
    await panel.locator('[data-testid=pc-canvas][data-drawn="13:5:13"]').waitFor();
    // A name search: the panel shows only the matching run.
    await page.getByLabel('search run names').fill('bare');
    await waitCount(1);
    await panel.locator('[data-testid=pc-canvas][data-drawn="1:5:1"]').waitFor();
    assert.match(await panel.locator('[data-testid=pc-count]').textContent(), /^1 run$/);
    await page.getByLabel('search run names').fill('');
    await waitCount(13);
    await panel.locator('[data-testid=pc-canvas][data-drawn="13:5:13"]').waitFor();
  });
});

describe('scatter', () => {
  test('x/y from the list, hover names the run, a click opens it', async () => {
    await page.getByRole('button', { name: '+ Scatter' }).click();
    const panel = page.locator('[data-testid=scatter]');
    await panel.waitFor();
    await pickField('scatter x', 'lr', 'config.lr');
    await pickField('scatter y', 'val_loss', 'summary.val_loss');
    await pickField('colour points by', 'batch', 'config.batch_size');
    const sc = JSON.parse(new URL(page.url()).searchParams.get('sc'));
    assert.deepEqual(sc, { x: 'config.lr', y: 'summary.val_loss', c: 'config.batch_size' });
    const canvas = panel.locator('[data-testid=sc-canvas]');
    // 12 points (the 13th run has no val_loss).
    await panel.locator('[data-testid=sc-canvas][data-drawn="13:12"]').waitFor();
    const box = await settledBox(canvas);
    const [left, top, right, h] = (await canvas.getAttribute('data-plot')).split(',').map(Number);
    const target = RUNS[5]; // lr 0.05
    const lx = Math.log10(Math.min(...LRS)), hx = Math.log10(Math.max(...LRS));
    const ux = (Math.log10(target.config.lr) - lx) / (hx - lx);
    const uy = (target.val_loss - VL_RANGE[0]) / (VL_RANGE[1] - VL_RANGE[0]);
    const at = { x: box.x + left + ux * (box.width - left - right), y: box.y + top + (1 - uy) * h };
    // Away from every point: no tooltip.
    await page.mouse.move(box.x + left + 3, box.y + top + 3);
    assert.equal(await panel.locator('[data-testid=sc-tip]').count(), 0);
    await page.mouse.move(at.x + 2, at.y - 1);
    const tip = panel.locator('[data-testid=sc-tip]');
    await tip.waitFor();
    assert.match(await tip.textContent(), new RegExp(`^${target.name}lr: 0\\.05val_loss: ${target.val_loss}batch_size: ${target.config.batch_size}`));
    await shot('compare-03-scatter');
    await page.mouse.click(at.x + 2, at.y - 1);
    await page.waitForFunction((id) => new URL(location.href).searchParams.get('run') === id, ids[target.name]);
    await page.locator('h1', { hasText: target.name }).waitFor();
    // Back: the panels are still there (their state is in the URL).
    await page.goBack();
    await page.locator('[data-testid=scatter] [data-testid=sc-canvas][data-drawn="13:12"]').waitFor();
  });

  test('a saved view keeps the panels: another view closes them, the saved one brings them back', async () => {
    const pc = pcState();
    const sc = new URL(page.url()).searchParams.get('sc');
    assert.ok(pc && sc, 'both panels are open');
    await page.getByRole('button', { name: 'Save as…' }).click();
    await page.getByLabel('name of the new view').fill('sweep layout');
    await page.keyboard.press('Enter');
    const select = page.getByTestId('view-select');
    await page.waitForFunction(() => [...document.querySelectorAll('[data-testid=view-select] option')].some((o) => o.textContent === 'sweep layout' && o.selected));
    assert.equal(await page.locator('.viewbar .modified').count(), 0);
    // One of the seed's views (saved without a layout): the panels close.
    await select.selectOption({ label: 'all nodes' });
    await page.locator('[data-testid=parcoords]').waitFor({ state: 'detached' });
    assert.equal(await page.locator('[data-testid=scatter]').count(), 0);
    assert.equal(pcState(), null);
    await select.selectOption({ label: 'sweep layout' });
    await page.locator('[data-testid=scatter] [data-testid=sc-canvas][data-drawn="13:12"]').waitFor();
    await page.locator('[data-testid=parcoords]').waitFor();
    assert.deepEqual(pcState(), pc);
    assert.equal(new URL(page.url()).searchParams.get('sc'), sc);
    // A change to the layout marks the view modified; saving it keeps the change.
    await pickField('scatter y', 'epoch', 'summary.epoch');
    await page.locator('.viewbar .modified').waitFor();
    await page.getByRole('button', { name: 'Save view' }).click();
    await page.locator('.viewbar .modified').waitFor({ state: 'detached' });
    await select.selectOption({ label: 'all nodes' });
    await page.locator('[data-testid=scatter]').waitFor({ state: 'detached' });
    await select.selectOption({ label: 'sweep layout' });
    await page.locator('[data-testid=scatter]').waitFor();
    assert.equal(JSON.parse(new URL(page.url()).searchParams.get('sc')).y, 'summary.epoch');
  });

  test('a save over a view someone else changed meanwhile is refused and says so', async () => {
    // Another person saves the view (by the API, as their browser would) after this page loaded it.
    const views = (await call('GET', `/api/v1/views/${entity}/${P}`)).views;
    const mine = views.find((v) => v.name === 'sweep layout');
    const theirs = { ...mine.spec, sort: 'name' };
    await call('PUT', `/api/v1/views/${entity}/${P}/${mine.id}`, { name: mine.name, spec: theirs, updated_ms: mine.updated_ms });
    await pickField('scatter y', 'val_loss', 'summary.val_loss');
    await page.locator('.viewbar .modified').waitFor();
    await page.getByRole('button', { name: 'Save view' }).click();
    const error = page.locator('.viewbar [role=alert]');
    await error.waitFor();
    assert.match(await error.textContent(), /409.*changed by another edit/s);
    // Their change is kept, not overwritten by this page's.
    const after = (await call('GET', `/api/v1/views/${entity}/${P}`)).views.find((v) => v.id === mine.id);
    assert.deepEqual(after.spec, theirs);
  });

  test('no page errors', () => {
    assert.deepEqual(pageErrors, []);
  });
});
