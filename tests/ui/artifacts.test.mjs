// Browser tests of the artifacts UI: a real `cohort server` (port 0), artifacts seeded through the
// HTTP API (tests/ui/seed_artifacts.mjs: blobs uploaded in parts and completed, a version logged
// by one run, used by another), checked in Debian's Chromium: the run's Artifacts tab, the
// artifact page (versions, aliases, files, metadata, lineage), a download with the browser's
// key, and the project's collections in the workspace sidebar.
//
//   node --test tests/ui/artifacts.test.mjs        (scripts/test-ui.sh runs it)
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { api, openLoggedIn, ROOT, startServer } from './harness.mjs';
import { seedArtifacts } from './seed_artifacts.mjs';

const SHOTS = path.join(ROOT, 'artifacts/ui');
const PROJECT = 'art-demo';
const NAME = 'mnist-model';
let server, browser, page, entity, seeded;
const pageErrors = [];
const shot = (name) => page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
const href = (q) => `${server.url}/?p=${entity}/${PROJECT}${q}`;
const attrs = (loc, name) => loc.evaluateAll((els, n) => els.map((e) => e.getAttribute(n)), name);

before(async () => {
  mkdirSync(SHOTS, { recursive: true });
  server = await startServer();
  entity = (await api(server, 'GET', '/api/v1/viewer')).entity;
  seeded = await seedArtifacts(server, entity, PROJECT, NAME);
  ({ browser, page } = await openLoggedIn(server, PROJECT, pageErrors, { acceptDownloads: true }));
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

describe('artifacts in the web UI', () => {
  test("the run's Artifacts tab lists what it logged and what it used, with the direction", async () => {
    await page.goto(href(`&run=${seeded.producer}&tab=artifacts`));
    const out = page.getByTestId('run-artifacts-output');
    await out.locator('tr[data-artifact]').first().waitFor();
    assert.deepEqual(await attrs(out.locator('tr[data-artifact]'), 'data-artifact'), [`${NAME}:v0`, `${NAME}:v1`]);
    assert.deepEqual(await attrs(out.locator('tr[data-artifact]'), 'data-direction'), ['output', 'output']);
    const v0 = out.locator(`tr[data-artifact="${NAME}:v0"]`);
    assert.deepEqual(await attrs(v0.locator('[data-alias]'), 'data-alias'), ['best']);
    assert.equal((await v0.locator('td').nth(4).textContent()).trim(), '3.0 kB');
    assert.match(await page.getByTestId('run-artifacts-input').textContent(), /None\./);
    assert.equal(await page.getByRole('tab', { name: 'Artifacts' }).getAttribute('aria-selected'), 'true');
    await shot('art-01-run-tab-output');

    await page.goto(href(`&run=${seeded.consumer}&tab=artifacts`));
    const inp = page.getByTestId('run-artifacts-input');
    await inp.locator('tr[data-artifact]').first().waitFor();
    assert.deepEqual(await attrs(inp.locator('tr[data-artifact]'), 'data-artifact'), [`${NAME}:v0`]);
    assert.deepEqual(await attrs(inp.locator('tr[data-artifact]'), 'data-direction'), ['input']);
    assert.match(await page.getByTestId('run-artifacts-output').textContent(), /None\./);
    await shot('art-02-run-tab-input');
    // The tab is reached from the keyboard like the others (the one before the last, Alerts:
    // End, then one back).
    await page.getByRole('tab', { name: 'Overview' }).click();
    await page.getByRole('tab', { name: 'Overview' }).focus();
    await page.keyboard.press('End');
    await page.waitForURL(/tab=alerts/);
    await page.keyboard.press('ArrowLeft');
    await page.waitForURL(/tab=artifacts/);
    await inp.locator('tr[data-artifact]').first().waitFor();
  });

  test('clicking a version opens the artifact page: versions with aliases, files, metadata, lineage of both runs', async () => {
    await page.goto(href(`&run=${seeded.consumer}&tab=artifacts`));
    await page.getByRole('link', { name: `${NAME}:v0` }).click();
    await page.getByTestId('artifact-page').waitFor();
    const url = new URL(page.url());
    assert.equal(url.searchParams.get('art'), NAME);
    assert.equal(url.searchParams.get('ver'), 'v0');
    assert.equal(url.searchParams.get('run'), null, 'the run is left behind');
    assert.equal((await page.getByTestId('artifact-version').textContent()).trim(), ':v0');
    // Versions, newest first, each with its aliases and producing run; the shown one marked.
    const rows = page.locator('[data-testid=artifact-versions] tr[data-version]');
    await rows.first().waitFor();
    assert.deepEqual(await attrs(rows, 'data-version'), ['v1', 'v0']);
    assert.deepEqual(await attrs(rows.nth(0).locator('[data-alias]'), 'data-alias'), ['latest']);
    assert.deepEqual(await attrs(rows.nth(1).locator('[data-alias]'), 'data-alias'), ['best']);
    assert.equal(await rows.nth(1).getAttribute('aria-current'), 'true');
    // The producing run, by name once looked up, linked by id.
    assert.equal(await rows.nth(1).locator('td[data-run]').getAttribute('data-run'), seeded.producer);
    await rows.nth(1).locator('td[data-run]').getByRole('link', { name: 'producer' }).waitFor();
    await page.getByTestId('artifact-logged-by').getByRole('link', { name: 'producer' }).waitFor();
    // Files (sorted by path) with sizes; description; metadata as key/value rows.
    const files = page.getByTestId('artifact-files');
    assert.deepEqual(await attrs(files.locator('tr[data-file]'), 'data-file'), ['config/params.json', 'model.bin']);
    assert.deepEqual(await attrs(files.locator('tr[data-file] td[data-size]'), 'data-size'), [String(seeded.params.length), '3000']);
    assert.equal((await page.getByTestId('artifact-description').textContent()).trim(), 'epoch 3 checkpoint');
    const meta = page.getByTestId('artifact-metadata');
    assert.deepEqual(await attrs(meta.locator('tr[data-key]'), 'data-key'), ['accuracy', 'epoch', 'optimizer.betas', 'optimizer.name']);
    assert.equal((await meta.locator('tr[data-key="optimizer.name"] td').textContent()).trim(), 'adam');
    assert.equal((await meta.locator('tr[data-key="epoch"] td').textContent()).trim(), '3');
    // Values in full, not rounded to 5 significant digits (0.98123).
    assert.equal((await meta.locator('tr[data-key="accuracy"] td').textContent()).trim(), '0.9812345');
    // Lineage: producer -> v0 -> consumer, run names looked up, each a link to its run.
    const lineage = page.getByTestId('lineage');
    const producer = lineage.locator('[data-role=producer]');
    const consumer = lineage.locator('[data-role=consumer]');
    assert.equal(await producer.getAttribute('data-run'), seeded.producer);
    assert.deepEqual(await attrs(consumer, 'data-run'), [seeded.consumer]);
    await producer.getByRole('link', { name: 'producer' }).waitFor();
    await consumer.getByRole('link', { name: 'consumer' }).waitFor();
    assert.match(await lineage.locator('[data-role=version]').textContent(), new RegExp(`${NAME}:v0`));
    await shot('art-03-artifact-page');
    // The consumer box leads to the consumer's run page.
    await consumer.getByRole('link', { name: 'consumer' }).click();
    await page.waitForFunction((id) => new URL(location.href).searchParams.get('run') === id && !new URL(location.href).searchParams.get('art'), seeded.consumer);
    await page.locator('.run-head h1').filter({ hasText: 'consumer' }).waitFor();
  });

  test('another version is one click away; the latest is shown without a version in the URL', async () => {
    await page.goto(href(`&art=${NAME}`));
    await page.getByTestId('artifact-version').filter({ hasText: ':v1' }).waitFor();
    assert.deepEqual(await attrs(page.locator('[data-testid=artifact-files] tr[data-file]'), 'data-file'), ['NOTES.txt', 'config/params.json', 'model.bin']);
    assert.match(await page.getByTestId('lineage').textContent(), /no run has used it/);
    assert.match(await page.getByTestId('artifact-metadata').textContent(), /No metadata\./);
    await page.locator('[data-testid=artifact-versions] tr[data-version=v0]').getByRole('link', { name: 'v0' }).click();
    await page.getByTestId('artifact-version').filter({ hasText: ':v0' }).waitFor();
    assert.equal(new URL(page.url()).searchParams.get('ver'), 'v0');
    await page.goBack();
    await page.getByTestId('artifact-version').filter({ hasText: ':v1' }).waitFor();
  });

  test("a file downloads with the browser's key, byte for byte; the `cohort artifact get` command is shown", async () => {
    await page.goto(href(`&art=${NAME}&ver=v0`));
    const row = page.locator('[data-testid=artifact-files] tr[data-file="model.bin"]');
    await row.waitFor();
    const [download] = await Promise.all([page.waitForEvent('download'), row.getByRole('link', { name: 'model.bin' }).click()]);
    assert.equal(download.suggestedFilename(), 'model.bin');
    assert.ok(readFileSync(await download.path()).equals(seeded.model), 'the downloaded bytes are the uploaded ones');
    const nested = page.locator('[data-testid=artifact-files] tr[data-file="config/params.json"]');
    const [d2] = await Promise.all([page.waitForEvent('download'), nested.getByRole('link', { name: 'config/params.json' }).click()]);
    assert.equal(d2.suggestedFilename(), 'params.json');
    assert.ok(readFileSync(await d2.path()).equals(seeded.params));
    assert.equal((await page.getByTestId('artifact-get-command').textContent()).trim(), `cohort artifact get ${entity}/${PROJECT}/${NAME}:v0`);
  });

  test("the workspace sidebar lists the project's artifacts and leads to their page", async () => {
    await page.goto(href(''));
    const item = page.locator(`[data-testid=artifact-collections] li[data-collection="${NAME}"]`);
    await item.waitFor();
    assert.equal((await item.locator('.count').textContent()).trim(), '2 versions');
    await shot('art-04-workspace-sidebar');
    await item.getByRole('link', { name: NAME }).click();
    await page.getByTestId('artifact-version').filter({ hasText: ':v1' }).waitFor();
    // The breadcrumb leads back to the project.
    await page.locator('.crumbs').getByRole('link', { name: PROJECT }).click();
    await item.waitFor();
    assert.equal(new URL(page.url()).searchParams.get('art'), null);
  });

  test('an unknown artifact shows the server\'s error', async () => {
    await page.goto(href('&art=no-such-thing'));
    const err = page.locator('[data-testid=artifact-page] .error').first();
    await err.waitFor();
    assert.match(await err.textContent(), /404/);
  });

  test('no uncaught error in the page', () => {
    assert.deepEqual(pageErrors, []);
  });
});
