// Browser tests of view state kept in the URL (docs/ui.md "URL state"): a real `cohort server`
// (port 0), a shared run of two writers in a group seeded by the real Python SDK (scalars,
// histograms, images at three steps) and two code alerts of different levels through the HTTP
// API; checked in Debian's Chromium: each choice that once lived only in the page -- the Media
// tab's key, step and hidden writers (`mk`, `mstep`, `mhide`), the metric filter of the run's
// Charts and Histograms tabs, the workspace charts and the group page (`mq`), the alerts page's
// state and level filters (`ast`, `alv`) -- is written to the address (only when it differs
// from its default; typing and dragging replace the history entry) and survives a reload.
//
//   node --test tests/ui/view_state.test.mjs        (scripts/test-ui.sh runs it)
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { api, openLoggedIn, ROOT, sdkEnvironment, startServer } from './harness.mjs';

const SHOTS = path.join(ROOT, 'artifacts/ui');
const PROJECT = 'state-demo';
const RUN = 'vsrun';
const GROUP = 'G1';
let server, browser, page, entity;
const pageErrors = [];

const SEED = String.raw`
import os, sys
import numpy as np
import cohort
rank = int(sys.argv[1])
run = cohort.init(project=os.environ["COHORT_PROJECT"], id=os.environ["RUN_ID"], group=os.environ["GROUP"],
                  settings=cohort.Settings(mode="shared", x_label=f"rank_{rank}",
                                           x_primary=rank == 0, x_update_finish_state=rank == 0))
for step in range(3):
    px = np.full((8, 8, 3), 40 * step + 10 * rank, dtype=np.uint8)
    run.log({"train/loss": 1.0 / (step + 1), "train/acc": 0.5 + 0.1 * step, "val/loss": 2.0 / (step + 1),
             "grad/w": cohort.Histogram(np.arange(10) * (step + 1)),
             "weights/w": cohort.Histogram(np.arange(10) - step),
             "samples": [cohort.Image(px, caption=f"s r{rank} s{step}")],
             "other": [cohort.Image(px + 100, caption=f"o r{rank} s{step}")]}, step=step)
run.finish()
`;

function seed() {
  const { python, env } = sdkEnvironment(server, PROJECT, { RUN_ID: RUN, GROUP });
  const script = path.join(server.dir, 'seed_view_state.py');
  writeFileSync(script, SEED);
  for (const rank of [0, 1]) {
    const r = spawnSync(python, [script, String(rank)], { env, encoding: 'utf8', timeout: 120000 });
    if (r.status !== 0) throw new Error(`seed rank ${rank}: ${r.stdout}\n${r.stderr}`);
  }
}

