// Browser tests of pages that show part of what there is, or data that may be stale: they say so
// and never show one thing's data under another's name. The group page charts every run of a
// group of more than 200 (the server's runs-per-request cap) and says when a group has more runs
// than it loads; the workspace says how many of its metric charts it draws. A real `cohort server`
// (port 0) seeded through the HTTP API, some answers rewritten with page.route, driven through
// Debian's Chromium by playwright-core.
//
//   node --test tests/ui/partial_views.test.mjs        (scripts/test-ui.sh runs it)
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { api, ROOT, startServer, openSignedInPage } from './harness.mjs';

const SHOTS = path.join(ROOT, 'artifacts/ui');
const P = 'partial';
const GROUP = 'big';
const GROUP_RUNS = 205;
let server, browser, page, entity, mediaRun;
const pageErrors = [];
const href = (q) => `${server.url}/?p=${entity}/${P}${q}`;
const call = (method, p, body) => api(server, method, p, body);

async function makeRun(run, history) {
  const r = await call('POST', `/api/v1/runs/${entity}/${P}`, run);
  await call('POST', `/api/v1/runs/${entity}/${P}/${r.id}/writers`, { label: 'rank_0', primary: true, update_finish_state: true });
  await call('POST', `/api/v1/runs/${entity}/${P}/${r.id}/writers/rank_0/batches`, { seq: 1, history });
  await call('POST', `/api/v1/runs/${entity}/${P}/${r.id}/writers/rank_0/finish`, { exit_code: 0 });
  return r.id;
}

async function seed() {
  // A group of 205 runs, each logging `loss` at steps 0 and 1 (410 points in all).
  const T0 = Date.now() - 600_000;
  for (let i = 0; i < GROUP_RUNS; i += 25) {
    await Promise.all(Array.from({ length: Math.min(25, GROUP_RUNS - i) }, (_, j) => makeRun(
      { name: `rank${i + j}`, group: GROUP, job_type: 'train' },
      [0, 1].map((s) => ({ step: s, time: T0 + s * 1000, values: { loss: 1 / (i + j + s + 1) } })),
    )));
  }
}

// A run whose media rows name blobs never uploaded (each shows its caption and "uploading…"):
// images under `a`, `b`, and under `x,y`, `x` and `y` (`x,y` is named `x\,y` in `keys=`: not `x`
// and `y`).
const MEDIA_KEYS = ['a', 'b', 'x,y', 'x', 'y'];
async function seedMedia() {
  const r = await call('POST', `/api/v1/runs/${entity}/${P}`, { name: 'pictures' });
  await call('POST', `/api/v1/runs/${entity}/${P}/${r.id}/writers`, { label: 'rank_0', primary: true, update_finish_state: true });
  const media = MEDIA_KEYS.flatMap((key, k) => [0, 1].map((step) => ({
    key, step, time: Date.now(), type: 'image', index: 0, sha256: String(k * 2 + step).padStart(64, '0'), size: 10,
    mime: 'image/png', width: 4, height: 4, caption: `${key} at ${step}`,
  })));
  await call('POST', `/api/v1/runs/${entity}/${P}/${r.id}/writers/rank_0/batches`, { seq: 1, media });
  await call('POST', `/api/v1/runs/${entity}/${P}/${r.id}/writers/rank_0/finish`, { exit_code: 0 });
  return r.id;
}

function panel(title) {
  return page.locator(`section.panel[data-chart="${title}"]`);
}

