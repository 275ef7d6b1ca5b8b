// The `compare` part of bench/ui_bench.mjs (issue 17): a workspace of N runs (10,000) with 20
// config fields (numbers, log-spread numbers, strings, booleans) and 10 summary metrics, and
//   - the server's runs listing as the UI loads it (pages of 1,000): bytes and ms, and a single
//     page of 1,000;
//   - the parallel coordinates (8 axes, coloured by a metric) drawn, a brush applied (the table
//     filtered and the lines redrawn), the scatter drawn;
//   - the table sorted by a config column and filtered on one (a config clause), with the
//     panels closed and with both open.
// Each figure: ms from the action (a URL change, as a click does, or a click on a header) until
// the page shows the result at an animation frame; medians of REPS.
import { api } from '../tests/ui/harness.mjs';

export const COMPARE_PROJECT = 'cmp10k';
const OPTIMIZERS = ['adam', 'adamw', 'sgd', 'lamb', 'lion'];
const SCHEDULES = ['cosine', 'linear', 'constant'];
const MODELS = Array.from({ length: 12 }, (_, i) => `model-${i}`);

/** Run i's config (20 fields) and summary (10 metrics): deterministic. */
export function compareRun(i) {
  const h = (k) => ((i * 2654435761 + k * 40503) >>> 0) % 10007 / 10007;
  const config = {
    lr: 10 ** (-5 + 4 * h(1)), weight_decay: 10 ** (-6 + 4 * h(2)), batch_size: [16, 32, 64, 128, 256][i % 5],
    dropout: Math.round(h(3) * 50) / 100, warmup_steps: Math.floor(h(4) * 2000), layers: 2 + (i % 23), heads: [4, 8, 16][i % 3],
    hidden: [256, 512, 1024, 2048][(i >> 2) % 4], seq_len: [512, 1024, 2048][(i >> 1) % 3], grad_clip: Math.round(h(5) * 20) / 10,
    beta1: 0.85 + h(6) * 0.1, beta2: 0.95 + h(7) * 0.049, label_smoothing: Math.round(h(8) * 20) / 100, epochs: 1 + (i % 10),
    optimizer: OPTIMIZERS[i % OPTIMIZERS.length], schedule: SCHEDULES[(i >> 3) % 3], model: MODELS[i % MODELS.length],
    amp: i % 2 === 0, ema: i % 3 === 0, compile: i % 5 !== 0,
  };
  const summary = {};
  for (let k = 0; k < 10; k++) summary[`m${k}`] = Number((h(20 + k) * (k + 1)).toFixed(5));
  summary.val_loss = summary.m0;
  delete summary.m0;
  return { config, summary };
}

async function pool(n, items, fn) {
  let i = 0;
  await Promise.all(Array.from({ length: n }, async () => { while (i < items.length) { const k = i++; await fn(items[k], k); } }));
}

export async function seedCompare(server, entity, n) {
  await pool(12, Array.from({ length: n }, (_, i) => i), async (i) => {
    const { config, summary } = compareRun(i);
    const r = await api(server, 'POST', `/api/v1/runs/${entity}/${COMPARE_PROJECT}`, { name: `c-${i}`, job_type: 'train', config });
    await api(server, 'PATCH', `/api/v1/runs/${entity}/${COMPARE_PROJECT}/${r.id}`, { summary });
  });
}

const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2; };

/** The runs listing as the UI reads it: pages of 1,000 sorted by -created; total bytes and ms. */
async function listing(server, entity) {
  let cursor = null, bytes = 0, pages = 0, first = null;
  const t0 = performance.now();
  do {
    const q = `sort=-created&limit=1000${cursor ? '&cursor=' + encodeURIComponent(cursor) : ''}`;
    const t1 = performance.now();
    const resp = await fetch(`${server.url}/api/v1/runs/${entity}/${COMPARE_PROJECT}?${q}`, { headers: { Authorization: `Bearer ${server.key}`, 'Accept-Encoding': 'identity' } });
    const text = await resp.text();
    if (!resp.ok) throw new Error(`runs listing: ${resp.status} ${text.slice(0, 200)}`);
    if (first === null) first = performance.now() - t1;
    bytes += Buffer.byteLength(text);
    pages++;
    cursor = JSON.parse(text).next_cursor;
  } while (cursor);
  return { ms: performance.now() - t0, bytes, pages, first };
}

