// Browser tests of the workspace's image comparison: a real `cohort server` (port 0), four runs
// seeded by the real Python SDK (cohort.Image through the node agent and the blob store), checked
// in Debian's Chromium: one run hidden with the eye is left out; the image keys are the union of
// the compared runs'; each run's column shows the image of its last step at or before the chosen
// one (the pixels the SDK logged, read back from a canvas, and the digest of the media row), a
// shared run one image per writer; a run without the key says so; full size on click.
//
//   node --test tests/ui/workspace_media.test.mjs        (scripts/test-ui.sh runs it)
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { api, launchBrowser, ROOT, sdkEnvironment, signInWithLink, startServer } from './harness.mjs';

const SHOTS = path.join(ROOT, 'artifacts/ui');
const PROJECT = 'cmp-demo';
let server, browser, page, entity;
const pageErrors = [];

// One process per (run, rank). alpha logs "samples" at steps 0, 2, 4 (every pixel [200, 10 s, 0]);
// beta is a shared run of two writers logging "samples" at steps 1, 3 ([0, 200, 10 s + 100 r]);
// gamma logs only "other" (at step 0, [0, 0, 220]); delta logs "samples" at 0..4 ([90, 90, 90]),
// and the test hides it with the eye.
const SEED = String.raw`
import os, sys
import numpy as np
import cohort
run_id, name, rank = sys.argv[1], sys.argv[2], int(sys.argv[3])
shared = name == "beta"
settings = cohort.Settings(mode="shared", x_label=f"rank_{rank}", x_primary=rank == 0,
                           x_update_finish_state=rank == 0) if shared else None
run = cohort.init(project=os.environ["COHORT_PROJECT"], id=run_id, name=name, settings=settings)
def img(rgb):
    return np.tile(np.array(rgb, dtype=np.uint8), (8, 8, 1))
if name == "alpha":
    for s in (0, 2, 4):
        run.log({"loss": 1.0 / (s + 1), "samples": cohort.Image(img([200, 10 * s, 0]), caption=f"alpha s{s}")}, step=s)
elif name == "beta":
    for s in (1, 3):
        run.log({"loss": 2.0 / (s + 1), "samples": cohort.Image(img([0, 200, 10 * s + 100 * rank]), caption=f"beta r{rank} s{s}")}, step=s)
elif name == "gamma":
    run.log({"loss": 0.5, "other": cohort.Image(img([0, 0, 220]), caption="gamma other")}, step=0)
else:
    for s in range(5):
        run.log({"loss": 0.1, "samples": cohort.Image(img([90, 90, 90]))}, step=s)
run.finish()
`;
const RUNS = [['cmpa', 'alpha', 0], ['cmpb', 'beta', 0], ['cmpb', 'beta', 1], ['cmpc', 'gamma', 0], ['cmpd', 'delta', 0]];
const MEDIA_ROWS = { cmpa: 3, cmpb: 4, cmpc: 1, cmpd: 5 };

function seed() {
  const { python, env } = sdkEnvironment(server, PROJECT);
  const script = path.join(server.dir, 'seed_cmp.py');
  writeFileSync(script, SEED);
  for (const [id, name, rank] of RUNS) {
    const r = spawnSync(python, [script, id, name, String(rank)], { env, encoding: 'utf8', timeout: 120000 });
    if (r.status !== 0) throw new Error(`seed ${name} rank ${rank}: ${r.stdout}\n${r.stderr}`);
  }
}

