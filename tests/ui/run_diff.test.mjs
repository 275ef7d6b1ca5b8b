// Browser tests of the run diff page and the parameter importance panel (issue 17): runs picked
// in the workspace's table open a comparison (?cmp=a,b,c) whose config and summary rows are
// aligned and highlighted where they differ, "only differences" hides the equal rows, a reload
// restores the page, every run's curve is drawn; the importance panel ranks the config field that
// drives the metric (through a non-linear effect its correlation misses) on top. A real
// `cohort server` (port 0) seeded through the HTTP API, driven through Debian's Chromium.
//
//   node --test --test-concurrency=1 tests/ui/run_diff.test.mjs
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { api, ROOT, startServer, openSignedInPage } from './harness.mjs';

const SHOTS = path.join(ROOT, 'artifacts/ui');
const P = 'diffproj';
const IMP = 'impproj';
let server, browser, page, entity;
const ids = {};
const pageErrors = [];
const shot = (name) => page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
const call = (method, p, body) => api(server, method, p, body);
const T0 = Date.now() - 3_600_000;

async function makeRun(project, run, summary, history) {
  const r = await call('POST', `/api/v1/runs/${entity}/${project}`, run);
  if (summary) await call('PATCH', `/api/v1/runs/${entity}/${project}/${r.id}`, { summary });
  if (history) {
    await call('POST', `/api/v1/runs/${entity}/${project}/${r.id}/writers`, { label: 'rank_0', primary: true, update_finish_state: true });
    await call('POST', `/api/v1/runs/${entity}/${project}/${r.id}/writers/rank_0/batches`, { seq: 1, history });
    await call('POST', `/api/v1/runs/${entity}/${project}/${r.id}/writers/rank_0/finish`, { exit_code: 0 });
  }
  return r.id;
}

