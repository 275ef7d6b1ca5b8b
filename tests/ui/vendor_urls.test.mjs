// Browser tests of W&B's page URLs: a W&B client pointed at Cohort (WANDB_BASE_URL) prints "View
// run at URL/ENTITY/PROJECT/runs/ID" and "View project at URL/ENTITY/PROJECT"; the server answers
// index.html for those paths, and the UI opens the same screen its own query parameters name,
// with its own URL in the address bar (reload and Back work). Another entity's project is "No
// such project"; an unknown path is the projects list. A real `cohort server` (port 0) seeded
// through the HTTP API, driven through Debian's Chromium.
//
//   node --test --test-concurrency=1 tests/ui/vendor_urls.test.mjs
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { api, launchBrowser, openSignedInPage, ROOT, startServer } from './harness.mjs';

const SHOTS = path.join(ROOT, 'artifacts/ui');
const P = 'wb-links';
let server, browser, page, entity;
const ids = {};
const pageErrors = [];
const call = (method, p, body) => api(server, method, p, body);
const T0 = Date.now() - 600_000;

async function makeRun(name, group) {
  const r = await call('POST', `/api/v1/runs/${entity}/${P}`, { name, group, job_type: 'train', config: { lr: 0.01 } });
  const w = `/api/v1/runs/${entity}/${P}/${r.id}/writers`;
  await call('POST', w, { label: 'rank_0', primary: true, update_finish_state: true });
  const history = [];
  for (let s = 0; s < 20; s++) history.push({ step: s, time: T0 + s * 1000, values: { loss: 1 / (1 + s) } });
  await call('POST', `${w}/rank_0/batches`, { seq: 1, history });
  await call('POST', `${w}/rank_0/finish`, { exit_code: 0 });
  return r.id;
}

/** The app's own address of the page shown: its query parameters. */
const query = () => Object.fromEntries(new URL(page.url()).searchParams);
const pathname = () => new URL(page.url()).pathname;
const runHeading = (name) => page.locator('.run-page .run-head h1').filter({ hasText: name });

before(async () => {
  mkdirSync(SHOTS, { recursive: true });
  server = await startServer();
  entity = (await call('GET', '/api/v1/viewer')).entity;
  ids.linked = await makeRun('linked-run', 'sweep-a');
  ids.other = await makeRun('other-run', 'sweep-a');
  ({ browser, page } = await openSignedInPage(server, pageErrors));
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

describe('W&B page URLs', () => {
  test('"View run at URL/ENTITY/PROJECT/runs/ID" opens that run; the address becomes the UI\'s; reload and Back work', async () => {
    await page.goto(`${server.url}/`);
    await page.getByRole('link', { name: P }).waitFor();
    await page.goto(`${server.url}/${entity}/${P}/runs/${ids.linked}`);
    await runHeading('linked-run').waitFor();
    assert.equal(await page.locator('.run-head dd.mono').textContent(), ids.linked);
    assert.equal(await page.getByRole('tab', { name: 'Overview' }).getAttribute('aria-selected'), 'true');
    assert.equal(pathname(), '/');
    assert.deepEqual(query(), { p: `${entity}/${P}`, run: ids.linked });
    await page.screenshot({ path: path.join(SHOTS, '90-vendor-run-url.png'), fullPage: true });

    await page.reload();
    await runHeading('linked-run').waitFor();
    assert.deepEqual(query(), { p: `${entity}/${P}`, run: ids.linked });

    // Into the workspace by the breadcrumb, then Back: the run again (the vendor path's history
    // entry was replaced by the UI's address, not left behind it).
    await page.locator('nav.crumbs').getByRole('link', { name: P }).click();
    await page.locator('[data-testid=runs-table] tr[data-name=other-run]').waitFor();
    await page.goBack();
    await runHeading('linked-run').waitFor();
    assert.deepEqual(query(), { p: `${entity}/${P}`, run: ids.linked });
    await page.goBack();
    await page.waitForURL(`${server.url}/`);
    await page.getByRole('link', { name: P }).waitFor();
  });

  test('a run tab, the project, its workspace and a group', async () => {
    await page.goto(`${server.url}/${entity}/${P}/runs/${ids.other}/logs`);
    await runHeading('other-run').waitFor();
    assert.equal(await page.getByRole('tab', { name: 'Logs' }).getAttribute('aria-selected'), 'true');
    assert.deepEqual(query(), { p: `${entity}/${P}`, run: ids.other, tab: 'logs' });

    for (const suffix of ['', '/workspace', '/table']) {
      await page.goto(`${server.url}/${entity}/${P}${suffix}`);
      await page.locator('[data-testid=runs-table] tr[data-name=linked-run]').waitFor();
      assert.equal(pathname(), '/', suffix);
      assert.deepEqual(query(), { p: `${entity}/${P}` }, suffix);
    }

    await page.goto(`${server.url}/${entity}/${P}/groups/sweep-a`);
    await page.getByTestId('group-count').filter({ hasText: '2 runs' }).waitFor();
    assert.match(await page.locator('.group-page h1').textContent(), /Group sweep-a/);
    assert.deepEqual(query(), { p: `${entity}/${P}`, group: 'sweep-a' });
  });

  test('another entity\'s project is "No such project"; an unknown path is the projects list', async () => {
    await page.goto(`${server.url}/someone-else/${P}/runs/${ids.linked}`);
    const missing = page.getByTestId('no-such-project');
    await missing.waitFor();
    assert.match(await missing.textContent(), new RegExp(`No such project: someone-else/${P}`));
    assert.deepEqual(query(), { p: `someone-else/${P}`, run: ids.linked });
    assert.equal(await page.locator('.run-page').count(), 0);

    await page.goto(`${server.url}/${entity}/${P}/sweeps/abc123`);
    await page.getByRole('link', { name: P }).waitFor();
    assert.equal(pathname(), `/${entity}/${P}/sweeps/abc123`, 'an unknown path is left as it is');
    // From there the app's links work as anywhere.
    await page.getByRole('link', { name: P }).click();
    await page.locator('[data-testid=runs-table] tr[data-name=linked-run]').waitFor();
    assert.deepEqual(query(), { p: `${entity}/${P}` });
  });

  test('a browser not signed in yet: the sign-in form, then the run the link named', async () => {
    const b = await launchBrowser();
    try {
      const p2 = await (await b.newContext({ viewport: { width: 1400, height: 900 } })).newPage();
      p2.on('pageerror', (e) => pageErrors.push(e.message));
      await p2.goto(`${server.url}/${entity}/${P}/runs/${ids.linked}`);
      await p2.getByLabel('API key').fill(server.key);
      assert.equal(new URL(p2.url()).searchParams.get('run'), ids.linked, 'the address is the UI\'s already');
      await p2.getByRole('button', { name: 'Sign in' }).click();
      await p2.locator('.run-page .run-head h1').filter({ hasText: 'linked-run' }).waitFor();
    } finally {
      await b.close();
    }
  });

  test('no uncaught error in the page', () => {
    assert.deepEqual(pageErrors, []);
  });
});