before(async () => {
  mkdirSync(SHOTS, { recursive: true });
  server = await startServer();
  entity = (await call('GET', '/api/v1/viewer')).entity;
  await seed();
  // A run of 65 metrics (more than the workspace charts at first).
  await makeRun({ name: 'wide' }, [{ step: 0, time: Date.now(), values: Object.fromEntries(
    Array.from({ length: 65 }, (_, i) => [`m${String(i).padStart(2, '0')}`, i])) }]);
  mediaRun = await seedMedia();
  ({ browser, page } = await openSignedInPage(server, pageErrors));
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

describe('group page of more runs than one request carries', () => {
  test('the loss chart has a line for each of the 205 runs, and the mean is of 205 processes', async () => {
    await page.goto(href(`&group=${GROUP}&agg=1`));
    assert.equal(await page.locator('h1 .muted').textContent(), '205 runs');
    const p = panel('loss');
    await p.scrollIntoViewIfNeeded({ timeout: 15000 });
    await p.locator('[data-testid=panel-meta]').filter({ hasText: /points/ }).waitFor({ timeout: 15000 });
    // Two steps of each of the 205 runs; the legend: 6 shown, then the rest of 205 lines + the mean.
    assert.match(await p.locator('[data-testid=panel-meta]').textContent(), /^410 /);
    assert.equal(await p.locator('.legend-more').textContent(), `+${GROUP_RUNS + 1 - 6} more`);
    await p.locator('.legend-more').click();
    assert.equal(await p.locator('.legend-item').count(), GROUP_RUNS + 1);
    assert.equal(await p.locator('.legend-item.emph .legend-label').textContent(), `mean of ${GROUP_RUNS} processes`);
    assert.equal(await page.getByTestId('group-limit').count(), 0, 'no "first N of M" notice when every run is loaded');
    await page.screenshot({ path: path.join(SHOTS, 'group-205-runs.png') });
    assert.deepEqual(pageErrors, []);
  });

  test('a group of more runs than the page loads says it shows the first of them', async () => {
    // The server's total says 6,000 runs while the pages end after 205: the page loads what it can
    // and says how many of the group's runs it shows.
    await page.route((url) => url.pathname === `/api/v1/runs/${entity}/${P}` && url.searchParams.has('filters'), async (route) => {
      const resp = await route.fetch();
      const body = await resp.json();
      await route.fulfill({ response: resp, json: { ...body, total: 6000 } });
    });
    try {
      await page.goto(href(`&group=${GROUP}`));
      const notice = page.getByTestId('group-limit');
      await notice.waitFor();
      assert.match(await notice.textContent(), /first 205 of 6,000 runs/);
      assert.equal(await page.getByTestId('group-count').textContent(), '6,000 runs');
    } finally {
      await page.unrouteAll({ behavior: 'wait' });
    }
  });
});

describe('media views', () => {
  const captions = () => page.locator('[data-testid="media-key"] figcaption').allTextContents();
  const isMediaOf = (key) => (url) => url.pathname.endsWith(`/${mediaRun}/media`) && url.searchParams.get('keys') === key;
  const openTab = async () => {
    await page.goto(href(`&run=${mediaRun}&tab=media`));
    await page.locator('[data-testid="media-key"][data-key="a"] figcaption').first().waitFor();
  };

  test("another key's images never show while a key loads, nor when it fails (its error shows)", async () => {
    await openTab();
    assert.deepEqual(await captions(), ['a at 1']);
    // b's answer held back: the tab says it loads b, and shows nothing of a meanwhile.
    let release;
    const held = new Promise((r) => { release = r; });
    await page.route(isMediaOf('b'), async (route) => { await held; await route.continue(); });
    try {
      await page.locator('.media-key[data-key="b"]').click();
      await page.getByRole('status').filter({ hasText: 'Loading b' }).waitFor();
      assert.deepEqual(await captions(), []);
      release();
      await page.locator('[data-testid="media-key"][data-key="b"] figcaption').first().waitFor();
      assert.deepEqual(await captions(), ['b at 1']);
    } finally {
      release();
      await page.unrouteAll({ behavior: 'wait' });
    }
    // b fails: its error, not a's images.
    await page.locator('.media-key[data-key="a"]').click();
    await page.locator('[data-testid="media-key"][data-key="a"]').waitFor();
    await page.route(isMediaOf('b'), (route) => route.fulfill({ status: 500, json: { error: { code: 'internal', message: 'b broke' } } }));
    try {
      await page.locator('.media-key[data-key="b"]').click();
      await page.getByRole('alert').filter({ hasText: 'b broke' }).waitFor();
      assert.deepEqual(await captions(), []);
    } finally {
      await page.unrouteAll({ behavior: 'wait' });
    }
    assert.deepEqual(pageErrors, []);
  });

  test('a key with a comma in its name shows its own rows only', async () => {
    await openTab();
    await page.locator('.media-key[data-key="x,y"]').click();
    await page.locator('[data-testid="media-key"][data-key="x,y"] figcaption').first().waitFor();
    assert.deepEqual(await captions(), ['x,y at 1']);
    assert.equal(await page.getByTestId('media-step-slider').getAttribute('max'), '1');
  });

  test('a list the server cut says so', async () => {
    await page.route((url) => url.pathname.endsWith(`/${mediaRun}/media`), async (route) => {
      const resp = await route.fetch();
      const body = await resp.json();
      await route.fulfill({ response: resp, json: { media: body.media.slice(0, 1), truncated: true } });
    });
    try {
      await openTab();
      const notice = page.getByTestId('media-truncated');
      await notice.waitFor();
      assert.match(await notice.textContent(), /“a” was cut at the server's row limit: 1 media rows are shown/);
      assert.deepEqual(await captions(), ['a at 0']);
    } finally {
      await page.unrouteAll({ behavior: 'wait' });
    }
  });

  test("the workspace's image comparison says when a run's list was cut", async () => {
    await page.route((url) => url.pathname.endsWith(`/${mediaRun}/media`), async (route) => {
      const resp = await route.fetch();
      const body = await resp.json();
      await route.fulfill({ response: resp, json: { media: body.media.slice(0, 1), truncated: true } });
    });
    try {
      await page.goto(href(''));
      await page.getByTestId('ws-media-toggle').click();
      const notice = page.getByTestId('media-truncated');
      await notice.waitFor();
      assert.match(await notice.textContent(), /“a” of pictures was cut/);
    } finally {
      await page.unrouteAll({ behavior: 'wait' });
    }
  });
});

describe('workspace table', () => {
  test("a summary key an older running run gains becomes a column (not only the newest run's keys count)", async () => {
    const LATE = 'late-keys';
    const make = async (name) => {
      const r = await call('POST', `/api/v1/runs/${entity}/${LATE}`, { name });
      await call('POST', `/api/v1/runs/${entity}/${LATE}/${r.id}/writers`, { label: 'rank_0', primary: true, update_finish_state: true });
      return r.id;
    };
    const older = await make('older');
    await make('newer');
    await page.goto(`${server.url}/?p=${entity}/${LATE}`);
    await page.locator('tr', { hasText: 'older' }).first().waitFor();
    assert.equal(await page.locator('th', { hasText: 'late_metric' }).count(), 0);
    await call('PATCH', `/api/v1/runs/${entity}/${LATE}/${older}`, { summary: { late_metric: 0.25 } });
    // The workspace refreshes its runs every 4 s: the default columns then include the new key.
    await page.locator('th', { hasText: 'late_metric' }).waitFor({ timeout: 15000 });
    assert.equal(await page.locator('tr', { hasText: 'older' }).locator('td', { hasText: '0.25' }).count(), 1);
  });
});

describe('workspace charts', () => {
  test('a workspace of more metrics than it charts at first says so and shows the rest on demand', async () => {
    await page.goto(href(''));
    const charts = page.locator('.selected-charts section.panel');
    const notice = page.getByTestId('metric-limit');
    await notice.waitFor();
    // 65 metrics of the run "wide" and the group's `loss`.
    assert.match(await notice.textContent(), /The first 60 of 66 metrics are charted/);
    assert.equal(await charts.count(), 60);
    await notice.getByRole('button', { name: 'Show 6 more' }).click();
    await notice.waitFor({ state: 'detached' });
    assert.equal(await charts.count(), 66);
    assert.deepEqual(pageErrors, []);
  });
});
