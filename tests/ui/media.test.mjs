// Browser tests of the run page's Media tab: a real `cohort server` (port 0), a shared run of two
// writers seeded by the real Python SDK (cohort.Image, Audio, Html, Table through the node agent
// and the blob store), checked in Debian's Chromium: the media keys, the image grid of the last
// step per writer with the pixels the SDK logged, the step slider, hiding a writer, full size on
// click, the audio player, the HTML in a sandboxed frame (its script never runs), the table
// with paging and sorting, and a table whose cells are images.
//
//   node --test tests/ui/media.test.mjs        (scripts/test-ui.sh runs it)
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { api, openLoggedIn, ROOT, sdkEnvironment, startServer } from './harness.mjs';

const SHOTS = path.join(ROOT, 'artifacts/ui');
const PROJECT = 'media-demo';
const RUN = 'mediarun';
let server, browser, page, entity;
const pageErrors = [];

// Two writers of one shared run; each logs 3 steps of a 2-image set (rank r, step s: every pixel
// 40 * s + 10 * r, and + 100 for the second image), a 120-row table, a clip, a page and a
// 3-row table of images (row i: every pixel 50 * i + 20 * r).
const SEED = String.raw`
import os, sys
import numpy as np
import cohort
rank = int(sys.argv[1])
run = cohort.init(project=os.environ["COHORT_PROJECT"], id=os.environ["RUN_ID"],
                  settings=cohort.Settings(mode="shared", x_label=f"rank_{rank}",
                                           x_primary=rank == 0, x_update_finish_state=rank == 0))
for step in range(3):
    px = np.full((8, 8, 3), 40 * step + 10 * rank, dtype=np.uint8)
    run.log({"loss": 1.0 / (step + 1),
             "samples": [cohort.Image(px, caption=f"r{rank} s{step}"), cohort.Image(px + 100)],
             "preds": cohort.Table(columns=["i", "p"], data=[[i, (i * 7) % 120] for i in range(120)]),
             "clip": cohort.Audio(np.zeros(800, dtype=np.float32), sample_rate=8000),
             "page": cohort.Html("<p id=x>hello</p><script>parent.document.title='pwned'</script>"),
             "gallery": cohort.Table(columns=["i", "img"], data=[
                 [i, cohort.Image(np.full((6, 6, 3), 50 * i + 20 * rank, dtype=np.uint8),
                                  caption=f"g{i}")] for i in range(3)])})
run.finish()
`;

function seed() {
  const { python, env } = sdkEnvironment(server, PROJECT, { RUN_ID: RUN });
  const script = path.join(server.dir, 'seed_media.py');
  writeFileSync(script, SEED);
  for (const rank of [0, 1]) {
    const r = spawnSync(python, [script, String(rank)], { env, encoding: 'utf8', timeout: 120000 });
    if (r.status !== 0) throw new Error(`seed rank ${rank}: ${r.stdout}\n${r.stderr}`);
  }
}