/** Every figure of the compare part; `timeInPage(page, action, done)` as in ui_bench.mjs. */
export async function measureCompare(page, server, entity, n, reps, timeInPage) {
  const out = {};
  // Figures named for the workspace's size: compare_10k_... for 10,000 runs.
  const P = `compare_${n % 1000 === 0 ? n / 1000 + 'k' : n}_`;
  const lists = [];
  for (let i = 0; i < reps; i++) lists.push(await listing(server, entity));
  out.compare_runs_listing_pages = lists[0].pages;
  out.compare_runs_listing_bytes = lists[0].bytes;
  out.compare_runs_listing_all_pages_ms = median(lists.map((l) => l.ms));
  out.compare_runs_listing_first_page_ms = median(lists.map((l) => l.first));

  await page.setViewportSize({ width: 1400, height: 1400 });
  const base = `/?p=${entity}/${COMPARE_PROJECT}&cols=config.lr,config.optimizer,val_loss`;
  const loads = [];
  for (let i = 0; i < 3; i++) {
    await page.goto('about:blank');
    const t0 = Date.now();
    await page.goto(server.url + base);
    await page.waitForFunction((n) => document.querySelector('.ws-count')?.textContent.startsWith(`${n.toLocaleString('en-US')} of ${n.toLocaleString('en-US')} runs`), n, { polling: 100, timeout: 120000 });
    loads.push(Date.now() - t0);
  }
  out.compare_workspace_initial_load_ms = median(loads);

  const go = (href) => `history.pushState(null, '', ${JSON.stringify(href)}); window.dispatchEvent(new Event('cohort:navigate'));`;
  const axes = ['config.lr', 'config.weight_decay', 'config.batch_size', 'config.dropout', 'config.optimizer', 'config.model', 'config.amp', 'summary.val_loss'];
  const pc = JSON.stringify({ a: axes, c: 'summary.val_loss' });
  const brush = JSON.stringify({ a: axes, c: 'summary.val_loss', b: { 'config.lr': [1e-4, 1e-3] } });
  const sc = JSON.stringify({ x: 'config.lr', y: 'summary.val_loss', c: 'config.batch_size' });
  const inBrush = Array.from({ length: n }, (_, i) => compareRun(i).config.lr).filter((lr) => lr >= 1e-4 && lr <= 1e-3).length;
  const filterN = Array.from({ length: n }, (_, i) => compareRun(i).config.dropout).filter((d) => d < 0.25).length;
  const count = `(document.querySelector('.ws-count')?.textContent ?? '')`;
  const all = `${n.toLocaleString('en-US')} of`;
  const pcIs = (inside, runs = n) => `document.querySelector('[data-testid=pc-canvas]')?.dataset.drawn === '${runs}:${axes.length}:${inside}'`;
  const pcDrawn = (inside, runs = n) => `return ${pcIs(inside, runs)};`;
  const q = (extra) => `${base}${extra}`;
  const fx = encodeURIComponent(JSON.stringify([{ field: 'config.dropout', op: '<', value: 0.25 }]));
  const both = `&pc=${encodeURIComponent(pc)}&sc=${encodeURIComponent(sc)}`;
  const sortAction = `[...document.querySelectorAll('.th-sort')].find((b) => b.textContent.startsWith('lr')).click();`;
  const sortDone = `return document.querySelector('[data-testid=runs-table] th[aria-sort="descending"]')?.textContent.startsWith('lr') && document.querySelector('[data-testid=runs-table] tr[data-run]') !== null;`;
  const measures = {
    parcoords_drawn_ms: { action: go(q(`&pc=${encodeURIComponent(pc)}`)), done: pcDrawn(n), reset: go(q('')), resetDone: `return !document.querySelector('[data-testid=pc-canvas]');` },
    parcoords_brush_table_filtered_ms: {
      setup: go(q(`&pc=${encodeURIComponent(pc)}`)), setupDone: pcDrawn(n),
      action: go(q(`&pc=${encodeURIComponent(brush)}`)), done: `return ${count}.startsWith('${inBrush.toLocaleString('en-US')} of') && (${pcIs(inBrush)});`,
      reset: go(q('')), resetDone: `return !document.querySelector('[data-testid=pc-canvas]') && ${count}.startsWith('${all}');`,
    },
    scatter_drawn_ms: {
      action: go(q(`&sc=${encodeURIComponent(sc)}`)), done: `return document.querySelector('[data-testid=sc-canvas]')?.dataset.drawn === '${n}:${n}';`,
      reset: go(q('')), resetDone: `return !document.querySelector('[data-testid=sc-canvas]');`,
    },
    table_sort_config_column_ms: { setup: go(q('')), setupDone: 'return true;', action: sortAction, done: sortDone, reset: go(q('')), resetDone: 'return true;' },
    table_filter_config_column_ms: {
      action: go(q(`&fx=${fx}`)), done: `return ${count}.startsWith('${filterN.toLocaleString('en-US')} of');`,
      reset: go(q('')), resetDone: `return ${count}.startsWith('${all}');`,
    },
    panels_open_table_sort_config_column_ms: {
      setup: go(q(both)), setupDone: pcDrawn(n), action: sortAction, done: sortDone, reset: go(q(both)), resetDone: pcDrawn(n),
    },
    panels_open_table_filter_config_column_ms: {
      setup: go(q(both)), setupDone: pcDrawn(n), action: go(q(`&fx=${fx}${both}`)),
      done: `return ${count}.startsWith('${filterN.toLocaleString('en-US')} of') && (${pcIs(filterN, filterN)});`,
      reset: go(q(both)), resetDone: pcDrawn(n),
    },
  };
  for (const [name, m] of Object.entries(measures)) {
    const xs = [];
    for (let i = 0; i < reps; i++) {
      if (m.setup) await timeInPage(page, m.setup, m.setupDone);
      xs.push(await timeInPage(page, m.action, m.done));
      await timeInPage(page, m.reset, m.resetDone);
      await page.waitForTimeout(50);
    }
    out[`${P}${name}`] = median(xs);
  }
  // The canvases' own draw time (the last draw), apart from the page's work around it.
  await timeInPage(page, go(q(both)), pcDrawn(n));
  await page.waitForFunction(() => document.querySelector('[data-testid=sc-canvas]')?.dataset.drawMs);
  out[P + 'parcoords_canvas_draw_ms_last'] = Number(await page.evaluate(() => document.querySelector('[data-testid=pc-canvas]').dataset.drawMs));
  out[P + 'scatter_canvas_draw_ms_last'] = Number(await page.evaluate(() => document.querySelector('[data-testid=sc-canvas]').dataset.drawMs));
  out[P + 'brushed_runs'] = inBrush;
  out[P + 'filtered_runs'] = filterN;
  return out;
}