const rowsOf = {};
async function waitUploaded() {
  for (let i = 0; i < 200; i++) {
    let done = true;
    for (const [id, n] of Object.entries(MEDIA_ROWS)) {
      rowsOf[id] = (await api(server, 'GET', `/api/v1/runs/${entity}/${PROJECT}/${id}/media`)).media;
      if (rowsOf[id].length !== n || !rowsOf[id].every((r) => r.uploaded)) done = false;
    }
    if (done) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('the media did not arrive');
}

/** The digest of the media row of `run` at (step, key), of `writer` (any: a run of one writer). */
const shaOf = (run, step, { key = 'samples', writer = null } = {}) =>
  rowsOf[run].find((m) => (writer === null || m.writer === writer) && m.step === step && m.key === key).sha256;

/** Per compared run column: its shown steps, and per image the digest and the RGB of the centre
 * pixel read from a canvas (decoded by Chromium); once every image of the page has loaded. */
async function columns() {
  // The images are fetched as they near the viewport (the panel is below the table and charts).
  await page.getByTestId('cmp-runs').scrollIntoViewIfNeeded();
  await page.waitForFunction(() => {
    const imgs = [...document.querySelectorAll('[data-testid="cmp-runs"] [data-testid="media-image"]')];
    return !document.querySelector('[data-testid="cmp-runs"] .loading') && imgs.every((i) => i.complete && i.naturalWidth > 0);
  });
  return page.locator('[data-testid="cmp-runs"] .cmp-run').evaluateAll((cols) => Object.fromEntries(cols.map((col) => [col.dataset.run, {
    steps: [...col.querySelectorAll('[data-testid="cmp-shown-step"]')].map((s) => Number(s.textContent)),
    writers: [...col.querySelectorAll('.cmp-writer-name')].map((h) => h.textContent),
    missing: !!col.querySelector('[data-testid="cmp-missing"]'),
    noneYet: col.querySelectorAll('[data-testid="cmp-none-yet"]').length,
    images: [...col.querySelectorAll('[data-testid="media-image"]')].map((img) => {
      const c = document.createElement('canvas');
      c.width = img.naturalWidth;
      c.height = img.naturalHeight;
      const g = c.getContext('2d');
      g.drawImage(img, 0, 0);
      return { sha: img.dataset.sha256, rgb: Array.from(g.getImageData(img.naturalWidth >> 1, img.naturalHeight >> 1, 1, 1).data.slice(0, 3)) };
    }),
  }])));
}

before(async () => {
  mkdirSync(SHOTS, { recursive: true });
  server = await startServer();
  entity = (await api(server, 'GET', '/api/v1/viewer')).entity;
  try {
    seed();
    await waitUploaded();
  } catch (e) {
    server.dumpLogs('seed');
    throw e;
  }
  browser = await launchBrowser();
  const ctx = await browser.newContext({ viewport: { width: 1400, height: 1000 }, colorScheme: 'light' });
  page = await ctx.newPage();
  page.on('pageerror', (e) => { pageErrors.push(e.message); console.error('page error:', e.message); });
  await signInWithLink(page, server);
  await page.getByRole('link', { name: PROJECT }).waitFor();
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

describe('workspace, image comparison', () => {
  test('compares the charted runs (not one hidden with the eye); the keys are their union', async () => {
    await page.goto(`${server.url}/?p=${entity}/${PROJECT}`);
    await page.getByRole('button', { name: 'hide delta in charts' }).click();
    await page.waitForFunction(() => new URL(location.href).searchParams.get('hide') === 'cmpd');
    const toggle = page.getByTestId('ws-media-toggle');
    assert.equal(await toggle.getAttribute('aria-expanded'), 'false');
    await toggle.click();
    const key = page.getByTestId('cmp-key');
    await key.waitFor();
    assert.deepEqual(await key.locator('option').allTextContents(), ['other', 'samples']);
    // "other" first: gamma's image; alpha and beta have no such key.
    assert.equal(await key.inputValue(), 'other');
    const got = await columns();
    assert.deepEqual(Object.keys(got).sort(), ['cmpa', 'cmpb', 'cmpc']);
    assert.deepEqual(got.cmpc.images, [{ sha: shaOf('cmpc', 0, { key: 'other' }), rgb: [0, 0, 220] }]);
    assert.ok(got.cmpa.missing && got.cmpb.missing && !got.cmpc.missing);
    assert.equal(await page.locator('.cmp-run[data-run="cmpa"] [data-testid="cmp-missing"]').textContent(), 'This run has no image key “other”.');
  });

  test('each run shows its image at the last step at or before the chosen one', async () => {
    await page.getByTestId('cmp-key').selectOption('samples');
    await page.getByTestId('cmp-step').filter({ hasText: '4' }).waitFor();
    const slider = page.getByTestId('cmp-step-slider');
    // The union of alpha's and beta's steps: 0..4, the last chosen first.
    assert.equal(await slider.getAttribute('max'), '4');
    let got = await columns();
    assert.ok(got.cmpc.missing);
    assert.equal(await page.locator('.cmp-run[data-run="cmpc"] [data-testid="cmp-missing"]').textContent(), 'This run has no image key “samples”.');
    assert.deepEqual(got.cmpa.steps, [4]);
    assert.deepEqual(got.cmpa.images, [{ sha: shaOf('cmpa', 4), rgb: [200, 40, 0] }]);
    // beta: one image per writer, at 3 (its last at or before 4), the writers labelled.
    assert.deepEqual(got.cmpb.writers, ['rank_0', 'rank_1']);
    assert.deepEqual(got.cmpb.steps, [3, 3]);
    assert.deepEqual(got.cmpb.images, [{ sha: shaOf('cmpb', 3, { writer: 'rank_0' }), rgb: [0, 200, 30] }, { sha: shaOf('cmpb', 3, { writer: 'rank_1' }), rgb: [0, 200, 130] }]);
    assert.ok(await page.getByText('beta r1 s3').isVisible());
    assert.ok(await page.getByText('alpha s4').isVisible());
    // The run's colour, as its charts use it, on its column.
    const colour = await page.locator('.cmp-run[data-run="cmpa"]').evaluate((e) => getComputedStyle(e).borderTopColor);
    assert.notEqual(colour, await page.locator('.cmp-run[data-run="cmpb"]').evaluate((e) => getComputedStyle(e).borderTopColor));
    await page.screenshot({ path: path.join(SHOTS, 'workspace-media.png'), fullPage: true });

    await slider.fill('1');
    await page.getByTestId('cmp-step').filter({ hasText: '1' }).waitFor();
    await page.getByText('beta r0 s1').waitFor();
    got = await columns();
    assert.deepEqual(got.cmpa.steps, [0]);
    assert.deepEqual(got.cmpa.images, [{ sha: shaOf('cmpa', 0), rgb: [200, 0, 0] }]);
    assert.deepEqual(got.cmpb.steps, [1, 1]);
    assert.deepEqual(got.cmpb.images.map((i) => i.rgb), [[0, 200, 10], [0, 200, 110]]);

    await slider.fill('2');
    await page.getByText('alpha s2').waitFor();
    got = await columns();
    assert.deepEqual(got.cmpa.images.map((i) => i.rgb), [[200, 20, 0]]);
    assert.deepEqual(got.cmpb.steps, [1, 1]);

    // Before beta's first step: it says so, per writer.
    await slider.fill('0');
    await page.getByText('alpha s0').waitFor();
    got = await columns();
    assert.deepEqual(got.cmpa.images.map((i) => i.rgb), [[200, 0, 0]]);
    assert.equal(got.cmpb.images.length, 0);
    assert.equal(got.cmpb.noneYet, 2);
    assert.ok(got.cmpc.missing);
  });

  test('a click shows full size; closing the panel', async () => {
    await page.locator('.cmp-run[data-run="cmpa"] [data-testid="media-image"]').click();
    await page.getByTestId('media-full').waitFor();
    await page.getByTestId('media-full').click();
    await page.getByTestId('media-full').waitFor({ state: 'detached' });
    await page.getByTestId('ws-media-toggle').click();
    await page.getByTestId('cmp').waitFor({ state: 'detached' });
    assert.deepEqual(pageErrors, []);
  });
});