async function seed() {
  // Three runs whose configs differ in lr, batch_size and a nested key, agree on the rest, and
  // one key only the first has.
  const runs = [
    ['alpha', { lr: 0.1, batch_size: 32, model: 'resnet', optim: { name: 'adam', betas: [0.9, 0.999], warmup: 100 }, extra: 'only-alpha' }],
    ['beta', { lr: 0.01, batch_size: 32, model: 'resnet', optim: { name: 'adam', betas: [0.9, 0.999], warmup: 500 } }],
    ['gamma', { lr: 0.01, batch_size: 64, model: 'resnet', optim: { name: 'adam', betas: [0.9, 0.999], warmup: 100 } }],
  ];
  for (const [i, [name, config]] of runs.entries()) {
    const history = [];
    for (let s = 0; s < 50; s++) history.push({ step: s, time: T0 + s * 1000, values: { 'train/loss': (i + 1) / (1 + s * config.lr), 'val/acc': 0.5 + s / 200 + i / 10 } });
    ids[name] = await makeRun(P, { name, job_type: 'train', config }, { loss: 0.1 * (i + 1), epochs: 3 }, history);
  }
  // 60 runs where score = 4 (x1 - 0.5)^2 + noise: x1 matters (a U shape, correlation ~0), x2,
  // flag and opt do not.
  let a = 12345;
  const rand = () => { a = (a * 1103515245 + 12345) % 2147483648; return a / 2147483648; };
  const jobs = [];
  for (let i = 0; i < 60; i++) {
    const x1 = (i + 0.5) / 60, x2 = rand();
    jobs.push(makeRun(IMP, { name: `imp-${i}`, config: { x1, x2, flag: i % 2 === 0, opt: ['adam', 'sgd', 'lion'][i % 3] } },
      { score: 4 * (x1 - 0.5) ** 2 + 0.02 * (rand() - 0.5) }));
    if (jobs.length >= 8) await Promise.all(jobs.splice(0));
  }
  await Promise.all(jobs);
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

const row = (table, key) => page.locator(`[data-testid=${table}] tr[data-key="${key}"]`);
async function differs(table, key) {
  const r = row(table, key);
  await r.waitFor();
  return (await r.getAttribute('class')).split(' ').includes('differs');
}

describe('run diff', () => {
  test('pick 3 runs in the table, Compare: differing rows highlighted, equal ones not; missing values shown', async () => {
    await page.goto(`${server.url}/?p=${entity}/${P}`);
    await page.locator('[data-testid=runs-table] tr[data-name=gamma]').waitFor();
    assert.equal(await page.getByTestId('compare-bar').count(), 0, 'no bar before a pick');
    await page.getByLabel('select alpha to compare').check();
    await page.getByTestId('compare-bar').filter({ hasText: '1 run selected' }).waitFor();
    assert.equal(await page.getByTestId('compare-link').count(), 0, 'one run: nothing to compare yet');
    await page.getByLabel('select beta to compare').check();
    // From the keyboard: x on a focused row picks it.
    await page.locator('[data-testid=runs-table] tr[data-name=gamma]').focus();
    await page.keyboard.press('x');
    assert.ok(await page.getByLabel('select gamma to compare').isChecked());
    await page.getByTestId('compare-bar').filter({ hasText: '3 runs selected' }).waitFor();
    await page.getByTestId('compare-link').click();
    await page.getByTestId('compare-page').waitFor();
    assert.deepEqual(new URL(page.url()).searchParams.get('cmp').split(','), [ids.alpha, ids.beta, ids.gamma]);

    for (const k of ['lr', 'batch_size', 'optim.warmup', 'extra']) assert.ok(await differs('diff-config', k), `${k} differs`);
    for (const k of ['model', 'optim.name', 'optim.betas']) assert.ok(!(await differs('diff-config', k)), `${k} is the same`);
    assert.ok(await differs('diff-summary', 'loss'));
    assert.ok(!(await differs('diff-summary', 'epochs')));
    // Aligned: one column per run, in the order picked; a key a run lacks is a dash.
    const cells = await row('diff-config', 'lr').locator('td').allTextContents();
    assert.deepEqual(cells.map((c) => c.trim()), ['0.1', '0.01', '0.01']);
    const extra = await row('diff-config', 'extra').locator('td').allTextContents();
    assert.deepEqual(extra.map((c) => c.trim()), ['only-alpha', '—', '—']);
    // The highlight is visible: differing rows have another background than equal ones.
    const bg = (k) => row('diff-config', k).evaluate((el) => getComputedStyle(el).backgroundColor);
    assert.notEqual(await bg('lr'), await bg('model'));
    await shot('61-run-diff');
  });

  test('"only differences" hides the equal rows; a reload restores the page', async () => {
    await page.getByTestId('only-diff').check();
    await row('diff-config', 'model').waitFor({ state: 'detached' });
    assert.equal(new URL(page.url()).searchParams.get('cd'), '1');
    const keys = await page.locator('[data-testid=diff-config] tbody tr').evaluateAll((els) => els.map((e) => e.dataset.key));
    assert.deepEqual(keys, ['batch_size', 'extra', 'lr', 'optim.warmup']);
    // The summary: loss set by hand, the last values of the logged metrics (all differ); epochs is the same.
    const summary = await page.locator('[data-testid=diff-summary] tbody tr').evaluateAll((els) => els.map((e) => e.dataset.key));
    assert.ok(summary.includes('loss') && !summary.includes('epochs'), JSON.stringify(summary));

    await page.reload();
    await page.getByTestId('compare-page').waitFor();
    await row('diff-config', 'lr').waitFor();
    assert.ok(await page.getByTestId('only-diff').isChecked());
    assert.equal(await row('diff-config', 'model').count(), 0);
    assert.deepEqual(await page.locator('[data-testid=diff-config] tbody tr').evaluateAll((els) => els.map((e) => e.dataset.key)),
      ['batch_size', 'extra', 'lr', 'optim.warmup']);
    await page.getByTestId('only-diff').uncheck();
    await row('diff-config', 'model').waitFor();
  });

  test('the curves of every run are overlaid; the metrics shown are picked and kept in the URL', async () => {
    for (const key of ['train/loss', 'val/acc']) {
      const p = page.locator(`section.panel[data-chart="${key}"]`);
      await p.scrollIntoViewIfNeeded();
      await p.locator('canvas').first().waitFor({ timeout: 15000 });
      await p.locator('[data-testid=panel-meta]').filter({ hasText: /points/ }).waitFor({ timeout: 15000 });
      const legend = await p.locator('.legend-item').evaluateAll((els) => els.map((e) => e.dataset.series));
      assert.deepEqual(legend, ['alpha', 'beta', 'gamma'], `${key}: one line per run`);
      assert.match(await p.locator('[data-testid=panel-meta]').textContent(), /^150 raw points/);
    }
    await page.locator('.curve-keys button[data-key="train/loss"]').click();
    await page.locator('section.panel[data-chart="train/loss"]').waitFor({ state: 'detached' });
    assert.equal(new URL(page.url()).searchParams.get('ck'), 'val/acc');
    assert.ok(await page.locator('.curve-keys button[data-key="val/acc"]').isDisabled(), 'the last curve stays');
    await page.reload();
    await page.locator('section.panel[data-chart="val/acc"]').waitFor();
    assert.equal(await page.locator('section.panel[data-chart="train/loss"]').count(), 0);
    await shot('62-run-diff-curves');
  });

  test('a run of the comparison links to its page, and the crumb back to the workspace drops the comparison', async () => {
    await page.locator(`[data-testid=compare-runs] [data-run="${ids.beta}"] a`).click();
    await page.waitForFunction((id) => new URL(location.href).searchParams.get('run') === id, ids.beta);
    assert.equal(new URL(page.url()).searchParams.get('cmp'), null);
    await page.goBack();
    await page.getByTestId('compare-page').waitFor();
    await page.locator('.crumbs a', { hasText: P }).click();
    await page.locator('[data-testid=runs-table]').waitFor();
    assert.equal(new URL(page.url()).searchParams.get('cmp'), null);
  });
});

describe('parameter importance', () => {
  test('the informative parameter (a U-shaped effect) is on top; correlation misses it; kept in the URL', async () => {
    await page.goto(`${server.url}/?p=${entity}/${IMP}`);
    await page.locator('[data-testid=runs-table] tr[data-name]').first().waitFor();
    const panel = page.getByTestId('importance');
    await panel.scrollIntoViewIfNeeded();
    await panel.getByLabel('importance metric').selectOption('score');
    const table = panel.getByTestId('importance-table');
    await table.waitFor({ timeout: 20000 });
    const rows = await table.locator('tbody tr').evaluateAll((els) => els.map((e) => [e.dataset.key, Number(e.dataset.importance)]));
    assert.deepEqual(rows.map((r) => r[0]).sort(), ['flag', 'opt', 'x1', 'x2']);
    assert.equal(rows[0][0], 'x1', JSON.stringify(rows));
    assert.ok(rows[0][1] > 5 * Math.max(...rows.slice(1).map((r) => r[1]), 0.01), JSON.stringify(rows));
    // Its correlation is about 0 (the effect is symmetric): the forest sees what Pearson does not.
    const corr = await table.locator('tr[data-key=x1] td.bar-cell').first().textContent();
    assert.ok(Math.abs(Number(corr.trim())) < 0.2, `correlation of x1: ${corr}`);
    assert.match(await table.locator('tr[data-key=opt] td.bar-cell').first().textContent(), /η/);
    assert.match(await panel.getByTestId('importance-meta').textContent(), /60 of 60 filtered runs have score/);
    assert.equal(new URL(page.url()).searchParams.get('imp'), 'score');
    await panel.screenshot({ path: path.join(SHOTS, '63-param-importance.png') });
    await page.reload();
    await page.getByTestId('importance-table').locator('tbody tr').first().waitFor({ timeout: 20000 });
    assert.equal(await page.getByTestId('importance-table').locator('tbody tr').first().getAttribute('data-key'), 'x1');
  });

  test('the filters choose the runs: too few runs say so', async () => {
    // 11 runs (imp-5, imp-50..59): computed over those.
    await page.goto(`${server.url}/?p=${entity}/${IMP}&imp=score&q=imp-5`);
    await page.getByTestId('importance-meta').filter({ hasText: /11 of 11 filtered runs have score/ }).waitFor({ timeout: 20000 });
    await page.getByTestId('importance-table').waitFor();
    // One run: too few.
    await page.getByLabel('search run names').fill('imp-59');
    const msg = page.getByTestId('importance-message');
    await msg.waitFor({ timeout: 20000 });
    assert.match(await msg.textContent(), /^1 run with score: at least 8 are needed/);
  });
});

test('no uncaught error in the page during the whole session', () => {
  assert.deepEqual(pageErrors, []);
});