async function waitFor(pred, what) {
  for (let i = 0; i < 300; i++) {
    if (await pred()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${what} did not arrive`);
}

before(async () => {
  mkdirSync(SHOTS, { recursive: true });
  server = await startServer();
  entity = (await api(server, 'GET', '/api/v1/viewer')).entity;
  try {
    seed();
    const base = `/api/v1/runs/${entity}/${PROJECT}/${RUN}`;
    await waitFor(async () => {
      const rows = (await api(server, 'GET', `${base}/media`)).media;
      return rows.length === 2 * 2 * 3 && rows.every((r) => r.uploaded);
    }, 'the media');
    const label = (await api(server, 'GET', `${base}/writers`)).writers[0].label;
    await api(server, 'POST', `${base}/writers/${label}/alerts`, { title: 'loud', text: 'an error', level: 'ERROR' });
    await api(server, 'POST', `${base}/writers/${label}/alerts`, { title: 'quiet', text: 'a warning', level: 'WARN' });
    await waitFor(async () => (await api(server, 'GET', `/api/v1/alerts/${entity}/${PROJECT}?limit=100`)).alerts.length >= 2, 'the alerts');
  } catch (e) {
    server.dumpLogs('seed');
    throw e;
  }
  ({ browser, page } = await openLoggedIn(server, PROJECT, pageErrors, { viewport: { width: 1400, height: 1000 } }));
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

const params = () => new URL(page.url()).searchParams;
const historyLength = () => page.evaluate(() => history.length);
const captions = () => page.locator('[data-testid="media-key"] figcaption').allTextContents();

/** Waits for the images shown to be exactly `want` (their captions, in order). */
async function waitCaptions(want) {
  await page.waitForFunction((w) => {
    const got = [...document.querySelectorAll('[data-testid="media-key"] figcaption')].map((f) => f.textContent);
    return JSON.stringify(got) === JSON.stringify(w);
  }, want);
}

describe('view state in the URL', () => {
  test('Media tab: the key, the step and the hidden writers survive a reload', async () => {
    await page.goto(`${server.url}/?p=${entity}/${PROJECT}&run=${RUN}&tab=media`);
    await page.locator('.media-key[data-key="other"]').waitFor();
    // Defaults: the first key, the latest step, every writer; nothing of them in the address.
    await waitCaptions(['o r0 s2', 'o r1 s2']);
    for (const k of ['mk', 'mstep', 'mhide']) assert.equal(params().get(k), null, k);

    await page.locator('.media-key[data-key="samples"]').click();
    await waitCaptions(['s r0 s2', 's r1 s2']);
    assert.equal(params().get('mk'), 'samples');

    // Dragging the slider replaces the history entry (no entry per step passed).
    const before = await historyLength();
    const slider = page.getByTestId('media-step-slider');
    await slider.fill('1');
    await slider.fill('0');
    await waitCaptions(['s r0 s0', 's r1 s0']);
    assert.equal(params().get('mstep'), '0');
    assert.equal(await historyLength(), before);

    await page.locator('[data-testid="media-writers"] input[data-writer="rank_1"]').uncheck();
    await waitCaptions(['s r0 s0']);
    assert.equal(params().get('mhide'), 'rank_1');

    await page.reload();
    await waitCaptions(['s r0 s0']);
    assert.equal(await page.getByTestId('media-step').textContent(), '0');
    assert.equal(await page.locator('.media-key[data-key="samples"]').getAttribute('aria-pressed'), 'true');
    assert.equal(await page.locator('[data-testid="media-writers"] input[data-writer="rank_1"]').isChecked(), false);
    assert.equal(await page.locator('[data-testid="media-writers"] input[data-writer="rank_0"]').isChecked(), true);
    await page.screenshot({ path: path.join(SHOTS, 'view-state-media.png'), fullPage: true });

    // Back to the last step: the latest is the default again (not written); another key starts afresh.
    await slider.fill('2');
    await waitCaptions(['s r0 s2']);
    assert.equal(params().get('mstep'), null);
    await page.locator('.media-key[data-key="other"]').click();
    await waitCaptions(['o r0 s2', 'o r1 s2']);
    assert.equal(params().get('mhide'), null);
    // Back restores the previous choice (a click adds a history entry).
    await page.goBack();
    await waitCaptions(['s r0 s2']);
    assert.equal(params().get('mk'), 'samples');
  });

  test('the run Charts tab and Histograms tab: the metric filter survives a reload', async () => {
    await page.goto(`${server.url}/?p=${entity}/${PROJECT}&run=${RUN}&tab=charts`);
    const charts = page.locator('.tabpanel section.panel');
    await page.waitForFunction(() => document.querySelectorAll('.tabpanel section.panel').length === 3);
    const before = await historyLength();
    await page.getByLabel('filter metrics').fill('loss');
    await page.waitForFunction(() => document.querySelectorAll('.tabpanel section.panel').length === 2);
    assert.equal(params().get('mq'), 'loss');
    assert.equal(await historyLength(), before);  // typing replaces the entry
    await page.reload();
    await page.waitForFunction(() => document.querySelectorAll('.tabpanel section.panel').length === 2);
    assert.deepEqual((await charts.evaluateAll((s) => s.map((x) => x.dataset.chart))).sort(), ['train/loss', 'val/loss']);
    assert.equal(await page.getByLabel('filter metrics').inputValue(), 'loss');

    await page.goto(`${server.url}/?p=${entity}/${PROJECT}&run=${RUN}&tab=histograms`);
    await page.waitForFunction(() => document.querySelectorAll('.hist-panel').length === 2);
    await page.getByLabel('filter histograms').fill('grad');
    await page.waitForFunction(() => document.querySelectorAll('.hist-panel').length === 1);
    assert.equal(params().get('mq'), 'grad');
    await page.reload();
    await page.waitForFunction(() => document.querySelectorAll('.hist-panel').length === 1);
    assert.equal(await page.locator('.hist-panel').getAttribute('data-hist'), 'grad/w');
    assert.equal(await page.getByLabel('filter histograms').inputValue(), 'grad');
    // Cleared: nothing in the address.
    await page.getByLabel('filter histograms').fill('');
    await page.waitForFunction(() => document.querySelectorAll('.hist-panel').length === 2);
    assert.equal(params().get('mq'), null);
  });

  test('the workspace charts and the group page: the metric filter survives a reload', async () => {
    await page.goto(`${server.url}/?p=${entity}/${PROJECT}`);
    const ws = '.selected-charts section.panel';
    await page.waitForFunction((sel) => document.querySelectorAll(sel).length === 3, ws);
    await page.locator('.selected-charts').getByLabel('filter metrics').fill('acc');
    await page.waitForFunction((sel) => document.querySelectorAll(sel).length === 1, ws);
    assert.equal(params().get('mq'), 'acc');
    await page.reload();
    await page.waitForFunction((sel) => document.querySelectorAll(sel).length === 1, ws);
    assert.equal(await page.locator(ws).getAttribute('data-chart'), 'train/acc');
    assert.equal(await page.locator('.selected-charts').getByLabel('filter metrics').inputValue(), 'acc');

    await page.goto(`${server.url}/?p=${entity}/${PROJECT}&group=${GROUP}`);
    const gp = '.group-metrics section.panel';
    await page.waitForFunction((sel) => document.querySelectorAll(sel).length === 3, gp);
    await page.locator('.group-metrics').getByLabel('filter metrics').fill('val');
    await page.waitForFunction((sel) => document.querySelectorAll(sel).length === 1, gp);
    assert.equal(params().get('mq'), 'val');
    await page.reload();
    await page.waitForFunction((sel) => document.querySelectorAll(sel).length === 1, gp);
    assert.equal(await page.locator(gp).getAttribute('data-chart'), 'val/loss');
    assert.equal(await page.locator('.group-metrics').getByLabel('filter metrics').inputValue(), 'val');
    await page.screenshot({ path: path.join(SHOTS, 'view-state-group.png'), fullPage: true });
  });

  test('the alerts page: the state and level filters survive a reload', async () => {
    await page.goto(`${server.url}/?p=${entity}/${PROJECT}&alerts=1`);
    const rows = page.locator('[data-testid="alerts"] tbody tr[data-alert]');
    await rows.first().waitFor();
    assert.equal(await rows.count(), 2);
    assert.equal(params().get('ast'), null);
    assert.equal(params().get('alv'), null);
    const filters = page.getByRole('group', { name: 'alert filters' });
    await filters.getByRole('button', { name: 'All', exact: true }).click();
    await page.getByLabel('level').selectOption('WARN');
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="alerts"] tbody tr[data-alert]').length === 1);
    assert.equal(params().get('ast'), 'all');
    assert.equal(params().get('alv'), 'WARN');
    await page.reload();
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="alerts"] tbody tr[data-alert]').length === 1);
    assert.match(await rows.first().textContent(), /quiet/);
    assert.equal(await filters.getByRole('button', { name: 'All', exact: true }).getAttribute('aria-pressed'), 'true');
    assert.equal(await page.getByLabel('level').inputValue(), 'WARN');

    // Resolved: none here, and kept too; Open (the default) leaves the address.
    await filters.getByRole('button', { name: 'Resolved', exact: true }).click();
    await page.getByText('No alerts.').waitFor();
    assert.equal(params().get('ast'), 'resolved');
    await page.reload();
    await page.getByText('No alerts.').waitFor();
    assert.equal(await filters.getByRole('button', { name: 'Resolved', exact: true }).getAttribute('aria-pressed'), 'true');
    await filters.getByRole('button', { name: 'Open', exact: true }).click();
    await page.getByLabel('level').selectOption('');
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="alerts"] tbody tr[data-alert]').length === 2);
    assert.equal(params().get('ast'), null);
    assert.equal(params().get('alv'), null);
    assert.deepEqual(pageErrors, []);
  });
});