async function waitUploaded() {
  for (let i = 0; i < 200; i++) {
    const rows = (await api(server, 'GET', `/api/v1/runs/${entity}/${PROJECT}/${RUN}/media`)).media;
    const cells = async (writer) => (await api(server, 'GET', `/api/v1/runs/${entity}/${PROJECT}/${RUN}/tables/gallery?writers=${writer}`)).data;
    if (rows.length === 2 * 3 * 6 && rows.every((r) => r.uploaded) &&
        (await cells('rank_0')).concat(await cells('rank_1')).every((row) => row[1].uploaded)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('the media did not arrive');
}

// The RGB of the centre pixel of each image in the grid, read from a canvas (decoded by Chromium).
const centres = (loc) => loc.evaluateAll((imgs) => imgs.map((img) => {
  const c = document.createElement('canvas');
  c.width = img.naturalWidth;
  c.height = img.naturalHeight;
  const g = c.getContext('2d');
  g.drawImage(img, 0, 0);
  return Array.from(g.getImageData(img.naturalWidth >> 1, img.naturalHeight >> 1, 1, 1).data.slice(0, 3));
}));

before(async () => {
  mkdirSync(SHOTS, { recursive: true });
  server = await startServer();
  entity = (await api(server, 'GET', '/api/v1/viewer')).entity;
  seed();
  await waitUploaded();
  ({ browser, page } = await openLoggedIn(server, PROJECT, pageErrors, { viewport: { width: 1400, height: 1000 } }));
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

describe('run page, Media tab', () => {
  test('lists the media keys and shows the last step of every writer', async () => {
    await page.goto(`${server.url}/?p=${entity}/${PROJECT}&run=${RUN}&tab=media`);
    const keys = page.locator('.media-key');
    await keys.first().waitFor();
    assert.deepEqual(await keys.evaluateAll((b) => b.map((x) => x.dataset.key)), ['clip', 'gallery', 'page', 'preds', 'samples']);
    await page.locator('.media-key[data-key="samples"]').click();
    const images = page.locator('[data-testid="media-key"][data-key="samples"] [data-testid="media-image"]');
    await page.waitForFunction(() => {
      const imgs = [...document.querySelectorAll('[data-testid="media-image"]')];
      return imgs.length === 4 && imgs.every((i) => i.complete && i.naturalWidth > 0);
    });
    assert.equal(await page.getByTestId('media-step').textContent(), '2');
    // rank_0 then rank_1, each its two images: 80 + 10 r (+ 100 for the second).
    assert.deepEqual(await centres(images), [[80, 80, 80], [180, 180, 180], [90, 90, 90], [190, 190, 190]]);
    assert.ok(await page.getByText('r1 s2').isVisible());
    await page.screenshot({ path: path.join(SHOTS, 'media-images.png'), fullPage: true });
  });

  test('the step slider and the writer boxes choose what is shown; a click shows full size', async () => {
    const slider = page.getByTestId('media-step-slider');
    await slider.fill('0');
    await page.getByText('r0 s0').waitFor();
    await page.getByText('r1 s0').waitFor();
    assert.equal(await page.getByTestId('media-step').textContent(), '0');
    const images = page.locator('[data-testid="media-image"]');
    // Every image of the step, fetched and decoded (each set's bytes arrive on their own).
    await page.waitForFunction(() => {
      const imgs = [...document.querySelectorAll('[data-testid="media-image"]')];
      return imgs.length === 4 && imgs.every((i) => i.complete && i.naturalWidth > 0);
    });
    assert.deepEqual(await centres(images), [[0, 0, 0], [100, 100, 100], [10, 10, 10], [110, 110, 110]]);
    await page.locator('[data-testid="media-writers"] input[data-writer="rank_0"]').uncheck();
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="media-image"]').length === 2);
    assert.equal(await page.locator('.media-writer[data-writer="rank_0"]').count(), 0);
    await images.first().click();
    await page.getByTestId('media-full').waitFor();
    await page.getByTestId('media-full').click();
    await page.getByTestId('media-full').waitFor({ state: 'detached' });
  });

  test('audio plays from a player; html runs in a sandbox, never in the UI', async () => {
    await page.locator('.media-key[data-key="clip"]').click();
    const audio = page.getByTestId('media-audio').first();
    await audio.waitFor();
    assert.ok((await audio.getAttribute('src')).startsWith('blob:'));
    // Loaded, not blocked: the page's Content-Security-Policy once let images alone use blob:
    // URLs, so every audio and video player stayed empty (error code 4) and html frames blank.
    await page.waitForFunction(() => {
      const a = document.querySelector('[data-testid="media-audio"]');
      return a && (a.readyState >= 1 || a.error);
    });
    assert.deepEqual(await audio.evaluate((a) => [a.error?.code ?? null, a.duration]), [null, 0.1]);
    await page.locator('.media-key[data-key="page"]').click();
    const frame = page.getByTestId('media-html').first();
    await frame.waitFor();
    assert.equal(await frame.getAttribute('sandbox'), '');
    const inner = await (await frame.elementHandle()).contentFrame();
    await inner.locator('#x').waitFor();
    assert.equal(await inner.locator('#x').textContent(), 'hello');
    await page.waitForTimeout(300);
    assert.notEqual(await page.title(), 'pwned');
  });

  test('a table pages through its rows and sorts a column', async () => {
    await page.locator('.media-key[data-key="preds"]').click();
    const table = page.getByTestId('media-table').first();
    await table.waitFor();
    assert.equal(await table.getByTestId('media-table-rows').textContent(), '120');
    const firstCol = () => table.locator('tbody tr td:first-child').allTextContents();
    assert.deepEqual((await firstCol()).slice(0, 3), ['0', '1', '2']);
    assert.equal((await firstCol()).length, 50);
    await table.getByRole('button', { name: 'next' }).click();
    await page.waitForFunction(() => document.querySelector('[data-testid="media-table"] tbody td')?.textContent === '50');
    await table.getByRole('button', { name: 'p', exact: true }).click();  // sort by p (this page)
    const ps = (await table.locator('tbody tr td:nth-child(2)').allTextContents()).map(Number);
    assert.deepEqual(ps, [...ps].sort((a, b) => a - b));
    // The tables route does not sort: the pager says the sort is of this page.
    assert.match(await table.locator('.pager').textContent(), /sorted within this page/);
    await page.screenshot({ path: path.join(SHOTS, 'media-table.png'), fullPage: true });
    assert.deepEqual(pageErrors, []);
  });

  test('a table shows its image cells and sorts them by caption', async () => {
    await page.locator('.media-key[data-key="gallery"]').click();
    const table = page.getByTestId('media-table').first();
    await table.waitFor();
    const imgs = table.getByTestId('media-image');
    await page.waitForFunction(() => {
      const all = [...document.querySelectorAll('[data-testid="media-table"]')][0]?.querySelectorAll('img') ?? [];
      return all.length === 3 && [...all].every((i) => i.complete && i.naturalWidth === 6);
    });
    assert.deepEqual(await centres(imgs), [[0, 0, 0], [50, 50, 50], [100, 100, 100]]);
    assert.deepEqual(await table.locator('tbody figcaption').allTextContents(), ['g0', 'g1', 'g2']);
    await table.getByRole('button', { name: 'img', exact: true }).click();
    await table.getByRole('button', { name: 'img', exact: true }).click();  // descending
    assert.deepEqual(await table.locator('tbody figcaption').allTextContents(), ['g2', 'g1', 'g0']);
    await page.screenshot({ path: path.join(SHOTS, 'media-table-images.png'), fullPage: true });
    assert.deepEqual(pageErrors, []);
  });
});
